"""Weights: the active parameters a token of each phase touches, split into routed experts and
the rest; one routed expert's bytes; the bytes a deployment stores."""

from __future__ import annotations

from dataclasses import dataclass

from rackbook.core.units import eng, fmt
from rackbook.errors import InputError
from rackbook.inputs.catalogs import ModelSpec
from rackbook.physics.roofline.common import (
    DENSE_BYTES_PER_PARAM,
    PHASES,
    check_choice,
    frac_text,
    need,
)


@dataclass(frozen=True)
class WeightSplit:
    """Active parameters per token of a phase, split into routed experts and the rest."""

    phase: str
    routed_params: int
    dense_params: int
    routed_dtype: str
    dense_dtype: str
    moe_layers: int
    formula: str

    @property
    def active_params(self) -> int:
        return self.routed_params + self.dense_params

    @property
    def dense_bytes(self) -> float:
        """Bytes of the dense active weights at their dtype (bytes per token's pass)."""
        return self.dense_params * float(DENSE_BYTES_PER_PARAM[self.dense_dtype])


def moe_layers(model: ModelSpec, phase: str = "decode") -> int:
    """MoE layers a token of ``phase`` passes: all in decode, the encoder's only in prefill."""
    check_choice(phase, PHASES, "phase")
    m = model.moe
    need(model, moe__num_moe_layers=m.num_moe_layers)
    assert m.num_moe_layers is not None
    enc = model.architecture.num_encoder_layers
    return min(m.num_moe_layers, enc) if phase == "prefill" and enc else m.num_moe_layers


def weight_split(model: ModelSpec, phase: str = "decode") -> WeightSplit:
    """Routed params per token = MoE layers x top-k x 3 x hidden x expert intermediate; the rest of
    the active parameters are dense."""
    m, a = model.moe, model.architecture
    active = model.active_params(phase)
    need(
        model,
        **{f"params__active_{phase}": active},
        moe__experts_per_token=m.experts_per_token,
        moe__moe_intermediate_size=m.moe_intermediate_size,
        architecture__hidden_size=a.hidden_size,
    )
    assert active and m.experts_per_token and m.moe_intermediate_size and a.hidden_size
    layers = moe_layers(model, phase)
    routed = layers * m.experts_per_token * 3 * a.hidden_size * m.moe_intermediate_size
    dense = active - routed
    if dense < 0:
        raise InputError(
            model.file,
            f"params.active_{phase}",
            f"smaller than the {eng(routed)} routed params of {layers} MoE layers",
        )
    dense_dtype = model.weights.dense_dtype or "bf16"
    routed_dtype = model.weights.routed_expert_dtype or dense_dtype
    formula = (
        f"routed {layers} layers x top-{m.experts_per_token} x 3 x {a.hidden_size} x "
        f"{m.moe_intermediate_size} = {eng(routed)} ({routed_dtype}); dense {eng(active)} - "
        f"{eng(routed)} = {eng(dense)} ({dense_dtype})"
    )
    return WeightSplit(phase, routed, dense, routed_dtype, dense_dtype, layers, formula)


def draft_bytes(model: ModelSpec) -> float:
    """Bytes of the drafter's active weights a speculative step reads once (0 without a
    drafter in the catalog)."""
    spec = model.speculative
    if spec is None:
        return 0.0
    return spec.draft_active_params * float(DENSE_BYTES_PER_PARAM[spec.draft_dtype])


def expert_bytes(model: ModelSpec) -> float:
    """Bytes of one routed expert: the catalog's figure, else params x bytes/param."""
    w, m, a = model.weights, model.moe, model.architecture
    if w.routed_expert_bytes is not None:
        return float(w.routed_expert_bytes)
    need(model, moe__moe_intermediate_size=m.moe_intermediate_size, hidden=a.hidden_size)
    assert m.moe_intermediate_size and a.hidden_size
    dtype = w.routed_expert_dtype or w.dense_dtype or "bf16"
    return float(3 * a.hidden_size * m.moe_intermediate_size * DENSE_BYTES_PER_PARAM[dtype])


