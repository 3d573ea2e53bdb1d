"""Rack scaling: token accounting on hand-made traces, the readings of the published figures
against hand-computed numbers, every verdict the chapter can reach, and the published figures
read from the claims registry."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import analyse_shipped, edited_registry, headline_rows, synthetic_trace

from rackbook import paths
from rackbook.core import server_metrics
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.traces import read_trace, validate
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
    acc = pd.DataFrame(
        {"config": ["1x", "8x"], "point_id": ["a", "b"], "num_gpus": [4, 32], "replicas": [1, 8]}
    ).assign(total_tok_s=[100.0, 1000.0])
    s = rack_scaling.scaling_vs_reference(acc).set_index("config").loc["8x"]
    assert s["speedup"] == pytest.approx(10.0) and s["gpu_ratio"] == pytest.approx(8.0)
    assert s["efficiency"] == pytest.approx(1.25)  # 31.25 tok/s per GPU / 25
    assert s["tok_s_per_gpu"] / 25 == pytest.approx(s["efficiency"])


# --------------------------------------------------------------------------------------------
# The ceilings and the readings of the published figures, by hand
#
# DeepSeek-V4.1-Flash on a GB300 GPU (catalogs): decode passes 40 MoE layers x top-6 x 3 x
# 5120 x 2304 = 8.493e9 routed params (FP4, 15 PFLOP/s) and 16e9 - 8.493e9 = 7.507e9 dense
# (FP8, 5 PFLOP/s): 2 x 8.493e9 / 15e15 + 2 x 7.507e9 / 5e15 = 4.135 us per token, i.e.
# 241,834 tok/s per GPU. Prefill passes half of each (20 encoder layers, 8e9 active): 483,667.
CAP_DECODE = 1 / (2 * 8_493_465_600 / 15e15 + 2 * 7_506_534_400 / 5e15)
CAP_PREFILL = 1 / (2 * 4_246_732_800 / 15e15 + 2 * 3_753_267_200 / 5e15)


def test_ceilings_by_hand_with_their_formulas():
    c = rack_scaling.ceilings("deepseek-v4.1-flash", "gb300", 72)
    by = c.set_index(["ceiling", "phase"])
    assert by.loc[("compute", "decode"), "tok_s_per_gpu"] == pytest.approx(CAP_DECODE)
    assert CAP_DECODE == pytest.approx(241_834, abs=1)
    assert by.loc[("compute", "prefill"), "tok_s_per_gpu"] == pytest.approx(CAP_PREFILL)
    # HBM, the fewest bytes: 7.507 GB dense once + 40 x 6 experts x 18.8 MB = 12.02 GB over
    # 72 x 8 TB/s per step, b sequences: b x 576e12 / (72 x 12.0187e9) = 665.6 b tok/s per GPU;
    # the best batch stops at the first power of two above compute, 512: 340,803 tok/s per GPU
    assert by.loc[("memory bandwidth", "decode"), "tok_s_per_gpu"] == pytest.approx(
        512 * 576e12 / (72 * 12_018_688_000), rel=1e-5
    )
    dec = by.loc[("compute", "decode")]
    assert "2 x 8.493e9 / 15 PFLOP/s (fp4) + 2 x 7.507e9 / 5 PFLOP/s (fp8)" in dec["formula"]
    assert "x 1 GPU =" in dec["formula"] and "(s)" not in " ".join(c["formula"])
    assert "72 GPUs" in by.loc[("memory bandwidth", "decode"), "formula"]
    assert r"\dfrac{2 \times 8.49 \times 10^{9}}{15 \times 10^{15}}" in dec["latex"]
    assert dec["latex"].count("241{,}834") == 1
    assert by.loc[("memory bandwidth", "decode"), "latex"] == ""


def test_speedup_readings_tray_and_hgx():
    r = rack_scaling.speedup_readings(7.9, 954_000, 72, "deepseek-v4.1-flash")
    r = r.set_index("system")
    assert r.loc["gb300-tray", "gpus_per_node"] == 4 and r.loc["gb300-tray", "nodes"] == 18
    assert r.loc["gb300-tray", "efficiency"] == pytest.approx(7.9 / 18)
    assert round(100 * r.loc["gb300-tray", "efficiency"]) == 44
    assert r.loc["hgx-b300", "efficiency"] == pytest.approx(7.9 / 9)
    assert round(100 * r.loc["hgx-b300", "efficiency"]) == 88
    # the node the speedup implies, with 954,000 as the rack's total: 954,000 / 7.9 / 4 =
    # 30,190 tok/s per GPU of a tray = 0.125x the decode ceiling
    assert r.loc["gb300-tray", "node_tok_s_per_gpu"] == pytest.approx(954_000 / 7.9 / 4)
    assert r.loc["gb300-tray", "ratio"] == pytest.approx(954_000 / 7.9 / 4 / CAP_DECODE)
    # each node is held to its own GPU: the HGX B300's 954,000 / 7.9 / 8 = 15,095 tok/s per GPU
    # is 0.0694x B300's 217,650 decode ceiling (1 / (2 x 8.4935e9 / 13.5e15 + 2 x 7.5065e9 /
    # 4.5e15)), not 0.0624x GB300's 241,834
    assert r.loc["hgx-b300", "gpu"] == "b300"
    assert r.loc["hgx-b300", "ceiling_tok_s_per_gpu"] == pytest.approx(217_650, abs=1)
    assert r.loc["hgx-b300", "ratio"] == pytest.approx(0.0694, abs=5e-5)
    assert set(r["verdict"]) == {"possible"}
    # on the throughput's basis (per GPU as stated, cache hits counted, ISL 100k / OSL 1k): a
    # tray's GPU counts 954,000 x 72 / 7.9 / 4 = 2,173,671 tok/s and fits with >= 85.7 % cached
    assert r.loc["gb300-tray", "stated_node_tok_s_per_gpu"] == pytest.approx(2_173_671, abs=1)
    assert r.loc["gb300-tray", "stated_min_cached_share"] == pytest.approx(0.857, abs=1e-3)
    assert set(r["stated_verdict"]) == {"undetermined"}


def test_throughput_readings_per_gpu_exceeds_the_ceiling_rack_total_does_not():
    r = rack_scaling.throughput_readings(954_000, 72, "deepseek-v4.1-flash", "gb300")
    r = r.set_index("reading")
    dec = r.loc["per-gpu-decode"]  # 954,000 / 241,834 = 3.94x
    assert dec["ceiling_tok_s_per_gpu"] == pytest.approx(CAP_DECODE)
    assert dec["ratio"] == pytest.approx(954_000 / CAP_DECODE) and dec["limit"] == "compute"
    assert dec["verdict"] == "impossible"
    assert dec["formula"] == (
        "954,000 tok/s per GPU is 3.94x the decode compute ceiling of 241,834 on GB300"
    )
    pre = r.loc["per-gpu-prefill"]  # 954,000 / 483,667 = 1.97x
    assert pre["ratio"] == pytest.approx(954_000 / CAP_PREFILL) and pre["verdict"] == "impossible"
    rack = r.loc["rack-total"]  # 954,000 / 72 = 13,250 tok/s per GPU = 0.0548x
    assert rack["tok_s_per_gpu"] == pytest.approx(13_250)
    assert rack["ratio"] == pytest.approx(13_250 / CAP_DECODE) and rack["verdict"] == "possible"
    assert rack["formula"].startswith("954,000 / 72 = 13,250 tok/s per GPU is 0.055x the decode")
    # the whole workload (ISL 100,000 / OSL 1,000, assumed): per GPU 954,000 x 100/101 =
    # 944,554 input and 9,446 output tok/s; the new input tokens' prefill behind the cached
    # prefix (GEMMs + attention over 100,000 x (1 + s) / 2 tokens) and the output tokens'
    # decode fill the GPUs' time at s = 64.0 % (decode 0.055 + prefill 0.945); the prefill
    # GEMMs alone gave 1 - 483,667 / 954,000 = 49.3 %, a necessary share, not a sufficient one
    cached = r.loc["per-gpu-with-cached"]
    assert cached["min_cached_share"] == pytest.approx(0.640, abs=1e-3)
    assert cached["verdict"] == "undetermined" and np.isnan(cached["ratio"])
    assert "64 %" in cached["formula"] and "ISL 100,000 / OSL 1,000 (assumed" in cached["formula"]


@pytest.mark.parametrize(
    "share,verdict",
    [
        (0.7, "possible"),  # 0.847x the GPUs' time
        (0.66, "possible"),  # 0.949x: a bound, no margin
        (0.57, "impossible"),  # 1.18x (it read "possible if >= 56.9 %" before issue 28)
        (0.3, "impossible"),  # 1.84x
    ],
)
def test_throughput_reading_with_a_cached_share(share, verdict):
    """A share of the input tokens cached, on the whole workload (ISL 100,000 / OSL 1,000):
    the row is `rackbook check --counted total --isl 100000 --osl 1000 --cached-share S`;
    computed = new input + output = 954,000 x (100 (1 - s) + 1) / 101 per GPU."""
    from rackbook.physics import check

    r = rack_scaling.throughput_readings(954_000, 72, "deepseek-v4.1-flash", "gb300", share)
    c = r.set_index("reading").loc["per-gpu-with-cached"]
    assert c["computed_tok_s_per_gpu"] == pytest.approx(954_000 * (100 * (1 - share) + 1) / 101)
    cli = check.check_claim(
        "deepseek-v4.1-flash", "gb300", 72, 954_000, counted="total", isl=100_000, osl=1_000,
        cached_share=share,
    )  # fmt: skip
    assert c["ratio"] == pytest.approx(cli.ratio) and c["verdict"] == cli.verdict == verdict


#: The published figures as the chapter passes them: 954,000 tok/s as stated and / 72 GPUs.
TOKENS = {"per GPU as stated": 954_000, "rack total / 72": 954_000 / 72}


def test_cost_readings():
    c = rack_scaling.cost_readings(38.96, TOKENS)
    cost = c.cost.set_index(["reading", "basis"])["usd_per_m_tokens"]
    # 13,250 tok/s x 3600 = 47.7 M tokens per GPU-hour; the catalog's rental is $2.652
    assert cost[("rack total / 72", "claim as cost")] == pytest.approx(38.96 / 47.7)
    assert cost[
        ("rack total / 72", "ownership-cost model (gb300-tco-hyperscaler)")
    ] == pytest.approx(2.652 / 47.7)
    assert cost[("per GPU as stated", "claim as cost")] == pytest.approx(38.96 / 3434.4)
    rev = c.revenue.set_index("reading")
    assert rev.loc["rack total / 72", "revenue_all_uncached"] == pytest.approx(47.7)
    assert rev.loc["rack total / 72", "revenue_all_cached"] == pytest.approx(4.77)
    # 47.7 x (1 - 0.9 s) = 38.96  ->  s = (1 - 38.96 / 47.7) / 0.9 = 20.4 %
    assert rev.loc["rack total / 72", "cached_share_matching"] == pytest.approx(
        (1 - 38.96 / 47.7) / 0.9
    )
    assert np.isnan(rev.loc["per GPU as stated", "cached_share_matching"])  # >= $343 always
    assert c.ratio_to_rental == pytest.approx(38.96 / 2.652)


# --------------------------------------------------------------------------------------------
# The chapter: every verdict of every reading, and the published figures from the registry


def _registry(**values: float):
    """A copy of the claims registry with the given claims' values changed
    (``throughput=...``, ``speedup=...``, ``cost=...``: the rack-scaling claims)."""
    edits = {f"rack-scaling.{k}": lambda c, v=v: c.update(value=v) for k, v in values.items()}
    return edited_registry(edits)


def _rack_trace(tmp_path, gpus=("NVIDIA GB300",), top_gpus=72, cached=None):
    """Config 1x on 4 GPUs and config 18x on ``top_gpus``; each point 2 requests of 350 input
    + 10 output tokens (720 tokens). 1x over 8 s: 90 tok/s; 18x over 1 s: 720 tok/s, i.e.
    720 / 72 = 10 tok/s per GPU. Speedup 720 / 90 = 8; efficiency 8 / (72 / 4) = 0.444.
    ``cached``: cached prompt tokens of every request (None: unknown, and so are the cached
    and computed tokens). A trace on GPUs is recorded and serves the claim's model."""
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
    if gpus:
        t.run["kind"] = "recorded"
        t.run["parameters"] = {"model": "deepseek-ai/DeepSeek-V4.1-Flash"}
    if cached is not None:
        t.requests["cached_prompt_tokens"] = pd.array([cached] * len(t.requests), dtype="Int64")
    return t


