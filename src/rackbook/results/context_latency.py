"""Decode latency against context length, and the KV-bandwidth model of its growth.

Definitions (per sweep point with a ``context_tokens`` target; successful requests):

- TPOT (ms) per request = (e2el - ttft) / (output_tokens - 1), requests with more than one
  output token (vLLM's definition, :func:`rackbook.core.metrics.tpot_s`); ``mean_tpot_ms`` /
  ``median_tpot_ms`` over the point's requests;
- ITL (ms): every gap between streamed chunks of the point's requests, pooled; with one token
  per chunk the ITL is the decode step time (with speculative decoding a chunk may carry
  several tokens and the ITL is longer than the TPOT);
- linear fit: least squares TPOT = a + b x context (a in ms, b in ms/token; ``slope_per_1k`` =
  1000 b in ms per 1,000 tokens);
- delta between two context lengths lo < hi: delta_ms = L(hi) - L(lo), delta_pct = 100 x
  delta_ms / L(lo).

Physics (:mod:`rackbook.physics.roofline`): a decode step of DeepSeek-V4.1-Flash does not read
all of a sequence's stored KV. Its sparse attention scans every index key (about 170 B per
context token at FP4) and then reads a fixed number of top-k rows, so what grows with context is
mostly the scan; dense attention over every row would read about 8.5 kB per context token. Both
ends are shown (:func:`rackbook.physics.roofline.context_growth`), each with its assumption.

The published figures (bytes per token, the delta in ms and in %, their tolerances and the pair
of context lengths) come from the claims registry (``data/claims.yaml``): :func:`analyse` reads
them; the functions below take them as arguments.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import metrics, validity
from rackbook.core.traces import Trace, point_batch
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.physics import check, results_bounds, roofline
from rackbook.physics.units import plural
from rackbook.results import evidence, headline, verdicts

RESULT = "context-latency"
#: The claims this chapter tests (data/claims.yaml): bytes per token of the global KV cache,
#: and the decode-latency delta between two context lengths, in ms and in %.
KV_BYTES_ID = "context-latency.kv-bytes"
DELTA_ID = "context-latency.delta"
DELTA_PCT_ID = "context-latency.delta-pct"

SERIES_KEYS: tuple[str, ...] = ("engine", "config", "batch")
FIT_FORMULA = r"\mathrm{TPOT} = a + b \cdot \text{context}"
DELTA_FORMULA = (
    r"\Delta = L(c_\mathrm{hi}) - L(c_\mathrm{lo}), \qquad "
    r"\Delta\% = 100 \times \Delta / L(c_\mathrm{lo})"
)
KV_READ_FORMULA = (
    r"t_\mathrm{KV} \geq \frac{B \times (c_\mathrm{hi} - c_\mathrm{lo}) \times "
    r"\text{KV bytes/token}}{G \times \text{HBM bytes/s}}"
)


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
    return out.sort_values(
        ["engine", "config", "batch", "context_tokens"], ignore_index=True, kind="stable"
    )


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
    return t.sort_values("context_tokens", kind="stable")


#: Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom (beyond: 1.96).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t_975(dof: int) -> float:
    """The 97.5 % quantile of Student's t with ``dof`` degrees of freedom (95 % two-sided)."""
    if dof < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {dof}")
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


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
    slope_ci_per_1k: tuple[float, float] = (float("nan"), float("nan"))

    @property
    def resolved(self) -> bool:
        """True when the 95 % confidence interval of the slope is above zero: the trace
        resolves a growth of latency with context."""
        return bool(self.slope_ci_per_1k[0] > 0)

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
    ci = (float("nan"), float("nan"))
    if len(t) > 2:
        se = math.sqrt(float((res**2).sum()) / (len(t) - 2) / float(((x - x.mean()) ** 2).sum()))
        half = t_975(len(t) - 2) * se * 1000
        ci = (1000 * b - half, 1000 * b + half)
    formula = (
        f"{metric} = {a:.4g} ms + {b * 1000:.4g} ms per 1k tokens x context "
        f"(least squares over {len(t)} points, {int(x.min()):,}..{int(x.max()):,} tokens, "
        f"R^2 = {r2:.3f}; slope 95 % CI {ci[0]:.3g} to {ci[1]:.3g} ms per 1k tokens)"
    )
    return LinearFit(
        metric, float(a), float(b), r2, len(t), int(x.min()), int(x.max()), formula, ci
    )


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
    lo: int,
    hi: int,
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


# ----------------------------------------------------------------------------- memory


def memory_by_context(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    contexts: list[int] | tuple[int, ...],
    kv_dtype: str = "fp4",
    *,
    weight_bytes_per_gpu: float,
    memory_fraction: float = 1.0,
) -> pd.DataFrame:
    """Per context length (tokens): global KV bytes per sequence
    (:func:`rackbook.physics.roofline.kv_bytes_per_sequence`) and sequences whose KV fits on one GPU
    after ``weight_bytes_per_gpu`` bytes of weights
    (:func:`rackbook.physics.roofline.sequences_fitting`;
    the weight bytes depend on the parallel layout and must be given)."""
    m = catalogs.as_model(model)
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


