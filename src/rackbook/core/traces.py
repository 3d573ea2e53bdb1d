"""Reading, validating and writing trace folders (format: :mod:`rackbook.core.schema`)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rackbook import limits
from rackbook.core import fsio, jsonstream, schema
from rackbook.core.fsio import atomic_dir, check_output_folder
from rackbook.errors import InputError

_T = TypeVar("_T")
_EMPTY_GAPS = pd.DataFrame({c.name: pd.Series([], dtype=c.dtype) for c in schema.ITL})
_ARROW = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}


@dataclass
class Trace:
    """A trace in memory: provenance plus its tables (pandas DataFrames)."""

    run: dict[str, Any]
    requests: pd.DataFrame
    itl: pd.DataFrame
    points: pd.DataFrame
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)
    path: Path | None = None
    itl_loaded: bool = True  # False: ``itl`` left empty by ``read_trace(itl=False)``
    screening: Any = None  # what validity.valid_trace left out

    @property
    def trace_id(self) -> str:
        return str(self.run.get("trace_id", ""))

    @property
    def kind(self) -> str:
        return str(self.run.get("kind", ""))


#: A successful request slower than this (seconds) is taken as a unit error (ms given as s).
IMPLAUSIBLE_LATENCY_S = 86_400.0
#: Largest plausible token count of one request (larger values are corrupt input).
MAX_TOKENS = 1e10
#: Request columns checked value by value (the required numbers) -> whether they count tokens.
REQUEST_VALUES = {
    c.name: c.dtype == "int64"
    for c in schema.REQUESTS
    if c.dtype in ("int64", "float64") and not c.nullable
}
NON_FINITE = "non-finite value (NaN or infinite)"


@dataclass(frozen=True)
class RowNames:
    """How a bad value is named: ``requests.ttft_s ... in row 3``, or by ``keys`` ``ttfts[3]``."""

    table: str = "requests"
    keys: Mapping[str, str] | None = None

    def __call__(self, column: str, row: int) -> tuple[str, str]:
        if self.keys is not None:
            return f"{self.keys.get(column, column)}[{row}]", ""
        return f"{self.table}.{column}", f" in row {row}"


def check_values(
    values: np.ndarray,
    where: Path | str,
    column: str,
    names: RowNames = RowNames(),
    *,
    offset: int = 0,
    tokens: bool = False,
) -> None:
    """Finite, non-negative values (token counts at most :data:`MAX_TOKENS`), else InputError."""
    if values.dtype.kind in "iuf" and values.size:  # all good: two reductions, no temporaries
        lo, hi = values.min(), values.max()  # NaN in either fails every comparison below
        if lo >= 0 and (hi <= MAX_TOKENS if tokens else hi < np.inf):
            return
    checks = {NON_FINITE: ~np.isfinite(values), "negative value": values < 0}
    if tokens:
        checks[f"implausibly large token count (over {MAX_TOKENS:.0e})"] = values > MAX_TOKENS
    for problem, bad in checks.items():
        if bad.any():
            field, suffix = names(column, offset + int(np.argmax(bad)))
            raise InputError(where, field, problem + suffix)


def check_request_rows(
    cols: Mapping[str, np.ndarray],
    success: np.ndarray,
    where: Path | str,
    names: RowNames = RowNames(),
    *,
    offset: int = 0,
) -> None:
    """:func:`check_values` of each :data:`REQUEST_VALUES` column; no TTFT over its E2EL."""
    for column, tokens in REQUEST_VALUES.items():
        if column in cols:
            check_values(cols[column], where, column, names, offset=offset, tokens=tokens)
    late = success & (cols["ttft_s"] > cols["e2el_s"] + 1e-9)
    if late.any():
        field, suffix = names("ttft_s", offset + int(np.argmax(late)))
        raise InputError(where, field, "larger than the request's end-to-end latency" + suffix)


def check_points(pts: pd.DataFrame, where: Path | str) -> None:
    """A conformed points table: unique ids, values within :data:`schema.RULES`."""
    if pts["point_id"].duplicated().any():
        raise InputError(where, "points.point_id", "duplicate point id")
    schema.check_rules(pts, "points", where)


def check_latency_unit(e2el_s: np.ndarray, where: Path | str, field: str) -> None:
    """Refuse e2el (s) whose median is over a day (milliseconds given as seconds)."""
    if e2el_s.size and float(np.median(e2el_s)) > IMPLAUSIBLE_LATENCY_S:
        problem = "median latency over a day: values look like milliseconds, not seconds"
        raise InputError(where, field, problem)


#: A successful request's gaps (s) add up to its ``e2el_s - ttft_s`` within this share plus
#: :data:`GAP_SUM_SLACK_S` (vLLM's client stamps each chunk: they agree to rounding).
GAP_SUM_REL = 0.05
GAP_SUM_SLACK_S = 0.01

#: Most output tokens per chunk on average over a request (a step streams at most its
#: speculative tokens plus one; shipped CPU recordings reach 16 with merged reads).
MAX_TOKENS_PER_CHUNK = 24

#: A request starts (s) within its point's ``duration_s`` times this plus :data:`START_SLACK_S`.
START_SLACK_REL = 1.01
START_SLACK_S = 1.0


def check_consistency(
    req: pd.DataFrame, itl: pd.DataFrame | None, pts: pd.DataFrame, where: Path | str
) -> None:
    """Some success with output; each request starts within its point's duration; each successful
    one's gaps (``itl`` None: not read) add up to its decode window, its output from gaps + 1 to
    :data:`MAX_TOKENS_PER_CHUNK` per chunk. InputError for the first that does not."""
    if not len(req):
        return
    ok = req["success"].to_numpy(bool)
    if not ok.any():
        raise InputError(where, "requests.success", "no request succeeded: nothing to measure")
    out = req["output_tokens"].to_numpy(np.float64)
    if not np.nansum(out[ok]) > 0:
        raise InputError(where, "requests.output_tokens", "no successful request generated a token")
    start = req["start_time_s"].to_numpy(np.float64)  # conformed tables: every column there
    dur = req["point_id"].map(pts.set_index("point_id")["duration_s"]).to_numpy(np.float64)
    late = np.isfinite(start) & (start > dur * START_SLACK_REL + START_SLACK_S)
    if late.any():
        i = int(np.argmax(late))
        problem = f"{start[i]:,.6g} s is past its point's duration ({dur[i]:,.6g} s)"
        raise InputError(where, f"requests.start_time_s (row {i})", problem)
    if itl is None or not len(itl):
        return
    rows = itl["request_row"].to_numpy(np.int64)
    gaps = itl["itl_s"].to_numpy(np.float64)
    n, total = np.zeros(len(req)), np.zeros(len(req))
    for lo in range(0, len(rows), 1 << 20):  # np.bincount copies a read-only input: in blocks
        r, w = rows[lo : lo + (1 << 20)], gaps[lo : lo + (1 << 20)]
        n += np.bincount(r, minlength=len(req))  # rows < len(req): checked by validate
        total += np.bincount(r, weights=w, minlength=len(req))
    window = (req["e2el_s"] - req["ttft_s"]).to_numpy(np.float64)
    has = ok & (n > 0)
    off = has & (np.abs(total - window) > GAP_SUM_REL * window + GAP_SUM_SLACK_S)
    if off.any():
        i = int(np.argmax(off))
        sums = f"gaps add up to {total[i]:.6g} s, its e2el_s - ttft_s is {window[i]:.6g} s"
        problem = f"the request's {sums} (more than {GAP_SUM_REL:.0%} + {GAP_SUM_SLACK_S} s apart)"
        raise InputError(where, f"itl.itl_s (request row {i})", problem)
    few = has & (out < n + 1)
    many = has & (out > MAX_TOKENS_PER_CHUNK * (n + 1))
    for bad, than in ((few, "fewer than"), (many, f"over {MAX_TOKENS_PER_CHUNK} times")):
        if bad.any():
            i = int(np.argmax(bad))
            problem = f"{out[i]:,.0f} tokens is {than} its {n[i] + 1:,.0f} chunks (gaps + 1)"
            raise InputError(where, f"requests.output_tokens (row {i})", problem)


def check_required(run: Any, fields: Mapping[str, tuple[bool, str]], where: Path | str) -> None:
    """InputError unless ``run`` is a JSON object holding every required one of ``fields``."""
    if not isinstance(run, dict):
        raise InputError(where, "run.json", f"must be a JSON object, got {type(run).__name__}")
    for name, (required, _doc) in fields.items():
        if required and name not in run:
            raise InputError(where, f"run.json.{name}", "missing required field")


def _check_run(run: Any, where: Path | str) -> None:
    check_required(run, schema.RUN_FIELDS, where)
    version = run["schema_version"]
    if isinstance(version, bool) or version != schema.SCHEMA_VERSION:
        problem = f"{version!r} is not a version this rackbook reads ({schema.SCHEMA_VERSION})"
        raise InputError(where, "run.json.schema_version", problem)
    if run["kind"] not in schema.KINDS:
        problem = f"{run['kind']!r} is not one of {', '.join(schema.KINDS)}"
        raise InputError(where, "run.json.kind", problem)
    gen = run.get("generator")
    if run["kind"] == "synthetic" and not (isinstance(gen, dict) and {"name", "seed"} <= set(gen)):
        problem = "a synthetic trace must name its generator and seed"
        raise InputError(where, "run.json.generator", problem)
    if not isinstance(run["commands"], list):
        raise InputError(where, "run.json.commands", "must be a list of command lines")
    if not isinstance(run["parameters"], dict):
        raise InputError(where, "run.json.parameters", "must be an object")
    for part in ("hardware", "server"):
        _check_inventory(run.get(part), where, f"run.json.{part}")


def _check_inventory(value: Any, where: Path | str, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise InputError(where, field, f"must be an object, got {type(value).__name__}")
    gpus = value.get("gpus")
    if gpus is not None:
        if not isinstance(gpus, list):
            raise InputError(where, f"{field}.gpus", f"must be a list, got {type(gpus).__name__}")
        for i, g in enumerate(gpus):
            if not isinstance(g, dict) or not isinstance(g.get("name", ""), str):
                raise InputError(where, f"{field}.gpus[{i}]", "must be an object with a text name")
    for count in ("hosts", "cpu_cores", "memory_bytes"):
        n = value.get(count)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise InputError(where, f"{field}.{count}", f"must be a whole number >= 0, got {n!r}")


def conform(
    df: pd.DataFrame,
    table: str,
    where: Path | str,
    columns: tuple[schema.Column, ...] | None = None,
) -> pd.DataFrame:
    """``df`` with the table's columns (default ``schema.TABLES[table]``) in exact dtypes, absent
    nullable ones null, extra ones kept; a bad or missing value is an InputError."""
    cols = schema.TABLES[table] if columns is None else columns
    out = df.copy(deep=False)  # columns replaced below, never changed in place: no data copy
    for c in cols:
        fname = f"{table}.{c.name}"
        if c.name not in out.columns:
            if c.nullable:
                out[c.name] = pd.NA
            else:
                raise InputError(where, fname, "missing column")
        s = out[c.name]
        if not c.nullable and s.isna().any():
            raise InputError(where, fname, f"missing value in row {int(s.isna().argmax())}")
        try:
            if c.dtype == "string":
                out[c.name] = s.astype("string")
            elif s.dtype == c.dtype and not (c.nullable and c.dtype == "int64"):
                # already exact: no copy of a large column
                pass
            elif c.dtype == "int64":
                num = pd.to_numeric(s, errors="raise")
                if num.dtype.kind not in "iub" and (num.dropna() % 1 != 0).any():
                    raise ValueError("non-integer value")
                out[c.name] = num.astype("Int64" if c.nullable else "int64")
            elif c.dtype == "float64":
                out[c.name] = pd.to_numeric(s, errors="raise").astype("float64")
            elif c.dtype == "bool":
                if s.dtype != bool and not set(s.dropna().unique()) <= {True, False}:
                    raise ValueError("not a boolean")
                out[c.name] = s.astype(bool)
        except (ValueError, TypeError, OverflowError) as exc:
            raise InputError(where, fname, f"expected {c.dtype}: {exc}") from None
        if c.dtype == "float64":
            vals = out[c.name].to_numpy()
            bad = ~np.isfinite(vals) & ~np.isnan(vals) if c.nullable else ~np.isfinite(vals)
            if bad.any():
                raise InputError(where, fname, f"{NON_FINITE} in row {int(bad.argmax())}")
    return out


def validate(trace: Trace, where: Path | str | None = None) -> Trace:
    """Check a trace's provenance, tables and cross-table consistency; return it conformed."""
    where = where or trace.path or "<trace>"
    _check_run(trace.run, where)
    req = conform(trace.requests, "requests", where)
    itl = conform(trace.itl, "itl", where)
    pts = conform(trace.points, "points", where)
    extra = {
        k: conform(v, k, where) if k in schema.EXTRA_TABLES else v for k, v in trace.extra.items()
    }
    if "published_points" in extra:
        schema.check_points(extra["published_points"], trace.run, where)
    check_points(pts, where)
    dup = req["request_id"][req["request_id"].duplicated()]
    if len(dup):
        raise InputError(where, "requests.request_id", f"duplicate id {dup.iloc[0]!r}")
    unknown = set(req["point_id"].unique()) - set(pts["point_id"].unique())
    if unknown:
        problem = f"point {sorted(unknown)[0]!r} is not in points.parquet"
        raise InputError(where, "requests.point_id", problem)
    ok = req["success"].to_numpy()
    check_request_rows({c: req[c].to_numpy(np.float64) for c in REQUEST_VALUES}, ok, where)
    cached = req["cached_prompt_tokens"].dropna().to_numpy(np.float64)
    check_values(cached, where, "cached_prompt_tokens", tokens=True)
    check_latency_unit(req["e2el_s"].to_numpy(np.float64)[ok], where, "requests.e2el_s")
    if len(itl):
        rows = itl["request_row"].to_numpy()
        if rows.min() < 0 or rows.max() >= len(req):
            raise InputError(where, "itl.request_row", "refers to a request row that is absent")
        check_values(itl["itl_s"].to_numpy(np.float64), where, "itl_s", RowNames("itl"))
    check_consistency(req, itl if trace.itl_loaded else None, pts, where)
    return Trace(trace.run, req, itl, pts, extra, trace.path, trace.itl_loaded)


