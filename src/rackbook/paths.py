"""Where the project's files live. Relative paths are resolved against the repository root."""

from __future__ import annotations

import os
from pathlib import Path

#: Repository root (the package is installed editable from ``src/``); override with RACKBOOK_ROOT.
ROOT = Path(os.environ.get("RACKBOOK_ROOT", Path(__file__).resolve().parents[2]))
DATA = ROOT / "data"
TRACES = DATA / "traces"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "_build"
EXECUTED = BUILD / "executed"

RESULTS: tuple[str, ...] = (
    "decode-parity",
    "rack-scaling",
    "prefill-gain",
    "eplb-balance",
    "context-latency",
    "single-user",
)


def resolve(path: str | Path) -> Path:
    """Absolute path: ``path`` itself if absolute, else relative to the repository root."""
    p = Path(path)
    return p if p.is_absolute() else ROOT / p