def main_series(table: pd.DataFrame, metric: str = "median_tpot_ms") -> pd.DataFrame:
    """The one series (engine, config, batch) of
    :func:`rackbook.results.context_latency.decode_latency_by_context`
    with the most context lengths that have ``metric``; ties go to the first in table order.
    Rows without ``metric`` are dropped."""
    if table.empty or metric not in table.columns:
        raise InputError("-", "table", f"no point with context_tokens and {metric}")
    t = table[table[metric].notna()]
    if t.empty:
        raise InputError("-", metric, "no point has a value (requests of one output token?)")
    keys = [k for k in SERIES_KEYS if k in t.columns]
    labels = t[keys].astype("string").fillna("<NA>").agg(" | ".join, axis=1)
    order = list(dict.fromkeys(labels))
    best = max(order, key=lambda k: (labels == k).sum())  # max keeps the first of equals
    return t[labels == best].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# readings of the claims

#: GPUs one copy of the routed experts is spread over by default (the memory table): a GB300
#: tray of 4 GPUs, the smallest unit the rack's engines place experts on.
DEFAULT_WEIGHT_GPUS = 4


def evidence_kind(trace_kind: str) -> str:
    """Headline kind of a number read from a trace: ``recorded`` -> ``measured``; ``published``
    and ``synthetic`` keep their names."""
    kinds = {"recorded": "measured", "published": "published", "synthetic": "synthetic"}
    if trace_kind not in kinds:
        raise InputError("run.json", "kind", f"{trace_kind!r} is not one of {', '.join(kinds)}")
    return kinds[trace_kind]


def kv_bytes_physics(kvb: roofline.KvBytes, claim: float) -> headline.ClaimReading:
    """The bytes-per-token claim against the layout's arithmetic (dimensions and storage
    formats of the catalog, :func:`rackbook.physics.roofline.kv_bytes`): ``possible`` when the
    arithmetic gives the claimed count (to the byte), else ``impossible`` for that layout."""
    got = kvb.bytes_per_token
    if got == round(claim):
        return headline.ClaimReading(
            KV_BYTES_ID,
            "physics",
            "possible",
            f"{got} B/token derived",
            f"the catalog's dimensions and {kvb.kv_dtype} formats give {got} B/token: "
            f"{_frac_text(kvb.rows_per_token)} rows x {_frac_text(kvb.row_bytes)} B",
        )
    return headline.ClaimReading(
        KV_BYTES_ID,
        "physics",
        "impossible",
        f"{got} B/token derived",
        f"the catalog's dimensions and {kvb.kv_dtype} formats give {got} B/token, not "
        f"{claim:g}: a different layout or storage format is meant",
    )


def _frac_text(x: Any) -> str:
    f = float(x)
    return f"{f:g}"


#: Where a recorded trace may carry the KV bytes per token its engine reported at start-up
#: (vLLM logs the KV cache's memory and its capacity in tokens; their ratio), under
#: run.json ``metrics``.
KV_BYTES_KEY = "kv_cache_bytes_per_token"


def kv_bytes_in_run(run: dict[str, Any]) -> float | None:
    """The KV bytes per token a recorded run reports (run.json ``metrics`` or ``parameters``
    under :data:`KV_BYTES_KEY`), or None."""
    for where in ("metrics", "parameters"):
        d = run.get(where)
        if isinstance(d, dict) and isinstance(d.get(KV_BYTES_KEY), (int, float)):
            return float(d[KV_BYTES_KEY])
    return None


def kv_bytes_run_reading(
    run: dict[str, Any], testable: bool, claim: float, rel_tol: float
) -> headline.ClaimReading:
    """This run's reading of the bytes per token: ``untested`` unless the trace can test the
    claim (:func:`rackbook.results.verdicts.can_test`) and reports the KV bytes per token its
    engine allocated (:func:`kv_bytes_in_run`); then ``consistent`` within ``rel_tol`` (a
    fraction) of the claim, else ``inconsistent``. A latency trace alone does not measure it."""
    got = kv_bytes_in_run(run)
    if testable and got is None:
        return headline.ClaimReading(
            KV_BYTES_ID,
            "this run",
            "untested",
            "-",
            f"the trace does not report the engine's KV bytes per token (run.json metrics."
            f"{KV_BYTES_KEY}, from vLLM's start-up log of KV memory over KV tokens)",
        )
    return verdicts.run_reading(
        KV_BYTES_ID,
        got,
        claim,
        rel_tol,
        testable=testable,
        what=f"{got:,.0f} B/token reported" if got is not None else "a latency trace",
        run=run,
        needs="vLLM's KV bytes per token of DeepSeek-V4.1-Flash on B300/GB300",
    )


@dataclass(frozen=True)
class GrowthReading:
    """The claimed delta against the extra context reads of a decode step (ms): the sparse
    floor of ``batch`` sequences, the dense bound, and how many sequences' scans the claim
    equals; ``reading`` is the physics reading."""

    growth: roofline.ContextGrowth
    claim_ms: float
    per_sequence_ms: float
    sequences_to_explain: float
    reading: headline.ClaimReading
    compute_ms: float = 0.0

    @property
    def share(self) -> float:
        """Sparse floor over the claimed delta."""
        return self.growth.sparse_ms / self.claim_ms


