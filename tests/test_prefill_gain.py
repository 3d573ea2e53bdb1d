"""New-token prefill throughput, the gain of one configuration over another, the prefix-read
roofline model, the chapter's analysis and every verdict it can reach, against hand-computed
numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import analyse_shipped, edited_registry, headline_rows

from rackbook import paths
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import concat, read_trace, validate
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.results import prefill_gain


def _result(inp, ttft, out=2, errors=None):
    n = len(inp)
    return {
        "duration": 10.0,
        "input_lens": inp,
        "output_lens": [out] * n,
        "ttfts": ttft,
        "latencies": [t + 0.01 for t in ttft],
        "itls": [[0.01]] * n,
        "start_times": [0.0] * n,
        "errors": errors or [""] * n,
    }


def _trace(tmp_path, parts, parameters=None):
    frames = [
        vllm_bench_frames(tmp_path / f"{cfg}.json", {"config": cfg}, data=d) for cfg, d in parts
    ]
    run = new_run_info(
        kind="synthetic",
        commands=[],
        parameters=parameters or {},
        engine={},
        generator={"name": "hand-made test", "seed": 0},
    )
    return validate(concat(frames, run))


A_TTFT = [0.1, 0.2, 0.4, 0.5]  # 100 new tokens each -> 1000, 500, 250, 200 tok/s


def _ab(tmp_path, factor=1.5):
    return _trace(
        tmp_path,
        [
            ("A", _result([1100] * 4, A_TTFT)),
            ("B", _result([1100] * 4, [t / factor for t in A_TTFT])),
        ],
        parameters={"prefix_tokens": 1000},
    )


def test_new_tokens_from_rows(tmp_path):
    t = _trace(tmp_path, [("A", _result([1000, 2000], [0.1, 0.5]))])
    t.requests["cached_prompt_tokens"] = pd.array([600, 1000], dtype="Int64")
    tab = prefill_gain.new_token_prefill(t)
    assert tab["new_tokens"].tolist() == [400, 1000]
    assert tab["new_tok_s"].tolist() == pytest.approx([4000.0, 2000.0])
    assert set(tab["cached_source"]) == {"row"}


def test_prefix_from_run_parameters_argument_or_error(tmp_path):
    t = _ab(tmp_path)
    tab = prefill_gain.new_token_prefill(t)
    assert set(tab["cached_source"]) == {"run.json parameters.prefix_tokens"}
    assert tab["new_tokens"].unique().tolist() == [100]
    tab = prefill_gain.new_token_prefill(t, prefix_tokens=600)
    assert tab["new_tokens"].unique().tolist() == [500] and set(tab["cached_source"]) == {
        "argument"
    }
    t.run["parameters"] = {}
    with pytest.raises(InputError, match="cached_prompt_tokens: missing and no prefix length"):
        prefill_gain.new_token_prefill(t)


def test_failed_and_fully_cached_requests_are_left_out(tmp_path):
    t = _trace(
        tmp_path,
        [("A", _result([1100, 900, 1100], [0.1, 0.1, 0.2], errors=["", "", "boom"]))],
        parameters={"random_prefix_len": 1000},
    )
    tab = prefill_gain.new_token_prefill(t)
    assert len(tab) == 2  # the failed request is not a row
    assert tab["new_tok_s"].iloc[0] == pytest.approx(1000.0)
    assert math.isnan(tab["new_tok_s"].iloc[1])  # 900 - 1000 < 0 new tokens
    assert prefill_gain.stat_tok_s(tab, "A", "mean") == pytest.approx(1000.0)  # one usable


def test_summary_statistics(tmp_path):
    tab = prefill_gain.new_token_prefill(_ab(tmp_path))
    assert prefill_gain.stat_tok_s(tab, "A", "mean") == pytest.approx(487.5)  # 1950 / 4
    assert prefill_gain.stat_tok_s(tab, "A", "median") == pytest.approx(375.0)
    assert prefill_gain.stat_tok_s(tab, "A", "pooled") == pytest.approx(400 / 1.2)
    assert prefill_gain.stat_tok_s(tab, "B", "median") == pytest.approx(562.5)
    assert math.isnan(prefill_gain.stat_tok_s(tab, "C", "median"))


@pytest.mark.parametrize("stat", ["mean", "median", "pooled"])
def test_gain_point_estimate_and_seeded_bootstrap(tmp_path, stat):
    tab = prefill_gain.new_token_prefill(_ab(tmp_path, factor=1.5))
    g = prefill_gain.gain(tab, "A", "B", stat=stat, n_boot=500, seed=3)
    assert g.gain == pytest.approx(0.5)  # every B request is 1.5x its A twin
    assert g.low < 0.5 < g.high  # independent resampling of 4 varied requests spreads
    again = prefill_gain.gain(tab, "A", "B", stat=stat, n_boot=500, seed=3)
    assert (again.low, again.high) == (g.low, g.high)
    assert g.n_a == g.n_b == 4


def test_gain_without_spread_when_requests_are_alike(tmp_path):
    t = _trace(
        tmp_path,
        [("A", _result([1100] * 3, [0.2] * 3)), ("B", _result([1100] * 3, [0.1] * 3))],
        parameters={"prefix_tokens": 1000},
    )
    g = prefill_gain.gain(prefill_gain.new_token_prefill(t), "A", "B", n_boot=50)
    assert g.gain == pytest.approx(1.0) and g.low == pytest.approx(1.0)
    assert g.high == pytest.approx(1.0)
    with pytest.raises(InputError, match="no usable request with config = 'C'"):
        prefill_gain.gain(prefill_gain.new_token_prefill(t), "A", "C")


def test_verdict_range():
    assert prefill_gain.verdict_range(0.40, 0.35, 0.44).verdict == "inside"
    assert prefill_gain.verdict_range(0.50, 0.35, 0.44).verdict == "above"
    g = prefill_gain.Gain(0.30, 0.25, 0.36, 0.9, 4, 4, 10, 0)
    v = prefill_gain.verdict_range(g, 0.35, 0.44)
    assert v.verdict == "consistent" and v.overlaps and not v.inside
    g = prefill_gain.Gain(0.20, 0.10, 0.30, 0.9, 4, 4, 10, 0)
    assert prefill_gain.verdict_range(g, 0.35, 0.44).verdict == "below"
    assert "+35 % .. +44 %" in prefill_gain.verdict_range(g, 0.35, 0.44).text


def _gain(x, lo, hi):
    return prefill_gain.Gain(x, lo, hi, 0.9, 4, 4, 10, 0)


@pytest.mark.parametrize(
    "g,verdict,inside,overlaps,text",
    [
        (_gain(0.40, 0.38, 0.42), "inside", True, True, "+40 % (interval +38 % .. +42 %)"),
        (_gain(0.30, 0.25, 0.36), "consistent", False, True, "+30 % (interval +25 % .. +36 %)"),
        (_gain(0.50, 0.43, 0.60), "consistent", False, True, "+50 % (interval +43 % .. +60 %)"),
        (_gain(0.20, 0.10, 0.30), "below", False, False, "+20 % (interval +10 % .. +30 %)"),
        (_gain(0.60, 0.45, 0.70), "above", False, False, "+60 % (interval +45 % .. +70 %)"),
    ],
    ids=["inside", "overlaps-below", "overlaps-above", "below", "above"],
)
def test_every_range_verdict_by_hand(g, verdict, inside, overlaps, text):
    """Published range +35 % .. +44 %; the interval decides when the point is outside it."""
    v = prefill_gain.verdict_range(g, 0.35, 0.44)
    assert (v.verdict, v.inside, v.overlaps) == (verdict, inside, overlaps)
    assert v.text == f"measured {text} vs published +35 % .. +44 %: {verdict}"


def test_verdict_range_of_a_plain_number():
    assert prefill_gain.verdict_range(0.44, 0.35, 0.44).verdict == "inside"  # ends included
    assert prefill_gain.verdict_range(0.3499, 0.35, 0.44).verdict == "below"


def test_prefix_read_model_128k():
    """128,000 cached tokens, FP4 KV, one GB300; a new prefill token passes the 20 encoder
    layers only (its prefix reads as well as its GEMMs; before, the reads were all 40 layers'
    decode reads, 31,819,776 B). Sparse read per new token: index-key scan of the sources at
    layers 2, 8, 14 (1/2 + 1/2 + 1/2) x 68 B x 128,000 = 13,056,000 + top-512 rows of 18
    consuming layers x 288 B = 2,654,208, total 15,710,208 B: 1.963776 us at 8 TB/s. Dense:
    (9 rows x 288 + 102) B x 128,000 = 344,832,000 B: 43.104 us. Compute: the encoder's GEMMs,
    20 x 6 x 3 x 5,120 x 2,304 = 4.2467e9 routed params at FP4 (15 PFLOP/s) and 8e9 - 4.2467e9
    = 3.7533e9 dense at FP8 (5 PFLOP/s): 2.06753792 us; plus attention and indexer FLOP at FP8:
    scan 2 x 64 x 128 x 1.5 x 128,000 = 3,145,728,000 + rows 18 x 512 x 4 x 64 x 512 =
    1,207,959,552 + window 20 x 128 x 131,072 = 335,544,320 = 4,689,231,872 FLOP: 0.93785 us;
    3.00538429 us. Compute binds: 332,736.15 tok/s."""
    r = prefill_gain.prefix_read_model("deepseek-v4.1-flash", "gb300", 128_000)
    assert r.sparse_bytes_per_new_token == 15_710_208
    assert r.dense_bytes_per_new_token == 344_832_000
    assert r.sparse_read_s == pytest.approx(1.963776e-6)
    assert r.dense_read_s == pytest.approx(43.104e-6)
    assert r.compute_s_per_new_token == pytest.approx(3.0053842944e-6)
    assert r.bound == "compute" and r.tokens_per_s == pytest.approx(332_736.15)
    assert r.dense_tokens_per_s == pytest.approx(23_199.70)
    # 16 new tokens share one read: 1.964 us / 16 = 0.1227 us, under the compute
    shared = prefill_gain.prefix_read_model(
        "deepseek-v4.1-flash", "gb300", 128_000, reuse_tokens=16
    )
    assert shared.sparse_read_s == pytest.approx(0.122736e-6)
    assert shared.bound == "compute" and shared.tokens_per_s == pytest.approx(332_736.15)
    assert np.isclose(float(shared), shared.tokens_per_s)
    # behind 855,000 tokens the read binds: 1.5 x 68 x 855,000 + 2,654,208 = 89,864,208 B
    far = prefill_gain.prefix_read_model("deepseek-v4.1-flash", "gb300", 855_000)
    assert far.sparse_bytes_per_new_token == 89_864_208 and far.bound == "KV read"
    with pytest.raises(InputError, match="reuse_tokens"):
        prefill_gain.prefix_read_model("deepseek-v4.1-flash", "gb300", 128_000, reuse_tokens=0)


def test_removable_share_by_hand():
    """Behind 128,000 cached tokens on a GB300, a new token through every layer costs the
    decode GEMMs 2 x 8,493,465,600 / 15e15 + 2 x 7,506,534,400 / 5e15 = 4.13507584 us plus
    attention and indexer FLOP (scan 2.5 x 128,000 x 16,384 + pool 4 x 16,384 x 16,384 + rows
    38 x 512 x 131,072 + window 40 x 128 x 131,072 = 9,537,847,296 FLOP at 5 PFLOP/s =
    1.90757 us): 6.04264530 us, above its 3.977 us of reads. Through the encoder only:
    3.00538429 us (test above). Removable: 1 - 3.00538429 / 6.04264530 = 50.26 %."""
    share, how = prefill_gain.removable_share("deepseek-v4.1-flash")
    assert share == pytest.approx(1 - 3.0053842944 / 6.0426452992)
    assert how.startswith("1 - 3.005 µs (encoder layers) / 6.043 µs (every layer)")


# --------------------------------------------------------------------------------------------
# The chapter: analyse, outcome, every reading

NO_GPU = {"gpus": [], "cpu_model": "test CPU", "cpu_cores": 2}
B300 = {"gpus": [{"name": "NVIDIA B300"}]}
MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"


def _claim_trace(tmp_path, factor, hardware, prefix=128_000, a_ttft=(0.2, 0.2, 0.2, 0.2)):
    """4 requests per config of ``prefix`` cached + 100 new tokens (run.json parameters); A's
    TTFTs ``a_ttft`` (0.2 s: 500 new tok/s), B's ``factor`` times faster. On a GPU inventory
    the trace is a recording of the claim's model (what can test the claim)."""
    t = _trace(
        tmp_path,
        [
            ("A", _result([prefix + 100] * 4, list(a_ttft))),
            ("B", _result([prefix + 100] * 4, [x / factor for x in a_ttft])),
        ],
        parameters={"prefix_tokens": prefix, "model": MODEL},
    )
    t.run["hardware"] = hardware
    if hardware["gpus"]:
        t.run["kind"] = "recorded"
    return t


