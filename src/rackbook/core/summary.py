"""A trace's vLLM serving metrics (:mod:`rackbook.core.metrics`), whole and per point, with valid
counts and flagged shares (None when streamed). A large folder is streamed a chunk at a time,
checked as ``traces.validate`` does; ITL past :data:`EXACT_ITL_MAX` gaps from a histogram."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import traces
from rackbook.core.latency_pool import LatencyPool, point_groups, sum_by, tail
from rackbook.core.metrics import (
    LATENCY_METRICS,
    PERCENTILES,
    BenchmarkMetrics,
    tpot_s,
    window_metrics,
)
from rackbook.errors import InputError

SCENARIO_KEYS = ("engine", "config", "batch_size", "concurrency", "context_tokens", "num_gpus")

#: A trace folder with more requests than this is summarised by streaming.
FULL_READ_MAX_REQUESTS = 250_000
#: ITL tables with more rows (gaps) than this are summarised by moments and a histogram.
EXACT_ITL_MAX = 40_000_000
#: Rows per streamed chunk.
CHUNK_ROWS = 1 << 20

_REQUEST_COLUMNS = ["point_id", "success", "ttft_s", "e2el_s", "prompt_tokens", "output_tokens"]


@dataclass(frozen=True)
class PointMetrics:
    """One sweep point: id, scenario keys and its window's :class:`BenchmarkMetrics`."""

    point_id: str
    scenario: dict[str, Any]
    metrics: BenchmarkMetrics
    valid_requests: int | None = None  # None: not checked
    flagged_share: float | None = None  # flagged / successful requests

    def to_dict(self) -> dict[str, Any]:
        return {
            "point_id": self.point_id,
            **self.scenario,
            **self.metrics.to_dict(),
            "valid_requests": self.valid_requests,
            "flagged_share": self.flagged_share,
        }


@dataclass(frozen=True)
class TraceSummary:
    """A trace's metrics: windows as one (durations summed) and per point."""

    trace_id: str
    kind: str
    metrics: BenchmarkMetrics
    points: list[PointMetrics]
    valid_requests: int | None = None  # None: not checked (streamed)
    flagged_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """``rackbook summarize --json``."""
        return {
            "trace_id": self.trace_id,
            "kind": self.kind,
            **self.metrics.to_dict(),
            "valid_requests": self.valid_requests,
            "flagged_share": self.flagged_share,
            "points": [p.to_dict() for p in self.points],
        }