def _headlines(an):
    return {h.name: h for h in rack_scaling.outcome(an).headlines}


def test_analysis_by_hand(tmp_path):
    an = rack_scaling.analyse(_rack_trace(tmp_path), registry=_registry(throughput=10.0))
    assert an.largest["config"] == "18x" and an.largest["total_tok_s_per_gpu"] == pytest.approx(10)
    assert an.top["speedup"] == pytest.approx(8.0)
    assert an.top["efficiency"] == pytest.approx(8 / 18)
    assert an.testable and an.unit == "GPU"
    v = an.values()
    assert v["nx_total"] == "720.0" and v["nx_total_per_gpu"] == "10.0"
    assert v["nx_cached_input"] == "unknown" and v["nx_cached_source"] == "unknown"
    assert v["speedup"] == "8.00" and v["efficiency_pct"] == "44.4"
    assert v["scaling_change"] == "grew to 8.00x"
    assert v["ref_units"] == "4 GPUs" and v["top_units"] == "72 GPUs" and v["claim_tok_s"] == 10.0
    assert math.isnan(an.revenue_run)  # the cached count is unknown
    h = _headlines(an)
    assert h["measured_total_tok_s_per_gpu"].value == 10.0
    assert h["measured_speedup"].value == 8.0
    assert h["measured_new_input_tok_s"].value is None  # cached count unknown
    assert h["measured_token_revenue"].value is None
    assert "unknown" in h["measured_cached_input_tok_s"].reason


def test_the_shipped_trace_is_a_stand_in():
    """Two CPU servers sharing two cores (engines pinned to one, front ends to the other):
    10,890.4 tok/s on two, 1.08x one; per replica, not per GPU, and every this-run reading
    untested."""
    an = rack_scaling.analyse(read_trace(paths.TRACES / "rack-scaling"))
    v = an.values()
    assert an.unit == "replica" and not an.testable
    assert v["scaling_change"] == "grew to 1.08x" and v["nx_units"] == "2 replicas"
    out = rack_scaling.outcome(an)
    for claim in ("throughput", "speedup", "cost"):
        r = out.reading(f"rack-scaling.{claim}", "this run")
        assert r.verdict == "untested" and "2-core AMD EPYC, no GPU" in r.reason
    assert "per replica on 2 replicas" in out.reading("rack-scaling.throughput", "this run").reason
    assert "(s)" not in " ".join(h.definition + h.reason for h in out.headlines)
    assert "(s)" not in " ".join(r.reason for r in out.readings)


@pytest.mark.parametrize(
    "gpus,top_gpus,cached,values,metric,verdicts",
    [
        # CPU: the trace cannot speak to the claims
        ((), 72, 300, {}, "total", ("untested", "untested", "untested")),
        # GB300s, but fewer GPUs than the rack
        (("NVIDIA GB300",), 36, 300, {}, "total", ("untested", "untested", "untested")),
        # 10 tok/s/GPU vs 10.5: -4.8 %; speedup 8 vs 8: +0 %; revenue: 18x computes 100 new
        # input + 20 output = 120 tok/s and serves 600 cached, per GPU 1.667 and 8.333:
        # (1.667 x $1 + 8.333 x $0.10) x 3600 / 1e6 = $0.009 per GPU-hour vs 0.0095: -5.3 %
        (
            ("NVIDIA GB300",),
            72,
            300,
            {"throughput": 10.5, "speedup": 8.0, "cost": 0.0095},
            "total",
            ("consistent", "consistent", "consistent"),
        ),
        # 10 vs 12.5: -20 %; 8 vs 7: +14.3 %; $0.009 vs 0.0125: -28 %: all outside 10 %
        (
            ("NVIDIA GB300",),
            72,
            300,
            {"throughput": 12.5, "speedup": 7.0, "cost": 0.0125},
            "total",
            ("inconsistent", "inconsistent", "inconsistent"),
        ),
        # cached count unknown: the computed speedup and the revenue are unknown in the trace
        (
            ("NVIDIA GB300",),
            72,
            None,
            {"throughput": 10.0},
            "computed",
            ("consistent", "untested", "untested"),
        ),
    ],
    ids=["cpu", "too-few-gpus", "within-tolerance", "outside-tolerance", "unknown-in-trace"],
)
def test_every_run_reading(tmp_path, gpus, top_gpus, cached, values, metric, verdicts):
    t = _rack_trace(tmp_path, gpus, top_gpus, cached)
    an = rack_scaling.analyse(t, rack_scaling.Params(metric=metric), _registry(**values))
    out = rack_scaling.outcome(an)
    got = tuple(
        out.reading(f"rack-scaling.{c}", "this run").verdict
        for c in ("throughput", "speedup", "cost")
    )
    assert got == verdicts
    h = {x.name: x for x in out.headlines}
    assert h["measured_total_tok_s_per_gpu"].verdict == verdicts[0]
    assert h["measured_speedup"].verdict == h["measured_scaling_efficiency"].verdict == verdicts[1]
    assert h["measured_token_revenue"].verdict == verdicts[2]
    tp = out.reading("rack-scaling.throughput", "this run").reason
    sp = out.reading("rack-scaling.speedup", "this run").reason
    cost = out.reading("rack-scaling.cost", "this run").reason
    if not gpus:
        assert "recorded on" in tp and "the claim needs 72 GB300 GPUs" in tp
    if verdicts[0] == "consistent" and metric == "total":
        assert "-4.8 % from the published 10.5 (tolerance 10 %)" in tp
        assert h["measured_token_revenue"].value == pytest.approx(0.009)
        assert "-5.3 % from the published 0.0095" in cost
    if verdicts[1] == "inconsistent":
        assert "+14.3 % from the published 7" in sp and "-28 %" in cost
    if metric == "computed":
        assert h["measured_speedup"].value is None and "unknown in this trace" in sp
        assert "unknown in this trace" in cost
    if cached is not None:  # the requests state their cached tokens: the reason says so
        assert h["measured_cached_input_tok_s"].reason == (
            "cached count from the requests' cached_prompt_tokens"
        )