def test_can_test_only_a_recording_on_blackwell_near_the_claims_prefix():
    run = {"kind": "recorded", "hardware": B300, "parameters": {"model": MODEL}}
    assert prefill_gain.can_test(run, 128_000, 128_000, 0.10)
    assert prefill_gain.can_test(run, 120_000, 128_000, 0.10)  # -6.25 %
    assert not prefill_gain.can_test(run, 110_000, 128_000, 0.10)  # -14.1 %
    assert prefill_gain.can_test(run, 110_000, 128_000, 0.15)
    assert not prefill_gain.can_test({**run, "hardware": NO_GPU}, 128_000, 128_000, 0.10)
    h100 = {"gpus": [{"name": "NVIDIA H100"}]}
    assert not prefill_gain.can_test({**run, "hardware": h100}, 128_000, 128_000, 0.10)
    assert not prefill_gain.can_test({**run, "kind": "synthetic"}, 128_000, 128_000, 0.10)
    assert not prefill_gain.can_test(
        {**run, "parameters": {"model": "tiny"}}, 128_000, 128_000, 0.1
    )


@pytest.mark.parametrize(
    "hardware,prefix,factor,a_ttft,range_verdict,verdict",
    [
        (NO_GPU, 128_000, 1.4, (0.2,) * 4, "inside", "untested"),  # CPU stand-in
        (B300, 2_048, 1.4, (0.2,) * 4, "inside", "untested"),  # prefix far from the claim's
        (B300, 128_000, 1.4, (0.2,) * 4, "inside", "consistent"),  # gain exactly +40 %
        (B300, 120_000, 1.4, (0.2,) * 4, "inside", "consistent"),  # prefix within 10 %
        (B300, 128_000, 1.5, (0.1, 0.2, 0.4, 0.5), "consistent", "consistent"),  # +50 %, wide
        (B300, 128_000, 2.0, (0.2,) * 4, "above", "inconsistent"),  # +100 %
        (B300, 128_000, 1.1, (0.2,) * 4, "below", "inconsistent"),  # +10 %
    ],
    ids=["cpu", "short-prefix", "inside", "prefix-near", "overlaps", "above", "below"],
)
def test_every_run_reading(tmp_path, hardware, prefix, factor, a_ttft, range_verdict, verdict):
    """A 500 new tok/s, B ``factor`` x faster: gain = factor - 1 against +35 % .. +44 %. Equal
    TTFTs give a zero-width interval; (0.1, 0.2, 0.4, 0.5) s spread it from below +44 %."""
    an = prefill_gain.analyse(_claim_trace(tmp_path, factor, hardware, prefix, a_ttft))
    assert an.gain.gain == pytest.approx(factor - 1)  # every B request is `factor`x its A twin
    assert an.trace_prefix == prefix and an.trace_new == 100
    assert an.range_verdict.verdict == range_verdict
    assert an.testable == (verdict != "untested")
    if range_verdict == "consistent":  # point outside, interval reaching into +35 .. +44 %
        assert an.gain.gain > 0.44 and an.gain.low <= 0.44
    out = prefill_gain.outcome(an)
    run = out.reading("prefill-gain.gain", "this run")
    assert run.verdict == verdict
    on_claim = [h for h in out.headlines if h.kind == "measured" and h.claim_id]
    assert [h.name for h in on_claim] == ["gain", "gain_interval_low", "gain_interval_high"]
    assert {(h.verdict, h.reason) for h in on_claim} == {(verdict, run.reason)}
    others = [h for h in out.headlines if h.kind == "measured" and not h.claim_id]
    assert {h.verdict for h in others} == {"not comparable"}
    assert an.range_verdict.text in run.reason
    if verdict == "untested":
        assert run.reason.endswith("DeepSeek-V4.1-Flash behind 128,000 cached tokens")
    else:
        assert run.margin == range_verdict


