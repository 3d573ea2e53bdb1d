"""Bounds the result chapters read: the verdict rule in words, the most tokens/s any cached
share gives, the prefix-read ceiling of new prefill tokens, the share the decoder replay layers
remove, and the time per MoE layer a step leaves for collectives."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rackbook.core.units import percent
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check, roofline


@dataclass(frozen=True)
class VerdictRule:
    """Where :func:`rackbook.physics.check.physics_verdict` turns (ratio claimed / bound)."""

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
    """The verdict's threshold (1), checked against the function so no chapter states another."""
    bound = 1.0
    assert check.physics_verdict(bound) == "possible"
    assert check.physics_verdict(math.nextafter(bound, math.inf)) == "impossible"
    return VerdictRule(bound)


def cached_ceiling(model: ModelSpec | str, hw: GpuSpec | str, n_gpus: int) -> check.Check:
    """The most total tokens/s per GPU any cached share gives (whole context, one output token)."""
    m = catalogs.as_model(model)
    top = roofline.need(m, architecture__max_context_tokens=m.architecture.max_context_tokens)
    isl = top[0] - 1
    return check.check_claim(
        m, hw, n_gpus, 1.0, counted="total", isl=isl, osl=1, cached_share=(isl - 1) / isl
    )


@dataclass(frozen=True)
class PrefixRead:
    """Per new prefill token behind a cached prefix: bytes, seconds and tokens/s ceilings."""

    prefix_tokens: int
    sparse_bytes_per_new_token: float
    dense_bytes_per_new_token: float
    sparse_read_s: float
    dense_read_s: float
    compute_s_per_new_token: float
    tokens_per_s: float
    dense_tokens_per_s: float
    bound: str

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
    """New prefill tokens behind a cached prefix: 1 / max(sparse read, compute) tokens/s."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    if reuse_tokens < 1:
        raise InputError("-", "reuse_tokens", f"must be >= 1, got {reuse_tokens}")
    reads = roofline.context_reads(m, prefix_tokens, "prefill", kv_dtype)
    sparse = roofline.bandwidth_floor_step_s(reads.total / reuse_tokens, g, n_gpus)
    dense = roofline.bandwidth_floor_step_s(reads.dense / reuse_tokens, g, n_gpus)
    comp = roofline.compute_ceiling_tokens_per_s(m, g, "prefill", n_gpus, context=prefix_tokens)
    comp_s = comp.seconds_per_token / n_gpus
    bound = "KV read" if sparse.seconds >= comp_s else "compute"
    tps, dense_tps = 1 / max(sparse.seconds, comp_s), 1 / max(dense.seconds, comp_s)
    sparse_dense = (sparse.bytes, dense.bytes, sparse.seconds, dense.seconds)
    return PrefixRead(prefix_tokens, *sparse_dense, comp_s, tps, dense_tps, bound)


def removable_share(
    model: ModelSpec | str,
    hw: GpuSpec | str = "gb300",
    prefix_tokens: int = 128_000,
    kv_dtype: str = "fp4",
) -> tuple[float, str]:
    """Share of a new prefill token's time decoder replay layers remove: 1 - t_encoder / t_all."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    t_after = 1 / prefix_read_model(m, g, prefix_tokens, kv_dtype=kv_dtype).tokens_per_s
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


def context_compute_growth_s(
    model: ModelSpec | str, hw: GpuSpec | str, lo: float, hi: float, *, batch: int = 1
) -> float:
    """Least extra attention compute seconds a decode step takes from ``lo`` to ``hi`` tokens."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    extra = roofline.attention_flops(m, hi).total - roofline.attention_flops(m, lo).total
    dense = roofline.weight_split(m, "decode").dense_dtype
    return batch * extra / (g.flops(g.run_precision(dense)) or math.nan)


def collective_budget_us(claim_step_s: float, floor_step_s: float, moe_layers: int) -> float:
    """Microseconds per MoE layer left for dispatch and combine (negative: none)."""
    if moe_layers < 1:
        raise InputError("-", "moe_layers", f"must be >= 1, got {moe_layers}")
    return 1e6 * (claim_step_s - floor_step_s) / moe_layers


def _sci(x: float) -> str:
    exp = 3 * math.floor(math.log10(abs(x)) / 3)
    return rf"{x / 10**exp:.3g} \times 10^{{{exp}}}"


def compute_ceiling_latex(model: ModelSpec | str, hw: GpuSpec | str, phase: str) -> str:
    """The compute ceiling per GPU in ``phase`` as LaTeX with its numbers (tokens/s)."""
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
