"""Exact mean, std, median and percentiles of a large set of non-negative values held in
pieces (a list of float64 arrays), in two vectorised passes and without joining the pieces.

``np.percentile`` partitions one contiguous copy of the data around every order statistic it
needs. Here instead:

1. one pass counts the values per bucket of their top 16 bits (sign, exponent and 4 mantissa
   bits of the IEEE double: for non-negative doubles the bit pattern, read as an integer,
   orders like the value), 1Mi values at a time;
2. the cumulative counts name, for each wanted order statistic, its bucket and its rank
   inside it; a second pass gathers only the values of those buckets (typically a few
   percent of the data), and one partition of each gathered set gives the exact values.

Median and percentiles are then formed exactly as numpy forms them (``np.median``: the mean
of the middle one or two values; ``np.percentile``'s default linear method, its ``_lerp``
included), so they are the numbers numpy gives, bit for bit (``tests/test_orderstats.py``).
Mean and std are summed piece by piece and block by block (no temporary the size of the
data), so they may differ from ``np.mean``/``np.std`` of one contiguous array in the last bits
(~1e-15 relative). Values must be finite; a negative value (or -0.0) returns None, for the
caller to use its contiguous path.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

#: Values per block in each pass (bounds the temporaries: about 8 bytes x 3 per value).
BLOCK = 1 << 20
_SHIFT = 48  # top 16 bits of the float64's pattern
_BUCKETS = 1 << 16


def _blocks(pieces: Sequence[np.ndarray]) -> Iterator[np.ndarray]:
    for p in pieces:
        for lo in range(0, p.size, BLOCK):
            yield p[lo : lo + BLOCK]


def order_stats(pieces: Sequence[np.ndarray], ks: Sequence[int]) -> dict[int, float] | None:
    """The ``k``-th smallest value (0-based) of the pieces taken together, for each ``k`` in
    ``ks``; None when a value is negative or -0.0 (its bit pattern does not order)."""
    counts = np.zeros(_BUCKETS, np.int64)
    for blk in _blocks(pieces):
        b = blk.view(np.int64) >> _SHIFT
        if b.min() < 0:
            return None
        counts += np.bincount(b, minlength=_BUCKETS)
    cum = np.cumsum(counts)
    n = int(cum[-1])
    by_bucket: dict[int, list[int]] = {}
    for k in sorted(set(ks)):
        if not 0 <= k < n:
            raise IndexError(f"order statistic {k} of {n} values")
        by_bucket.setdefault(int(np.searchsorted(cum, k, side="right")), []).append(k)
    want = np.zeros(_BUCKETS, bool)
    want[list(by_bucket)] = True
    got: dict[int, list[np.ndarray]] = {b: [] for b in by_bucket}
    for blk in _blocks(pieces):
        b = blk.view(np.int64) >> _SHIFT
        m = want[b]
        if not m.any():
            continue
        vals, bs = blk[m], b[m]
        for bucket in got:
            got[bucket].append(vals if len(got) == 1 else vals[bs == bucket])
    out: dict[int, float] = {}
    for bucket, klist in by_bucket.items():
        arr = np.concatenate(got.pop(bucket))
        below = int(cum[bucket - 1]) if bucket else 0
        ranks = [k - below for k in klist]
        arr.partition(ranks)
        for k, r in zip(klist, ranks, strict=True):
            out[k] = arr[r]
    return out


def _mean_std(pieces: Sequence[np.ndarray], n: int) -> tuple[float, float]:
    total = np.float64(0.0)
    for blk in _blocks(pieces):
        total += np.add.reduce(blk)
    mean = total / n
    m2 = np.float64(0.0)
    for blk in _blocks(pieces):
        d = blk - mean
        np.multiply(d, d, out=d)
        m2 += np.add.reduce(d)
    return mean, np.sqrt(m2 / n)


def _lerp(a: np.float64, b: np.float64, t: np.float64) -> np.float64:
    """numpy's ``_lerp`` on scalars: ``a + (b - a) t``, or ``b - (b - a)(1 - t)`` when
    ``t >= 0.5``."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def stats(
    pieces: Sequence[np.ndarray], percentiles: Sequence[float]
) -> tuple[float, float, float, list[float]] | None:
    """(mean, std, median, [percentile for each of ``percentiles``]) of the pieces together
    (at least one value), or None as :func:`order_stats`."""
    n = sum(p.size for p in pieces)
    if n == 0:
        raise ValueError("no values")
    plans = []
    for p in percentiles:
        h = (n - 1) * (np.float64(p) / 100)  # np.percentile's virtual index (linear method)
        lo = int(math.floor(h))
        plans.append((lo, min(lo + 1, n - 1), h - np.floor(h)))
    ks = {(n - 1) // 2, n // 2, *(i for lo, hi, _ in plans for i in (lo, hi))}
    got = order_stats(pieces, sorted(ks))
    if got is None:
        return None
    mean, std = _mean_std(pieces, n)
    median = np.mean(np.array([got[(n - 1) // 2], got[n // 2]])[: 2 - n % 2])
    pct = [_lerp(got[lo], got[hi], g) for lo, hi, g in plans]
    return float(mean), float(std), float(median), [float(x) for x in pct]
