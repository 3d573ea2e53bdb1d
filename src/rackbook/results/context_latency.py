"""context-latency: decode latency (TPOT, ITL; ms) per context length, its line TPOT = a + b x
context, the delta between two lengths (ms, %), KV memory per sequence, and the KV-bandwidth
model of its growth (sparse attention's index scan and top-k rows against dense reads): the
readings of the KV bytes per token and the decode delta (ms and %), the chapter's analysis,
outcome and the values its prose quotes."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import metrics, units
from rackbook.core.traces import Trace, point_batch
from rackbook.core.units import ratio_text
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Registry
from rackbook.physics import check, results_bounds, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts

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


KV_BYTES_ID = "context-latency.kv-bytes"
#: The weight shares the prose quotes (``roofline.storage``'s ``<name>_bytes``).
WEIGHTS = ("total", "routed", "dense")
DELTA_ID = "context-latency.delta"
DELTA_PCT_ID = "context-latency.delta-pct"


def kv_bytes_physics(kvb: roofline.KvBytes, claim: float) -> headline.ClaimReading:
    """Possible when the catalog layout gives the claimed bytes per token exactly."""
    got = kvb.bytes_per_token
    exact = got == round(claim)
    rows = f"{float(kvb.rows_per_token):g} rows x {float(kvb.row_bytes):g} B"
    derived: dict[str, Any] = dict(value=got, unit="B/token")
    derived["from"] = f"the model card's dimensions and {kvb.kv_dtype.upper()} formats"
    derived |= dict(exact=exact, how=rows)
    how = (
        f": {rows}" if exact else f", not {claim:g}: a different layout or storage format is meant"
    )
    why = f"the catalog's dimensions and {kvb.kv_dtype} formats give {got} B/token{how}"
    v, margin = "possible" if exact else "impossible", f"{got} B/token derived"
    return headline.ClaimReading(KV_BYTES_ID, "physics", v, margin, why, derived=derived)


#: run.json ``metrics`` (or ``parameters``) key of the KV bytes per token vLLM reported.
KV_BYTES_KEY = "kv_cache_bytes_per_token"


def kv_bytes_run_reading(
    run: dict[str, Any], testable: bool, claim: float, rel_tol: float
) -> headline.ClaimReading:
    """This run's reading of the bytes per token reported (within ``rel_tol``, a fraction)."""
    found = [d.get(KV_BYTES_KEY) for d in (run.get("metrics"), run.get("parameters")) if d]
    got = next((float(x) for x in found if isinstance(x, (int, float))), None)
    if testable and got is None:
        why = "the trace does not report the engine's KV bytes per token (run.json metrics."
        why += f"{KV_BYTES_KEY}, from vLLM's start-up log of KV memory over KV tokens)"
        return headline.ClaimReading(KV_BYTES_ID, "this run", "untested", "-", why)
    what = f"{got:,.0f} B/token reported" if got is not None else "a latency trace"
    needs = "vLLM's KV bytes per token of DeepSeek-V4.1-Flash on B300/GB300"
    kw: dict[str, Any] = dict(testable=testable, what=what, run=run, needs=needs)
    return verdicts.run_reading(KV_BYTES_ID, got, claim, rel_tol, **kw)


@dataclass(frozen=True)
class GrowthReading:
    """The claimed delta (ms) against a step's extra context reads, and the physics reading."""

    growth: roofline.ContextGrowth
    claim_ms: float
    per_sequence_ms: float
    sequences_to_explain: float
    reading: headline.ClaimReading
    compute_ms: float = 0.0

    @property
    def share(self) -> float:
        return self.growth.sparse_ms / self.claim_ms


