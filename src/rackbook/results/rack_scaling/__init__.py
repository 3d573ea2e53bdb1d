"""Rack scaling: which tokens a throughput counts, per-GPU figures, scaling efficiency, and the
readings of the published figures (``rack-scaling.throughput``, ``.speedup``, ``.cost``).
Modules: ``measure``, ``chapter``."""

# ruff: noqa: F401 (the package re-exports the names notebooks, figures and the contract use)
from __future__ import annotations

from rackbook.results.rack_scaling.chapter import (
    ASSUMED_ISL,
    ASSUMED_OSL,
    CEILING_FORMULA,
    FIGURES,
    READING_LABELS,
    RESULT,
    REVENUE_FORMULA,
    Analysis,
    Params,
    analyse,
    outcome,
)
from rackbook.results.rack_scaling.measure import SPEEDUP_FORMULA, TOKENS_FORMULA, token_accounting

# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {
    "rack-scaling.throughput": tuple(
        "metric tokens per gpus model hardware gpu_count workload speculation".split()
    ),
    "rack-scaling.speedup": ("metric", "counting", "model", "hardware", "workload", "speculation"),
    "rack-scaling.cost": ("metric", "hardware"),
}
READING_NOTES = {
    "rack-scaling.throughput": "the write-up describes an agentic workload with long, growing "
    "contexts and says neither which tokens it counts (cached prefix or not) nor whether "
    "'per GPU' divides the rack's total",
    "rack-scaling.speedup": "the write-up does not say what a node is; MLPerf's 72-GPU results "
    "may be independent replicas (its summary does not say how the GPUs serve), so its "
    "72-over-8 ratios may count replicas rather than one deployment's scaling",
    "rack-scaling.cost": "the write-up does not say what the dollars are; each price is read "
    "with its own source (InferenceX's GB300 rental and ownership prices are placeholders, "
    "1.2x GB200 pricing per its constants file; OCI's list price was read only in a price "
    "compilation)",
}
