"""Serving metrics computed from trace rows, defined as ``vllm bench serve`` defines them.

Definitions (vLLM ``vllm/benchmarks/serve.py``, ``calculate_metrics``), over *successful*
requests of a measured window of length ``duration`` (seconds):

- ``completed`` / ``failed``: requests without / with an error.
- ``total_input_tokens``: sum of prompt tokens; ``total_output_tokens``: sum of output tokens.
- ``request_throughput`` = completed / duration (req/s);
  ``output_throughput`` = total_output_tokens / duration (tok/s);
  ``total_token_throughput`` = (total_input_tokens + total_output_tokens) / duration (tok/s).
- ``ttft_ms``: time to first token. ``e2el_ms``: end-to-end latency.
- ``tpot_ms``: per request (e2el - ttft) / (output_tokens - 1), requests with > 1 output token.
- ``itl_ms``: every gap between consecutive streamed chunks, pooled over requests.
- ``mean_``/``median_``/``std_`` (population, ``np.std``)/``pNN_`` (``np.percentile``, linear)
  of each, in milliseconds; an empty set gives 0, as in vLLM.

Validity (:mod:`rackbook.core.validity`): the figures above are vLLM's, over *all* successful
requests, so that they agree with vLLM's own result JSON. Beside them a summary gives
``valid_requests`` (successful requests that pass the validity checks: no burst delivery, no
chunk gaps far below the engine's step, client and server token counts agree) and
``flagged_share`` (flagged / successful), per point and overall; a streamed summary (below)
does not check them and gives None.

Size and method (measurements in ``benchmarks/README.md``):

- :func:`summarize` takes a trace in memory, :func:`summarize_path` a trace folder. A folder of
  at most :data:`FULL_READ_MAX_REQUESTS` requests and :data:`EXACT_ITL_MAX` gaps is read whole
  and fully validated (``summarize(read_trace(path))``). A larger one is streamed,
  :data:`CHUNK_ROWS` rows at a time, reading only the columns the metrics need (``point_id``
  dictionary-encoded; never ``request_id`` or ``error``); each chunk gets the checks
  :func:`rackbook.core.traces.validate` makes on those columns, with the same messages (missing or
  non-finite values, negative values, TTFT above E2EL, unknown point ids, gaps of absent
  requests, the milliseconds guard). Not checked when streaming: unique ``request_id``,
  ``cached_prompt_tokens``, and the optional extra tables.
- Counts, token sums and throughputs are exact. TTFT, TPOT and E2EL keep one float64 per
  successful request (8 bytes: 80 MB per metric for 10M requests), so their median and
  percentiles are always exact (the numbers ``np.median``/``np.percentile`` give): from one
  in-place partition when a trace holds at most 1Mi values of the metric, else from one
  counting and one gathering pass over the values where they lie, for every point and the
  whole trace at once (:mod:`rackbook.core.orderstats`: no joined copy). The values are
  written, in row order, into one array allocated up front from the Parquet footers' row
  counts (a third per metric; each point one segment of it while the points come one after
  another, else a small point index per value); their statistics are taken as soon as the
  requests end. Mean and std equal ``np.mean``/``np.std`` bit for bit up to 1Mi values;
  beyond, they are summed per 1Mi block (no temporary the size of the data) and the whole
  trace's are merged from the points' moments, so they may differ in the last bits (~1e-15
  relative). Memory therefore grows with the number of requests (25 bytes each).
- ITL is exact (all pooled gaps as float64) while the ITL table has at most
  :data:`EXACT_ITL_MAX` rows (320 MB): the gaps reuse the requests' array (grown when there
  are more than three gaps per request), so up to there memory grows with the gaps too.
  Parquet is decoded (and its columns checked) in a reading thread one chunk ahead of the
  accumulation, on the second core. Beyond that, keeping every gap would make memory grow with
  the trace (10M requests with 128 gaps each are 1.28 billion gaps, 10 GB), so the gaps are
  streamed per chunk: count, mean and std are exact up to floating-point rounding (per-chunk
  moments merged as Chan, Golub and LeVeque's pairwise update), and median and percentiles
  come from a per-point histogram whose bins grow by the ratio :data:`HIST_RATIO` (1.001) from
  :data:`HIST_LO_S` (1 us) to :data:`HIST_HI_S` (1e5 s), each order statistic taken as its
  bin's geometric centre and clamped to the observed min and max. Error bound: a reported ITL
  percentile is within 0.05 % (sqrt(1.001) - 1) of the exact one when the gaps it lies
  between are 1 us or more and at most 1e5 s, and within 0.5 us below 1 us (above 1e5 s the
  estimate is the observed maximum) - ten times inside the 0.5 % agreement with vLLM that the
  book asks for. The histogram costs 8 bytes x :data:`HIST_BINS` (25,344) bins per point;
  the gaps' memory is one chunk plus that, whatever the trace length.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import orderstats, traces
from rackbook.errors import InputError

PERCENTILES: tuple[float, ...] = (90.0, 99.0)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
SCENARIO_KEYS = ("engine", "config", "batch_size", "concurrency", "context_tokens", "num_gpus")

#: A trace folder with more requests than this is summarised by streaming (see module doc).
FULL_READ_MAX_REQUESTS = 250_000
#: ITL tables with more rows (gaps) than this are summarised by moments and a histogram.
EXACT_ITL_MAX = 40_000_000
#: Rows per streamed chunk.
CHUNK_ROWS = 1 << 20
#: ITL histogram: bin 0 is [0, HIST_LO_S) seconds, then bins growing by HIST_RATIO, the last
#: one open above HIST_HI_S seconds.
HIST_LO_S = 1e-6
HIST_HI_S = 1e5
HIST_RATIO = 1.001
_LOG_RATIO = math.log(HIST_RATIO)
HIST_BINS = 2 + math.ceil(math.log(HIST_HI_S / HIST_LO_S) / _LOG_RATIO)

_STD_BLOCK = 1 << 20
_REQUEST_COLUMNS = ["point_id", "success", "ttft_s", "e2el_s", "prompt_tokens", "output_tokens"]


@dataclass(frozen=True)
class BenchmarkMetrics:
    """vLLM's metrics of one measured window, named as vLLM's own ``BenchmarkMetrics``
    (``vllm/benchmarks/serve.py``): counts (requests, tokens), throughputs (per second of
    ``duration``, seconds) and, per latency metric, mean / median / std / percentiles in ms.
    :meth:`to_dict` gives the keys of vLLM's saved result JSON (``total_input_tokens``,
    ``p99_ttft_ms``, ...)."""

    duration: float
    completed: int
    failed: int
    total_input: int
    total_output: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    mean_ttft_ms: float
    median_ttft_ms: float
    std_ttft_ms: float
    percentiles_ttft_ms: tuple[tuple[float, float], ...]
    mean_tpot_ms: float
    median_tpot_ms: float
    std_tpot_ms: float
    percentiles_tpot_ms: tuple[tuple[float, float], ...]
    mean_itl_ms: float
    median_itl_ms: float
    std_itl_ms: float
    percentiles_itl_ms: tuple[tuple[float, float], ...]
    mean_e2el_ms: float
    median_e2el_ms: float
    std_e2el_ms: float
    percentiles_e2el_ms: tuple[tuple[float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        """The window under the key names of vLLM's result JSON."""
        out: dict[str, Any] = {
            "duration": self.duration,
            "completed": self.completed,
            "failed": self.failed,
            "total_input_tokens": self.total_input,
            "total_output_tokens": self.total_output,
            "request_throughput": self.request_throughput,
            "output_throughput": self.output_throughput,
            "total_token_throughput": self.total_token_throughput,
        }
        for m in LATENCY_METRICS:
            for stat in ("mean", "median", "std"):
                out[f"{stat}_{m}_ms"] = getattr(self, f"{stat}_{m}_ms")
            for p, v in getattr(self, f"percentiles_{m}_ms"):
                out[f"p{_pword(p)}_{m}_ms"] = v
        return out


