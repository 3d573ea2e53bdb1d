"""Decode latency against context length on a hand-made trace, the linear fit and its slope's
confidence interval, deltas, the context reads of a decode step against hand-computed numbers,
and the chapter (analyse, outcome): every verdict of every reading it can reach, and the
published figures read from the claims registry."""

from __future__ import annotations

import copy
import math

import pandas as pd
import pytest
from conftest import synthetic_run

from rackbook import paths
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.traces import concat, read_trace, validate
from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims, parse_claims
from rackbook.physics import roofline
from rackbook.results import context_latency
from rackbook.results.context_latency import DELTA_ID, DELTA_PCT_ID, KV_BYTES_ID, Params

#: The published pair of context lengths (data/claims.yaml: context-latency.delta, scope).
LO, HI = 128_000, 855_000


def _point(tpot_s, n_req=2, out=5, ttft=0.1):
    """Requests of ``out`` tokens whose every gap is ``tpot_s`` seconds."""
    return {
        "duration": 10.0,
        "input_lens": [10] * n_req,
        "output_lens": [out] * n_req,
        "ttfts": [ttft] * n_req,
        "latencies": [ttft + (out - 1) * tpot_s] * n_req,
        "itls": [[tpot_s] * (out - 1)] * n_req,
        "start_times": [0.0] * n_req,
        "errors": [""] * n_req,
    }


def _tpot(ctx):
    return (10 + 0.002 * ctx) / 1000  # 10 ms + 2 ms per 1k tokens


def _trace(tmp_path, contexts=(1000, 2000, 4000), configs=("A",)):
    frames = []
    for cfg in configs:
        for c in contexts:
            labels = {"config": cfg, "batch_size": "1", "point_id": f"{cfg}{c}"}
            if c is not None:
                labels["context_tokens"] = str(c)
            frames.append(
                vllm_bench_frames(tmp_path / f"{cfg}{c}.json", labels, data=_point(_tpot(c or 0)))
            )
    run = synthetic_run()
    return validate(concat(frames, run))


def test_latency_table(tmp_path):
    tab = context_latency.decode_latency_by_context(_trace(tmp_path, (4000, 1000, None, 2000)))
    assert tab["context_tokens"].tolist() == [1000, 2000, 4000]  # sorted; no-context point out
    assert tab["mean_tpot_ms"].tolist() == pytest.approx([12.0, 14.0, 18.0])
    assert tab["median_tpot_ms"].tolist() == pytest.approx([12.0, 14.0, 18.0])
    assert tab["median_itl_ms"].tolist() == pytest.approx([12.0, 14.0, 18.0])
    assert tab["requests"].tolist() == [2, 2, 2] and tab["batch"].tolist() == [1, 1, 1]


def test_single_token_requests_give_nan(tmp_path):
    run = synthetic_run()
    d = _point(0.01, out=1)
    d["itls"] = [[], []]
    t = vllm_bench_frames(tmp_path / "x.json", {"context_tokens": "5"}, data=d)
    t.run = run
    row = context_latency.decode_latency_by_context(validate(t)).iloc[0]
    assert math.isnan(row["mean_tpot_ms"]) and math.isnan(row["median_itl_ms"])


def test_fit_and_deltas(tmp_path):
    tab = context_latency.decode_latency_by_context(_trace(tmp_path))
    f = context_latency.fit_linear(tab)
    assert f.intercept_ms == pytest.approx(10.0)
    assert f.slope_per_1k == pytest.approx(2.0)
    assert f.r2 == pytest.approx(1.0) and f.n == 3
    # a perfect line: no residual, the CI collapses onto the slope and is above zero
    assert f.slope_ci_per_1k == pytest.approx((2.0, 2.0)) and f.resolved
    d = context_latency.delta(tab, 1000, 4000)
    assert (d.delta_ms, d.delta_pct) == pytest.approx((6.0, 50.0))  # 18 - 12 = 6 ms, 6 / 12
    assert d.pair == "requested"
    d = context_latency.delta(tab, LO, HI)  # 128k / 855k not in the trace: the longest pair
    assert d.pair == "longest-available" and (d.lo, d.hi) == (1000, 4000)


