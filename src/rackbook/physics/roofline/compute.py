"""The compute ceiling: FLOP per token of each phase (2 x active parameters, plus attention
where a context is given) over the GPUs' dense FLOP/s, mixed precision as the module
:mod:`rackbook.physics.roofline` describes."""

from __future__ import annotations

from dataclasses import dataclass

from rackbook.core.units import eng, fmt, plural
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics.roofline.context import attention_flops
from rackbook.physics.roofline.weights import weight_split


@dataclass(frozen=True)
class Ceiling:
    """Compute ceiling: tokens/s if every FLOP/s of the GPUs went into the model's per-token
    GEMM FLOP, each part at the precision it runs at."""

    tokens_per_s: float
    seconds_per_token: float
    flops_per_token: int
    n_gpus: int
    notes: tuple[str, ...]
    formula: str

    def __float__(self) -> float:
        return self.tokens_per_s


def compute_ceiling_tokens_per_s(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    phase: str = "decode",
    n_gpus: int = 1,
    *,
    active_scale: float = 1.0,
    context: float = 0,
) -> Ceiling:
    """Tokens/s ceiling of ``n_gpus`` GPUs: 2 x routed and 2 x dense params over the FLOP/s at each
    one's precision, plus attention FLOP at ``context``; ``active_scale`` scales the parameters."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    split = weight_split(m, phase)
    notes = []
    parts, seconds = [], 0.0
    for label, params, dtype in (
        ("routed", split.routed_params, split.routed_dtype),
        ("dense", split.dense_params, split.dense_dtype),
    ):
        run = g.run_precision(dtype)
        if run != dtype:
            notes.append(f"{g.label} has no {dtype} tensor cores: the {label} weights run at {run}")
        peak = g.flops(run)
        assert peak is not None
        t = 2 * params * active_scale / peak
        seconds += t
        parts.append(f"2 x {eng(params * active_scale)} / {fmt(peak, 'FLOP/s')} ({run})")
    attn = 0.0
    if context:
        af = attention_flops(m, context, phase)
        run = g.run_precision(split.dense_dtype)
        peak = g.flops(run)
        assert peak is not None
        attn = af.total
        seconds += attn / peak
        parts.append(
            f"{eng(attn)} attention at {context:,.0f} tokens / {fmt(peak, 'FLOP/s')} ({run})"
        )
    tps = n_gpus / seconds
    formula = (
        f"{' + '.join(parts)} = {seconds * 1e6:,.4g} µs/token per GPU; x {plural(n_gpus, 'GPU')} = "
        f"{tps:,.0f} tokens/s" + (f" ({'; '.join(notes)})" if notes else "")
    )
    fpt = round(2 * split.active_params * active_scale + attn)
    return Ceiling(tps, seconds, fpt, n_gpus, tuple(notes), formula)
