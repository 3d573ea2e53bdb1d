"""New-token prefill throughput, the gain of one configuration over another, the prefix-read
roofline model, the chapter's analysis and every verdict it can reach, against hand-computed
numbers."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest

from rackbook import paths
from rackbook.core.importers import vllm_bench_frames
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import concat, read_trace, validate
from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims, parse_claims
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
    s = prefill_gain.summary(tab).iloc[0]
    assert s["requests"] == 1 and s["excluded"] == 1


def test_summary_statistics(tmp_path):
    s = prefill_gain.summary(prefill_gain.new_token_prefill(_ab(tmp_path))).set_index("config")
    a = s.loc["A"]
    assert a["mean_tok_s"] == pytest.approx(487.5)  # (1000 + 500 + 250 + 200) / 4
    assert a["median_tok_s"] == pytest.approx(375.0)
    assert a["p10_tok_s"] == pytest.approx(215.0)  # 200 + 0.3 x 50
    assert a["p90_tok_s"] == pytest.approx(850.0)  # 500 + 0.7 x 500
    assert a["spread_tok_s"] == pytest.approx(635.0)
    assert a["pooled_tok_s"] == pytest.approx(400 / 1.2)
    assert s.loc["B", "median_tok_s"] == pytest.approx(562.5)


@pytest.mark.parametrize("stat", ["mean", "median", "pooled"])
def test_gain_point_estimate_and_seeded_bootstrap(tmp_path, stat):
    tab = prefill_gain.new_token_prefill(_ab(tmp_path, factor=1.5))
    g = prefill_gain.gain(tab, "A", "B", stat=stat, n_boot=500, seed=3)
    assert g.gain == pytest.approx(0.5)  # every B request is 1.5x its A twin
    assert g.low < 0.5 < g.high  # independent resampling of 4 varied requests spreads
    again = prefill_gain.gain(tab, "A", "B", stat=stat, n_boot=500, seed=3)
    assert (again.low, again.high) == (g.low, g.high)
    assert g.n_a == g.n_b == 4 and "+50.0%" in g.formula


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
    with pytest.raises(InputError, match="stat"):
        prefill_gain.gain(prefill_gain.new_token_prefill(t), "A", "B", stat="p99")


def test_verdict_range():
    assert prefill_gain.verdict_range(0.40, 0.35, 0.44).verdict == "inside"
    assert prefill_gain.verdict_range(0.50, 0.35, 0.44).verdict == "above"
    g = prefill_gain.Gain("A", "B", "median", 1, 1.3, 0.30, 0.25, 0.36, 0.9, 4, 4, 10, 0, "")
    v = prefill_gain.verdict_range(g, 0.35, 0.44)
    assert v.verdict == "consistent" and v.overlaps and not v.inside
    g = prefill_gain.Gain("A", "B", "median", 1, 1.2, 0.20, 0.10, 0.30, 0.9, 4, 4, 10, 0, "")
    assert prefill_gain.verdict_range(g, 0.35, 0.44).verdict == "below"
    assert "+35% .. +44%" in prefill_gain.verdict_range(g, 0.35, 0.44).text


def _gain(x, lo, hi):
    return prefill_gain.Gain("A", "B", "median", 1, 1 + x, x, lo, hi, 0.9, 4, 4, 10, 0, "")


@pytest.mark.parametrize(
    "g,verdict,inside,overlaps,text",
    [
        (_gain(0.40, 0.38, 0.42), "inside", True, True, "+40.0% (interval +38.0% .. +42.0%)"),
        (_gain(0.30, 0.25, 0.36), "consistent", False, True, "+30.0% (interval +25.0% .. +36.0%)"),
        (_gain(0.50, 0.43, 0.60), "consistent", False, True, "+50.0% (interval +43.0% .. +60.0%)"),
        (_gain(0.20, 0.10, 0.30), "below", False, False, "+20.0% (interval +10.0% .. +30.0%)"),
        (_gain(0.60, 0.45, 0.70), "above", False, False, "+60.0% (interval +45.0% .. +70.0%)"),
    ],
    ids=["inside", "overlaps-below", "overlaps-above", "below", "above"],
)
def test_every_range_verdict_by_hand(g, verdict, inside, overlaps, text):
    """Published range +35 % .. +44 %; the interval decides when the point is outside it."""
    v = prefill_gain.verdict_range(g, 0.35, 0.44)
    assert (v.verdict, v.inside, v.overlaps) == (verdict, inside, overlaps)
    assert v.text == f"measured {text} vs published +35% .. +44%: {verdict}"


def test_verdict_range_of_a_plain_number_and_a_bad_range():
    assert prefill_gain.verdict_range(0.44, 0.35, 0.44).verdict == "inside"  # ends included
    assert prefill_gain.verdict_range(0.3499, 0.35, 0.44).verdict == "below"
    with pytest.raises(InputError, match="high: must be above low"):
        prefill_gain.verdict_range(0.40, 0.44, 0.35)


def test_prefix_read_model_128k():
    r = prefill_gain.prefix_read_model("deepseek-v4.1-flash", "b300", 128_000)
    assert r.kv_bytes_per_new_token == 128_000 * 890 == 113_920_000
    assert r.read_s_per_new_token == pytest.approx(113_920_000 / 8e12)  # 14.24 us
    assert r.compute_s_per_new_token == pytest.approx(16e9 / 15e15)  # 1.067 us
    assert r.bound == "KV read" and r.tokens_per_s == pytest.approx(8e12 / 113_920_000)
    shared = prefill_gain.prefix_read_model("deepseek-v4.1-flash", "b300", 128_000, reuse_tokens=16)
    assert shared.read_s_per_new_token == pytest.approx(0.89e-6)  # 14.24 us / 16
    assert shared.bound == "compute" and shared.tokens_per_s == pytest.approx(937_500)
    assert np.isclose(float(shared), 937_500)


# --------------------------------------------------------------------------------------------
# The chapter: analyse, outcome, every verdict

NO_GPU = {"gpus": [], "cpu_model": "test CPU", "cpu_cores": 2}
B300 = {"gpus": [{"name": "NVIDIA B300"}]}


def _claim_trace(tmp_path, factor, hardware, prefix=128_000, a_ttft=(0.2, 0.2, 0.2, 0.2)):
    """4 requests per config of ``prefix`` cached + 100 new tokens (run.json parameters); A's
    TTFTs ``a_ttft`` (0.2 s: 500 new tok/s), B's ``factor`` times faster."""
    t = _trace(
        tmp_path,
        [
            ("A", _result([prefix + 100] * 4, list(a_ttft))),
            ("B", _result([prefix + 100] * 4, [x / factor for x in a_ttft])),
        ],
        parameters={"prefix_tokens": prefix},
    )
    t.run["hardware"] = hardware
    return t


