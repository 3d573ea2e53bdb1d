"""Where the project's files live: ``RACKBOOK_ROOT`` moves the repository root (relative paths
resolve against it), ``RACKBOOK_BUILD`` the build folder (default ``_build``)."""

from __future__ import annotations

import os
from pathlib import Path

from rackbook.errors import InputError

#: Repository root (the package is installed editable from ``src/``).
ROOT = Path(os.environ.get("RACKBOOK_ROOT", Path(__file__).resolve().parents[2]))
DATA = ROOT / "data"
TRACES = DATA / "traces"
NOTEBOOKS = ROOT / "notebooks"
BUILD = Path(os.environ.get("RACKBOOK_BUILD") or ROOT / "_build")
EXECUTED = BUILD / "executed"
#: The tiny model env/live/tiny_model.py writes: the live scenarios' default.
TINY_MODEL = ROOT / ".cache" / "tiny-moe"

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


def output_dir(out_dir: str | Path | None) -> Path:
    """Where a chapter writes its headline JSON: ``out_dir``, else the build's ``executed``."""
    return EXECUTED if out_dir is None else resolve(out_dir)


def require_checkout() -> Path:
    """The repository root, or InputError when rackbook runs without a checkout."""
    if not (ROOT / "data" / "claims.yaml").is_file():
        problem = "no rackbook checkout here (no data/claims.yaml): run in a clone or set it to one"
        raise InputError(ROOT, "RACKBOOK_ROOT", problem)
    return ROOT