STATED = "per GPU as stated: "


def _physics(values=None, **params):
    an = rack_scaling.analyse(
        read_trace(paths.TRACES / "rack-scaling"),
        rack_scaling.Params(**params),
        _registry(**(values or {})),
    )
    return an, rack_scaling.outcome(an)


@pytest.mark.parametrize(
    "values,params,verdict,margin",
    [
        # 300,000 tok/s: 1.24x the decode ceiling, but 300,000 / 483,667 = 0.62x the prefill
        # ceiling: a per-GPU reading fits, and its margin is the one shown (never the decode
        # ratio, which would contradict "possible")
        ({"throughput": 300_000}, {}, "possible", f"{STATED}0.62x the prefill ceiling"),
        # as published: 3.94x decode, 1.97x prefill, fits only with >= 64.0 % cache hits at ISL
        # 100k / OSL 1k, a share (and a workload) the write-up does not give
        ({}, {}, "undetermined", f"{STATED}fits only if >= 64 % of the input is cached"),
        # a published share of 40 %: 1.53x the GPUs' time at ISL 100k / OSL 1k; every per-GPU
        # reading is out
        ({}, {"cached_share": 0.4}, "impossible", f"{STATED}3.94x the decode ceiling"),
    ],
    ids=["possible", "undetermined", "impossible"],
)
def test_every_throughput_physics_reading(values, params, verdict, margin):
    """The margin names its basis (issue 28: each figure's basis stated)."""
    _, out = _physics(values, **params)
    r = out.reading("rack-scaling.throughput", "physics")
    assert (r.verdict, r.margin) == (verdict, margin)
    if not values and not params:
        assert "64 %" in r.reason and "(13,250 per GPU) it is possible" in r.reason
    if params:
        assert "at the given share, at ISL 100,000 / OSL 1,000" in r.reason


@pytest.mark.parametrize(
    "speedup,verdict,margin",
    [
        # read on the throughput's basis (per GPU as stated, cache hits counted, ISL 100k /
        # OSL 1k): 954,000 x 72 / 7.9 / 4 = 2,173,671 tok/s per tray GPU fits with >= 85.7 %
        # cached, 1,086,835 per HGX GPU with >= 72.2 %: undetermined (share not published)
        (7.9, "undetermined", "per GPU as stated: fits at >= 85.7 % cached"),
        # 954,000 x 72 / 100 / 4 = 171,720 per GPU fits with nothing cached
        (100, "possible", "per GPU as stated: fits with nothing cached"),
        # 954,000 x 72 / 0.5 / 4 = 34.3M per GPU: the output tokens' decode alone overflows
        (0.5, "impossible", "per GPU as stated: no cached share fits"),
    ],
)
def test_every_speedup_physics_reading(speedup, verdict, margin):
    _, out = _physics({"speedup": speedup})
    r = out.reading("rack-scaling.speedup", "physics")
    assert (r.verdict, r.margin) == (verdict, margin)
    assert "nodes of 4 GB300" in r.reason and "nodes of 8 B300" in r.reason
    assert "with the throughput as the rack's total" in r.reason


@pytest.mark.parametrize(
    "values,params",
    [
        ({}, {}),
        ({"cost": 2.65}, {}),  # the catalog's rental price: was "impossible" as token revenue
        ({"cost": 100.0}, {}),  # was "impossible": outside every token-revenue range
        ({}, {"cached_share": 0.5}),  # was "impossible": +48.5 % from the revenue at 50 %
    ],
    ids=["published", "rental", "high", "with-share"],
)
def test_a_price_is_never_a_physics_reading(values, params):
    """No ceiling bounds a price: every dollar figure, at any cached share, reads undetermined
    with the reason saying why (token prices are not physics)."""
    _, out = _physics(values, **params)
    r = out.reading("rack-scaling.cost", "physics")
    assert (r.verdict, r.margin) == ("undetermined", "not a physics quantity")
    assert "no ceiling bounds a price" in r.reason


def test_published_readings_on_the_shipped_evidence():
    """No published throughput or speedup has the claim's basis (V4.1-Flash on 72 GB300 GPUs,
    agentic; MLPerf's 72-vs-8 ratios are DeepSeek-R1 and may count replicas): none published,
    each named basis with its closest point. $38.96 is above the published GB300 rental and
    ownership prices (the verdicts each way are reached in tests/test_published.py)."""
    _, out = _physics()
    got = {c: out.reading(f"rack-scaling.{c}", "published")
           for c in ("throughput", "speedup", "cost")}  # fmt: skip
    assert {c: r.verdict for c, r in got.items()} == {
        "throughput": "none published", "speedup": "none published", "cost": "above",
    }  # fmt: skip
    assert len(got["throughput"].by_basis) == 7 and len(got["speedup"].by_basis) == 2
    assert got["cost"].sources and all(u.startswith("https://") for u in got["cost"].sources)


def test_flips_are_the_computed_thresholds():
    """Physics turns at 1x a bound (the least time: no margin). Throughput on the whole
    workload (ISL 100k / OSL 1k, assumed): possible once a published share of the input
    tokens cached reaches 64.0 %, impossible below; as computed tokens possible up to the
    483,667 tok/s prefill ceiling, and impossible above 33,300,000,000 tok/s per GPU, which no share
    reaches. Speedup on the rack total, each node at its own GPU's ceiling: tray 4 x 241,834 =
    967,334, HGX 8 x 217,650 = 1,741,201; possible while the total stays below 7.9 x 967,334 =
    7,641,940 tok/s, impossible above 7.9 x 1,741,201 = 13,755,491; at 954,000: above 954,000 /
    967,334 = 0.986x, below 954,000 / 1,741,201 = 0.548x. Cost: nothing turns it. No `$`."""
    an, out = _physics()
    tp, sp, cost = out.flips[:3]
    assert "reaches 64 %" in tp and "483,667 tok/s" in tp and "33,300,000,000" in tp
    assert "7,641,940 tok/s" in sp and "13,755,491 tok/s" in sp
    assert "above 0.986x" in sp and "below 0.548x" in sp
    assert "85.7 %" in sp and "72.2 %" in sp
    assert cost.startswith("cost, physics: nothing turns it")
    assert not any("$" in f for f in out.flips)


def test_tables_show_dollars_literally_and_say_what_is_unknown():
    an, _ = _physics()
    cost = an.cost_markdown()
    assert "\\$38.96" in cost and "\\$4.77 to \\$47.70" in cost
    assert "$" not in cost.replace("\\$", "")
    thr = an.throughput_markdown()
    # at 64.0 % cached: 954,000 x (100 x 0.36 + 1) / 101 = 349,485 computed tok/s per GPU
    assert "at most 349,4" in thr and "fits once at least 64 % of the input is cached" in thr
    assert "| rack total / GPUs | 13,250 | 13,250 | 241,834 (decode) | 0.055x |" in thr
    assert (
        "| 2x (2 replicas) | 1,210.0 | 2,401.7 | 7,278.8 | 10,890.4 |" in an.accounting_markdown()
    )
    assert an.ceilings_markdown().startswith("$$ C_\\text{decode}")


def test_the_published_figures_come_from_the_registry():
    """Change the three published figures in a copy of the registry: on the shipped trace the
    headlines and readings that read them change, and the old numbers are gone from them."""
    trace = read_trace(paths.TRACES / "rack-scaling")
    old_an = rack_scaling.analyse(trace)
    old = _headlines(old_an)
    reg = _registry(throughput=1_000_000, speedup=8.1, cost=40.5)
    an = rack_scaling.analyse(trace, registry=reg)
    new = _headlines(an)
    v = an.values()
    assert (v["claim_tok_s"], v["claim_speedup"], v["claim_usd"]) == (1_000_000, 8.1, 40.5)
    # 1,000,000 / 241,834 = 4.14x the decode ceiling (was 954,000: 3.94x)
    dec = new["reading_per-gpu-decode"]
    assert dec.value == pytest.approx(round(1e6 / CAP_DECODE, 4))
    assert old[dec.name].value == pytest.approx(round(954_000 / CAP_DECODE, 4))
    assert dec.reason.startswith("1,000,000 tok/s per GPU is 4.14x")
    # cached share at ISL 100k / OSL 1k: 65.8 % of the input tokens (was 64.0 % at 954,000)
    share = new["reading_per-gpu-with-cached_min_cached_share"]
    assert share.value == pytest.approx(0.6581, abs=1e-4) and "65.8 %" in share.reason
    # rack total 1,000,000 / 72 x 3600 / 1e6 = 50 M tok/h; $40.5 needs (1 - 40.5 / 50) / 0.9
    rev = new["revenue_cached_share_rack_total"]
    assert rev.value == pytest.approx(round((1 - 40.5 / 50) / 0.9, 4))
    assert "50 M tok/h" in rev.reason and "$40.5 needs 21.1 % cached" in rev.reason
    assert new["speedup_efficiency_gb300-tray"].definition.startswith("8.1 / (72 GPUs / 4 per")
    assert new["speedup_efficiency_hgx-b300"].value == pytest.approx(0.9)  # 8.1 / 9
    assert new["cost_ratio_to_rental"].value == pytest.approx(round(40.5 / 2.652, 3))
    for name in ("reading_per-gpu-prefill", "reading_rack-total", "speedup_efficiency_hgx-b300"):
        assert (new[name].value, new[name].reason) != (old[name].value, old[name].reason)
    out = rack_scaling.outcome(an)
    text = " ".join(
        [h.definition + " " + h.reason for h in new.values()]
        + [r.reason for r in out.readings]
        + out.flips
    )
    for gone in ("954,000", "954000", "7.9x", "38.96", "47.7 M"):
        assert gone not in text, gone
    # the measured headlines do not depend on the published figures
    for name in ("measured_total_tok_s_per_gpu", "measured_speedup", "measured_cached_input_tok_s"):
        assert new[name] == old[name]


