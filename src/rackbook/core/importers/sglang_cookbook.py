"""The SGLang cookbook's ``deepseek-v4-benchmarks.jsx`` (no code runs) as a ``published`` trace:
each cell's ``speed`` entries (TTFT, TPOT in ms, stored in s) are points, stubs are counted; GPU
count and speculation from the cookbook's config (:data:`COOKBOOK_CONFIG_URL`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rackbook import limits
from rackbook.core import importers, jsliteral
from rackbook.core.importers import points
from rackbook.errors import InputError

FORMAT = "sglang-cookbook"

#: The SGLang cookbook's configuration file, read 2026-12-03: it declares ``latencyPercentile:
#: "Mean"`` and each cell's flags (``--tp``, ``--speculative-*``).
COOKBOOK_CONFIG_URL = (
    "https://github.com/sgl-project/sglang/blob/01c5c03f29584c6e1105b73de25b7e1799043809/"
    "docs_new/src/snippets/configs/deepseek-ai/deepseek-v4.jsx"
)
#: Speculation of a cookbook cell by strategy, as its flags in deepseek-v4.jsx set it (every
#: DeepSeek-V4 cell of that file): low-latency EAGLE/MTP 3-1-4, balanced 1-1-2, high-throughput
#: none. The acceptance is measured by the real draft head (not published in the cells).
COOKBOOK_SPECULATION: dict[str, tuple[str, str | None]] = {
    "low-latency": ("real", "EAGLE/MTP 3-1-4 (steps 3, topk 1, draft tokens 4)"),
    "balanced": ("real", "EAGLE/MTP 1-1-2 (steps 1, topk 1, draft tokens 2)"),
    "high-throughput": ("none", None),
}
#: Every single-node DeepSeek-V4-Flash cell of deepseek-v4.jsx on these GPUs runs ``--tp 4``.
COOKBOOK_FLASH_SINGLE_GPUS = 4
COOKBOOK_FLASH_SINGLE_HW = ("b200", "b300", "gb200", "gb300")
#: SGLang's ``bench_serving`` default ``--random-range-ratio`` (0.0): the random dataset draws
#: each input and output length uniformly from [max(1, ratio x cap), cap], so the ISL/OSL of a
#: cell are caps (mean about half of each) unless a cell sets the ratio to 1.
SGLANG_RANDOM_RANGE_RATIO = 0.0


#: A speed entry's workload keys (whole numbers) and its numbers (tok/s/GPU, ms) and checks.
_WORKLOAD = ("isl", "osl", "max_concurrency")
_SPEED = {
    k: (k, "amount" if k == "ttft_ms" else "number")
    for k in ("tokens_per_sec_per_gpu", "tpot_ms", "ttft_ms")
}


#: A cell's ``match`` keys and checks.
_MATCH = {k: (k, "text") for k in ("hw", "variant", "quant")}
_MATCH |= {k: (k, "text?") for k in ("strategy", "nodes")}


def read_points(path: Path, options: importers.Options) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The points of the cells with speed numbers; the stubs skipped are counted."""
    pts, skipped = cookbook_points(path, options.source_url)
    return pts, {"skipped": skipped}


read, summary = points.reader(FORMAT, read_points), points.summary


def cookbook_workload(path: Path, field: str, wl: Mapping[str, Any]) -> str:
    """``random lengths`` (up to the caps), ``fixed lengths`` (ratio 1) or ``benchmark dataset``."""
    dataset = wl.get("dataset", "random")
    if dataset != "random":
        return "benchmark dataset"
    ratio = wl.get("range_ratio", wl.get("random_range_ratio", SGLANG_RANDOM_RANGE_RATIO))
    ratio = points.cell(path, f"{field}.workload.range_ratio", ratio, "amount")
    return "fixed lengths" if ratio >= 1 else "random lengths"