class _Summary:
    """A trace's metrics accumulated over chunks; point index ``len(points)`` collects requests of
    unknown points."""

    def __init__(
        self,
        points: pd.DataFrame,
        percentiles: tuple[float, ...],
        exact_itl: bool = True,
        requests: int = 0,
        gaps: int = 0,
    ) -> None:
        """``requests``, ``gaps``: rows to come, held in one array allocated once."""
        self.points, self.percentiles = points, percentiles
        self.np = len(points)
        P = self.np + 1
        self.completed = np.zeros(P, np.int64)
        self.failed = np.zeros(P, np.int64)
        self.tokens_in = np.zeros(P, np.int64)
        self.tokens_out = np.zeros(P, np.int64)
        self.gaps = gaps if exact_itl else 0
        self.block = np.empty(max(3 * requests, self.gaps))
        r = requests
        self.pools = {
            "ttft": LatencyPool(P, room=self.block[:r]),
            "tpot": LatencyPool(P, room=self.block[2 * r : 3 * r]),
            "itl": LatencyPool(P, exact=exact_itl, room=np.empty(0)),
            "e2el": LatencyPool(P, room=self.block[r : 2 * r]),
        }
        self.done: dict[str, tuple[dict[str, float], list[dict[str, float]]]] = {}

    def requests_done(self) -> None:
        """TTFT, TPOT, E2EL statistics now; their room goes to gaps."""
        for m in ("ttft", "tpot", "e2el"):
            self.done[m] = self.pools[m].stats(m, self.percentiles, self.np)
        if self.pools["itl"].exact and not self.pools["itl"].size:
            self.pools["itl"].values = self.block[: self.gaps]
        self.block = np.empty(0)

    def add_requests(
        self,
        codes: np.ndarray,
        ok: np.ndarray,
        ttft: np.ndarray,
        e2el: np.ndarray,
        in_tok: np.ndarray,
        out_tok: np.ndarray,
    ) -> None:
        """One chunk of request rows (``codes``: point indices) into the pools."""
        P = self.np + 1
        every = bool(ok.all())  # the usual case: no selection
        oc = codes if every else codes[ok]
        g = point_groups(oc, P)
        self.completed += g.counts
        if not every:
            self.failed += np.bincount(codes[~ok], minlength=P)
        i, o = (in_tok, out_tok) if every else (in_tok[ok], out_tok[ok])
        self.tokens_in += sum_by(g, oc, i)
        self.tokens_out += sum_by(g, oc, o)
        for name, vals in (("ttft", ttft), ("e2el", e2el)):
            pool = self.pools[name]
            room = pool.reserve(oc.size)
            if every:
                room[:] = vals
            else:
                np.compress(ok, vals, out=room)
            pool.commit(oc, g)
        pool = self.pools["tpot"]
        m = o > 1
        if bool(m.all()):  # (e2el - ttft) / (output_tokens - 1), as vLLM
            room = pool.reserve(oc.size)
            t = tail(self.pools["ttft"], oc.size)
            np.subtract(tail(self.pools["e2el"], oc.size), t, out=room)
            np.divide(room, o - 1, out=room)
            pool.commit(oc, g)
        else:
            t, e = tail(self.pools["ttft"], oc.size), tail(self.pools["e2el"], oc.size)
            pool.add(oc[m], tpot_s(t, e, o))

    def add_itl(self, codes: np.ndarray, itl_s: np.ndarray, keep: np.ndarray | None = None) -> None:
        """Gaps (s) of successful requests with their point indices (of those ``keep`` selects)."""
        pool = self.pools["itl"]
        if keep is None or not pool.exact:
            pool.add(codes, itl_s if keep is None else itl_s[keep])
        else:
            np.compress(keep, itl_s, out=pool.reserve(codes.size))
            pool.commit(codes)

    def result(self, trace_id: str, kind: str) -> TraceSummary:
        n = self.np  # requests_done() was called: the pools of request metrics are spent
        stats = {"itl": self.pools["itl"].stats("itl", self.percentiles, n), **self.done}
        counts = (self.completed, self.failed, self.tokens_in, self.tokens_out)

        def window(
            duration: float, sel: Any, by_metric: dict[str, dict[str, float]]
        ) -> BenchmarkMetrics:
            n = [int(c[sel].sum()) for c in counts]
            return window_metrics(duration, n[0], n[1], n[2], n[3], by_metric)

        durations = self.points["duration_s"].to_numpy(dtype=np.float64)
        total = window(float(durations.sum()), slice(0, None), {m: s[0] for m, s in stats.items()})
        points = []
        for i, (_, p) in enumerate(self.points.iterrows()):
            m = window(float(p["duration_s"]), i, {k: s[1][i] for k, s in stats.items()})
            keys = {k: (None if pd.isna(p[k]) else p[k]) for k in SCENARIO_KEYS if k in p}
            keys = {k: (int(v) if isinstance(v, (np.integer,)) else v) for k, v in keys.items()}
            points.append(PointMetrics(str(p["point_id"]), keys, m))
        return TraceSummary(trace_id, kind, total, points)


def _point_index(point_ids: Any, points: pd.DataFrame) -> np.ndarray:
    """Index of each id in ``points`` (first match), ``len(points)`` when absent."""
    idx = pd.Index(points["point_id"].astype(str))
    if not idx.is_unique:
        idx = idx.drop_duplicates()
    codes = idx.get_indexer(pd.Index(point_ids).astype(str))
    codes[codes < 0] = len(points)
    return codes.astype(np.int32)