def to_arrow(df: pd.DataFrame, columns: tuple[schema.Column, ...]) -> pa.Table:
    """``df`` as an Arrow table, ``columns`` in their declared types (others inferred)."""
    known = {c.name: _ARROW[c.dtype] for c in columns}
    return pa.table({n: pa.array(df[n], type=known.get(n), from_pandas=True) for n in df.columns})


def write_trace(
    path: str | Path, trace: Trace, *, overwrite: bool = True, source: str | Path | None = None
) -> Path:
    """Validate and write ``trace`` to folder ``path`` atomically (value errors name ``source``)."""
    path = check_output_folder(path)
    fsio.check_replaceable(path, "trace", "output")
    t = validate(trace, where=source or path)
    with atomic_dir(path, overwrite=overwrite, kind="trace") as tmp:
        fsio.atomic_write_json(tmp / "run.json", t.run)
        tables = {"requests": t.requests, "itl": t.itl, "points": t.points, **t.extra}
        for name, df in tables.items():
            arrow = to_arrow(df, schema.TABLES.get(name, ()))
            pq.write_table(arrow, tmp / f"{name}.parquet", compression="zstd")
    return path


def read_run(path: str | Path) -> dict[str, Any]:
    """Only ``run.json`` of a trace folder (validated)."""
    path = Path(path)
    f = path / "run.json"
    if not path.is_dir():
        problem = "not a folder (a trace is a folder with run.json and Parquet tables)"
        raise InputError(path, "-", problem if path.exists() else "trace folder does not exist")
    if not f.exists():
        raise InputError(f, "-", "missing run.json")
    run = jsonstream.load(f)
    _check_run(run, f)
    return run


