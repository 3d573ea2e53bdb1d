"""`rackbook summarize` of a published trace (no requests): its points by hardware and engine,
with the range of tokens/s per GPU as published (rackbook.core.summary)."""

from __future__ import annotations

import json

import pandas as pd

from rackbook import paths
from rackbook.core import traces
from rackbook.core.summary import format_published_summary, published_summary

MLPERF = paths.DATA / "published" / "mlperf-v6.1-dsr1"


def test_groups_count_every_point_and_span_its_per_gpu_figures():
    pts = traces.read_table(MLPERF, "published_points")
    doc = published_summary(MLPERF, traces.read_run(MLPERF))
    assert doc["kind"] == "published" and doc["points"] == len(pts) > 10
    assert sum(g["points"] for g in doc["groups"]) == len(pts)
    for g in doc["groups"]:
        mine = pts[(pts["hardware"] == g["hardware"]) & (pts["engine"] == g["engine"])]
        assert g["points"] == len(mine)
        assert g["tok_s_per_gpu_min"] == mine["tok_s_per_gpu"].min()
        assert g["tok_s_per_gpu_max"] == mine["tok_s_per_gpu"].max()
        assert g["tok_s_per_gpu_min"] < g["tok_s_per_gpu_max"] or g["points"] == 1
    json.dumps(doc, allow_nan=False)  # what --json prints


def test_a_group_without_per_gpu_figures_reads_n_a(tmp_path):
    doc = {
        "points": 3,
        "groups": [
            {"hardware": "H", "engine": "E", "points": 2, "tok_s_per_gpu_min": 1234.4,
             "tok_s_per_gpu_max": 5678.6},
            {"hardware": "H", "engine": "F", "points": 1, "tok_s_per_gpu_min": None,
             "tok_s_per_gpu_max": None},
        ],
    }  # fmt: skip
    lines = format_published_summary(tmp_path, doc).splitlines()
    assert lines[0].startswith(f"{tmp_path}: published trace, 3 published points")
    assert lines[1:] == [
        "  H / E: 2 points, 1,234 to 5,679 tok/s/GPU",
        "  H / F: 1 point, n/a tok/s/GPU",
    ]


def test_the_cli_prints_the_groups_then_the_json(run_cli):
    code, stdout, _ = run_cli("summarize", str(MLPERF), "--json")
    assert code == 0
    *text, last = stdout.strip().splitlines()
    doc = json.loads(last)
    assert text[0].endswith("tokens/s per GPU as published)") and len(text) == 1 + len(
        doc["groups"]
    )
    assert doc["points"] == len(pd.read_parquet(MLPERF / "published_points.parquet"))


def test_groups_are_sorted_keep_a_missing_key_and_say_none_for_no_figure(monkeypatch, tmp_path):
    """Groups in (hardware, engine) order whatever the points' order; a point without an engine
    is its own group, "not stated" (counted, not dropped); a group with no per-GPU figure has
    None, not NaN; the trace id is run.json's."""
    nan = float("nan")
    pts = pd.DataFrame(
        {
            "hardware": ["h200", "b200", "h200", "b200", "b200"],
            "engine": ["vllm", "sglang", None, "sglang", "vllm"],
            "tok_s_per_gpu": [5.0, 2.0, 7.0, 3.0, nan],
        }
    )
    monkeypatch.setattr(traces, "read_table", lambda path, table: pts)
    doc = published_summary(tmp_path, {"trace_id": "T1"})
    assert (doc["trace_id"], doc["kind"], doc["points"]) == ("T1", "published", 5)
    assert doc["groups"] == [
        {"hardware": "b200", "engine": "sglang", "points": 2, "tok_s_per_gpu_min": 2.0,
         "tok_s_per_gpu_max": 3.0},
        {"hardware": "b200", "engine": "vllm", "points": 0, "tok_s_per_gpu_min": None,
         "tok_s_per_gpu_max": None},
        {"hardware": "h200", "engine": "vllm", "points": 1, "tok_s_per_gpu_min": 5.0,
         "tok_s_per_gpu_max": 5.0},
        {"hardware": "h200", "engine": "not stated", "points": 1, "tok_s_per_gpu_min": 7.0,
         "tok_s_per_gpu_max": 7.0},
    ]  # fmt: skip