def growth_attainable(
    model: ModelSpec, hw: GpuSpec, gpus: int, lo: int, hi: int, claim_ms: float, batch: int = 1
) -> dict[str, Any]:
    """What measured kernels add to a step from ``lo`` to ``hi`` tokens (s), and claim / it."""
    from rackbook.physics import attainable
    from rackbook.physics.check import Workload

    steps = []
    for ctx in (lo, hi):
        work = Workload(concurrency=batch, decode_context=ctx)
        a = attainable.estimate(model, hw, gpus, work, claimed=1.0, phase="decode")
        steps.append(sum(a.estimates["decode"].parts.values()))
    added = steps[1] - steps[0]
    ratio = 1e-3 * claim_ms / added if added > 0 else None
    seqs = units.plural(batch, "sequence")
    text = (
        f"measured kernels step {seqs} on {gpus} {hw.label} in "
        f"{1e3 * steps[0]:.3g} ms at {lo:,} tokens and add {1e6 * added:,.0f} µs by {hi:,}"
        + (f": the claimed {claim_ms:g} ms is {ratio:.2g}x that" if ratio else "")
        + f" ({a.deployment}; {a.calibration})"
    )
    who = "one sequence" if batch == 1 else seqs  # as the implied-step brief says it
    brief = f"{ratio:.2g}x what measured kernels add for {who}" if ratio else ""
    out: dict[str, Any] = {"tok_s_per_gpu": batch / steps[0] / gpus if steps[0] > 0 else None}
    out["ratio"] = ratio
    out |= dict(deployment=a.deployment, deployment_name=a.deployment_name)
    out |= dict(calibration=a.calibration, binding=a.binding, text=text, added_s=added)
    return out | dict(step_lo_s=steps[0], brief=brief)


def growth_physics(
    growth: roofline.ContextGrowth,
    claim_ms: float,
    compute_ms: float = 0.0,
    attainable: dict[str, Any] | None = None,
) -> GrowthReading:
    """Physics of "+``claim_ms`` from lo to hi": the sparse reads' extra bytes / HBM bandwidth
    are a floor (impossible above the claim)."""
    floor = growth.sparse_ms
    per_seq = floor / growth.batch
    n_seq = claim_ms / per_seq if per_seq > 0 else math.inf
    ratio = floor / claim_ms
    v = check.physics_verdict(ratio)
    span = f"{growth.lo:,} -> {growth.hi:,} tokens"
    if v == "possible":
        both = floor + compute_ms
        clauses = [
            f"sparse reads add at least {1000 * floor:.3g} µs ({100 * ratio:.2g} % of "
            f"{claim_ms:g} ms, {units.plural(growth.batch, 'sequence')}) and the longer index "
            f"scan's compute at least {1000 * compute_ms:.3g} µs more: {1000 * both:.3g} µs of "
            f"the {1000 * claim_ms:.0f} µs even with none of it overlapped",
            f"reading every row would add {1000 * growth.dense_ms:,.0f} µs. The rest is not this "
            f"sequence's indexer at peak: about {claim_ms / both:.0f} to {n_seq:.1f} sequences "
            "per GPU growing together, kernels well below peak, or work the bounds leave out",
        ]
    else:
        clauses = [
            f"the extra index-key scan of {units.plural(growth.batch, 'sequence')} over {span} "
            f"alone takes {1000 * floor:,.0f} µs, {ratio_text(ratio)} the claimed {claim_ms:g} ms"
        ]
    margin = f"floor {100 * ratio:.2g} % of it"
    r = common.reading(DELTA_ID, "physics", v, margin, clauses, attainable=attainable)
    return GrowthReading(growth, claim_ms, per_seq, n_seq, r, compute_ms)


