"""Importers read each point's basis from its source (rackbook.core.importers): InferenceX
benchmark types (fixed-length and AgentX), speculation from spec_method and the config key,
per-GPU division per kind; MLPerf's unstated serving; the SGLang cookbook's length
distribution; and hand-copied PR rows equal to the tables they quote."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from rackbook import paths
from rackbook.core.importers import inferencex, sglang_cookbook
from rackbook.errors import InputError
from rackbook.inputs import claims as figures
from rackbook.results import evidence as ev
from rackbook.results import published_rows

#: An AgentX row in the API's format (/api/v1/benchmarks: benchmark_type agentic_traces, null
#: ISL/OSL, P90 interactivity), numbers made up for the test.
AGENTX = {
    "hardware": "gb300",
    "framework": "vllm",
    "model": "dsv41flash",
    "precision": "fp4",
    "spec_method": "dspark",
    "disagg": True,
    "is_multinode": True,
    "num_prefill_gpu": 4,
    "num_decode_gpu": 16,
    "decode_tp": 16,
    "benchmark_type": "agentic_traces",
    "isl": None,
    "osl": None,
    "conc": 128,
    "image": "vllm/vllm-openai:nightly",
    "metrics": {
        "tput_per_gpu": 100000.0,
        "input_tput_per_gpu": 99000.0,
        "output_tput_per_gpu": 1000.0,
        "p90_intvty": 50.0,
    },
    "date": "2026-09-15",
    "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1",
}
FIXED = {
    **AGENTX,
    "benchmark_type": "single_turn",
    "isl": 8192,
    "osl": 1024,
    "spec_method": "none",
    "metrics": {**AGENTX["metrics"], "median_intvty": 40.0},
}


def _import(tmp_path, rows):
    f = tmp_path / "rows.json"
    f.write_text(json.dumps(rows))
    return inferencex.inferencex_points(f)


def test_agentx_rows_import_with_their_own_basis(tmp_path):
    df = _import(tmp_path, [AGENTX, FIXED])
    a, x = df.iloc[0], df.iloc[1]
    assert a["workload"] == "agentic trace" and x["workload"] == "fixed lengths"
    assert a["tokens_counted"] == "input incl. cached+output"
    assert x["tokens_counted"] == "input+output"
    # AgentX DSpark throughput runs on a golden (synthetic) acceptance length
    assert a["speculation_kind"] == "simulated" and x["speculation_kind"] == "none"
    assert pd.isna(a["isl"]) and a["concurrency"] == 128
    assert a["latency_statistic"] == "p90" and a["tok_s_per_user"] == 50.0
    assert x["latency_statistic"] == "median" and x["tok_s_per_user"] == 40.0
    assert "simulated users" in a["notes"] and "twice the concurrency" in a["notes"]
    assert "agentic" in a["point_id"]


def test_agentx_output_is_per_all_gpus_fixed_disaggregated_per_decode_gpu(tmp_path):
    df = _import(tmp_path, [AGENTX, FIXED]).assign(source="inferencex-dsr1")
    out = [published_rows.converted_rows(r)[0]["value"] for _, r in df.iterrows()]
    assert out[0] == 1000.0  # AgentX: already over all 20 GPUs
    assert out[1] == pytest.approx(1000.0 * 16 / 20)  # fixed-length: per decode GPU x 16 / 20


@pytest.mark.parametrize(
    "spec,key,kind,want",
    [
        ("none", "dsv4-fp4-gb300-dynamo-sglang", "single_turn", ("none", None)),
        (None, "dsv4-fp4-gb300-dynamo-sglang-mtp", "single_turn", ("real", "mtp")),
        ("mtp", None, "agentic_traces", ("real", "mtp")),
        ("dspark", "dsv41flash-fp4-gb300-vllm-agentic-dspark", "agentic_traces",
         ("simulated", "dspark")),
        ("dspark", None, "single_turn", ("real", "dspark")),
    ],
)  # fmt: skip
def test_speculation_from_spec_method_and_config_key(spec, key, kind, want):
    assert inferencex.inferencex_speculation(spec, key, kind) == want


def test_config_key_disagreeing_with_spec_method_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="names no speculative method"):
        _import(tmp_path, [{**AGENTX, "config_key": "dsv41flash-fp4-gb300-vllm-agentic"}])
    with pytest.raises(InputError, match="benchmark_type"):
        _import(tmp_path, [{**AGENTX, "benchmark_type": "multi_turn"}])
    with pytest.raises(InputError, match="isl"):
        _import(tmp_path, [{**FIXED, "isl": None}])


def test_mlperf_serving_is_unknown_not_aggregated():
    pts = ev.published_points()
    ml = pts[pts["source"] == "mlperf-v6.1-dsr1"]
    assert len(ml) and {b.serving for b in ml["basis"]} == {"unknown"}


def test_cookbook_lengths_are_caps_drawn_uniformly():
    df, _ = sglang_cookbook.cookbook_points(
        paths.DATA / "published" / "sources" / "sglang-deepseek-v4-benchmarks.jsx",
        source_url="https://example.org/x",
    )
    assert set(df["workload"]) == {"random lengths"}
    f = paths.DATA / "published" / "sources" / "x.jsx"
    wl = {"dataset": "random", "isl": 8, "osl": 8, "range_ratio": 1.0}
    assert sglang_cookbook.cookbook_workload(f, "w", wl) == "fixed lengths"
    assert sglang_cookbook.cookbook_workload(f, "w", {**wl, "range_ratio": 0.5}) == "random lengths"


def _quoted_numbers(quote: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", quote)]


def test_hand_copied_v41_flash_rows_equal_their_source_tables():
    """The V4.1-Flash InferenceX points exist only in PR tables (the API slice stored here
    holds DeepSeek-R1 rows only): each copied value must be a number of the quoted row."""
    reg = figures.load_figures()
    rows = [
        f
        for f in reg.figures
        if f.model == "DeepSeek-V4.1-Flash" and f.submitter.startswith("SemiAnalysis")
    ]
    assert len(rows) >= 4
    for f in rows:
        nums = _quoted_numbers(f.quote)
        assert any(n == pytest.approx(f.value) for n in nums), (f.id, f.quote)