def _parquet(path: str | Path, name: str, read: Callable[[Path], _T]) -> _T:
    """``read`` of table ``name``'s Parquet file; missing or unreadable is one InputError."""
    f = Path(path) / f"{name}.parquet"
    if not f.is_file():
        raise InputError(f, "-", f"missing table {name}.parquet")
    try:
        return read(f)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f, "-", f"unreadable Parquet: {exc}") from None


def read_table(path: str | Path, name: str, columns: list[str] | None = None) -> pd.DataFrame:
    """One table of a trace folder as read (not conformed); errors name the file."""
    return _parquet(path, name, lambda f: pq.read_table(f, columns=columns).to_pandas())


def read_trace(path: str | Path, *, itl: bool = True) -> Trace:
    """Read and validate a trace folder. ``itl=False`` skips the (large) gap table."""
    path = Path(path)
    run = read_run(path)
    if itl or table_rows(path, "requests") > limits.BOUNDS["requests"]:
        check_row_counts(path)
    req = read_table(path, "requests")
    gaps = read_table(path, "itl") if itl else _EMPTY_GAPS.copy()
    pts = read_table(path, "points")
    names = sorted(f.stem for f in path.glob("*.parquet"))
    extra = {n: read_table(path, n) for n in names if n not in ("requests", "itl", "points")}
    return validate(Trace(run, req, gaps, pts, extra, path, itl), where=path)


