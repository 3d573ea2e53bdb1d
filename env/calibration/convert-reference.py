"""Regenerate the shipped default calibration from the reference H200 measurement.

    .venv/bin/python env/calibration/convert-reference.py

reads ``data/calibration/h200-kernels.reference.json`` (one H200 SXM's kernel times at
DeepSeek-V4.1-Flash shapes, measured outside rackbook) and writes
``data/calibration/h200-reference/`` (kind ``published``: its provenance says it is that
reference measurement, not a run of ``rackbook calibrate``).
"""

from __future__ import annotations

import json

from rackbook import paths
from rackbook.core import calibration

SOURCE = paths.DATA / "calibration" / "h200-kernels.reference.json"


def main() -> None:
    ref = json.loads(SOURCE.read_text(encoding="utf-8"))
    run, kernels = calibration.from_reference(ref, str(SOURCE.relative_to(paths.ROOT)))
    print(calibration.write_calibration(calibration.SHIPPED, run, kernels))


if __name__ == "__main__":
    main()