# --------------------------------------------------------------------------------------------
# The shipped trace in full: every value the prose quotes, every headline, flip and reading

#: B300's decode compute ceiling (13.5 PFLOP/s FP4, 4.5 FP8): 217,650 tok/s per GPU.
CAP_B300 = 1 / (2 * 8_493_465_600 / 13.5e15 + 2 * 7_506_534_400 / 4.5e15)


def test_the_shipped_traces_values_in_full():
    """Two CPU replicas: 2x serves 10,890.4 tok/s, 1x 10,101.6 (1.078x, 53.9 % per replica);
    the published 954,000 tok/s per GPU read every way (/ 72 = 13,250; / 7.9 / 4 per tray GPU,
    x 72 / 7.9 / 4 counted per tray GPU), $38.96 against 47.7 M tok/h (rack total) and 3,434.4
    (as stated), and the decode ratio's band +/-20 % of the active parameters."""
    v = analyse_shipped("rack-scaling").values()
    dec, pre = 954_000 / CAP_DECODE, 954_000 / CAP_PREFILL
    approx = {
        "band_low": 0.8 * dec, "band_high": 1.2 * dec, "ratio_rental": 38.96 / 2.652,
        "cap_decode": CAP_DECODE, "ratio_decode": dec, "ratio_prefill": pre,
        "rack_per_gpu": 13_250.0, "rack_ratio_pct": 100 * 13_250 / CAP_DECODE,
        "min_cached_pct": 64.00390625,
        "node_tray_ratio": 954_000 / 7.9 / 4 / CAP_DECODE,
        "stated_tray_per_gpu": 954_000 * 72 / 7.9 / 4, "stated_tray_pct": 85.654296875,
        "eff_tray_pct": 100 * 7.9 / 18, "nodes_tray": 18.0, "node_tray_per_gpu": 954_000 / 7.9 / 4,
        "node_hgx_ratio": 954_000 / 7.9 / 8 / CAP_B300,
        "stated_hgx_per_gpu": 954_000 * 72 / 7.9 / 8, "stated_hgx_pct": 72.20703125,
        "eff_hgx_pct": 100 * 7.9 / 9, "nodes_hgx": 9.0, "node_hgx_per_gpu": 954_000 / 7.9 / 8,
        "usd_per_m_stated": 38.96 / 3434.4, "usd_per_m_rack": 38.96 / 47.7,
        "rev_min_rack": 4.77, "rev_max_rack": 47.7, "rev_min_stated": 343.44,
    }  # fmt: skip
    exact = {
        "claim_tok_s": 954_000.0, "claim_speedup": 7.9, "claim_usd": 38.96, "rack_gpus": 72,
        "gpu_name": "NVIDIA B300 in a GB300 NVL72 rack (Blackwell Ultra)",
        "hardware": "2-core AMD EPYC, no GPU", "unit": "replica", "metric": "total",
        "reference_config": "1x", "workload_isl": 100_000, "workload_osl": 1_000,
        "rental_usd": 2.652, "su_claim": 826.0, "su_gpus": 4, "dp_claim": 6.0,
        "active_decode_b": 16.0, "active_prefill_b": 8.0, "price_uncached": 1.0,
        "price_cached": 0.1, "nx_config": "2x", "nx_units": "2 replicas", "nx_total": "10,890.4",
        "nx_output": "1,210.0", "nx_new_input": "2,401.7", "nx_cached_input": "7,278.8",
        "nx_computed": "3,611.6", "nx_total_per_gpu": "5,445.2",
        "nx_cached_source": "server_metrics", "ref_units": "1 replica", "top_units": "2 replicas",
        "speedup": "1.08", "scaling_change": "grew to 1.08x", "efficiency_pct": "53.9",
        "v_decode": "impossible", "v_prefill": "impossible", "v_cached": "undetermined",
        "v_total": "possible", "v_rack": "possible", "tray_gpus": 4, "node_tray_gpu": "GB300",
        "hgx_gpus": 8, "node_hgx_gpu": "B300", "rev_share_rack": "20.4",
    }  # fmt: skip
    assert v == exact | {k: pytest.approx(x, rel=1e-9) for k, x in approx.items()}


def test_the_shipped_traces_tables_in_full():
    """The accounting and scaling tables of the two replicas (cached count from the servers'
    prefix-cache hit rates, 0.7516 and 0.7519 of the input tokens), every column."""
    an = analyse_shipped("rack-scaling")
    acc = an.accounting
    assert list(acc.columns) == [
        "point_id", "engine", "config", "num_gpus", "replicas", "duration_s", "requests",
        "output_tokens", "input_tokens", "cached_input_tokens", "new_input_tokens",
        *(f"{k}_tok_s" for k in rack_scaling._RATES),
        *(f"{k}_tok_s_per_gpu" for k in rack_scaling._RATES), "cached_source", "note",
    ]  # fmt: skip
    assert str(acc["num_gpus"].dtype) == str(acc["replicas"].dtype) == "Int64"
    assert acc["num_gpus"].tolist() == acc["replicas"].tolist() == [1, 2]
    assert acc["requests"].tolist() == [768, 1529]
    assert acc["output_tokens"].tolist() == [49_152, 97_856]
    assert acc["input_tokens"].tolist() == [393_236, 782_898]
    assert acc["cached_source"].tolist() == ["server_metrics"] * 2
    assert acc["note"].tolist() == [
        f"cached = input x hit rate {r} (vllm:prefix_cache_hits / vllm:prefix_cache_queries)"
        for r in ("0.7516", "0.7519")
    ]
    two = acc.iloc[1]
    assert two["duration_s"] == pytest.approx(80.874447, abs=1e-6)
    assert two["new_input_tokens"] == pytest.approx(782_898 - two["cached_input_tokens"])
    assert two["total_tok_s"] == pytest.approx((782_898 + 97_856) / two["duration_s"])
    assert two["computed_tok_s"] == pytest.approx(
        (782_898 - two["cached_input_tokens"] + 97_856) / two["duration_s"]
    )
    for k in rack_scaling._RATES:
        assert two[f"{k}_tok_s_per_gpu"] == pytest.approx(two[f"{k}_tok_s"] / 2)
    sc = an.scaling
    assert list(sc.columns) == [
        "config", "point_id", "num_gpus", "replicas", "tok_s", "tok_s_per_gpu", "gpu_ratio",
        "linear_tok_s", "speedup", "efficiency",
    ]  # fmt: skip
    assert sc["config"].tolist() == ["1x", "2x"] and str(sc["replicas"].dtype) == "Int64"
    t1, t2 = acc["total_tok_s"].tolist()
    assert sc["tok_s"].tolist() == [t1, t2] and sc["gpu_ratio"].tolist() == [1.0, 2.0]
    assert sc["linear_tok_s"].tolist() == pytest.approx([t1, 2 * t1])
    assert sc["speedup"].tolist() == pytest.approx([1.0, t2 / t1])
    assert sc["efficiency"].tolist() == pytest.approx([1.0, t2 / t1 / 2])
    assert an.top["config"] == "2x" and an.largest["config"] == "2x"
    assert an.cached_known and an.revenue_run == pytest.approx(
        (two["computed_tok_s_per_gpu"] + 0.1 * two["cached_input_tok_s_per_gpu"]) * 3600 / 1e6
    )


