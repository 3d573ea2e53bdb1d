"""Serving metrics as ``vllm bench serve`` defines them (``vllm/benchmarks/serve.py``,
``calculate_metrics``) over a window's successful requests: counts, throughputs (per s), and
mean/median/std/pNN of TTFT, TPOT, ITL, E2EL in ms (an empty set gives 0)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

PERCENTILES: tuple[float, ...] = (90.0, 99.0)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")


@dataclass(frozen=True)
class BenchmarkMetrics:
    """vLLM's ``BenchmarkMetrics`` of one window: counts and token sums over ``duration`` (s), and
    ``latency`` in ms under vLLM's keys (``mean_ttft_ms``, ``p99_itl_ms``)."""

    duration: float
    completed: int
    failed: int
    total_input: int
    total_output: int
    latency: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """The window under the key names of vLLM's result JSON."""
        return {
            "duration": self.duration,
            "completed": self.completed,
            "failed": self.failed,
            "total_input_tokens": self.total_input,
            "total_output_tokens": self.total_output,
            "request_throughput": self.completed / self.duration,
            "output_throughput": self.total_output / self.duration,
            "total_token_throughput": (self.total_input + self.total_output) / self.duration,
            **self.latency,
        }


def order_stats(v: np.ndarray, percentiles: Sequence[float]) -> tuple[float, list[float]]:
    """Median and ``percentiles`` of ``v`` (not empty) bit for bit as ``np.median`` and
    ``np.percentile`` (linear) give them; ``v`` is partitioned in place, one rank at a time."""
    n = v.size
    plans = []
    for p in percentiles:
        h = (n - 1) * (np.float64(p) / 100)  # np.percentile's virtual index
        lo = int(math.floor(h))
        plans.append((lo, min(lo + 1, n - 1), h - np.floor(h)))
    base = 0
    for k in sorted({(n - 1) // 2, n // 2, *(i for lo, hi, _ in plans for i in (lo, hi))}):
        rest = v[base:]  # the values of rank ``base`` and above; rank k then stays at v[k]
        if k > base:
            rest.partition(k - base)  # one rank: numpy's vectorised selection
        else:  # the next rank: the smallest left, moved to the front
            i = int(rest.argmin())
            rest[0], rest[i] = rest[i], rest[0]
        base = k + 1
    median = np.mean(v[[(n - 1) // 2, n // 2]][: 2 - n % 2])
    ends = [(v[lo], v[hi] - v[lo], v[hi], t) for lo, hi, t in plans]  # np.percentile's lerp:
    pct = [float(b - d * (1 - t) if t >= 0.5 else a + d * t) for a, d, b, t in ends]
    return float(median), pct


def mean_std(v: np.ndarray, block: int = 1 << 20) -> tuple[np.float64, np.float64]:
    """``np.mean`` and ``np.std`` of ``v`` (not empty), summed per ``block`` values past it (no
    temporary the size of ``v``)."""
    mean = sum((np.add.reduce(v[i : i + block]) for i in range(0, v.size, block)), np.float64(0))
    mean /= v.size
    m2 = np.float64(0)
    for i in range(0, v.size, block):
        d = v[i : i + block] - mean
        m2 += np.add.reduce(np.multiply(d, d, out=d))
    return mean, np.sqrt(m2 / v.size)


def latency_stats(
    name: str, values_s: np.ndarray, percentiles: Sequence[float], *, own: bool = False
) -> dict[str, float]:
    """Mean, median, std, ``percentiles`` of ``values_s`` (s) in ms, vLLM's keys; empty: 0.
    ``own``: the array may be reordered."""
    v = values_s if values_s.size else np.zeros(1)
    mean, std = mean_std(v)  # before ``v`` is reordered
    stats = order_stats(v if own else v.copy(), percentiles)
    return named_stats(name, (mean, std, *stats), percentiles)


def grouped_stats(
    name: str, values_s: np.ndarray, codes: np.ndarray, npoints: int, percentiles: Sequence[float]
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """:func:`latency_stats` of all ``values_s`` (s) and of each point's (``codes``: point index
    per value, ``npoints`` for none of them); ``values_s`` is reordered."""
    v = values_s if values_s.size else np.zeros(1)
    mean, std = mean_std(v)  # in row order
    B, counts, ordered = 1 << 20, np.zeros(npoints + 1, np.int64), True
    for i in range(0, codes.size, B):  # per block: no temporary the size of ``codes``
        block = codes[i : i + B + 1]
        counts += np.bincount(block[:B], minlength=npoints + 1)
        ordered = ordered and not (block[1:] < block[:-1]).any()
    by_point = values_s if ordered else values_s[np.argsort(codes, kind="stable")]
    ends = np.cumsum(counts).tolist()
    per = [
        latency_stats(name, by_point[a:b], percentiles, own=True)
        for a, b in zip([0, *ends], ends[:npoints], strict=False)
    ]
    total = named_stats(name, (mean, std, *order_stats(v, percentiles)), percentiles)
    return total, per


def named_stats(
    name: str, stats_s: tuple[Any, Any, Any, Sequence[Any]], percentiles: Sequence[float]
) -> dict[str, float]:
    """(mean, std, median, percentiles) in s as vLLM's keys in ms (``mean_NAME_ms``...)."""
    mean, std, median, pct = stats_s
    out = {
        f"mean_{name}_ms": float(mean * 1000),
        f"median_{name}_ms": float(median * 1000),
        f"std_{name}_ms": float(std * 1000),
    }
    for p, x in zip(percentiles, pct, strict=True):
        out[f"p{int(p) if int(p) == p else p}_{name}_ms"] = float(x * 1000)  # p99, p99.9
    return out


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
    """vLLM's metrics of one window: ``requests``, gaps ``itl_s`` (s), ``duration_s`` (s)."""
    ok = requests["success"].to_numpy(dtype=bool)
    ttft, e2el = (requests[c].to_numpy(dtype=np.float64)[ok] for c in ("ttft_s", "e2el_s"))
    out_tok, in_tok = (
        requests[c].to_numpy(np.int64)[ok] for c in ("output_tokens", "prompt_tokens")
    )
    values = {"ttft": ttft, "tpot": tpot_s(ttft, e2el, out_tok), "itl": itl_s, "e2el": e2el}
    latency: dict[str, float] = {}
    for m in LATENCY_METRICS:
        latency |= latency_stats(m, np.asarray(values[m], dtype=np.float64), percentiles)
    counts = (int(ok.sum()), int((~ok).sum()), int(in_tok.sum()), int(out_tok.sum()))
    return BenchmarkMetrics(float(duration_s), *counts, latency)