def test_one_configuration_leaves_the_run_untested(tmp_path):
    """Only A recorded: no gain, the reading says what is missing, the chapter still builds."""
    t = _trace(
        tmp_path,
        [("A", _result([128_100] * 4, [0.2] * 4))],
        parameters={"prefix_tokens": 128_000, "model": MODEL},
    )
    t.run["kind"], t.run["hardware"] = "recorded", B300
    an = prefill_gain.analyse(t)
    out = prefill_gain.outcome(an)
    run = out.reading("prefill-gain.gain", "this run")
    assert an.gain is None and run.verdict == "untested"
    assert run.reason.startswith("no usable request of configuration B")
    assert "gain" not in {h.name for h in out.headlines}
    assert an.values()["range_verdict"] == "untested" and np.isnan(an.values()["gain_pct"])


def _edited_registry(**fields):
    def edit(c):
        for k, v in fields.items():
            (c["scope"] if k == "context_tokens" else c)[k] = v

    return edited_registry({"prefill-gain.gain": edit})


@pytest.mark.parametrize(
    "high,baseline,verdict,margin",
    [
        # no baseline throughput published: a bound caps a throughput, not a gain
        (44, None, "undetermined", "no baseline throughput published"),
        (400, None, "undetermined", "no baseline throughput published"),
        # a baseline of 200,000 new tok/s on one GB300: x 1.44 = 288,000, 0.866x the
        # 332,736 new-token bound behind 128,000 cached tokens (compute binds: 3.0054 us per
        # token, the 15.71 MB prefix read shared by a 256-token chunk is 7.7 ns)
        (44, 200_000.0, "possible", "0.866x the new-token bound"),
        # 240,000 x 1.44 = 345,600: 1.04x, impossible
        (44, 240_000.0, "impossible", "1.04x the new-token bound"),
    ],
)
def test_every_physics_reading(tmp_path, high, baseline, verdict, margin):
    """What physics can say about a gain: nothing without the baseline's absolute throughput
    (the reading used to call +101 % impossible, assuming equal efficiency before and after,
    against the chapter's own words); with a published baseline, the gained throughput
    against the new-token bound. The reason keeps the assumption's figures, labelled: +35 %
    .. +44 % removes 25.9 % .. 30.6 % of a new token's time, the decoder replay layers at most
    50.26 % (test_removable_share_by_hand), so up to +101 % at equal efficiency. The range
    comes from a copy of the registry."""
    reg = _edited_registry(values={"low": 35, "high": high})
    out = prefill_gain.outcome(
        prefill_gain.analyse(
            _claim_trace(tmp_path, 1.4, NO_GPU),
            prefill_gain.Params(baseline_tok_s=baseline),
            registry=reg,
        )
    )
    r = out.reading("prefill-gain.gain", "physics")
    assert r.verdict == verdict and r.margin == margin
    assert "at equal kernel efficiency before and after (an assumption, not physics)" in r.reason
    assert f"+35 % to +{high} % on new tokens removes 25.9 % to " in r.reason
    assert "gains up to +101 % need no faster kernels" in r.reason
    h = {x.name: x for x in out.headlines}["removable_share"]
    assert (h.value, h.kind, h.verdict) == (50.3, "modelled", verdict)


