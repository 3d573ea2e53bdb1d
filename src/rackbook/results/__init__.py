"""One module per result of the book (``decode_parity``, ``rack_scaling``, ``prefill_gain``,
``eplb_balance``, ``context_latency``, ``single_user``), plus what they share: the headline
format (``headline``) and the verdict helpers (``verdicts``)."""
