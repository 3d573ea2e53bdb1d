"""The summary of a published trace: its points by hardware and engine, with the range of tokens/s
per GPU as published."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rackbook.core import traces


def published_summary(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    """``rackbook summarize --json`` of a published trace: id, kind, point count and per (hardware,
    engine) the count and least/most tok/s per GPU (None where unpublished)."""
    pts = traces.read_table(path, "published_points")
    groups = (
        pts.groupby(["hardware", "engine"], sort=True, dropna=False)["tok_s_per_gpu"]
        .agg(["count", "min", "max"])
        .reset_index()
    )
    rows = [
        {
            "hardware": _stated(g.hardware),
            "engine": _stated(g.engine),
            "points": int(g["count"]),
            "tok_s_per_gpu_min": None if pd.isna(g["min"]) else float(g["min"]),
            "tok_s_per_gpu_max": None if pd.isna(g["max"]) else float(g["max"]),
        }
        for _, g in groups.iterrows()
    ]
    return {"trace_id": run.get("trace_id"), "kind": "published", "points": len(pts)} | {
        "groups": rows
    }


def _stated(value: Any) -> str:
    return "not stated" if pd.isna(value) else str(value)


def _points(n: int, word: str = "point") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_published_summary(path: Path, doc: dict[str, Any]) -> str:
    """:func:`published_summary`'s ``doc`` as lines for a terminal."""
    lines = [
        f"{path}: published trace, {_points(doc['points'], 'published point')} (no requests: "
        "vLLM's request metrics do not apply; tokens/s per GPU as published)"
    ]
    for r in doc["groups"]:
        lo, hi = r["tok_s_per_gpu_min"], r["tok_s_per_gpu_max"]
        span = "n/a" if lo is None else f"{lo:,.0f} to {hi:,.0f}"
        lines.append(f"  {r['hardware']} / {r['engine']}: {_points(r['points'])}, {span} tok/s/GPU")
    return "\n".join(lines)
