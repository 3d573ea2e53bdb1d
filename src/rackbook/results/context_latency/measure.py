"""What context-latency measures: decode latency (TPOT, ITL; ms) per context length, its line
TPOT = a + b x context, the delta between two lengths (ms, %), and KV memory per sequence."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rackbook.core import metrics
from rackbook.core.traces import Trace, point_batch
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check

SERIES_KEYS: tuple[str, ...] = ("engine", "config", "batch")
FIT_FORMULA = r"\mathrm{TPOT} = a + b \cdot \text{context}"
DELTA_FORMULA = (
    r"\Delta = L(c_\mathrm{hi}) - L(c_\mathrm{lo}), \qquad "
    r"\Delta\% = 100 \times \Delta / L(c_\mathrm{lo})"
)


def decode_latency_by_context(trace: Trace) -> pd.DataFrame:
    """Per point with ``context_tokens``: requests, mean and median TPOT and ITL (ms; NaN: none)."""
    req = trace.requests
    ok = req["success"].to_numpy(dtype=bool)
    pid = req["point_id"].to_numpy()
    rr = trace.itl["request_row"].to_numpy()
    gaps = trace.itl["itl_s"].to_numpy(dtype=np.float64)
    pts = trace.points.assign(batch=point_batch(trace.points))
    rows = []
    for _, p in pts.iterrows():
        if pd.isna(p["context_tokens"]):
            continue
        mask = ok & (pid == p["point_id"])
        r = req[mask]
        tpot = metrics.tpot_s(
            r["ttft_s"].to_numpy(np.float64),
            r["e2el_s"].to_numpy(np.float64),
            r["output_tokens"].to_numpy(np.int64),
        )
        itl = gaps[mask[rr]] if gaps.size else gaps
        head = [*p[["point_id", "engine", "config", "batch"]], int(p["context_tokens"])]
        stats = [f(x) if x.size else np.nan for x in (tpot, itl) for f in (np.mean, np.median)]
        rows.append([*head, int(mask.sum()), *(1000 * float(x) for x in stats)])
    cols = ["point_id", "engine", "config", "batch", "context_tokens", "requests"]
    cols += ["mean_tpot_ms", "median_tpot_ms", "mean_itl_ms", "median_itl_ms"]
    out = pd.DataFrame(rows, columns=cols) if rows else pd.DataFrame()
    if out.empty:
        return out
    out["batch"] = out["batch"].astype("Int64")
    return out.sort_values(
        ["engine", "config", "batch", "context_tokens"], ignore_index=True, kind="stable"
    )


#: The latency the fit and the delta read (ms).
METRIC = "median_tpot_ms"


def _one_series(table: pd.DataFrame) -> pd.DataFrame:
    keys = [k for k in SERIES_KEYS if k in table.columns]
    if keys and len(table[keys].astype("string").drop_duplicates()) > 1:
        raise InputError(
            "-", "table", f"holds several series ({', '.join(keys)}); select one before fitting"
        )
    t = table[table[METRIC].notna()]
    if t["context_tokens"].duplicated().any():
        raise InputError("-", "table", "two rows share a context length; select one series")
    if len(t) < 2:
        raise InputError("-", "table", f"needs two context lengths, has {len(t)}")
    return t.sort_values("context_tokens", kind="stable")


#: Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom (beyond: 1.96).
_T975 = tuple(
    float(t)
    for t in """12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160
    2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048
    2.045 2.042""".split()
)


def t_975(dof: int) -> float:
    """The 97.5 % quantile of Student's t with ``dof`` >= 1 degrees of freedom."""
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


@dataclass(frozen=True)
class LinearFit:
    """latency_ms = intercept_ms + slope_ms_per_token x context; ``resolved``: 95 % CI above 0."""

    intercept_ms: float
    slope_ms_per_token: float
    r2: float
    n: int
    context_min: int
    context_max: int
    slope_ci_per_1k: tuple[float, float] = (float("nan"), float("nan"))

    @property
    def resolved(self) -> bool:
        return bool(self.slope_ci_per_1k[0] > 0)

    @property
    def slope_per_1k(self) -> float:
        return 1000 * self.slope_ms_per_token


