"""``python -m rackbook.results.eplb_balance OUT ...``: write the synthetic default trace
(:func:`rackbook.results.eplb_balance.synthetic.main`)."""

from rackbook.results.eplb_balance.synthetic import main

if __name__ == "__main__":
    raise SystemExit(main())