def test_the_shipped_traces_headlines_in_full():
    """Name, value, unit, kind, verdict, claim, definition and reason of every headline."""
    out = rack_scaling.outcome(analyse_shipped("rack-scaling"))
    tp, sp, cost = (f"rack-scaling.{c}" for c in ("throughput", "speedup", "cost"))
    nc, x = "not comparable", "x ceiling"
    got = headline_rows(out.headlines)
    assert got == [
        ("measured_total_tok_s_per_gpu", 5445.19, "tok/s/replica", "measured", "untested", tp),
        ("measured_output_tok_s", 1209.97, "tok/s", "measured", nc, None),
        ("measured_new_input_tok_s", 2401.66, "tok/s", "measured", nc, None),
        ("measured_cached_input_tok_s", 7278.75, "tok/s", "measured", nc, None),
        ("measured_speedup", 1.078, "x", "measured", "untested", sp),
        ("measured_scaling_efficiency", 0.539, "1", "measured", "untested", sp),
        ("measured_token_revenue", 7.811115, "USD/replica-hour", "measured", "untested", cost),
        ("reading_per-gpu-decode", 3.9449, x, "modelled", "impossible", tp),
        ("reading_per-gpu-prefill", 1.9724, x, "modelled", "impossible", tp),
        ("reading_rack-total", 0.0548, x, "modelled", "possible", tp),
        ("reading_per-gpu-with-cached_min_cached_share", 0.64, "1", "modelled", "undetermined",
         tp),
        ("speedup_efficiency_gb300-tray", 0.4389, "1", "modelled", "undetermined", sp),
        ("speedup_efficiency_hgx-b300", 0.8778, "1", "modelled", "undetermined", sp),
        ("cost_ratio_to_rental", 14.691, "x", "modelled", nc, None),
        ("revenue_cached_share_rack_total", 0.2036, "1", "modelled", "undetermined", cost),
    ]  # fmt: skip
    h = {x.name: (x.definition, x.reason) for x in out.headlines}
    needs = (
        "; the claim needs 72 GB300 GPUs of one NVIDIA GB300 NVL72 rack serving DeepSeek-V4.1-Flash"
    )
    cpu, null = "recorded on 2-core AMD EPYC, no GPU", "; null when the cached count is unknown"
    hit = "cached = input x hit rate 0.7519 (vllm:prefix_cache_hits / vllm:prefix_cache_queries)"
    run_sp = f"{cpu} (speedup 1.08x, efficiency 53.9 %){needs}"
    assert h["measured_total_tok_s_per_gpu"] == (
        "(input + output tokens) / window / replicas, config 2x on 2 replicas",
        f"{cpu} (total 5,445.2 tok/s per replica on 2 replicas, 10,890 tok/s in all){needs}",
    )
    assert h["measured_output_tok_s"] == (
        "output tokens / window, config 2x",
        "the write-up does not say which tokens it counts",
    )
    assert h["measured_new_input_tok_s"] == (
        f"(input - cached input) tokens / window, config 2x{null}",
        hit,
    )
    assert h["measured_cached_input_tok_s"] == (
        f"prefix-cache-hit input tokens / window, config 2x{null}",
        hit,
    )
    assert h["measured_speedup"] == ("total tok/s of config 2x / config 1x", run_sp)
    assert h["measured_scaling_efficiency"] == (
        "(T_n / n replicas) / (T_1 / n_1 replicas), the per-replica ratio",
        run_sp,
    )
    assert h["measured_token_revenue"] == (
        "(computed tok/s x $1/M + cached input tok/s x $0.1/M) per replica x 3600, config 2x"
        + null,
        f"{cpu} (token revenue $7.811 per replica-hour at InferenceX's token prices, config 2x)"
        + needs,
    )
    assert h["reading_per-gpu-decode"] == (
        "computed decode tokens per GPU: claimed / ceiling on gb300 (compute)",
        "954,000 tok/s per GPU is 3.94x the decode compute ceiling of 241,834 on GB300",
    )
    assert h["reading_per-gpu-prefill"] == (
        "computed new-token prefill tokens per GPU: claimed / ceiling on gb300 (compute)",
        "954,000 tok/s per GPU is 1.97x the prefill compute ceiling of 483,667 on GB300",
    )
    assert h["reading_rack-total"] == (
        "total of the 72-GPU rack: claimed / ceiling on gb300 (compute)",
        "954,000 / 72 = 13,250 tok/s per GPU is 0.055x the decode compute ceiling of 241,834 "
        "on GB300",
    )
    assert h["reading_per-gpu-with-cached_min_cached_share"] == (
        "least share of the input tokens that must be prefix-cache hits for the figure, per GPU "
        "on gb300, to fit the whole workload (ISL 100,000 / OSL 1,000, assumed: new-token "
        "prefill behind the cached prefix, attention over it, output decode); sufficient, not "
        "only necessary",
        "at ISL 100,000 / OSL 1,000 (assumed: the write-up gives no workload) it fits once at "
        "least 64 % of the input tokens are cache hits (sufficient: every larger share fits "
        "too; the share is not published); there 954,000 total tok/s per GPU needs decode "
        "0.0549 + prefill 0.945 = 1x the time of the GB300 GPUs at their ceilings (the "
        "workload's ceiling is 954,080 total tok/s per GPU); on any workload no cached share "
        "reaches more than 33,300,000,000 tok/s per GPU (requests of 1,048,576 tokens, all "
        "cached but one new input token, one output token)",
    )
    assert h["speedup_efficiency_gb300-tray"] == (
        "7.9 / (72 GPUs / 4 per node): per-GPU scaling efficiency",
        "per GPU as stated: at ISL 100,000 / OSL 1,000, 2,173,670 tok/s: 5.77x the bound "
        "uncached, 0.125x with all but the last input token cached: possible from 85.7 % of the "
        "input cached (every share above reads possible), impossible below (the share is not "
        "published); as the rack total: 72 GPUs / 4 = 18 nodes; 7.9 / 18 = 43.9 % per GPU; "
        "node as the rack total: 954,000 / 7.9 / 4 = 30,190 tok/s per GPU = 0.125x the GB300 "
        "decode compute ceiling of 241,834",
    )
    assert h["speedup_efficiency_hgx-b300"] == (
        "7.9 / (72 GPUs / 8 per node): per-GPU scaling efficiency",
        "per GPU as stated: at ISL 100,000 / OSL 1,000, 1,086,840 tok/s: 3.2x the bound "
        "uncached, 0.07x with all but the last input token cached: possible from 72.2 % of the "
        "input cached (every share above reads possible), impossible below (the share is not "
        "published); as the rack total: 72 GPUs / 8 = 9 nodes; 7.9 / 9 = 87.8 % per GPU; node "
        "as the rack total: 954,000 / 7.9 / 8 = 15,095 tok/s per GPU = 0.069x the B300 decode "
        "compute ceiling of 217,650",
    )
    assert h["cost_ratio_to_rental"] == (
        "$/GPU-hour figure / the catalog's GB300 ownership cost (InferenceX's model)",
        "$/GPU-hour is not a price per answer; what the dollars are is not stated",
    )
    assert h["revenue_cached_share_rack_total"] == (
        "cached share at which token revenue per GPU-hour ($1/M uncached, $0.10/M cached) "
        "equals the figure, rack-total reading; null if none",
        "47.7 M tok/h x $1/M = $47.7 (all uncached) .. x $0.1/M = $4.77 (all cached); $38.96 "
        "needs 20.4 % cached",
    )


