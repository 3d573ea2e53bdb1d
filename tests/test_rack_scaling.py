"""Rack scaling: token accounting on hand-made traces, and the readings of the published figures
against hand-computed numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import synthetic_trace

from rackbook.core import server_metrics
from rackbook.core.importers import vllm_bench_frames
from rackbook.core.traces import validate
from rackbook.errors import InputError
from rackbook.results import rack_scaling


def _result(inp, out, ttft, lat, duration=2.0):
    """A detailed vLLM result: one gap per output token after the first, evenly spread."""
    itls = [
        [(lt - t) / (o - 1)] * (o - 1) if o > 1 else []
        for o, t, lt in zip(out, ttft, lat, strict=True)
    ]
    return {
        "duration": duration,
        "input_lens": inp,
        "output_lens": out,
        "ttfts": ttft,
        "latencies": lat,
        "itls": itls,
        "start_times": [0.0] * len(inp),
        "errors": [""] * len(inp),
    }


def _trace(tmp_path, parts, server_metrics=None):
    frames = [
        vllm_bench_frames(tmp_path / f"{name}.json", labels, data=d) for name, labels, d in parts
    ]
    return synthetic_trace(frames, server_metrics)


def _sm(rows):
    return pd.DataFrame(rows, columns=["point_id", "server", "phase", "metric", "labels", "value"])


def test_accounting_from_request_rows(tmp_path):
    t = _trace(
        tmp_path,
        [("p", {"num_gpus": "4"}, _result([100, 200], [10, 20], [0.1, 0.2], [1.0, 2.0]))],
    )
    t.requests["cached_prompt_tokens"] = pd.array([60, 100], dtype="Int64")
    row = rack_scaling.token_accounting(t).iloc[0]
    # 2 s window: output 30 -> 15 tok/s; input 300 -> 150; cached 160 -> 80; new 140 -> 70
    assert row["cached_source"] == "requests"
    assert row["output_tok_s"] == pytest.approx(15.0)
    assert row["input_tok_s"] == pytest.approx(150.0)
    assert row["cached_input_tok_s"] == pytest.approx(80.0)
    assert row["new_input_tok_s"] == pytest.approx(70.0)
    assert row["total_tok_s"] == pytest.approx(165.0)
    assert row["computed_tok_s"] == pytest.approx(85.0)
    # per GPU: / 4
    assert row["total_tok_s_per_gpu"] == pytest.approx(41.25)
    assert row["computed_tok_s_per_gpu"] == pytest.approx(21.25)
    assert row["cached_input_tok_s_per_gpu"] == pytest.approx(20.0)
    assert row["num_gpus"] == 4


def test_accounting_from_prometheus_counters_both_name_styles(tmp_path):
    t = _trace(tmp_path, [("p", {}, _result([100, 200], [10, 20], [0.1, 0.2], [1.0, 2.0]))])
    sm = _sm(
        [
            # server a: two engines (label sets), "_total" names; hits 30 -> 100, queries 100 -> 300
            ("p", "a", "before", "vllm:prefix_cache_hits_total", 'engine="0"', 10.0),
            ("p", "a", "before", "vllm:prefix_cache_hits_total", 'engine="1"', 20.0),
            ("p", "a", "after", "vllm:prefix_cache_hits_total", 'engine="0"', 40.0),
            ("p", "a", "after", "vllm:prefix_cache_hits_total", 'engine="1"', 60.0),
            ("p", "a", "before", "vllm:prefix_cache_queries_total", "", 100.0),
            ("p", "a", "after", "vllm:prefix_cache_queries_total", "", 300.0),
            # server b: plain names; hits +50, queries +100
            ("p", "b", "before", "vllm:prefix_cache_hits", "", 0.0),
            ("p", "b", "after", "vllm:prefix_cache_hits", "", 50.0),
            ("p", "b", "before", "vllm:prefix_cache_queries", "", 0.0),
            ("p", "b", "after", "vllm:prefix_cache_queries", "", 100.0),
        ]
    )
    t.extra["server_metrics"] = sm
    t = validate(t)
    assert server_metrics.counter_deltas(t.extra["server_metrics"], "p") == {
        "vllm:prefix_cache_hits": 120.0,
        "vllm:prefix_cache_queries": 300.0,
    }
    row = rack_scaling.token_accounting(t, gpus=8).iloc[0]
    # hit rate 120 / 300 = 0.4; cached = 0.4 x 300 input tokens = 120 -> 60 tok/s, / 8 GPUs
    assert row["cached_source"] == "server_metrics"
    assert row["cached_input_tokens"] == pytest.approx(120.0)
    assert row["cached_input_tok_s"] == pytest.approx(60.0)
    assert row["cached_input_tok_s_per_gpu"] == pytest.approx(7.5)
    assert row["new_input_tok_s"] == pytest.approx(90.0)
    assert row["replicas"] == 2 and row["num_gpus"] == 8
    assert "0.4" in row["note"]


def test_accounting_unknown_cached_is_nan_and_said(tmp_path):
    t = _trace(tmp_path, [("p", {}, _result([100], [10], [0.1], [1.0]))])
    row = rack_scaling.token_accounting(t).iloc[0]
    assert row["cached_source"] == "unknown" and "unknown" in row["note"]
    assert math.isnan(row["cached_input_tok_s"]) and math.isnan(row["computed_tok_s"])
    assert row["total_tok_s"] == pytest.approx(55.0)  # (100 + 10) / 2 s still known
    assert math.isnan(row["total_tok_s_per_gpu"])  # no GPU count anywhere
    with pytest.raises(InputError, match="gpus"):
        rack_scaling.token_accounting(t, gpus=0)


def test_counter_that_went_down_is_unknown(tmp_path):
    sm = _sm(
        [
            ("p", "a", "before", "vllm:prefix_cache_hits", "", 500.0),
            ("p", "a", "after", "vllm:prefix_cache_hits", "", 10.0),
            ("p", "a", "before", "vllm:prefix_cache_queries", "", 500.0),
            ("p", "a", "after", "vllm:prefix_cache_queries", "", 600.0),
        ]
    )
    t = _trace(tmp_path, [("p", {}, _result([100], [10], [0.1], [1.0]))], sm)
    row = rack_scaling.token_accounting(t).iloc[0]
    assert row["cached_source"] == "unknown" and "went down" in row["note"]


def test_scaling_efficiency_is_the_per_gpu_ratio():
    s = rack_scaling.scaling_efficiency(1000.0, 100.0, 32, 4)
    assert s.speedup == pytest.approx(10.0) and s.nodes == pytest.approx(8.0)
    assert s.efficiency == pytest.approx(1.25)
    assert s.per_gpu_n / s.per_gpu_1 == pytest.approx(s.efficiency)  # 31.25 / 25
    with pytest.raises(InputError, match="total_1"):
        rack_scaling.scaling_efficiency(1.0, 0.0, 8, 4)


def test_speedup_readings_tray_and_hgx():
    r = rack_scaling.speedup_readings(7.9, 72).set_index("system")
    assert r.loc["gb300-tray", "gpus_per_node"] == 4 and r.loc["gb300-tray", "nodes"] == 18
    assert r.loc["gb300-tray", "efficiency"] == pytest.approx(7.9 / 18)
    assert round(100 * r.loc["gb300-tray", "efficiency"]) == 44
    assert r.loc["hgx-b300", "efficiency"] == pytest.approx(7.9 / 9)
    assert round(100 * r.loc["hgx-b300", "efficiency"]) == 88


def test_claim_readings_per_gpu_exceeds_peak_rack_total_does_not():
    r = rack_scaling.claim_readings(954_000, 72).set_index("reading")
    dec = r.loc["per-gpu-decode"]
    # 954,000 x 2 x 16e9 = 30.528 PFLOP/s against 15 PFLOP/s; cap 15e15 / 32e9 = 468,750
    assert dec["implied_flops_per_s"] == pytest.approx(30.528e15)
    assert dec["ratio"] == pytest.approx(2.0352)
    assert dec["cap_tok_s"] == pytest.approx(468_750)
    assert not dec["survives"]
    pre = r.loc["per-gpu-prefill"]  # 954,000 x 16e9 = 15.264 PFLOP/s; cap 937,500
    assert pre["ratio"] == pytest.approx(1.0176) and not pre["survives"]
    rack = r.loc["rack-total"]  # 954,000 / 72 = 13,250; x 32e9 = 0.424 PFLOP/s
    assert rack["tok_s_per_gpu"] == pytest.approx(13_250)
    assert rack["ratio"] == pytest.approx(0.424e15 / 15e15)
    assert rack["survives"]
    cached = r.loc["per-gpu-with-cached"]
    assert cached["min_cached_share"] == pytest.approx(1 - 468_750 / 954_000)
    assert pd.isna(cached["survives"]) and "50.9%" in cached["formula"]


def test_claim_readings_with_a_cached_share():
    r = rack_scaling.claim_readings(954_000, 72, cached_share=0.6).set_index("reading")
    c = r.loc["per-gpu-with-cached"]
    assert c["computed_tok_s_per_gpu"] == pytest.approx(381_600)  # 0.4 x 954,000
    assert c["ratio"] == pytest.approx(381_600 * 32e9 / 15e15)
    assert bool(c["survives"])
    assert not bool(rack_scaling.claim_readings(954_000, 72, cached_share=0.5).iloc[-1]["survives"])


#: The published figures as the chapter passes them: 954,000 tok/s as stated and / 72 GPUs.
TOKENS = {"per GPU as stated": 954_000, "rack total / 72": 954_000 / 72}


def test_cost_readings():
    c = rack_scaling.cost_readings(38.96, TOKENS)
    cost = c.cost.set_index(["reading", "basis"])["usd_per_m_tokens"]
    # 13,250 tok/s x 3600 = 47.7 M tokens per GPU-hour
    assert cost[("rack total / 72", "claim as cost")] == pytest.approx(38.96 / 47.7)
    assert cost[("rack total / 72", "rental (gb300-rental)")] == pytest.approx(2.65 / 47.7)
    assert cost[("per GPU as stated", "claim as cost")] == pytest.approx(38.96 / 3434.4)
    rev = c.revenue.set_index("reading")
    assert rev.loc["rack total / 72", "revenue_all_uncached"] == pytest.approx(47.7)
    assert rev.loc["rack total / 72", "revenue_all_cached"] == pytest.approx(4.77)
    # 47.7 x (1 - 0.9 s) = 38.96  ->  s = (1 - 38.96 / 47.7) / 0.9
    assert rev.loc["rack total / 72", "cached_share_matching"] == pytest.approx(
        (1 - 38.96 / 47.7) / 0.9
    )
    assert np.isnan(rev.loc["per GPU as stated", "cached_share_matching"])  # >= $343 always
    assert c.ratio_to_rental == pytest.approx(38.96 / 2.65)
    with pytest.raises(InputError, match="usd_per_m_cached"):
        rack_scaling.cost_readings(38.96, TOKENS, usd_per_m_uncached=0.1, usd_per_m_cached=1.0)
