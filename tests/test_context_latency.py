"""Decode latency against context length on a hand-made trace, the linear fit and its slope's
confidence interval, deltas, the context reads of a decode step against hand-computed numbers,
and the chapter (analyse, outcome): every verdict of every reading it can reach, and the
published figures read from the claims registry."""

from __future__ import annotations

import copy
import functools
import math

import pandas as pd
import pytest
from conftest import analyse_shipped, edited_registry, headline_rows, synthetic_run

from rackbook import paths
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.traces import concat, read_trace, validate
from rackbook.errors import InputError
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
    reg = edited_registry({KV_BYTES_ID: lambda c: c.update(value=registry)}) if registry else None
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
    reg = edited_registry({DELTA_PCT_ID: lambda c: c.update(value=pct)})
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
    reg = edited_registry({DELTA_ID: lambda c: c.update(value=0.9)})
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

    an = context_latency.analyse(_shipped(), registry=edited_registry({DELTA_ID: span}))
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


def test_the_shipped_traces_values_in_full():
    """Every value the prose glues on the shipped CPU trace with the notebook's defaults. Delta
    and slope are the golden headline file's (+0.3305 ms = +5.285 %, 0.22936 ms per 1k); by
    hand: 128,000 x 890 B = 113.92 MB and 855,000 x 890 = 760.95 MB per sequence; weights
    288.78 GB routed / 4 + 8.42 GB dense = 80.61 GB per GPU, (0.9 x 278 - 80.61) GB / 113.92 MB
    = 1,488.7 and / 760.95 MB = 222.9 sequences; 855,000 x 8,522 B = 7,286.31 MB dense; 15.45 us
    of 600 us = 2.57 %, 774.44 us = 129.07 %; 600 / 15.45 = 38.84 sequences, 600 / (15.45 +
    5.96) = 28.03; 7.333 ms implied low over the 0.3767 ms floor = 19.47x."""
    v = analyse_shipped("context-latency").values()
    approx = functools.partial(pytest.approx, rel=1e-12)  # the same arithmetic
    slope = (
        "The 95 % confidence interval of the slope (-0.378 to 0.837 ms per 1,000 tokens) "
        "includes zero: the CPU stand-in cannot resolve whether decode latency grows with "
        "context at these lengths, so its delta of +0.33 ms is noise, not a finding."
    )
    assert v == {
        "hardware": "2-core AMD EPYC, no GPU", "slope_sentence": slope, "kv_dtype": "fp4",
        "implied_ms": approx(60 / 7), "implied_low_ms": approx(55 / 7.5),
        "implied_high_ms": approx(65 / 6.5), "lo": LO, "hi": HI, "batch": 1,
        "step_floor_ms": approx(0.376662848), "weight_gpus": 4, "ctx_min": 128,
        "mem_frac": 0.9, "ctx_max": 3584, "slope_1k": approx(0.22935890298223582),
        "r2": approx(0.215325355605402), "seq_explain": approx(600 / 15.44875),
        "kv_bytes": 890, "scan_b": 170.0, "dense_b": 8522.0, "claim_kv": 890,
        "claim_delta_ms": 0.6, "claim_pct": 7.0, "window": 128, "owning_layers": "2, 8, 14, 20",
        "n_layers": 40, "backbone_b": 552.0, "rows_per_token": 2.5, "kv_row": 288.0,
        "idx_row": 68.0, "kv_fp8": 1650, "kv_bf16": 3200,
        "weights_total_gb": approx(297.196032), "weights_routed_gb": approx(288.7778304),
        "weights_dense_gb": approx(8.4182016), "w_per_gpu_gb": approx(80.6126592),
        "hbm_gb": 278.0, "seq_lo_mb": approx(113.92), "seq_hi_mb": approx(760.95),
        "fit_lo": 1488, "fit_hi": 222, "sparse_lo_mb": approx(31.819776),
        "sparse_hi_mb": approx(155.409776), "dense_hi_mb": approx(7286.31), "n_points": 6,
        "sparse_us": approx(SPARSE_US), "dense_us": approx(774.43675),
        "sparse_share_pct": approx(SPARSE_US / 6), "dense_share_pct": approx(774.43675 / 6),
        "compute_growth_us": approx(5.955584),
        "seq_explain_both": approx(600 / (SPARSE_US + 5.955584)), "hbm_tbs": 8.0,
        "implied_x_floor": approx(55 / 7.5 / 0.376662848), "topk": 512,
        "batch_text": "1 sequence", "itl_median_us": approx(5935.36150017826),
    }  # fmt: skip
    # the top-k rows a step reads are fixed: sparse at 855k minus at 128k is the scan's growth
    assert v["sparse_hi_mb"] - v["sparse_lo_mb"] == pytest.approx(727_000 * 170 / 1e6)


