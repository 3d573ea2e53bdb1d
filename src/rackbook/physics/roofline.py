"""Roofline arithmetic: KV-cache bytes, weights, compute ceilings, bandwidth floors, the bytes a
decode step reads from its context, and speculative decoding's verify cost.

Plain arithmetic on catalog entries (:mod:`rackbook.inputs.catalogs`); no measurement. Units are
in the names: ``_bytes`` (bytes), ``_s`` (seconds), ``tokens_per_s`` (tokens/s), ``flops`` (FLOP
or FLOP/s as documented). Results where several numbers belong together are small frozen
dataclasses with a ``formula`` string showing the arithmetic, for the chapters to display.

These are ceilings and floors, not predictions: they ignore kernel efficiency, communication,
scheduling and (unless said) attention FLOP. Each says which assumption it uses.

- **Compute** is mixed precision: the routed experts run at the precision they are stored in
  (FP4 on Blackwell), everything else (attention, shared expert, head) at the dense weights'
  precision (FP8); a GPU without FP4 tensor cores (Hopper) runs FP4 weights at FP8.
- **Context reads** per decode step have two ends. With the model's sparse attention, a step
  scans every index key of each index source's cache (this grows with the context) and then
  reads only the top-k rows in each consuming layer (a fixed amount). If every consuming layer
  read every row (dense attention), the reads would grow with the stored bytes of every layer
  that reads them. The truth for a real kernel lies between the two.
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
from rackbook.physics.units import eng, fmt, plural

PHASES: tuple[str, ...] = ("prefill", "decode")

#: Bytes per parameter of weights stored at a precision (block scales ignored).
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


def _need(model: ModelSpec, **fields: object) -> None:
    """InputError naming the first catalog field that is unknown (None)."""
    for name, value in fields.items():
        if value is None:
            raise InputError(model.file, name.replace("__", "."), "unknown in the model catalog")


# --------------------------------------------------------------------------------------------
# KV cache


@dataclass(frozen=True)
class KvBytes:
    """Global KV-cache bytes per token of a model at one storage dtype, derived from the row's
    dimensions and its storage format (bits per value, scale bytes per group)."""

    model: str
    kv_dtype: str
    rows_per_token: Fraction
    kv_row_bytes: Fraction
    indexer_row_bytes: Fraction
    bytes_per_token_exact: Fraction
    formula: str

    @property
    def row_bytes(self) -> Fraction:
        """Bytes of one row: compressed KV plus indexer key."""
        return self.kv_row_bytes + self.indexer_row_bytes

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


def kv_row_values(model: ModelSpec) -> tuple[int, int]:
    """Values of one row: (compressed KV, indexer key). The KV row is the head dim (or, with
    MLA, the latent rank plus the RoPE dims); the indexer key is the index head dim (0 if none)."""
    a = model.architecture
    if a.mla is not None:
        kv = a.mla.kv_lora_rank + a.mla.qk_rope_head_dim
    else:
        _need(model, architecture__head_dim=a.head_dim)
        assert a.head_dim is not None
        kv = a.head_dim
    return kv, a.index_head_dim or 0


def kv_bytes(model: ModelSpec, kv_dtype: str = "fp4") -> KvBytes:
    """Bytes per token of the global KV: rows/token x (KV row + indexer row), each row's bytes
    derived from its values and format: values x bits / 8 + ceil(values / group) x scale bytes.

    DeepSeek-V4.1-Flash at FP4: KV 512 x 4 / 8 = 256 + 512 / 16 = 32 scale bytes = 288; indexer
    128 x 4 / 8 = 64 + 128 / 32 = 4 = 68; rows 1/2 + 1/2 + 1/2 + 1/1 = 2.5; 2.5 x 356 = 890.
    """
    _check_choice(kv_dtype, PRECISIONS, "kv_dtype")
    rows = kv_rows_per_token(model)
    table = model.kv_cache.row_formats
    fmts = getattr(table, kv_dtype) if table is not None else None
    if fmts is None:
        raise InputError(
            model.file, f"kv_cache.row_formats.{kv_dtype}", "row format not known for this model"
        )
    kv_vals, idx_vals = kv_row_values(model)
    kv_row = fmts.kv.bytes_for(kv_vals)
    idx_row = fmts.indexer.bytes_for(idx_vals)
    total = rows * (kv_row + idx_row)
    ratios = model.kv_cache.compression_ratios or []
    layers = model.kv_cache.owning_layers or []

    def _row(name: str, values: int, f: catalogs.RowFormat, b: Fraction) -> str:
        scales = (
            f" + {math.ceil(values / f.scale_group)} x {f.scale_bytes} scale B"
            if f.scale_group
            else ""
        )
        return f"{name} {values} x {f.bits} bit / 8{scales} = {_frac(b)} B"

    if len(ratios) <= 8:
        rows_txt = " + ".join(f"1/{r}" for r in ratios) + f" = {_frac(rows)}"
        layers_txt = ", ".join(map(str, layers))
    else:
        rows_txt = f"{len(ratios)} layers, sum of 1/ratio = {_frac(rows)}"
        layers_txt = f"{layers[0]}..{layers[-1]} ({len(layers)} layers)"
    parts = [_row("KV", kv_vals, fmts.kv, kv_row)]
    if idx_vals:
        parts.append(_row("indexer", idx_vals, fmts.indexer, idx_row))
    formula = (
        f"KV-owning layers: {layers_txt}; rows/token = {rows_txt}; row: {'; '.join(parts)}; "
        f"bytes/token = {_frac(rows)} x {_frac(kv_row + idx_row)} = {_frac(total)} B"
    )
    return KvBytes(model.id, kv_dtype, rows, kv_row, idx_row, total, formula)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "fp4") -> int:
    """Global KV-cache bytes per token (int), computed from the layout in the model entry.
    The fixed-size sliding-window cache is not per token and is not counted."""
    return kv_bytes(model, kv_dtype).bytes_per_token


def kv_bytes_per_sequence(model: ModelSpec, context_tokens: int, kv_dtype: str = "fp4") -> int:
    """Global KV bytes held by one sequence of ``context_tokens`` tokens (per-token rate x
    tokens, rounded up; block rounding and the sliding-window cache are ignored)."""
    _check_positive(context_tokens, "context_tokens", allow_zero=True)
    return math.ceil(kv_bytes(model, kv_dtype).bytes_per_token_exact * context_tokens)


def window_bytes_per_sequence(model: ModelSpec) -> int:
    """The fixed-size sliding-window cache of one sequence: layers x window x one FP8 KV row
    (0 when the model has no window or no FP8 row format)."""
    a, table = model.architecture, model.kv_cache.row_formats
    if a.sliding_window is None or a.num_layers is None or table is None or table.fp8 is None:
        return 0
    row = table.fp8.kv.bytes_for(kv_row_values(model)[0])
    return math.ceil(a.num_layers * a.sliding_window * row)


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


# --------------------------------------------------------------------------------------------
# weights


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


def moe_layers(model: ModelSpec, phase: str = "decode") -> int:
    """Layers whose routed experts a token of ``phase`` passes through: every MoE layer in
    decode; in prefill, only the encoder layers where the model has a causal encoder-decoder
    (the decoder layers then run on each request's last window only)."""
    _check_choice(phase, PHASES, "phase")
    m = model.moe
    _need(model, moe__num_moe_layers=m.num_moe_layers)
    assert m.num_moe_layers is not None
    enc = model.architecture.num_encoder_layers
    return min(m.num_moe_layers, enc) if phase == "prefill" and enc else m.num_moe_layers


def weight_split(model: ModelSpec, phase: str = "decode") -> WeightSplit:
    """Routed params per token = MoE layers of the phase x top-k x 3 x hidden x expert
    intermediate; the rest of the phase's active parameters are dense (attention, shared
    expert, head). DeepSeek-V4.1-Flash decode: 40 x 6 x 3 x 5120 x 2304 = 8.493e9 routed,
    16e9 - 8.493e9 = 7.507e9 dense."""
    m, a = model.moe, model.architecture
    active = model.active_params(phase)
    _need(
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


def expert_bytes(model: ModelSpec) -> float:
    """Bytes of one routed expert: the catalog's figure, else params x bytes/param."""
    w, m, a = model.weights, model.moe, model.architecture
    if w.routed_expert_bytes is not None:
        return float(w.routed_expert_bytes)
    _need(model, moe__moe_intermediate_size=m.moe_intermediate_size, hidden=a.hidden_size)
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
    """Routed bytes = MoE layers x routed experts x bytes per expert; dense bytes =
    (backbone params - routed params) x bytes/param of the dense dtype. The Engram lookup
    memory (kept outside HBM by the engines that serve it) is not counted."""
    m, a, p = model.moe, model.architecture, model.params
    backbone = p.backbone or p.total
    _need(
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
        f"{eng(routed_params)}) params x {_frac(DENSE_BYTES_PER_PARAM[dtype])} B ({dtype}) = "
        f"{fmt(dense, 'B')}; total {fmt(routed + dense, 'B')}"
    )
    return Storage(routed, dense, formula)


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

    @property
    def per_gpu(self) -> float:
        return self.tokens_per_s / self.n_gpus


def compute_ceiling_tokens_per_s(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    phase: str = "decode",
    n_gpus: int = 1,
    *,
    efficiency: float = 1.0,
    active_scale: float = 1.0,
    context: float = 0,
) -> Ceiling:
    """Tokens/s ceiling of ``n_gpus`` GPUs: per token, 2 x routed params at the experts'
    precision plus 2 x dense params at the dense precision, each over the GPU's dense FLOP/s
    at that precision (times ``efficiency``, 1 = peak); ``active_scale`` scales the active
    parameters (a sensitivity band). A precision the GPU lacks runs at the next one it has.
    With ``context`` (tokens a token sees; in prefill, its prefix) the attention and indexer
    FLOP of :func:`attention_flops` are added, at the dense weights' precision.

    DeepSeek-V4.1-Flash decode on a GB300 GPU: 2 x 8.493e9 / 15e15 + 2 x 7.507e9 / 5e15 =
    4.135 µs per token: 241,840 tokens/s; at 128,000 tokens of context + 9.54e9 / 5e15 =
    1.91 µs: 6.04 µs, 165,500 tokens/s.
    """
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    _check_positive(n_gpus, "n_gpus")
    if not 0 < efficiency <= 1:
        raise InputError("-", "efficiency", f"must be in (0, 1], got {efficiency}")
    _check_positive(active_scale, "active_scale")
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
        t = 2 * params * active_scale / (peak * efficiency)
        seconds += t
        parts.append(
            f"2 x {eng(params * active_scale)} / {fmt(peak * efficiency, 'FLOP/s')} ({run})"
        )
    attn = 0.0
    if context:
        af = attention_flops(m, context, phase)
        run = g.run_precision(split.dense_dtype)
        peak = g.flops(run)
        assert peak is not None
        attn = af.total
        seconds += attn / (peak * efficiency)
        parts.append(
            f"{eng(attn)} attention at {context:,.0f} tokens / "
            f"{fmt(peak * efficiency, 'FLOP/s')} ({run})"
        )
    tps = n_gpus / seconds
    formula = (
        f"{' + '.join(parts)} = {seconds * 1e6:,.4g} µs/token per GPU; x {plural(n_gpus, 'GPU')} = "
        f"{tps:,.0f} tokens/s" + (f" ({'; '.join(notes)})" if notes else "")
    )
    fpt = round(2 * split.active_params * active_scale + attn)
    return Ceiling(tps, seconds, fpt, n_gpus, tuple(notes), formula)


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
        f"= {s * 1e6:,.4g} µs"
    )
    return Step(s, nbytes, bw, formula)


def kv_read_time_s(
    extra_tokens: int,
    model: ModelSpec,
    hw: GpuSpec | str,
    kv_dtype: str = "fp4",
    n_gpus: int = 1,
) -> Step:
    """Seconds to stream the STORED global KV of ``extra_tokens`` tokens once from HBM across
    ``n_gpus`` GPUs' bandwidth (bytes stored, not the bytes a sparse step reads: see
    :func:`decode_kv_reads`)."""
    _check_positive(extra_tokens, "extra_tokens", allow_zero=True)
    extra = kv_bytes_per_sequence(model, extra_tokens, kv_dtype)
    step = bandwidth_floor_step_s(extra, hw, n_gpus)
    per_tok = _frac(kv_bytes(model, kv_dtype).bytes_per_token_exact)
    formula = f"{extra_tokens} tokens x {per_tok} B = {fmt(extra, 'B')}; {step.formula}"
    return Step(step.seconds, step.bytes, step.bytes_per_s, formula)


# --------------------------------------------------------------------------------------------
# context reads of a decode step


@dataclass(frozen=True)
class KvReads:
    """Bytes one decode step reads from one sequence's global KV at ``context`` tokens.

    ``sparse_bytes``: the model's sparse attention: every index key of each index source
    (``scan_bytes_per_token`` x context) plus the top-k rows each consuming layer reads and the
    reindex layers' candidate pool (fixed once the context exceeds them). ``dense_bytes``: every
    consuming layer reads every row of its source (``dense_bytes_per_token`` x context).
    """

    context: int
    kv_dtype: str
    sparse_bytes: float
    dense_bytes: float
    scan_bytes_per_token: float
    dense_bytes_per_token: float
    fixed_sparse_bytes: float
    formula: str


def decode_kv_reads(model: ModelSpec | str, context: int, kv_dtype: str = "fp4") -> KvReads:
    """Context bytes one decode step reads for one sequence, at both ends (class docstring).

    DeepSeek-V4.1-Flash, FP4: scan = (1/2 + 1/2 + 1/2 + 1/1) x 68 B = 170 B per context token;
    dense = (6 + 6 + 6) x 1/2 x 288 + 20 x 1 x 288 = 8,352 B per context token; top-k rows:
    38 consuming layers x 512 x 288 B; candidate pool: 4 x 16,384 x 68 B.
    """
    m = catalogs.as_model(model)
    _check_positive(context, "context", allow_zero=True)
    kvb = kv_bytes(m, kv_dtype)
    kc = m.kv_cache
    layers, ratios = kc.owning_layers or [], kc.compression_ratios or []
    consumers = kc.consumers or [1] * len(layers)
    att = m.attention
    dense_per_tok = (
        sum(Fraction(c, r) for c, r in zip(consumers, ratios, strict=True)) * kvb.kv_row_bytes
    )
    if att is None:  # dense attention: every layer reads every row (no indexer)
        scan = Fraction(0)
        fixed = 0.0
        sparse = float(dense_per_tok * context)
        how = "dense attention: every consuming layer reads every row"
    else:
        by_layer = dict(zip(layers, ratios, strict=True))
        scan = (
            sum((Fraction(1, by_layer[s]) for s in att.index_sources if s in by_layer), Fraction(0))
            * kvb.indexer_row_bytes
        )
        rows_read = sum(
            c * min(att.index_topk, context / r) for c, r in zip(consumers, ratios, strict=True)
        )
        pool = att.reindex_layers * min(att.candidate_rows, context) * float(kvb.indexer_row_bytes)
        fixed = rows_read * float(kvb.kv_row_bytes) + pool
        sparse = float(scan * context) + fixed
        how = (
            f"sparse: scan {_frac(scan)} B x {context:,} + top-{att.index_topk} rows of "
            f"{sum(consumers)} consuming layers x {_frac(kvb.kv_row_bytes)} B + "
            f"{att.reindex_layers} x {att.candidate_rows:,} pool rows x "
            f"{_frac(kvb.indexer_row_bytes)} B = {fmt(sparse, 'B')}"
        )
    dense = float(dense_per_tok * context + scan * context)
    formula = (
        f"{how}; dense bound: {_frac(dense_per_tok)} B (every row, every consuming layer) + "
        f"{_frac(scan)} B (index keys) per token x {context:,} = {fmt(dense, 'B')}"
    )
    return KvReads(
        context, kv_dtype, sparse, dense, float(scan), float(dense_per_tok + scan), fixed, formula
    )


@dataclass(frozen=True)
class ContextGrowth:
    """Extra time per decode step when ``batch`` sequences per GPU grow from ``lo`` to ``hi``
    tokens, at both ends of the context reads (seconds), over ``n_gpus`` GPUs' bandwidth."""

    lo: int
    hi: int
    batch: int
    n_gpus: int
    sparse_s: float
    dense_s: float
    sparse_bytes: float
    dense_bytes: float
    formula: str

    @property
    def sparse_ms(self) -> float:
        return 1000 * self.sparse_s

    @property
    def dense_ms(self) -> float:
        return 1000 * self.dense_s


def context_growth(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    lo: int,
    hi: int,
    kv_dtype: str = "fp4",
    *,
    batch: int = 1,
    n_gpus: int = 1,
) -> ContextGrowth:
    """Bytes read per step at ``hi`` minus at ``lo``, x ``batch`` sequences, over the HBM
    bandwidth of ``n_gpus`` GPUs sharing them, for the sparse and the dense reading.

    DeepSeek-V4.1-Flash, 128,000 -> 855,000 tokens, one sequence, one GB300: sparse 123.6 MB
    (15.4 µs); dense 6.19 GB (774 µs)."""
    if not 0 <= lo < hi:
        raise InputError("-", "hi", f"need 0 <= lo < hi, got lo={lo}, hi={hi}")
    if batch < 1:
        raise InputError("-", "batch", f"must be >= 1, got {batch}")
    g = catalogs.as_gpu(hw)
    a, b = decode_kv_reads(model, lo, kv_dtype), decode_kv_reads(model, hi, kv_dtype)
    sparse = batch * (b.sparse_bytes - a.sparse_bytes)
    dense = batch * (b.dense_bytes - a.dense_bytes)
    s1 = bandwidth_floor_step_s(sparse, g, n_gpus)
    s2 = bandwidth_floor_step_s(dense, g, n_gpus)
    formula = (
        f"{plural(batch, 'sequence')} x ({hi:,} - {lo:,}) tokens: sparse {s1.formula}; "
        f"dense {s2.formula}"
    )
    return ContextGrowth(lo, hi, batch, n_gpus, s1.seconds, s2.seconds, sparse, dense, formula)


# --------------------------------------------------------------------------------------------
# the work of one token's context: attention and indexer FLOP, and the bytes read


def phase_layers(model: ModelSpec, phase: str) -> int:
    """Layers one token of ``phase`` passes: every layer in decode; in prefill the encoder
    layers only where the model has a causal encoder (DeepSeek-V4.1-Flash: 40 and 20)."""
    _check_choice(phase, PHASES, "phase")
    a = model.architecture
    _need(model, architecture__num_layers=a.num_layers)
    assert a.num_layers is not None
    enc = a.num_encoder_layers
    return min(a.num_layers, enc) if phase == "prefill" and enc else a.num_layers


def _sources(model: ModelSpec, phase: str) -> list[tuple[int, int, int]]:
    """(layer, compression ratio, consuming layers within the phase's layers) of every
    KV-owning layer the phase reaches: a source at layer L read by c layers covers L..L+c-1,
    clipped to the phase's layers."""
    kc = model.kv_cache
    layers, ratios = kc.owning_layers or [], kc.compression_ratios or []
    consumers = kc.consumers or [1] * len(layers)
    n = phase_layers(model, phase)
    return [
        (lay, r, max(0, min(c, n - lay)))
        for lay, r, c in zip(layers, ratios, consumers, strict=True)
        if lay < n
    ]


def _pool_layers(model: ModelSpec, phase: str) -> int:
    """Reindex layers the phase reaches: they rescore a pool the last index source publishes
    and sit among its consumers, so a phase that stops before that source has none."""
    att = model.attention
    if att is None or not att.reindex_layers:
        return 0
    last = max(att.index_sources) if att.index_sources else 0
    return att.reindex_layers if last < phase_layers(model, phase) else 0


def _row_flops(model: ModelSpec) -> int:
    """FLOP one query token spends on one KV row in one layer, over every attention head:
    2 x heads x (QK dims + V dims); a shared KV row of head_dim values serves as both K and V
    (4 x heads x head_dim), an MLA row as latent + RoPE for QK and latent for V."""
    a = model.architecture
    _need(model, architecture__num_attention_heads=a.num_attention_heads)
    assert a.num_attention_heads is not None
    if a.mla is not None:
        qk, v = a.mla.kv_lora_rank + a.mla.qk_rope_head_dim, a.mla.kv_lora_rank
    else:
        _need(model, architecture__head_dim=a.head_dim)
        assert a.head_dim is not None
        qk = v = a.head_dim
    return 2 * a.num_attention_heads * (qk + v)


def _key_flops(model: ModelSpec) -> int:
    """FLOP one query token spends scoring one index key: 2 x index heads x index_head_dim.
    The catalog has no separate count of index heads: the attention heads stand for them
    (DeepSeek-V4.1-Flash: 2 x 64 x 128 = 16,384)."""
    a = model.architecture
    _need(model, architecture__num_attention_heads=a.num_attention_heads)
    assert a.num_attention_heads is not None
    return 2 * a.num_attention_heads * (a.index_head_dim or 0)


@dataclass(frozen=True)
class AttentionFlops:
    """FLOP per token (units: FLOP) that attention and the indexer spend at ``context`` tokens
    of context, in ``phase``: ``scan`` (every index key of each index source), ``pool`` (the
    reindex layers' candidate rows), ``rows`` (the top-k rows each consuming layer attends;
    every row under dense attention) and ``window`` (the sliding window of every layer)."""

    phase: str
    context: int
    scan: float
    pool: float
    rows: float
    window: float
    formula: str

    @property
    def total(self) -> float:
        """All of it, FLOP per token."""
        return self.scan + self.pool + self.rows + self.window


def attention_flops(
    model: ModelSpec | str, context: float, phase: str = "decode"
) -> AttentionFlops:
    """Attention and indexer FLOP of one token of ``phase`` that sees ``context`` tokens
    (decode: every layer; prefill: the encoder layers only, :func:`phase_layers`).

    DeepSeek-V4.1-Flash decode at 128,000 tokens: scan 2 x 64 x 128 x (1/2 + 1/2 + 1/2 + 1/1) x
    128,000 = 5.24 GFLOP (35.0 at 855,000); pool 4 x 16,384 x 16,384 = 1.07 G; rows 38 x 512 x
    4 x 64 x 512 = 2.55 G; window 40 x 128 x 131,072 = 0.67 G; total 9.54 GFLOP, against
    2 x 16e9 = 32 GFLOP of GEMMs.
    """
    m = catalogs.as_model(model)
    _check_positive(context, "context", allow_zero=True)
    a, att = m.architecture, m.attention
    srcs = _sources(m, phase)
    n = phase_layers(m, phase)
    row, key = _row_flops(m), _key_flops(m)
    if att is None:  # dense attention: every consuming layer attends every row
        scan = pool = 0.0
        rows = sum(c * context / r for _, r, c in srcs) * row
    else:
        scan_rows = sum(context / r for lay, r, _ in srcs if lay in att.index_sources)
        scan = scan_rows * key
        pool = _pool_layers(m, phase) * min(att.candidate_rows, context) * key
        rows = sum(c * min(att.index_topk, context / r) for _, r, c in srcs) * row
    win = n * min(a.sliding_window or 0, context) * row
    formula = (
        f"{phase}, {n} layers, {context:,.0f} tokens of context: index scan {eng(scan)} + "
        f"candidate pool {eng(pool)} + attended rows {eng(rows)} ({row:,} FLOP per row) + "
        f"sliding window {eng(win)} = {eng(scan + pool + rows + win)} FLOP per token"
    )
    return AttentionFlops(phase, int(context), scan, pool, rows, win, formula)


@dataclass(frozen=True)
class ContextReads:
    """Bytes (units: bytes) one token of ``phase`` reads from one sequence's caches at
    ``context`` tokens: ``scan`` (every index key of each index source the phase reaches),
    ``rows`` (the top-k rows each consuming layer reads; every row under dense attention),
    ``pool`` (the reindex layers' candidate keys) and ``window`` (the sliding-window rows,
    FP8, decode only: a prefill token's window is its own chunk, just computed). ``dense``:
    the bytes if every consuming layer read every row (plus the index keys), the other end."""

    phase: str
    context: int
    kv_dtype: str
    scan: float
    rows: float
    pool: float
    window: float
    formula: str
    dense: float = 0.0

    @property
    def total(self) -> float:
        """All of it, bytes per token."""
        return self.scan + self.rows + self.pool + self.window


def context_reads(
    model: ModelSpec | str, context: float, phase: str = "decode", kv_dtype: str = "fp4"
) -> ContextReads:
    """Context bytes one token of ``phase`` reads, the sparse end of
    :func:`decode_kv_reads` restricted to the phase's layers, plus the sliding window in
    decode.

    DeepSeek-V4.1-Flash, FP4, 128,000 tokens: decode scan 2.5 x 68 B x 128,000 = 21.76 MB +
    rows 38 x 512 x 288 B = 5.60 MB + pool 4 x 16,384 x 68 B = 4.46 MB + window 40 x 128 x
    528 B = 2.70 MB = 34.5 MB; prefill (20 encoder layers) scan 1.5 x 68 B x 128,000 =
    13.06 MB + rows 18 x 512 x 288 B = 2.65 MB = 15.7 MB.
    """
    m = catalogs.as_model(model)
    _check_positive(context, "context", allow_zero=True)
    kvb = kv_bytes(m, kv_dtype)
    att = m.attention
    srcs = _sources(m, phase)
    if att is None:
        scan = pool = 0.0
        rows = float(sum(c * context / r for _, r, c in srcs) * kvb.kv_row_bytes)
    else:
        scan = float(sum(context / r for lay, r, _ in srcs if lay in att.index_sources)) * float(
            kvb.indexer_row_bytes
        )
        rows = sum(c * min(att.index_topk, context / r) for _, r, c in srcs) * float(
            kvb.kv_row_bytes
        )
        pool = (
            _pool_layers(m, phase) * min(att.candidate_rows, context) * float(kvb.indexer_row_bytes)
        )
    dense = float(sum(c * context / r for _, r, c in srcs) * kvb.kv_row_bytes) + scan
    window = 0.0
    a, table = m.architecture, m.kv_cache.row_formats
    if phase == "decode" and a.sliding_window and table is not None and table.fp8 is not None:
        wrow = float(table.fp8.kv.bytes_for(kv_row_values(m)[0]))
        window = phase_layers(m, phase) * min(a.sliding_window, context) * wrow
    total = scan + rows + pool + window
    formula = (
        f"{phase}, {context:,.0f} tokens: index scan {fmt(scan, 'B')} + attended rows "
        f"{fmt(rows, 'B')} + candidate pool {fmt(pool, 'B')} + sliding window "
        f"{fmt(window, 'B')} = {fmt(total, 'B')} per token"
    )
    return ContextReads(phase, int(context), kv_dtype, scan, rows, pool, window, formula, dense)


# --------------------------------------------------------------------------------------------
# batch-1 decode and speculative decoding


def distinct_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts one MoE layer touches when ``tokens`` tokens each pick
    ``top_k`` of ``num_experts`` uniformly: E x (1 - (1 - k/E)^n). 6 tokens, top-6 of 384: 34.6."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)


def fewest_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """The fewest distinct experts one MoE layer can touch when ``tokens`` tokens each pick
    ``top_k`` distinct experts of ``num_experts``: top-k (every token picking the same ones),
    0 without tokens. The bound's count; :func:`distinct_experts` is uniform routing's
    expectation. 1, 6 or 7,200 tokens, top-6 of 384: 6."""
    return float(min(top_k, num_experts)) if tokens > 0 else 0.0


#: How a step's tokens are routed to experts: the fewest distinct experts (a bound) or
#: uniformly at random (the expectation, :func:`distinct_experts`).
ROUTINGS: tuple[str, ...] = ("fewest", "uniform")


def experts_touched(num_experts: int, top_k: int, tokens: float, routing: str = "fewest") -> float:
    """Distinct experts per MoE layer ``tokens`` tokens touch under ``routing``
    (:data:`ROUTINGS`)."""
    _check_choice(routing, ROUTINGS, "routing")
    if routing == "fewest":
        return fewest_experts(num_experts, top_k, tokens)
    return distinct_experts(num_experts, top_k, tokens)


@dataclass(frozen=True)
class ActiveWeights:
    """Weight bytes one decode step streams from HBM for ``tokens`` tokens of one sequence:
    the dense weights once, plus the distinct routed experts those tokens touch."""

    bytes: float
    routed_bytes: float
    dense_bytes: float
    experts_per_layer: float
    tokens: int
    formula: str

    def __float__(self) -> float:
        return self.bytes


def active_weight_bytes_per_token(
    model: ModelSpec | str, tokens: int = 1, routing: str = "uniform"
) -> ActiveWeights:
    """Bytes a decode step of ``tokens`` tokens (1, or the width of a speculative verify)
    streams: dense params x bytes/param + MoE layers x distinct experts x bytes per expert,
    the distinct experts under ``routing`` (:func:`experts_touched`).

    DeepSeek-V4.1-Flash, one token: 7.507e9 x 1 B + 40 x 6 x 18.80 MB = 12.02 GB; a six-token
    verify touches 34.6 experts per layer under uniform routing: 7.507 + 40 x 34.6 x 18.80 MB =
    33.54 GB, and at the fewest 6: 12.02 GB again.
    """
    m = catalogs.as_model(model)
    _check_positive(tokens, "tokens")
    split = weight_split(m, "decode")
    mo = m.moe
    _need(m, moe__num_routed_experts=mo.num_routed_experts)
    assert mo.num_routed_experts and mo.experts_per_token
    per_layer = experts_touched(mo.num_routed_experts, mo.experts_per_token, tokens, routing)
    routed = split.moe_layers * per_layer * expert_bytes(m)
    dense = float(split.dense_params * DENSE_BYTES_PER_PARAM[split.dense_dtype])
    formula = (
        f"dense {eng(split.dense_params)} params x "
        f"{_frac(DENSE_BYTES_PER_PARAM[split.dense_dtype])} B ({split.dense_dtype}) = "
        f"{fmt(dense, 'B')}; routed {split.moe_layers} layers x {per_layer:.3g} experts "
        f"({plural(tokens, 'token')}, top-{mo.experts_per_token} of {mo.num_routed_experts}, "
        f"{routing} routing) x "
        f"{fmt(expert_bytes(m), 'B')} = {fmt(routed, 'B')}; total {fmt(dense + routed, 'B')}"
    )
    return ActiveWeights(dense + routed, routed, dense, per_layer, tokens, formula)


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
    """Batch-1 decode ceiling in tokens/s over ``n_gpus`` GPUs' HBM bandwidth, from the fewest
    bytes a step can read (``routing="uniform"``: the expectation under uniform routing, not a
    bound).

    Without speculation (``acceptance_length`` 1) a step streams the weights one token uses.
    With it, a step verifies ``verify_tokens`` tokens (default: the model's draft tokens + 1),
    touching the distinct experts all of them pick (at the fewest, top-k per layer: the
    verified tokens may all pick the same), the drafter streams its active weights
    once per drafted block, and the step yields ``acceptance_length`` tokens on average. The
    context's KV adds its sparse reads (:func:`decode_kv_reads`). Communication between the
    GPUs is not counted: at batch 1 a dispatch/combine pair per MoE layer adds latency that no
    bandwidth figure shows. The context's reads include the sliding window
    (:func:`context_reads`).

    DeepSeek-V4.1-Flash on 4 B300 (32 TB/s), acceptance 3.51, a 6-token verify: (7.507 GB dense
    + 40 x 6 x 18.8 MB experts + 0.52 GB drafter = 12.54 GB) / 32 TB/s = 391.8 us; 3.51 /
    391.8 us = 8,958 tokens/s (uniform routing, 34.6 experts per layer: 3,297).
    """
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
    weights = active_weight_bytes_per_token(m, verify_tokens, routing)
    kv = context_reads(m, context_tokens, "decode", kv_dtype).total if context_tokens else 0.0
    draft = 0.0
    if verify_tokens > 1 and spec is not None:
        draft = float(spec.draft_active_params * DENSE_BYTES_PER_PARAM[spec.draft_dtype])
    step = bandwidth_floor_step_s(weights.bytes + kv + draft, hw, n_gpus)
    tps = acceptance_length / step.seconds
    formula = (
        f"step >= ({fmt(weights.bytes, 'B')} weights for {plural(verify_tokens, 'token')} "
        f"({routing} routing) + "
        f"{fmt(kv, 'B')} KV + {fmt(draft, 'B')} drafter) / ({n_gpus} x "
        f"{fmt(step.bytes_per_s / n_gpus, 'B/s')}) = {step.seconds * 1e3:.4g} ms; "
        f"{acceptance_length:g} tokens/step / {step.seconds * 1e3:.4g} ms = {tps:,.0f} tokens/s"
    )
    return Batch1Decode(
        tps, step.seconds, weights.bytes, kv, draft, acceptance_length, verify_tokens, formula
    )


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