@dataclass(frozen=True)
class ImpliedLatency:
    """The latency (ms) at the shorter context the figures imply (100 x delta / percent), its
    range over their rounding, the least step time there (ms) and the physics ``reading``."""

    central_ms: float
    low_ms: float
    high_ms: float
    step_floor_ms: float
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
    growth: dict[str, Any] | None = None,
) -> ImpliedLatency:
    """The implied latency at ``lo``: impossible when even the longest is below one sequence's
    memory floor on ``gpus`` GPUs; set against the step measured kernels take (``growth``'s)."""
    central = 100 * claim_ms / claim_pct
    low = 100 * (claim_ms - tol_ms) / (claim_pct + tol_pct)
    high = 100 * (claim_ms + tol_ms) / (claim_pct - tol_pct)
    work = check.Workload(decode_context=lo, kv_dtype=kv_dtype)
    step_ms = 1000 / (check.memory_ceiling(model, hw, gpus, 1, work).tok_s_per_gpu * gpus)
    ratio = step_ms / high
    v = check.physics_verdict(ratio)
    clauses = [
        f"the two figures imply {low:.3g} to {high:.3g} ms per step at {lo:,} tokens",
        f"one sequence on {units.plural(gpus, hw.id.upper())} cannot step faster than "
        f"{step_ms:.3g} ms",
    ]
    att, g = None, growth or {}
    if g.get("step_lo_s"):
        x = 1e-3 * central / g["step_lo_s"]
        text = f"the two figures imply a step of {central:.3g} ms at {lo:,} tokens, {x:.2g}x the "
        text += f"{1e3 * g['step_lo_s']:.3g} ms measured kernels take for one sequence "
        text += f"({g['deployment']}; {g['calibration']})"
        brief = f"the implied step is {x:.2g}x what measured kernels take for one sequence"
        att = g | {"ratio": x, "text": text, "brief": brief}
    margin = f"implied {low:.3g}-{high:.3g} ms"
    r = common.reading(DELTA_PCT_ID, "physics", v, margin, clauses, attainable=att)
    return ImpliedLatency(central, low, high, step_ms, r)


def delta_run_reading(
    d: Delta,
    testable: bool,
    run: dict[str, Any],
    fit: LinearFit | None,
    *,
    claim: float,
    tolerance: float,
    claim_id: str,
    percent: bool = False,
) -> headline.ClaimReading:
    """This run's reading of the delta (ms, or %): within ``tolerance`` at both claimed lengths."""
    value = d.delta_pct if percent else d.delta_ms
    unit = "%" if percent else "ms"
    what = f"{value:+.3g} {unit} from {d.lo:,} to {d.hi:,} tokens"
    if d.pair == "single context":
        what = f"one context length ({d.lo:,} tokens): no delta; record at least two"
    if fit is not None and math.isfinite(fit.slope_ci_per_1k[0]) and not fit.resolved:
        what += ", a slope not resolved from zero"
    needs = "DeepSeek-V4.1-Flash on B300/GB300 at 128k and 855k tokens of context"
    if not testable:
        return verdicts.untested(claim_id, run, what, needs)
    if d.pair != "requested":
        return headline.ClaimReading(
            claim_id, "this run", "untested", "-", f"{what} ({d.pair}): lacks the claimed lengths"
        )
    why = f"{what}, claim {claim:+g} {unit} (tolerance {tolerance:g})"
    return verdicts.within(claim_id, value, claim, tolerance, f"{value - claim:+.3g} {unit}", why)


def claimed_span(registry: Registry) -> tuple[int, int]:
    """The pair of context lengths (tokens) of the published delta (its scope)."""
    span = registry.get(DELTA_ID).scope.context_tokens
    if span is None:
        raise InputError(registry.path, f"claims[{DELTA_ID}].scope.context_tokens", "not stated")
    return span.low, span.high


RESULT = "context-latency"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.context_latency``).
FIGURES = ("fig_memory", "fig_capacity", "fig_latency", "fig_growth", "fig_implied")
#: The values the prose quotes that are attributes of the analysis (chapter_common.glue).
GLUE = (
    "hardware slope_sentence kv_dtype=params.kv_dtype implied_ms=implied.central_ms "
    "implied_low_ms=implied.low_ms implied_high_ms=implied.high_ms lo hi batch=params.batch "
    "step_floor_ms=implied.step_floor_ms weight_gpus=params.weight_gpus ctx_min=fit.context_min "
    "mem_frac=params.memory_fraction ctx_max=fit.context_max slope_1k=fit.slope_per_1k r2=fit.r2 "
    "seq_explain=growth.sequences_to_explain kv_bytes=kv_bytes_per_token "
    "scan_b=reads_lo.scan_bytes_per_token dense_b=reads_lo.dense_bytes_per_token"
)