def _stream_itl(acc: _Summary, path: Path, row_code: np.ndarray, chunk_rows: int) -> None:
    """Feed ``path``/itl.parquet to ``acc``; ``row_code``: each request's point index, -1 failed."""
    n_req = len(row_code)
    with contextlib.closing(  # type: ignore[type-var]  # iter_table: a generator
        traces.iter_table(path, "itl", ["request_row", "itl_s"], chunk_rows)
    ) as chunks:  # on error: its thread stops
        for off, c in chunks:
            rr, v = c["request_row"], c["itl_s"]
            if rr.size and (rr.min() < 0 or rr.max() >= n_req):
                raise InputError(path, "itl.request_row", "refers to a request row that is absent")
            traces.check_values(v, path, "itl_s", traces.RowNames("itl"), offset=off)
            _add_gaps(acc, row_code, rr, v)


def _add_gaps(acc: _Summary, row_code: np.ndarray, rows: np.ndarray, gaps_s: np.ndarray) -> None:
    code = row_code[rows]
    keep = code >= 0
    if keep.all():
        acc.add_itl(code, gaps_s)
    else:
        acc.add_itl(code[keep], gaps_s, keep)


def summarize(trace: traces.Trace, percentiles: tuple[float, ...] = PERCENTILES) -> TraceSummary:
    """Metrics of a whole trace (windows as one, durations summed) and per point; gaps of a trace
    read with ``itl=False`` are streamed from ``path``."""
    req = trace.requests
    path = None if trace.itl_loaded else trace.path  # gaps to stream from there
    n_itl = traces.table_rows(path, "itl") if path else len(trace.itl)
    exact_itl = not path or n_itl <= EXACT_ITL_MAX
    acc = _Summary(trace.points, percentiles, exact_itl, requests=len(req), gaps=n_itl)
    codes = _point_index(req["point_id"], trace.points)
    ok = req["success"].to_numpy(dtype=bool)
    acc.add_requests(
        codes,
        ok,
        req["ttft_s"].to_numpy(dtype=np.float64),
        req["e2el_s"].to_numpy(dtype=np.float64),
        req["prompt_tokens"].to_numpy(dtype=np.int64),
        req["output_tokens"].to_numpy(dtype=np.int64),
    )
    row_code = np.where(ok, codes, -1).astype(np.int32)
    acc.requests_done()
    if path:
        _stream_itl(acc, Path(path), row_code, CHUNK_ROWS)
    elif not trace.itl.empty:
        gaps = trace.itl["itl_s"].to_numpy(dtype=np.float64)
        _add_gaps(acc, row_code, trace.itl["request_row"].to_numpy(), gaps)
    return with_validity(acc.result(trace.trace_id, trace.kind), trace)


def with_validity(summary: TraceSummary, trace: traces.Trace) -> TraceSummary:
    """``summary`` with ``trace``'s valid counts and flagged shares (vLLM's figures kept)."""
    from rackbook.core import validity

    pv = validity.point_validity(trace).set_index("point_id")
    points = []
    for p in summary.points:
        if p.point_id in pv.index:
            r = pv.loc[p.point_id]
            p = replace(p, valid_requests=int(r["valid"]), flagged_share=float(r["flagged_share"]))
        points.append(p)
    succ = int(pv["successful"].sum()) if len(pv) else 0
    flagged = int(pv["flagged"].sum()) if len(pv) else 0
    return replace(
        summary,
        points=points,
        valid_requests=int(pv["valid"].sum()) if len(pv) else 0,
        flagged_share=flagged / succ if succ else 0.0,
    )