def test_the_shipped_traces_headlines_in_full():
    """Name, value, unit, kind, verdict and claim of every headline (the golden file's values),
    with every definition and reason word for word."""
    out = context_latency.outcome(analyse_shipped("context-latency"))
    got = headline_rows(out.headlines)
    nc = "not comparable"
    assert got == [
        ("decode_delta", 0.3305, "ms", "measured", "untested", DELTA_ID),
        ("decode_delta_pct", 5.285, "%", "measured", "untested", DELTA_PCT_ID),
        ("kv_bytes_per_token", 890, "B/token", "modelled", "possible", KV_BYTES_ID),
        ("context_growth_sparse", 15.449, "µs", "modelled", "possible", DELTA_ID),
        ("context_growth_dense", 774.4, "µs", "modelled", nc, None),
        ("implied_latency_at_lo", 8.571, "ms", "modelled", "possible", DELTA_PCT_ID),
        ("decode_slope", 0.22936, "ms per 1k tokens", "measured", nc, None),
        ("sequences_per_gpu_at_hi", 222, "sequences", "modelled", nc, None),
        ("kv_bytes_per_token_fp8", 1650, "B/token", "modelled", nc, None),
        ("kv_bytes_per_token_bf16", 3200, "B/token", "modelled", nc, None),
    ]
    h = {x.name: x for x in out.headlines}
    definitions = {
        "decode_delta": "median TPOT at 3,584 minus at 128 tokens of context (longest-available "
        "pair)",
        "decode_delta_pct": "decode_delta over median TPOT at 128 tokens",
        "kv_bytes_per_token": "global KV bytes per token at fp4, derived from the row's "
        "dimensions and storage format",
        "context_growth_sparse": "extra context reads per decode step of 1 sequence growing "
        "128,000 -> 855,000 tokens with sparse attention, at 1 x GB300 HBM bandwidth",
        "context_growth_dense": "the same with every consuming layer reading every row (dense "
        "bound)",
        "implied_latency_at_lo": "100 x claimed delta / claimed percent: decode latency at "
        "128,000 tokens (7.33 to 10 ms over the rounding)",
        "decode_slope": "least-squares slope of median TPOT over 6 contexts 128..3,584 tokens "
        "(95 % CI -0.378 to 0.837)",
        "sequences_per_gpu_at_hi": "sequences of 855,000 tokens whose fp4 KV fits on one GB300 "
        "after 80.6 GB of weights, at 0.9 of HBM",
        "kv_bytes_per_token_fp8": "global KV bytes per token with the same layout stored at fp8",
        "kv_bytes_per_token_bf16": "global KV bytes per token with the same layout stored at bf16",
    }
    assert {n: x.definition for n, x in h.items()} == definitions
    untested = (
        "recorded on 2-core AMD EPYC, no GPU ({} from 128 to 3,584 tokens, a slope not resolved "
        "from zero); the claim needs DeepSeek-V4.1-Flash on B300/GB300 at 128k and 855k tokens "
        "of context"
    )
    others = "the claim is for the FP4 cache; other dtypes for scale"
    assert {n: x.reason for n, x in h.items() if n != "context_growth_sparse"} == {
        "decode_delta": untested.format("+0.33 ms"),
        "decode_delta_pct": untested.format("+5.29 %"),
        "kv_bytes_per_token": "the catalog's dimensions and fp4 formats give 890 B/token: 2.5 "
        "rows x 356 B",
        "context_growth_dense": "an upper reading of the reads, not what sparse attention does",
        "implied_latency_at_lo": "the two figures imply 7.33 to 10 ms per step at 128,000 "
        "tokens; one sequence on 4 GB300s cannot step faster than 0.377 ms",
        "decode_slope": "the write-up gives a delta between two lengths, not a slope",
        "sequences_per_gpu_at_hi": "the write-up gives no capacity figure",
        "kv_bytes_per_token_fp8": others,
        "kv_bytes_per_token_bf16": others,
    }
    measured = [x for x in out.headlines if x.kind == "measured"]
    assert {x.hardware for x in measured} == {"2-core AMD EPYC, no GPU"}
    assert all(len(x.trace_ids) == 1 for x in measured)
    assert {x.hardware for x in out.headlines if x.kind == "modelled"} == {None}


