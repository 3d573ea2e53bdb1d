"""Per-point increases of the ``server_metrics`` table (Prometheus samples before and after each
point), in each counter's own units."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Prefix-cache counter pairs (hits, queries), in tokens, tried in order; a ``_total`` suffix
#: (how Prometheus exposes counters) is accepted on every name. ``vllm:prefix_cache_*`` are
#: vLLM V1's (``vllm/v1/metrics/loggers.py``); ``vllm:gpu_prefix_cache_*`` their older names.
#: Only the local (HBM) prefix cache is counted; ``vllm:external_prefix_cache_*`` (KV connector
#: tiers such as LMCache) are not.
PREFIX_CACHE_COUNTERS: tuple[tuple[str, str], ...] = (
    ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries"),
    ("vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries"),
)


def counter_deltas(server_metrics: pd.DataFrame, point_id: str) -> dict[str, float]:
    """After - before per counter (no ``_total``) over one point, summed over labels and servers; a
    counter that went down gives NaN."""
    sm = server_metrics[server_metrics["point_id"] == point_id]
    base = sm["metric"].str.removesuffix("_total")
    sums = sm.groupby([sm["server"], base, sm["phase"]])["value"].sum().unstack("phase")
    if not {"before", "after"} <= set(sums.columns):
        return {}
    d = (sums["after"] - sums["before"]).dropna()  # a counter on one server: both phases
    d[d < 0] = np.nan
    return {str(k): float(v.to_numpy().sum()) for k, v in d.groupby(level=1)}


def prefix_cache_hit_rate(server_metrics: pd.DataFrame, point_id: str) -> tuple[float, str]:
    """(hits / queries over one point, the counters used), or ``(nan, reason)``."""
    d = counter_deltas(server_metrics, point_id)
    for hits, queries in PREFIX_CACHE_COUNTERS:
        if hits in d and queries in d:
            h, q = d[hits], d[queries]
            if not (np.isfinite(h) and np.isfinite(q)):
                return np.nan, f"{hits}/{queries} went down during the point (server restart?)"
            if q <= 0:
                return np.nan, f"{queries} did not increase during the point"
            return h / q, f"{hits} / {queries}"
    names = ", ".join(h for h, _ in PREFIX_CACHE_COUNTERS)
    return np.nan, f"no prefix-cache counters ({names}) in server_metrics"