def _table(ms):
    return pd.DataFrame({"context_tokens": [1000 * (i + 1) for i in range(len(ms))],
                         "median_tpot_ms": ms})  # fmt: skip


@pytest.mark.parametrize(
    "ms,slope,ci,r2,resolved",
    [
        # x = 1, 2, 3k; y = 12, 13, 17: slope 5000 / 2e6 = 2.5 ms/1k, a = 14 - 5 = 9;
        # residuals .5, -1, .5: SS 1.5, SS_tot 14, R^2 = 1 - 1.5/14 = 0.8929;
        # se = sqrt(1.5 / 1 / 2e6) x 1000 = 0.8660 ms/1k; t(1 dof) = 12.706: +/-11.004
        ([12, 13, 17], 2.5, (2.5 - 11.0037, 2.5 + 11.0037), 1 - 1.5 / 14, False),
        # x = 1..4k; y = 12, 14.5, 15.5, 18: slope 9500 / 5e6 = 1.9, a = 10.25; residuals
        # -.15, .45, -.45, .15: SS 0.45, SS_tot 18.5; se = sqrt(.45 / 2 / 5e6) x 1000 =
        # 0.21213; t(2 dof) = 4.303: +/-0.91280
        ([12, 14.5, 15.5, 18], 1.9, (1.9 - 0.9128, 1.9 + 0.9128), 1 - 0.45 / 18.5, True),
    ],
    ids=["not-resolved", "resolved"],
)
def test_slope_confidence_interval(ms, slope, ci, r2, resolved):
    f = context_latency.fit_linear(_table(ms))
    assert f.slope_per_1k == pytest.approx(slope)
    assert f.slope_ci_per_1k == pytest.approx(ci, abs=1e-3)
    assert f.r2 == pytest.approx(r2) and f.resolved is resolved


def test_two_points_have_no_interval():
    f = context_latency.fit_linear(_table([12, 14]))
    assert all(math.isnan(x) for x in f.slope_ci_per_1k) and not f.resolved
    assert context_latency.t_975(1) == 12.706 and context_latency.t_975(31) == 1.96


def test_fit_refuses_mixed_series(tmp_path):
    tab = context_latency.decode_latency_by_context(_trace(tmp_path, configs=("A", "B")))
    with pytest.raises(InputError, match="several series"):
        context_latency.fit_linear(tab)
    one = tab[tab["config"] == "B"]
    assert context_latency.fit_linear(one).slope_per_1k == pytest.approx(2.0)
    with pytest.raises(InputError, match="two context lengths"):
        context_latency.fit_linear(one.iloc[:1])


def test_context_reads_128k_to_855k():
    """The reads of a decode step, at both ends (the model entry: index keys of 68 B in four
    sources at ratios 2, 2, 2, 1; KV rows of 288 B at FP4)."""
    r = roofline.decode_kv_reads("deepseek-v4.1-flash", HI)
    # scan (1/2 + 1/2 + 1/2 + 1) x 68 B = 170 B per token; dense (18 x 1/2 + 20) x 288 B =
    # 8,352 B per token, plus the scan: 8,522 B
    assert (r.scan_bytes_per_token, r.dense_bytes_per_token) == (170.0, 8522.0)
    g = roofline.context_growth("deepseek-v4.1-flash", "gb300", LO, HI)
    # sparse: 727,000 x 170 B = 123.59 MB / 8 TB/s = 15.44875 us (the top-k rows and the
    # candidate pool are fixed beyond 16,384 tokens); dense: 727,000 x 8,522 B = 6.195494 GB
    # / 8 TB/s = 774.43675 us
    assert g.sparse_bytes == pytest.approx(123_590_000)
    assert g.sparse_ms == pytest.approx(0.01544875) and g.dense_ms == pytest.approx(0.77443675)
    g2 = roofline.context_growth("deepseek-v4.1-flash", "gb300", LO, HI, batch=2, n_gpus=2)
    assert g2.sparse_bytes == 2 * g.sparse_bytes and g2.sparse_ms == pytest.approx(g.sparse_ms)


