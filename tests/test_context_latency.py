"""Decode latency against context length on a hand-made trace, the linear fit, deltas, the
KV-bandwidth model against hand-computed numbers, and the chapter (analyse, outcome): every
verdict it can reach, and the published figures read from the claims registry."""

from __future__ import annotations

import copy
import math

import pytest
from conftest import synthetic_run

from rackbook import paths
from rackbook.core.importers import vllm_bench_frames
from rackbook.core.traces import concat, read_trace, validate
from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims, parse_claims
from rackbook.results import context_latency
from rackbook.results.context_latency import Params

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
    d = context_latency.delta(tab, 1000, 4000)
    assert (d.delta_ms, d.delta_pct) == pytest.approx((6.0, 50.0))  # 18 - 12 = 6 ms, 6 / 12
    assert d.pair == "requested" and d.source == "measured"
    d = context_latency.delta(tab, LO, HI)  # 128k / 855k not in the trace: the longest pair
    assert d.pair == "longest-available" and (d.lo, d.hi) == (1000, 4000)
    d = context_latency.delta(f, LO, HI)  # 10 + 2 x 128 = 266 ms; 10 + 2 x 855 = 1720 ms
    assert d.lo_ms == pytest.approx(266.0) and d.hi_ms == pytest.approx(1720.0)
    assert d.delta_ms == pytest.approx(1454.0) and d.pair == "extrapolated"
    assert context_latency.delta(f, 1000, 3000).pair == "requested"


def test_fit_refuses_mixed_series(tmp_path):
    tab = context_latency.decode_latency_by_context(_trace(tmp_path, configs=("A", "B")))
    with pytest.raises(InputError, match="several series"):
        context_latency.fit_linear(tab)
    one = tab[tab["config"] == "B"]
    assert context_latency.fit_linear(one).slope_per_1k == pytest.approx(2.0)
    with pytest.raises(InputError, match="two context lengths"):
        context_latency.fit_linear(one.iloc[:1])


def test_kv_bandwidth_model_128k_to_855k():
    k = context_latency.kv_bandwidth_model("deepseek-v4.1-flash", "b300", LO, HI)
    # (855,000 - 128,000) x 890 B = 647.03 MB; / 8 TB/s = 80.88 us
    assert k.extra_bytes == 647_030_000 and k.kv_bytes_per_token == 890
    assert k.extra_s == pytest.approx(80.87875e-6)
    assert k.bytes_per_sequence_hi == 760_950_000
    k2 = context_latency.kv_bandwidth_model(
        "deepseek-v4.1-flash", "b300", LO, HI, batch=2, n_gpus=2
    )
    assert k2.extra_bytes == 2 * 647_030_000 and k2.extra_s == pytest.approx(k.extra_s)
    with pytest.raises(InputError, match="hi"):
        context_latency.kv_bandwidth_model("deepseek-v4.1-flash", "b300", lo=10, hi=10)


def test_memory_by_context():
    m = context_latency.memory_by_context(
        "deepseek-v4.1-flash", "b300", (LO, HI), weight_bytes_per_gpu=100e9
    ).set_index("context_tokens")
    assert m.loc[855_000, "kv_bytes_per_sequence"] == 760_950_000
    assert m.loc[855_000, "sequences_per_gpu"] == 247  # floor(188e9 / 760.95e6)
    assert m.loc[128_000, "sequences_per_gpu"] == 1650  # floor(188e9 / 113.92e6)


# --------------------------------------------------------------------------------------------
# The chapter: analyse and outcome, every verdict, and the published figures from the registry
#
# The registry's figures (data/claims.yaml): 890 B/token; +0.6 ms (tolerance 0.05 ms) and +7 %
# (tolerance 0.5 %) from 128,000 to 855,000 tokens. The KV-read floor of one sequence growing
# 128k -> 855k at FP4 on one B300: 727,000 x 890 B = 647.03 MB / 8 TB/s = 80.87875 us.

FLOOR_MS = 0.08087875
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
    r.update(run or {})
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
    """Every headline's definition and reason, and the result's reason, as one string."""
    return " | ".join([out.reason] + [h.definition + " | " + h.reason for h in out.headlines])