def _speed_row(
    path: Path, g: str, s: Any, keys: dict[str, Any], version: Any, source_url: str
) -> dict[str, Any]:
    """Speed entry ``s`` (field ``g``) of a cell as a ``published_points`` row (times in s)."""
    wl = points.mapping(path, f"{g}.workload", points.mapping(path, g, s).get("workload"))
    at = f"{g}.workload"
    isl, osl, conc = (points.cell(path, f"{at}.{k}", wl.get(k), "whole") for k in _WORKLOAD)
    workload = cookbook_workload(path, g, wl)
    total, tpot_ms, ttft_ms = points.cells(path, g, s, _SPEED).values()
    hw, variant, quant, strategy, nodes = keys.values()
    derived = quant in ("fp4", "fp8")
    spec_kind, spec_method = COOKBOOK_SPECULATION.get(strategy or "", ("real or none", None))
    single = variant == "flash" and nodes == "single" and hw in COOKBOOK_FLASH_SINGLE_HW
    return {
        "point_id": f"{hw}/{variant}/{quant}/{strategy}/c{conc}",
        "submitter": "SGLang cookbook",
        "system": f"{hw} {strategy or '-'} ({nodes or 'nodes not stated'})",
        "hardware": hw,
        "gpus": COOKBOOK_FLASH_SINGLE_GPUS if single else None,
        "model": f"DeepSeek-V4-{variant.capitalize()}",
        "precision": quant,
        "engine": "sglang",
        "engine_version": None if version is None else str(version),
        "speculative": spec_method,
        "scenario": strategy,
        "isl": isl,
        "osl": osl,
        "concurrency": conc,
        "tok_s_per_gpu": total,
        "per_gpu_basis": "as published: total tok/s/GPU, derived by the cookbook from measured "
        "output/GPU x (isl+osl)/osl"
        if derived
        else "as published: total tok/s/GPU, measured as a total",
        "tokens_counted": "input+output",
        "gpus_counted": "deployment",
        "speculation_kind": spec_kind,
        "workload": workload,
        "latency_statistic": "mean",
        "output_tok_s_per_gpu": total * osl / (isl + osl) if derived else None,
        "tok_s_per_user": 1000.0 / tpot_ms,
        "ttft_mean_s": ttft_ms / 1000.0,
        "tpot_mean_s": tpot_ms / 1000.0,
        "url": source_url,
        "notes": f"nodes: {nodes}; GPU count and speculative method from the "
        f"cookbook's deepseek-v4.jsx ({COOKBOOK_CONFIG_URL}); latencies are means "
        "(latencyPercentile Mean)",
    }


def cookbook_points(
    path: str | Path, source_url: str | None = None
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The cells as a ``published_points`` table and ``{"stub_cells": n}``; fp4/fp8 cells derived
    total tok/s from output x (isl + osl) / osl, so output is recovered."""
    path = Path(path)
    if source_url is None:
        raise InputError(path, "--source-url", "required: the cookbook cells carry no link")
    cells = jsliteral.parse_js_export(points.read_text(path, limits.JS_MAX_MB), "benchmarks", path)
    if not isinstance(cells, list):
        raise InputError(path, "benchmarks", f"must be a list, got {type(cells).__name__}")
    out, stubs = [], 0
    for i, cell in enumerate(cells):
        f = f"benchmarks[{i}]"
        match = points.mapping(path, f"{f}.match", points.mapping(path, f, cell).get("match"))
        keys = points.cells(path, f"{f}.match", match, _MATCH)
        speed = cell.get("speed")
        if speed is None:
            stubs += 1
            continue
        if not isinstance(speed, list):
            raise InputError(path, f"{f}.speed", "must be a list")
        version = cell.get("sglang_version")
        for j, s in enumerate(speed):
            row = _speed_row(path, f"{f}.speed[{j}]", s, keys, version, source_url)
            out.append({**row, "source_row": i})
    if not out:
        raise InputError(path, "benchmarks", "no cell with speed numbers")
    return points.frame(out), {"stub_cells": stubs}