def table_rows(path: str | Path, name: str) -> int:
    """Rows of table ``name`` of a trace folder, from the Parquet footer (no data is read)."""
    return _parquet(path, name, lambda f: int(pq.ParquetFile(f).metadata.num_rows))


def check_row_counts(path: str | Path) -> tuple[int, int]:
    """(request rows, gap rows); InputError past the requests bound or for gaps past tokens."""
    path = Path(path)
    n_req = limits.bounded(table_rows(path, "requests"), "requests", path / "requests.parquet", "-")
    n_itl = table_rows(path, "itl")
    names = _parquet(path, "requests", lambda f: pq.ParquetFile(f).schema_arrow.names)
    if n_itl > n_req and "output_tokens" in names:  # only then can gaps outnumber tokens
        col = read_table(path, "requests", ["output_tokens"])["output_tokens"]
        tokens = float(pd.to_numeric(col, errors="coerce").fillna(0).clip(lower=0).sum())
        if n_itl > tokens:
            what = f"{n_itl:,} gap rows for {n_req:,} requests that generated {tokens:,.0f} tokens"
            problem = f"{what}: a request has at most one gap per token"
            raise InputError(path / "itl.parquet", "-", problem)
    return n_req, n_itl


def _read_ahead(batches: Iterator[Any], depth: int = 2) -> Generator[Any, None, None]:
    """``batches`` advanced ``depth`` items ahead in a thread (decoding overlaps the caller's work);
    order kept, the thread's exception raised in place; the thread ends when the caller stops."""
    end = object()
    pool = ThreadPoolExecutor(1, thread_name_prefix="rackbook-read-ahead")
    ahead = deque(pool.submit(next, batches, end) for _ in range(depth))
    try:
        while (item := ahead.popleft().result()) is not end:
            ahead.append(pool.submit(next, batches, end))
            yield item
    finally:
        pool.shutdown(cancel_futures=True)


