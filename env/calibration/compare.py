"""Compare a calibration with the reference H200 measurement, figure by figure.

    python env/calibration/compare.py MEASURED [--reference JSON] [--tolerance 0.15]

MEASURED is a calibration folder (``rackbook calibrate -o DIR``) or the JSON file of
``rackbook calibrate --save-json FILE``; the reference defaults to
``data/calibration/h200-kernels.reference.json``. Prints one line per reference figure (its
value and the measured one in TB/s, TFLOP/s or us, the ratio of speeds) and flags those off by
more than the tolerance or not measured; exits 1 when any is flagged. Needs pandas and pyarrow
(``rackbook.core.calibration``), not torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from rackbook import paths
from rackbook.core import calibration

REFERENCE = paths.DATA / "calibration" / "h200-kernels.reference.json"


def measured_kernels(path: Path) -> pd.DataFrame:
    """The kernels table of a calibration folder or of a ``--save-json`` file, validated."""
    if path.is_dir():
        return calibration.read_calibration(path).kernels
    return calibration.read_saved(path)[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("measured", type=Path, help="calibration folder or --save-json file")
    p.add_argument("--reference", type=Path, default=REFERENCE, help="reference JSON")
    p.add_argument("--tolerance", type=float, default=calibration.TOLERANCE)
    args = p.parse_args(argv)
    ref = json.loads(args.reference.read_text(encoding="utf-8"))
    _run, ref_kernels = calibration.from_reference(ref, str(args.reference))
    table = calibration.compare(measured_kernels(args.measured), ref_kernels, args.tolerance)
    print(f"{args.measured} against {args.reference} ({ref.get('gpu', '?')}):")
    print("\n".join(calibration.compare_lines(table, args.tolerance)))
    return 1 if table["flagged"].any() else 0


if __name__ == "__main__":
    sys.exit(main())
