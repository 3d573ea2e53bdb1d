"""Readings of context-latency's claims (KV bytes per token, the decode delta in ms and %):
physics against the KV-read model, what measured kernels reach, and this run's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rackbook.core import units
from rackbook.core.units import ratio_text
from rackbook.errors import InputError
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Registry
from rackbook.physics import check, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts
from rackbook.results.context_latency.measure import Delta, LinearFit

KV_BYTES_ID = "context-latency.kv-bytes"
DELTA_ID = "context-latency.delta"
DELTA_PCT_ID = "context-latency.delta-pct"


def evidence_kind(trace_kind: str) -> str:
    """Headline kind of a number read from a trace (``recorded`` -> ``measured``)."""
    return {"recorded": "measured"}.get(trace_kind, trace_kind)


def kv_bytes_physics(kvb: roofline.KvBytes, claim: float) -> headline.ClaimReading:
    """Possible when the catalog layout gives the claimed bytes per token exactly."""
    got = kvb.bytes_per_token
    exact = got == round(claim)
    derived = {
        "value": got,
        "unit": "B/token",
        "from": f"the model card's dimensions and {kvb.kv_dtype.upper()} formats",
        "exact": exact,
        "how": f"{float(kvb.rows_per_token):g} rows x {float(kvb.row_bytes):g} B",
    }
    how = (
        f": {derived['how']}"
        if exact
        else f", not {claim:g}: a different layout or storage format is meant"
    )
    return headline.ClaimReading(
        KV_BYTES_ID,
        "physics",
        "possible" if exact else "impossible",
        f"{got} B/token derived",
        f"the catalog's dimensions and {kvb.kv_dtype} formats give {got} B/token{how}",
        derived=derived,
    )


#: run.json ``metrics`` (or ``parameters``) key of the KV bytes per token vLLM reported.
KV_BYTES_KEY = "kv_cache_bytes_per_token"


def kv_bytes_in_run(run: dict[str, Any]) -> float | None:
    for where in ("metrics", "parameters"):
        d = run.get(where)
        if isinstance(d, dict) and isinstance(d.get(KV_BYTES_KEY), (int, float)):
            return float(d[KV_BYTES_KEY])
    return None


def kv_bytes_run_reading(
    run: dict[str, Any], testable: bool, claim: float, rel_tol: float
) -> headline.ClaimReading:
    """This run's reading of the bytes per token reported (within ``rel_tol``, a fraction)."""
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
    text = (
        f"measured kernels step {units.plural(batch, 'sequence')} on {gpus} {hw.label} in "
        f"{1e3 * steps[0]:.3g} ms at {lo:,} tokens and add {1e6 * added:,.0f} µs by {hi:,}"
        + (f": the claimed {claim_ms:g} ms is {ratio:.2g}x that" if ratio else "")
        + f" ({a.deployment}; {a.calibration})"
    )
    brief = f"{ratio:.2g}x what measured kernels add for one sequence" if ratio else ""
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
) -> ImpliedLatency:
    """The implied latency at ``lo``: impossible when even the longest is below one sequence's
    memory floor on ``gpus`` GPUs."""
    central = 100 * claim_ms / claim_pct
    low = 100 * (claim_ms - tol_ms) / (claim_pct + tol_pct)
    high = 100 * (claim_ms + tol_ms) / (claim_pct - tol_pct)
    ceil = check.memory_ceiling(model, hw, gpus, 1, context=lo, kv_dtype=kv_dtype)
    step_ms = 1000 / (ceil.tok_s_per_gpu * gpus)
    ratio = step_ms / high
    v = check.physics_verdict(ratio)
    clauses = [
        f"the two figures imply {low:.3g} to {high:.3g} ms per step at {lo:,} tokens",
        f"one sequence on {units.plural(gpus, hw.id.upper())} cannot step faster than "
        f"{step_ms:.3g} ms",
    ]
    r = common.reading(DELTA_PCT_ID, "physics", v, f"implied {low:.3g}-{high:.3g} ms", clauses)
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
