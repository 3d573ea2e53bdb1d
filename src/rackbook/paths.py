"""Where the project's files live, relative paths resolved against the repository root:
``RACKBOOK_ROOT`` moves the repository (a checkout or worktree), ``RACKBOOK_BUILD`` the build
folder (default ``_build``; the test suite points it at its own)."""

from __future__ import annotations

import os
from pathlib import Path

from rackbook.errors import InputError

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]

#: Repository root (the package is installed editable from ``src/``); override with RACKBOOK_ROOT.
ROOT = Path(os.environ.get("RACKBOOK_ROOT", _PACKAGE_ROOT))
DATA = ROOT / "data"
TRACES = DATA / "traces"
NOTEBOOKS = ROOT / "notebooks"
BUILD = Path(os.environ.get("RACKBOOK_BUILD") or ROOT / "_build")
EXECUTED = BUILD / "executed"
#: The tiny model folder written by env/live/tiny_model.py (git-ignored): the live scenarios'
#: default model.
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
    """Where a chapter writes its headline JSON (and live traces): ``out_dir`` (relative to the
    repository root), or the build's ``executed`` folder when it is ``None``."""
    return EXECUTED if out_dir is None else resolve(out_dir)


def require_checkout() -> Path:
    """The repository root, or a one-line :class:`InputError` when rackbook runs from an
    installed copy without the repository (its data, notebooks and book sources)."""
    if not (ROOT / "data" / "claims.yaml").is_file():
        raise InputError(
            ROOT,
            "RACKBOOK_ROOT",
            "no rackbook checkout here (data/claims.yaml missing): run from a clone of the "
            "repository, or set RACKBOOK_ROOT to one",
        )
    return ROOT