def test_gain_physics_without_a_baseline_is_undetermined_at_any_gain():
    """+35 % .. +44 % or +35 % .. +400 %: no bound on a gain without a baseline."""
    for high in (0.44, 4.0):
        r = prefill_gain.gain_physics(0.35, high, 0.5026, "by hand")
        assert r.verdict == "undetermined" and r.reading == "physics"
    r = prefill_gain.gain_physics(
        0.35, 0.44, 0.5026, "by hand", baseline_tok_s=100.0, bound_tok_s=144.0
    )
    assert r.verdict == "possible" and r.margin == "1x the new-token bound"  # 144 / 144
    r = prefill_gain.gain_physics(
        0.35, 0.44, 0.5026, "by hand", baseline_tok_s=101.0, bound_tok_s=144.0
    )
    assert r.verdict == "impossible"  # 145.44 / 144 = 1.01


def test_published_reading_is_none_published(tmp_path):
    """No published gain at a fixed cached prefix exists (caching gains compare with and
    without a cache): none published, with the analogues named."""
    out = prefill_gain.outcome(prefill_gain.analyse(_claim_trace(tmp_path, 1.4, B300)))
    assert out.reading("prefill-gain.gain", "published").verdict == "none published"


def test_outcome_by_hand(tmp_path):
    """On B300 behind 128,000 cached tokens: A 100 / 0.2 s = 500 new tok/s, B 700 (+40 %); the
    prefix read per new token (sparse, 20 encoder layers) 15,710,208 B over 8 TB/s = 1.964 us
    against 3.0054 us of compute (GEMMs + attention FLOP: 332,736.2 tok/s either way)."""
    params = prefill_gain.Params(n_boot=100, level=0.8, seed=7)
    an = prefill_gain.analyse(_claim_trace(tmp_path, 1.4, B300), params)
    out = {h.name: h for h in prefill_gain.outcome(an).headlines}
    assert out["gain"].value == 40.0
    assert out["gain_interval_low"].value == out["gain_interval_high"].value == 40.0
    assert out["new_token_tok_s_a"].value == 500.0 and out["new_token_tok_s_b"].value == 700.0
    assert out["mean_cached_tokens"].value == 128_000.0
    assert out["prefix_read_ceiling_no_reuse"].value == 332_736.2  # 332,736.15 to one decimal
    assert out["prefix_read_ceiling_no_reuse"].kind == "modelled"
    assert out["gain_interval_low"].definition == (
        "lower end of the 80 % bootstrap interval of the gain (100 resamples, seed 7)"
    )
    assert an.read_reuse.bound == "compute"
    assert an.read_reuse.tokens_per_s == pytest.approx(332_736.15)
    v = an.values()
    assert (v["a_tok_s"], v["b_tok_s"]) == (pytest.approx(500.0), pytest.approx(700.0))
    assert (v["claim_low_pct"], v["claim_high_pct"], v["claim_prefix"]) == (35, 44, 128_000)
    assert v["sparse_read_us"] == pytest.approx(1.963776)
    assert v["read_over_compute"] == pytest.approx(1.963776 / 3.0053842944)
    assert v["need_low_pct"] == pytest.approx(100 * (1 - 1 / 1.35))  # 25.93 %
    assert v["need_high_pct"] == pytest.approx(100 * (1 - 1 / 1.44))  # 30.56 %
    assert (an.gain.n_a, an.gain.n_b, an.testable) == (4, 4, True)
    assert v["v_physics"] == an.readings[0].verdict
    assert tuple(r.verdict for r in an.readings) == (
        "undetermined",
        "none published",
        "consistent",
    )
    assert v["batched_tokens_a"] == "vLLM's default"
    # a published baseline above 332,736 / 1.44 = 231,067 new tok/s makes +44 % impossible;
    # at equal efficiency the 50.26 % removable allows up to 1 / (1 - 0.5026) - 1 = +101 %
    flips = prefill_gain.outcome(an).flips
    assert flips[0].startswith("physics: undetermined while the baseline's new-token")
    assert "a published baseline above 231,067 new tok/s on 1 x GB300" in flips[0]
    assert "allow up to +101 %" in flips[0]
    assert an.cached_sources() == "run.json parameters.prefix_tokens (8 requests)"
    parameters = prefill_gain.outcome(an).parameters
    assert (parameters["n_boot"], parameters["level"], parameters["seed"]) == (100, 0.8, 7)