#: The notebook's ``parameters`` (None: the registry's contexts, derived weight bytes).
Params = headline.params(RESULT)


class Analysis(common.Chapter):
    """KV bytes, memory, latency against context, growth, implied latency and readings."""

    PARAMS = Params

    def analyse(self, p: Any, reg: Registry) -> None:
        trace = self.trace
        span = claimed_span(reg)
        self.lo = lo = int(p.lo) if p.lo is not None else span[0]
        self.hi = hi = int(p.hi) if p.hi is not None else span[1]
        ids = (KV_BYTES_ID, DELTA_ID, DELTA_PCT_ID)
        self.claim_kv, self.claim_delta, self.claim_pct = (reg.get(c) for c in ids)
        self.model = m = catalogs.as_model(p.model_id)
        self.hw = hw = catalogs.as_gpu(p.gpu_id)
        self.kv_bytes = {d: roofline.kv_bytes(m, d) for d in catalogs.PRECISIONS}
        self.kv_bytes_per_token = self.kv_bytes[p.kv_dtype].bytes_per_token
        self.reads_lo = roofline.decode_kv_reads(m, lo, p.kv_dtype)  # per sequence at lo
        self.weights = roofline.storage(m)
        w = p.weight_bytes_per_gpu
        self.w_per_gpu = float(self.weights.per_gpu_bytes(p.weight_gpus) if w is None else w)
        max_ctx = int(m.architecture.max_context_tokens or hi)
        grid = sorted({*np.linspace(max_ctx / 64, max_ctx, 64).astype(int).tolist(), lo, hi})
        kw = dict(weight_bytes_per_gpu=self.w_per_gpu, memory_fraction=p.memory_fraction)
        self.memory = {d: memory_by_context(m, hw, grid, d, **kw) for d in catalogs.PRECISIONS}
        self.at = self.memory[p.kv_dtype].set_index("context_tokens")  # at the chosen dtype
        self.table = decode_latency_by_context(trace)
        self.series = series = main_series(self.table)
        if len(series) >= 2:
            self.fit, self.measured = fit_linear(series), delta(series, lo, hi)
        else:  # one context length (a reader's partial trace): shown, never fitted
            self.fit, self.measured = single_context(series)
        self.kind = "measured" if trace.kind == "recorded" else trace.kind
        self.readings = self._readings(reg)

    def _readings(self, reg: Registry) -> list[headline.ClaimReading]:
        """The three readings of each claim; sets ``growth``, ``implied``, ``tolerance_ms``."""
        p, m, hw, lo, hi = self.params, self.model, self.hw, self.lo, self.hi
        claim_ms, claim_pct = reg.value(DELTA_ID), reg.value(DELTA_PCT_ID)
        self.tolerance_ms = tol_ms = reg.tolerance(DELTA_ID)
        tol_pct = reg.tolerance(DELTA_PCT_ID)
        compute_s = results_bounds.context_compute_growth_s(m, hw, lo, hi, batch=p.batch)
        self.growth = growth = growth_physics(
            roofline.context_growth(m, hw, lo, hi, p.kv_dtype, batch=p.batch, n_gpus=p.n_gpus),
            claim_ms,
            1000 * compute_s / p.n_gpus,
            growth_attainable(m, hw, p.weight_gpus, lo, hi, claim_ms, p.batch),
        )
        on = (m, hw, p.weight_gpus, lo, p.kv_dtype, growth.reading.attainable)
        self.implied = implied = implied_latency_physics(claim_ms, tol_ms, claim_pct, tol_pct, *on)
        testable = verdicts.can_test(self.trace.run)
        claims: dict[str, dict[str, Any]] = {
            DELTA_ID: dict(claim=claim_ms, tolerance=tol_ms),
            DELTA_PCT_ID: dict(claim=claim_pct, tolerance=tol_pct, percent=True),
        }
        run_ms, run_pct = (
            delta_run_reading(self.measured, testable, self.trace.run, self.fit, claim_id=c, **kw)
            for c, kw in claims.items()
        )
        kv_claim = reg.value(KV_BYTES_ID)
        kv = kv_bytes_physics(self.kv_bytes[p.kv_dtype], kv_claim)
        kv_run = kv_bytes_run_reading(self.trace.run, testable, kv_claim, p.kv_rel_tol)
        pairs = ((kv, kv_run), (growth.reading, run_ms), (implied.reading, run_pct))
        return common.readings(reg, *pairs)

    @property
    def kv_table(self) -> pd.DataFrame:
        """Per dtype: rows per token, KV and indexer row bytes, bytes per token."""
        cols = ["kv_dtype", "rows_per_token", "kv_row_bytes", "indexer_row_bytes"]
        rows = [
            (d, float(b.rows_per_token), float(b.kv_row_bytes), float(b.indexer_row_bytes))
            for d, b in self.kv_bytes.items()
        ]
        out = pd.DataFrame(rows, columns=cols)
        return out.assign(bytes_per_token=[b.bytes_per_token for b in self.kv_bytes.values()])

    @property
    def reads_table(self) -> pd.DataFrame:
        """Context bytes (MB) one decode step reads per sequence at lo and hi."""
        rows = []
        for c in (self.lo, self.hi):
            r = roofline.decode_kv_reads(self.model, c, self.params.kv_dtype)
            rows.append((c, r.sparse_bytes / 1e6, r.dense_bytes / 1e6))
        cols = ["context_tokens", "sparse_read_mb", "dense_read_mb"]
        return pd.DataFrame(rows, columns=cols)

    @property
    def pair_note(self) -> str:
        d = self.measured
        if d.pair == "requested":
            return "the requested pair"
        return (
            f"the longest pair the trace has ({d.lo:,} and {d.hi:,} tokens), because it "
            f"does not reach {self.lo:,} and {self.hi:,}"
        )

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        m, kvb, at, g, im = self.model, self.kv_bytes, self.at, self.growth, self.implied
        b = kvb[self.params.kv_dtype]
        reads = self.reads_table.set_index("context_tokens")
        ends = (("lo", self.lo), ("hi", self.hi))
        return common.glue(self, GLUE) | {
            "claim_kv": int(self.claim_kv.value or 0),
            "claim_delta_ms": float(self.claim_delta.value or 0),
            "claim_pct": float(self.claim_pct.value or 0),
            "window": int(m.architecture.sliding_window or 0),
            "owning_layers": ", ".join(map(str, m.kv_cache.owning_layers or [])),
            "n_layers": int(m.architecture.num_layers or 0),
            "backbone_b": (m.params.backbone or 0) / 1e9,
            "rows_per_token": float(b.rows_per_token),
            "kv_row": float(b.kv_row_bytes),
            "idx_row": float(b.indexer_row_bytes),
            **{f"kv_{d}": int(x.bytes_per_token) for d, x in kvb.items() if d != "fp4"},
            **{f"weights_{k}_gb": getattr(self.weights, f"{k}_bytes") / 1e9 for k in WEIGHTS},
            "w_per_gpu_gb": self.w_per_gpu / 1e9,
            "hbm_gb": self.hw.hbm_capacity_bytes / 1e9,
            **{f"seq_{k}_mb": float(at.loc[c, "kv_bytes_per_sequence"]) / 1e6 for k, c in ends},
            **{f"fit_{k}": int(at.loc[c, "sequences_per_gpu"]) for k, c in ends},
            **{f"sparse_{k}_mb": float(reads.loc[c, "sparse_read_mb"]) for k, c in ends},
            "dense_hi_mb": float(reads.loc[self.hi, "dense_read_mb"]),
            "n_points": int(len(self.series)),
            "sparse_us": 1000 * g.growth.sparse_ms,
            "dense_us": 1000 * g.growth.dense_ms,
            "sparse_share_pct": 100 * g.share,
            "dense_share_pct": 100 * g.growth.dense_ms / g.claim_ms,
            "compute_growth_us": 1000 * g.compute_ms,
            "seq_explain_both": g.claim_ms / (g.growth.sparse_ms + g.compute_ms),
            "hbm_tbs": self.hw.hbm_bandwidth_bytes_per_s / 1e12,
            "implied_x_floor": im.low_ms / im.step_floor_ms,
            "topk": int(m.attention.index_topk if m.attention else 0),
            "batch_text": units.plural(self.params.batch, "sequence"),
            "itl_median_us": 1000 * float(self.series["median_itl_ms"].median()),
        }

    @property
    def slope_sentence(self) -> str:
        """Whether the fit's slope is resolved from zero (95 % CI), in one sentence."""
        f, d = self.fit, self.measured
        ci = f"{f.slope_ci_per_1k[0]:.3g} to {f.slope_ci_per_1k[1]:.3g} ms per 1,000 tokens"
        if f.resolved:
            return (
                f"The 95 % confidence interval of the slope, {ci}, excludes zero: on this trace "
                f"decode latency grows by about {f.slope_per_1k:.3g} ms per 1,000 tokens."
            )
        who = "this trace" if verdicts.gpu_names(self.trace.run) else "the CPU stand-in"
        if not math.isfinite(f.slope_ci_per_1k[0]):
            ci = f"unknown with {units.plural(len(self.series), 'point')}"
        return (
            f"The 95 % confidence interval of the slope ({ci}) includes zero: {who} cannot "
            f"resolve whether decode latency grows with context at these lengths, so its "
            f"delta of {d.delta_ms:+.3g} ms is noise, not a finding."
        )