def summarize_path(
    path: str | Path,
    percentiles: tuple[float, ...] = PERCENTILES,
    *,
    stream: bool | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> TraceSummary:
    """:func:`summarize` of the trace folder ``path``; ``stream`` forces or forbids streaming
    (default: past :data:`FULL_READ_MAX_REQUESTS` requests or :data:`EXACT_ITL_MAX` gaps)."""
    path = Path(path)
    run = traces.read_run(path)
    n_req, n_itl = traces.check_row_counts(path)  # before any table is loaded
    if stream is None:
        stream = n_req > FULL_READ_MAX_REQUESTS or n_itl > EXACT_ITL_MAX
    if not stream:
        return summarize(traces.read_trace(path), percentiles)
    pts = traces.conform(traces.read_table(path, "points"), "points", path)
    traces.check_points(pts, path)
    acc = _Summary(pts, percentiles, n_itl <= EXACT_ITL_MAX, requests=n_req, gaps=n_itl)
    pid_index = {p: i for i, p in enumerate(pts["point_id"].tolist())}
    row_code = np.empty(n_req, np.min_scalar_type(-(len(pts) + 1)))  # point index, -1: failed
    with contextlib.closing(  # type: ignore[type-var]  # iter_table: a generator
        traces.iter_table(path, "requests", _REQUEST_COLUMNS, chunk_rows)
    ) as chunks:  # on error: its thread stops
        for off, c in chunks:
            codes_in_dict, values = c["point_id"]
            lut = np.array([pid_index.get(v, -1) for v in values], dtype=row_code.dtype)
            if (lut < 0).any():
                unknown = sorted(v for v, i in zip(values, lut, strict=True) if i < 0)
                raise InputError(
                    path, "requests.point_id", f"point {unknown[0]!r} is not in points.parquet"
                )
            codes = lut[codes_in_dict] if lut.size else np.zeros(0, np.int32)
            ok = c["success"].astype(bool, copy=False)
            traces.check_request_rows(c, ok, path, offset=off)
            acc.add_requests(
                codes, ok, c["ttft_s"], c["e2el_s"], c["prompt_tokens"], c["output_tokens"]
            )
            row_code[off : off + len(ok)] = np.where(ok, codes, -1)
    acc.requests_done()
    _stream_itl(acc, path, row_code, chunk_rows)
    del row_code
    res = acc.result(str(run.get("trace_id", "")), str(run.get("kind", "")))
    if res.metrics.completed:  # one value, the median itself: the check validate makes
        median_s = np.array([res.metrics.latency["median_e2el_ms"] / 1000])
        traces.check_latency_unit(median_s, path, "requests.e2el_s")
    return res


def format_summary(summary: TraceSummary) -> str:
    """Human-readable table of a summary, in vLLM's wording."""
    s = summary.to_dict()
    n = len(s["points"])
    lines = [f"trace {s['trace_id']} ({s['kind']}), {n} point{'' if n == 1 else 's'}"]
    rows = [
        ("Successful requests", "completed", "{:d}"),
        ("Failed requests", "failed", "{:d}"),
        ("Benchmark duration (s)", "duration", "{:.2f}"),
        ("Total input tokens", "total_input_tokens", "{:d}"),
        ("Total generated tokens", "total_output_tokens", "{:d}"),
        ("Request throughput (req/s)", "request_throughput", "{:.2f}"),
        ("Output token throughput (tok/s)", "output_throughput", "{:.2f}"),
        ("Total token throughput (tok/s)", "total_token_throughput", "{:.2f}"),
    ]
    for m in LATENCY_METRICS:
        rows += [
            (f"Mean {m.upper()} (ms)", f"mean_{m}_ms", "{:.2f}"),
            (f"P99 {m.upper()} (ms)", f"p99_{m}_ms", "{:.2f}"),
        ]
    lines += [f"  {label:<36} {fmt.format(s[key])}" for label, key, fmt in rows]
    if s["valid_requests"] is None:
        lines.append(f"  {'Valid requests':<36} not checked (trace streamed)")
    else:
        lines.append(f"  {'Valid requests':<36} {s['valid_requests']:d}")
        lines.append(f"  {'Flagged share':<36} {s['flagged_share']:.1%}")
        for p in s["points"]:
            if p["flagged_share"]:
                lines.append(
                    f"    point {p['point_id']}: {p['valid_requests']} valid, "
                    f"{p['flagged_share']:.1%} flagged"
                )
    return "\n".join(lines)
