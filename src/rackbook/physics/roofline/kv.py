"""KV-cache bytes: per token and per sequence at a storage dtype (the compressed global cache;
the sliding window is a fixed size per sequence), how many sequences fit in the HBM left after
the weights, and ``rackbook kv-bytes``."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from fractions import Fraction

from rackbook.core.units import fmt
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import PRECISIONS, GpuSpec, ModelSpec
from rackbook.physics.roofline.common import (
    check_choice,
    check_positive,
    frac_text,
    need,
)


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


def indexed_rows_per_token(model: ModelSpec) -> Fraction:
    """Rows per token that carry an index key: those of the index-source layers when the model
    names them (DeepSeek-V4-Flash: its CSA layers only), else every row."""
    kc, a = model.kv_cache, model.attention
    if a is None:
        return kv_rows_per_token(model)
    by_layer = dict(zip(kc.owning_layers or [], kc.compression_ratios or [], strict=True))
    return sum((Fraction(1, by_layer[s]) for s in a.index_sources if s in by_layer), Fraction(0))


def kv_row_values(model: ModelSpec) -> tuple[int, int]:
    """Values of one row: (compressed KV, indexer key). The KV row is the head dim (or, with
    MLA, the latent rank plus the RoPE dims); the indexer key is the index head dim (0 if none)."""
    a = model.architecture
    if a.mla is not None:
        kv = a.mla.kv_lora_rank + a.mla.qk_rope_head_dim
    else:
        need(model, architecture__head_dim=a.head_dim)
        assert a.head_dim is not None
        kv = a.head_dim
    return kv, a.index_head_dim or 0


def kv_bytes(model: ModelSpec, kv_dtype: str = "fp4") -> KvBytes:
    """Bytes per token of the global KV: rows/token x (KV row + indexer row), each row's bytes
    derived from its values and format: values x bits / 8 + ceil(values / group) x scale bytes."""
    check_choice(kv_dtype, PRECISIONS, "kv_dtype")
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
    ratios = model.kv_cache.compression_ratios or []
    layers = model.kv_cache.owning_layers or []
    idx_rows = indexed_rows_per_token(model)
    total = rows * kv_row + idx_rows * idx_row

    def _row(name: str, values: int, f: catalogs.RowFormat, b: Fraction) -> str:
        scales = (
            f" + {math.ceil(values / f.scale_group)} x {f.scale_bytes} scale B"
            if f.scale_group
            else ""
        )
        return f"{name} {values} x {f.bits} bit / 8{scales} = {frac_text(b)} B"

    if len(ratios) <= 8:
        rows_txt = " + ".join(f"1/{r}" for r in ratios) + f" = {frac_text(rows)}"
        layers_txt = ", ".join(map(str, layers))
    else:
        rows_txt = f"{len(ratios)} layers, sum of 1/ratio = {frac_text(rows)}"
        layers_txt = f"{layers[0]}..{layers[-1]} ({len(layers)} layers)"
    parts = [_row("KV", kv_vals, fmts.kv, kv_row)]
    if idx_vals:
        parts.append(_row("indexer", idx_vals, fmts.indexer, idx_row))
    if idx_rows == rows:
        per_tok = f"{frac_text(rows)} x {frac_text(kv_row + idx_row)}"
    else:  # index keys on some layers only
        per_tok = (
            f"{frac_text(rows)} x {frac_text(kv_row)} + {frac_text(idx_rows)} indexed rows x "
            f"{frac_text(idx_row)}"
        )
    formula = (
        f"KV-owning layers: {layers_txt}; rows/token = {rows_txt}; row: {'; '.join(parts)}; "
        f"bytes/token = {per_tok} = {frac_text(total)} B"
    )
    return KvBytes(model.id, kv_dtype, rows, kv_row, idx_row, total, formula)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "fp4") -> int:
    """Global KV-cache bytes per token (int), computed from the layout in the model entry.
    The fixed-size sliding-window cache is not per token and is not counted."""
    return kv_bytes(model, kv_dtype).bytes_per_token


def kv_bytes_per_sequence(model: ModelSpec, context_tokens: int, kv_dtype: str = "fp4") -> int:
    """Global KV bytes held by one sequence of ``context_tokens`` tokens (per-token rate x
    tokens, rounded up; block rounding and the sliding-window cache are ignored)."""
    check_positive(context_tokens, "context_tokens", allow_zero=True)
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
    floor((HBM bytes x memory_fraction - weight_bytes_per_gpu) / KV bytes per sequence)."""
    g = catalogs.as_gpu(hw)
    check_positive(context_tokens, "context_tokens")
    check_positive(weight_bytes_per_gpu, "weight_bytes_per_gpu", allow_zero=True)
    if not 0 < memory_fraction <= 1:
        raise InputError("-", "memory_fraction", f"must be in (0, 1], got {memory_fraction}")
    per_seq = kv_bytes_per_sequence(model, context_tokens, kv_dtype)
    free = g.hbm_capacity_bytes * memory_fraction - weight_bytes_per_gpu
    n = max(0, math.floor(free / per_seq))
    formula = (
        f"floor(({fmt(g.hbm_capacity_bytes, 'B')} x {memory_fraction:g} - "
        f"{fmt(weight_bytes_per_gpu, 'B')} weights) / ({context_tokens} tokens x "
        f"{frac_text(kv_bytes(model, kv_dtype).bytes_per_token_exact)} B = {fmt(per_seq, 'B')})) "
        f"= {n} sequences"
    )
    return Fit(n, free, per_seq, formula)


def cli_kv_bytes(args: argparse.Namespace) -> int:
    """``rackbook kv-bytes MODEL [--kv-dtype D] [--json] [--context N]``."""
    model = catalogs.load_model(args.model)
    context = args.context  # checked where flags enter (rackbook.params.FLAGS)
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
            f"per sequence of {context} tokens: {context} x {frac_text(b.bytes_per_token_exact)} B "
            f"= {per_seq} B ({fmt(per_seq, 'B')})"
        )
    if args.json:
        print(json.dumps(out))
    else:
        print("bytes per token:")
        print(b.bytes_per_token)
    return 0