def test_comparable_only_on_blackwell_near_the_claims_prefix():
    run = {"hardware": B300}
    assert prefill_gain.comparable_to_claim(run, 128_000, 128_000, 0.10)
    assert prefill_gain.comparable_to_claim(run, 120_000, 128_000, 0.10)  # -6.25 %
    assert not prefill_gain.comparable_to_claim(run, 110_000, 128_000, 0.10)  # -14.1 %
    assert prefill_gain.comparable_to_claim(run, 110_000, 128_000, 0.15)
    assert not prefill_gain.comparable_to_claim({"hardware": NO_GPU}, 128_000, 128_000, 0.10)
    h100 = {"hardware": {"gpus": [{"name": "NVIDIA H100"}]}}
    assert not prefill_gain.comparable_to_claim(h100, 128_000, 128_000, 0.10)


@pytest.mark.parametrize(
    "hardware,prefix,factor,a_ttft,range_verdict,verdict",
    [
        (NO_GPU, 128_000, 1.4, (0.2,) * 4, "inside", "not reproduced"),
        (B300, 2_048, 1.4, (0.2,) * 4, "inside", "not reproduced"),  # prefix far from the claim's
        (B300, 128_000, 1.4, (0.2,) * 4, "inside", "consistent"),  # gain exactly +40 %
        (B300, 120_000, 1.4, (0.2,) * 4, "inside", "consistent"),  # prefix within 10 %
        (B300, 128_000, 1.5, (0.1, 0.2, 0.4, 0.5), "consistent", "consistent"),  # +50 %, wide
        (B300, 128_000, 2.0, (0.2,) * 4, "above", "inconsistent"),  # +100 %
        (B300, 128_000, 1.1, (0.2,) * 4, "below", "inconsistent"),  # +10 %
    ],
    ids=["cpu", "short-prefix", "inside", "prefix-near", "overlaps", "above", "below"],
)
def test_every_verdict(tmp_path, hardware, prefix, factor, a_ttft, range_verdict, verdict):
    an = prefill_gain.analyse(_claim_trace(tmp_path, factor, hardware, prefix, a_ttft))
    assert an.gain.gain == pytest.approx(factor - 1)  # every B request is `factor`x its A twin
    assert an.trace_prefix == prefix and an.trace_new == 100
    assert an.range_verdict.verdict == range_verdict and an.verdict == verdict
    if range_verdict == "consistent":  # point outside, interval reaching into +35 .. +44 %
        assert an.gain.gain > 0.44 and an.gain.low <= 0.44
    out = prefill_gain.outcome(an)
    assert out.verdict == verdict and out.reason == an.reason
    assert [h.verdict for h in out.headlines[:3]] == [verdict] * 3
    assert {h.claim_id for h in out.headlines[:3]} == {"prefill-gain.gain"}
    assert {h.verdict for h in out.headlines[3:]} == {"not comparable"}
    assert an.reason.startswith(an.range_verdict.text)
    if verdict == "not reproduced":
        assert an.reason.endswith("not on Blackwell GPUs with 128,000 cached tokens")