def test_the_shipped_trace_names_the_knob_that_separates_a_and_b():
    """The shipped CPU trace: A and B differ only by the chunked-prefill token budget."""
    an = prefill_gain.analyse(read_trace(paths.TRACES / "prefill-gain"))
    v = an.values()
    serve = an.trace.run["parameters"]
    assert serve["serve_args_a"] == "--max-num-batched-tokens 64"
    assert serve["serve_args_b"] == "--max-num-batched-tokens 2048"
    assert (v["batched_tokens_a"], v["batched_tokens_b"]) == (64, 2048)
    assert not an.testable and an.readings[2].verdict == "untested"


def test_the_range_comes_from_the_registry():
    """Move the published range to +58 % .. +65 % in a copy of the registry: the shipped trace's
    gain (+55.1 %, interval +51.4 % .. +58.2 %) turns from above the range to overlapping it,
    and no headline quotes +35 % or +44 % any more (the run stays untested: a CPU stand-in)."""
    tr = read_trace(paths.TRACES / "prefill-gain")
    before = prefill_gain.outcome(prefill_gain.analyse(tr))
    reason = before.reading("prefill-gain.gain", "this run").reason
    assert "vs published +35 % .. +44 %: above" in reason
    an = prefill_gain.analyse(tr, registry=_edited_registry(values={"low": 58, "high": 65}))
    assert (an.claim_low, an.claim_high) == (0.58, 0.65)
    assert an.range_verdict.verdict == "consistent"
    out = prefill_gain.outcome(an)
    run = out.reading("prefill-gain.gain", "this run")
    assert run.verdict == "untested" and run.reason != reason
    assert "vs published +58 % .. +65 %: consistent" in run.reason
    text = " ".join(h.definition + " " + h.reason for h in out.headlines) + run.reason
    assert "+35 %" not in text and "+44 %" not in text
    assert an.values()["claim_low_pct"] == 58 and an.values()["claim_high_pct"] == 65


def test_the_cached_prefix_comes_from_the_registry():
    """Halve the claim's cached prefix: the encoder's read per new token falls to 102 x 64,000
    + 2,654,208 = 9,182,208 B (1.148 us), and the compute to 2.06753792 us + (1.5 x 64,000 x
    16,384 + 1,207,959,552 + 335,544,320) FLOP / 5e15 = 2.69081149 us, which binds: the ceiling
    rises to 371,635.1 tok/s, and no headline quotes 128,000 any more."""
    tr = read_trace(paths.TRACES / "prefill-gain")
    reg = _edited_registry(context_tokens={"low": 64_000, "high": 64_000})
    out = prefill_gain.outcome(prefill_gain.analyse(tr, registry=reg))
    h = {x.name: x for x in out.headlines}
    assert h["prefix_read_ceiling_no_reuse"].value == 371_635.1
    run = out.reading("prefill-gain.gain", "this run")
    text = " ".join(x.definition + " " + x.reason for x in out.headlines) + run.reason
    assert "128,000" not in text and "64,000 cached tokens" in text


