"""Expert-load data (routed token-expert assignments, as vLLM's ``expert_load_pass`` counts them)
per (layer, expert), from files, trace tables and ``EPLB step:`` log lines, checked on the way in.
Shapes: ``(layers, experts)``, or ``(windows, layers, experts)`` for a trace's table."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook import limits
from rackbook.core import jsonstream
from rackbook.errors import InputError

_Source = str | Path | None


#: Largest plausible token count of one expert in one window (vLLM's policy works in float32).
MAX_TOKENS = 1e15


def _checked_rows(rows: Any, source: _Source, field: str) -> np.ndarray:
    """Nested lists of per-layer token counts (a flat list: one layer) as a float64 array."""
    if not isinstance(rows, (list, tuple)) or len(rows) == 0:
        raise InputError(source, field, "expected a non-empty list of per-layer lists")
    if all(not isinstance(r, (list, tuple)) for r in rows):
        rows = [rows]
    for i, row in enumerate(rows):
        if not isinstance(row, (list, tuple)):
            raise InputError(source, f"{field}[{i}]", "expected a list of token counts")
        if len(row) != len(rows[0]):
            problem = f"ragged rows: {len(row)} experts, row 0 has {len(rows[0])}"
            raise InputError(source, f"{field}[{i}]", problem)
        for j, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(source, f"{field}[{i}][{j}]", f"non-numeric value {v!r}")
    return np.asarray(rows, dtype=np.float64)


#: The value checks of :func:`as_loads`, in order: what fails, and the problem it names.
_LOAD_CHECKS: tuple[tuple[Callable[[np.ndarray], np.ndarray], Callable[[float], str]], ...] = (
    (lambda a: ~np.isfinite(a), lambda v: f"not finite ({v})"),
    (lambda a: a < 0, lambda v: f"negative token count {v:g}"),
    (lambda a: a > MAX_TOKENS, lambda v: f"implausibly large token count {v:g}"),
)


def as_loads(loads: Any, source: _Source = None, field: str = "loads") -> np.ndarray:
    """``loads`` as a float64 ``(layers, experts)`` array of finite, non-negative tokens."""
    if not isinstance(loads, np.ndarray):
        loads = _checked_rows(loads, source, field)
    elif loads.dtype.kind not in "iuf":  # booleans, objects, texts
        raise InputError(source, field, f"non-numeric entries (dtype {loads.dtype})")
    arr = np.asarray(loads, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(source, field, f"expected shape (layers, experts), got {arr.shape}")
    for fails, problem in _LOAD_CHECKS:
        bad = fails(arr)
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            raise InputError(source, f"{field}[{i}][{j}]", problem(arr[i, j]))
    return arr


_STEP_RE = re.compile(
    r"EPLB step:\s*(?P<step>\S+?)(?:\s+for model\s+(?P<model>.+?))?:\s+(?P<rest>\w+=.*)$"
)
_KV_RE = re.compile(r"(\w+)=([^,\s]+)")
_UNTIL_RE = re.compile(r"steps until the next rearrangement:\s*(\S+)")
_REQUIRED = ("avg_tokens", "max_tokens", "balancedness")


def parse_eplb_log_lines(lines: Iterable[str], source: _Source = None) -> Any:
    """vLLM's ``EPLB step: ...`` lines (``eplb_state.py``) as a DataFrame: ``line`` (1-based),
    ``step``, the ``key=value`` pairs, ``model``, ``steps_until_rearrangement``."""
    rows: list[dict[str, Any]] = []
    for n, raw in enumerate(lines, start=1):
        text = raw.rstrip("\r\n")
        if "EPLB step:" not in text:
            continue
        m = _STEP_RE.search(text)
        where = f"line {n}"
        if not m or not m.group("step").isdigit():
            raise InputError(source, where, f"malformed EPLB step line: {text.strip()[:120]!r}")
        row: dict[str, Any] = {"line": n, "step": int(m.group("step"))}
        if m.group("model"):
            row["model"] = m.group("model")
        for key, value in _KV_RE.findall(m.group("rest")):
            try:
                row[key] = float(value)
            except ValueError:
                if key in _REQUIRED:
                    raise InputError(source, where, f"{key}={value!r} is not a number") from None
                row[key] = value
        missing = [k for k in _REQUIRED if k not in row]
        if missing:
            raise InputError(source, where, f"EPLB step line lacks {', '.join(missing)}")
        until = _UNTIL_RE.search(m.group("rest"))
        if until:
            try:
                row["steps_until_rearrangement"] = int(until.group(1))
            except ValueError:
                raise InputError(source, where, "steps until rearrangement is not an int") from None
        rows.append(row)
    cols = ["line", "step", *_REQUIRED]
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=cols)
    return df[cols + [c for c in df.columns if c not in cols]]


def parse_eplb_log(path: str | Path) -> Any:
    """Parse a vLLM server log file; see :func:`parse_eplb_log_lines`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise InputError(p, "-", f"cannot read: {err.strerror or err}") from None
    return parse_eplb_log_lines(text.splitlines(), source=p)