def test_memory_by_context():
    m = context_latency.memory_by_context(
        "deepseek-v4.1-flash", "gb300", (LO, HI), weight_bytes_per_gpu=100e9
    ).set_index("context_tokens")
    assert m.loc[855_000, "kv_bytes_per_sequence"] == 760_950_000  # 855,000 x 890 B
    assert m.loc[855_000, "sequences_per_gpu"] == 233  # floor(178e9 / 760.95e6) = 233.9
    assert m.loc[128_000, "sequences_per_gpu"] == 1562  # floor(178e9 / 113.92e6) = 1562.5


# --------------------------------------------------------------------------------------------
# The chapter: analyse and outcome, every reading, and the published figures from the registry
#
# The registry's figures (data/claims.yaml): 890 B/token (tolerance 0); +0.6 ms (tolerance
# 0.05 ms) and +7 % (tolerance 0.5 %) from 128,000 to 855,000 tokens. The sparse floor of one
# sequence growing 128k -> 855k at FP4 on one GB300: 15.44875 us (above).

SPARSE_US = 15.44875
GB300_RUN = {
    "kind": "recorded",
    "hardware": {"gpus": [{"name": "NVIDIA GB300"}] * 4},
    "parameters": {"model": "deepseek-ai/DeepSeek-V4.1-Flash"},
    "engine": {"name": "vllm"},
}


def _chapter_trace(tmp_path, tpot_ms, run=None):
    """One series (config A, batch 1): per context length (tokens), requests whose every
    decode step takes ``tpot_ms[context]`` ms; run.json updated with ``run``."""
    frames = [
        vllm_bench_frames(
            tmp_path / f"A{c}.json",
            {"config": "A", "batch_size": "1", "point_id": f"A{c}", "context_tokens": str(c)},
            data=_point(ms / 1000),
        )
        for c, ms in tpot_ms.items()
    ]
    r = synthetic_run()
    r.update(copy.deepcopy(run or {}))
    return validate(concat(frames, r))


def _shipped():
    return read_trace(paths.TRACES / "context-latency")


def _edited(claim_id, edit):
    """A copy of the claims registry with ``edit(claim_dict)`` applied to one claim."""
    raw = copy.deepcopy(load_claims().model_dump(mode="python"))
    for c in raw["claims"]:
        if c["id"] == claim_id:
            edit(c)
    return parse_claims(raw, "edited")


def _texts(out):
    """Every headline's definition and reason, every reading's reason and every flip."""
    return " | ".join(
        [h.definition + " | " + h.reason for h in out.headlines]
        + [r.reason for r in out.readings]
        + out.flips
    )