@dataclass(frozen=True)
class PointMetrics:
    """One sweep point: its id, its scenario keys (engine, config, batch size, ...) and its
    window's :class:`BenchmarkMetrics`."""

    point_id: str
    scenario: dict[str, Any]
    metrics: BenchmarkMetrics
    #: successful requests that pass :mod:`rackbook.core.validity`'s checks (None: not checked)
    valid_requests: int | None = None
    #: flagged / successful requests (None: not checked)
    flagged_share: float | None = None

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
    """A trace's metrics: the measured windows taken as one (``metrics``; its duration is the
    sum of the points' durations) and one :class:`PointMetrics` per point."""

    trace_id: str
    kind: str
    metrics: BenchmarkMetrics
    points: list[PointMetrics]
    #: over all points: valid requests and flagged / successful (None: not checked, as when
    #: a large trace is streamed by :func:`summarize_path`)
    valid_requests: int | None = None
    flagged_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """``rackbook summarize --json``: vLLM's keys at the top level, plus ``valid_requests``
        and ``flagged_share`` (:mod:`rackbook.core.validity`) and ``points``."""
        return {
            "trace_id": self.trace_id,
            "kind": self.kind,
            **self.metrics.to_dict(),
            "valid_requests": self.valid_requests,
            "flagged_share": self.flagged_share,
            "points": [p.to_dict() for p in self.points],
        }


def _stats(name: str, values_s: np.ndarray, percentiles: tuple[float, ...]) -> dict[str, float]:
    v = values_s if values_s.size else np.zeros(1)
    out = {
        f"mean_{name}_ms": float(np.mean(v) * 1000),
        f"median_{name}_ms": float(np.median(v) * 1000),
        f"std_{name}_ms": float(np.std(v) * 1000),
    }
    for p in percentiles:
        out[f"p{_pword(p)}_{name}_ms"] = float(np.percentile(v, p) * 1000)
    return out


def _pword(p: float) -> str:
    return str(int(p)) if int(p) == p else str(p)