def growth_attainable(
    model: ModelSpec, hw: GpuSpec, gpus: int, lo: int, hi: int, claim_ms: float, batch: int = 1
) -> dict[str, Any]:
    """What measured kernels add to a decode step of ``batch`` sequences on ``gpus`` GPUs when
    the context grows from ``lo`` to ``hi`` tokens (:func:`rackbook.physics.attainable.estimate`
    at both contexts, step time difference; seconds inside, ms and µs in the text); ``ratio``
    is the claimed delta over it."""
    from rackbook.physics import attainable

    steps = []
    for ctx in (lo, hi):
        a = attainable.estimate(
            model, hw, gpus, claimed=1.0, phase="decode", batch=batch, context=ctx
        )
        steps.append(sum(a.estimates["decode"].parts.values()))
    added = steps[1] - steps[0]
    ratio = 1e-3 * claim_ms / added if added > 0 else None
    text = (
        f"measured kernels step {plural(batch, 'sequence')} on {gpus} {hw.id} in "
        f"{1e3 * steps[0]:.3g} ms at {lo:,} tokens and add {1e6 * added:,.0f} µs by {hi:,}"
        + (f": the claimed {claim_ms:g} ms is {ratio:.2g}x that" if ratio else "")
        + f" ({a.deployment}; {a.calibration})"
    )
    return {
        "tok_s_per_gpu": batch / steps[0] / gpus if steps[0] > 0 else None,
        "ratio": ratio,
        "deployment": a.deployment,
        "calibration": a.calibration,
        "binding": a.binding,
        "text": text,
        "added_s": added,
        "step_lo_s": steps[0],
        "brief": f"{ratio:.2g}x what measured kernels add for one sequence" if ratio else "",
    }


def growth_physics(
    growth: roofline.ContextGrowth,
    claim_ms: float,
    compute_ms: float = 0.0,
    attainable: dict[str, Any] | None = None,
) -> GrowthReading:
    """Physics of "+``claim_ms`` from lo to hi tokens": the least extra time is the sparse
    reading's extra bytes (mostly the index-key scan) over the HBM bandwidth; ``impossible``
    when that floor exceeds the claim, ``undetermined`` within the modelling margin below it,
    ``possible`` below. Compute of the indexer and attention add to it, so the floor does not
    bound the claim from above; the dense bound (every row read) shows the other end."""
    if not claim_ms > 0:
        raise InputError("-", "claim_ms", f"must be > 0, got {claim_ms}")
    floor = growth.sparse_ms
    per_seq = floor / growth.batch
    n_seq = claim_ms / per_seq if per_seq > 0 else math.inf
    ratio = floor / claim_ms
    v = check.physics_verdict(ratio)
    span = f"{growth.lo:,} -> {growth.hi:,} tokens"
    if v == "possible":
        both = floor + compute_ms
        reason = (
            f"sparse reads add at least {1000 * floor:.3g} µs ({100 * ratio:.2g} % of "
            f"{claim_ms:g} ms, {plural(growth.batch, 'sequence')}) and the longer index scan's "
            f"compute at least {1000 * compute_ms:.3g} µs more: {1000 * both:.3g} µs of the "
            f"{1000 * claim_ms:.0f} µs even with none of it overlapped; reading every row would "
            f"add {1000 * growth.dense_ms:,.0f} µs. The rest is not this sequence's indexer at "
            f"peak: about {claim_ms / both:.0f} to {n_seq:.1f} sequences per GPU growing "
            "together, kernels well below peak, or work the bounds leave out"
        )
    else:
        reason = (
            f"the extra index-key scan of {plural(growth.batch, 'sequence')} over {span} alone "
            "takes "
            f"{1000 * floor:,.0f} µs, {ratio:.3g}x the claimed {claim_ms:g} ms"
        )
    r = headline.ClaimReading(
        DELTA_ID, "physics", v, f"floor {100 * ratio:.2g} % of it", reason, attainable=attainable
    )
    return GrowthReading(growth, claim_ms, per_seq, n_seq, r, compute_ms)


@dataclass(frozen=True)
class ImpliedLatency:
    """The decode latency at the shorter context that the two published figures imply together
    (100 x delta / percent, ms), its range over both figures' rounding, and the least step
    time the model allows there (ms); ``reading`` is the physics reading of the percent claim."""

    central_ms: float
    low_ms: float
    high_ms: float
    step_floor_ms: float
    step_formula: str
    reading: headline.ClaimReading


def implied_latency_physics(
    claim_ms: float,
    tol_ms: float,
    claim_pct: float,
    tol_pct: float,
    model: ModelSpec,
    hw: GpuSpec,
    gpus: int,
    lo: int,
    kv_dtype: str,
) -> ImpliedLatency:
    """The latency at ``lo`` the percent claim implies, ``100 x claim_ms / claim_pct``, over
    the rounding of both figures: (ms - tol) / (pct + tol) to (ms + tol) / (pct - tol)
    (0.55 / 7.5 % = 7.33 ms to 0.65 / 6.5 % = 10.0 ms). Physics: one sequence decoding on
    ``gpus`` GPUs cannot step faster than streaming its share of the weights and context
    (:func:`rackbook.physics.check.memory_ceiling`); ``impossible`` when even the longest
    implied latency is below that floor."""
    if not (claim_pct > tol_pct >= 0 and claim_ms > tol_ms >= 0):
        raise InputError("-", "claim", "delta and percent must exceed their tolerances")
    central = 100 * claim_ms / claim_pct
    low = 100 * (claim_ms - tol_ms) / (claim_pct + tol_pct)
    high = 100 * (claim_ms + tol_ms) / (claim_pct - tol_pct)
    ceil = check.memory_ceiling(model, hw, gpus, 1, context=lo, kv_dtype=kv_dtype)
    step_ms = 1000 / (ceil.tok_s_per_gpu * gpus)
    ratio = step_ms / high
    v = check.physics_verdict(ratio)
    reason = (
        f"the two figures imply {low:.3g} to {high:.3g} ms per step at {lo:,} tokens; one "
        f"sequence on {plural(gpus, hw.id.upper())} cannot step faster than {step_ms:.3g} ms"
    )
    r = headline.ClaimReading(
        DELTA_PCT_ID, "physics", v, f"implied {low:.3g}-{high:.3g} ms", reason
    )
    return ImpliedLatency(central, low, high, step_ms, ceil.formula, r)


