"""A trace's vLLM serving metrics (:mod:`rackbook.core.metrics`), whole and per point, with valid
counts and flagged shares (None when streamed). A large folder is streamed a chunk at a time,
checked as ``traces.validate`` does; ITL past :data:`EXACT_ITL_MAX` gaps from a histogram. A
published trace: its points by hardware and engine, tokens/s per GPU as published."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import traces, validity
from rackbook.core.metrics import (
    LATENCY_METRICS,
    PERCENTILES,
    BenchmarkMetrics,
    grouped_stats,
    named_stats,
)
from rackbook.core.units import plural
from rackbook.errors import InputError

SCENARIO_KEYS = ("engine", "config", "batch_size", "concurrency", "context_tokens", "num_gpus")

#: A trace folder with more requests than this is summarised by streaming.
FULL_READ_MAX_REQUESTS = 250_000
#: ITL tables with more rows (gaps) than this are summarised by moments and a histogram.
EXACT_ITL_MAX = 40_000_000
#: Rows per streamed chunk.
CHUNK_ROWS = 1 << 20
#: Histogram bin 0 is [0, HIST_LO_S) s, then bins growing by HIST_RATIO, the last open above
#: HIST_HI_S s: its order statistics are within 0.05 % from 1 us to 1e5 s, 0.5 us below.
HIST_LO_S, HIST_HI_S, HIST_RATIO = 1e-6, 1e5, 1.001
HIST_BINS = 2 + math.ceil(math.log(HIST_HI_S / HIST_LO_S) / math.log(HIST_RATIO))
#: Chunks of (request rows, gaps in s).
_Gaps = Iterable[tuple[np.ndarray, np.ndarray]]

#: Request columns a summary reads (beside ``point_id``), as numpy types.
_REQUEST_COLUMNS = {
    "success": np.bool_,
    **{c: np.int64 if t else np.float64 for c, t in traces.REQUEST_VALUES.items()},
}


@dataclass(frozen=True)
class PointMetrics:
    """One sweep point: id, scenario keys and its window's :class:`BenchmarkMetrics`."""

    point_id: str
    scenario: dict[str, Any]
    metrics: BenchmarkMetrics
    valid_requests: int | None = None  # None: not checked
    flagged_share: float | None = None  # flagged / successful requests

    def to_dict(self) -> dict[str, Any]:
        head = {"point_id": self.point_id, **self.scenario} | self.metrics.to_dict()
        return head | {"valid_requests": self.valid_requests, "flagged_share": self.flagged_share}


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
        head = {"trace_id": self.trace_id, "kind": self.kind} | self.metrics.to_dict()
        valid = {"valid_requests": self.valid_requests, "flagged_share": self.flagged_share}
        return head | valid | {"points": [p.to_dict() for p in self.points]}


class GapHistogram:
    """Gaps (s) per point as count, mean, squared deviations, min, max and a log histogram."""

    def __init__(self, npoints: int) -> None:
        self.n, self.mean, self.m2 = np.zeros((3, npoints))
        self.lo, self.hi = np.full(npoints, np.inf), np.full(npoints, -np.inf)
        self.hist = np.zeros((npoints, HIST_BINS), np.int64)

    def add(self, codes: np.ndarray, vals: np.ndarray) -> None:
        """Gaps ``vals`` (s) of points ``codes``; moments merged as Chan et al."""
        P = self.n.size
        nb = np.bincount(codes, minlength=P)
        mb = np.bincount(codes, weights=vals, minlength=P) / np.maximum(nb, 1)
        n = self.n + nb
        frac, delta = nb / np.maximum(n, 1), mb - self.mean
        m2b = np.bincount(codes, weights=(vals - mb[codes]) ** 2, minlength=P)
        self.m2 += m2b + delta**2 * self.n * frac
        self.mean += delta * frac
        self.n = n
        if codes.size and codes[0] == codes[-1] and (codes == codes[0]).all():  # one point
            c = codes[0]
            self.lo[c], self.hi[c] = min(self.lo[c], vals.min()), max(self.hi[c], vals.max())
        else:
            np.minimum.at(self.lo, codes, vals)
            np.maximum.at(self.hi, codes, vals)
        with np.errstate(divide="ignore"):
            b = np.log(np.maximum(vals, HIST_LO_S / 2) / HIST_LO_S) / math.log(HIST_RATIO)
        b = np.clip(np.floor(b) + 1, 0, HIST_BINS - 1).astype(np.int64)
        flat = np.bincount(codes.astype(np.int64) * HIST_BINS + b, minlength=self.hist.size)
        self.hist += flat.reshape(self.hist.shape)

    def stats(
        self, percentiles: tuple[float, ...], npoints: int
    ) -> tuple[dict[str, float], list[dict[str, float]]]:
        """(statistics of all gaps, of each of the first ``npoints`` points), vLLM's keys."""
        n = self.n.sum()
        mean = float((self.n * self.mean).sum() / max(n, 1))
        m2 = self.m2.sum() + (self.n * (self.mean - mean) ** 2).sum()
        rows = [(n, mean, m2, self.hist.sum(axis=0), self.lo.min(), self.hi.max())]
        rows += zip(self.n, self.mean, self.m2, self.hist, self.lo, self.hi, strict=True)
        total, *per = [_hist_stats(row, percentiles) for row in rows[: npoints + 1]]
        return total, per