@dataclass(frozen=True)
class Storage:
    """Bytes of the backbone's weights: routed experts (all of them) and everything else."""

    routed_bytes: float
    dense_bytes: float
    formula: str

    @property
    def total_bytes(self) -> float:
        return self.routed_bytes + self.dense_bytes

    def per_gpu_bytes(self, n_gpus: int) -> float:
        """Bytes on each of ``n_gpus`` GPUs with the experts spread over them (expert
        parallel) and the dense weights on every GPU (data-parallel attention)."""
        return self.dense_bytes + self.routed_bytes / n_gpus


def storage(model: ModelSpec) -> Storage:
    """Stored bytes: every routed expert, and the dense (backbone - routed) params at their
    dtype."""
    m, a, p = model.moe, model.architecture, model.params
    backbone = p.backbone or p.total
    need(
        model,
        params__backbone=backbone,
        moe__num_routed_experts=m.num_routed_experts,
        moe__num_moe_layers=m.num_moe_layers,
        moe__moe_intermediate_size=m.moe_intermediate_size,
        architecture__hidden_size=a.hidden_size,
    )
    assert backbone and m.num_routed_experts and m.num_moe_layers
    assert m.moe_intermediate_size and a.hidden_size
    n_experts = m.num_moe_layers * m.num_routed_experts
    routed_params = n_experts * 3 * a.hidden_size * m.moe_intermediate_size
    dense_params = backbone - routed_params
    if dense_params < 0:
        raise InputError(model.file, "params.backbone", "below the routed params")
    dtype = model.weights.dense_dtype or "bf16"
    routed = n_experts * expert_bytes(model)
    dense = float(dense_params * DENSE_BYTES_PER_PARAM[dtype])
    formula = (
        f"routed {m.num_moe_layers} layers x {m.num_routed_experts} experts x "
        f"{fmt(expert_bytes(model), 'B')} = {fmt(routed, 'B')}; dense ({eng(backbone)} - "
        f"{eng(routed_params)}) params x {frac_text(DENSE_BYTES_PER_PARAM[dtype])} B ({dtype}) = "
        f"{fmt(dense, 'B')}; total {fmt(routed + dense, 'B')}"
    )
    return Storage(routed, dense, formula)


@dataclass(frozen=True)
class Served:
    """A model with its weights in one format (``model``), the format in words, and whether
    stated."""

    model: ModelSpec
    routed_dtype: str
    dense_dtype: str
    text: str
    stated: bool


def _formats(model: ModelSpec) -> list[tuple[str, str, str]]:
    w = model.weights
    dense = w.dense_dtype or "bf16"
    out: list[tuple[str, str, str]] = [(w.routed_expert_dtype or dense, dense, "as published")]
    out += [(s.routed_expert_dtype, s.dense_dtype, s.checkpoint) for s in w.served]
    return out


def _with_format(model: ModelSpec, routed: str, dense: str) -> ModelSpec:
    w = model.weights
    if (routed, dense) == (w.routed_expert_dtype, w.dense_dtype):
        return model
    native = routed == (w.routed_expert_dtype or w.dense_dtype or "bf16")
    weights = w.model_copy(
        update={
            "routed_expert_dtype": routed,
            "dense_dtype": dense,
            "routed_expert_bytes": w.routed_expert_bytes if native else None,
        }
    )
    return model.model_copy(update={"weights": weights})


def served(model: ModelSpec, expert_dtype: str | None = None) -> Served:
    """The weights a bound reads: at ``expert_dtype`` when stated, else the catalog's format with
    the fewest stored bytes (a bound must hold for every format)."""
    formats = _formats(model)
    if expert_dtype is not None:
        check_choice(expert_dtype, ("fp4", "fp8", "bf16"), "precision")
        match = [f for f in formats if f[0] == expert_dtype]
        routed, dense, ckpt = match[0] if match else (expert_dtype, formats[0][1], "as stated")
        m = _with_format(model, routed, dense)
        return Served(m, routed, dense, f"{routed} experts, {dense} dense ({ckpt}; stated)", True)

    def stored(f: tuple[str, str, str]) -> float:
        try:
            return storage(_with_format(model, f[0], f[1])).total_bytes
        except InputError:  # sizes unknown: order by bytes per expert parameter
            return float(DENSE_BYTES_PER_PARAM[f[0]])

    routed, dense, ckpt = min(formats, key=stored)
    m = _with_format(model, routed, dense)
    what = "the fewest bytes the catalog lists" if len(formats) > 1 else "the only format listed"
    return Served(m, routed, dense, f"{routed} experts, {dense} dense ({ckpt}: {what})", False)