def test_the_shipped_traces_flips_and_growth_reason_word_for_word():
    """The flips: 15.45 us x 1 sequence; 600 / 15.45 = 38.8 -> 39 sequences; the 0.3767 ms
    floor is 100 x 0.6 / 0.3767 = 159 % of the same delta."""
    out = context_latency.outcome(analyse_shipped("context-latency"))
    assert out.flips == [
        "physics, 890 B/token: a layout whose rows or formats give another byte count (FP8 "
        "rows give 1650 B/token)",
        "physics, +0.6 ms: impossible if the delta were below 15.4 µs (1 sequence per GPU), or "
        "the claim's batch were above 39 sequences per GPU (their scans alone would exceed it)",
        "physics, +7 %: impossible if the implied latency at 128,000 tokens were below 0.377 ms "
        "(the same delta quoted as more than 159 %)",
        "this run: a trace of DeepSeek-V4.1-Flash on B300/GB300 at 128,000 and 855,000 tokens "
        "reads consistent within +/-0.05 ms of the claim, inconsistent outside",
    ]
    r = out.reading(DELTA_ID, "physics")
    assert (r.verdict, r.margin) == ("possible", "floor 2.6 % of it")
    assert r.reason == (
        "sparse reads add at least 15.4 µs (2.6 % of 0.6 ms, 1 sequence) and the longer index "
        "scan's compute at least 5.96 µs more: 21.4 µs of the 600 µs even with none of it "
        "overlapped; reading every row would add 774 µs. The rest is not this sequence's "
        "indexer at peak: about 28 to 38.8 sequences per GPU growing together, kernels well "
        "below peak, or work the bounds leave out"
    )
    h = next(x for x in out.headlines if x.name == "context_growth_sparse")
    assert h.reason == r.reason


def test_the_shipped_traces_readings_as_data():
    """Per claim: physics, published, this run, in that order; verdicts and margins; the
    kernels' attainable step of the golden file (1.1657 ms at 128k, +98.9 us by 855k: the
    claimed 0.6 ms is 6.06x that; the implied 8.571 ms step is 7.35x the 1.1657 ms)."""
    out = context_latency.outcome(analyse_shipped("context-latency"))
    got = [(r.claim_id, r.reading, r.verdict, r.margin) for r in out.readings]
    none = "none published"
    assert got == [
        (KV_BYTES_ID, "physics", "possible", "890 B/token derived"),
        (KV_BYTES_ID, "published", none,
         "closest published analogue (never decides): 9.62 GiB per sequence"),
        (KV_BYTES_ID, "this run", "untested", "-"),
        (DELTA_ID, "physics", "possible", "floor 2.6 % of it"),
        (DELTA_ID, "published", none, "-"),
        (DELTA_ID, "this run", "untested", "-"),
        (DELTA_PCT_ID, "physics", "possible", "implied 7.33-10 ms"),
        (DELTA_PCT_ID, "published", none, "-"),
        (DELTA_PCT_ID, "this run", "untested", "-"),
    ]  # fmt: skip
    kv = out.reading(KV_BYTES_ID, "physics")
    assert kv.derived == {
        "value": 890, "unit": "B/token", "from": "the model card's dimensions and FP4 formats",
        "exact": True, "how": "2.5 rows x 356 B",
    }  # fmt: skip
    assert out.reading(KV_BYTES_ID, "this run").reason == (
        "recorded on 2-core AMD EPYC, no GPU (a latency trace); the claim needs vLLM's KV bytes "
        "per token of DeepSeek-V4.1-Flash on B300/GB300"
    )
    for r in out.readings:
        if r.reading == "published":
            assert r.reason.startswith(context_latency.READING_NOTES[r.claim_id] + "; basis: ")
    growth = out.reading(DELTA_ID, "physics").attainable
    step, added = 0.0011656822224704261, 9.894548573752271e-05
    assert growth["step_lo_s"] == pytest.approx(step, rel=1e-9)
    assert growth["added_s"] == pytest.approx(added, rel=1e-9)
    assert growth["ratio"] == pytest.approx(0.6e-3 / added, rel=1e-9)  # 6.06x
    assert growth["tok_s_per_gpu"] == pytest.approx(1 / step / 4, rel=1e-9)  # 214.47
    assert growth["brief"] == "6.1x what measured kernels add for one sequence"
    where = "attention tensor-parallel + experts expert-parallel on 4 GPUs"
    assert (growth["deployment_name"], growth["binding"]) == (where, "attention")
    assert growth["deployment"] == f"{where} (assumed: 1 sequence on 4 GPUs)"
    assert growth["calibration"].startswith("NVIDIA H200 (published measurement, ")
    assert growth["text"] == (
        "measured kernels step 1 sequence on 4 GB300 in 1.17 ms at 128,000 tokens and add 99 µs "
        f"by 855,000: the claimed 0.6 ms is 6.1x that ({where} (assumed: 1 sequence on 4 GPUs); "
        f"{growth['calibration']})"
    )
    assert set(growth) == {
        "tok_s_per_gpu", "ratio", "deployment", "deployment_name", "calibration", "binding",
        "text", "added_s", "step_lo_s", "brief",
    }  # fmt: skip
    implied = out.reading(DELTA_PCT_ID, "physics").attainable
    assert implied["ratio"] == pytest.approx(60 / 7 * 1e-3 / step, rel=1e-9)  # 7.35x
    brief = "the implied step is 7.4x what measured kernels take for one sequence"
    assert implied["brief"] == brief
    assert implied["text"] == (
        "the two figures imply a step of 8.57 ms at 128,000 tokens, 7.4x the 1.17 ms measured "
        f"kernels take for one sequence ({growth['deployment']}; {growth['calibration']})"
    )
    same = ("step_lo_s", "added_s", "tok_s_per_gpu", "deployment", "deployment_name", "binding")
    assert all(implied[k] == growth[k] for k in same)