def _stats_owned(name: str, v: np.ndarray, percentiles: tuple[float, ...]) -> dict[str, float]:
    """:func:`_stats` on an array this module owns: the same numbers (bit for bit), computed
    with one in-place partition instead of two copies and two partitions."""
    n = v.size
    if not n:
        return _stats(name, v, percentiles)
    mean, std = _mean_std(v)  # before reordering
    kth = {0, n - 1, (n - 1) // 2, n // 2}
    for p in percentiles:
        h = math.floor((n - 1) * p / 100)
        kth |= {min(max(h, 0), n - 1), min(max(h + 1, 0), n - 1)}
    v.partition(sorted(kth))
    # np.median is the mean of the middle one or two order statistics
    out = {
        f"mean_{name}_ms": float(mean * 1000),
        f"median_{name}_ms": float(np.mean(v[(n - 1) // 2 : n // 2 + 1]) * 1000),
        f"std_{name}_ms": float(std * 1000),
    }
    if percentiles:  # numpy re-partitions the partitioned array: cheap
        pv = np.percentile(v, list(percentiles), overwrite_input=True)
        for p, x in zip(percentiles, pv, strict=True):
            out[f"p{_pword(p)}_{name}_ms"] = float(x * 1000)
    return out


def _mean_std(v: np.ndarray, block: int = _STD_BLOCK) -> tuple[np.float64, np.float64]:
    """``np.mean(v)`` and ``np.std(v)`` without a temporary the size of ``v``: the squared
    deviations are summed block by block. Bit-identical to numpy up to ``block`` values; beyond,
    the block sums are added in another order (relative difference ~1e-15)."""
    n = v.size
    mean = np.add.reduce(v) / n  # what np.mean computes
    if n <= block:
        d = v - mean
        np.multiply(d, d, out=d)
        return mean, np.sqrt(np.add.reduce(d) / n)
    buf = np.empty(block)
    acc = np.zeros((n + block - 1) // block)
    for j, lo in enumerate(range(0, n, block)):
        d = buf[: min(block, n - lo)]
        np.subtract(v[lo : lo + block], mean, out=d)
        np.multiply(d, d, out=d)
        acc[j] = np.add.reduce(d)
    return mean, np.sqrt(np.add.reduce(acc) / n)


def _hist_stats(
    name: str,
    n: int,
    mean: float,
    m2: float,
    hist: np.ndarray,
    lo: float,
    hi: float,
    percentiles: tuple[float, ...],
) -> dict[str, float]:
    """Statistics from streamed moments and a histogram (bound in the module docstring)."""
    if n == 0:
        return _stats(name, np.zeros(0), percentiles)
    cum = np.cumsum(hist)

    def order_stat(k: int) -> float:  # estimate of the k-th smallest value (0-based)
        b = int(np.searchsorted(cum, k, side="right"))
        if b == 0:
            est = HIST_LO_S / 2
        elif b >= HIST_BINS - 1:
            est = hi
        else:
            est = HIST_LO_S * HIST_RATIO ** (b - 0.5)
        return min(max(est, lo), hi)

    def pct(q: float) -> float:  # np.percentile's linear method on the estimates
        h = (n - 1) * q / 100
        k = math.floor(h)
        a, b = order_stat(k), order_stat(min(k + 1, n - 1))
        return a + (b - a) * (h - k)

    out = {
        f"mean_{name}_ms": mean * 1000,
        f"median_{name}_ms": pct(50.0) * 1000,
        f"std_{name}_ms": math.sqrt(max(m2, 0.0) / n) * 1000,
    }
    for p in percentiles:
        out[f"p{_pword(p)}_{name}_ms"] = pct(p) * 1000
    return out


class _Pool:
    """One latency metric's values (seconds) over a trace, each tagged with its point's index.

    Exact: the values are kept in one array in row order (``capacity`` values allocated up
    front, grown by doubling when more come), with their point indices: none are stored while
    the points come one after another (the usual trace: each point's values are then one
    segment of the array); from the first chunk that breaks that order, one small integer per
    value. Otherwise per point count, mean, M2 (sum of squared deviations), min, max and a log
    histogram are kept, merged chunk by chunk.
    """

    def __init__(
        self, npoints: int, exact: bool = True, capacity: int = 0, room: np.ndarray | None = None
    ) -> None:
        """``room``: an array to fill first (default: ``capacity`` new values)."""
        self.npoints, self.exact = npoints, exact
        if exact:
            self.values = np.empty(capacity) if room is None else room
            self.size = 0
            self.counts = np.zeros(npoints, np.int64)
            self.last = 0  # point index of the last value stored while in point order
            self.codes: np.ndarray | None = None  # point index per value, once out of order
            self.code_dtype = np.min_scalar_type(-max(npoints, 1))
        else:
            self.n = np.zeros(npoints, np.int64)
            self.mean = np.zeros(npoints)
            self.m2 = np.zeros(npoints)
            self.lo = np.full(npoints, np.inf)
            self.hi = np.full(npoints, -np.inf)
            self.hist = np.zeros(npoints * HIST_BINS, np.int64)

    def reserve(self, k: int) -> np.ndarray:
        """Room for ``k`` more exact values: write them there, then :meth:`commit`."""
        need = self.size + k
        if need > self.values.size:
            grown = np.empty(max(need, 2 * self.values.size))
            grown[: self.size] = self.values[: self.size]
            self.values = grown
            if self.codes is not None:
                codes = np.empty(grown.size, self.code_dtype)
                codes[: self.size] = self.codes[: self.size]
                self.codes = codes
        return self.values[self.size : need]

    def commit(self, codes: np.ndarray, groups: _Groups | None = None) -> None:
        """The values written into :meth:`reserve`'s room belong to points ``codes``
        (``groups``: :func:`_groups` of ``codes``, when the caller has it)."""
        k = codes.size
        if not k:
            return
        g = _groups(codes, self.npoints) if groups is None else groups
        in_order = self.codes is None and g.ordered and int(codes[0]) >= self.last
        if self.codes is None and not in_order:  # from here on, one point index per value
            self.codes = np.empty(self.values.size, self.code_dtype)
            self.codes[: self.size] = np.repeat(
                np.arange(self.npoints, dtype=self.code_dtype), self.counts
            )
        if self.codes is not None:
            self.codes[self.size : self.size + k] = codes
        else:
            self.last = int(codes[-1])
        self.counts += g.counts
        self.size += k

    def add(self, codes: np.ndarray, vals: np.ndarray) -> None:
        if not vals.size:
            return
        if self.exact:
            self.reserve(vals.size)[:] = vals
            self.commit(codes)
            return
        single = codes[0] == codes[-1] and bool((codes == codes[0]).all())
        P = self.npoints
        nb = np.bincount(codes, minlength=P)
        mb = np.bincount(codes, weights=vals, minlength=P) / np.maximum(nb, 1)
        m2b = np.bincount(codes, weights=(vals - mb[codes]) ** 2, minlength=P)
        n = self.n + nb
        frac = nb / np.maximum(n, 1)
        delta = mb - self.mean
        self.m2 += m2b + delta**2 * self.n * frac
        self.mean += delta * frac
        self.n = n
        if single:
            c = int(codes[0])
            self.lo[c] = min(self.lo[c], float(vals.min()))
            self.hi[c] = max(self.hi[c], float(vals.max()))
        else:
            np.minimum.at(self.lo, codes, vals)
            np.maximum.at(self.hi, codes, vals)
        with np.errstate(divide="ignore"):
            b = np.floor(np.log(np.maximum(vals, HIST_LO_S / 2) / HIST_LO_S) / _LOG_RATIO)
        b = np.clip(b + 1, 0, HIST_BINS - 1).astype(np.int64)
        self.hist += np.bincount(codes.astype(np.int64) * HIST_BINS + b, minlength=P * HIST_BINS)

    def stats(
        self, name: str, percentiles: tuple[float, ...], points: int
    ) -> tuple[dict[str, float], list[dict[str, float]]]:
        """(statistics of the whole trace, statistics of each of the first ``points`` points)."""
        if not self.exact:
            P = self.npoints
            hist = self.hist.reshape(P, HIST_BINS)
            n = int(self.n.sum())
            mean = float((self.n * self.mean).sum() / n) if n else 0.0
            m2 = float(self.m2.sum() + (self.n * (self.mean - mean) ** 2).sum())
            total = _hist_stats(
                name, n, mean, m2, hist.sum(axis=0), self.lo.min(), self.hi.max(), percentiles
            )
            per = [
                _hist_stats(
                    name,
                    int(self.n[i]),
                    float(self.mean[i]),
                    float(self.m2[i]),
                    hist[i],
                    float(self.lo[i]),
                    float(self.hi[i]),
                    percentiles,
                )
                for i in range(points)
            ]
            return total, per
        return self._exact_stats(name, percentiles, points)

    def _window(self, i: int) -> np.ndarray:
        """Point ``i``'s values in row order: a view while the points came in order, else a
        copy."""
        v = self.values[: self.size]
        if self.codes is None:
            end = int(self.counts[: i + 1].sum())
            return v[end - int(self.counts[i]) : end]
        return v[self.codes[: self.size] == i] if self.counts[i] else v[:0]

    def _exact_stats(
        self, name: str, percentiles: tuple[float, ...], points: int
    ) -> tuple[dict[str, float], list[dict[str, float]]]:
        """:meth:`stats` of the exact values. Up to :data:`_STD_BLOCK` values, one in-place
        partition per window (numpy's numbers bit for bit); beyond, each window's order
        statistics come from one counting and one gathering pass over it
        (:mod:`rackbook.core.orderstats`: the numbers numpy gives), for every point and the
        whole trace in the same two passes while the points came in order. Each point's mean
        and std are taken over its values in row order; the whole trace's over all values in
        row order up to :data:`_STD_BLOCK` values, else merged from the points' moments."""
        v = self.values[: self.size]
        used = [i for i, c in enumerate(self.counts) if c]
        empty = _stats(name, np.zeros(0), percentiles)
        one = len(used) == 1 and used[0] < points  # one point: the total is that point
        res = None
        if v.size > _STD_BLOCK and self.codes is None and not one:
            res = orderstats.grouped_stats(
                [[self._window(i)] for i in range(self.npoints)], percentiles
            )
        elif v.size > _STD_BLOCK:  # one point, or the points interleaved: a window at a time
            got: list[orderstats.Stats | None] = []
            for i in range(self.npoints):
                got.append(orderstats.stats([self._window(i)], percentiles) if i in used else None)
                if i in used and got[-1] is None:
                    break
            else:
                whole = got[used[0]] if one else orderstats.stats([v], percentiles)
                res = None if whole is None else (got, whole)
        if res is not None:
            got, whole = res
            per = [
                _named(name, got[i], percentiles) if got[i] else dict(empty) for i in range(points)
            ]
            total = _named(name, whole, percentiles)
        else:  # at most _STD_BLOCK values, or a negative one: partition each window in place
            mean, std = _mean_std(v) if v.size and not one else (0.0, 0.0)
            per = [_stats_owned(name, self._window(i), percentiles) for i in range(points)]
            if one:
                total = dict(per[used[0]])
            else:  # the whole trace's mean and std as they were before its order changed
                total = _stats_owned(name, v, percentiles)
                if v.size:
                    total[f"mean_{name}_ms"] = float(mean * 1000)
                    total[f"std_{name}_ms"] = float(std * 1000)
        self.values, self.codes, self.size = np.empty(0), None, 0
        return total, per


def _named(name: str, res: orderstats.Stats, percentiles: tuple[float, ...]) -> dict[str, float]:
    """:func:`_stats`'s keys for ``(mean, std, median, percentiles)`` in seconds."""
    mean, std, median, pct = res
    out = {
        f"mean_{name}_ms": float(mean * 1000),
        f"median_{name}_ms": float(median * 1000),
        f"std_{name}_ms": float(std * 1000),
    }
    for p, x in zip(percentiles, pct, strict=True):
        out[f"p{_pword(p)}_{name}_ms"] = float(x * 1000)
    return out


@dataclass(frozen=True)
class _Groups:
    """How a chunk's point indices fall: values per point, and whether the indices never
    decrease (then ``starts[i]`` is where point ``i``'s run begins, ``starts[-1]`` the end)."""

    counts: np.ndarray
    ordered: bool
    starts: np.ndarray | None


def _groups(codes: np.ndarray, npoints: int) -> _Groups:
    """:class:`_Groups` of ``codes`` (point indices below ``npoints``)."""
    if codes.size > 1 and bool((codes[1:] < codes[:-1]).any()):
        return _Groups(np.bincount(codes, minlength=npoints), False, None)
    # the points in the codes' own type: searchsorted would convert the codes otherwise
    starts = np.searchsorted(codes, np.arange(npoints + 1, dtype=_code_type(codes, npoints)))
    return _Groups(np.diff(starts), True, starts)


def _code_type(codes: np.ndarray, npoints: int) -> np.dtype:
    """The integer type that holds ``codes`` and 0 to ``npoints``."""
    return np.result_type(codes.dtype, np.min_scalar_type(-npoints))


def _sum_by(g: _Groups, codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Integer sums of ``values`` per point (``codes``, grouped as ``g``): exact int64 sums
    of each run when the codes are in order, else float64 bincount (exact below 2**53 per
    chunk)."""
    out = np.zeros(g.counts.size, np.int64)
    if g.ordered and g.starts is not None:
        runs = np.flatnonzero(g.counts)
        if runs.size:
            out[runs] = np.add.reduceat(values.astype(np.int64, copy=False), g.starts[runs])
        return out
    return np.rint(np.bincount(codes, weights=values, minlength=g.counts.size)).astype(np.int64)


class _Summary:
    """Accumulates a trace's metrics over chunks of request and gap rows.

    Point index ``i`` is row ``i`` of the points table; index ``len(points)`` collects requests
    whose point is not in the table (they count in the whole-trace figures only).
    """

    def __init__(
        self,
        points: pd.DataFrame,
        percentiles: tuple[float, ...],
        exact_itl: bool = True,
        requests: int = 0,
        gaps: int = 0,
    ) -> None:
        """``requests`` and ``gaps``: how many rows will come. One array is allocated up front
        for the values: first TTFT, E2EL and TPOT (a third each), then, once
        :meth:`requests_done` has their statistics, the gaps (new memory is the slow part of a
        large summary: the kernel maps and zeroes it page by page)."""
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
            "ttft": _Pool(P, room=self.block[:r]),
            "tpot": _Pool(P, room=self.block[2 * r : 3 * r]),
            "itl": _Pool(P, exact=exact_itl, room=np.empty(0)),
            "e2el": _Pool(P, room=self.block[r : 2 * r]),
        }
        self.done: dict[str, tuple[dict[str, float], list[dict[str, float]]]] = {}

    def requests_done(self) -> None:
        """Every request row has come: the statistics of TTFT, TPOT and E2EL now, and their
        array becomes the gaps' room."""
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
        """One chunk of request rows; ``codes`` are point indices (int). The values are
        written straight into the pools' arrays (no temporaries the size of the chunk but the
        TPOT denominators)."""
        P = self.np + 1
        every = bool(ok.all())  # the usual case: no selection
        oc = codes if every else codes[ok]
        g = _groups(oc, P)
        self.completed += g.counts
        if not every:
            self.failed += np.bincount(codes[~ok], minlength=P)
        i, o = (in_tok, out_tok) if every else (in_tok[ok], out_tok[ok])
        self.tokens_in += _sum_by(g, oc, i)
        self.tokens_out += _sum_by(g, oc, o)
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
            t = _tail(self.pools["ttft"], oc.size)
            np.subtract(_tail(self.pools["e2el"], oc.size), t, out=room)
            np.divide(room, o - 1, out=room)
            pool.commit(oc, g)
        else:
            t, e = _tail(self.pools["ttft"], oc.size), _tail(self.pools["e2el"], oc.size)
            pool.add(oc[m], tpot_s(t, e, o))

    def add_itl(self, codes: np.ndarray, itl_s: np.ndarray, keep: np.ndarray | None = None) -> None:
        """Gaps (s) of successful requests with their point indices; with ``keep`` (boolean
        over ``itl_s``), the gaps where it is True (``codes`` are theirs)."""
        pool = self.pools["itl"]
        if keep is None or not pool.exact:
            pool.add(codes, itl_s if keep is None else itl_s[keep])
        else:
            np.compress(keep, itl_s, out=pool.reserve(codes.size))
            pool.commit(codes)

    def result(self, trace_id: str, kind: str) -> TraceSummary:
        n = self.np
        if not self.done:
            self.requests_done()
        stats = {
            m: self.done[m] if m in self.done else self.pools[m].stats(m, self.percentiles, n)
            for m in LATENCY_METRICS
        }
        durations = self.points["duration_s"].to_numpy(dtype=np.float64)
        total = _window(
            float(durations.sum()),
            int(self.completed.sum()),
            int(self.failed.sum()),
            int(self.tokens_in.sum()),
            int(self.tokens_out.sum()),
            {m: s[0] for m, s in stats.items()},
        )
        points = []
        for i, (_, p) in enumerate(self.points.iterrows()):
            m = _window(
                float(p["duration_s"]),
                int(self.completed[i]),
                int(self.failed[i]),
                int(self.tokens_in[i]),
                int(self.tokens_out[i]),
                {k: s[1][i] for k, s in stats.items()},
            )
            keys = {k: (None if pd.isna(p[k]) else p[k]) for k in SCENARIO_KEYS if k in p}
            keys = {k: (int(v) if isinstance(v, (np.integer,)) else v) for k, v in keys.items()}
            points.append(PointMetrics(str(p["point_id"]), keys, m))
        return TraceSummary(trace_id, kind, total, points)


def _tail(pool: _Pool, k: int) -> np.ndarray:
    """The last ``k`` exact values stored in ``pool``."""
    return pool.values[pool.size - k : pool.size]


def _window(
    duration_s: float,
    completed: int,
    failed: int,
    total_in: int,
    total_out: int,
    stats: dict[str, dict[str, float]],
) -> BenchmarkMetrics:
    lat: dict[str, Any] = {}
    for m in LATENCY_METRICS:
        s = stats[m]
        for stat in ("mean", "median", "std"):
            lat[f"{stat}_{m}_ms"] = s[f"{stat}_{m}_ms"]
        pct = [(k, v) for k, v in s.items() if k.startswith("p") and k.endswith(f"_{m}_ms")]
        lat[f"percentiles_{m}_ms"] = tuple((float(k[1 : -len(f"_{m}_ms")]), v) for k, v in pct)
    return BenchmarkMetrics(
        duration=float(duration_s),
        completed=completed,
        failed=failed,
        total_input=total_in,
        total_output=total_out,
        request_throughput=completed / duration_s,
        output_throughput=total_out / duration_s,
        total_token_throughput=(total_in + total_out) / duration_s,
        **lat,
    )


def tpot_s(ttft_s: np.ndarray, e2el_s: np.ndarray, output_tokens: np.ndarray) -> np.ndarray:
    """Per-request TPOT in seconds for requests with more than one output token (vLLM)."""
    m = output_tokens > 1
    return (e2el_s[m] - ttft_s[m]) / (output_tokens[m] - 1)


def vllm_metrics(
    requests: pd.DataFrame,
    itl_s: np.ndarray,
    duration_s: float,
    percentiles: tuple[float, ...] = PERCENTILES,
) -> BenchmarkMetrics:
    """vLLM's metrics for one window: ``requests`` rows, pooled gaps ``itl_s`` of its successful
    requests (seconds) and the window length ``duration_s`` (seconds)."""
    ok = requests["success"].to_numpy(dtype=bool)
    ttft = requests["ttft_s"].to_numpy(dtype=np.float64)[ok]
    e2el = requests["e2el_s"].to_numpy(dtype=np.float64)[ok]
    out_tok = requests["output_tokens"].to_numpy(dtype=np.int64)[ok]
    in_tok = requests["prompt_tokens"].to_numpy(dtype=np.int64)[ok]
    completed = int(ok.sum())
    stats = {
        "ttft": _stats("ttft", ttft, percentiles),
        "tpot": _stats("tpot", tpot_s(ttft, e2el, out_tok), percentiles),
        "itl": _stats("itl", np.asarray(itl_s, dtype=np.float64), percentiles),
        "e2el": _stats("e2el", e2el, percentiles),
    }
    return _window(
        duration_s, completed, int((~ok).sum()), int(in_tok.sum()), int(out_tok.sum()), stats
    )


def _pooled_itl(trace: traces.Trace, rows_mask: np.ndarray) -> np.ndarray:
    """Gaps (s) of the requests selected by ``rows_mask`` (boolean over request rows)."""
    if trace.itl.empty:
        return np.zeros(0)
    rr = trace.itl["request_row"].to_numpy()
    return trace.itl["itl_s"].to_numpy(dtype=np.float64)[rows_mask[rr]]


def _point_index(point_ids: Any, points: pd.DataFrame) -> np.ndarray:
    """Index of each id in ``points`` (first match); ``len(points)`` when absent."""
    idx = pd.Index(points["point_id"].astype(str))
    if not idx.is_unique:
        idx = idx.drop_duplicates()
    codes = idx.get_indexer(pd.Index(point_ids).astype(str))
    codes[codes < 0] = len(points)
    return codes.astype(np.int32)


def _stream_itl(acc: _Summary, path: Path, row_code: np.ndarray, chunk_rows: int) -> None:
    """Feed ``path``/itl.parquet to ``acc`` chunk by chunk; ``row_code`` is each request row's
    point index, or -1 for a failed request. Checks as :func:`rackbook.core.traces.validate`."""
    n_req = len(row_code)
    with contextlib.closing(
        traces.iter_table(path, "itl", ["request_row", "itl_s"], chunk_rows)
    ) as chunks:  # on error: its thread stops
        for off, c in chunks:
            rr, v = c["request_row"], c["itl_s"]
            if rr.size and (rr.min() < 0 or rr.max() >= n_req):
                raise InputError(path, "itl.request_row", "refers to a request row that is absent")
            traces.check_values(v, path, "itl_s", traces.RowNames("itl"), offset=off)
            code = row_code[rr]
            keep = code >= 0
            if keep.all():
                acc.add_itl(code, v)
            else:
                acc.add_itl(code[keep], v, keep)


def summarize(trace: traces.Trace, percentiles: tuple[float, ...] = PERCENTILES) -> TraceSummary:
    """Metrics of a whole trace plus one entry per point.

    The top level treats the measured windows as one: its ``duration`` is the sum of the points'
    durations. For a single-point trace it equals what ``vllm bench serve`` reports. A trace read
    with ``read_trace(path, itl=False)`` has its gaps streamed from ``path``/itl.parquet.
    """
    req = trace.requests
    stream_itl = not trace.itl_loaded and trace.path is not None
    n_itl = traces.table_rows(trace.path, "itl") if stream_itl else len(trace.itl)
    exact_itl = not stream_itl or n_itl <= EXACT_ITL_MAX
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
    if stream_itl:
        _stream_itl(acc, Path(trace.path), row_code, CHUNK_ROWS)
    elif not trace.itl.empty:
        code = row_code[trace.itl["request_row"].to_numpy()]
        keep = code >= 0
        acc.add_itl(code[keep], trace.itl["itl_s"].to_numpy(dtype=np.float64), keep)
    return with_validity(acc.result(trace.trace_id, trace.kind), trace)


def with_validity(summary: TraceSummary, trace: traces.Trace) -> TraceSummary:
    """``summary`` with the valid-request counts and flagged shares of ``trace``
    (:func:`rackbook.core.validity.point_validity`); vLLM's figures are left as they are."""
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


def _check_points(path: Path, pts: pd.DataFrame) -> None:
    if pts["point_id"].duplicated().any():
        raise InputError(path, "points.point_id", "duplicate point id")
    if (pts["duration_s"] <= 0).any():
        raise InputError(
            path,
            "points.duration_s",
            f"must be > 0 (row {int((pts['duration_s'] <= 0).argmax())})",
        )
    traces.check_point_counts(pts, path)


def summarize_path(
    path: str | Path,
    percentiles: tuple[float, ...] = PERCENTILES,
    *,
    stream: bool | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> TraceSummary:
    """:func:`summarize` of the trace folder ``path``, streamed when large (module docstring).

    ``stream`` forces (True) or forbids (False) streaming; by default a folder streams when it
    has more than :data:`FULL_READ_MAX_REQUESTS` requests or :data:`EXACT_ITL_MAX` gaps.
    Streaming holds one chunk of ``chunk_rows`` rows of the tables at a time.
    """
    path = Path(path)
    run = traces.read_run(path)
    n_req = traces.table_rows(path, "requests")
    n_itl = traces.table_rows(path, "itl")
    if stream is None:
        stream = n_req > FULL_READ_MAX_REQUESTS or n_itl > EXACT_ITL_MAX
    if not stream:
        return summarize(traces.read_trace(path), percentiles)
    pts = traces.conform(traces.read_table(path, "points"), "points", path)
    _check_points(path, pts)
    acc = _Summary(pts, percentiles, n_itl <= EXACT_ITL_MAX, requests=n_req, gaps=n_itl)
    pid_index = {p: i for i, p in enumerate(pts["point_id"].tolist())}
    row_code = np.empty(n_req, np.min_scalar_type(-(len(pts) + 1)))  # point index, -1: failed
    with contextlib.closing(
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
        median_s = np.array([res.metrics.median_e2el_ms / 1000])
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


def cli_summarize(args: argparse.Namespace) -> int:
    """``rackbook summarize TRACE_DIR [--json]``: the JSON object is the last thing printed.

    A published trace (no requests: one row per published point) is summarised by its points;
    any other trace without requests is an error, not a table of zeros."""
    path = Path(args.trace)
    run = traces.read_run(path)
    if traces.table_rows(path, "requests") == 0:
        if run.get("kind") == "published" and (path / "published_points.parquet").is_file():
            return _summarize_published(path, run, args.json)
        if (path / "expert_load.parquet").is_file():
            raise InputError(
                path,
                "requests.parquet",
                "no requests: this trace holds expert loads (`rackbook eplb "
                f"{path / 'expert_load.parquet'} --ep-size N` reads them)",
            )
        raise InputError(path, "requests.parquet", "no requests: an empty trace has no metrics")
    if traces.table_rows(path, "requests") > FULL_READ_MAX_REQUESTS:
        from rackbook.core import alloc

        alloc.retain_freed_memory()  # streamed: reuse freed chunk temporaries (alloc doc)
        alloc.small_pages()  # and no huge pages: their first touch is slow here
    s = summarize_path(args.trace)
    if args.json:
        print(json.dumps(s.to_dict(), allow_nan=False, default=str))
    else:
        print(format_summary(s))
    return 0


def _summarize_published(path: Path, run: dict[str, Any], as_json: bool) -> int:
    """``summarize`` of a published trace: its points by hardware and engine, with the range of
    the per-GPU figure as published (vLLM's request metrics need requests, which it has none)."""
    pts = traces.read_table(path, "published_points")
    groups = (
        pts.groupby(["hardware", "engine"], sort=True, dropna=False)["tok_s_per_gpu"]
        .agg(["count", "min", "max"])
        .reset_index()
    )
    rows = [
        {
            "hardware": str(g.hardware),
            "engine": str(g.engine),
            "points": int(g["count"]),
            "tok_s_per_gpu_min": None if pd.isna(g["min"]) else float(g["min"]),
            "tok_s_per_gpu_max": None if pd.isna(g["max"]) else float(g["max"]),
        }
        for _, g in groups.iterrows()
    ]
    print(
        f"{path}: published trace, {len(pts)} published points (no requests: vLLM's request "
        "metrics do not apply; tokens/s per GPU as published)"
    )
    for r in rows:
        lo, hi = r["tok_s_per_gpu_min"], r["tok_s_per_gpu_max"]
        span = "n/a" if lo is None else f"{lo:,.0f} to {hi:,.0f}"
        print(f"  {r['hardware']} / {r['engine']}: {r['points']} points, {span} tok/s/GPU")
    if as_json:
        doc = {"trace_id": run.get("trace_id"), "kind": "published", "points": len(pts)}
        print(json.dumps(doc | {"groups": rows}, allow_nan=False))
    return 0


#: The same trace under other tools' names and definitions (each tool's own documentation:
#: vLLM's benchmarks/serve.py, AIPerf, guidellm, InferenceX): (quantity, tool, the tool's name,
#: unit, definition).
CROSS_TOOL: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "time per output token",
        "vLLM",
        "mean_tpot_ms",
        "ms",
        "mean over requests of (e2el - ttft) / (output tokens - 1)",
    ),
    (
        "time per output token",
        "AIPerf",
        "inter_token_latency",
        "ms",
        "same as vLLM's TPOT: (e2el - ttft) / (output tokens - 1) per request",
    ),
    ("time per output token", "guidellm", "inter_token_latency", "ms", "same as vLLM's TPOT"),
    (
        "time per output token",
        "guidellm",
        "time_per_output_token",
        "ms",
        "includes the first token: e2el / output tokens per request",
    ),
    (
        "gap between chunks",
        "vLLM",
        "mean_itl_ms",
        "ms",
        "every gap between streamed chunks, pooled over requests",
    ),
    (
        "gap between chunks",
        "AIPerf",
        "inter_chunk_latency",
        "ms",
        "gaps between streamed chunks (vLLM's ITL)",
    ),
    (
        "throughput per GPU",
        "InferenceX",
        "tput_per_gpu",
        "tok/s/GPU",
        "total_token_throughput (input + output) / GPUs",
    ),
    (
        "throughput per GPU",
        "vLLM",
        "output_throughput / GPUs",
        "tok/s/GPU",
        "output tokens only / duration / GPUs",
    ),
    (
        "interactivity",
        "InferenceX",
        "interactivity",
        "tok/s/user",
        "1000 / TPOT_ms: tokens per second one user sees",
    ),
)


def translate(trace: traces.Trace, gpus: int = 1, point_id: str | None = None) -> pd.DataFrame:
    """One window of a trace (``point_id``, default: the first point) under vLLM's, AIPerf's,
    guidellm's and InferenceX's definitions, side by side. ``gpus`` divides per-GPU figures."""
    pid = point_id or str(trace.points["point_id"].iloc[0])
    mask = (trace.requests["point_id"] == pid).to_numpy()
    req = trace.requests[mask]
    dur = float(trace.points.loc[trace.points["point_id"] == pid, "duration_s"].iloc[0])
    ok_mask = mask & trace.requests["success"].to_numpy(dtype=bool)
    m = vllm_metrics(req, _pooled_itl(trace, ok_mask), dur).to_dict()
    ok = req[req["success"]]
    e2el = ok["e2el_s"].to_numpy(np.float64)
    n = ok["output_tokens"].to_numpy(np.int64)
    gdl_tpot_ms = float(np.mean(e2el[n > 0] / n[n > 0]) * 1000) if (n > 0).any() else 0.0
    values = {
        ("vLLM", "mean_tpot_ms"): m["mean_tpot_ms"],
        ("AIPerf", "inter_token_latency"): m["mean_tpot_ms"],
        ("guidellm", "inter_token_latency"): m["mean_tpot_ms"],
        ("guidellm", "time_per_output_token"): gdl_tpot_ms,
        ("vLLM", "mean_itl_ms"): m["mean_itl_ms"],
        ("AIPerf", "inter_chunk_latency"): m["mean_itl_ms"],
        ("InferenceX", "tput_per_gpu"): m["total_token_throughput"] / gpus,
        ("vLLM", "output_throughput / GPUs"): m["output_throughput"] / gpus,
        ("InferenceX", "interactivity"): (
            1000 / m["mean_tpot_ms"] if m["mean_tpot_ms"] > 0 else float("nan")
        ),
    }
    rows = [
        {
            "quantity": q,
            "tool": tool,
            "name": name,
            "value": values[(tool, name)],
            "unit": unit,
            "definition": doc,
        }
        for q, tool, name, unit, doc in CROSS_TOOL
    ]
    return pd.DataFrame(rows)
