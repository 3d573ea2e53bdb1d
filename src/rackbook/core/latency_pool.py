"""One latency metric's values over a trace and their statistics: exact (:mod:`orderstats`), else
streamed moments (exact to rounding) and a log histogram per point, whose order statistics (bin
centres clamped to min and max) are within 0.05 % from 1 us to 1e5 s, 0.5 us below."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rackbook.core import orderstats
from rackbook.core.metrics import latency_stats, named_stats

#: Bin 0 is [0, HIST_LO_S) s, then bins growing by HIST_RATIO, the last open above HIST_HI_S s.
HIST_LO_S = 1e-6
HIST_HI_S = 1e5
HIST_RATIO = 1.001
_LOG_RATIO = math.log(HIST_RATIO)
HIST_BINS = 2 + math.ceil(math.log(HIST_HI_S / HIST_LO_S) / _LOG_RATIO)


def _hist_stats(name: str, row: Sequence[Any], percentiles: tuple[float, ...]) -> dict[str, float]:
    """Statistics of ``row``: count, mean (s), squared deviations (s^2), histogram, min, max."""
    n, mean, m2, hist, lo, hi = row
    if n == 0:
        return latency_stats(name, np.zeros(0), percentiles)
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

    std = math.sqrt(max(m2, 0.0) / n)
    return named_stats(name, (mean, std, pct(50.0), [pct(p) for p in percentiles]), percentiles)


class LatencyPool:
    """One latency metric's values (s) by point: exact in row order, or per point count, mean, M2,
    min, max and histogram."""

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

    def commit(self, codes: np.ndarray, groups: Groups | None = None) -> None:
        """The values written into :meth:`reserve`'s room belong to points ``codes``."""
        k = codes.size
        if not k:
            return
        g = point_groups(codes, self.npoints) if groups is None else groups
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
            hist = self.hist.reshape(self.npoints, HIST_BINS)
            n = int(self.n.sum())
            mean = float((self.n * self.mean).sum() / n) if n else 0.0
            m2 = float(self.m2.sum() + (self.n * (self.mean - mean) ** 2).sum())
            merged = (n, mean, m2, hist.sum(axis=0), self.lo.min(), self.hi.max())
            each = zip(self.n, self.mean, self.m2, hist, self.lo, self.hi, strict=True)
            rows = [merged, *itertools.islice(each, points)]
            total, *per = [_hist_stats(name, row, percentiles) for row in rows]
            return total, per
        return self._exact_stats(name, percentiles, points)

    def _window(self, i: int) -> np.ndarray:
        """Point ``i``'s values in row order (a view while points came in order)."""
        v = self.values[: self.size]
        if self.codes is None:
            end = int(self.counts[: i + 1].sum())
            return v[end - int(self.counts[i]) : end]
        return v[self.codes[: self.size] == i] if self.counts[i] else v[:0]

    def _exact_stats(
        self, name: str, percentiles: tuple[float, ...], points: int
    ) -> tuple[dict[str, float], list[dict[str, float]]]:
        """:meth:`stats` of the exact values: numpy's numbers (:func:`orderstats.grouped_stats`,
        numpy itself for a negative value); the whole's mean and std in row order."""
        v = self.values[: self.size]
        windows = [self._window(i) for i in range(self.npoints)]
        res = orderstats.grouped_stats([[w] for w in windows], [v], percentiles) if v.size else None
        if res is None:  # no values, or a negative one
            per = [latency_stats(name, w, percentiles) for w in windows[:points]]
            total = latency_stats(name, v, percentiles)
        else:
            empty = latency_stats(name, np.zeros(0), percentiles)
            got, whole = res
            per = [named_stats(name, g, percentiles) if g else dict(empty) for g in got[:points]]
            total = named_stats(name, whole, percentiles)
        self.values, self.codes, self.size = np.empty(0), None, 0
        return total, per


@dataclass(frozen=True)
class Groups:
    """A chunk's values per point, and whether its indices never decrease (then ``starts``)."""

    counts: np.ndarray
    ordered: bool
    starts: np.ndarray | None


def point_groups(codes: np.ndarray, npoints: int) -> Groups:
    """:class:`Groups` of ``codes`` (point indices below ``npoints``)."""
    if codes.size > 1 and bool((codes[1:] < codes[:-1]).any()):
        return Groups(np.bincount(codes, minlength=npoints), False, None)
    # the points in the codes' own type: searchsorted would convert the codes otherwise
    dtype = np.result_type(codes.dtype, np.min_scalar_type(-npoints))
    starts = np.searchsorted(codes, np.arange(npoints + 1, dtype=dtype))
    return Groups(np.diff(starts), True, starts)


def sum_by(g: Groups, codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Integer sums of ``values`` per point (float64 bincount out of order: exact below 2**53)."""
    out = np.zeros(g.counts.size, np.int64)
    if g.ordered and g.starts is not None:
        runs = np.flatnonzero(g.counts)
        if runs.size:
            out[runs] = np.add.reduceat(values.astype(np.int64, copy=False), g.starts[runs])
        return out
    return np.rint(np.bincount(codes, weights=values, minlength=g.counts.size)).astype(np.int64)


def tail(pool: LatencyPool, k: int) -> np.ndarray:
    """The last ``k`` exact values stored in ``pool``."""
    return pool.values[pool.size - k : pool.size]