def test_latency_table_in_full(tmp_path):
    """Three good requests of 5 tokens at TPOT 10, 20 and 60 ms (mean 30, median 20) and a
    failed one (left out). Their gaps [1, 1, 1, 37], [2, 2, 2, 74], [60] x 4 ms pool to a mean
    of 360 / 12 = 30 ms and a median of (2 + 37) / 2 = 19.5 ms."""
    tpots, gaps = [0.01, 0.02, 0.06, 0.5], [[1, 1, 1, 37], [2, 2, 2, 74], [60] * 4, [500] * 4]
    data = {
        "duration": 10.0, "input_lens": [10] * 4, "output_lens": [5] * 4, "ttfts": [0.1] * 4,
        "latencies": [0.1 + 4 * t for t in tpots],
        "itls": [[g / 1000 for g in row] for row in gaps], "start_times": [0.0] * 4,
        "errors": ["", "", "", "boom"],
    }  # fmt: skip
    labels = {"config": "A", "batch_size": "8", "point_id": "p", "context_tokens": "2048"}
    t = vllm_bench_frames(tmp_path / "p.json", {**labels, "engine": "e"}, data=data)
    tab = context_latency.decode_latency_by_context(validate(concat([t], synthetic_run())))
    assert list(tab.columns) == [
        "point_id", "engine", "config", "batch", "context_tokens", "requests", "mean_tpot_ms",
        "median_tpot_ms", "mean_itl_ms", "median_itl_ms",
    ]  # fmt: skip
    assert [tuple(r) for r in tab.itertuples(index=False)] == [
        ("p", "e", "A", 8, 2048, 3, pytest.approx(30.0), pytest.approx(20.0),
         pytest.approx(30.0), pytest.approx(19.5)),
    ]  # fmt: skip
    assert str(tab["batch"].dtype) == "Int64"


def test_latency_table_sorts_and_empties(tmp_path):
    """Rows sort by engine, config, batch, then context; a trace without context lengths gives
    an empty table, which the main series refuses by name."""
    frames = []
    for cfg, batch, ctx in [("B", 1, 100), ("A", 2, 100), ("A", 1, 300), ("A", 1, 200)]:
        labels = {"config": cfg, "batch_size": str(batch), "point_id": f"{cfg}{batch}-{ctx}",
                  "context_tokens": str(ctx)}  # fmt: skip
        frames.append(vllm_bench_frames(tmp_path / f"{cfg}{batch}{ctx}.json", labels,
                                        data=_point(0.01)))  # fmt: skip
    tab = context_latency.decode_latency_by_context(validate(concat(frames, synthetic_run())))
    assert tab["point_id"].tolist() == ["A1-200", "A1-300", "A2-100", "B1-100"]
    assert tab.index.tolist() == [0, 1, 2, 3]  # numbered afresh in the sorted order
    no_ctx = vllm_bench_frames(tmp_path / "n.json", {"point_id": "n"}, data=_point(0.01))
    empty = context_latency.decode_latency_by_context(validate(concat([no_ctx], synthetic_run())))
    assert empty.empty and list(empty.columns) == []
    with pytest.raises(InputError) as e:
        context_latency.main_series(empty)
    assert str(e.value) == "-: table: no point with context_tokens and median_tpot_ms"