def test_the_shipped_traces_flips_and_readings_in_full():
    """The flips word for word, and the physics and this-run readings of each claim: verdict,
    margin, reason and the data beside them (condition, bases, workload)."""
    out = rack_scaling.outcome(analyse_shipped("rack-scaling"))
    assert out.flips == [
        "throughput, physics (per GPU as stated, cache hits counted, ISL 100,000 / OSL 1,000, "
        "assumed): possible once a published cached share reaches 64 %, impossible below; as "
        "computed tokens possible up to 483,667 tok/s per GPU (prefill ceiling), impossible "
        "above 33,300,000,000 tok/s per GPU on any workload; decode ratio 3.94x at peak; 3.16x "
        "to 4.73x with active parameters +/-20 % (at peak)",
        "speedup, physics (throughput's basis, ISL 100,000 / OSL 1,000, assumed): 4-GPU GB300 "
        "nodes fit from 85.7 % cache hits; 8-GPU B300 nodes fit from 72.2 % cache hits. As the "
        "rack's total: possible below 7,641,940 tok/s (every node within its ceiling), "
        "impossible above 13,755,491 tok/s; at 954,000 tok/s, possible above 0.986x, impossible "
        "below 0.548x",
        "cost, physics: nothing turns it; no ceiling bounds a price",
        "published, every claim: an independent measurement of DeepSeek-V4.1-Flash on a GB300 "
        "NVL72 (none located)",
        "this run, throughput and speedup: a trace on 72 GB300 GPUs serving "
        "DeepSeek-V4.1-Flash, with a one-node reference, within 10 % of 954,000 tok/s per GPU "
        "and of 7.9x",
        "this run, cost: its token revenue per GPU-hour at InferenceX's prices (needs the "
        "cached count) within 10 % of USD 38.96",
    ]
    tp = out.reading("rack-scaling.throughput", "physics")
    assert (tp.verdict, tp.margin, tp.ratio) == (
        "undetermined",
        "per GPU as stated: fits only if >= 64 % of the input is cached",
        None,
    )
    assert tp.reason == (
        "as computed tokens per GPU it needs 3.94x the decode ceiling and 1.97x the prefill "
        "ceiling; counting cache hits, it fits only once at least 64 % of the input tokens are "
        "prefix-cache hits at ISL 100,000 / OSL 1,000 (assumed; the share and workload "
        "unpublished); as the rack's total (13,250 per GPU) it is possible"
    )
    assert tp.condition == {
        "basis": "per GPU as stated",
        "condition": "fits only if >= 64 % of the input is cached",
    }
    assert tp.on_bases == (
        {"name": "computed tokens per GPU", "verdict": "impossible",
         "ratio": pytest.approx(954_000 / CAP_DECODE), "ceiling": "decode ceiling"},
        {"name": "the rack's total", "verdict": "possible", "tok_s_per_gpu": 13_250.0},
    )  # fmt: skip
    assert tp.workload == {"isl": 100_000.0, "osl": 1_000.0}
    a = tp.attainable
    assert a["brief"] == (
        "as stated at 64 % cached, 2.7x what measured kernels reach; as the rack's total, 0.13x"
    )
    assert a["text"].startswith(
        "per GPU as stated, 64 % of the input cached at ISL 100,000 / OSL 1,000: 954,000 total "
        "tok/s per GPU needs kernels at 265 % of the dense-GEMM throughput measured: 2.65x what "
        "they reach for this workload (359,660)"
    )
    assert "; as the rack's total: 13,250 output tok/s per GPU is 0.13x" in a["text"]
    assert a["rack_total"]["text"].startswith("as the rack's total: 13,250 output tok/s per GPU")
    # tests/golden/headline/rack-scaling.json: what measured kernels reach for each reading
    assert (a["tok_s_per_gpu"], a["ratio"]) == pytest.approx(
        (359_660.0048383671, 2.652505108063745)
    )
    assert a["ratio"] == pytest.approx(954_000 / a["tok_s_per_gpu"])
    assert (a["rack_total"]["tok_s_per_gpu"], a["rack_total"]["ratio"]) == pytest.approx(
        (100_394.08552791807, 0.13197988636806077)
    )
    sp = out.reading("rack-scaling.speedup", "physics")
    assert (sp.verdict, sp.margin) == (
        "undetermined",
        "per GPU as stated: fits at >= 85.7 % cached",
    )
    assert sp.reason == (
        "on the throughput's basis (per GPU as stated, cache hits counted, ISL 100,000 / OSL "
        "1,000 assumed): nodes of 4 GB300: 43.9 % scaling efficiency, the node at 2,173,671 "
        "counted tok/s per GPU, which fits once at least 85.7 % of its input tokens are cache "
        "hits; nodes of 8 B300: 87.8 % scaling efficiency, the node at 1,086,835 counted tok/s "
        "per GPU, which fits once at least 72.2 % of its input tokens are cache hits; with the "
        "throughput as the rack's total: 4-GPU nodes at 30,190 tok/s per GPU, 0.125x the GB300 "
        "decode ceiling (possible); 8-GPU nodes at 15,095 tok/s per GPU, 0.069x the B300 decode "
        "ceiling (possible); super-linear per-GPU scaling would also be possible"
    )
    assert sp.attainable["brief"].startswith("the implied 4-GPU node is ")
    assert sp.attainable["text"].startswith("a 4-GPU node, the rack's total / speedup: ")
    cost = out.reading("rack-scaling.cost", "physics")
    assert (cost.verdict, cost.margin) == ("undetermined", "not a physics quantity")
    assert cost.reason == (
        "$38.96 per GPU-hour is a price (14.7x the catalog's reference price, a cost model's "
        "rate; read as one 4-GPU instance-hour, $9.74 per GPU-hour), and no ceiling bounds a "
        "price: physics reads throughputs, not dollars; the published reading compares it "
        "with list prices, per GPU-hour and per instance-hour, and with modelled rental and "
        "ownership rates; its cost and revenue tables read it on both throughput bases (per "
        "GPU as stated, and the rack total)"
    )
    cpu, needs = (
        "recorded on 2-core AMD EPYC, no GPU",
        (
            "; the claim needs 72 GB300 GPUs of one NVIDIA GB300 NVL72 rack serving "
            "DeepSeek-V4.1-Flash"
        ),
    )
    runs = {c: out.reading(f"rack-scaling.{c}", "this run") for c in ("throughput", "speedup")}
    assert {c: (r.verdict, r.margin) for c, r in runs.items()} == {
        "throughput": ("untested", "-"), "speedup": ("untested", "-")
    }  # fmt: skip
    assert runs["speedup"].reason == f"{cpu} (speedup 1.08x, efficiency 53.9 %){needs}"


def test_the_shipped_traces_markdown_in_full():
    """Every table the chapter prints on the shipped trace, row by row (`$` shown literally)."""
    an = analyse_shipped("rack-scaling")
    assert an.accounting_markdown() == (
        "| config | output | new input | cached input | total | computed | total per replica |\n"
        "|---|---|---|---|---|---|---|\n"
        "| 1x (1 replica) | 1,122.4 | 2,230.5 | 6,748.7 | 10,101.6 | 3,352.9 | 10,101.6 |\n"
        "| 2x (2 replicas) | 1,210.0 | 2,401.7 | 7,278.8 | 10,890.4 | 3,611.6 | 5,445.2 |\n"
        "\nAll in tokens per second.\n"
    )
    assert an.throughput_markdown() == (
        "| reading | counted | computed | ceiling | computed / ceiling | physics |\n"
        "|---|---|---|---|---|---|\n"
        "| per GPU, decode tokens | 954,000 | 954,000 | 241,834 (decode) | 3.94x "
        "| **impossible** |\n"
        "| per GPU, prefill tokens | 954,000 | 954,000 | 483,667 (prefill) | 1.97x "
        "| **impossible** |\n"
        "| per GPU, cache hits counted | 954,000 | at most 349,448 | 954,080 (prefill + decode) "
        "| fits once at least 64 % of the input is cached | **undetermined** |\n"
        "| rack total / GPUs | 13,250 | 13,250 | 241,834 (decode) | 0.055x | **possible** |\n"
        "\nCounted, computed and ceiling in tokens per second per GPU.\n"
    )
    assert an.speedups_markdown() == (
        "| what 'a node' is | GPUs per node | nodes in the rack | scaling efficiency "
        "| node tok/s per GPU | node / ceiling | physics |\n"
        "|---|---|---|---|---|---|---|\n"
        '| GB300 compute tray (a GB300 "node", 4 GPUs) | 4 | 18 | 43.9 % | 30,190 | 0.125x '
        "| **possible** |\n"
        "| NVIDIA HGX B300 node (8 GPUs) | 8 | 9 | 87.8 % | 15,095 | 0.069x | **possible** |\n"
    )
    assert an.cost_markdown() == (
        "| throughput reading | tok/s per GPU | M tok per GPU-hour | USD per M tok, as cost "
        "| USD per M tok, ownership cost | revenue (USD per GPU-hour) "
        "| cached share for \\$38.96 |\n"
        "|---|---|---|---|---|---|---|\n"
        "| per GPU as stated | 954,000 | 3,434.4 | \\$0.0113 | \\$0.0008 "
        "| \\$343.44 to \\$3,434 | none |\n"
        "| rack total / 72 | 13,250 | 47.7 | \\$0.8168 | \\$0.0556 | \\$4.77 to \\$47.70 "
        "| 20.4 % |\n"
    )
    maths, table = an.ceilings_markdown().rsplit("\n\n", 1)
    assert maths.split("\n\n") == [f"$$ {x} $$" for x in an.ceilings["latex"] if x]
    assert len(maths.split("\n\n")) == 2 and "C_\\text{prefill}" in maths
    rows = table.splitlines()
    assert rows[:2] == ["| ceiling | tok/s per GPU | how |", "|---|---|---|"]
    assert [r.split(" | ")[:2] for r in rows[2:]] == [
        ["| compute, decode", "241,834"],
        ["| memory bandwidth, decode", "340,803"],
        ["| compute, prefill", "483,667"],
    ]


# --------------------------------------------------------------------------------------------
# Edge cases by hand: limits exactly at their ends, one configuration, a missing reference


@pytest.mark.parametrize(
    "usd,share,needs",
    [
        # 1,000 tok/s per GPU = 3.6 M tok/h: $3.60 (all uncached) .. $0.36 (all cached)
        (3.6, 0.0, "needs 0 % cached"),  # (1 - 3.6 / 3.6) / 0.9: the top end, included
        (3.61, None, "is outside that range"),  # one cent above
        (0.36, 1.0, "needs 100 % cached"),  # (1 - 0.1) / 0.9: the bottom end, included
        (0.35, None, "is outside that range"),  # one cent below
    ],
)
def test_cost_readings_cached_share_at_each_end_of_the_revenue_range(usd, share, needs):
    c = rack_scaling.cost_readings(usd, {"a": 1000.0})
    assert list(c.revenue.columns) == [
        "reading", "tok_s_per_gpu", "mtok_per_gpu_hour", "revenue_all_uncached",
        "revenue_all_cached", "cached_share_matching", "formula",
    ]  # fmt: skip
    r = c.revenue.iloc[0]
    assert (r["reading"], r["tok_s_per_gpu"], r["mtok_per_gpu_hour"]) == ("a", 1000.0, 3.6)
    assert (r["revenue_all_uncached"], r["revenue_all_cached"]) == pytest.approx((3.6, 0.36))
    if share is None:
        assert np.isnan(r["cached_share_matching"])
    else:
        assert r["cached_share_matching"] == share
    assert r["formula"] == (
        f"3.6 M tok/h x $1/M = $3.6 (all uncached) .. x $0.1/M = $0.36 (all cached); ${usd:g} "
        + needs
    )
    assert c.cost.to_dict("list") == {
        "reading": ["a", "a"],
        "basis": ["claim as cost", "ownership-cost model (gb300-tco-hyperscaler)"],
        "usd_per_m_tokens": [pytest.approx(usd / 3.6), pytest.approx(2.652 / 3.6)],
    }
    assert c.ratio_to_rental == pytest.approx(usd / 2.652)