def _chunk_column(batch: Any, spec: Any, path: Path, table: str, offset: int) -> Any:
    """Column ``spec`` of a batch checked as :func:`conform` does (strings: codes and values)."""
    col, fname = batch.column(spec.name), f"{table}.{spec.name}"
    if col.null_count and not spec.nullable:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(path, fname, f"missing value in row {offset + row}")
    dtype = spec.dtype
    try:
        if dtype == "string":
            if not pa.types.is_dictionary(col.type):
                col = col.cast(pa.string()).dictionary_encode()
            return (
                col.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False),
                col.dictionary.cast(pa.string()).to_pylist(),
            )
        if col.type != _ARROW[dtype]:
            col = col.cast(_ARROW[dtype])
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise InputError(path, fname, f"expected {dtype}: {exc}") from None
    arr = col.to_numpy(zero_copy_only=False)
    # NaN makes min and max NaN: two reductions instead of a mask when all is well
    if dtype == "float64" and not spec.nullable and arr.size:
        if not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
            row = offset + int((~np.isfinite(arr)).argmax())
            raise InputError(path, fname, f"{NON_FINITE} in row {row}")
    return arr


def iter_table(
    path: str | Path, name: str, columns: list[str], chunk_rows: int = 1 << 20
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """``(first row, {column: array})`` of table ``name``, ``chunk_rows`` at a time, strings as
    ``(codes, values)``, each chunk checked as :func:`conform` does."""
    path = Path(path)
    f = path / f"{name}.parquet"
    known = {c.name: c for c in schema.TABLES[name]}
    strings = [c for c in columns if known[c].dtype == "string"]
    # pre_buffer (pyarrow's default) would read ahead every row group: memory = the file
    pf = _parquet(
        path, name, lambda f: pq.ParquetFile(f, read_dictionary=strings, pre_buffer=False)
    )
    for c in columns:
        if c not in pf.schema_arrow.names:
            raise InputError(path, f"{name}.{c}", "missing column")

    def chunks() -> Iterator[tuple[int, dict[str, Any]]]:  # in the reading thread
        offset = 0
        for batch in pf.iter_batches(batch_size=chunk_rows, columns=columns):
            yield offset, {c: _chunk_column(batch, known[c], path, name, offset) for c in columns}
            offset += batch.num_rows

    try:
        yield from _read_ahead(chunks())
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f, "-", f"unreadable Parquet: {exc}") from None