def _refusal(fn, *args):
    with pytest.raises(InputError) as e:
        fn(*args)
    return str(e.value)


def test_one_series_refusals_word_for_word():
    """Several series, a context length twice, fewer than two lengths with a latency (a NaN
    row is not one), each refused with its file, field and problem."""
    two = pd.DataFrame({"engine": ["e", "e"], "config": ["A", "B"], "batch": [1, 1],
                        "context_tokens": [1000, 2000], "median_tpot_ms": [1.0, 2.0]})  # fmt: skip
    assert _refusal(context_latency.fit_linear, two) == (
        "-: table: holds several series (engine, config, batch); select one before fitting"
    )
    only_config = two.drop(columns=["engine", "batch"])
    assert _refusal(context_latency.fit_linear, only_config) == (
        "-: table: holds several series (config); select one before fitting"
    )
    same = _table([12, 14, 16]).assign(context_tokens=[1000, 2000, 2000])
    assert _refusal(context_latency.delta, same, 1000, 2000) == (
        "-: table: two rows share a context length; select one series"
    )
    assert _refusal(context_latency.fit_linear, _table([12, float("nan")])) == (
        "-: table: needs two context lengths, has 1"
    )
    assert _refusal(context_latency.fit_linear, _table([])) == (
        "-: table: needs two context lengths, has 0"
    )
    # a NaN row at a length shared with a valued one is dropped first: no duplicate
    nan_twin = _table([12, 14, float("nan")]).assign(context_tokens=[1000, 2000, 2000])
    assert context_latency.fit_linear(nan_twin).n == 2
    # one series with its keys (repeated values) fits, in any row order
    one = pd.DataFrame({"engine": ["e"] * 3, "config": ["A"] * 3, "batch": [1] * 3,
                        "context_tokens": [3000, 1000, 2000],
                        "median_tpot_ms": [16.0, 12.0, 14.0]})  # fmt: skip
    f = context_latency.fit_linear(one)
    assert (f.n, f.context_min, f.context_max) == (3, 1000, 3000)
    assert (f.intercept_ms, f.slope_per_1k) == (pytest.approx(10.0), pytest.approx(2.0))


def test_a_flat_line_fits_exactly_and_is_not_resolved():
    """y = 5 ms at 1, 2, 3k tokens: slope 0, SS_tot 0 so R^2 is 1 by definition; the CI
    collapses onto 0, and a lower end of exactly 0 is not above zero."""
    f = context_latency.fit_linear(_table([5.0, 5.0, 5.0]))
    assert f.r2 == 1.0 and f.slope_per_1k == pytest.approx(0.0, abs=1e-12)
    assert f.slope_ci_per_1k == pytest.approx((0.0, 0.0), abs=1e-9)
    assert context_latency.LinearFit(5, 0, 1, 3, 1, 3, (0.0, 1.0)).resolved is False
    assert context_latency.LinearFit(5, 0, 1, 3, 1, 3, (1e-9, 1.0)).resolved is True
    two = context_latency.fit_linear(_table([12, 14]))  # two points: an exact line, R^2 = 1
    assert (two.r2, two.n, two.context_min, two.context_max) == (1.0, 2, 1000, 2000)


def test_student_t_quantiles_at_the_table_s_ends():
    t = context_latency.t_975
    got = [t(d) for d in (1, 2, 3, 29, 30, 31, 1000)]
    assert got == [12.706, 4.303, 3.182, 2.045, 2.042, 1.96, 1.96]
    # 31 points: 29 degrees of freedom; x = 1..31k, y = 2 x (ms per 1k) + alternating +/-1:
    # the CI's half-width is t(29) x se
    ys = [2.0 * (i + 1) + (1 if i % 2 else -1) for i in range(31)]
    f = context_latency.fit_linear(_table(ys))
    x = [1000.0 * (i + 1) for i in range(31)]
    mx = sum(x) / 31
    sxx = sum((xi - mx) ** 2 for xi in x)
    res = [y - (f.intercept_ms + f.slope_ms_per_token * xi) for xi, y in zip(x, ys, strict=True)]
    se = math.sqrt(sum(r * r for r in res) / 29 / sxx) * 1000
    lo, hi = f.slope_ci_per_1k
    assert (hi - lo) / 2 == pytest.approx(2.045 * se, rel=1e-9)