@pytest.mark.parametrize(
    "run,tpot_ms,params,v_ms,v_pct,why",
    [
        # a synthetic stand-in: whatever the numbers, it cannot test the claim
        (None, {LO: 8.57, HI: 9.15}, {}, "untested", "untested", "the claim needs"),
        # GB300 but short contexts: the longest pair (1,000 -> 4,000) stands in for 128k -> 855k
        (GB300_RUN, {1000: 8.57, 4000: 9.15}, {}, "untested", "untested", "lacks"),
        # +0.58 ms (|0.58 - 0.6| = 0.02 <= 0.05), 100 x 0.58 / 8.57 = +6.77 % (0.23 <= 0.5)
        (GB300_RUN, {LO: 8.57, HI: 9.15}, {}, "consistent", "consistent", "claim +0.6 ms"),
        # +0.73 ms (0.13 > 0.05), +8.52 % (1.52 > 0.5)
        (GB300_RUN, {LO: 8.57, HI: 9.30}, {}, "inconsistent", "inconsistent", "+0.73 ms"),
        # +0.6 ms (0 <= 0.05) but +6 % of 10 ms (1 > 0.5): the two readings part
        (GB300_RUN, {LO: 10.0, HI: 10.6}, {}, "consistent", "inconsistent", "+0.6 ms"),
        # the pair given as parameters: 1,000 -> 4,000 is then the requested pair
        (
            GB300_RUN,
            {1000: 8.57, 4000: 9.15},
            {"lo": 1000, "hi": 4000},
            "consistent",
            "consistent",
            "from 1,000 to 4,000 tokens",
        ),
    ],
    ids=["stand-in", "short-contexts", "within", "outside", "ms-within-pct-outside", "given-pair"],
)
def test_every_run_reading_of_the_delta(tmp_path, run, tpot_ms, params, v_ms, v_pct, why):
    an = context_latency.analyse(_chapter_trace(tmp_path, tpot_ms, run), Params(**params))
    out = context_latency.outcome(an)
    r_ms, r_pct = out.reading(DELTA_ID, "this run"), out.reading(DELTA_PCT_ID, "this run")
    assert (r_ms.verdict, r_pct.verdict) == (v_ms, v_pct)
    assert why in r_ms.reason
    by = {h.name: h for h in out.headlines}
    assert by["decode_delta"].verdict == v_ms and by["decode_delta_pct"].verdict == v_pct
    assert by["decode_delta"].kind == ("measured" if run else "synthetic")
    hi_ms, lo_ms = tpot_ms[max(tpot_ms)], tpot_ms[min(tpot_ms)]
    assert by["decode_delta"].value == pytest.approx(hi_ms - lo_ms, abs=1e-4)
    assert by["decode_delta_pct"].value == pytest.approx(100 * (hi_ms / lo_ms - 1), abs=1e-3)


@pytest.mark.parametrize(
    "metrics,verdict,why",
    [
        (None, "untested", "does not report"),  # GB300, but no bytes per token in the trace
        # 900 / 890 - 1 = +1.1 % <= 2 %
        ({"kv_cache_bytes_per_token": 900}, "consistent", "+1.1 % from the published 890"),
        # 950 / 890 - 1 = +6.7 % > 2 %
        ({"kv_cache_bytes_per_token": 950}, "inconsistent", "+6.7 % from the published 890"),
    ],
    ids=["not-reported", "within", "outside"],
)
def test_every_run_reading_of_the_bytes(tmp_path, metrics, verdict, why):
    run = {**GB300_RUN, **({"metrics": metrics} if metrics else {})}
    an = context_latency.analyse(_chapter_trace(tmp_path, {LO: 8.57, HI: 9.15}, run))
    r = context_latency.outcome(an).reading(KV_BYTES_ID, "this run")
    assert r.verdict == verdict and why in r.reason


def test_a_stand_in_leaves_the_bytes_untested():
    r = context_latency.outcome(context_latency.analyse(_shipped())).reading(
        KV_BYTES_ID, "this run"
    )
    assert r.verdict == "untested" and "2-core AMD EPYC, no GPU" in r.reason


@pytest.mark.parametrize(
    "params,verdict,why",
    [
        # 15.45 us of the claimed 600 us: 2.6 %; + the index scan's compute 2 x 64 x 128 x 2.5 x
        # 727,000 = 2.978e10 FLOP / 5e15 = 5.96 us: 21.4 us, 600 / 21.4 = 28 sequences
        (
            {},
            "possible",
            "at least 15.4 µs (2.6 % of 0.6 ms, 1 sequence) and the longer index "
            "scan's compute at least 5.96 µs more: 21.4 µs of the 600 µs",
        ),
        # 39 x 15.44875 = 602.5 us: 1.004x of 0.6 ms, above the bound (no margin)
        ({"batch": 39}, "impossible", "603 µs, 1x the claimed 0.6 ms"),
        # 60 x 15.44875 = 926.9 us: 1.54x the claim
        ({"batch": 60}, "impossible", "927 µs, 1.54x the claimed 0.6 ms"),
    ],
    ids=["one-sequence", "just-above-the-claim", "above-the-claim"],
)
def test_every_physics_reading_of_the_delta(params, verdict, why):
    out = context_latency.outcome(context_latency.analyse(_shipped(), Params(**params)))
    r = out.reading(DELTA_ID, "physics")
    assert r.verdict == verdict and why in r.reason
    sparse = next(h for h in out.headlines if h.name == "context_growth_sparse")
    assert sparse.verdict == verdict
    assert sparse.value == pytest.approx(params.get("batch", 1) * SPARSE_US, abs=1e-3)


