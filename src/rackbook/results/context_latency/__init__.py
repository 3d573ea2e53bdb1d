"""Decode latency against context length, and the KV-bandwidth model of its growth.

Definitions (per sweep point with a ``context_tokens`` target; successful requests):

- TPOT (ms) per request = (e2el - ttft) / (output_tokens - 1), requests with more than one
  output token (vLLM's definition, :func:`rackbook.core.metrics.tpot_s`); ``mean_tpot_ms`` /
  ``median_tpot_ms`` over the point's requests;
- ITL (ms): every gap between streamed chunks of the point's requests, pooled; with one token
  per chunk the ITL is the decode step time (with speculative decoding a chunk may carry
  several tokens and the ITL is longer than the TPOT);
- linear fit: least squares TPOT = a + b x context (a in ms, b in ms/token; ``slope_per_1k`` =
  1000 b in ms per 1,000 tokens);
- delta between two context lengths lo < hi: delta_ms = L(hi) - L(lo), delta_pct = 100 x
  delta_ms / L(lo).

Physics (:mod:`rackbook.physics.roofline`): a decode step of DeepSeek-V4.1-Flash does not read
all of a sequence's stored KV. Its sparse attention scans every index key (about 170 B per
context token at FP4) and then reads a fixed number of top-k rows, so what grows with context is
mostly the scan; dense attention over every row would read about 8.5 kB per context token. Both
ends are shown (:func:`rackbook.physics.roofline.context_growth`), each with its assumption.

Modules: ``measure`` (latency, fit, delta, memory), ``readings``, ``chapter``.
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
