"""Roofline arithmetic on catalog entries, no measurement: KV-cache bytes, weights, a token's
context reads and attention FLOP, the compute ceiling, batch-1 and speculative decoding."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from fractions import Fraction

from rackbook.core.units import eng, fmt, plural
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import PRECISIONS, GpuSpec, ModelSpec

#: Bytes per parameter of weights stored at a precision (block scales ignored).
DENSE_BYTES_PER_PARAM: dict[str, Fraction] = {
    "fp4": Fraction(1, 2),
    "fp8": Fraction(1),
    "bf16": Fraction(2),
}


def frac_text(x: Fraction) -> str:
    """An exact fraction as a formula shows it: ``3`` when whole, else ``0.5625`` (``:g``)."""
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


def check_choice(value: str, choices: tuple[str, ...], field: str) -> None:
    """InputError naming ``field`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise InputError("-", field, f"{value!r} is not one of {', '.join(choices)}")


def need(model: ModelSpec, **fields: int | None) -> list[int]:
    """The catalog ``fields``' values; InputError naming the first that is unknown (None)."""
    for name, value in fields.items():
        if value is None:
            raise InputError(model.file, name.replace("__", "."), "unknown in the model catalog")
    return [v for v in fields.values() if v is not None]


@dataclass(frozen=True)
class Step:
    """Time to stream ``bytes`` once from HBM at the aggregate bandwidth of the GPUs."""

    seconds: float
    bytes: float
    bytes_per_s: float


def bandwidth_floor_step_s(nbytes: float, hw: GpuSpec | str, n_gpus: int = 1) -> Step:
    """Least seconds to stream ``nbytes`` from the HBM of ``n_gpus`` GPUs."""
    bw = n_gpus * catalogs.as_gpu(hw).hbm_bandwidth_bytes_per_s
    return Step(nbytes / bw, nbytes, bw)


@dataclass(frozen=True)
class KvBytes:
    """Global KV-cache bytes per token at one storage dtype, from the rows' formats."""

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
        hint = f" (the catalog only says about {rel.factor:g}x {rel.model})" if rel else ""
        raise InputError(model.file, "kv_cache.compression_ratios", f"KV layout unknown{hint}")
    return sum((Fraction(1, r) for r in ratios), Fraction(0))


def kv_row_values(model: ModelSpec) -> tuple[int, int]:
    """Values of one row: (compressed KV, indexer key)."""
    a = model.architecture
    if a.mla is not None:
        kv = a.mla.kv_lora_rank + a.mla.qk_rope_head_dim
    else:
        kv = need(model, architecture__head_dim=a.head_dim)[0]
    return kv, a.index_head_dim or 0


def kv_bytes(model: ModelSpec, kv_dtype: str = "fp4") -> KvBytes:
    """Bytes per token of the global KV: rows/token x (KV row + indexer row)."""
    check_choice(kv_dtype, PRECISIONS, "kv_dtype")
    rows = kv_rows_per_token(model)
    table = model.kv_cache.row_formats
    fmts = getattr(table, kv_dtype) if table is not None else None
    where = f"kv_cache.row_formats.{kv_dtype}"
    if fmts is None:
        raise InputError(model.file, where, "row format not known for this model")
    kv_vals, idx_vals = kv_row_values(model)
    kv_row, idx_row = fmts.kv.bytes_for(kv_vals), fmts.indexer.bytes_for(idx_vals)
    ratios, layers = model.kv_cache.compression_ratios or [], model.kv_cache.owning_layers or []
    by_layer = dict(zip(layers, ratios, strict=True))
    att = model.attention  # the layers whose rows carry an index key (all without a list)
    idx = by_layer if att is None else [s for s in att.index_sources if s in by_layer]
    idx_rows = sum((Fraction(1, by_layer[s]) for s in idx), Fraction(0))
    total = rows * kv_row + idx_rows * idx_row

    def _row(name: str, values: int, f: catalogs.RowFormat, b: Fraction) -> str:
        n = math.ceil(values / f.scale_group) if f.scale_group else 0
        scales = f" + {n} x {f.scale_bytes} scale B" if n else ""
        return f"{name} {values} x {f.bits} bit / 8{scales} = {frac_text(b)} B"

    if len(ratios) <= 8:
        rows_txt = " + ".join(f"1/{r}" for r in ratios) + f" = {frac_text(rows)}"
        layers_txt = ", ".join(map(str, layers))
    else:
        rows_txt = f"{len(ratios)} layers, sum of 1/ratio = {frac_text(rows)}"
        layers_txt = f"{layers[0]}..{layers[-1]} ({len(layers)} layers)"
    parts = [_row("KV", kv_vals, fmts.kv, kv_row)]
    parts += [_row("indexer", idx_vals, fmts.indexer, idx_row)] if idx_vals else []
    per_tok = f"{frac_text(rows)} x {frac_text(kv_row + idx_row)}"
    if idx_rows != rows:  # index keys on some layers only
        per_tok = f"{frac_text(rows)} x {frac_text(kv_row)} + {frac_text(idx_rows)} indexed rows"
        per_tok += f" x {frac_text(idx_row)}"
    formula = (
        f"KV-owning layers: {layers_txt}; rows/token = {rows_txt}; row: {'; '.join(parts)}; "
        f"bytes/token = {per_tok} = {frac_text(total)} B"
    )
    return KvBytes(model.id, kv_dtype, rows, kv_row, idx_row, total, formula)


def kv_bytes_per_sequence(model: ModelSpec, context_tokens: int, kv_dtype: str = "fp4") -> int:
    """Global KV bytes of one sequence of ``context_tokens`` tokens, rounded up."""
    return math.ceil(kv_bytes(model, kv_dtype).bytes_per_token_exact * context_tokens)


def window_bytes_per_sequence(model: ModelSpec) -> int:
    """Bytes of one sequence's sliding-window cache (FP8 rows; 0 without a window)."""
    a, table = model.architecture, model.kv_cache.row_formats
    if a.sliding_window is None or a.num_layers is None or table is None or table.fp8 is None:
        return 0
    row = table.fp8.kv.bytes_for(kv_row_values(model)[0])
    return math.ceil(a.num_layers * a.sliding_window * row)


def cli_kv_bytes(args: argparse.Namespace) -> int:
    """``rackbook kv-bytes MODEL [--kv-dtype D] [--json] [--context N]``."""
    model, n = catalogs.load_model(args.model), args.context  # n checked where flags enter
    b = kv_bytes(model, args.kv_dtype)
    out: dict[str, int] = {"bytes_per_token": b.bytes_per_token}
    print(f"{model.name} ({model.file}): global KV cache per token, {args.kv_dtype}\n{b.formula}")
    if model.architecture.sliding_window is not None:
        print("the fixed-size sliding-window cache is not per-token and is not counted")
    if n is not None:
        out["bytes_per_sequence"] = per_seq = kv_bytes_per_sequence(model, n, args.kv_dtype)
        exact = frac_text(b.bytes_per_token_exact)
        print(f"per sequence of {n} tokens: {n} x {exact} B = {per_seq} B ({fmt(per_seq, 'B')})")
    print(json.dumps(out) if args.json else f"bytes per token:\n{b.bytes_per_token}")
    return 0


@dataclass(frozen=True)
class WeightSplit:
    """Active parameters per token of a phase, split into routed experts and the rest."""

    phase: str
    routed_params: int
    dense_params: int
    routed_dtype: str
    dense_dtype: str
    moe_layers: int

    @property
    def active_params(self) -> int:
        return self.routed_params + self.dense_params

    @property
    def dense_bytes(self) -> float:
        """Bytes of the dense active weights at their dtype (bytes per token's pass)."""
        return self.dense_params * float(DENSE_BYTES_PER_PARAM[self.dense_dtype])


def _in_phase(model: ModelSpec, phase: str, field: str, total: int | None) -> int:
    n, enc = need(model, **{field: total})[0], model.architecture.num_encoder_layers
    return min(n, enc) if phase == "prefill" and enc else n


def moe_layers(model: ModelSpec, phase: str = "decode") -> int:
    """MoE layers a token of ``phase`` passes: all in decode, the encoder's only in prefill."""
    return _in_phase(model, phase, "moe__num_moe_layers", model.moe.num_moe_layers)


def weight_split(model: ModelSpec, phase: str = "decode") -> WeightSplit:
    """Active parameters per token of ``phase`` split into routed experts and dense."""
    m, a = model.moe, model.architecture
    active, k, inter, hidden = need(
        model,
        **{f"params__active_{phase}": model.active_params(phase)},
        moe__experts_per_token=m.experts_per_token,
        moe__moe_intermediate_size=m.moe_intermediate_size,
        architecture__hidden_size=a.hidden_size,
    )
    layers = moe_layers(model, phase)
    routed = layers * k * 3 * hidden * inter
    dense = active - routed
    if dense < 0:
        problem = f"smaller than the {eng(routed)} routed params of {layers} MoE layers"
        raise InputError(model.file, f"params.active_{phase}", problem)
    dense_dtype = model.weights.dense_dtype or "bf16"
    routed_dtype = model.weights.routed_expert_dtype or dense_dtype
    return WeightSplit(phase, routed, dense, routed_dtype, dense_dtype, layers)


def draft_bytes(model: ModelSpec) -> float:
    """Bytes of the drafter's active weights (0 without one in the catalog)."""
    s = model.speculative
    return s.draft_active_params * float(DENSE_BYTES_PER_PARAM[s.draft_dtype]) if s else 0.0


def expert_bytes(model: ModelSpec) -> float:
    """Bytes of one routed expert: the catalog's figure, else params x bytes/param."""
    w, m, a = model.weights, model.moe, model.architecture
    if w.routed_expert_bytes is not None:
        return float(w.routed_expert_bytes)
    inter, hidden = need(
        model, moe__moe_intermediate_size=m.moe_intermediate_size, hidden=a.hidden_size
    )
    dtype = w.routed_expert_dtype or w.dense_dtype or "bf16"
    return float(3 * hidden * inter * DENSE_BYTES_PER_PARAM[dtype])


@dataclass(frozen=True)
class Storage:
    """Bytes of the backbone's weights: routed experts (all of them) and everything else."""

    routed_bytes: float
    dense_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.routed_bytes + self.dense_bytes

    def per_gpu_bytes(self, n_gpus: int) -> float:
        """Bytes per GPU: experts spread over ``n_gpus``, dense weights on every GPU."""
        return self.dense_bytes + self.routed_bytes / n_gpus


def storage(model: ModelSpec) -> Storage:
    """Stored bytes: every routed expert, and the dense params at their dtype."""
    m, a, p = model.moe, model.architecture, model.params
    backbone, experts, layers, inter, hidden = need(
        model,
        params__backbone=p.backbone or p.total,
        moe__num_routed_experts=m.num_routed_experts,
        moe__num_moe_layers=m.num_moe_layers,
        moe__moe_intermediate_size=m.moe_intermediate_size,
        architecture__hidden_size=a.hidden_size,
    )
    n_experts = layers * experts
    routed_params = n_experts * 3 * hidden * inter
    dense_params = backbone - routed_params
    if dense_params < 0:
        raise InputError(model.file, "params.backbone", "below the routed params")
    dtype = model.weights.dense_dtype or "bf16"
    routed = n_experts * expert_bytes(model)
    return Storage(routed, float(dense_params * DENSE_BYTES_PER_PARAM[dtype]))


@dataclass(frozen=True)
class Served:
    """A model with its weights in one format, the format in words, and whether stated."""

    model: ModelSpec
    routed_dtype: str
    dense_dtype: str
    text: str
    stated: bool


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
    """The weights a bound reads: ``expert_dtype`` when stated, else the fewest stored bytes."""
    w = model.weights
    dense = w.dense_dtype or "bf16"
    formats = [(w.routed_expert_dtype or dense, dense, "as published")]
    formats += [(s.routed_expert_dtype, s.dense_dtype, s.checkpoint) for s in w.served]

    def stored(f: tuple[str, str, str]) -> float:
        try:
            return storage(_with_format(model, f[0], f[1])).total_bytes
        except InputError:  # sizes unknown: order by bytes per expert parameter
            return float(DENSE_BYTES_PER_PARAM[f[0]])

    if expert_dtype is not None:
        check_choice(expert_dtype, ("fp4", "fp8", "bf16"), "precision")
        match = [f for f in formats if f[0] == expert_dtype]
        routed, dense, ckpt = match[0] if match else (expert_dtype, formats[0][1], "as stated")
        how = "; stated"
    else:
        routed, dense, ckpt = min(formats, key=stored)
        what = (
            "the fewest bytes the catalog lists" if len(formats) > 1 else "the only format listed"
        )
        how = f": {what}"
    text = f"{routed} experts, {dense} dense ({ckpt}{how})"
    return Served(_with_format(model, routed, dense), routed, dense, text, expert_dtype is not None)


@dataclass(frozen=True)
class KvReads:
    """Bytes one decode step reads from one sequence's global KV, sparse and dense, no window."""

    context: int
    kv_dtype: str
    sparse_bytes: float
    dense_bytes: float
    scan_bytes_per_token: float
    dense_bytes_per_token: float


def decode_kv_reads(model: ModelSpec | str, context: int, kv_dtype: str = "fp4") -> KvReads:
    """Context bytes one decode step reads for one sequence, both ends, and per-token rates."""
    m = catalogs.as_model(model)
    r, one = context_reads(m, context, "decode", kv_dtype), context_reads(m, 1, "decode", kv_dtype)
    return KvReads(context, kv_dtype, r.scan + (r.rows + r.pool), r.dense, one.scan, one.dense)


@dataclass(frozen=True)
class ContextGrowth:
    """Extra ms (and bytes) a decode step reads when ``batch`` sequences grow ``lo`` -> ``hi``."""

    lo: int
    hi: int
    batch: int
    sparse_ms: float
    dense_ms: float
    sparse_bytes: float
    dense_bytes: float


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
    """The :class:`ContextGrowth` over the HBM bandwidth of ``n_gpus`` GPUs."""
    g = catalogs.as_gpu(hw)
    a, b = decode_kv_reads(model, lo, kv_dtype), decode_kv_reads(model, hi, kv_dtype)
    sparse = batch * (b.sparse_bytes - a.sparse_bytes)
    dense = batch * (b.dense_bytes - a.dense_bytes)
    s_ms, d_ms = (1000 * bandwidth_floor_step_s(x, g, n_gpus).seconds for x in (sparse, dense))
    return ContextGrowth(lo, hi, batch, s_ms, d_ms, sparse, dense)


def phase_layers(model: ModelSpec, phase: str) -> int:
    """Layers a token of ``phase`` passes: all in decode, the encoder's only in prefill."""
    return _in_phase(model, phase, "architecture__num_layers", model.architecture.num_layers)


def _sources(model: ModelSpec, phase: str) -> list[tuple[int, int, int]]:
    kc = model.kv_cache
    layers, ratios = kc.owning_layers or [], kc.compression_ratios or []
    consumers = kc.consumers or [1] * len(layers)
    n = phase_layers(model, phase)
    return [
        (lay, r, max(0, min(c, n - lay)))
        for lay, r, c in zip(layers, ratios, consumers, strict=True)
        if lay < n
    ]


def _rows(model: ModelSpec, context: float, phase: str) -> tuple[float, float, float, float]:
    srcs = _sources(model, phase)
    every = sum(c * context / r for _, r, c in srcs)
    att = model.attention
    if att is None:
        return 0.0, 0.0, every, every
    scan = sum(context / r for lay, r, _ in srcs if lay in att.index_sources)
    rows = sum(c * min(att.index_topk, context / r) for _, r, c in srcs)
    last = max(att.index_sources) if att.index_sources else 0  # re-indexing after the sources
    reindex = att.reindex_layers if last < phase_layers(model, phase) else 0
    pool = reindex * min(att.candidate_rows, context)
    return scan, pool, rows, every


@dataclass(frozen=True)
class AttentionFlops:
    """Attention and indexer FLOP per token: scan, pool, rows, window."""

    phase: str
    context: int
    scan: float
    pool: float
    rows: float
    window: float

    @property
    def total(self) -> float:
        """All of it, FLOP per token."""
        return self.scan + self.pool + self.rows + self.window


def attention_flops(
    model: ModelSpec | str, context: float, phase: str = "decode"
) -> AttentionFlops:
    """Attention and indexer FLOP of one token of ``phase`` seeing ``context`` tokens."""
    m = catalogs.as_model(model)
    a, n = m.architecture, phase_layers(m, phase)
    heads = need(m, architecture__num_attention_heads=a.num_attention_heads)[0]
    qk = kv_row_values(m)[0]
    v = a.mla.kv_lora_rank if a.mla is not None else qk
    row, key = 2 * heads * (qk + v), 2 * heads * (a.index_head_dim or 0)
    scan_k, pool_k, rows_k, _ = _rows(m, context, phase)
    scan, pool, rows = scan_k * key, pool_k * key, rows_k * row
    win = n * min(a.sliding_window or 0, context) * row
    return AttentionFlops(phase, int(context), scan, pool, rows, win)


@dataclass(frozen=True)
class ContextReads:
    """Bytes a token reads from a sequence's caches: scan, rows, pool, window; ``dense``: all."""

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
    """Context bytes one token of ``phase`` reads (the window in decode only)."""
    m = catalogs.as_model(model)
    kvb = kv_bytes(m, kv_dtype)
    kv_row, key_row = float(kvb.kv_row_bytes), float(kvb.indexer_row_bytes)
    scan_k, pool_k, rows_k, every = _rows(m, context, phase)
    scan, pool, rows = float(scan_k) * key_row, pool_k * key_row, rows_k * kv_row
    dense = every * kv_row + scan
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


@dataclass(frozen=True)
class Ceiling:
    """Compute ceiling: tokens/s with every FLOP/s on the per-token FLOP."""

    tokens_per_s: float
    seconds_per_token: float
    flops_per_token: int
    notes: tuple[str, ...]
    formula: str


def compute_ceiling_tokens_per_s(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    phase: str = "decode",
    n_gpus: int = 1,
    *,
    active_scale: float = 1.0,
    context: float = 0,
) -> Ceiling:
    """Tokens/s ceiling of ``n_gpus`` GPUs' FLOP/s, each part at its precision."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    split = weight_split(m, phase)
    notes, parts, seconds = [], [], 0.0
    for label in ("routed", "dense"):  # the dense part last: attention runs at its precision
        params, dtype = getattr(split, f"{label}_params"), getattr(split, f"{label}_dtype")
        run = g.run_precision(dtype)
        if run != dtype:
            notes.append(f"{g.label} has no {dtype} tensor cores: the {label} weights run at {run}")
        peak = g.flops(run) or math.nan  # a run precision always has a peak
        seconds += 2 * params * active_scale / peak
        parts.append(f"2 x {eng(params * active_scale)} / {fmt(peak, 'FLOP/s')} ({run})")
    attn = 0.0
    if context:
        attn = attention_flops(m, context, phase).total
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
    return Ceiling(tps, seconds, fpt, tuple(notes), formula)


def distinct_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts of a layer under uniform routing: E x (1 - (1 - k/E)^n)."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)


@dataclass(frozen=True)
class Batch1Decode:
    """Bandwidth ceiling of single-sequence decode: tokens accepted per step / least step time."""

    tokens_per_s: float
    step_s: float
    weight_bytes: float
    kv_bytes: float
    draft_bytes: float
    acceptance_length: float
    verify_tokens: int
    formula: str


def verify_count(model: ModelSpec, tokens_per_step: float) -> int:
    """Tokens a verify step carries for ``tokens_per_step`` kept tokens (1 without speculation)."""
    if tokens_per_step == 1:
        return 1
    spec = model.speculative
    if spec is not None and tokens_per_step > spec.draft_tokens + 1:
        most = spec.draft_tokens + 1
        problem = f"{tokens_per_step:g} is out of range: {model.name}'s {spec.name} drafts "
        problem += f"{spec.draft_tokens} tokens a step, so a step keeps at most {most}"
        raise InputError("-", "tokens_per_step", problem)
    return max(spec.draft_tokens + 1 if spec else 0, math.ceil(tokens_per_step))


def batch1_decode_ceiling_tokens_per_s(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    n_gpus: int = 1,
    acceptance_length: float = 1.0,
    *,
    context_tokens: float = 0,
    kv_dtype: str | None = "fp4",
    routing: str = "fewest",
    batch: float = 1.0,
    active_scale: float = 1.0,
) -> Batch1Decode:
    """Decode tokens/s of ``batch`` sequences over ``n_gpus`` GPUs' HBM bandwidth (no network)."""
    m = catalogs.as_model(model)
    if acceptance_length < 1:
        raise InputError("-", "acceptance_length", f"must be >= 1, got {acceptance_length}")
    verify = verify_count(m, acceptance_length)  # >= the tokens accepted
    split, mo = weight_split(m, "decode"), m.moe
    need(m, moe__num_routed_experts=mo.num_routed_experts)
    assert mo.num_routed_experts and mo.experts_per_token
    e, k, tokens = mo.num_routed_experts, mo.experts_per_token, batch * verify
    # the fewest experts the tokens can touch (top-k), or the expected number under uniform routing
    per_layer = float(min(k, e)) if routing == "fewest" else distinct_experts(e, k, tokens)
    dense = split.dense_bytes * active_scale
    weights = dense + split.moe_layers * per_layer * expert_bytes(m) * active_scale
    reads = kv_dtype and context_tokens and context_reads(m, context_tokens, "decode", kv_dtype)
    kv = reads.total if reads else 0.0
    draft = draft_bytes(m) if verify > 1 else 0.0
    step = bandwidth_floor_step_s(weights + batch * kv + draft, hw, n_gpus)
    tps = batch * acceptance_length / step.seconds
    formula = (
        f"step >= ({fmt(dense, 'B')} dense + {split.moe_layers} layers x {per_layer:.4g} experts "
        f"({routing} routing of {plural(round(batch * verify), 'token')}) x "
        f"{fmt(expert_bytes(m) * active_scale, 'B')} + {plural(round(batch), 'sequence')} x "
        f"{fmt(kv, 'B')} context at {context_tokens:,.0f} tokens + {fmt(draft, 'B')} drafter = "
        f"{fmt(step.bytes, 'B')}) / ({plural(n_gpus, 'GPU')} x "
        f"{fmt(step.bytes_per_s / n_gpus, 'B/s')}) = {step.seconds * 1e6:,.4g} µs; "
        f"{round(batch):,} x {plural(acceptance_length, 'token')} per step = {tps:,.0f} tokens/s"
    )
    return Batch1Decode(tps, step.seconds, weights, kv, draft, acceptance_length, verify, formula)