@pytest.mark.parametrize("hardware", [NO_GPU, B300], ids=["stand-in", "testable"])
def test_figures_draw_from_the_analysis(tmp_path, hardware):
    """Every figure has units; legends sit outside the axes; the published range shares the
    gain's axis only when the trace can test the claim."""
    import matplotlib

    matplotlib.use("Agg")
    from rackbook.book.figures import prefill_gain as figures

    an = prefill_gain.analyse(_claim_trace(tmp_path, 1.4, hardware), prefill_gain.Params(n_boot=10))
    assert set(figures.FIGURES) == {"fig_distribution", "fig_gain", "fig_ceiling"}
    for name, draw in figures.FIGURES.items():
        fig = draw(an)
        ax = fig.axes[0]
        assert "(" in ax.get_xlabel() and ax.get_legend() is None and fig.legends
        if name == "fig_gain":
            spans = [p for p in ax.patches if p.get_label() == "published range"]
            assert len(spans) == (hardware is B300)
            assert ("CPU stand-in" in ax.get_title()) == (hardware is NO_GPU)
        matplotlib.pyplot.close(fig)


def test_the_shipped_traces_values_in_full():
    """Every value the chapter glues, on the shipped CPU trace with the notebook's defaults: the
    gain and its interval are the golden headline's (+55.06 %, +51.4 % .. +58.2 %); the
    read and compute times are those of test_outcome_by_hand (the same 128,000-token prefix);
    the need shares are 1 - 1 / 1.35 and 1 - 1 / 1.44."""
    v = analyse_shipped("prefill-gain").values()
    approx = {
        "a_tok_s": 4750.915076464831, "b_tok_s": 7366.983191911702,
        "ceiling_no_reuse": 332_736.150203261, "compute_us": 3.0053842944,
        "gain_pct": 55.0645101699754, "gain_low_pct": 51.39952992246253,
        "gain_high_pct": 58.19843571447705, "level_pct": 90.0, "mean_cached_tokens": 2048.0,
        "mean_new_tokens": 256.0625, "need_low_pct": 100 * (1 - 1 / 1.35),
        "need_high_pct": 100 * (1 - 1 / 1.44), "read_over_compute": 1.963776 / 3.0053842944,
        "removable_pct": 50.26376453375661, "sparse_mb_per_new_token": 15.710208,
        "sparse_read_us": 1.963776,
    }  # fmt: skip
    exact = {
        "batched_tokens_a": 64, "batched_tokens_b": 2048, "claim_low_pct": 35.0,
        "claim_high_pct": 44.0, "claim_prefix": 128_000, "range_verdict": "above",
        "stat": "median", "trace_new": 256, "v_physics": "undetermined",
        "gpu_name": "NVIDIA B300 in a GB300 NVL72 rack (Blackwell Ultra)",
        "reuse_change": "it stays there: the compute bound binds either way",
    }  # fmt: skip
    assert v == exact | {k: pytest.approx(x, rel=1e-9) for k, x in approx.items()}


def test_the_shipped_traces_headlines_in_full():
    """Each headline's name, value, unit, kind, verdict, claim and definition on the shipped
    trace (the values are the golden file's)."""
    hs = prefill_gain.outcome(analyse_shipped("prefill-gain")).headlines
    got = headline_rows(hs)
    claim = "prefill-gain.gain"
    assert got == [
        ("gain", 55.06, "%", "measured", "untested", claim),
        ("gain_interval_low", 51.4, "%", "measured", "untested", claim),
        ("gain_interval_high", 58.2, "%", "measured", "untested", claim),
        ("new_token_tok_s_a", 4750.92, "tok/s", "measured", "not comparable", None),
        ("new_token_tok_s_b", 7366.98, "tok/s", "measured", "not comparable", None),
        ("mean_cached_tokens", 2048.0, "tokens", "measured", "not comparable", None),
        ("removable_share", 50.3, "%", "modelled", "undetermined", claim),
        ("prefix_read_ceiling_no_reuse", 332_736.2, "tok/s", "modelled", "not comparable", None),
    ]
    d = {h.name: h for h in hs}
    assert d["gain"].definition == (
        "median new-token prefill tok/s of B / A - 1; new tokens = prompt - cached, over TTFT"
    )
    assert d["gain_interval_high"].definition == (
        "upper end of the 90 % bootstrap interval of the gain"
    )
    assert d["new_token_tok_s_b"].definition == (
        "median new-token prefill throughput per request, config B"
    )
    assert d["new_token_tok_s_a"].reason == "the write-up gives no absolute throughput"
    assert d["mean_cached_tokens"].reason == "the claim's prefix is 128,000 tokens"
    assert d["mean_cached_tokens"].definition == (
        "mean cached prompt tokens per request (the prefix P)"
    )
    assert d["removable_share"].definition == (
        "share of a new token's time at the bounds that the decoder replay layers remove (at "
        "equal kernel efficiency before and after: an assumption)"
    )
    assert d["prefix_read_ceiling_no_reuse"].definition == (
        "new-token prefill ceiling behind 128,000 cached tokens, 1 x GB300, fp4 KV, sparse "
        "reads, no reuse"
    )
    assert d["prefix_read_ceiling_no_reuse"].reason == "a ceiling on throughput, not a gain"
    assert d["prefix_read_ceiling_no_reuse"].hardware is None
    assert d["gain"].hardware == "2-core AMD EPYC, no GPU" and d["gain"].trace_ids