def delta_run_reading(
    d: Delta, testable: bool, run: dict[str, Any], fit: LinearFit | None, *, claim: float,
    tolerance: float, claim_id: str, percent: bool = False,
) -> headline.ClaimReading:  # fmt: skip
    """This run's reading of the claimed delta (ms, or % with ``percent``) from a measured
    :class:`Delta`: ``untested`` unless the trace can test the claim (Blackwell Ultra GPUs,
    DeepSeek-V4.1-Flash) and holds both claimed lengths; then ``consistent`` when the measured
    value is within ``tolerance`` (same unit) of the claim, else ``inconsistent``."""
    value = d.delta_pct if percent else d.delta_ms
    unit = "%" if percent else "ms"
    what = f"{value:+.3g} {unit} from {d.lo:,} to {d.hi:,} tokens"
    if d.pair == "single context":
        what = f"one context length ({d.lo:,} tokens): no delta; record at least two"
    if fit is not None and math.isfinite(fit.slope_ci_per_1k[0]) and not fit.resolved:
        what += ", a slope not resolved from zero"
    needs = "DeepSeek-V4.1-Flash on B300/GB300 at 128k and 855k tokens of context"
    if not testable:
        return headline.untested(claim_id, f"{verdicts.hardware(run)} ({what})", needs)
    if d.pair != "requested":
        return headline.ClaimReading(
            claim_id, "this run", "untested", "-", f"{what} ({d.pair}): lacks the claimed lengths"
        )
    ok = abs(value - claim) <= tolerance
    return headline.ClaimReading(
        claim_id,
        "this run",
        "consistent" if ok else "inconsistent",
        f"{value - claim:+.3g} {unit}",
        f"{what}, claim {claim:+g} {unit} (tolerance {tolerance:g})",
    )


def single_context(series: pd.DataFrame, metric: str = "median_tpot_ms") -> tuple[LinearFit, Delta]:
    """The fit and delta of a series with one context length: nothing to fit (slope and
    delta unknown, NaN) and the pair marked ``single context``, so every reading of the
    delta is untested and says why."""
    c, v = int(series["context_tokens"].iloc[0]), float(series[metric].iloc[0])
    nan = float("nan")
    why = f"{metric}: {v:.4g} ms at {c:,} tokens only: one context length, no fit, no delta"
    fit = LinearFit(metric, v, nan, nan, 1, c, c, why)
    return fit, Delta(c, c, v, v, nan, nan, "measured", "single context", why)


def claimed_span(registry: Registry) -> tuple[int, int]:
    """The pair of context lengths (tokens) of the published delta: the scope
    ``context_tokens.low`` / ``.high`` of :data:`DELTA_ID`."""
    span = registry.get(DELTA_ID).scope.context_tokens
    if span is None:
        raise InputError(registry.path, f"claims[{DELTA_ID}].scope.context_tokens", "not stated")
    return span.low, span.high


# --------------------------------------------------------------------------------------------
# The chapter


@dataclass(frozen=True)
class Params(headline.Params):
    """The chapter's analysis parameters (the notebook's ``parameters`` cell): the model entry,
    GPU entry and KV-cache dtype of the arithmetic; the pair of context lengths ``lo`` < ``hi``
    (tokens; ``None``: the registry's pair); sequences per GPU growing from lo to hi and GPUs
    sharing one sequence's reads (context growth); GPUs one copy of the routed experts is spread
    over (weights per GPU: dense weights on every GPU plus that share of the experts), weight
    bytes per GPU (``None``: derived from the model entry), the share of HBM vLLM may use, and
    the relative tolerance of KV bytes per token a trace reports (block rounding)."""

    model_id: str = "deepseek-v4.1-flash"
    gpu_id: str = "gb300"
    kv_dtype: str = "fp4"
    lo: int | None = None
    hi: int | None = None
    batch: int = 1
    n_gpus: int = 1
    weight_gpus: int = DEFAULT_WEIGHT_GPUS
    weight_bytes_per_gpu: float | None = None
    memory_fraction: float = 0.9
    kv_rel_tol: float = 0.02


