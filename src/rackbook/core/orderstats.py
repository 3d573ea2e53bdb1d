"""Exact mean, std, median and percentiles (numpy's, bit for bit) of non-negative values held in
pieces: one pass counts values per bucket of their bit pattern's top bits, a second partitions only
the buckets holding wanted order statistics. A negative value (or -0.0) gives None."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

#: Values per block in each pass (bounds the temporaries: about 8 bytes x 3 per value).
BLOCK = 1 << 20
#: At most this many buckets (counts: 8 bytes each per window).
_BUCKETS = 1 << 16


def _blocks(pieces: Sequence[np.ndarray]) -> Iterator[np.ndarray]:
    for p in pieces:
        for lo in range(0, p.size, BLOCK):
            yield p[lo : lo + BLOCK]


class _Buckets:
    """Buckets ``(pattern >> shift) - base`` of the values' bit patterns (<= :data:`_BUCKETS`)."""

    def __init__(self, groups: Sequence[Sequence[np.ndarray]]) -> None:
        lo: int | None = None
        hi: int | None = None
        self.negative = False
        for g in groups:
            for blk in _blocks(g):
                if not blk.size:
                    continue
                bits = blk.view(np.int64)
                a, b = int(bits.min()), int(bits.max())
                lo, hi = (a, b) if lo is None or hi is None else (min(lo, a), max(hi, b))
        if lo is not None and lo < 0:  # a negative value or -0.0: patterns do not order
            self.negative = True
        first, last = (0, 0) if lo is None or hi is None else (lo, hi)
        self.shift = 0
        while (last >> self.shift) - (first >> self.shift) >= _BUCKETS:
            self.shift += 1
        self.base = first >> self.shift
        self.size = int((last >> self.shift) - self.base + 1)

    def of(self, blk: np.ndarray) -> np.ndarray:
        """Bucket of each value of ``blk`` (int64)."""
        b = blk.view(np.int64) >> self.shift
        b -= self.base
        return b

    def counts(self, pieces: Sequence[np.ndarray]) -> np.ndarray:
        """Values per bucket (pass 1)."""
        counts = np.zeros(self.size, np.int64)
        for blk in _blocks(pieces):
            counts += np.bincount(self.of(blk), minlength=self.size)
        return counts


def _plan(cum: np.ndarray, ks: Sequence[int]) -> dict[int, list[int]]:
    by_bucket: dict[int, list[int]] = {}
    for k in sorted(set(ks)):  # each 0 <= k < cum[-1]: ranks _wanted formed
        by_bucket.setdefault(int(np.searchsorted(cum, k, side="right")), []).append(k)
    return by_bucket


def _select(
    cum: np.ndarray, by_bucket: dict[int, list[int]], got: dict[int, list[np.ndarray]]
) -> dict[int, float]:
    out: dict[int, float] = {}
    for bucket, klist in by_bucket.items():
        arr = np.concatenate(got[bucket])
        below = int(cum[bucket - 1]) if bucket else 0
        ranks = [k - below for k in klist]
        arr.partition(ranks)
        for k, r in zip(klist, ranks, strict=True):
            out[k] = arr[r]
    return out


def grouped_order_stats(
    groups: Sequence[Sequence[np.ndarray]],
    ks: Sequence[Sequence[int]],
    whole_ks: Sequence[int] = (),
) -> tuple[list[dict[int, float]], dict[int, float]] | None:
    """The ``k``-th smallest value of each group's pieces for each of its ``ks``, and of all groups
    (``whole_ks``); None when a value is negative or -0.0."""
    buckets = _Buckets(groups)
    if buckets.negative:
        return None
    counts = [buckets.counts(g) for g in groups]
    whole_cum = np.cumsum(np.sum(counts, axis=0)) if counts else np.zeros(1, np.int64)
    whole_plan = _plan(whole_cum, whole_ks) if whole_ks else {}
    whole_got: dict[int, list[np.ndarray]] = {b: [] for b in whole_plan}
    per = []
    for g, c, gk in zip(groups, counts, ks, strict=True):
        cum = np.cumsum(c)
        plan = _plan(cum, gk) if gk else {}
        got: dict[int, list[np.ndarray]] = {b: [] for b in plan}
        wanted = sorted(set(plan) | set(whole_plan))
        want = np.zeros(buckets.size, bool)
        want[wanted] = True
        for blk in _blocks(g):
            b = buckets.of(blk)
            at = np.flatnonzero(want[b])
            if not at.size:
                continue
            vals, bs = blk[at], b[at]
            for bucket in wanted:
                sel = vals[bs == bucket]
                for dest in (got, whole_got):
                    if bucket in dest:
                        dest[bucket].append(sel)
        per.append(_select(cum, plan, got))
    return per, _select(whole_cum, whole_plan, whole_got)


def _moments(pieces: Sequence[np.ndarray], n: int) -> tuple[np.float64, np.float64]:
    total = np.float64(0.0)
    for blk in _blocks(pieces):
        total += np.add.reduce(blk)
    mean = total / n
    m2 = np.float64(0.0)
    for blk in _blocks(pieces):
        d = blk - mean
        np.multiply(d, d, out=d)
        m2 += np.add.reduce(d)
    return mean, m2


def _lerp(a: float, b: float, t: float) -> float:
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _wanted(n: int, percentiles: Sequence[float]) -> tuple[list[int], list[tuple]]:
    """Ranks the median and percentiles of ``n`` values need, and per percentile (lower, upper,
    weight) as ``np.percentile``'s linear method forms them."""
    plans = []
    for p in percentiles:
        h = (n - 1) * (np.float64(p) / 100)  # np.percentile's virtual index (linear method)
        lo = int(math.floor(h))
        plans.append((lo, min(lo + 1, n - 1), h - np.floor(h)))
    ks = {(n - 1) // 2, n // 2, *(i for lo, hi, _ in plans for i in (lo, hi))}
    return sorted(ks), plans


def _form(n: int, got: dict[int, float], plans: list[tuple]) -> tuple[float, list[float]]:
    median = np.mean(np.array([got[(n - 1) // 2], got[n // 2]])[: 2 - n % 2])
    pct = [_lerp(got[lo], got[hi], g) for lo, hi, g in plans]
    return float(median), [float(x) for x in pct]


Stats = tuple[float, float, float, list[float]]


def grouped_stats(
    groups: Sequence[Sequence[np.ndarray]],
    whole: Sequence[np.ndarray],
    percentiles: Sequence[float],
) -> tuple[list[Stats | None], Stats] | None:
    """(mean, std, median, percentiles) of each group (None when empty) and of ``whole`` (in row
    order); None when a value is negative or -0.0."""
    sizes = [sum(p.size for p in g) for g in groups]
    n = sum(sizes)  # > 0: LatencyPool asks only with values
    wanted = [_wanted(m, percentiles) if m else ([], []) for m in sizes]
    whole_ks, whole_plans = _wanted(n, percentiles)
    res = grouped_order_stats(groups, [w[0] for w in wanted], whole_ks)
    if res is None:
        return None
    per_got, whole_got = res
    per: list[Stats | None] = [None] * len(groups)
    for i, (g, m, (_, plans), got) in enumerate(zip(groups, sizes, wanted, per_got, strict=True)):
        if m:
            mean, m2 = _moments(g, m)
            per[i] = (float(mean), float(np.sqrt(m2 / m)), *_form(m, got, plans))
    mean, m2 = _moments(whole, n)
    return per, (float(mean), float(np.sqrt(m2 / n)), *_form(n, whole_got, whole_plans))