analyse = Analysis


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, readings and what would flip them (the headline JSON)."""
    names = (
        "model_id gpu_id kv_dtype lo hi batch n_gpus weight_gpus weight_bytes_per_gpu "
        "memory_fraction"
    )
    resolved: dict[str, Any] = dict(lo=a.lo, hi=a.hi, weight_bytes_per_gpu=a.w_per_gpu)
    return common.outcome(RESULT, a, _headlines(a), _flips(a), names, **resolved)


def _headlines(a: Analysis) -> list[headline.Headline]:
    p, d, f, g, im = a.params, a.measured, a.fit, a.growth, a.implied
    run = headline.by_claim(a.readings, "this run")
    phys = headline.by_claim(a.readings, "physics")
    measured = common.where(a, a.kind)
    num, gpu = verdicts.number, p.gpu_id.upper()
    tpot = f"median TPOT at {d.hi:,} minus at {d.lo:,} tokens of context ({d.pair} pair)"
    kv = f"global KV bytes per token at {p.kv_dtype}, derived from the row's dimensions and "
    kv += "storage format"
    grows = (
        f"extra context reads per decode step of {units.plural(p.batch, 'sequence')} growing "
        f"{a.lo:,} -> {a.hi:,} tokens with sparse attention, at {p.n_gpus} x {gpu} HBM bandwidth"
    )
    dense = "the same with every consuming layer reading every row (dense bound)"
    implied = (
        f"100 x claimed delta / claimed percent: decode latency at {a.lo:,} tokens "
        f"({im.low_ms:.3g} to {im.high_ms:.3g} ms over the rounding)"
    )
    slope = (
        f"least-squares slope of median TPOT over {f.n} contexts {f.context_min:,}.."
        f"{f.context_max:,} tokens (95 % CI {f.slope_ci_per_1k[0]:.3g} to "
        f"{f.slope_ci_per_1k[1]:.3g})"
    )
    fits = (
        f"sequences of {a.hi:,} tokens whose {p.kv_dtype} KV fits on one {gpu} after "
        f"{a.w_per_gpu / 1e9:.1f} GB of weights, at {p.memory_fraction:g} of HBM"
    )
    pct = f"decode_delta over median TPOT at {d.lo:,} tokens"
    deltas = [
        (run[DELTA_ID], "decode_delta", num(d.delta_ms, 4), "ms", tpot),
        (run[DELTA_PCT_ID], "decode_delta_pct", num(d.delta_pct, 3), "%", pct),
    ]
    reads = "an upper reading of the reads, not what sparse attention does"
    bounds = [
        (phys[KV_BYTES_ID], "kv_bytes_per_token", int(a.kv_bytes_per_token), "B/token", kv),
        (phys[DELTA_ID], "context_growth_sparse", round(1000 * g.growth.sparse_ms, 3), "µs", grows),
        (reads, "context_growth_dense", round(1000 * g.growth.dense_ms, 1), "µs", dense),
        (phys[DELTA_PCT_ID], "implied_latency_at_lo", round(im.central_ms, 3), "ms", implied),
    ]
    no_slope = "the write-up gives a delta between two lengths, not a slope"
    slope_row = (no_slope, "decode_slope", num(f.slope_per_1k, 5), "ms per 1k tokens", slope)
    at_hi = int(a.at.loc[a.hi, "sequences_per_gpu"])
    others = "the claim is for the FP4 cache; other dtypes for scale"
    same = "global KV bytes per token with the same layout stored at"
    no_capacity = "the write-up gives no capacity figure"
    capacity = [(no_capacity, "sequences_per_gpu_at_hi", at_hi, "sequences", fits)]
    for dt, b in a.kv_bytes.items():
        if dt != p.kv_dtype:
            kv_dt = int(b.bytes_per_token)
            capacity.append((others, f"kv_bytes_per_token_{dt}", kv_dt, "B/token", f"{same} {dt}"))
    return [
        *common.headlines(deltas, **measured),
        *common.headlines(bounds),
        *common.headlines([slope_row], **measured),
        *common.headlines(capacity),
    ]


def _flips(a: Analysis) -> list[str]:
    p, g, im = a.params, a.growth, a.implied
    per_seq_us = 1000 * g.per_sequence_ms
    step_limit = im.step_floor_ms  # above 100 % of a floor: impossible, whatever the margin
    pct_limit = 100 * g.claim_ms / step_limit
    return [
        f"physics, {a.claim_kv.value_text}: a layout whose rows or formats give another byte "
        f"count (FP8 rows give {a.kv_bytes['fp8'].bytes_per_token} B/token)",
        f"physics, {a.claim_delta.value_text}: impossible if the delta were below "
        f"{per_seq_us * p.batch:.3g} µs ({units.plural(p.batch, 'sequence')} per GPU), "
        f"or the claim's batch were above {g.sequences_to_explain:.0f} sequences per GPU "
        "(their scans alone would exceed it)",
        f"physics, {a.claim_pct.value_text}: impossible if the implied latency at {a.lo:,} "
        f"tokens were below {step_limit:.3g} ms (the same delta quoted as more than "
        f"{pct_limit:.3g} %)",
        f"this run: a trace of DeepSeek-V4.1-Flash on B300/GB300 at {a.lo:,} and {a.hi:,} tokens "
        f"reads consistent within +/-{a.tolerance_ms:g} ms of the claim, inconsistent outside",
    ]


# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = dict.fromkeys(
    (KV_BYTES_ID, DELTA_ID, DELTA_PCT_ID), ("metric", "model")
)
_NO_LATENCY = (
    "no published decode latency of DeepSeek-V4.1-Flash at 128k and 855k tokens of context"
)
READING_NOTES = {
    KV_BYTES_ID: "the figure comes from the model card, the paper and vLLM's 2026-10-07 post; no "
    "published measurement of the global KV bytes per token",
    **dict.fromkeys((DELTA_ID, DELTA_PCT_ID), _NO_LATENCY),
}
