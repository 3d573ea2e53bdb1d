"""Batch-1 decode and speculative decoding: the experts a step's tokens touch (fewest, or
uniform routing), the weight bytes a token reads, and one stream's ceiling with a draft and a
verify step of several tokens."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rackbook.core.units import fmt, plural
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics.roofline.common import (
    bandwidth_floor_step_s,
    check_choice,
    need,
)
from rackbook.physics.roofline.context import context_reads
from rackbook.physics.roofline.weights import draft_bytes, expert_bytes, weight_split


def distinct_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts one MoE layer touches when ``tokens`` tokens each pick
    ``top_k`` of ``num_experts`` uniformly: E x (1 - (1 - k/E)^n). 6 tokens, top-6 of 384: 34.6."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)


def fewest_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """The fewest distinct experts ``tokens`` tokens can touch in a layer: top-k (0 without
    tokens)."""
    return float(min(top_k, num_experts)) if tokens > 0 else 0.0


@dataclass(frozen=True)
class Batch1Decode:
    """Bandwidth ceiling of single-sequence decode: tokens/s = tokens accepted per step / the
    least time one step takes to stream its bytes."""

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


def batch1_decode_ceiling_tokens_per_s(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    n_gpus: int = 1,
    acceptance_length: float = 1.0,
    *,
    context_tokens: int = 0,
    kv_dtype: str = "fp4",
    verify_tokens: int | None = None,
    routing: str = "fewest",
) -> Batch1Decode:
    """Batch-1 decode tokens/s over ``n_gpus`` GPUs' HBM bandwidth from the fewest bytes a step
    reads (``routing="uniform"``: uniform routing's expectation); no communication counted."""
    m = catalogs.as_model(model)
    if acceptance_length < 1:
        raise InputError("-", "acceptance_length", f"must be >= 1, got {acceptance_length}")
    spec = m.speculative
    if verify_tokens is None:
        if acceptance_length == 1:
            verify_tokens = 1
        elif spec is not None:
            verify_tokens = spec.draft_tokens + 1
        else:
            verify_tokens = math.ceil(acceptance_length)
    if verify_tokens < acceptance_length:
        raise InputError("-", "verify_tokens", "fewer than the tokens accepted per step")
    split, mo = weight_split(m, "decode"), m.moe
    need(m, moe__num_routed_experts=mo.num_routed_experts)
    assert mo.num_routed_experts and mo.experts_per_token
    check_choice(routing, ("fewest", "uniform"), "routing")
    touched = fewest_experts if routing == "fewest" else distinct_experts
    per_layer = touched(mo.num_routed_experts, mo.experts_per_token, verify_tokens)
    weights = split.dense_bytes + split.moe_layers * per_layer * expert_bytes(m)
    kv = context_reads(m, context_tokens, "decode", kv_dtype).total if context_tokens else 0.0
    draft = draft_bytes(m) if verify_tokens > 1 else 0.0
    step = bandwidth_floor_step_s(weights + kv + draft, hw, n_gpus)
    tps = acceptance_length / step.seconds
    formula = (
        f"step >= ({fmt(weights, 'B')} weights for {plural(verify_tokens, 'token')} "
        f"({routing} routing) + "
        f"{fmt(kv, 'B')} KV + {fmt(draft, 'B')} drafter) / ({n_gpus} x "
        f"{fmt(step.bytes_per_s / n_gpus, 'B/s')}) = {step.seconds * 1e3:.4g} ms; "
        f"{acceptance_length:g} tokens/step / {step.seconds * 1e3:.4g} ms = {tps:,.0f} tokens/s"
    )
    return Batch1Decode(
        tps, step.seconds, weights, kv, draft, acceptance_length, verify_tokens, formula
    )
