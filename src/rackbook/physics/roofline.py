"""Roofline arithmetic: KV-cache bytes, FLOP per token, compute ceilings and bandwidth floors.

Plain arithmetic on catalog entries (:mod:`rackbook.inputs.catalogs`); no measurement. Units are in
the
names: ``_bytes`` (bytes), ``_s`` (seconds), ``_tokens_per_s`` (tokens/s), ``flops`` (FLOP or
FLOP/s as documented). Results where several numbers belong together are small frozen dataclasses
with a ``formula`` string showing the arithmetic, for notebooks to display.

These are ceilings and floors, not predictions: they ignore kernel efficiency, communication,
scheduling and (unless said) the KV cache.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from fractions import Fraction

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import PRECISIONS, GpuSpec, ModelSpec
from rackbook.physics.units import eng, fmt

PHASES: tuple[str, ...] = ("prefill", "decode")

#: Bytes per parameter for dense weights stored at a precision (FP8 scales ignored).
DENSE_BYTES_PER_PARAM: dict[str, Fraction] = {
    "fp4": Fraction(1, 2),
    "fp8": Fraction(1),
    "bf16": Fraction(2),
}


def _frac(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


def _check_choice(value: str, choices: tuple[str, ...], field: str) -> None:
    if value not in choices:
        raise InputError("-", field, f"{value!r} is not one of {', '.join(choices)}")


def _check_positive(value: float, field: str, *, allow_zero: bool = False) -> None:
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError("-", field, f"must be {'>=' if allow_zero else '>'} 0, got {value}")


# --------------------------------------------------------------------------------------------
# KV cache


@dataclass(frozen=True)
class KvBytes:
    """Global KV-cache bytes per token of a model at one storage dtype."""

    model: str
    kv_dtype: str
    rows_per_token: Fraction
    kv_row_bytes: int
    indexer_row_bytes: int
    bytes_per_token_exact: Fraction
    formula: str

    @property
    def bytes_per_token(self) -> int:
        """Bytes per token, rounded up if the layout gives a fraction."""
        return math.ceil(self.bytes_per_token_exact)


def kv_rows_per_token(model: ModelSpec) -> Fraction:
    """Global KV rows each token adds: sum over KV-owning layers of 1/compression_ratio."""
    ratios = model.kv_cache.compression_ratios
    if ratios is None:
        rel = model.kv_cache.relative_to
        hint = (
            f" (the catalog only says about {rel.factor:g}x {rel.model})" if rel is not None else ""
        )
        raise InputError(model.file, "kv_cache.compression_ratios", f"KV layout unknown{hint}")
    return sum((Fraction(1, r) for r in ratios), Fraction(0))


def kv_bytes(model: ModelSpec, kv_dtype: str = "fp4") -> KvBytes:
    """The KV bytes-per-token breakdown: rows/token x (compressed-KV row + indexer-key row)."""
    _check_choice(kv_dtype, PRECISIONS, "kv_dtype")
    rows = kv_rows_per_token(model)
    table = model.kv_cache.row_bytes
    row = getattr(table, kv_dtype) if table is not None else None
    if row is None:
        raise InputError(
            model.file, f"kv_cache.row_bytes.{kv_dtype}", "row size not known for this model"
        )
    ratios = model.kv_cache.compression_ratios or []
    layers = model.kv_cache.owning_layers or []
    total = rows * row.total
    if len(ratios) <= 8:
        rows_txt = " + ".join(f"1/{r}" for r in ratios) + f" = {_frac(rows)}"
        layers_txt = ", ".join(map(str, layers))
    else:
        rows_txt = f"{len(ratios)} layers, sum of 1/ratio = {_frac(rows)}"
        layers_txt = f"{layers[0]}..{layers[-1]} ({len(layers)} layers)"
    formula = (
        f"KV-owning layers: {layers_txt}; rows/token = {rows_txt}; "
        f"row = {row.kv} B KV + {row.indexer} B indexer = {row.total} B; "
        f"bytes/token = {_frac(rows)} x {row.total} = {_frac(total)} B"
    )
    return KvBytes(model.id, kv_dtype, rows, row.kv, row.indexer, total, formula)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "fp4") -> int:
    """Global KV-cache bytes per token (int), computed from the layout in the model entry.

    The fixed-size sliding-window cache is not per-token and is not counted.
    DeepSeek-V4.1-Flash: 2.5 x (288 + 68) = 890 (fp4), 2.5 x (528 + 132) = 1650 (fp8),
    2.5 x (1024 + 256) = 3200 (bf16).
    """
    return kv_bytes(model, kv_dtype).bytes_per_token


def kv_bytes_per_sequence(model: ModelSpec, context_tokens: int, kv_dtype: str = "fp4") -> int:
    """Global KV bytes held by one sequence of ``context_tokens`` tokens (per-token rate x
    tokens, rounded up; block rounding and the sliding-window cache are ignored)."""
    _check_positive(context_tokens, "context_tokens", allow_zero=True)
    return math.ceil(kv_bytes(model, kv_dtype).bytes_per_token_exact * context_tokens)


@dataclass(frozen=True)
class Fit:
    """How many sequences' KV caches fit in one GPU's HBM after the weights."""

    sequences: int
    free_bytes: float
    bytes_per_sequence: int
    formula: str

    def __int__(self) -> int:
        return self.sequences


def sequences_fitting(
    model: ModelSpec,
    hw: GpuSpec | str,
    context_tokens: int,
    kv_dtype: str = "fp4",
    *,
    weight_bytes_per_gpu: float,
    memory_fraction: float = 1.0,
) -> Fit:
    """Sequences of ``context_tokens`` whose global KV fits on one GPU:
    floor((HBM bytes x memory_fraction - weight_bytes_per_gpu) / KV bytes per sequence).

    ``weight_bytes_per_gpu`` (bytes) must be given: it depends on the parallel layout.
    Activations, CUDA graphs and the sliding-window cache are not subtracted; use
    ``memory_fraction`` (like vLLM's ``gpu_memory_utilization``) to leave room for them.
    Uses the lower bound of the HBM capacity where the catalog gives a range.
    """
    g = catalogs.as_gpu(hw)
    _check_positive(context_tokens, "context_tokens")
    _check_positive(weight_bytes_per_gpu, "weight_bytes_per_gpu", allow_zero=True)
    if not 0 < memory_fraction <= 1:
        raise InputError("-", "memory_fraction", f"must be in (0, 1], got {memory_fraction}")
    per_seq = kv_bytes_per_sequence(model, context_tokens, kv_dtype)
    free = g.hbm_capacity_bytes * memory_fraction - weight_bytes_per_gpu
    n = max(0, math.floor(free / per_seq))
    formula = (
        f"floor(({fmt(g.hbm_capacity_bytes, 'B')} x {memory_fraction:g} - "
        f"{fmt(weight_bytes_per_gpu, 'B')} weights) / ({context_tokens} tokens x "
        f"{_frac(kv_bytes(model, kv_dtype).bytes_per_token_exact)} B = {fmt(per_seq, 'B')})) "
        f"= {n} sequences"
    )
    return Fit(n, free, per_seq, formula)


def kv_read_time_s(
    extra_tokens: int,
    model: ModelSpec,
    hw: GpuSpec | str,
    kv_dtype: str = "fp4",
    n_gpus: int = 1,
) -> Step:
    """Seconds to stream the global KV of ``extra_tokens`` more context tokens once from HBM
    (per sequence, per decode step) across ``n_gpus`` GPUs' bandwidth.

    Example: (855,000 - 128,000) x 890 B = 647 MB at 8 TB/s = 80.9 us.
    """
    _check_positive(extra_tokens, "extra_tokens", allow_zero=True)
    extra = kv_bytes_per_sequence(model, extra_tokens, kv_dtype)
    step = bandwidth_floor_step_s(extra, hw, n_gpus)
    per_tok = _frac(kv_bytes(model, kv_dtype).bytes_per_token_exact)
    formula = f"{extra_tokens} tokens x {per_tok} B = {fmt(extra, 'B')}; {step.formula}"
    return Step(step.seconds, step.bytes, step.bytes_per_s, formula)


# --------------------------------------------------------------------------------------------
# compute


def flops_per_token(model: ModelSpec, phase: str) -> int:
    """FLOP per token in ``phase`` (prefill|decode): 2 x active parameters (one multiply-add per
    active weight; attention FLOP, which grow with context, are not included)."""
    _check_choice(phase, PHASES, "phase")
    active = model.active_params(phase)
    if active is None:
        raise InputError(model.file, f"params.active_{phase}", "active parameters not known")
    return 2 * active


@dataclass(frozen=True)
class Ceiling:
    """Compute ceiling: tokens/s if every FLOP/s went into the model's per-token FLOP."""

    tokens_per_s: float
    flops_per_s: float
    flops_per_token: int
    formula: str

    def __float__(self) -> float:
        return self.tokens_per_s


def compute_ceiling_tokens_per_s(
    model: ModelSpec,
    hw: GpuSpec | str,
    precision: str = "fp4",
    phase: str = "decode",
    n_gpus: int = 1,
) -> Ceiling:
    """Tokens/s ceiling = n_gpus x dense FLOP/s at ``precision`` / (2 x active params).

    DeepSeek-V4.1-Flash decode on one B300 at FP4: 15e15 / 32e9 = 468,750 tokens/s.
    """
    g = catalogs.as_gpu(hw)
    _check_choice(precision, PRECISIONS, "precision")
    _check_positive(n_gpus, "n_gpus")
    peak = g.flops(precision)
    if peak is None:
        raise InputError("-", f"gpus.{g.id}.dense_flops.{precision}", "not supported by this GPU")
    fpt = flops_per_token(model, phase)
    total = n_gpus * peak
    tps = total / fpt
    formula = (
        f"{n_gpus} x {fmt(peak, 'FLOP/s')} ({g.id} dense {precision}) / "
        f"(2 x {eng(fpt / 2)} active params = {fmt(fpt, 'FLOP')}/token) "
        f"= {tps:,.0f} tokens/s"
    )
    return Ceiling(tps, total, fpt, formula)


# --------------------------------------------------------------------------------------------
# bandwidth


@dataclass(frozen=True)
class Step:
    """Time to stream ``bytes`` once from HBM at the aggregate bandwidth of the GPUs."""

    seconds: float
    bytes: float
    bytes_per_s: float
    formula: str

    def __float__(self) -> float:
        return self.seconds


def bandwidth_floor_step_s(nbytes: float, hw: GpuSpec | str, n_gpus: int = 1) -> Step:
    """Lower bound on a step's time: ``nbytes`` / (n_gpus x HBM bytes/s), in seconds
    (assumes the bytes are spread evenly over the GPUs)."""
    g = catalogs.as_gpu(hw)
    _check_positive(nbytes, "bytes", allow_zero=True)
    _check_positive(n_gpus, "n_gpus")
    bw = n_gpus * g.hbm_bandwidth_bytes_per_s
    s = nbytes / bw
    formula = (
        f"{fmt(nbytes, 'B')} / ({n_gpus} x {fmt(g.hbm_bandwidth_bytes_per_s, 'B/s')}) "
        f"= {s * 1e6:.4g} us"
    )
    return Step(s, nbytes, bw, formula)


@dataclass(frozen=True)
class ActiveWeights:
    """Weight bytes one batch-1 decode step streams from HBM.

    ``method`` is ``"derived"`` (from the entry's shapes, see
    :func:`active_weight_bytes_per_token`) or ``"catalog"`` (the entry's sourced
    ``weights.decode_active_weight_bytes``). ``catalog_bytes`` is that figure (or None) for
    comparison.
    """

    bytes: float
    method: str
    routed_bytes: float | None
    dense_bytes: float | None
    catalog_bytes: int | None
    formula: str

    def __float__(self) -> float:
        return self.bytes


def active_weight_bytes_per_token(
    model: ModelSpec, *, moe_layers: int | None = None
) -> ActiveWeights:
    """Bytes of weights a batch-1 decode step streams from HBM.

    Derivation (``method="derived"``), needing the number of MoE layers L (from
    ``moe.num_moe_layers`` or the ``moe_layers`` argument, an explicit assumption):

    - routed bytes = L x top-k x routed-expert bytes (experts stored FP4 with scales);
    - routed params = L x top-k x 3 x hidden x moe_intermediate (SwiGLU gate, up, down);
    - dense bytes = (decode active params - routed params) x bytes/param of the dense dtype
      (FP8: 1 B; this counts the shared expert, attention, and whatever else the "active
      parameters" figure includes, e.g. the LM head, at FP8);
    - total = routed bytes + dense bytes.

    DeepSeek-V4.1-Flash with L = 40 (every layer MoE, an assumption): 40 x 6 x 18.8 MB
    = 4.512 GB routed; 16e9 - 40 x 6 x 3 x 5120 x 2304 = 7.507e9 dense params at 1 B; total
    12.02 GB, 0.15 % above the reference sheet's "about 12 GB". The sheet does not give L, so
    without ``moe_layers`` the sourced catalog figure is used (``method="catalog"``).
    """
    w, moe, arch = model.weights, model.moe, model.architecture
    catalog_bytes = w.decode_active_weight_bytes
    layers = moe_layers if moe_layers is not None else moe.num_moe_layers
    if moe_layers is not None:
        _check_positive(moe_layers, "moe_layers")
    needed = {
        "moe.num_moe_layers": layers,
        "moe.experts_per_token": moe.experts_per_token,
        "moe.moe_intermediate_size": moe.moe_intermediate_size,
        "architecture.hidden_size": arch.hidden_size,
        "weights.routed_expert_bytes": w.routed_expert_bytes,
        "weights.dense_dtype": w.dense_dtype,
        "params.active_decode": model.active_params("decode"),
    }
    missing = [k for k, v in needed.items() if v is None]
    if missing:
        if catalog_bytes is not None:
            formula = (
                f"catalog figure {fmt(catalog_bytes, 'B')} "
                f"({w.decode_active_weight_bytes_source}); "
                f"not derivable: {', '.join(missing)} unknown"
            )
            return ActiveWeights(
                float(catalog_bytes), "catalog", None, None, catalog_bytes, formula
            )
        raise InputError(
            model.file, missing[0], "unknown, and weights.decode_active_weight_bytes is null"
        )
    assert layers is not None and moe.experts_per_token is not None  # for the type checker
    assert w.routed_expert_bytes is not None and w.dense_dtype is not None
    assert moe.moe_intermediate_size is not None and arch.hidden_size is not None
    active = model.active_params("decode")
    assert active is not None
    k = moe.experts_per_token
    routed_bytes = layers * k * w.routed_expert_bytes
    expert_params = 3 * arch.hidden_size * moe.moe_intermediate_size
    routed_params = layers * k * expert_params
    dense_params = active - routed_params
    if dense_params < 0:
        raise InputError(
            model.file,
            "params.active_decode",
            f"smaller than the routed params {routed_params} implied by {layers} MoE layers",
        )
    per_param = DENSE_BYTES_PER_PARAM[w.dense_dtype]
    dense_bytes = float(dense_params * per_param)
    total = routed_bytes + dense_bytes
    formula = (
        f"routed: {layers} MoE layers x top-{k} x {fmt(w.routed_expert_bytes, 'B')} = "
        f"{fmt(routed_bytes, 'B')}; dense: ({eng(active)} active - {layers} x {k} x 3 x "
        f"{arch.hidden_size} x {moe.moe_intermediate_size} = {eng(routed_params)} routed) "
        f"params x {_frac(per_param)} B ({w.dense_dtype}) = {fmt(dense_bytes, 'B')}; "
        f"total {fmt(total, 'B')}"
    )
    if catalog_bytes is not None:
        formula += (
            f" ({(total / catalog_bytes - 1) * 100:+.2f} % vs catalog {fmt(catalog_bytes, 'B')})"
        )
    return ActiveWeights(total, "derived", routed_bytes, dense_bytes, catalog_bytes, formula)


@dataclass(frozen=True)
class Batch1Decode:
    """Bandwidth ceiling of single-sequence decode: tokens/s = acceptance_length / step floor."""

    tokens_per_s: float
    step_s: float
    weight_bytes: float
    kv_bytes: int
    acceptance_length: float
    formula: str

    def __float__(self) -> float:
        return self.tokens_per_s


def batch1_decode_ceiling_tokens_per_s(
    model: ModelSpec,
    hw: GpuSpec | str,
    n_gpus: int = 1,
    acceptance_length: float = 1.0,
    *,
    context_tokens: int = 0,
    kv_dtype: str = "fp4",
    moe_layers: int | None = None,
) -> Batch1Decode:
    """Batch-1 decode ceiling in tokens/s: each step streams the active weights (and, with
    ``context_tokens``, the sequence's global KV) once over ``n_gpus`` GPUs' HBM bandwidth and
    yields ``acceptance_length`` tokens (speculative decoding; 1.0 = none).

    Optimistic: a multi-token verification step touches more distinct experts than a one-token
    step, and the draft model's own cost is ignored.
    4 x B300, 12 GB: 12e9 / 32e12 = 0.375 ms/step -> 2,667 tokens/s at acceptance 1.
    """
    if acceptance_length < 1:
        raise InputError("-", "acceptance_length", f"must be >= 1, got {acceptance_length}")
    weights = active_weight_bytes_per_token(model, moe_layers=moe_layers)
    kv = kv_bytes_per_sequence(model, context_tokens, kv_dtype) if context_tokens else 0
    step = bandwidth_floor_step_s(weights.bytes + kv, hw, n_gpus)
    tps = acceptance_length / step.seconds
    formula = (
        f"step >= ({fmt(weights.bytes, 'B')} weights + {fmt(kv, 'B')} KV) / "
        f"({n_gpus} x {fmt(step.bytes_per_s / n_gpus, 'B/s')}) = {step.seconds * 1e3:.4g} ms; "
        f"{acceptance_length:g} tokens/step / {step.seconds * 1e3:.4g} ms = {tps:,.0f} tokens/s"
    )
    return Batch1Decode(tps, step.seconds, weights.bytes, kv, acceptance_length, formula)


# --------------------------------------------------------------------------------------------
# CLI


def cli_kv_bytes(args: argparse.Namespace) -> int:
    """``rackbook kv-bytes MODEL [--kv-dtype D] [--json] [--context N]``.

    Prints the derivation, then the bytes per token as the last line (with ``--json`` the last
    line is ``{"bytes_per_token": N}``, plus ``"bytes_per_sequence"`` with ``--context``).
    """
    model = catalogs.load_model(args.model)
    context = getattr(args, "context", None)
    if context is not None and context <= 0:
        raise InputError("-", "--context", f"must be > 0, got {context}")
    b = kv_bytes(model, args.kv_dtype)
    out: dict[str, int] = {"bytes_per_token": b.bytes_per_token}
    print(f"{model.name} ({model.file}): global KV cache per token, {args.kv_dtype}")
    print(b.formula)
    if model.architecture.sliding_window is not None:
        print("the fixed-size sliding-window cache is not per-token and is not counted")
    if context is not None:
        per_seq = kv_bytes_per_sequence(model, context, args.kv_dtype)
        out["bytes_per_sequence"] = per_seq
        print(
            f"per sequence of {context} tokens: {context} x {_frac(b.bytes_per_token_exact)} B "
            f"= {per_seq} B ({fmt(per_seq, 'B')})"
        )
    if args.json:
        print(json.dumps(out))
    else:
        print("bytes per token:")
        print(b.bytes_per_token)
    return 0