@dataclass
class Analysis:
    """Everything the chapter shows: the KV bytes per token at every dtype, memory per sequence
    and sequences per GPU over a grid of contexts, decode latency against context (the trace's
    main series, its fit and the delta), the context growth of a decode step at both ends, the
    latency the claims imply, the three readings of each claim, and the values its prose
    quotes."""

    trace: Trace
    params: Params
    claim_kv: Claim
    claim_delta: Claim
    claim_pct: Claim
    lo: int
    hi: int
    model: ModelSpec
    hw: GpuSpec
    kv_bytes: dict[str, roofline.KvBytes]
    weights: roofline.Storage
    w_per_gpu: float
    memory: dict[str, pd.DataFrame]
    table: pd.DataFrame
    series: pd.DataFrame
    fit: LinearFit
    measured: Delta
    growth: GrowthReading
    implied: ImpliedLatency
    tolerance_ms: float
    readings: list[headline.ClaimReading]
    hardware: str
    kind: str

    @property
    def kv_bytes_per_token(self) -> int:
        """Global KV bytes per token at the chapter's dtype."""
        return self.kv_bytes[self.params.kv_dtype].bytes_per_token

    @property
    def kv_table(self) -> pd.DataFrame:
        """One row per dtype: rows per token, KV and indexer row bytes, bytes per token."""
        return pd.DataFrame(
            {
                "kv_dtype": d,
                "rows_per_token": float(b.rows_per_token),
                "kv_row_bytes": float(b.kv_row_bytes),
                "indexer_row_bytes": float(b.indexer_row_bytes),
                "bytes_per_token": b.bytes_per_token,
            }
            for d, b in self.kv_bytes.items()
        )

    @property
    def reads_table(self) -> pd.DataFrame:
        """Context bytes one decode step reads per sequence at lo and hi, at both ends (MB)."""
        rows = []
        for c in (self.lo, self.hi):
            r = roofline.decode_kv_reads(self.model, c, self.params.kv_dtype)
            rows.append(
                {
                    "context_tokens": c,
                    "stored_mb": roofline.kv_bytes_per_sequence(self.model, c, r.kv_dtype) / 1e6,
                    "sparse_read_mb": r.sparse_bytes / 1e6,
                    "dense_read_mb": r.dense_bytes / 1e6,
                }
            )
        return pd.DataFrame(rows)

    @property
    def at(self) -> pd.DataFrame:
        """Memory per sequence at the chapter's dtype, indexed by context (tokens)."""
        return self.memory[self.params.kv_dtype].set_index("context_tokens")

    @property
    def weights_note(self) -> str:
        """How the weight bytes per GPU were obtained (derived, with the arithmetic, or given)."""
        if self.params.weight_bytes_per_gpu is None:
            return (
                f"{self.weights.formula}; per GPU: dense + routed / {self.params.weight_gpus} = "
                f"{self.w_per_gpu / 1e9:.1f} GB"
            )
        return f"given: {self.w_per_gpu:.4g} B per GPU"

    @property
    def latency_table(self) -> pd.DataFrame:
        """The main series' TPOT and ITL per context length, as the chapter shows it."""
        cols = ["context_tokens", "requests", "mean_tpot_ms", "median_tpot_ms", "median_itl_ms"]
        return self.series[cols].round(3)

    @property
    def pair_note(self) -> str:
        """Which pair of contexts the measured delta uses, in words."""
        d = self.measured
        if d.pair == "requested":
            return "the requested pair"
        return (
            f"the longest pair the trace has ({d.lo:,} and {d.hi:,} tokens), because it "
            f"does not reach {self.lo:,} and {self.hi:,}"
        )

    @property
    def rerun_contexts(self) -> list[int]:
        """Prompt lengths (tokens) of the live rerun: lo, 2 lo, 4 lo and hi."""
        return sorted({self.lo, 2 * self.lo, 4 * self.lo, self.hi})

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        m, kvb, at, d, f = self.model, self.kv_bytes, self.at, self.measured, self.fit
        b = kvb[self.params.kv_dtype]
        g, im = self.growth, self.implied
        reads = self.reads_table.set_index("context_tokens")
        return {
            "claim_kv": int(self.claim_kv.value or 0),
            "claim_delta_ms": float(self.claim_delta.value or 0),
            "claim_pct": float(self.claim_pct.value or 0),
            "lo": int(self.lo),
            "hi": int(self.hi),
            "window": int(m.architecture.sliding_window or 0),
            "owning_layers": ", ".join(map(str, m.kv_cache.owning_layers or [])),
            "consumers": ", ".join(map(str, m.kv_cache.consumers or [])),
            "n_layers": int(m.architecture.num_layers or 0),
            "backbone_b": (m.params.backbone or 0) / 1e9,
            "hardware": self.hardware,
            "trace_kind": self.trace.kind,
            "kv_bytes": int(b.bytes_per_token),
            "kv_dtype": self.params.kv_dtype,
            "rows_per_token": float(b.rows_per_token),
            "kv_row": float(b.kv_row_bytes),
            "idx_row": float(b.indexer_row_bytes),
            "kv_fp8": int(kvb["fp8"].bytes_per_token),
            "kv_bf16": int(kvb["bf16"].bytes_per_token),
            "weights_total_gb": self.weights.total_bytes / 1e9,
            "weight_gpus": int(self.params.weight_gpus),
            "w_per_gpu_gb": self.w_per_gpu / 1e9,
            "weights_routed_gb": self.weights.routed_bytes / 1e9,
            "weights_dense_gb": self.weights.dense_bytes / 1e9,
            "moe_layers": int(m.moe.num_moe_layers or 0),
            "hbm_gb": self.hw.hbm_capacity_bytes / 1e9,
            "mem_frac": float(self.params.memory_fraction),
            "seq_lo_mb": float(at.loc[self.lo, "kv_bytes_per_sequence"]) / 1e6,
            "seq_hi_mb": float(at.loc[self.hi, "kv_bytes_per_sequence"]) / 1e6,
            "fit_lo": int(at.loc[self.lo, "sequences_per_gpu"]),
            "fit_hi": int(at.loc[self.hi, "sequences_per_gpu"]),
            "sparse_lo_mb": float(reads.loc[self.lo, "sparse_read_mb"]),
            "sparse_hi_mb": float(reads.loc[self.hi, "sparse_read_mb"]),
            "dense_hi_mb": float(reads.loc[self.hi, "dense_read_mb"]),
            "n_points": int(len(self.series)),
            "ctx_min": int(f.context_min),
            "ctx_max": int(f.context_max),
            "slope_1k": float(f.slope_per_1k),
            "slope_ci_lo": float(f.slope_ci_per_1k[0]),
            "slope_ci_hi": float(f.slope_ci_per_1k[1]),
            "slope_resolved": "resolved" if f.resolved else "not resolved",
            "intercept": float(f.intercept_ms),
            "r2": float(f.r2),
            "d_lo": int(d.lo),
            "d_hi": int(d.hi),
            "d_lo_ms": float(d.lo_ms),
            "d_hi_ms": float(d.hi_ms),
            "d_ms": float(d.delta_ms),
            "d_pct": float(d.delta_pct),
            "pair_note": self.pair_note,
            "sparse_us": 1000 * g.growth.sparse_ms,
            "dense_us": 1000 * g.growth.dense_ms,
            "sparse_share_pct": 100 * g.share,
            "dense_share_pct": 100 * g.growth.dense_ms / g.claim_ms,
            "seq_explain": float(g.sequences_to_explain),
            "compute_growth_us": 1000 * g.compute_ms,
            "seq_explain_both": g.claim_ms / (g.growth.sparse_ms + g.compute_ms),
            "hbm_tbs": self.hw.hbm_bandwidth_bytes_per_s / 1e12,
            "batch": int(self.params.batch),
            "kv_gpus": int(self.params.n_gpus),
            "implied_ms": im.central_ms,
            "implied_low_ms": im.low_ms,
            "implied_high_ms": im.high_ms,
            "step_floor_ms": im.step_floor_ms,
            "implied_x_floor": im.low_ms / im.step_floor_ms,
            "scan_b": float(self.reads_lo.scan_bytes_per_token),
            "dense_b": float(self.reads_lo.dense_bytes_per_token),
            "topk": int(m.attention.index_topk if m.attention else 0),
            "slope_sentence": self.slope_sentence,
            "batch_text": plural(self.params.batch, "sequence"),
            "itl_median_us": 1000 * float(self.series["median_itl_ms"].median()),
        }

    @property
    def reads_lo(self) -> roofline.KvReads:
        """The context reads of one decode step at ``lo`` (per-token rates of both ends)."""
        return roofline.decode_kv_reads(self.model, self.lo, self.params.kv_dtype)

    @property
    def slope_sentence(self) -> str:
        """What the fit's slope says, in one sentence: resolved from zero or not (95 % CI)."""
        f, d = self.fit, self.measured
        ci = f"{f.slope_ci_per_1k[0]:.3g} to {f.slope_ci_per_1k[1]:.3g} ms per 1,000 tokens"
        if f.resolved:
            return (
                f"The 95 % confidence interval of the slope, {ci}, excludes zero: on this trace "
                f"decode latency grows by about {f.slope_per_1k:.3g} ms per 1,000 tokens."
            )
        who = "this trace" if verdicts.gpu_names(self.trace.run) else "the CPU stand-in"
        if not math.isfinite(f.slope_ci_per_1k[0]):
            ci = "unknown with two points"
        return (
            f"The 95 % confidence interval of the slope ({ci}) includes zero: {who} cannot "
            f"resolve whether decode latency grows with context at these lengths, so its "
            f"delta of {d.delta_ms:+.3g} ms is noise, not a finding."
        )


