"""Bounds the result chapters read, built on :mod:`rackbook.physics.check` and
:mod:`rackbook.physics.roofline`: the verdict rule in words, the least cached share that makes a
throughput fit a whole workload, the most counted tokens/s any cached share gives, the
fewest-bytes batch-1 bound with speculation, the prefix-read ceiling of new prefill tokens, the
share of a new token's time the decoder replay layers remove, and the time per MoE layer a step
leaves for collectives.

Every division of bytes by bandwidth or FLOP by peak the chapters show lives here (units in the
names: ``_s`` seconds, ``_us`` microseconds, ``_bytes`` bytes, ``tok_s`` tokens/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check, roofline
from rackbook.physics.units import fmt, plural

# --------------------------------------------------------------------------------------------
# the verdict rule


@dataclass(frozen=True)
class VerdictRule:
    """Where :func:`rackbook.physics.check.physics_verdict` turns, as ratios claimed / ceiling:
    ``possible`` below ``possible_below``, ``impossible`` above ``impossible_above``,
    ``undetermined`` between."""

    possible_below: float
    impossible_above: float

    @property
    def text(self) -> str:
        """The rule in one sentence."""
        return (
            f"a figure is *impossible* above {self.impossible_above:g}x a bound (above 100 % of "
            f"a peak, whatever the margin), *possible* below {self.possible_below:.2f}x it, and "
            f"*undetermined* between (the {1 - self.possible_below:.0%} modelling margin)"
        )


def verdict_rule(margin: float = check.MARGIN) -> VerdictRule:
    """The thresholds of :func:`rackbook.physics.check.physics_verdict` (1 - ``margin`` and 1),
    read back from the function itself so that no chapter can state another rule."""
    lo, hi = 1 - margin, 1.0
    eps = 1e-9
    assert check.physics_verdict(lo - eps, margin) == "possible"
    assert check.physics_verdict(lo + eps, margin) == "undetermined"
    assert check.physics_verdict(hi, margin) == "undetermined"
    assert check.physics_verdict(hi + eps, margin) == "impossible"
    return VerdictRule(lo, hi)


# --------------------------------------------------------------------------------------------
# cached share of a whole workload


@dataclass(frozen=True)
class CachedShare:
    """The least share of the input tokens served from the prefix cache that makes
    ``tok_s_per_gpu`` counted tokens/s fit the workload (ISL, OSL) at ``ratio`` of the GPUs'
    time, and the reading at that share (:func:`rackbook.physics.check.check_claim`: new-token
    prefill behind the cached prefix, attention over it, and the decode of the output tokens).
    ``share`` is None when no share below 1 fits (the decode alone, or the prefix reads, need
    more than ``ratio``); 0.0 when the figure fits with nothing cached. Sufficient, not only
    necessary: the time needed falls as the share grows, so every larger share fits too."""

    share: float | None
    ratio: float
    tok_s_per_gpu: float
    counted: str
    isl: float
    osl: float
    at_share: check.Check | None
    formula: str


def _ratio(share: float, **kw: object) -> float:
    return check.check_claim(cached_share=share, **kw).ratio  # type: ignore[arg-type]


def cached_share_threshold(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    tok_s_per_gpu: float,
    *,
    isl: float,
    osl: float,
    counted: str = "total",
    ratio: float = 1.0,
    concurrency: float | None = None,
    tol: float = 1e-5,
) -> CachedShare:
    """Bisection on the cached share s in [0, 1) of ``check_claim(..., counted, isl, osl,
    cached_share=s)`` for the least s whose ratio is at most ``ratio`` (1: within the bounds;
    1 - MARGIN: possible). The ratio falls as s grows: per second the prefill work is
    (1 - s) x (GEMMs + attention over a prefix of isl x (1 + s) / 2), whose derivative in s is
    -(GEMMs + attention over isl x s) < 0, and the decode share does not depend on s.

    DeepSeek-V4.1-Flash, 954,000 total tok/s per GPU on 72 GB300 at ISL 100,000 / OSL 1,000:
    about 64 % (ratio 1), against 1 - 483,667 / 954,000 = 49.3 % from the prefill GEMMs alone.
    """
    if not 0 < ratio:
        raise InputError("-", "ratio", f"must be > 0, got {ratio}")
    kw = dict(
        model=catalogs.as_model(model),
        gpu=catalogs.as_gpu(gpu),
        gpus=gpus,
        tok_s=tok_s_per_gpu,
        per="gpu",
        counted=counted,
        isl=isl,
        osl=osl,
        batch=concurrency,
    )
    top = 1 - 1 / max(isl, 2)  # every input token cached but one
    if _ratio(0.0, **kw) <= ratio:
        share: float | None = 0.0
    elif _ratio(top, **kw) > ratio:
        share = None
    else:
        lo, hi = 0.0, top
        while hi - lo > tol:
            mid = (lo + hi) / 2
            if _ratio(mid, **kw) <= ratio:
                hi = mid
            else:
                lo = mid
        share = hi
    at = check.check_claim(cached_share=share, **kw) if share is not None else None  # type: ignore[arg-type]
    where = f"{tok_s_per_gpu:,.0f} {counted} tok/s per GPU at ISL {isl:,.0f} / OSL {osl:,.0f}"
    if share is None:
        formula = (
            f"{where} needs more than {ratio:g}x the GPUs' time whatever share is cached "
            f"({_ratio(top, **kw):.3g}x with all but one input token cached)"
        )
    else:
        assert at is not None
        formula = (
            f"{where} fits {ratio:g}x the GPUs' time once at least {share:.1%} of the input "
            f"tokens are cache hits: there {at.reason}"
        )
    return CachedShare(share, ratio, tok_s_per_gpu, counted, isl, osl, at, formula)


def cached_ceiling(model: ModelSpec | str, hw: GpuSpec | str, n_gpus: int) -> check.Check:
    """The most counted tokens/s per GPU that any cached share can give (a figure above it is
    impossible whatever share of it were prefix-cache hits): every request as long as the
    model allows (C = ``max_context_tokens``), all its input but one token served from the
    cache, one output token; per request the GPUs prefill that one new token after a prefix of
    C - 2 tokens and decode one token at C - 1, the time of both from the bounds
    (:func:`rackbook.physics.check.check_claim`, input + output counted, best batch).
    Counted cache hits cost no GEMM but their prefix reads and index scans grow with them,
    which is what bounds the rate."""
    m = catalogs.as_model(model)
    top = m.architecture.max_context_tokens
    if top is None:
        raise InputError(m.file, "architecture.max_context_tokens", "unknown in the model catalog")
    isl = top - 1
    return check.check_claim(
        m, hw, n_gpus, 1.0, counted="total", isl=isl, osl=1, cached_share=(isl - 1) / isl
    )


# --------------------------------------------------------------------------------------------
# batch-1 decode with speculation: the fewest bytes


@dataclass(frozen=True)
class FewestBytes:
    """The batch-1 bandwidth bound of one stream: tokens/s <= accepted tokens per step / the
    least time a step takes to stream the fewest bytes it can read (seconds, bytes)."""

    tokens_per_s: float
    step_s: float
    weight_bytes: float
    kv_bytes: float
    draft_bytes: float
    acceptance_length: float
    verify_tokens: int
    formula: str

    def __float__(self) -> float:
        return self.tokens_per_s


def batch1_fewest_bytes(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    n_gpus: int,
    acceptance_length: float = 1.0,
    *,
    context_tokens: int = 0,
    kv_dtype: str = "fp4",
) -> FewestBytes:
    """A batch-1 decode step over ``n_gpus`` GPUs streams at least the dense weights once, the
    fewest routed experts its verified tokens can touch (top-k per MoE layer: every token of
    the step may pick the same experts), the sequence's context reads once (the verified
    tokens share the context) and, with speculation, the drafter's weights; tokens/s <=
    ``acceptance_length`` / (bytes / (n_gpus x HBM bytes/s)).

    DeepSeek-V4.1-Flash on 4 x B300 (8 TB/s each): 12.02 GB / 32 TB/s = 0.3756 ms, 2,663 tok/s
    at acceptance 1; at 3.51 tokens per step, + the drafter's weights, about 8,960 tok/s (a
    uniform routing of six verified tokens instead touches 34.6 experts per layer: 33.5 GB,
    about 3,300 tok/s: a typical step, not a bound).
    """
    m = catalogs.as_model(model)
    if not acceptance_length >= 1:
        raise InputError("-", "acceptance_length", f"must be >= 1, got {acceptance_length}")
    spec = m.speculative
    if acceptance_length == 1:
        verify = 1
    elif spec is not None:
        verify = max(spec.draft_tokens + 1, math.ceil(acceptance_length))
    else:
        verify = math.ceil(acceptance_length)
    weights = roofline.active_weight_bytes_per_token(m, 1)  # top-k experts per layer: the fewest
    kv = (
        roofline.context_reads(m, context_tokens, "decode", kv_dtype).total
        if context_tokens
        else 0.0
    )
    draft = 0.0
    if verify > 1 and spec is not None:
        draft = float(spec.draft_active_params * roofline.DENSE_BYTES_PER_PARAM[spec.draft_dtype])
    step = roofline.bandwidth_floor_step_s(weights.bytes + kv + draft, hw, n_gpus)
    tps = acceptance_length / step.seconds
    formula = (
        f"step >= ({fmt(weights.bytes, 'B')} weights (dense once + top-"
        f"{m.moe.experts_per_token} experts per layer, the fewest {plural(verify, 'token')} "
        f"can touch) + {fmt(kv, 'B')} context + {fmt(draft, 'B')} drafter) / "
        f"{plural(n_gpus, 'GPU')} x {fmt(step.bytes_per_s / n_gpus, 'B/s')} = "
        f"{step.seconds * 1e3:.4g} ms; "
        f"{acceptance_length:g} tokens/step / {step.seconds * 1e3:.4g} ms = {tps:,.0f} tok/s"
    )
    return FewestBytes(
        tps, step.seconds, weights.bytes, kv, draft, acceptance_length, verify, formula
    )


def collective_budget_us(claim_step_s: float, floor_step_s: float, moe_layers: int) -> float:
    """Microseconds per MoE layer left for the expert dispatch and combine across the GPUs
    when a step takes ``claim_step_s`` seconds and streaming its bytes ``floor_step_s``:
    (claim step - floor step) / layers x 1e6 (negative: no time left). 1.21 ms against
    0.3756 ms over 40 layers: 20.9 us."""
    if moe_layers < 1:
        raise InputError("-", "moe_layers", f"must be >= 1, got {moe_layers}")
    return 1e6 * (claim_step_s - floor_step_s) / moe_layers
