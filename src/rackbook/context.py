"""Decode latency against context length, and the KV-bandwidth model of its growth.

Definitions (per sweep point with a ``context_tokens`` target; successful requests):

- TPOT (ms) per request = (e2el - ttft) / (output_tokens - 1), requests with more than one
  output token (vLLM's definition, :func:`rackbook.metrics.tpot_s`); ``mean_tpot_ms`` /
  ``median_tpot_ms`` over the point's requests;
- ITL (ms): every gap between streamed chunks of the point's requests, pooled; with one token
  per chunk the ITL is the decode step time (with speculative decoding a chunk may carry
  several tokens and the ITL is longer than the TPOT);
- linear fit: least squares TPOT = a + b x context (a in ms, b in ms/token; ``slope_per_1k`` =
  1000 b in ms per 1,000 tokens);
- delta between two context lengths lo < hi: delta_ms = L(hi) - L(lo), delta_pct = 100 x
  delta_ms / L(lo).

KV model: each decode step reads every sequence's global KV once, so growing each of ``batch``
sequences from lo to hi tokens adds batch x (hi - lo) x KV bytes/token of reads per step, at
least that / (n_gpus x HBM bytes/s) seconds (:func:`rackbook.roofline.kv_read_time_s`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rackbook import catalogs, metrics, roofline
from rackbook.catalogs import GpuSpec, ModelSpec
from rackbook.decode import point_batch
from rackbook.errors import InputError
from rackbook.traces import Trace

#: The published pair (data/claims.yaml: context-latency.delta): tokens of context.
CLAIM_LO, CLAIM_HI = 128_000, 855_000
SERIES_KEYS: tuple[str, ...] = ("engine", "config", "batch")
FIT_FORMULA = r"\mathrm{TPOT} = a + b \cdot \text{context}"


def decode_latency_by_context(trace: Trace) -> pd.DataFrame:
    """One row per point with ``context_tokens``: point_id, engine, config, batch (batch size or
    concurrency), context_tokens, requests (successful), mean/median TPOT (ms) and mean/median
    ITL (ms); NaN where no request has more than one output token (or no gaps). Sorted by
    engine, config, batch, context."""
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
        rows.append(
            {
                "point_id": p["point_id"],
                "engine": p["engine"],
                "config": p["config"],
                "batch": p["batch"],
                "context_tokens": int(p["context_tokens"]),
                "requests": int(mask.sum()),
                "mean_tpot_ms": 1000 * float(tpot.mean()) if tpot.size else np.nan,
                "median_tpot_ms": 1000 * float(np.median(tpot)) if tpot.size else np.nan,
                "mean_itl_ms": 1000 * float(itl.mean()) if itl.size else np.nan,
                "median_itl_ms": 1000 * float(np.median(itl)) if itl.size else np.nan,
            }
        )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["batch"] = out["batch"].astype("Int64")
    return out.sort_values(["engine", "config", "batch", "context_tokens"], ignore_index=True)


def _one_series(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    if metric not in table.columns:
        raise InputError("-", "metric", f"{metric!r} is not a column of the table")
    keys = [k for k in SERIES_KEYS if k in table.columns]
    if keys and len(table[keys].astype("string").drop_duplicates()) > 1:
        raise InputError(
            "-",
            "table",
            f"holds several series ({', '.join(keys)}); select one before fitting",
        )
    t = table[table[metric].notna()]
    if t["context_tokens"].duplicated().any():
        raise InputError("-", "table", "two rows share a context length; select one series")
    return t.sort_values("context_tokens")


@dataclass(frozen=True)
class LinearFit:
    """Least-squares line latency_ms = intercept_ms + slope_ms_per_token x context (tokens)."""

    metric: str
    intercept_ms: float
    slope_ms_per_token: float
    r2: float
    n: int
    context_min: int
    context_max: int
    formula: str

    @property
    def slope_per_1k(self) -> float:
        """Slope in ms per 1,000 context tokens."""
        return 1000 * self.slope_ms_per_token

    def predict(self, context_tokens: float) -> float:
        """Fitted latency (ms) at ``context_tokens``."""
        return self.intercept_ms + self.slope_ms_per_token * context_tokens


def fit_linear(table: pd.DataFrame, metric: str = "median_tpot_ms") -> LinearFit:
    """Least squares ``metric`` (ms) = a + b x context_tokens over one series of
    :func:`decode_latency_by_context` (one engine/config/batch; at least two context
    lengths). r2 = 1 - SS_res / SS_tot (1.0 when all latencies are equal and fitted)."""
    t = _one_series(table, metric)
    if len(t) < 2:
        raise InputError("-", "table", f"needs two context lengths to fit, has {len(t)}")
    x = t["context_tokens"].to_numpy(np.float64)
    y = t[metric].to_numpy(np.float64)
    b, a = np.polyfit(x, y, 1)
    res = y - (a + b * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float((res**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    formula = (
        f"{metric} = {a:.4g} ms + {b * 1000:.4g} ms per 1k tokens x context "
        f"(least squares over {len(t)} points, {int(x.min()):,}..{int(x.max()):,} tokens, "
        f"R^2 = {r2:.3f})"
    )
    return LinearFit(metric, float(a), float(b), r2, len(t), int(x.min()), int(x.max()), formula)


@dataclass(frozen=True)
class Delta:
    """Latency change between context lengths ``lo`` and ``hi`` (tokens): ms and percent.

    ``source``: ``measured`` (table rows) or ``fit``; ``pair``: ``requested`` (lo and hi as
    asked), ``longest-available`` (the table's shortest and longest contexts instead), or
    ``extrapolated`` (a fit evaluated outside the contexts it was fitted on).
    """

    lo: int
    hi: int
    lo_ms: float
    hi_ms: float
    delta_ms: float
    delta_pct: float
    source: str
    pair: str
    formula: str


def delta(
    table_or_fit: pd.DataFrame | LinearFit,
    lo: int = CLAIM_LO,
    hi: int = CLAIM_HI,
    metric: str = "median_tpot_ms",
) -> Delta:
    """Latency at ``hi`` minus latency at ``lo`` (ms) and in % of the latency at ``lo``.

    From a table (one series of :func:`decode_latency_by_context`): the measured ``metric`` at
    both lengths when the trace has both, else at the shortest and longest contexts it has
    (``pair = "longest-available"``). From a :class:`LinearFit`: fitted values at lo and hi.
    """
    if not lo < hi:
        raise InputError("-", "hi", f"must be above lo ({lo}), got {hi}")
    if isinstance(table_or_fit, LinearFit):
        f = table_or_fit
        lo_ms, hi_ms = f.predict(lo), f.predict(hi)
        inside = f.context_min <= lo and hi <= f.context_max
        source, pair = "fit", ("requested" if inside else "extrapolated")
    else:
        t = _one_series(table_or_fit, metric)
        if len(t) < 2:
            raise InputError("-", "table", f"needs two context lengths, has {len(t)}")
        by = t.set_index("context_tokens")[metric]
        if lo in by.index and hi in by.index:
            pair = "requested"
        else:
            lo, hi, pair = int(by.index.min()), int(by.index.max()), "longest-available"
        lo_ms, hi_ms = float(by.loc[lo]), float(by.loc[hi])
        source = "measured"
    d = hi_ms - lo_ms
    pct = 100 * d / lo_ms if lo_ms else np.nan
    formula = (
        f"{metric}: {hi_ms:.4g} ms at {hi:,} - {lo_ms:.4g} ms at {lo:,} = {d:+.4g} ms "
        f"({pct:+.3g} %) [{source}, {pair}]"
    )
    return Delta(lo, hi, lo_ms, hi_ms, d, pct, source, pair, formula)


# ----------------------------------------------------------------------------- KV model


@dataclass(frozen=True)
class KvBandwidth:
    """Extra KV bytes each decode step reads when ``batch`` sequences grow from lo to hi tokens,
    and the least extra time (seconds) that costs at the HBM bandwidth of ``n_gpus`` GPUs."""

    lo: int
    hi: int
    batch: int
    kv_bytes_per_token: int
    bytes_per_sequence_lo: int
    bytes_per_sequence_hi: int
    extra_bytes: float
    extra_s: float
    formula: str

    @property
    def extra_ms(self) -> float:
        return 1000 * self.extra_s


def kv_bandwidth_model(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    lo: int = CLAIM_LO,
    hi: int = CLAIM_HI,
    kv_dtype: str = "fp4",
    n_gpus: int = 1,
    batch: int = 1,
) -> KvBandwidth:
    """Extra global-KV bytes per decode step = batch x (hi - lo) x KV bytes/token, and the time
    to stream them = bytes / (n_gpus x HBM bytes/s) (:func:`rackbook.roofline.kv_read_time_s`).

    ``n_gpus`` is the GPUs whose bandwidth shares the reads: 1 when each sequence's KV lives on
    one GPU (data-parallel attention), more when a sequence's KV is split (context parallel).
    DeepSeek-V4.1-Flash, FP4 KV, 128k -> 855k, batch 1, one B300: 647.03 MB, 80.88 us.
    """
    m = catalogs.load_model(model) if isinstance(model, str) else model
    if not 0 <= lo < hi:
        raise InputError("-", "hi", f"need 0 <= lo < hi, got lo={lo}, hi={hi}")
    if batch < 1:
        raise InputError("-", "batch", f"must be >= 1, got {batch}")
    step = roofline.kv_read_time_s(batch * (hi - lo), m, hw, kv_dtype, n_gpus)
    formula = f"{batch} sequence(s) x ({hi:,} - {lo:,}) = {step.formula}"
    return KvBandwidth(
        lo,
        hi,
        batch,
        roofline.kv_bytes_per_token(m, kv_dtype),
        roofline.kv_bytes_per_sequence(m, lo, kv_dtype),
        roofline.kv_bytes_per_sequence(m, hi, kv_dtype),
        step.bytes,
        step.seconds,
        formula,
    )


def memory_by_context(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    contexts: list[int] | tuple[int, ...] = (CLAIM_LO, CLAIM_HI),
    kv_dtype: str = "fp4",
    *,
    weight_bytes_per_gpu: float,
    memory_fraction: float = 1.0,
) -> pd.DataFrame:
    """Per context length (tokens): global KV bytes per sequence
    (:func:`rackbook.roofline.kv_bytes_per_sequence`) and sequences whose KV fits on one GPU
    after ``weight_bytes_per_gpu`` bytes of weights (:func:`rackbook.roofline.sequences_fitting`;
    the weight bytes depend on the parallel layout and must be given)."""
    m = catalogs.load_model(model) if isinstance(model, str) else model
    rows = []
    for c in contexts:
        fit = roofline.sequences_fitting(
            m,
            hw,
            c,
            kv_dtype,
            weight_bytes_per_gpu=weight_bytes_per_gpu,
            memory_fraction=memory_fraction,
        )
        rows.append(
            {
                "context_tokens": int(c),
                "kv_bytes_per_sequence": fit.bytes_per_sequence,
                "sequences_per_gpu": fit.sequences,
                "free_bytes": fit.free_bytes,
                "formula": fit.formula,
            }
        )
    return pd.DataFrame(rows)
