"""Bounds the result chapters read: the verdict rule in words, the most tokens/s any cached
share gives, the prefix-read ceiling of new prefill tokens, the share the decoder replay layers
remove, and the time per MoE layer a step leaves for collectives."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rackbook.core.units import fmt, percent
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check, roofline

# --------------------------------------------------------------------------------------------
# the verdict rule


@dataclass(frozen=True)
class VerdictRule:
    """Where :func:`rackbook.physics.check.physics_verdict` turns, as the ratio claimed / bound:
    ``possible`` at or below ``impossible_above`` (1), ``impossible`` above it (a bound has no
    margin); ``undetermined`` only where the workload leaves out a part the verdict turns on."""

    impossible_above: float

    @property
    def text(self) -> str:
        """The rule in one sentence."""
        return (
            f"a figure is *impossible* above {self.impossible_above:g}x a bound (the least "
            "time the work can take) and *possible* at or below it; *undetermined* only where "
            "the workload leaves out a part the verdict turns on, such as an unpublished "
            "cached share"
        )


def verdict_rule() -> VerdictRule:
    """The threshold of :func:`rackbook.physics.check.physics_verdict` (1), checked against the
    function itself so that no chapter can state another rule."""
    bound = 1.0
    assert check.physics_verdict(bound) == "possible"
    assert check.physics_verdict(math.nextafter(bound, math.inf)) == "impossible"
    return VerdictRule(bound)


# --------------------------------------------------------------------------------------------
# cached share of a whole workload


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
# new prefill tokens behind a cached prefix


@dataclass(frozen=True)
class PrefixRead:
    """Per new prefill token behind a cached prefix: the prefix bytes it reads at both ends
    (sparse attention: the index-key scan plus the top-k rows; dense: every row in every
    consuming layer), the read times, the compute time, and the tokens/s ceilings they give
    (seconds, bytes, tokens/s)."""

    prefix_tokens: int
    sparse_bytes_per_new_token: float
    dense_bytes_per_new_token: float
    sparse_read_s: float
    dense_read_s: float
    compute_s_per_new_token: float
    tokens_per_s: float
    dense_tokens_per_s: float
    bound: str
    formula: str

    def __float__(self) -> float:
        return self.tokens_per_s


def prefix_read_model(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    prefix_tokens: int,
    *,
    kv_dtype: str = "fp4",
    n_gpus: int = 1,
    reuse_tokens: int = 1,
) -> PrefixRead:
    """Prefilling new tokens after a cached prefix of ``prefix_tokens`` tokens, through the
    encoder layers: each new token reads the prefix's caches there
    (:func:`rackbook.physics.roofline.context_reads`, prefill) at the sparse end and the dense
    end, ``reuse_tokens`` new tokens sharing one read (the bound shares it over
    :data:`rackbook.physics.check.PREFILL_CHUNK`), over ``n_gpus`` GPUs' bandwidth; compute =
    the prefill GEMMs plus attention and indexer FLOP at the prefix; ceiling = 1 / max(sparse
    read, compute) (the dense one beside it).
    DeepSeek-V4.1-Flash behind 128,000 tokens, one GB300: 15.71 MB (1.96 us) against 3.005 us
    of compute: 332,700 new tokens/s.
    """
    m = catalogs.as_model(model)
    if reuse_tokens < 1:
        raise InputError("-", "reuse_tokens", f"must be >= 1, got {reuse_tokens}")
    g = catalogs.as_gpu(hw)
    reads = roofline.context_reads(m, prefix_tokens, "prefill", kv_dtype)
    sparse = roofline.bandwidth_floor_step_s(reads.total / reuse_tokens, g, n_gpus)
    dense = roofline.bandwidth_floor_step_s(reads.dense / reuse_tokens, g, n_gpus)
    comp = roofline.compute_ceiling_tokens_per_s(m, g, "prefill", n_gpus, context=prefix_tokens)
    comp_s = comp.seconds_per_token / n_gpus
    bound = "KV read" if sparse.seconds >= comp_s else "compute"
    tps = 1 / max(sparse.seconds, comp_s)
    dense_tps = 1 / max(dense.seconds, comp_s)
    formula = (
        f"per new token, {roofline.phase_layers(m, 'prefill')} encoder layers ({reuse_tokens} "
        f"sharing one read): sparse {fmt(sparse.bytes, 'B')} -> "
        f"{sparse.seconds * 1e6:,.4g} µs, dense {fmt(dense.bytes, 'B')} -> "
        f"{dense.seconds * 1e6:,.4g} µs at {fmt(sparse.bytes_per_s, 'B/s')}; compute "
        f"{comp_s * 1e6:,.4g} µs; ceiling 1 / max = {tps:,.0f} new tokens/s ({bound} bound), "
        f"{dense_tps:,.0f} with dense reads"
    )
    return PrefixRead(
        prefix_tokens,
        sparse.bytes,
        dense.bytes,
        sparse.seconds,
        dense.seconds,
        comp_s,
        tps,
        dense_tps,
        bound,
        formula,
    )


def removable_share(
    model: ModelSpec | str,
    hw: GpuSpec | str = "gb300",
    prefix_tokens: int = 128_000,
    kv_dtype: str = "fp4",
) -> tuple[float, str]:
    """The share of a new prefill token's time that running the decoder layers on each
    request's last window only removes (vLLM's decoder replay layers), at the ceilings behind
    a cached prefix of ``prefix_tokens``: 1 - t_encoder / t_all, each t = max(compute, reads)
    per token (seconds). t_all: every layer (the decode-phase GEMMs, attention and indexer FLOP
    and context reads without the sliding window); t_encoder: the encoder layers only
    (:func:`prefix_read_model`). The last window's decoder pass is left out (it only lowers
    the share). DeepSeek-V4.1-Flash on GB300 behind 128,000 tokens: 1 - 3.005 / 6.043 = 50.3 %.
    """
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    after = prefix_read_model(m, g, prefix_tokens, kv_dtype=kv_dtype)
    t_after = 1 / after.tokens_per_s
    comp = roofline.compute_ceiling_tokens_per_s(m, g, "decode", context=prefix_tokens)
    r = roofline.context_reads(m, prefix_tokens, "decode", kv_dtype)
    read_all = roofline.bandwidth_floor_step_s(r.total - r.window, g).seconds
    t_all = max(comp.seconds_per_token, read_all)
    share = 1 - t_after / t_all
    how = (
        f"1 - {t_after * 1e6:.4g} µs (encoder layers) / {t_all * 1e6:.4g} µs (every layer) per "
        f"new token behind {prefix_tokens:,} cached tokens on {g.label} = {percent(share)}"
    )
    return share, how


# --------------------------------------------------------------------------------------------
# a longer context: the extra attention and indexer compute of a decode step


def context_compute_growth_s(
    model: ModelSpec | str, hw: GpuSpec | str, lo: float, hi: float, *, batch: int = 1
) -> float:
    """Least extra seconds of attention and indexer compute per decode step when ``batch``
    sequences on one GPU grow from ``lo`` to ``hi`` tokens of context: the extra FLOP of
    :func:`rackbook.physics.roofline.attention_flops` over the GPU's dense FLOP/s at the
    precision the dense weights run at. DeepSeek-V4.1-Flash on GB300, 128,000 -> 855,000
    tokens, one sequence: the index scan's 2 x 64 x 128 x 2.5 x 727,000 = 2.978e10 FLOP at
    5 PFLOP/s (FP8) = 5.96 us (the top-k rows, pool and window do not grow past 128,000)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    if not 0 <= lo < hi:
        raise InputError("-", "hi", f"need 0 <= lo < hi, got lo={lo}, hi={hi}")
    extra = roofline.attention_flops(m, hi).total - roofline.attention_flops(m, lo).total
    dense = roofline.weight_split(m, "decode").dense_dtype
    peak = g.flops(g.run_precision(dense))
    assert peak is not None
    return batch * extra / peak


