"""Rack scaling: token accounting on hand-made traces, the readings of the published figures
against hand-computed numbers, every verdict the chapter can reach, and the published figures
read from the claims registry."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from conftest import synthetic_trace

from rackbook import paths
from rackbook.core import server_metrics
from rackbook.core.importers import vllm_bench_frames
from rackbook.core.traces import read_trace, validate
from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims, parse_claims
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


# --------------------------------------------------------------------------------------------
# The chapter: every verdict it can reach, and the published figures from the registry


def _registry(**values: float):
    """A copy of the claims registry with the given claims' values changed
    (``throughput=...``, ``speedup=...``, ``cost=...``: the rack-scaling claims)."""
    raw = copy.deepcopy(load_claims().model_dump(mode="python"))
    for c in raw["claims"]:
        for key, v in values.items():
            if c["id"] == f"rack-scaling.{key}":
                c["value"] = v
    return parse_claims(raw, "edited")


def _rack_trace(tmp_path, gpus=("NVIDIA GB300",), top_gpus=72):
    """Config 1x on 4 GPUs and config 18x on ``top_gpus``; each point 2 requests of 350 input
    + 10 output tokens (720 tokens). 1x over 8 s: 90 tok/s; 18x over 1 s: 720 tok/s, i.e.
    720 / 72 = 10 tok/s per GPU. Speedup 720 / 90 = 8; efficiency 8 / (72 / 4) = 0.444.
    No cached counts: the cached (and computed) tokens are unknown."""
    parts = [
        (
            "p1",
            {"config": "1x", "num_gpus": "4"},
            _result([350] * 2, [10] * 2, [0.1] * 2, [0.5] * 2, duration=8.0),
        ),
        (
            "p18",
            {"config": "18x", "num_gpus": str(top_gpus)},
            _result([350] * 2, [10] * 2, [0.1] * 2, [0.5] * 2, duration=1.0),
        ),
    ]
    t = _trace(tmp_path, parts)
    t.run["hardware"] = {"gpus": [{"name": g} for g in gpus]}
    return t


def _headlines(an):
    return {h.name: h for h in rack_scaling.outcome(an).headlines}


def test_analysis_by_hand(tmp_path):
    an = rack_scaling.analyse(_rack_trace(tmp_path), registry=_registry(throughput=10.0))
    assert an.largest["config"] == "18x" and an.largest["total_tok_s_per_gpu"] == pytest.approx(10)
    assert an.top["speedup"] == pytest.approx(8.0)
    assert an.top["efficiency"] == pytest.approx(8 / 18)
    v = an.values()
    assert v["nx_total"] == "720.0" and v["nx_total_per_gpu"] == "10.0"
    assert v["nx_cached_input"] == "unknown" and v["nx_cached_source"] == "unknown"
    assert v["speedup"] == "8.00" and v["efficiency_pct"] == "44.4"
    assert v["ref_gpus"] == 4 and v["top_gpus"] == 72 and v["claim_tok_s"] == 10.0
    h = _headlines(an)
    assert h["measured_total_tok_s_per_gpu"].value == 10.0
    assert h["measured_speedup"].value == 8.0
    assert h["measured_new_input_tok_s"].value is None  # cached count unknown
    assert "unknown" in h["measured_cached_input_tok_s"].reason


@pytest.mark.parametrize(
    "gpus,top_gpus,values,metric,throughput,speedup",
    [
        # CPU: the trace cannot speak to the claims
        ((), 72, {}, "total", "not reproduced", "not reproduced"),
        # B300s, but fewer GPUs than the rack
        (("NVIDIA GB300",), 36, {}, "total", "not reproduced", "not reproduced"),
        # 10 tok/s/GPU vs 10.5: -4.8 %, within 10 %; speedup 8 vs 8: +0 %
        (
            ("NVIDIA GB300",),
            72,
            {"throughput": 10.5, "speedup": 8.0},
            "total",
            "consistent",
            "consistent",
        ),
        # 10 vs 12.5: -20 %; 8 vs 7: +14.3 %: both outside 10 %
        (
            ("NVIDIA GB300",),
            72,
            {"throughput": 12.5, "speedup": 7.0},
            "total",
            "inconsistent",
            "inconsistent",
        ),
        # computed tokens with the cached share unknown: the speedup is unknown
        (("NVIDIA GB300",), 72, {"throughput": 10.0}, "computed", "consistent", "not comparable"),
    ],
    ids=["cpu", "too-few-gpus", "within-tolerance", "outside-tolerance", "speedup-unknown"],
)
def test_every_measured_verdict(tmp_path, gpus, top_gpus, values, metric, throughput, speedup):
    t = _rack_trace(tmp_path, gpus, top_gpus)
    an = rack_scaling.analyse(t, rack_scaling.Params(metric=metric), _registry(**values))
    assert (an.verdict, an.speedup_verdict) == (throughput, speedup)
    out = rack_scaling.outcome(an)
    h = {x.name: x for x in out.headlines}
    assert out.verdict == throughput and out.reason == an.reason
    assert h["measured_total_tok_s_per_gpu"].verdict == throughput
    assert h["measured_speedup"].verdict == h["measured_scaling_efficiency"].verdict == speedup
    if throughput == "not reproduced":
        assert "not on the claim's NVIDIA GB300 NVL72 rack" in an.reason
    elif throughput == "consistent" and metric == "total":
        assert "-4.8% from the published 10.5 (tolerance 10%)" in an.reason
    if speedup == "inconsistent":
        assert "+14.3% from the published 7" in an.speedup_reason
    if speedup == "not comparable":
        assert h["measured_speedup"].value is None
        assert "unknown in this trace" in an.speedup_reason


@pytest.mark.parametrize(
    "values,readings,nodes,revenue",
    [
        # as published: 954,000 tok/s is 2.04x / 1.02x the peak per GPU, 0.0283x as a rack
        # total; 7.9 / 18 and 7.9 / 9 both below 1; $38.96 is the revenue at 20.4 % cached
        (
            {},
            ["inconsistent", "inconsistent", "consistent", "consistent"],
            ["consistent", "consistent"],
            "consistent",
        ),
        # 300,000 tok/s x 32 GFLOP = 9.6 PFLOP/s = 0.64x peak; 12 / 9 nodes = 1.33 > 1;
        # rack total 300,000 / 72 x 3600 = 15 M tok/h, at most $15 < $38.96: no cached share
        (
            {"throughput": 300_000, "speedup": 12.0},
            ["consistent", "consistent", "consistent", "consistent"],
            ["consistent", "inconsistent"],
            "inconsistent",
        ),
        # 36 M tok/s / 72 = 500,000 tok/s per GPU > the 468,750 decode cap: 1.07x; that is
        # 1,800 M tok/h, at least $180 of revenue even all cached: above $38.96
        (
            {"throughput": 36_000_000},
            ["inconsistent", "inconsistent", "inconsistent", "consistent"],
            ["consistent", "consistent"],
            "inconsistent",
        ),
    ],
    ids=["published", "small-figure-big-speedup", "huge-figure"],
)
def test_every_modelled_verdict(values, readings, nodes, revenue):
    an = rack_scaling.analyse(
        read_trace(paths.TRACES / "rack-scaling"), registry=_registry(**values)
    )
    h = _headlines(an)
    names = [
        "reading_per-gpu-decode",
        "reading_per-gpu-prefill",
        "reading_rack-total",
        "reading_per-gpu-with-cached_min_cached_share",
    ]
    assert [h[n].verdict for n in names] == readings
    assert [h[f"speedup_efficiency_{s}"].verdict for s in ("gb300-tray", "hgx-b300")] == nodes
    assert h["revenue_cached_share_rack_total"].verdict == revenue
    assert h["cost_ratio_to_rental"].verdict == "not comparable"
    if values.get("throughput") == 300_000:
        assert h["reading_per-gpu-decode"].value == pytest.approx(0.64)
        assert h["speedup_efficiency_hgx-b300"].value == pytest.approx(1.3333)
        assert h["revenue_cached_share_rack_total"].value is None
        assert "$38.96 is outside that range" in h["revenue_cached_share_rack_total"].reason
        assert "at least 0.0%" in h["reading_per-gpu-with-cached_min_cached_share"].reason
    if values.get("throughput") == 36_000_000:
        assert h["reading_rack-total"].value == pytest.approx(500_000 / 468_750, abs=1e-4)
        assert "1.07x the GPU's peak" in h["reading_rack-total"].reason


def test_the_published_figures_come_from_the_registry():
    """Change the three published figures in a copy of the registry: on the shipped trace the
    headlines that read them change, and the old numbers are gone from every headline."""
    trace = read_trace(paths.TRACES / "rack-scaling")
    old = {h.name: h for h in rack_scaling.outcome(rack_scaling.analyse(trace)).headlines}
    reg = _registry(throughput=1_000_000, speedup=8.1, cost=40.5)
    an = rack_scaling.analyse(trace, registry=reg)
    new = _headlines(an)
    v = an.values()
    assert (v["claim_tok_s"], v["claim_speedup"], v["claim_usd"]) == (1_000_000, 8.1, 40.5)
    # 1,000,000 x 32 GFLOP = 32 PFLOP/s = 2.13x the 15 PFLOP/s peak (was 954,000: 2.04x)
    dec = new["reading_per-gpu-decode"]
    assert dec.value == pytest.approx(2.1333) and old[dec.name].value == pytest.approx(2.0352)
    assert dec.reason.startswith("2.13x") and old[dec.name].reason.startswith("2.04x")
    # cached share: 1 - 468,750 / 1,000,000 = 53.1 % (was 50.9 %)
    share = new["reading_per-gpu-with-cached_min_cached_share"]
    assert share.value == pytest.approx(0.5312) and "53.1%" in share.reason
    # rack total 1,000,000 / 72 x 3600 / 1e6 = 50 M tok/h; $40.5 needs (1 - 40.5 / 50) / 0.9
    rev = new["revenue_cached_share_rack_total"]
    assert rev.value == pytest.approx(round((1 - 40.5 / 50) / 0.9, 4))
    assert "50 M tok/h" in rev.reason and "$40.5 needs 21.1% cached" in rev.reason
    assert new["speedup_efficiency_gb300-tray"].definition == "8.1 / (72 GPUs / 4 per node)"
    assert new["speedup_efficiency_hgx-b300"].value == pytest.approx(0.9)  # 8.1 / 9
    assert new["cost_ratio_to_rental"].value == pytest.approx(round(40.5 / 2.65, 3))
    for name in ("reading_per-gpu-prefill", "reading_rack-total", "speedup_efficiency_hgx-b300"):
        assert (new[name].value, new[name].reason) != (old[name].value, old[name].reason)
    text = " ".join(h.definition + " " + h.reason for h in new.values())
    for gone in ("954,000", "954000", "7.9", "38.96", "47.7"):
        assert gone not in text, gone
    # the measured headlines do not depend on the published figures
    for name in ("measured_total_tok_s_per_gpu", "measured_speedup", "measured_cached_input_tok_s"):
        assert new[name] == old[name]