@pytest.mark.parametrize(
    "params,registry,verdict,why",
    [
        ({}, None, "possible", "2.5 rows x 356 B"),  # 2.5 x (288 + 68) = 890 B
        # FP8: 2.5 rows x (528 + 132) B = 1650 B/token, not the claimed 890
        ({"kv_dtype": "fp8"}, None, "impossible", "give 1650 B/token, not 890"),
        ({}, 900.0, "impossible", "give 890 B/token, not 900"),  # the registry says 900
    ],
    ids=["fp4", "fp8", "registry-900"],
)
def test_every_physics_reading_of_the_bytes(params, registry, verdict, why):
    reg = _edited(KV_BYTES_ID, lambda c: c.update(value=registry)) if registry else None
    out = context_latency.outcome(context_latency.analyse(_shipped(), Params(**params), reg))
    r = out.reading(KV_BYTES_ID, "physics")
    assert r.verdict == verdict and why in r.reason
    h = next(h for h in out.headlines if h.name == "kv_bytes_per_token")
    assert h.verdict == verdict and h.kind == "modelled"


@pytest.mark.parametrize(
    "pct,verdict,implied",
    [
        # 100 x 0.55 / 7.5 = 7.33 ms to 100 x 0.65 / 6.5 = 10.0 ms, floor 0.3766 ms: 0.038x
        (7.0, "possible", "implied 7.33-10 ms"),
        # 100 x 0.55 / 170.5 = 0.3226 to 100 x 0.65 / 169.5 = 0.3835 ms: floor 0.982x of it,
        # under the bound (no margin)
        (170.0, "possible", "implied 0.323-0.383 ms"),
        # 100 x 0.65 / 299.5 = 0.2170 ms: the floor is 1.74x the longest implied step
        (300.0, "impossible", "implied 0.183-0.217 ms"),
    ],
    ids=["published", "near-the-floor", "below-the-floor"],
)
def test_every_physics_reading_of_the_percent(pct, verdict, implied):
    reg = _edited(DELTA_PCT_ID, lambda c: c.update(value=pct))
    out = context_latency.outcome(context_latency.analyse(_shipped(), registry=reg))
    r = out.reading(DELTA_PCT_ID, "physics")
    assert (r.verdict, r.margin) == (verdict, implied)
    h = next(h for h in out.headlines if h.name == "implied_latency_at_lo")
    assert h.verdict == verdict and h.value == pytest.approx(100 * 0.6 / pct, abs=1e-3)


@pytest.mark.parametrize("claim_id", [KV_BYTES_ID, DELTA_ID, DELTA_PCT_ID])
def test_no_published_evidence_yet(claim_id):
    out = context_latency.outcome(context_latency.analyse(_shipped()))
    assert out.reading(claim_id, "published").verdict == "none published"