def test_outcome_by_hand(tmp_path):
    """On B300 behind 128,000 cached tokens: A 100 / 0.2 s = 500 new tok/s, B 700 (+40 %); the
    prefix read per new token 128,000 x 890 B over 8 TB/s = 14.24 us (no reuse: 70,224.7 tok/s),
    shared by the 100 new tokens 0.1424 us, under the 1.067 us of compute (937,500 tok/s)."""
    params = prefill_gain.Params(n_boot=100, level=0.8, seed=7)
    an = prefill_gain.analyse(_claim_trace(tmp_path, 1.4, B300), params)
    out = {h.name: h for h in prefill_gain.outcome(an).headlines}
    assert out["gain"].value == 40.0
    assert out["gain_interval_low"].value == out["gain_interval_high"].value == 40.0
    assert out["new_token_tok_s_a"].value == 500.0 and out["new_token_tok_s_b"].value == 700.0
    assert out["mean_cached_tokens"].value == 128_000.0
    assert out["prefix_read_ceiling_no_reuse"].value == 70_224.7
    assert out["prefix_read_ceiling_no_reuse"].kind == "modelled"
    assert out["gain_interval_low"].definition == (
        "lower end of the 80% bootstrap interval of the gain (100 resamples, seed 7)"
    )
    assert an.read_reuse.bound == "compute" and an.read_reuse.tokens_per_s == pytest.approx(937_500)
    v = an.values()
    assert (v["a_tok_s"], v["b_tok_s"]) == (pytest.approx(500.0), pytest.approx(700.0))
    assert (v["claim_low_pct"], v["claim_high_pct"], v["claim_prefix"]) == (35, 44, 128_000)
    assert v["read_us"] == pytest.approx(14.24) and v["bound_reuse"] == "compute"
    assert an.cached_sources() == "run.json parameters.prefix_tokens (8 requests)"
    parameters = prefill_gain.outcome(an).parameters
    assert (parameters["n_boot"], parameters["level"], parameters["seed"]) == (100, 0.8, 7)


def _edited_registry(**fields):
    raw = copy.deepcopy(load_claims().model_dump(mode="python"))
    for c in raw["claims"]:
        if c["id"] == "prefill-gain.gain":
            for k, v in fields.items():
                if k == "context_tokens":
                    c["scope"]["context_tokens"] = v
                else:
                    c[k] = v
    return parse_claims(raw, "edited")


def test_the_range_comes_from_the_registry():
    """Move the published range to +50 % .. +60 % in a copy of the registry: the shipped trace's
    gain (+65.7 %, interval +53.1 % .. +78.6 %) turns from above the range to overlapping it,
    and no headline quotes +35 % or +44 % any more."""
    tr = read_trace(paths.TRACES / "prefill-gain")
    before = prefill_gain.outcome(prefill_gain.analyse(tr))
    assert "vs published +35% .. +44%: above" in before.reason
    an = prefill_gain.analyse(tr, registry=_edited_registry(values={"low": 50, "high": 60}))
    assert (an.claim_low, an.claim_high) == (0.5, 0.6)
    assert an.range_verdict.verdict == "consistent" and an.verdict == "not reproduced"
    out = prefill_gain.outcome(an)
    assert out.reason != before.reason
    assert "vs published +50% .. +60%: consistent" in out.reason
    text = " ".join(h.definition + " " + h.reason for h in out.headlines) + out.reason
    assert "+35%" not in text and "+44%" not in text
    assert an.values()["claim_low_pct"] == 50 and an.values()["claim_high_pct"] == 60


def test_the_cached_prefix_comes_from_the_registry():
    """Halve the claim's cached prefix: the roofline ceiling doubles (8 TB/s over 64,000 x 890 B
    = 140,449.4 tok/s) and no headline quotes 128,000 any more."""
    tr = read_trace(paths.TRACES / "prefill-gain")
    reg = _edited_registry(context_tokens={"low": 64_000, "high": 64_000})
    out = prefill_gain.outcome(prefill_gain.analyse(tr, registry=reg))
    h = {x.name: x for x in out.headlines}
    assert h["prefix_read_ceiling_no_reuse"].value == 140_449.4
    text = " ".join(x.definition + " " + x.reason for x in out.headlines) + out.reason
    assert "128,000" not in text and "64,000 cached tokens" in text


def test_figures_draw_from_the_analysis(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from rackbook.book.figures import prefill_gain as figures

    an = prefill_gain.analyse(_claim_trace(tmp_path, 1.4, B300), prefill_gain.Params(n_boot=10))
    for draw, lines in [
        (figures.throughput_distribution, 4),  # two steps, two statistic lines
        (figures.gain_against_range, 1),  # the zero line (the point is an errorbar)
        (figures.prefix_read_ceiling, 3),  # two curves, the claim's prefix
    ]:
        fig = draw(an)
        ax = fig.axes[0]
        assert "(" in ax.get_xlabel() and len(ax.get_lines()) >= lines
        matplotlib.pyplot.close(fig)