def test_dollars_round_to_whole_from_a_thousand_and_tables_escape_cells():
    assert [rack_scaling._usd(v) for v in (1000, 999.994, -1000, -999.5)] == [
        "$1,000", "$999.99", "$-1,000", "$-999.50",
    ]  # fmt: skip
    assert rack_scaling._table("a|b", [["x|y", "$1"]]) == "| a | b |\n|---|---|\n| x\\|y | \\$1 |\n"
    assert rack_scaling._table("a", [["1"]], "n") == "| a |\n|---|\n| 1 |\n\nn\n"


def test_token_revenue_of_an_accounting_row():
    """(computed x $1/M + cached x $0.10/M) x 3600 / 1e6: (1,000 + 0.1 x 5,000) x 0.0036."""
    row = pd.Series({"computed_tok_s_per_gpu": 1000.0, "cached_input_tok_s_per_gpu": 5000.0})
    assert rack_scaling.token_revenue(row) == pytest.approx(5.4)


def test_a_claim_above_every_cached_share_and_one_that_fits_uncached():
    """40e9 tok/s per GPU is 1.2x the 33.3e9 that the best cached workload allows: impossible
    on the cached prefix; 30e6 overflows the output tokens' decode at any share; 1,000 fits
    with nothing cached (its own verdict, possible, at 0 %)."""
    model = "deepseek-v4.1-flash"
    top = rack_scaling.throughput_readings(4e10, 72, model, "gb300").set_index("reading")
    c = top.loc["per-gpu-with-cached"]
    bound = c["ceiling_tok_s_per_gpu"]
    assert bound == pytest.approx(33_305_663_636.27, rel=1e-9)
    assert (c["limit"], c["verdict"]) == ("cached prefix", "impossible")
    assert c["ratio"] == pytest.approx(4e10 / bound) and np.isnan(c["min_cached_share"])
    assert c["formula"] == (
        "40,000,000,000 tok/s per GPU is 1.2x what any cached share allows: on any workload no "
        "cached share reaches more than 33,300,000,000 tok/s per GPU (requests of 1,048,576 "
        "tokens, all cached but one new input token, one output token)"
    )
    # at the share 1 - 1 / ISL: one new input token of 100,000 per request, and the output
    assert c["computed_tok_s_per_gpu"] == pytest.approx(4e10 * (1 + 1_000) / 101_000)
    mid = rack_scaling.throughput_readings(3e7, 72, model, "gb300").set_index("reading")
    c = mid.loc["per-gpu-with-cached"]
    assert (c["verdict"], c["limit"]) == ("impossible", "decode compute")
    assert c["ratio"] == pytest.approx(1.728782, rel=1e-6)
    assert c["formula"] == (
        "at ISL 100,000 / OSL 1,000 (assumed: the write-up gives no workload): 30,000,000 "
        "tok/s: 79.6x the bound uncached, 1.73x with all but the last input token cached: "
        "impossible at any cached share"
    )
    low = rack_scaling.throughput_readings(1000, 72, model, "gb300").set_index("reading")
    c = low.loc["per-gpu-with-cached"]
    assert (c["verdict"], c["min_cached_share"], c["limit"]) == ("possible", 0.0, "prefill compute")
    assert c["computed_tok_s_per_gpu"] == 1000.0 and c["ratio"] == pytest.approx(0.0026536, 1e-4)
    assert c["formula"].startswith(
        "at ISL 100,000 / OSL 1,000 (assumed: the write-up gives no workload) with 0 % of the "
        "input tokens cached: 1,000 total tok/s per GPU"
    )
    assert low.attrs == {"workload": (100_000, 1_000), "cached_share": None}
    other = rack_scaling.throughput_readings(1000, 72, model, "gb300", isl=8_000, osl=1_000)
    assert "ISL 8,000 / OSL 1,000 with 0 %" in other.set_index("reading").loc[
        "per-gpu-with-cached", "formula"
    ]  # fmt: skip


def test_throughput_physics_when_no_cached_share_reaches_the_claim():
    """Above the cached-prefix bound: the clause says no share reaches it and its ratio, the
    margin names no share, and the reading carries no workload (no workload fits)."""
    r = rack_scaling.throughput_readings(4e10, 72, "deepseek-v4.1-flash", "gb300")
    p = rack_scaling.throughput_physics(r)
    # 4e10 / 241,834 = 165,403x the decode ceiling, the first per-GPU reading that decides
    assert (p.verdict, p.margin) == ("impossible", "per GPU as stated: 165,403x the decode ceiling")
    assert "counting cache hits, no cached share reaches it (1.2x the most any allows)" in p.reason
    assert p.workload is None
    # no share to read the figure at: what measured kernels reach for the rack's total alone
    from rackbook.inputs import catalogs

    model, gpu = catalogs.as_model("deepseek-v4.1-flash"), catalogs.as_gpu("gb300")
    a = rack_scaling.throughput_attainable(r, model, gpu, 72)
    assert a["text"].startswith("as the rack's total: 555,555,556 output tok/s per GPU needs ")
    assert a["rack_total"] == {k: v for k, v in a.items() if k != "rack_total"}
    assert p.on_bases[1] == {
        "name": "the rack's total", "verdict": "impossible", "tok_s_per_gpu": 4e10 / 72
    }  # fmt: skip


def test_the_speedup_of_a_trace_without_its_reference_or_with_one_configuration(tmp_path):
    """Without the named reference the smallest configuration stands in for the figures (and
    the reading says so); one configuration alone has no speedup: both untested, by reason."""
    an = rack_scaling.analyse(_rack_trace(tmp_path), rack_scaling.Params(reference_config="one"))
    assert an.scaling["config"].tolist() == ["1x", "18x"]
    assert an.scaling["speedup"].tolist() == pytest.approx([1.0, 8.0])
    r = rack_scaling.outcome(an).reading("rack-scaling.speedup", "this run")
    assert (r.verdict, r.margin, r.reason) == (
        "untested",
        "-",
        "no point with config 'one' (the single-node reference): record one; 1x stands in for "
        "the figures",
    )
    one = _trace(
        tmp_path,
        [("p18", {"config": "18x", "num_gpus": "72"}, _result([350] * 2, [10] * 2, [0.1] * 2,
                                                               [0.5] * 2, duration=1.0))],
    )  # fmt: skip
    one.run["hardware"] = {"gpus": [{"name": "NVIDIA GB300"}]}
    one.run |= {"kind": "recorded", "parameters": {"model": "deepseek-ai/DeepSeek-V4.1-Flash"}}
    an = rack_scaling.analyse(one)
    assert an.scaling["config"].tolist() == ["18x"] and an.testable
    r = rack_scaling.outcome(an).reading("rack-scaling.speedup", "this run")
    assert (r.verdict, r.reason) == (
        "untested",
        "one configuration only: no speedup; record the single-node reference and the rack",
    )
    v = an.values()
    assert (v["scaling_change"], v["speedup"], v["efficiency_pct"]) == (
        "stayed at 1.00x",
        "1.00",
        "100.0",
    )
    assert v["ref_units"] == v["top_units"] == v["nx_units"] == "72 GPUs"


@pytest.mark.parametrize(
    "speedup,change",
    [
        (1.0051, "grew to 1.01x"),
        (1.005, "stayed at 1.00x"),  # the band's ends are "stayed"
        (0.995, "stayed at 0.99x"),
        (0.9949, "shrank to 0.99x"),
        (float("nan"), "is unknown"),
    ],
)
def test_the_scaling_change_words_at_the_half_percent_band(tmp_path, speedup, change):
    an = rack_scaling.analyse(_rack_trace(tmp_path))
    an.top = an.top.copy()
    an.top["speedup"] = speedup
    assert an.values()["scaling_change"] == change


def test_gpus_per_replica_above_one_counts_gpus_on_a_cpu_trace(tmp_path):
    """A trace without GPU names reads per replica unless a replica is several GPUs."""
    t = _rack_trace(tmp_path, gpus=())
    assert rack_scaling.analyse(t).unit == "replica"
    assert rack_scaling.analyse(t, rack_scaling.Params(gpus_per_replica=2)).unit == "GPU"