def test_the_shipped_trace():
    """The headline values of the shipped trace (CPU, tiny model, 128..3,584 tokens)."""
    an = context_latency.analyse(_shipped())
    out = context_latency.outcome(an)
    by = {h.name: h.value for h in out.headlines}
    assert (an.lo, an.hi) == (LO, HI)
    assert out.parameters["lo"] == LO and out.parameters["hi"] == HI
    assert by["kv_bytes_per_token"] == 890
    assert by["context_growth_sparse"] == round(SPARSE_US, 3)
    assert by["context_growth_dense"] == round(774.43675, 1)
    assert by["implied_latency_at_lo"] == round(100 * 0.6 / 7, 3)  # 8.571 ms
    assert (by["kv_bytes_per_token_fp8"], by["kv_bytes_per_token_bf16"]) == (1650, 3200)
    # weights: 288,777,830,400 B routed / 4 + 8,418,201,600 B dense = 80,612,659,200 B per GPU;
    # (0.9 x 278e9 - 80.61e9) / 760.95e6 = 222.9 sequences of 855k tokens
    assert an.w_per_gpu == pytest.approx(80_612_659_200)
    assert by["sequences_per_gpu_at_hi"] == 222
    d = an.measured
    assert (d.pair, d.lo, d.hi) == ("longest-available", 128, 3584)
    assert not an.fit.resolved  # its slope's interval holds zero: not a finding
    values = an.values()
    assert (values["claim_kv"], values["claim_delta_ms"], values["claim_pct"]) == (890, 0.6, 7)
    assert "the CPU stand-in cannot resolve" in values["slope_sentence"]
    this_run = {r.claim_id: r.verdict for r in out.readings if r.reading == "this run"}
    assert this_run == {
        "context-latency.kv-bytes": "untested",
        "context-latency.delta": "untested",
        "context-latency.delta-pct": "untested",
    }


def test_weight_bytes_per_gpu_can_be_given():
    an = context_latency.analyse(_shipped(), Params(weight_bytes_per_gpu=100e9))
    assert an.w_per_gpu == 100e9
    assert an.at.loc[HI, "sequences_per_gpu"] == 197  # (250.2e9 - 100e9) / 760.95e6 = 197.4


def test_the_delta_comes_from_the_registry():
    """Change the published delta 0.6 -> 0.9 ms in a copy of the registry: the growth reading,
    the implied latency and the flips follow, and 0.6 ms is gone."""
    before = context_latency.outcome(context_latency.analyse(_shipped()))
    reg = _edited(DELTA_ID, lambda c: c.update(value=0.9))
    an = context_latency.analyse(_shipped(), registry=reg)
    out = context_latency.outcome(an)
    r = out.reading(DELTA_ID, "physics")
    # 15.45 us is 1.7 % of 0.9 ms; 900 / (15.45 + 5.96) = 42 to 900 / 15.44875 = 58.3 sequences
    assert "(1.7 % of 0.9 ms, 1 sequence)" in r.reason and "about 42 to 58.3 sequences" in r.reason
    by = {h.name: h for h in out.headlines}
    assert by["implied_latency_at_lo"].value == round(100 * 0.9 / 7, 3)  # 12.857 ms
    assert "0.6 ms" in _texts(before) and "0.6 ms" not in _texts(out)
    assert an.values()["claim_delta_ms"] == 0.9


def test_the_context_pair_comes_from_the_registry():
    """Change the claim's context span to 64,000 -> 512,000 tokens: the context reads, the
    capacity and the parameters follow, and 128,000 / 855,000 are gone."""

    def span(c):
        c["scope"]["context_tokens"] = {"low": 64_000, "high": 512_000}

    an = context_latency.analyse(_shipped(), registry=_edited(DELTA_ID, span))
    out = context_latency.outcome(an)
    by = {h.name: h for h in out.headlines}
    assert (out.parameters["lo"], out.parameters["hi"]) == (64_000, 512_000)
    # 448,000 tokens x 170 B = 76.16 MB / 8 TB/s = 9.52 us
    assert by["context_growth_sparse"].value == pytest.approx(9.52)
    assert "growing 64,000 -> 512,000 tokens" in by["context_growth_sparse"].definition
    texts = _texts(out)
    assert "128,000" not in texts and "855,000" not in texts


def test_values_hold_every_glued_name():
    """Every {glue:text}`name` of the notebook's prose is a value of the analysis."""
    import json
    import re

    nb = json.loads((paths.NOTEBOOKS / "context-latency.ipynb").read_text())
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    glued = set(re.findall(r"\{glue:text\}`([A-Za-z_0-9]+)", prose))
    assert glued and glued <= set(context_latency.analyse(_shipped()).values())