# --------------------------------------------------------------------------------------------
# batch-1 decode: the time a step leaves for collectives


def collective_budget_us(claim_step_s: float, floor_step_s: float, moe_layers: int) -> float:
    """Microseconds per MoE layer left for the expert dispatch and combine across the GPUs
    when a step takes ``claim_step_s`` seconds and streaming its bytes ``floor_step_s``:
    (claim step - floor step) / layers x 1e6 (negative: no time left). 1.21 ms against
    0.3756 ms over 40 layers: 20.9 us."""
    if moe_layers < 1:
        raise InputError("-", "moe_layers", f"must be >= 1, got {moe_layers}")
    return 1e6 * (claim_step_s - floor_step_s) / moe_layers


# --------------------------------------------------------------------------------------------
# the compute ceiling, written out


def _sci(x: float) -> str:
    exp = 3 * math.floor(math.log10(abs(x)) / 3)
    return rf"{x / 10**exp:.3g} \times 10^{{{exp}}}"


def compute_ceiling_latex(model: ModelSpec | str, hw: GpuSpec | str, phase: str) -> str:
    """The compute ceiling per GPU in ``phase`` as LaTeX with its numbers: 1 / (2 x routed
    params / routed FLOP/s + 2 x dense params / dense FLOP/s) tokens/s
    (:func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`, each precision at the one
    the GPU runs it at). DeepSeek-V4.1-Flash decode on a GB300: ``C_decode = 1 / (2 x 8.49e9 /
    15e15 + 2 x 7.51e9 / 5e15) = 241,834`` tok/s per GPU."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    sp = roofline.weight_split(m, phase)
    f_r = g.flops(g.run_precision(sp.routed_dtype))
    f_d = g.flops(g.run_precision(sp.dense_dtype))
    assert f_r and f_d, f"{g.id} has no FLOP/s at {sp.routed_dtype} or {sp.dense_dtype}"
    routed = rf"\dfrac{{2 \times {_sci(sp.routed_params)}}}{{{_sci(f_r)}}}"
    dense = rf"\dfrac{{2 \times {_sci(sp.dense_params)}}}{{{_sci(f_d)}}}"
    tok_s = roofline.compute_ceiling_tokens_per_s(m, g, phase).tokens_per_s
    value = f"{tok_s:,.0f}".replace(",", "{,}")
    ceiling = rf"C_\text{{{phase}}} = \frac{{1}}{{{routed} + {dense}}}"
    return rf"{ceiling} = {value}\ \text{{tok/s per GPU}}"
