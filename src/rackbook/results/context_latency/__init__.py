"""Decode latency against context length, and the KV-bandwidth model of its growth.

Per point with a ``context_tokens`` target (successful requests): TPOT (ms) = (e2el - ttft) /
(output_tokens - 1) (:func:`rackbook.core.metrics.tpot_s`), mean and median; ITL (ms) = pooled
gaps between chunks (the step time at one token per chunk); least-squares TPOT = a + b x context
(``slope_per_1k`` = 1000 b, ms per 1,000 tokens); delta between lo < hi: delta_ms = L(hi) -
L(lo), delta_pct = 100 x delta_ms / L(lo).

Physics (:func:`rackbook.physics.roofline.context_growth`): sparse attention scans every index
key (about 170 B per context token at FP4) and reads a fixed top-k of rows; dense attention
would read about 8.5 kB per token. Both ends are shown. Modules: ``measure``, ``readings``,
``chapter``.
"""

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