def test_delta_picks_the_requested_pair_or_the_longest():
    tab = _table([12.0, 14.0, 18.0])  # 1, 2, 3k tokens
    d = context_latency.delta(tab, 1000, 2000)
    assert d == context_latency.Delta(1000, 2000, 12.0, 14.0, 2.0, pytest.approx(100 / 6),
                                      "requested")  # fmt: skip
    # one end missing is enough to fall back to the extremes, either end
    for lo, hi in [(1000, 5000), (500, 2000)]:
        d = context_latency.delta(tab, lo, hi)
        assert (d.lo, d.hi, d.delta_ms, d.pair) == (1000, 3000, 6.0, "longest-available")
        assert d.delta_pct == pytest.approx(50.0)
    zero = context_latency.delta(_table([0.0, 3.0]), 1000, 2000)
    assert zero.delta_ms == 3.0 and math.isnan(zero.delta_pct)  # no percent of zero ms


def test_memory_by_context_in_full():
    """At the defaults (FP4, all of HBM): (278 - 100) GB free / (128,000 x 890 B = 113.92 MB)
    = 1,562.5 and / 760.95 MB = 233.9 sequences. BF16 (3,200 B/token) at half of HBM: (139 -
    100) GB / 3.2 MB = 12,187.5 for 1,000 tokens."""
    m = context_latency.memory_by_context(
        "deepseek-v4.1-flash", "gb300", (LO, HI), weight_bytes_per_gpu=100e9
    )
    assert m.drop(columns="formula").to_dict("list") == {
        "context_tokens": [LO, HI], "kv_bytes_per_sequence": [113_920_000, 760_950_000],
        "sequences_per_gpu": [1562, 233], "free_bytes": [178e9, 178e9],
    }  # fmt: skip
    assert m["formula"].tolist() == [
        "(278 GB HBM - 100 GB weights per GPU in HBM) / 113.9 MB per sequence of 128,000 tokens "
        "on average = 1,562 sequences per GPU",
        "(278 GB HBM - 100 GB weights per GPU in HBM) / 761 MB per sequence of 855,000 tokens on "
        "average = 233 sequences per GPU",
    ]
    half = context_latency.memory_by_context(
        "deepseek-v4.1-flash", "gb300", [1000.0], "bf16", weight_bytes_per_gpu=100e9,
        memory_fraction=0.5,
    )  # fmt: skip
    assert half.drop(columns="formula").to_dict("list") == {
        "context_tokens": [1000], "kv_bytes_per_sequence": [3_200_000],
        "sequences_per_gpu": [12187], "free_bytes": [39e9],
    }  # fmt: skip
    assert half["context_tokens"].dtype.kind == "i"  # a float length is read as whole tokens


def test_the_shipped_traces_tables_and_pair_note():
    """Per dtype, 2.5 rows per token of (KV row + index key) bytes: 2.5 x (288 + 68) = 890,
    2.5 x (528 + 132) = 1,650, 2.5 x (1,024 + 256) = 3,200. Dense reads 128,000 x 8,522 B =
    1,090.816 MB and 855,000 x 8,522 = 7,286.31 MB."""
    an = analyse_shipped("context-latency")
    assert an.kv_table.to_dict("list") == {
        "kv_dtype": ["fp4", "fp8", "bf16"], "rows_per_token": [2.5, 2.5, 2.5],
        "kv_row_bytes": [288.0, 528.0, 1024.0], "indexer_row_bytes": [68.0, 132.0, 256.0],
        "bytes_per_token": [890, 1650, 3200],
    }  # fmt: skip
    reads = an.reads_table
    assert list(reads.columns) == ["context_tokens", "sparse_read_mb", "dense_read_mb"]
    assert reads["context_tokens"].tolist() == [LO, HI]
    assert reads["dense_read_mb"].tolist() == pytest.approx([1090.816, 7286.31])
    assert reads["sparse_read_mb"].tolist() == pytest.approx([31.819776, 155.409776])
    assert an.pair_note == (
        "the longest pair the trace has (128 and 3,584 tokens), because it does not reach "
        "128,000 and 855,000"
    )
    assert context_latency.outcome(an).parameters == {
        "model_id": "deepseek-v4.1-flash", "gpu_id": "gb300", "kv_dtype": "fp4", "lo": LO,
        "hi": HI, "batch": 1, "n_gpus": 1, "weight_gpus": 4,
        "weight_bytes_per_gpu": 80_612_659_200.0, "memory_fraction": 0.9,
    }  # fmt: skip