def fit_linear(table: pd.DataFrame) -> LinearFit:
    """Least squares :data:`METRIC` (ms) = a + b x context over one series, R^2 and the slope's
    95 % CI (ms per 1k tokens)."""
    t = _one_series(table)
    x, y = t["context_tokens"].to_numpy(np.float64), t[METRIC].to_numpy(np.float64)
    b, a = np.polyfit(x, y, 1)
    res = y - (a + b * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float((res**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    ci = (float("nan"), float("nan"))
    if len(t) > 2:
        se = math.sqrt(float((res**2).sum()) / (len(t) - 2) / float(((x - x.mean()) ** 2).sum()))
        half = t_975(len(t) - 2) * se * 1000
        ci = (1000 * b - half, 1000 * b + half)
    return LinearFit(float(a), float(b), r2, len(t), int(x.min()), int(x.max()), ci)


@dataclass(frozen=True)
class Delta:
    """Measured latency change from context ``lo`` to ``hi`` (tokens) in ms and %, and which
    ``pair`` of lengths it is between."""

    lo: int
    hi: int
    lo_ms: float
    hi_ms: float
    delta_ms: float
    delta_pct: float
    pair: str


def delta(table: pd.DataFrame, lo: int, hi: int) -> Delta:
    """Latency at ``hi`` minus at ``lo`` (ms, % of ``lo``'s), else between the series' extremes."""
    by = _one_series(table).set_index("context_tokens")[METRIC]
    pair = "requested"
    if lo not in by.index or hi not in by.index:
        lo, hi, pair = int(by.index.min()), int(by.index.max()), "longest-available"
    lo_ms, hi_ms = float(by.loc[lo]), float(by.loc[hi])
    d = hi_ms - lo_ms
    return Delta(lo, hi, lo_ms, hi_ms, d, 100 * d / lo_ms if lo_ms else np.nan, pair)


def memory_by_context(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    contexts: list[int] | tuple[int, ...],
    kv_dtype: str = "fp4",
    *,
    weight_bytes_per_gpu: float,
    memory_fraction: float = 1.0,
) -> pd.DataFrame:
    """Per context length (tokens): KV bytes per sequence and sequences fitting on one GPU."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    hbm, w = g.hbm_capacity_bytes * memory_fraction, weight_bytes_per_gpu
    cap = functools.partial(check.capacity, m, g, 1, hbm=hbm, weights=w, most=math.inf)
    fits = [(int(c), cap(context=c, kv_dtype=kv_dtype, window=False)) for c in contexts]
    rows = [(c, f.per_sequence_bytes, f.sequences, f.free_bytes, f.formula) for c, f in fits]
    cols = ["context_tokens", "kv_bytes_per_sequence", "sequences_per_gpu", "free_bytes"]
    return pd.DataFrame(rows, columns=[*cols, "formula"])


def main_series(table: pd.DataFrame) -> pd.DataFrame:
    """The series (engine, config, batch) with the most context lengths that have a latency."""
    if table.empty or METRIC not in table.columns:
        raise InputError("-", "table", f"no point with context_tokens and {METRIC}")
    t = table[table[METRIC].notna()]
    if t.empty:
        raise InputError("-", METRIC, "no point has a value (requests of one output token?)")
    keys = [k for k in SERIES_KEYS if k in t.columns]
    labels = t[keys].astype("string").fillna("<NA>").agg(" | ".join, axis=1)
    order = list(dict.fromkeys(labels))
    best = max(order, key=lambda k: (labels == k).sum())  # max keeps the first of equals
    return t[labels == best].reset_index(drop=True)


def single_context(series: pd.DataFrame) -> tuple[LinearFit, Delta]:
    """The fit and delta of a one-context series: NaN slope and delta, pair ``single context``."""
    c, v, nan = int(series["context_tokens"].iloc[0]), float(series[METRIC].iloc[0]), float("nan")
    return LinearFit(v, nan, nan, 1, c, c), Delta(c, c, v, v, nan, nan, "single context")
