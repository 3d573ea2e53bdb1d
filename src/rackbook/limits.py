"""Limits checked before any work: input files (:func:`input_file`, MB = 10**6 bytes;
``--max-input-mb`` sets one limit for all) and counts (:data:`BOUNDS`, far above any deployment)."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

from rackbook.errors import InputError

#: Default largest input file read whole / read in bounded memory or gzip-inflated (MB).
DEFAULT_MAX_INPUT_MB = 256.0
STREAMED_MAX_MB = 16_000.0
_max_input_mb = DEFAULT_MAX_INPUT_MB

#: name -> largest allowed value (inclusive).
BOUNDS: dict[str, int] = {
    "gpus": 100_000,  # GPUs of one deployment
    "batch": 10_000_000,  # sequences decoding together (all GPUs)
    "batch_size": 65_536,  # sequences per decode rank in one step
    "decode_ranks": 100_000,
    "context": 100_000_000,  # tokens of one sequence
    "concurrency": 10_000_000,
    "redundant": 65_536,  # redundant expert replicas
    "ep_size": 100_000,
    "experts": 65_536,  # logical experts per layer
    "layers": 4_096,
    "expert_cells": 10_000_000,  # layers x experts
    "groups": 65_536,
    "nodes": 100_000,
    "requests": 5_000_000,  # request rows an import expands to
    "gaps": 400_000_000,  # inter-token gaps of one imported result (16 bytes each in memory)
    "csv_lines": 100_000,  # lines of one published CSV (MLPerf's summary.csv: about 5,000)
}

#: Entries a list parameter may hold.
MAX_LIST_ENTRIES = 1_000
#: Caps (MB) unless ``--max-input-mb`` is given: YAML, JavaScript sources, one CSV line.
YAML_MAX_MB = 4.0
JS_MAX_MB = 16.0
CSV_LINE_MB = 1.0


def set_max_input_mb(mb: float | None) -> None:
    """Set the input size limit (MB); None restores the default."""
    global _max_input_mb
    _max_input_mb = DEFAULT_MAX_INPUT_MB if mb is None else float(mb)


def input_file(
    path: str | Path,
    field: str = "-",
    *,
    what: str = "file",
    missing: str = "file does not exist",
    cap_mb: float | None = None,
    streamed: bool = False,
) -> Path:
    """``path`` once known a regular file within the size limit; else one InputError."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(p, field, missing) from None
    except NotADirectoryError:
        raise InputError(p, field, f"{missing} (a parent is a file)") from None
    except OSError as exc:
        raise InputError(p, field, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(p, field, f"is a folder, expected a {what}")
    if not stat.S_ISREG(st.st_mode):
        problem = f"not a regular file (a device, FIFO or socket), expected a {what}"
        raise InputError(p, field, problem)
    own = cap_mb or (STREAMED_MAX_MB if streamed else _max_input_mb)  # unless --max-input-mb
    limit_mb = own if _max_input_mb == DEFAULT_MAX_INPUT_MB else _max_input_mb
    if st.st_size > limit_mb * 1e6:
        size = f"{st.st_size / 1e6:,.1f} MB" if st.st_size >= 1e5 else f"{st.st_size:,} bytes"
        problem = f"{size} is over the input size limit {limit_mb:g} MB (see --max-input-mb)"
        raise InputError(p, field, problem)
    return p


#: A gzip file may inflate to this many times its size, at least GZIP_FLOOR_MB (JSON: 2-10x;
#: a gzip bomb ~1,000x), unless ``--max-input-mb`` is given.
GZIP_RATIO = 200
GZIP_FLOOR_MB = 64.0


def streamed_cap(compressed: int) -> int:
    """Bytes a streamed gzip file of ``compressed`` bytes may inflate to."""
    if _max_input_mb != DEFAULT_MAX_INPUT_MB:
        return int(_max_input_mb * 1e6)
    return int(min(STREAMED_MAX_MB * 1e6, max(GZIP_FLOOR_MB * 1e6, GZIP_RATIO * compressed)))


def decode_problem(data: bytes, exc: UnicodeDecodeError) -> str:
    """Why ``data`` is not UTF-8 text: binary (NUL bytes), or the offending byte and where."""
    if b"\0" in data[:65536]:
        return "not text (binary file?)"
    start = exc.start
    try:  # the offset in ``data`` itself (past any byte-order mark)
        data.decode("utf-8")
    except UnicodeDecodeError as plain:
        start = plain.start
    line = data.count(b"\n", 0, start) + 1
    return f"not UTF-8 text: byte 0x{data[start]:02x} on line {line} (save the file as UTF-8)"


def nesting_error(path: str | Path, field: str = "-") -> InputError:
    """The error for a file nested deeper than the parser can follow."""
    return InputError(path, field, f"nested deeper than {sys.getrecursionlimit()} levels (refused)")


def bounded(value: float, name: str, where: str | Path = "-", field: str | None = None) -> int:
    """``value`` when it is at most ``BOUNDS[name]``, else InputError naming the bound."""
    if value > BOUNDS[name]:
        problem = f"{value:,.0f} is too large: at most {BOUNDS[name]:,} (rackbook's {name} bound)"
        raise InputError(where, field or name, problem)
    return int(value)


#: Fewest open files rackbook works with (imports, Parquet, kernel pipes): 24 failed half-way.
MIN_OPEN_FILES = 256


def check_open_files() -> None:
    """Raise the soft open-files limit to MIN_OPEN_FILES if allowed; else InputError."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= MIN_OPEN_FILES:
        return
    with contextlib.suppress(ValueError, OSError):  # ValueError: the hard limit is lower
        resource.setrlimit(resource.RLIMIT_NOFILE, (MIN_OPEN_FILES, hard))
        return
    problem = f"{soft} is under the {MIN_OPEN_FILES} rackbook needs: run ulimit -n {MIN_OPEN_FILES}"
    raise InputError("-", "open files", problem)