def _hist_stats(row: tuple[Any, ...], percentiles: tuple[float, ...]) -> dict[str, float]:
    n, mean, m2, hist, lo, hi = row
    if not n:
        return named_stats("itl", (0.0, 0.0, 0.0, [0.0] * len(percentiles)), percentiles)
    cum, n = np.cumsum(hist), int(n)

    def order_stat(k: int) -> float:  # its bin's centre, clamped to min and max
        b = int(np.searchsorted(cum, k, side="right"))
        est = HIST_LO_S * HIST_RATIO ** (b - 0.5) if 0 < b < HIST_BINS - 1 else HIST_LO_S / 2
        return float(min(max(est, lo), hi)) if b < HIST_BINS - 1 else float(hi)

    def pct(q: float) -> float:  # np.percentile's linear method on the estimates
        h = (n - 1) * q / 100
        k = math.floor(h)
        a, b = order_stat(k), order_stat(min(k + 1, n - 1))
        return a + (b - a) * (h - k)

    stats = (mean, math.sqrt(max(m2, 0.0) / n), pct(50.0), [pct(p) for p in percentiles])
    return named_stats("itl", stats, percentiles)


def _file_gaps(path: Path, n_req: int, chunk_rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(request rows, gaps in s) of ``path``/itl.parquet a chunk at a time, checked."""
    with contextlib.closing(  # type: ignore[type-var]  # iter_table: a generator
        traces.iter_table(path, "itl", ["request_row", "itl_s"], chunk_rows)
    ) as chunks:  # on error: its thread stops
        for off, c in chunks:
            rr, v = c["request_row"], c["itl_s"]
            if rr.size and (rr.min() < 0 or rr.max() >= n_req):
                raise InputError(path, "itl.request_row", "refers to a request row that is absent")
            traces.check_values(v, path, "itl_s", traces.RowNames("itl"), offset=off)
            yield rr, v


class _Requests:
    """Request chunks (``codes``: each row's point index) as per-point counts and token sums, the
    successful rows' TTFT, E2EL and TPOT (s) with their points, and each row's point (-1 failed)."""

    def __init__(self, n: int, npoints: int, gaps: int) -> None:
        """``gaps``: room for that many gaps (s) too, taken once the request metrics are done."""
        self.P, dtype = npoints, np.min_scalar_type(-(npoints + 1))
        gaps = gaps if gaps <= EXACT_ITL_MAX else 0  # past it: a histogram
        self.counts = np.zeros((4, npoints + 1), np.int64)  # completed, failed, tokens in, out
        self.block, self.code_block = np.empty(max(3 * n, gaps)), np.empty(max(2 * n, gaps), dtype)
        self.values = {
            m: self.block[i * n : i * n + n] for i, m in enumerate(("ttft", "e2el", "tpot"))
        }
        self.codes = {m: self.code_block[i * n : i * n + n] for i, m in enumerate(("ttft", "tpot"))}
        self.size = {"ttft": 0, "tpot": 0}
        self.row_code = np.empty(n, dtype)

    def add(self, off: int, c: dict[str, np.ndarray]) -> None:
        """Rows ``off`` onwards, a column at a time (a chunk's temporaries one at a time)."""
        ok, codes, P = c["success"], c["codes"].astype(self.row_code.dtype), self.P + 1
        every = bool(ok.all())

        def pick(column: str) -> np.ndarray:
            return c[column] if every else c[column][ok]

        oc, o, k = codes if every else codes[ok], pick("output_tokens"), self.size["ttft"]
        self.counts[:2] += [np.bincount(oc, minlength=P), np.bincount(codes[~ok], minlength=P)]
        np.add.at(self.counts[2], oc, pick("prompt_tokens"))
        np.add.at(self.counts[3], oc, o)
        t, e = self.values["ttft"][k : k + oc.size], self.values["e2el"][k : k + oc.size]
        t[:], e[:], self.codes["ttft"][k : k + oc.size] = pick("ttft_s"), pick("e2el_s"), oc
        self.size["ttft"] = k + oc.size
        m = o > 1
        if not m.all():
            oc, t, e, o = oc[m], t[m], e[m], o[m]
        k = self.size["tpot"]
        self.codes["tpot"][k : k + oc.size] = oc
        np.divide(e - t, o - 1, out=self.values["tpot"][k : k + oc.size])  # as vLLM
        self.size["tpot"] = k + oc.size
        self.row_code[off : off + ok.size] = np.where(ok, codes, -1)

    def stats(self, gaps: _Gaps, n_gaps: int) -> dict[str, Any]:
        """Statistics of TTFT, TPOT, E2EL, then of ITL (chunks of request rows, gaps in s;
        ``n_gaps`` rows) in the spent values' room, exact up to :data:`EXACT_ITL_MAX` gaps."""
        k, kt = self.size["ttft"], self.size["tpot"]
        pairs = {"ttft": (k, "ttft"), "tpot": (kt, "tpot"), "e2el": (k, "ttft")}
        out = {}
        for m, (n, c) in pairs.items():
            out[m] = grouped_stats(m, self.values[m][:n], self.codes[c][:n], self.P, PERCENTILES)
        hist = GapHistogram(self.P + 1) if n_gaps > EXACT_ITL_MAX else None
        values, codes, k = self.block, self.code_block, 0
        for rows, v in gaps:
            code = self.row_code[rows]
            keep = code >= 0
            if not keep.all():
                code, v = code[keep], v[keep]
            if hist is not None:
                hist.add(code, v)
                continue
            values[k : k + v.size], codes[k : k + v.size] = v, code
            k += v.size
        if hist is not None:
            return out | {"itl": hist.stats(PERCENTILES, self.P)}
        return out | {"itl": grouped_stats("itl", values[:k], codes[:k], self.P, PERCENTILES)}


def _summarize(
    points: pd.DataFrame, req: _Requests, gaps: _Gaps, n_gaps: int, run: tuple[str, str]
) -> TraceSummary:
    """The summary of requests ``req`` and gap chunks; ``run``: the trace's id and kind."""
    counts, stats = req.counts, req.stats(gaps, n_gaps)

    def window(duration: float, sel: Any, i: int | None) -> BenchmarkMetrics:
        n = [int(c[sel].sum()) for c in counts]
        by_metric = {k: s[0] if i is None else s[1][i] for k, s in stats.items()}
        latency = {k: v for m in LATENCY_METRICS for k, v in by_metric[m].items()}
        return BenchmarkMetrics(duration, n[0], n[1], n[2], n[3], latency)

    total = window(float(points["duration_s"].sum()), slice(0, None), None)
    rows = []
    for i, (_, p) in enumerate(points.iterrows()):
        keys = {k: (None if pd.isna(p[k]) else p[k]) for k in SCENARIO_KEYS if k in p}
        keys = {k: (int(v) if isinstance(v, np.integer) else v) for k, v in keys.items()}
        rows.append(PointMetrics(str(p["point_id"]), keys, window(float(p["duration_s"]), i, i)))
    return TraceSummary(run[0], run[1], total, rows)


def summarize(trace: traces.Trace) -> TraceSummary:
    """Metrics of a whole trace, gaps loaded (windows as one, durations summed) and per point,
    with its valid counts and flagged shares."""
    r, gaps, pts = trace.requests, trace.itl, trace.points
    req = _Requests(len(r), len(pts), len(gaps))
    idx = pd.Index(pts["point_id"].astype(str)).drop_duplicates()
    codes = idx.get_indexer(pd.Index(r["point_id"]).astype(str))  # first match; absent: -1
    codes[codes < 0] = len(pts)
    req.add(0, {**{c: r[c].to_numpy(dtype=t) for c, t in _REQUEST_COLUMNS.items()}, "codes": codes})
    chunk = (gaps["request_row"].to_numpy(), gaps["itl_s"].to_numpy(dtype=np.float64))
    summary = _summarize(pts, req, [chunk], len(gaps), (trace.trace_id, trace.kind))
    pv = validity.point_validity(trace).set_index("point_id")

    def checked(p: PointMetrics) -> PointMetrics:
        r = pv.loc[p.point_id]
        return replace(p, valid_requests=int(r["valid"]), flagged_share=float(r["flagged_share"]))

    points = [checked(p) for p in summary.points]  # point_validity: a row per point
    succ, flagged, valid = (int(pv[k].sum()) for k in ("successful", "flagged", "valid"))
    share = flagged / succ if succ else 0.0
    return replace(summary, points=points, valid_requests=valid, flagged_share=share)


def summarize_path(
    path: str | Path, *, stream: bool | None = None, chunk_rows: int = CHUNK_ROWS
) -> TraceSummary:
    """:func:`summarize` of the trace folder ``path``; ``stream`` forces or forbids streaming
    (default: past :data:`FULL_READ_MAX_REQUESTS` requests or :data:`EXACT_ITL_MAX` gaps)."""
    path = Path(path)
    run = traces.read_run(path)
    n_req, n_itl = traces.check_row_counts(path)  # before any table is loaded
    if stream is None:
        stream = n_req > FULL_READ_MAX_REQUESTS or n_itl > EXACT_ITL_MAX
    if not stream:
        return summarize(traces.read_trace(path))
    pts = traces.conform(traces.read_table(path, "points"), "points", path)
    traces.check_points(pts, path)
    pid_index = {p: i for i, p in enumerate(pts["point_id"].tolist())}
    req = _Requests(n_req, len(pts), n_itl)
    with contextlib.closing(  # type: ignore[type-var]  # iter_table: a generator
        traces.iter_table(path, "requests", ["point_id", *_REQUEST_COLUMNS], chunk_rows)
    ) as chunks:  # on error: its thread stops
        for off, c in chunks:
            in_dict, values = c.pop("point_id")
            lut = np.array([pid_index.get(v, -1) for v in values], dtype=np.int32)
            if (lut < 0).any():
                unknown = sorted(v for v, i in zip(values, lut, strict=True) if i < 0)
                problem = f"point {unknown[0]!r} is not in points.parquet"
                raise InputError(path, "requests.point_id", problem)
            c["codes"] = lut[in_dict] if lut.size else np.zeros(0, np.int32)
            traces.check_request_rows(c, c["success"], path, offset=off)
            req.add(off, c)
    ids = (str(run.get("trace_id", "")), str(run.get("kind", "")))
    res = _summarize(pts, req, _file_gaps(path, n_req, chunk_rows), n_itl, ids)
    if res.metrics.completed:  # one value, the median itself: the check validate makes
        median_s = np.array([res.metrics.latency["median_e2el_ms"] / 1000])
        traces.check_latency_unit(median_s, path, "requests.e2el_s")
    return res


def format_summary(summary: TraceSummary) -> str:
    """Human-readable table of a summary, in vLLM's wording."""
    s = summary.to_dict()
    lines = [f"trace {s['trace_id']} ({s['kind']}), {plural(len(s['points']), 'point')}"]
    rows = [
        ("Successful requests", "completed"),
        ("Failed requests", "failed"),
        ("Benchmark duration (s)", "duration"),
        ("Total input tokens", "total_input_tokens"),
        ("Total generated tokens", "total_output_tokens"),
        ("Request throughput (req/s)", "request_throughput"),
        ("Output token throughput (tok/s)", "output_throughput"),
        ("Total token throughput (tok/s)", "total_token_throughput"),
    ]
    for m in LATENCY_METRICS:
        rows += [(f"{st} {m.upper()} (ms)", f"{st.lower()}_{m}_ms") for st in ("Mean", "P99")]
    for label, key in rows:  # counts (int) whole, the rest to two decimals
        lines.append(f"  {label:<36} {s[key]:{'d' if isinstance(s[key], int) else '.2f'}}")
    if s["valid_requests"] is None:
        lines.append(f"  {'Valid requests':<36} not checked (trace streamed)")
    else:
        lines.append(f"  {'Valid requests':<36} {s['valid_requests']:d}")
        lines.append(f"  {'Flagged share':<36} {s['flagged_share']:.1%}")
        for p in (p for p in s["points"] if p["flagged_share"]):
            share = f"{p['flagged_share']:.1%}"
            lines.append(f"    point {p['point_id']}: {p['valid_requests']} valid, {share} flagged")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- published traces


def published_summary(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    """``rackbook summarize --json`` of a published trace: id, kind, point count and per (hardware,
    engine) the count and least/most tok/s per GPU (None where unpublished)."""
    pts = traces.read_table(path, "published_points")
    g = (
        pts.groupby(["hardware", "engine"], sort=True, dropna=False)["tok_s_per_gpu"]
        .agg(points="count", tok_s_per_gpu_min="min", tok_s_per_gpu_max="max")
        .reset_index()
    )
    g[["hardware", "engine"]] = g[["hardware", "engine"]].fillna("not stated").astype(str)
    head = {"trace_id": run.get("trace_id"), "kind": "published", "points": len(pts)}
    return head | {"groups": g.astype(object).where(g.notna(), None).to_dict("records")}


def format_published_summary(path: Path, doc: dict[str, Any]) -> str:
    """:func:`published_summary`'s ``doc`` as lines for a terminal."""
    lines = [
        f"{path}: published trace, {plural(doc['points'], 'published point')} (no requests: "
        "vLLM's request metrics do not apply; tokens/s per GPU as published)"
    ]
    for r in doc["groups"]:
        lo, hi = r["tok_s_per_gpu_min"], r["tok_s_per_gpu_max"]
        span = "n/a" if lo is None else f"{lo:,.0f} to {hi:,.0f}"
        lines.append(
            f"  {r['hardware']} / {r['engine']}: {plural(r['points'], 'point')}, {span} tok/s/GPU"
        )
    return "\n".join(lines)