def test_the_shipped_traces_readings_and_sources():
    """The run's reading quotes the range verdict; the physics reading, with no baseline, is
    undetermined and says why; every request's cached count came from run.json."""
    an = analyse_shipped("prefill-gain")
    assert an.cached_sources() == "run.json parameters.prefix_tokens (480 requests)"
    phys, _, run = an.readings
    assert (phys.verdict, phys.margin) == ("undetermined", "no baseline throughput published")
    assert phys.reason.startswith(
        "a bound caps a throughput, not a gain: the baseline's absolute new-token throughput is "
        "not published, and a slow enough baseline makes any gain reachable; at equal kernel "
        "efficiency before and after (an assumption, not physics), +35 % to +44 % on new tokens "
        "removes 25.9 % to 30.6 % of their time, and running the decoder layers on the last "
        "window only removes up to 50.3 % of it ("
    )
    assert run.reason == (
        "recorded on 2-core AMD EPYC, no GPU (measured +55.1 % (interval +51.4 % .. +58.2 %) vs "
        "published +35 % .. +44 %: above); the claim needs Blackwell GPUs serving "
        "DeepSeek-V4.1-Flash behind 128,000 cached tokens"
    )
    assert an.missing == "" and an.trace_prefix == 2048
    assert an.stat_tok_s("A") == pytest.approx(4750.915076464831, rel=1e-12)
    assert math.isnan(an.stat_tok_s("C"))


@pytest.mark.parametrize("baseline, verdict", [(231_066.5, "possible"), (231_067.5, "impossible")])
def test_physics_with_a_published_baseline(baseline, verdict):
    """baseline x 1.44 against the 332,736.15 new-token bound: the edge sits at 332,736.150203261
    / 1.44 = 231,066.77 new tok/s (231,066.5 x 1.44 = 332,735.76 below, 231,067.5 x 1.44 =
    332,737.2 above); a removable share of 0.5 allows up to 1 / (1 - 0.5) - 1 = +100 %."""
    r = prefill_gain.gain_physics(
        0.35, 0.44, 0.5, "how", baseline_tok_s=baseline, bound_tok_s=332_736.150203261,
        bound_how="1 x GB300 behind 128,000 cached tokens",
    )  # fmt: skip
    assert r.verdict == verdict
    assert r.reason.startswith(
        f"a baseline of {baseline:,.0f} new tok/s per GPU x (1 + 44 %) = {baseline * 1.44:,.0f}, "
    )
    assert "the 332,736 new-token bound (1 x GB300 behind 128,000 cached tokens)" in r.reason
    assert r.margin.endswith(" the new-token bound")
    assert "gains up to +100 % need no faster kernels" in r.reason


def test_physics_of_a_layer_share_of_one_is_unbounded():
    r = prefill_gain.gain_physics(0.35, 0.44, 1.0, "all of it")
    assert "gains up to +inf % need no faster kernels" in r.reason and "(all of it)" in r.reason
    assert r.verdict == "undetermined"


@pytest.mark.parametrize("v", [True, -1, 2.5, "128000"])
def test_a_prefix_parameter_that_is_no_token_count_is_refused(tmp_path, v):
    t = _ab(tmp_path)
    t.run["parameters"] = {"cached_prefix_tokens": None, "random_prefix_len": v}
    t.requests["cached_prompt_tokens"] = pd.NA
    with pytest.raises(InputError) as e:
        prefill_gain.new_token_prefill(t)
    assert e.value.field == "parameters.random_prefix_len"
    assert e.value.problem == f"must be a token count, got {v!r}"


def test_the_prefix_parameters_are_read_in_order(tmp_path):
    """The first key set wins; ``None`` counts as unset; a float that is whole is a count."""
    t = _ab(tmp_path)
    t.requests["cached_prompt_tokens"] = pd.NA
    t.run["parameters"] = {"prefix_repetition_prefix_len": 7, "random_prefix_len": 1000.0,
                           "prefix_tokens": None}  # fmt: skip
    tab = prefill_gain.new_token_prefill(t)
    assert set(tab["cached_tokens"]) == {1000} and set(tab["new_tokens"]) == {100}
    assert set(tab["cached_source"]) == {"run.json parameters.random_prefix_len"}
    tab = prefill_gain.new_token_prefill(t, prefix_tokens=900)
    assert set(tab["cached_tokens"]) == {900} and set(tab["cached_source"]) == {"argument"}
    t.run["parameters"] = {}
    with pytest.raises(InputError) as e:
        prefill_gain.new_token_prefill(t)
    assert e.value.field == "requests.cached_prompt_tokens"
    assert e.value.problem == (
        "missing and no prefix length known: pass prefix_tokens= or set run.json "
        "parameters.prefix_tokens"
    )