def _read_parquet_loads(path: Path) -> np.ndarray:
    try:
        df = pd.read_parquet(path)
    except Exception as err:  # pyarrow raises many types for a bad file
        raise InputError(path, "-", f"not a readable Parquet file: {err}") from None
    missing = [c for c in ("layer", "expert", "tokens") if c not in df.columns]
    if missing:
        raise InputError(path, ",".join(missing), "missing column(s); need layer, expert, tokens")
    if df.empty:
        raise InputError(path, "tokens", "no rows")
    for col in ("layer", "expert"):
        if not pd.api.types.is_integer_dtype(df[col]) or (df[col] < 0).any():
            raise InputError(path, col, "must be non-negative integers")
    if df["tokens"].dtype == bool or not pd.api.types.is_numeric_dtype(df["tokens"]):
        raise InputError(path, "tokens", f"non-numeric column (dtype {df['tokens'].dtype})")
    if "window" in df.columns:  # a trace's expert_load table: loads summed over its windows
        if df.duplicated(["window", "layer", "expert"]).any():
            raise InputError(path, "window,layer,expert", "duplicate (window, layer, expert) rows")
        df = df.groupby(["layer", "expert"], as_index=False, sort=True)["tokens"].sum()
    if df.duplicated(["layer", "expert"]).any():
        raise InputError(path, "layer,expert", "duplicate (layer, expert) rows")
    num_layers = limits.bounded(int(df["layer"].max()) + 1, "layers", path, "layer")
    num_experts = limits.bounded(int(df["expert"].max()) + 1, "experts", path, "expert")
    if len(df) != num_layers * num_experts:
        problem = f"{len(df)} rows, expected {num_layers} layers x {num_experts} experts"
        raise InputError(path, "layer,expert", f"ragged table: {problem}")
    arr = np.full((num_layers, num_experts), np.nan)
    arr[df["layer"].to_numpy(), df["expert"].to_numpy()] = df["tokens"].to_numpy(np.float64)
    return as_loads(arr, path, "tokens")


def read_loads(path: str | Path) -> np.ndarray:
    """Expert loads ``(layers, experts)`` (tokens) from JSON ``{"loads": [[...]]}`` or Parquet
    ``layer, expert, tokens`` (summed over ``window``)."""
    p = limits.input_file(path, what="JSON or Parquet file", missing="file not found")
    with p.open("rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1" or p.suffix.lower() == ".parquet":
        return _read_parquet_loads(p)
    # layers, experts per layer, cells: bounded as they are read; a bad cell named loads[i][j]
    b, not_list = limits.BOUNDS, "expected a list of per-layer lists"
    c = jsonstream.Counts(b["layers"], b["experts"], b["expert_cells"], "layers", False, not_list)
    obj = jsonstream.load(p, {"loads": jsonstream.RAGGED}, c)
    if not isinstance(obj, dict) or "loads" not in obj:
        raise InputError(p, "loads", 'missing; expected {"loads": [[...], ...]}')
    loads = obj["loads"]
    if isinstance(loads, jsonstream.Ragged):  # a list, read straight into arrays
        width = int(loads.lens[0]) if len(loads) else 0
        bad = np.flatnonzero(loads.lens != width)
        if bad.size:
            i = int(bad[0])
            problem = f"ragged rows: {int(loads.lens[i])} experts, row 0 has {width}"
            raise InputError(p, f"loads[{i}]", problem)
        loads = loads.values.reshape(len(loads), width) if len(loads) else []
    return as_loads(loads, p)  # not a list: named there