def test_a_requested_pair_and_a_resolved_slope_in_words(tmp_path):
    """GB300 at 1,000, 2,000 and 4,000 tokens of an exact line (10 ms + 2 ms per 1k): the
    requested pair when given, and a slope whose interval (2 to 2) excludes zero."""
    tpot = {c: 10 + 0.002 * c for c in (1000, 2000, 4000)}
    t = _chapter_trace(tmp_path, tpot, GB300_RUN)
    an = context_latency.analyse(t, Params(lo=1000, hi=4000))
    assert an.pair_note == "the requested pair"
    assert an.slope_sentence == (
        "The 95 % confidence interval of the slope, 2 to 2 ms per 1,000 tokens, excludes zero: "
        "on this trace decode latency grows by about 2 ms per 1,000 tokens."
    )
    r = context_latency.outcome(an).reading(DELTA_ID, "this run")
    assert r.reason == "+6 ms from 1,000 to 4,000 tokens, claim +0.6 ms (tolerance 0.05)"
    assert (r.verdict, r.margin) == ("inconsistent", "+5.4 ms")
    # only lo given: hi is the registry's 855,000, which the trace lacks
    an = context_latency.analyse(t, Params(lo=2000))
    assert (an.lo, an.hi) == (2000, HI) and an.measured.pair == "longest-available"
    assert an.pair_note == (
        "the longest pair the trace has (1,000 and 4,000 tokens), because it does not reach "
        "2,000 and 855,000"
    )


def test_an_unresolved_slope_on_a_gpu_and_with_two_points(tmp_path):
    """A GPU trace whose slope is not resolved names "this trace", not the CPU stand-in; two
    context lengths have no interval at all."""
    noisy = {1000: 12.0, 2000: 11.0, 3000: 13.0}  # slope 0.5 ms/1k, CI 0.5 +/- 11.0
    an = context_latency.analyse(_chapter_trace(tmp_path, noisy, GB300_RUN))
    assert an.slope_sentence == (
        "The 95 % confidence interval of the slope (-10.5 to 11.5 ms per 1,000 tokens) includes "
        "zero: this trace cannot resolve whether decode latency grows with context at these "
        "lengths, so its delta of +1 ms is noise, not a finding."
    )
    assert "a slope not resolved from zero" in an.readings[-1].reason  # the percent's
    two = context_latency.analyse(_chapter_trace(tmp_path, {1000: 12.0, 2000: 14.0}))
    assert two.slope_sentence == (
        "The 95 % confidence interval of the slope (unknown with 2 points) includes zero: the "
        "CPU stand-in cannot resolve whether decode latency grows with context at these "
        "lengths, so its delta of +2 ms is noise, not a finding."
    )
    r = context_latency.outcome(two).reading(DELTA_ID, "this run")
    assert "slope not resolved" not in r.reason  # no interval: nothing to say it holds zero


def test_a_single_context_trace_is_shown_not_fitted(tmp_path):
    """One context length: NaN slope and delta, the pair named "single context", the readings
    untested with the reason, and the point's latency as the fit's intercept."""
    an = context_latency.analyse(_chapter_trace(tmp_path, {2048: 12.5}, GB300_RUN))
    f, d = an.fit, an.measured
    ms = pytest.approx(12.5)
    assert (f.intercept_ms, f.n, f.context_min, f.context_max) == (ms, 1, 2048, 2048)
    assert math.isnan(f.slope_ms_per_token) and math.isnan(f.r2) and not f.resolved
    assert (d.lo, d.hi, d.lo_ms, d.hi_ms, d.pair) == (2048, 2048, ms, ms, "single context")
    assert math.isnan(d.delta_ms) and math.isnan(d.delta_pct)
    out = context_latency.outcome(an)
    r = out.reading(DELTA_ID, "this run")
    assert (r.verdict, r.reason) == (
        "untested",
        "one context length (2,048 tokens): no delta; record at least two (single context): "
        "lacks the claimed lengths",
    )
    assert an.values()["n_points"] == 1


def test_the_flips_at_two_sequences_per_gpu():
    """Two sequences: the delta's floor is 2 x 15.45 = 30.9 us; the batch that would exceed
    the claim stays 600 / 15.45 = 38.8 -> 39 sequences (per sequence, whatever the batch)."""
    an = context_latency.analyse(_shipped(), Params(batch=2))
    assert context_latency.outcome(an).flips[1] == (
        "physics, +0.6 ms: impossible if the delta were below 30.9 µs (2 sequences per GPU), or "
        "the claim's batch were above 39 sequences per GPU (their scans alone would exceed it)"
    )