def analyse(trace: Trace, params: Params = Params(), registry: Registry | None = None) -> Analysis:
    """The chapter's analysis: KV bytes per token at every dtype against the claimed bytes,
    memory per sequence over a grid of contexts, the trace's decode latency against context
    (main series, fit, delta between lo and hi or the longest pair it has), the context growth
    of a decode step at both ends against the claimed delta, and the latency the two claims
    imply. The published figures, their tolerances and (unless ``params.lo`` / ``params.hi``
    are set) the pair of contexts come from the claims registry."""
    trace = validity.valid_trace(trace)[0]  # flagged requests left out (core.validity)
    p = params
    reg = registry or load_claims()
    span = claimed_span(reg)
    lo = int(p.lo) if p.lo is not None else span[0]
    hi = int(p.hi) if p.hi is not None else span[1]
    claim_ms, claim_pct = reg.value(DELTA_ID), reg.value(DELTA_PCT_ID)
    tol_ms, tol_pct = reg.tolerance(DELTA_ID), reg.tolerance(DELTA_PCT_ID)
    m, hw = catalogs.as_model(p.model_id), catalogs.as_gpu(p.gpu_id)
    kvb = {d: roofline.kv_bytes(m, d) for d in catalogs.PRECISIONS}
    weights = roofline.storage(m)
    w_per_gpu = float(
        weights.per_gpu_bytes(p.weight_gpus)
        if p.weight_bytes_per_gpu is None
        else p.weight_bytes_per_gpu
    )
    max_ctx = int(m.architecture.max_context_tokens or hi)
    grid = sorted({*np.linspace(max_ctx / 64, max_ctx, 64).astype(int).tolist(), lo, hi})
    memory = {
        d: memory_by_context(
            m, hw, grid, d, weight_bytes_per_gpu=w_per_gpu, memory_fraction=p.memory_fraction
        )
        for d in catalogs.PRECISIONS
    }
    table = decode_latency_by_context(trace)
    series = main_series(table)
    if len(series) >= 2:
        fit, measured = fit_linear(series), delta(series, lo, hi)
    else:  # one context length (a reader's partial trace): shown, never fitted
        fit, measured = single_context(series)
    growth = growth_physics(
        roofline.context_growth(m, hw, lo, hi, p.kv_dtype, batch=p.batch, n_gpus=p.n_gpus),
        claim_ms,
        1000 * results_bounds.context_compute_growth_s(m, hw, lo, hi, batch=p.batch) / p.n_gpus,
        growth_attainable(m, hw, p.weight_gpus, lo, hi, claim_ms, p.batch),
    )
    implied = implied_latency_physics(
        claim_ms, tol_ms, claim_pct, tol_pct, m, hw, p.weight_gpus, lo, p.kv_dtype
    )
    ga = growth.reading.attainable or {}
    if ga.get("step_lo_s"):
        x = 1e-3 * implied.central_ms / ga["step_lo_s"]
        text = (
            f"the two figures imply a step of {implied.central_ms:.3g} ms at {lo:,} tokens, "
            f"{x:.2g}x the {1e3 * ga['step_lo_s']:.3g} ms measured kernels take for one "
            f"sequence ({ga['deployment']}; {ga['calibration']})"
        )
        implied = dataclasses.replace(
            implied,
            reading=dataclasses.replace(
                implied.reading,
                attainable={
                    **ga,
                    "ratio": x,
                    "text": text,
                    "brief": f"the implied step is {x:.2g}x what measured kernels take for one "
                    "sequence",
                },
            ),
        )
    hardware = verdicts.hardware(trace.run)
    testable = verdicts.can_test(trace.run)
    run_ms = delta_run_reading(
        measured, testable, trace.run, fit, claim=claim_ms, tolerance=tol_ms, claim_id=DELTA_ID
    )
    run_pct = delta_run_reading(
        measured, testable, trace.run, fit, claim=claim_pct, tolerance=tol_pct,
        claim_id=DELTA_PCT_ID, percent=True,
    )  # fmt: skip
    kv_run = kv_bytes_run_reading(trace.run, testable, reg.value(KV_BYTES_ID), p.kv_rel_tol)
    readings = [
        kv_bytes_physics(kvb[p.kv_dtype], reg.value(KV_BYTES_ID)),
        evidence.reading(KV_BYTES_ID, registry=reg),
        kv_run,
        growth.reading,
        evidence.reading(DELTA_ID, registry=reg),
        run_ms,
        implied.reading,
        evidence.reading(DELTA_PCT_ID, registry=reg),
        run_pct,
    ]
    return Analysis(
        trace=trace,
        params=p,
        claim_kv=reg.get(KV_BYTES_ID),
        claim_delta=reg.get(DELTA_ID),
        claim_pct=reg.get(DELTA_PCT_ID),
        lo=lo,
        hi=hi,
        model=m,
        hw=hw,
        kv_bytes=kvb,
        weights=weights,
        w_per_gpu=w_per_gpu,
        memory=memory,
        table=table,
        series=series,
        fit=fit,
        measured=measured,
        growth=growth,
        implied=implied,
        tolerance_ms=tol_ms,
        readings=readings,
        hardware=hardware,
        kind=evidence_kind(trace.kind),
    )


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, readings and what would flip them (the headline JSON)."""
    p, d, f, g, im = a.params, a.measured, a.fit, a.growth, a.implied
    tid = [a.trace.trace_id]
    run = {r.claim_id: r for r in a.readings if r.reading == "this run"}
    phys = {r.claim_id: r for r in a.readings if r.reading == "physics"}
    measured: dict[str, Any] = dict(kind=a.kind, hardware=a.hardware, trace_ids=tid)
    if a.kind == "synthetic":
        measured.pop("hardware")
    not_claimed = dict(claim_id=None, kind="modelled", verdict=headline.NOT_COMPARABLE)
    headlines = [
        headline.Headline(
            name="decode_delta",
            value=verdicts.number(d.delta_ms, 4),
            unit="ms",
            definition=f"median TPOT at {d.hi:,} minus at {d.lo:,} tokens of context "
            f"({d.pair} pair)",
            claim_id=DELTA_ID,
            verdict=run[DELTA_ID].verdict,
            reason=run[DELTA_ID].reason,
            **measured,
        ),
        headline.Headline(
            name="decode_delta_pct",
            value=verdicts.number(d.delta_pct, 3),
            unit="%",
            definition=f"decode_delta over median TPOT at {d.lo:,} tokens",
            claim_id=DELTA_PCT_ID,
            verdict=run[DELTA_PCT_ID].verdict,
            reason=run[DELTA_PCT_ID].reason,
            **measured,
        ),
        headline.Headline(
            name="kv_bytes_per_token",
            value=int(a.kv_bytes_per_token),
            unit="B/token",
            definition=f"global KV bytes per token at {p.kv_dtype}, derived from the row's "
            "dimensions and storage format",
            claim_id=KV_BYTES_ID,
            kind="modelled",
            verdict=phys[KV_BYTES_ID].verdict,
            reason=phys[KV_BYTES_ID].reason,
        ),
        headline.Headline(
            name="context_growth_sparse",
            value=round(1000 * g.growth.sparse_ms, 3),
            unit="µs",
            definition="extra context reads per decode step of "
            f"{plural(p.batch, 'sequence')} growing "
            f"{a.lo:,} -> {a.hi:,} tokens with sparse attention, at {p.n_gpus} x "
            f"{p.gpu_id.upper()} HBM bandwidth",
            claim_id=DELTA_ID,
            kind="modelled",
            verdict=phys[DELTA_ID].verdict,
            reason=phys[DELTA_ID].reason,
        ),
        headline.Headline(
            name="context_growth_dense",
            value=round(1000 * g.growth.dense_ms, 1),
            unit="µs",
            definition="the same with every consuming layer reading every row (dense bound)",
            reason="an upper reading of the reads, not what sparse attention does",
            **not_claimed,
        ),
        headline.Headline(
            name="implied_latency_at_lo",
            value=round(im.central_ms, 3),
            unit="ms",
            definition=f"100 x claimed delta / claimed percent: decode latency at {a.lo:,} tokens "
            f"({im.low_ms:.3g} to {im.high_ms:.3g} ms over the rounding)",
            claim_id=DELTA_PCT_ID,
            kind="modelled",
            verdict=phys[DELTA_PCT_ID].verdict,
            reason=phys[DELTA_PCT_ID].reason,
        ),
        headline.Headline(
            name="decode_slope",
            value=verdicts.number(f.slope_per_1k, 5),
            unit="ms per 1k tokens",
            definition=f"least-squares slope of median TPOT over {f.n} contexts "
            f"{f.context_min:,}..{f.context_max:,} tokens (95 % CI "
            f"{f.slope_ci_per_1k[0]:.3g} to {f.slope_ci_per_1k[1]:.3g})",
            claim_id=None,
            verdict=headline.NOT_COMPARABLE,
            reason="the write-up gives a delta between two lengths, not a slope",
            **measured,
        ),
        headline.Headline(
            name="sequences_per_gpu_at_hi",
            value=int(a.at.loc[a.hi, "sequences_per_gpu"]),
            unit="sequences",
            definition=f"sequences of {a.hi:,} tokens whose {p.kv_dtype} KV fits on one "
            f"{p.gpu_id.upper()} after {a.w_per_gpu / 1e9:.1f} GB of weights, at "
            f"{p.memory_fraction:g} of HBM",
            reason="the write-up gives no capacity figure",
            **not_claimed,
        ),
    ]
    headlines += [
        headline.Headline(
            name=f"kv_bytes_per_token_{dt}",
            value=int(b.bytes_per_token),
            unit="B/token",
            definition=f"global KV bytes per token with the same layout stored at {dt}",
            reason="the claim is for the FP4 cache; other dtypes for scale",
            **not_claimed,
        )
        for dt, b in a.kv_bytes.items()
        if dt != p.kv_dtype
    ]
    per_seq_us = 1000 * g.per_sequence_ms
    step_limit = im.step_floor_ms  # above 100 % of a floor: impossible, whatever the margin
    pct_limit = 100 * g.claim_ms / step_limit
    flips = [
        f"physics, {a.claim_kv.value_text}: a layout whose rows or formats give another byte "
        f"count (FP8 rows give {a.kv_bytes['fp8'].bytes_per_token} B/token)",
        f"physics, {a.claim_delta.value_text}: impossible if the delta were below "
        f"{per_seq_us * p.batch:.3g} µs ({plural(p.batch, 'sequence')} per GPU), "
        f"or the claim's batch were above {g.sequences_to_explain:.0f} sequences per GPU "
        "(their scans alone would exceed it)",
        f"physics, {a.claim_pct.value_text}: impossible if the implied latency at {a.lo:,} "
        f"tokens were below {step_limit:.3g} ms (the same delta quoted as more than "
        f"{pct_limit:.3g} %)",
        f"this run: a trace of DeepSeek-V4.1-Flash on B300/GB300 at {a.lo:,} and {a.hi:,} tokens "
        f"reads consistent within +/-{a.tolerance_ms:g} ms of the claim, inconsistent outside",
    ]
    parameters = {
        "model_id": p.model_id,
        "gpu_id": p.gpu_id,
        "kv_dtype": p.kv_dtype,
        "lo": a.lo,
        "hi": a.hi,
        "batch": p.batch,
        "n_gpus": p.n_gpus,
        "weight_gpus": p.weight_gpus,
        "weight_bytes_per_gpu": a.w_per_gpu,
        "memory_fraction": p.memory_fraction,
    }
    return headline.Outcome(RESULT, headlines, a.readings, flips, tid, parameters, a.hardware)