def keep_rows(trace: Trace, keep: np.ndarray, points: pd.Series | None = None) -> Trace:
    """The trace with only the rows where ``keep`` (gaps renumbered) and ``points``."""
    itl = trace.itl
    if len(itl):
        new_pos = np.cumsum(keep) - 1
        itl = itl[keep[itl["request_row"].to_numpy()]].copy()
        rows = itl["request_row"]
        itl["request_row"] = new_pos[rows.to_numpy()].astype(rows.dtype)
        itl = itl.reset_index(drop=True)
    pts = trace.points if points is None else trace.points[points].reset_index(drop=True)
    req = trace.requests[keep].reset_index(drop=True)
    return dataclasses.replace(trace, requests=req, itl=itl, points=pts)


def concat(traces: list[Trace], run: dict[str, Any]) -> Trace:
    """Merge traces (e.g. points or client shards) into one; ITL rows are re-indexed."""
    starts = np.cumsum([0] + [len(t.requests) for t in traces])
    moved = zip(traces, starts[:-1], strict=True)
    gaps = [t.itl.assign(request_row=t.itl["request_row"] + n) for t, n in moved]
    names = dict.fromkeys(k for t in traces for k in t.extra)
    extra = {k: [t.extra[k] for t in traces if k in t.extra] for k in names}
    req, itl, pts = (
        pd.concat(f, ignore_index=True)
        for f in ([t.requests for t in traces], gaps, [t.points for t in traces])
    )
    return Trace(run, req, itl, pts, {k: pd.concat(v, ignore_index=True) for k, v in extra.items()})


def point_batch(points: pd.DataFrame) -> pd.Series:
    """Batch size of each point: ``batch_size`` where set, else the client ``concurrency``."""
    return points["batch_size"].fillna(points["concurrency"]).astype("Int64")


def point_decode_ranks(points: pd.DataFrame) -> pd.Series:
    """Decode ranks of each point: ``decode_ranks``, else 1."""
    if "decode_ranks" not in points.columns:
        return pd.Series(1, index=points.index, dtype="Int64")
    return points["decode_ranks"].fillna(1).astype("Int64")


def point_rank_batch(points: pd.DataFrame) -> pd.Series:
    """Batch per decode rank: ``batch_size``, else whole ``concurrency / ranks``."""
    ranks = point_decode_ranks(points)
    conc = points["concurrency"].astype("Int64")
    per_rank = (conc // ranks).where(conc % ranks == 0)
    return points["batch_size"].astype("Int64").fillna(per_rank).astype("Int64")