def test_what_measured_kernels_reach_behind_the_prefix():
    """Prefill behind 128,000 cached tokens on 2 x B300 reaches 173,151 new tok/s per GPU (fewer
    than behind 1,000: 207,754); a baseline of 100,000 x 1.44 over 2 GPUs = 72,000 per GPU is
    72,000 / 173,151 = 0.416 of it; without a baseline there is no ratio."""
    m, g = catalogs.as_model(MODEL), catalogs.as_gpu("b300")
    some = prefill_gain.gain_attainable(m, g, 2, 128_000, 0.44, None)
    assert some["ratio"] is None and some["tok_s_per_gpu"] == pytest.approx(173_151.46, abs=0.01)
    assert some["text"].startswith(
        "measured kernels reach 173,151 new tok/s per GPU behind 128,000 cached tokens (attention "
        "data-parallel + experts expert-parallel on 2 GPUs"
    )
    assert some["text"].endswith(
        "; without the baseline's throughput no gain can be set against it"
    )
    short = prefill_gain.gain_attainable(m, g, 2, 1_000, 0.44, None)["tok_s_per_gpu"]
    assert short == pytest.approx(207_754.05, abs=0.01)
    based = prefill_gain.gain_attainable(m, g, 2, 128_000, 0.44, 100_000.0)
    assert based["ratio"] == pytest.approx(72_000 / based["tok_s_per_gpu"], rel=1e-12)
    assert based["text"].startswith("the gained throughput 72,000 input tok/s per GPU is 0.42x")


def test_cached_sources_most_first_then_by_name(tmp_path):
    """Two requests carry their own cached count, six take run.json's: most first; a tie is
    ordered by name."""
    t = _ab(tmp_path)
    t.requests["cached_prompt_tokens"] = [1000, 1000] + [pd.NA] * 6
    an = _analysis_of(t)
    assert an.cached_sources() == "run.json parameters.prefix_tokens (6 requests), row (2 requests)"
    t.requests["cached_prompt_tokens"] = [1000] * 4 + [pd.NA] * 4
    assert _analysis_of(t).cached_sources() == (
        "row (4 requests), run.json parameters.prefix_tokens (4 requests)"
    )
    t.requests["cached_prompt_tokens"] = [1000] * 2 + [pd.NA] * 6
    assert _analysis_of(t, 1000).cached_sources() == "argument (6 requests), row (2 requests)"


def _analysis_of(trace, assume=None):
    return prefill_gain.analyse(trace, prefill_gain.Params(n_boot=10, assume_prefix_tokens=assume))


def test_gain_defaults_and_a_missing_configuration(tmp_path):
    """The defaults are the median, 2,000 resamples, seed 0 and a 90 % interval; a configuration
    without usable requests is refused by name."""
    tab = prefill_gain.new_token_prefill(_ab(tmp_path))
    g = prefill_gain.gain(tab, "A", "B")
    assert (g.n_boot, g.seed, g.level, g.n_a, g.n_b) == (2000, 0, 0.90, 4, 4)
    assert g == prefill_gain.gain(tab, "A", "B", stat="median", n_boot=2000, seed=0, level=0.9)
    assert g.gain == pytest.approx(0.5)
    with pytest.raises(InputError) as e:
        prefill_gain.gain(tab, "A", "C")
    assert (e.value.file, e.value.field) == ("-", "config")
    assert e.value.problem == "no usable request with config = 'C'"


def test_a_claim_without_its_cached_prefix_is_refused():
    tr = read_trace(paths.TRACES / "prefill-gain")
    with pytest.raises(InputError) as e:
        prefill_gain.analyse(tr, registry=_edited_registry(context_tokens=None))
    assert (e.value.file, e.value.problem) == ("claims", "required")
    assert e.value.field == "claims[prefill-gain.gain].scope.context_tokens"


def test_what_would_flip_the_shipped_readings():
    """The bound behind 128,000 cached tokens (332,736 new tok/s) over 1.44 is 231,067."""
    physics, run = prefill_gain.outcome(analyse_shipped("prefill-gain")).flips
    assert "a published baseline above 231,067 new tok/s on 1 x GB300 makes +44 % impossible " in (
        physics
    )
    assert physics.endswith("the decoder replay layers' 50.3 % allow up to +101 %")
    assert run == (
        "this run: a trace on Blackwell GPUs serving DeepSeek-V4.1-Flash, both configurations "
        "behind 128,000 cached tokens; inconsistent if the whole interval of the gain lies "
        "outside +35 % to +44 %"
    )


@pytest.mark.parametrize(
    "g,verdict",
    [
        (_gain(0.25, 0.2, 0.3), "inside"),  # the point exactly at the low end
        (_gain(0.6, 0.5, 0.7), "consistent"),  # the interval's low end exactly at the high end
        (_gain(0.125, 0.0, 0.25), "consistent"),  # its high end exactly at the low end
        (_gain(0.125, 0.0, 0.2), "below"),
    ],
    ids=["point-at-low", "interval-low-at-high", "interval-high-at-low", "below"],
)
def test_range_verdicts_exactly_at_the_ends(g, verdict):
    """Range +25 % .. +50 % (binary-exact ends): an end touched counts as inside or overlapping;
    the published ends are printed whole."""
    v = prefill_gain.verdict_range(g, 0.25, 0.5)
    assert v.verdict == verdict
    assert prefill_gain.verdict_range(g, 0.3125, 0.5625).text.endswith(
        "vs published +31 % .. +56 %: " + prefill_gain.verdict_range(g, 0.3125, 0.5625).verdict
    )