def test_two_gpus_share_the_reads_and_the_index_scan():
    """One sequence on 2 x GB300: the reads take 15.44875 / 2 = 7.724375 us, the index scan's
    compute 5.955584 / 2 = 2.977792 us; 600 / 7.72 = 77.7 and 600 / 10.70 = 56.1 sequences."""
    an = context_latency.analyse(_shipped(), Params(n_gpus=2))
    v = an.values()
    got = [v[k] for k in ("sparse_us", "compute_growth_us", "seq_explain", "seq_explain_both")]
    assert got == pytest.approx([SPARSE_US / 2, 5.955584 / 2, 1200 / SPARSE_US,
                                 1200 / (SPARSE_US + 5.955584)], rel=1e-12)  # fmt: skip
    out = context_latency.outcome(an)
    h = next(x for x in out.headlines if x.name == "context_growth_sparse")
    assert h.definition.endswith("with sparse attention, at 2 x GB300 HBM bandwidth")
    assert out.parameters["n_gpus"] == 2


def test_the_memory_grid_of_every_dtype():
    """64 lengths from 1,048,576 / 64 = 16,384 to the model's 1,048,576 tokens in steps of
    16,384, plus 128,000 and 855,000: 66 rows per dtype, with (0.9 x 278 - 80.61) = 169.59 GB
    free. At 855,000 tokens: 760.95 MB (FP4, 222 sequences), 855,000 x 1,650 = 1,410.75 MB
    (FP8, 120.2) and 855,000 x 3,200 = 2,736 MB (BF16, 61.98)."""
    an = analyse_shipped("context-latency")
    assert list(an.memory) == ["fp4", "fp8", "bf16"]
    grid = sorted([16_384 * i for i in range(1, 65)] + [LO, HI])
    for dt, (per_seq, fits) in {
        "fp4": (760_950_000, 222), "fp8": (1_410_750_000, 120), "bf16": (2_736_000_000, 61)
    }.items():  # fmt: skip
        t = an.memory[dt]
        assert t["context_tokens"].tolist() == grid
        assert t["free_bytes"].tolist() == pytest.approx([169_587_340_800] * 66)
        row = t.set_index("context_tokens").loc[HI]
        assert (row["kv_bytes_per_sequence"], row["sequences_per_gpu"]) == (per_seq, fits)
    assert an.at.index.tolist() == grid and an.at.loc[HI, "sequences_per_gpu"] == 222


@pytest.mark.parametrize(
    "params,expected,step_ms",
    [
        # two sequences: reads 2 x 15.44875 = 30.8975 us, dense 2 x 774.43675, the index scan's
        # compute 2 x 5.955584 us; the kernels step both in 1.428 ms
        ({"batch": 2}, {"sparse_us": 30.8975, "dense_us": 1548.8735,
                        "compute_growth_us": 11.911168, "scan_b": 170.0, "dense_b": 8522.0},
         1.4281040050225092),
        # FP8 rows: scan 2.5 x 132 = 330 B/token (727,000 x 330 B / 8 TB/s = 29.98875 us), dense
        # 29 x 528 + 330 = 15,642 B/token (1,421.46675 us); capacity 855,000 x 1,650 B
        ({"kv_dtype": "fp8"}, {"sparse_us": 29.98875, "dense_us": 1421.46675,
                               "compute_growth_us": 5.955584, "scan_b": 330.0,
                               "dense_b": 15642.0, "kv_bytes": 1650, "seq_hi_mb": 1410.75,
                               "fit_hi": 120}, 1.1656822224704261),
    ],
    ids=["batch-2", "fp8"],
)  # fmt: skip
def test_the_batch_and_the_dtype_reach_every_bound(params, expected, step_ms):
    an = context_latency.analyse(_shipped(), Params(**params))
    v = an.values()
    assert {k: v[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    g = an.growth.reading.attainable
    assert g["step_lo_s"] == pytest.approx(step_ms / 1000, rel=1e-12)


def test_a_small_spread_still_has_its_r2():
    """y = 1.0, 1.2, 1.1 ms at 1, 2, 3k tokens: SS_tot = 0.02 (under 1, above 0), slope 0.05
    ms per 1k, residuals -0.05, 0.1, -0.05: SS 0.015, R^2 = 1 - 0.015 / 0.02 = 0.25."""
    f = context_latency.fit_linear(_table([1.0, 1.2, 1.1]))
    assert f.slope_per_1k == pytest.approx(0.05)
    assert f.r2 == pytest.approx(0.25)
