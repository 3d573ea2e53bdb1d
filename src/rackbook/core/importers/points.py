"""What the importers share: a source file read safely (whole and bounded, or as bounded CSV
lines) and its provenance; one checked value of a row; the ``published_points`` table (tok/s,
latencies in s) and the kind ``published`` trace holding it. Every problem is one InputError."""

from __future__ import annotations

import codecs
import hashlib
import math
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rackbook import limits
from rackbook.core import importers, provenance, schema, traces
from rackbook.errors import InputError

#: A GitHub blob URL at a commit: its repository, commit and path.
GITHUB_BLOB = re.compile(
    r"^https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/(?P<commit>[0-9a-fA-F]{7,40})/(?P<path>.+)$"
)


def read_text(path: Path, cap_mb: float | None = None) -> str:
    """The file's text (at most ``cap_mb`` MB); missing, empty, binary, not UTF-8: InputError."""
    limits.input_file(path, cap_mb=cap_mb)
    data = path.read_bytes()
    if not data.strip():
        raise InputError(path, "-", "file is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, "-", limits.decode_problem(data, exc)) from None


def check_text(path: Path) -> None:
    """InputError when missing, empty or binary, reading only the start."""
    limits.input_file(path, streamed=True)
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
        if b"\0" in head:
            raise InputError(path, "-", "not text (binary file?)")
        chunk = head
        while not chunk.strip():
            if not chunk:
                raise InputError(path, "-", "file is empty")
            chunk = fh.read(1 << 20)


def _check_utf8(path: Path) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                start = max(exc.start - len(decoder.getstate()[0]), 0)
                line = lines + chunk.count(b"\n", 0, start) + 1
                byte = f"0x{chunk[start]:02x}"
                problem = f"not UTF-8 text: byte {byte} on line {line} (save the file as UTF-8)"
                raise InputError(path, "-", problem) from None
            lines += chunk.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            problem = "not UTF-8 text: cut inside a character"
            raise InputError(path, "end of file", problem) from None


def csv_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 CSV file (BOM dropped), one at a time, each at most
    :data:`rackbook.limits.CSV_LINE_MB` MB, at most ``BOUNDS["csv_lines"]`` in all."""
    check_text(path)
    _check_utf8(path)  # whole first: a line then decodes (a longer one was refused, not cut)
    longest = int(limits.CSV_LINE_MB * 1e6)
    bound = limits.BOUNDS["csv_lines"]
    with path.open("rb") as fh:
        for n, raw in enumerate(iter(lambda: fh.readline(longest + 1), b""), 1):
            if len(raw) > longest:
                problem = f"longer than {limits.CSV_LINE_MB:g} MB (refused)"
                raise InputError(path, f"line {n}", problem)
            if n > bound:
                problem = f"more than {bound:,} lines (rackbook's bound on csv lines)"
                raise InputError(path, "rows", problem)
            yield raw.decode("utf-8-sig" if n == 1 else "utf-8")


def source_info(path: Path, url: str | None = None, date: str | None = None) -> dict[str, Any]:
    """Provenance: name, SHA-256, URL (and a GitHub blob's repo, path, commit), date (checked by
    :func:`rackbook.core.importers.check_options`)."""
    cell(path, "--source-url", url, "url?")
    with path.open("rb") as fh:
        sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    m = GITHUB_BLOB.match(url or "")
    blob = {k: m[k] if m else None for k in ("repo", "path", "commit")}
    return {"file": path.name, "sha256": sha256, "url": url, **blob, "date": date}


#: A :func:`cell`'s text shapes: the check and the problem when it fails.
_SHAPES: dict[str, tuple[Callable[[str], Any], str]] = {
    "date": (schema.is_date, "is not a date YYYY-MM-DD"),
    "url": (schema.URL.match, "is not an http(s) link"),
}


def cell(path: Path, field: str, value: Any, check: str) -> Any:
    """``value`` checked as ``check``: ``text`` (non-empty), ``date``, ``url``, ``whole`` (an int
    > 0), ``number`` (finite, > 0) or ``amount`` (>= 0); a trailing ``?``: None where absent."""
    kind = check.rstrip("?")
    if value is None and kind != check:
        return None
    if value is None:
        raise InputError(path, field, "missing")
    if kind in ("text", *_SHAPES):
        if not isinstance(value, str) or not value.strip():
            raise InputError(path, field, f"must be a non-empty string, got {value!r}")
        if kind in _SHAPES and not _SHAPES[kind][0](value):
            raise InputError(path, field, f"{value!r} {_SHAPES[kind][1]}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(path, field, f"not a number ({value!r})")
    if not math.isfinite(value):
        raise InputError(path, field, "non-finite value (NaN or infinite)")
    if kind == "whole" and float(value) % 1 != 0:
        raise InputError(path, field, f"not an integer ({value!r})")
    if value < 0 or (value == 0 and kind != "amount"):
        least = ">=" if kind == "amount" else ">"
        raise InputError(path, field, f"must be {least} 0, got {value!r}")
    return int(value) if kind == "whole" else float(value)


def mapping(path: Path, field: str, value: Any) -> dict[str, Any]:
    """An object (a JSON or JavaScript ``{...}``); absent is ``missing``."""
    if not isinstance(value, dict):
        raise InputError(path, field, "missing" if value is None else "must be an object")
    return value


def cells(
    path: Path, at: str, obj: Mapping[str, Any], table: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    """The columns of ``table`` (column -> (key, check)) read from ``obj``, named ``at.key``."""
    return {col: cell(path, f"{at}.{k}", obj.get(k), check) for col, (k, check) in table.items()}


#: A published format's reading of its file: (points, the run's ``parameters``: what it skipped).
PointsReader = Callable[[Path, importers.Options], tuple[pd.DataFrame, dict[str, Any]]]


#: Schema column types -> pandas' (nullable where a value may be absent).
_DTYPES = {"string": "string", "int64": "Int64", "float64": "float64", "bool": "bool"}


def frame(rows: list[dict[str, Any]], table: str = "published_points") -> pd.DataFrame:
    """Rows (dicts by column name) as a table of the schema's columns and types."""
    cols = schema.TABLES[table]
    df = pd.DataFrame(rows, columns=[c.name for c in cols])
    return df.astype({c.name: _DTYPES[c.dtype] for c in cols})


def empty_table(table: str) -> pd.DataFrame:
    """An empty table with the schema's columns and types."""
    return frame([], table)


def reader(fmt: str, read_points: PointsReader) -> Callable[..., traces.Trace]:
    """A published format's ``read(path, options, command)`` by :func:`read_published`."""
    return lambda path, options, command: read_published(fmt, path, options, command, read_points)


def read_published(
    fmt: str, path: Path, options: importers.Options, command: str, read_points: PointsReader
) -> traces.Trace:
    """The kind ``published`` trace of ``read_points`` (its other tables empty); undated points
    take ``--source-date``."""
    check_text(path)
    source = source_info(path, options.source_url, options.source_date)
    pts, parameters = read_points(path, options)
    if options.source_date is not None:
        pts["date"] = pts["date"].fillna(options.source_date)
    run = provenance.new_run_info(
        kind="published",
        commands=[command],
        parameters={"format": fmt, **parameters},
        engine={"name": fmt, "version": None, "what": importers.get(fmt).what},
        notes=f"published measurements imported from {source['file']} by `rackbook import {fmt}`; "
        "hardware, GPUs and engine are per row in published_points",
        source=source,
        rows=[
            {"point_id": p, "url": u, "date": None if pd.isna(d) else d}
            for p, u, d in zip(pts["point_id"], pts["url"], pts["date"], strict=True)
        ],
    )
    run["hardware"] = {"gpus": [], "hosts": None, "note": "not measured here: see published_points"}
    run["recorded_by"] = None
    req, itl, points = (empty_table(t) for t in ("requests", "itl", "points"))
    return traces.Trace(run, req, itl, points, {"published_points": pts})


def summary(t: traces.Trace) -> str:
    """``N published points, trace_id ID`` and what the import skipped, by kind."""
    pts = t.extra["published_points"]
    skipped = t.run["parameters"].get("skipped") or {}
    told = "; ".join(
        f"skipped {k}: " + ", ".join(f"{n} {u}" for u, n in v.items())
        if isinstance(v, dict)
        else f"skipped {k}: {v}"
        for k, v in skipped.items()
        if v
    )
    return f"{len(pts)} published points, trace_id {t.trace_id}" + (f" ({told})" if told else "")
