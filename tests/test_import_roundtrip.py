"""Importer round trip: each format's trace is written, read back from disk, and every scenario
column compared with the source file's own fields, so swapping two columns fails."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from rackbook.core import importers, jsliteral, traces

FIX = Path(__file__).parent / "fixtures"
URL = "https://github.com/o/r/blob/0123456789abcdef0123456789abcdef01234567/summary.csv"
#: published_points column -> InferenceX metric it is read from.
METRICS = {
    "input_tok_s_per_gpu": "input_tput_per_gpu",
    "output_tok_s_per_gpu": "output_tput_per_gpu",
    "tok_s_per_user": "median_intvty",
    "ttft_mean_s": "mean_ttft",
    "ttft_median_s": "median_ttft",
    "tpot_mean_s": "mean_tpot",
    "tpot_median_s": "median_tpot",
    "e2el_mean_s": "mean_e2el",
}


def _back(fmt, src, tmp_path, options):
    importers.write(fmt, src, tmp_path / "t", options)
    return traces.read_trace(tmp_path / "t")


def test_vllm_bench_round_trip(tmp_path):
    src = FIX / "vllm-bench-serve-b32.json"
    d = json.loads(src.read_text())
    labels = {"batch_size": "7", "decode_ranks": "3", "context_tokens": "5", "num_gpus": "2"}
    t = _back("vllm-bench", src, tmp_path, importers.Options(labels=labels))
    req, pt = t.requests, t.points.iloc[0]
    assert set(req["concurrency"]) == {d["max_concurrency"]} == {32}
    for k, v in labels.items():
        assert pt[k] == int(v)
        if k in req:
            assert set(req[k]) == {int(v)}
    assert req["prompt_tokens"].tolist() == d["input_lens"]
    assert req["output_tokens"].tolist() == d["output_lens"]
    assert req["ttft_s"].tolist() == d["ttfts"]
    assert req["e2el_s"].tolist() == d["latencies"]
    t0 = min(d["start_times"])
    assert req["start_time_s"].tolist() == pytest.approx([s - t0 for s in d["start_times"]])
    assert t.itl["itl_s"].tolist() == [g for gaps in d["itls"] for g in gaps]
    assert t.itl["request_row"].tolist() == [i for i, g in enumerate(d["itls"]) for _ in g]
    assert pt["duration_s"] == d["duration"] and pt["engine"] == d["backend"]


def test_offline_engine_round_trip(tmp_path):
    src = FIX / "offline-engine" / "example.json"
    d = json.loads(src.read_text())
    t = _back("offline-engine", src, tmp_path, importers.Options())
    pts = t.points
    rows = d["rows"]
    assert pts["batch_size"].tolist() == [r["batch_size"] for r in rows]
    assert pts["decode_ranks"].tolist() == [r["decode_ranks"] for r in rows]
    assert pts["concurrency"].isna().all()
    assert set(pts["num_gpus"]) == {d["hardware"]["gpu_count"]}
    for r, (_, g) in zip(rows, t.requests.groupby("point_id", sort=False), strict=True):
        assert len(g) == r["batch_size"] * r["decode_ranks"]
        assert set(g["prompt_tokens"]) == {r["input_tokens"]}
        assert set(g["output_tokens"]) == {r["output_tokens"]}
        ttft = r.get("prefill_s", r["total_s"] - r["decode_s"] if "total_s" in r else 0.0)
        assert g["ttft_s"].tolist() == pytest.approx([ttft] * len(g))
        assert g["e2el_s"].tolist() == pytest.approx([ttft + r["decode_s"]] * len(g))


def test_inferencex_round_trip(tmp_path):
    src = FIX / "published" / "inferencex-rows.json"
    rows = json.loads(src.read_text())
    pts = _back("inferencex", src, tmp_path, importers.Options()).extra["published_points"]
    assert len(pts) == len(rows)
    for r, (_, p) in zip(rows, pts.iterrows(), strict=True):
        m = r["metrics"]
        assert (p["isl"], p["osl"], p["concurrency"]) == (r["isl"], r["osl"], r["conc"])
        assert (p["hardware"], p["engine"]) == (r["hardware"], r["framework"])
        assert p["model"] == r["model"]
        assert p["precision"] == r["precision"]
        assert (None if pd.isna(p["engine_version"]) else p["engine_version"]) == r.get("image")
        assert (p["date"], p["url"]) == (r["date"], r["run_url"])
        assert p["tok_s_per_gpu"] == m["tput_per_gpu"]
        for col, key in METRICS.items():
            assert (None if pd.isna(p[col]) else p[col]) == m.get(key), col


def test_mlperf_round_trip(tmp_path):
    src = FIX / "published" / "mlperf-summary.csv"
    rows = [r for r in csv.DictReader(src.open()) if r["Units"] == "Tokens/s"]
    options = importers.Options(source_url=URL)
    pts = _back("mlperf", src, tmp_path, options).extra["published_points"]
    assert len(pts) == len(rows)
    for r, (_, p) in zip(rows, pts.iterrows(), strict=True):
        n = int(r["total_accelerators"])
        assert (p["gpus"], p["tok_s_total"]) == (n, float(r["Result"]))
        assert p["tok_s_per_gpu"] == float(r["Result"]) / n
        assert (p["submitter"], p["system"]) == (r["Organization"], r["SystemName"])
        assert (p["model"], p["scenario"]) == (r["Model"], r["Scenario"])
        assert p["hardware"] == r["accelerator_model_name"]
        assert p["precision"] == r["weight_data_types"]
        assert (p["engine"], p["engine_version"]) == (r["framework"], r["version"])
        assert p["category"] == f"{r['Division']}, {r['Availability']}"


def test_sglang_cookbook_round_trip(tmp_path):
    src = FIX / "published" / "sglang-v4-cells.jsx"
    cells = jsliteral.parse_js_export(src.read_text(), "benchmarks", src)
    speeds = [(c, s) for c in cells for s in c.get("speed") or []]
    pts = _back("sglang-cookbook", src, tmp_path, importers.Options(source_url=URL))
    pts = pts.extra["published_points"]
    assert len(pts) == len(speeds) > 0
    for (c, s), (_, p) in zip(speeds, pts.iterrows(), strict=True):
        wl = s["workload"]
        assert (p["isl"], p["osl"]) == (wl["isl"], wl["osl"])
        assert p["concurrency"] == wl["max_concurrency"]
        assert (p["hardware"], p["precision"]) == (c["match"]["hw"], c["match"]["quant"])
        assert p["tok_s_per_gpu"] == s["tokens_per_sec_per_gpu"]
        assert p["ttft_mean_s"] == pytest.approx(s["ttft_ms"] / 1000)
        assert p["tpot_mean_s"] == pytest.approx(s["tpot_ms"] / 1000)
        assert p["tok_s_per_user"] == pytest.approx(1000 / s["tpot_ms"])
        assert re.fullmatch(rf".*/c{wl['max_concurrency']}", p["point_id"])