@pytest.mark.parametrize(
    "run,tpot_ms,params,v_ms,v_pct,why",
    [
        # a CPU stand-in: whatever the numbers, it cannot test the claim
        (None, {LO: 8.57, HI: 9.15}, {}, "not reproduced", "not reproduced", "on Blackwell"),
        # GB300 but short contexts: the longest pair (1,000 -> 4,000) stands in for 128k -> 855k
        (GB300_RUN, {1000: 8.57, 4000: 9.15}, {}, "not reproduced", "not reproduced", "lacks"),
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
    ids=["cpu", "short-contexts", "within", "outside", "ms-within-pct-outside", "given-pair"],
)
def test_every_measured_verdict(tmp_path, run, tpot_ms, params, v_ms, v_pct, why):
    an = context_latency.analyse(_chapter_trace(tmp_path, tpot_ms, run), Params(**params))
    assert (an.v_delta, an.v_pct, an.verdict) == (v_ms, v_pct, v_ms)
    assert why in an.r_delta
    out = context_latency.outcome(an)
    by = {h.name: h for h in out.headlines}
    assert out.verdict == v_ms and by["decode_delta"].verdict == v_ms
    assert by["decode_delta_pct"].verdict == v_pct
    assert by["decode_delta"].kind == ("measured" if run else "synthetic")
    hi_ms, lo_ms = tpot_ms[max(tpot_ms)], tpot_ms[min(tpot_ms)]
    assert by["decode_delta"].value == pytest.approx(hi_ms - lo_ms, abs=1e-4)
    assert by["decode_delta_pct"].value == pytest.approx(100 * (hi_ms / lo_ms - 1), abs=1e-3)


@pytest.mark.parametrize(
    "params,kv_verdict,kv_why,floor_ms,floor_verdict,floor_why",
    [
        # 0.08088 ms of the claimed 0.6 ms: 13 %
        ({}, "consistent", "exactly 890 B/token", FLOOR_MS, "consistent", "explain 13 %"),
        # FP8: 2.5 rows x (528 + 132) B = 1650 B/token, not the claimed 890; the floor is then
        # 727,000 x 1650 B / 8 TB/s = 0.14994 ms, 25 % of 0.6 ms
        (
            {"kv_dtype": "fp8"},
            "inconsistent",
            "1650 B/token, not 890",
            727_000 * 1650 / 8e9,
            "consistent",
            "explain 25 %",
        ),
        # 8 sequences: 8 x 80.88 us = 0.647 ms <= 0.6 + 0.05 ms
        ({"batch": 8}, "consistent", "", 8 * FLOOR_MS, "consistent", "explain 108 %"),
        # 9 sequences: 9 x 80.88 us = 0.728 ms > 0.65 ms
        ({"batch": 9}, "consistent", "", 9 * FLOOR_MS, "inconsistent", "at least 728 us"),
    ],
    ids=["fp4-batch1", "fp8", "batch8", "batch9"],
)
def test_every_modelled_verdict(params, kv_verdict, kv_why, floor_ms, floor_verdict, floor_why):
    an = context_latency.analyse(_shipped(), Params(**params))
    assert (an.kv_verdict, an.floor.verdict) == (kv_verdict, floor_verdict)
    assert kv_why in an.kv_reason and floor_why in an.floor.reason
    by = {h.name: h for h in context_latency.outcome(an).headlines}
    assert by["kv_bytes_per_token"].verdict == kv_verdict
    assert by["kv_read_floor"].verdict == by["kv_read_share_of_claim"].verdict == floor_verdict
    assert by["kv_read_floor"].value == pytest.approx(floor_ms, abs=1e-5)


def test_the_shipped_trace():
    """The headline values of the shipped trace (CPU, tiny model, 128..3,584 tokens)."""
    an = context_latency.analyse(_shipped())
    out = context_latency.outcome(an)
    by = {h.name: h.value for h in out.headlines}
    assert out.verdict == "not reproduced" and (an.lo, an.hi) == (LO, HI)
    assert out.parameters["lo"] == LO and out.parameters["hi"] == HI
    assert by["kv_bytes_per_token"] == 890 and by["kv_read_floor"] == round(FLOOR_MS, 5)
    assert by["kv_read_share_of_claim"] == round(100 * FLOOR_MS / 0.6, 2)  # 13.48 %
    assert by["implied_latency_at_lo"] == round(100 * 0.6 / 7, 3)  # 8.571 ms
    assert (by["kv_bytes_per_token_fp8"], by["kv_bytes_per_token_bf16"]) == (1650, 3200)
    d = an.measured
    assert (d.pair, d.lo, d.hi) == ("longest-available", 128, 3584)
    values = an.values()
    assert (values["claim_kv"], values["claim_delta_ms"], values["claim_pct"]) == (890, 0.6, 7)
    assert an.rerun_contexts == [LO, 2 * LO, 4 * LO, HI]


def test_the_delta_comes_from_the_registry():
    """Change the published delta 0.6 -> 0.9 ms in a copy of the registry: the KV-floor
    readings and the implied latency follow, and 0.6 ms is gone from every headline."""
    before = context_latency.outcome(context_latency.analyse(_shipped()))
    reg = _edited("context-latency.delta", lambda c: c.update(value=0.9))
    an = context_latency.analyse(_shipped(), registry=reg)
    out = context_latency.outcome(an)
    old, new = ({h.name: h for h in o.headlines} for o in (before, out))
    for name in ("kv_read_floor", "kv_read_share_of_claim"):
        assert new[name].reason != old[name].reason
        assert "the claimed 0.9 ms" in new[name].reason
    # KV reads explain 100 x 0.08088 / 0.9 = 9 %; 0.9 / 0.08088 = 11.1 sequences
    why = new["kv_read_floor"].reason
    assert "explain 9 %" in why and "about 11.1 sequences" in why
    assert new["kv_read_share_of_claim"].value == round(100 * FLOOR_MS / 0.9, 2)  # 8.99 %
    assert new["implied_latency_at_lo"].value == round(100 * 0.9 / 7, 3)  # 12.857 ms
    assert out.reason.endswith("9 % of the claimed 0.9 ms")
    assert "0.6 ms" in _texts(before) and "0.6 ms" not in _texts(out)
    assert an.values()["claim_delta_ms"] == 0.9


def test_the_context_pair_comes_from_the_registry():
    """Change the claim's context span to 64,000 -> 512,000 tokens: the bandwidth model, the
    capacity and the parameters follow, and 128,000 / 855,000 are gone."""

    def span(c):
        c["scope"]["context_tokens"] = {"low": 64_000, "high": 512_000}

    an = context_latency.analyse(_shipped(), registry=_edited("context-latency.delta", span))
    out = context_latency.outcome(an)
    by = {h.name: h for h in out.headlines}
    assert (out.parameters["lo"], out.parameters["hi"]) == (64_000, 512_000)
    # 448,000 tokens x 890 B = 398.72 MB / 8 TB/s = 49.84 us
    assert by["kv_read_floor"].value == round(448_000 * 890 / 8e12 * 1000, 5)
    assert "growing 64,000 -> 512,000 tokens" in by["kv_read_floor"].definition
    assert "128,000" not in _texts(out) and "855,000" not in _texts(out)
    assert an.rerun_contexts == [64_000, 128_000, 256_000, 512_000]


def test_the_bytes_per_token_come_from_the_registry():
    """Change the published bytes per token 890 -> 900: the same layout turns inconsistent."""
    reg = _edited("context-latency.kv-bytes", lambda c: c.update(value=900.0))
    out = context_latency.outcome(context_latency.analyse(_shipped(), registry=reg))
    h = next(h for h in out.headlines if h.name == "kv_bytes_per_token")
    assert (h.value, h.verdict) == (890, "inconsistent")
    assert h.reason == "the catalog's cache layout gives 890 B/token, not 900"
    assert out.reason.startswith("890 B/token inconsistent")
