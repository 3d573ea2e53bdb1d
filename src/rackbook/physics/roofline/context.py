"""The work of a token's context: the bytes a decode step reads from its context (index scan
and top-k rows with sparse attention, every row with dense), how that grows from one context
length to another, and the attention and indexer FLOP and reads of one token in each phase."""

from __future__ import annotations

from dataclasses import dataclass

from rackbook.core.units import eng, fmt, plural
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics.roofline.common import (
    PHASES,
    bandwidth_floor_step_s,
    check_choice,
    check_positive,
    need,
)
from rackbook.physics.roofline.kv import (
    kv_bytes,
    kv_row_values,
)


@dataclass(frozen=True)
class KvReads:
    """Bytes one decode step reads from one sequence's global KV at ``context`` tokens, no window:
    sparse (index scan + fixed top-k rows and pool) and dense (every row)."""

    context: int
    kv_dtype: str
    sparse_bytes: float
    dense_bytes: float
    scan_bytes_per_token: float
    dense_bytes_per_token: float
    fixed_sparse_bytes: float
    formula: str


def decode_kv_reads(model: ModelSpec | str, context: int, kv_dtype: str = "fp4") -> KvReads:
    """Context bytes one decode step reads for one sequence, at both ends (class docstring):
    :func:`context_reads` without the window, and its per-token rates."""
    m = catalogs.as_model(model)
    r, one = context_reads(m, context, "decode", kv_dtype), context_reads(m, 1, "decode", kv_dtype)
    fixed = r.rows + r.pool
    return KvReads(
        context, kv_dtype, r.scan + fixed, r.dense, one.scan, one.dense, fixed, r.formula
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
    bandwidth of ``n_gpus`` GPUs sharing them, for the sparse and the dense reading."""
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


def phase_layers(model: ModelSpec, phase: str) -> int:
    """Layers one token of ``phase`` passes: every layer in decode; in prefill the encoder
    layers only where the model has a causal encoder (DeepSeek-V4.1-Flash: 40 and 20)."""
    check_choice(phase, PHASES, "phase")
    a = model.architecture
    need(model, architecture__num_layers=a.num_layers)
    assert a.num_layers is not None
    enc = a.num_encoder_layers
    return min(a.num_layers, enc) if phase == "prefill" and enc else a.num_layers


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
    pool = _pool_layers(model, phase) * min(att.candidate_rows, context)
    return scan, pool, rows, every


def _pool_layers(model: ModelSpec, phase: str) -> int:
    att = model.attention
    if att is None or not att.reindex_layers:
        return 0
    last = max(att.index_sources) if att.index_sources else 0
    return att.reindex_layers if last < phase_layers(model, phase) else 0


def _row_and_key_flops(model: ModelSpec) -> tuple[int, int]:
    a = model.architecture
    need(model, architecture__num_attention_heads=a.num_attention_heads)
    assert a.num_attention_heads is not None
    qk = kv_row_values(model)[0]
    v = a.mla.kv_lora_rank if a.mla is not None else qk
    return 2 * a.num_attention_heads * (qk + v), 2 * a.num_attention_heads * (a.index_head_dim or 0)


@dataclass(frozen=True)
class AttentionFlops:
    """Attention and indexer FLOP per token at ``context`` tokens in ``phase``: scan, pool, rows,
    window."""

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
    (decode: every layer; prefill: the encoder layers only, :func:`phase_layers`)."""
    m = catalogs.as_model(model)
    check_positive(context, "context", allow_zero=True)
    n = phase_layers(m, phase)
    row, key = _row_and_key_flops(m)
    scan_k, pool_k, rows_k, _ = _rows(m, context, phase)
    scan, pool, rows = scan_k * key, pool_k * key, rows_k * row
    win = n * min(m.architecture.sliding_window or 0, context) * row
    formula = (
        f"{phase}, {n} layers, {context:,.0f} tokens of context: index scan {eng(scan)} + "
        f"candidate pool {eng(pool)} + attended rows {eng(rows)} ({row:,} FLOP per row) + "
        f"sliding window {eng(win)} = {eng(scan + pool + rows + win)} FLOP per token"
    )
    return AttentionFlops(phase, int(context), scan, pool, rows, win, formula)


@dataclass(frozen=True)
class ContextReads:
    """Bytes one token of ``phase`` reads from a sequence's caches: scan, rows, pool, window (FP8,
    decode only); ``dense``: every row read, the other end."""

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
    check_positive(context, "context", allow_zero=True)
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