def test_scaling_peaks_reference_first_and_unknown_ratios():
    """Each configuration at its peak (a configuration whose metric is all NaN keeps its first
    point); the reference first, then by GPUs (ties in the table's order); a speedup needs
    both throughputs finite and above zero."""
    acc = pd.DataFrame(
        {"config": ["8x", "1x", "2x", "2y", "2y"], "point_id": list("abcde"),
         "num_gpus": [8, 1, 2, 2, 2], "replicas": [8, 1, 2, 2, 2]}
    ).assign(total_tok_s=[800.0, 0.0, np.nan, 100.0, 300.0])  # fmt: skip
    s = rack_scaling.scaling_vs_reference(acc, "8x")
    assert s["config"].tolist() == ["8x", "1x", "2x", "2y"]
    assert s["point_id"].tolist() == ["a", "b", "c", "e"]
    assert s["gpu_ratio"].tolist() == [1.0, 0.125, 0.25, 0.25]
    assert s["linear_tok_s"].tolist() == [800.0, 100.0, 200.0, 200.0]
    assert s["speedup"].tolist()[::3] == [1.0, 0.375] and s["efficiency"].iloc[3] == 1.5
    assert s[["speedup", "efficiency"]].iloc[1:3].isna().all().all()  # 0 and NaN tok/s
    assert str(s["replicas"].dtype) == "Int64" and s["replicas"].tolist() == [8, 1, 2, 2]
    zero = rack_scaling.scaling_vs_reference(acc, "1x")  # a reference of 0 tok/s
    assert zero["config"].tolist() == ["1x", "2x", "2y", "8x"]
    assert zero["linear_tok_s"].tolist() == [0.0] * 4 and zero["speedup"].isna().all()


def test_cached_count_from_the_servers_where_a_request_lacks_it(tmp_path):
    """One request without cached_prompt_tokens: the requests cannot say, so the servers'
    hit rate does (10 / 100 of 300 input tokens = 30 cached); the GPU count from ``gpus``
    where the point has none, and no replicas where no server served the point."""
    sm = _sm(
        [("p", "a", ph, f"vllm:prefix_cache_{m}", "", v)
         for m, before, after in (("hits", 0.0, 10.0), ("queries", 0.0, 100.0))
         for ph, v in (("before", before), ("after", after))]
    )  # fmt: skip
    t = _trace(tmp_path, [("p", {}, _result([100, 200], [10, 20], [0.1, 0.2], [1.0, 2.0]))], sm)
    t.requests["cached_prompt_tokens"] = pd.array([60, None], dtype="Int64")
    row = rack_scaling.token_accounting(t, gpus=2).iloc[0]
    assert (row["cached_source"], row["cached_input_tokens"]) == ("server_metrics", 30.0)
    assert row["new_input_tokens"] == 270.0 and row["computed_tok_s"] == 150.0  # 300 / 2 s
    assert row["computed_tok_s_per_gpu"] == 75.0 and row["num_gpus"] == 2
    assert row["replicas"] == 1  # server "a"
    t.extra["server_metrics"] = sm.assign(point_id="other")
    row = rack_scaling.token_accounting(t, gpus=2).iloc[0]
    assert pd.isna(row["replicas"]) and row["cached_source"] == "unknown"
    assert row["note"].startswith("cached input unknown: no prefix-cache counters")
    g = rack_scaling.with_gpu_counts(t)  # no replicas anywhere: one, of one GPU
    assert g.points["replicas"].tolist() == g.points["num_gpus"].tolist() == [1]
    assert rack_scaling.token_accounting(t).attrs == {"formula": rack_scaling.TOKENS_FORMULA}


def test_speedup_physics_of_mixed_node_verdicts_and_the_implied_node():
    """Node sizes that disagree read undetermined (the share each needs, the largest first in
    the margin); both possible with nothing cached read possible. The implied node is the
    smallest: 954,000 / 7.9 / 4 = 30,190 tok/s per GPU against what measured kernels reach."""
    an = analyse_shipped("rack-scaling")
    assert list(an.speedups.columns) == [
        "system", "name", "gpu", "gpus_per_node", "nodes", "speedup", "efficiency",
        "node_tok_s_per_gpu", "ceiling_tok_s_per_gpu", "ratio", "verdict", "formula",
        "stated_node_tok_s_per_gpu", "stated_min_cached_share", "stated_verdict",
        "stated_formula",
    ]  # fmt: skip
    assert an.speedups.attrs == {"workload": (100_000, 1_000)}
    assert list(an.ceilings.columns) == ["ceiling", "phase", "tok_s_per_gpu", "formula", "latex"]
    s = an.speedups.copy()
    s.attrs = an.speedups.attrs
    s.loc[1, ["stated_verdict", "stated_min_cached_share"]] = ["possible", 0.0]
    r = rack_scaling.speedup_physics(s)
    assert (r.verdict, r.margin) == ("undetermined", "per GPU as stated: fits at >= 85.7 % cached")
    assert (
        "nodes of 8 B300: 87.8 % scaling efficiency, the node at 1,086,835 counted tok/s per "
        "GPU, which fits once at least 0 % of its input tokens are cache hits;" in r.reason
    )
    s.loc[0, ["stated_verdict", "stated_min_cached_share"]] = ["possible", 0.0]
    r = rack_scaling.speedup_physics(s)
    assert (r.verdict, r.margin) == ("possible", "per GPU as stated: fits with nothing cached")
    s.loc[1, ["stated_verdict", "stated_min_cached_share"]] = ["impossible", np.nan]
    r = rack_scaling.speedup_physics(s)  # one node size that no share fits: none named
    assert (r.verdict, r.margin) == ("undetermined", "per GPU as stated: no cached share fits")
    a = rack_scaling.speedup_attainable(an.speedups, an.model)
    assert a["brief"] == "the implied 4-GPU node is 0.27x what measured kernels reach"
    assert a["text"].startswith(
        "a 4-GPU node, the rack's total / speedup: 30,190 output tok/s per GPU is 0.27x what "
        "measured kernels reach for this workload (111,216) (attention data-parallel + experts "
        "expert-parallel on 4 GPUs"
    )
    assert a["ratio"] == pytest.approx(954_000 / 7.9 / 4 / a["tok_s_per_gpu"])
    cost = rack_scaling.cost_physics(an.cost, 10.0).reason
    assert cost.startswith(
        "$10 per GPU-hour is a price (14.7x the catalog's reference price, a cost model's "
        "rate; read as one 4-GPU instance-hour, $2.50 per GPU-hour), and no ceiling"
    )


def test_failed_requests_count_no_tokens(tmp_path):
    """Of 100 + 10 and 200 + 20 tokens, the second request failed: 110 tokens over 2 s."""
    data = _result([100, 200], [10, 20], [0.1, 0.2], [1.0, 2.0]) | {"errors": ["", "boom"]}
    t = _trace(tmp_path, [("p", {"num_gpus": "1"}, data)])
    t.requests["cached_prompt_tokens"] = pd.array([40, 100], dtype="Int64")
    row = rack_scaling.token_accounting(t).iloc[0]
    assert (row["requests"], row["input_tokens"], row["output_tokens"]) == (1, 100, 10)
    assert (row["cached_input_tokens"], row["total_tok_s"], row["computed_tok_s"]) == (
        40.0, 55.0, 35.0,
    )  # fmt: skip


def test_flips_where_no_cached_share_fits():
    """30,000,000 tok/s per GPU overflows the output tokens' decode at any cached share, and
    so does each node's 30e6 x 72 / 0.5 / 4 (or / 8) counted tok/s per GPU: the flips say no
    share fits instead of naming one to reach."""
    _, out = _physics({"throughput": 30_000_000, "speedup": 0.5})
    tp, sp = out.flips[:2]
    assert "1,000, assumed): no cached share fits; as computed tokens possible up to" in tp
    assert "assumed): no cached share fits 4-GPU GB300 nodes; no cached share fits 8-GPU " in sp
    r = out.reading("rack-scaling.speedup", "physics")
    # 30e6 x 72 / 0.5 / 4 = 1.08e9 counted tok/s per tray GPU, 0.5 / 18 = 2.8 % efficiency
    assert (
        "nodes of 4 GB300: 2.8 % scaling efficiency, the node at 1,080,000,000 counted " in r.reason
    )
    assert r.reason.count("per GPU, which no cached share fits;") == 2


def test_the_run_flips_round_the_tolerance_to_a_whole_percent():
    """A tolerance of 12.5 % reads "12 %" in the flips (whole percents, 12.5 rounds to even)."""
    _, out = _physics(rel_tol=0.125)
    assert "DeepSeek-V4.1-Flash, with a one-node reference, within 12 % of 954,000" in out.flips[4]
    assert out.flips[5].endswith("(needs the cached count) within 12 % of USD 38.96")


def test_a_named_reference_that_is_not_the_smallest_configuration(tmp_path):
    """Reference 18x (72 GPUs, 720 tok/s): 1x reads 90 / 720 = 0.125x on 4 / 72 of the GPUs."""
    an = rack_scaling.analyse(_rack_trace(tmp_path), rack_scaling.Params(reference_config="18x"))
    assert an.scaling["config"].tolist() == ["18x", "1x"]
    assert an.scaling["speedup"].tolist() == pytest.approx([1.0, 0.125])
    assert an.scaling["efficiency"].tolist() == pytest.approx([1.0, 0.125 * 18])
