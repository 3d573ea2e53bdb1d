"""Decode latency against context length (TPOT = a + b x context, the delta between two
lengths) and the KV-bandwidth model of its growth (sparse attention's index scan and top-k rows
against dense reads). Modules: ``measure``, ``chapter``."""

# ruff: noqa: F401 (the package re-exports the names notebooks, figures and the contract use)
from __future__ import annotations

from rackbook.results.context_latency.chapter import (
    FIGURES,
    RESULT,
    Analysis,
    Params,
    analyse,
    outcome,
)
from rackbook.results.context_latency.measure import DELTA_FORMULA, FIT_FORMULA

# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {
    "context-latency.kv-bytes": ("metric", "model"),
    "context-latency.delta": ("metric", "model"),
    "context-latency.delta-pct": ("metric", "model"),
}
READING_NOTES = {
    "context-latency.kv-bytes": "the figure comes from the model card, the paper and vLLM's "
    "2026-10-07 post; no published measurement of the global KV bytes per token",
    "context-latency.delta": "no published decode latency of DeepSeek-V4.1-Flash at 128k and "
    "855k tokens of context",
    "context-latency.delta-pct": "no published decode latency of DeepSeek-V4.1-Flash at 128k "
    "and 855k tokens of context",
}
