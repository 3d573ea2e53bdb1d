"""Context-latency readings: weight bytes per GPU, comparability and verdicts, against
hand-computed numbers."""

from __future__ import annotations

import pytest

from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims
from rackbook.results import context_latency

#: The published figures (data/claims.yaml), as the hand computations below use them: context
#: pair (tokens), bytes per token, delta (ms, %) and tolerances.
LO, HI = 128_000, 855_000
KV_BYTES = 890
DELTA_MS, DELTA_PCT = 0.6, 7.0
TOL_MS, TOL_PCT = 0.05, 0.5


def _delta(lo=256, hi=4096, lo_ms=20.0, hi_ms=22.0, pair="longest-available"):
    d = hi_ms - lo_ms
    return context_latency.Delta(lo, hi, lo_ms, hi_ms, d, 100 * d / lo_ms, "measured", pair, "")


def _run(kind="recorded", gpus=("NVIDIA GB300",), model="deepseek-ai/DeepSeek-V4.1-Flash"):
    return {
        "kind": kind,
        "hardware": {"gpus": [{"name": g} for g in gpus]},
        "parameters": {"model": model},
        "engine": {"name": "vllm"},
    }


def test_the_hand_computed_figures_are_the_registry_s():
    reg = load_claims()
    assert reg.value(context_latency.KV_BYTES_ID) == KV_BYTES
    assert reg.value(context_latency.DELTA_ID) == DELTA_MS
    assert reg.tolerance(context_latency.DELTA_ID) == TOL_MS
    assert reg.value(context_latency.DELTA_PCT_ID) == DELTA_PCT
    assert reg.tolerance(context_latency.DELTA_PCT_ID) == TOL_PCT
    assert context_latency.claimed_span(reg) == (LO, HI)
    assert not [n for n in dir(context_latency) if n.startswith("CLAIM_")]  # none typed


def test_weight_bytes_per_gpu():
    w = context_latency.weight_bytes_per_gpu("deepseek-v4.1-flash")
    # routed: 40 x 384 x 18.8e6 = 288.768e9 B
    assert w.routed_bytes == 288_768_000_000
    # dense: 552e9 - 40 x 384 x 3 x 5120 x 2304 = 552e9 - 543,581,798,400 params, 1 B each
    assert w.dense_bytes == 8_418_201_600
    assert w.total_bytes == 297_186_201_600 and w.per_gpu_bytes == 74_296_550_400
    assert w.moe_layers == 40 and "(assumed)" in w.formula
    w2 = context_latency.weight_bytes_per_gpu("deepseek-v4.1-flash", 2, moe_layers=40)
    assert w2.per_gpu_bytes == 2 * w.per_gpu_bytes and "(assumed)" not in w2.formula
    with pytest.raises(InputError, match="n_gpus"):
        context_latency.weight_bytes_per_gpu("deepseek-v4.1-flash", 0)
    with pytest.raises(InputError, match="backbone"):  # 41 layers hold more than the backbone
        context_latency.weight_bytes_per_gpu("deepseek-v4.1-flash", moe_layers=41)


def test_weights_leave_room_for_sequences():
    w = context_latency.weight_bytes_per_gpu("deepseek-v4.1-flash")
    m = context_latency.memory_by_context(
        "deepseek-v4.1-flash", "b300", (LO, HI), weight_bytes_per_gpu=w.per_gpu_bytes
    ).set_index("context_tokens")
    # (288e9 - 74,296,550,400) / 760.95e6 = 280.8 ; / 113.92e6 = 1875.9
    assert m.loc[855_000, "sequences_per_gpu"] == 280
    assert m.loc[128_000, "sequences_per_gpu"] == 1875


def test_evidence_kind():
    assert context_latency.evidence_kind("recorded") == "measured"
    assert context_latency.evidence_kind("synthetic") == "synthetic"
    with pytest.raises(InputError, match="kind"):
        context_latency.evidence_kind("guessed")


def test_comparable_to_claim():
    assert context_latency.comparable_to_claim(_run())
    assert not context_latency.comparable_to_claim(_run(gpus=()))  # CPU
    assert not context_latency.comparable_to_claim(_run(gpus=("NVIDIA H200",)))
    assert not context_latency.comparable_to_claim(_run(model="/data/tiny-moe"))
    assert not context_latency.comparable_to_claim(_run(kind="synthetic"))


def test_kv_bytes_verdict():
    assert context_latency.kv_bytes_verdict(890, KV_BYTES)[0] == "consistent"
    v, reason = context_latency.kv_bytes_verdict(891, KV_BYTES)
    assert v == "inconsistent" and "891" in reason and "\n" not in reason


def test_measured_verdict():
    ms = dict(claim=DELTA_MS, tolerance=TOL_MS)
    pct = dict(claim=DELTA_PCT, tolerance=TOL_PCT, percent=True)
    d = _delta()  # +2 ms, +10 %
    v, reason = context_latency.measured_verdict(d, False, "2-core CPU, no GPU", **ms)
    assert v == "not reproduced" and "+2 ms" in reason and "2-core CPU" in reason
    v, reason = context_latency.measured_verdict(d, True, "4 x GB300", **ms)
    assert v == "not reproduced" and "longest-available" in reason
    ok = _delta(LO, HI, 8.57, 9.15, pair="requested")  # +0.58 ms, +6.77 %
    assert context_latency.measured_verdict(ok, True, "x", **ms)[0] == "consistent"
    assert context_latency.measured_verdict(ok, True, "x", **pct)[0] == "consistent"
    off = _delta(LO, HI, 8.57, 9.30, pair="requested")  # +0.73 ms, +8.5 %
    assert context_latency.measured_verdict(off, True, "x", **ms)[0] == "inconsistent"
    assert context_latency.measured_verdict(off, True, "x", **pct)[0] == "inconsistent"


def test_floor_vs_claim():
    claim = (DELTA_MS, DELTA_PCT, TOL_MS)
    kv = context_latency.kv_bandwidth_model("deepseek-v4.1-flash", "b300", LO, HI)
    r = context_latency.floor_vs_claim(kv, *claim)
    assert r.floor_ms == pytest.approx(0.08087875)
    assert r.share == pytest.approx(0.08087875 / 0.6)  # 13.5 %
    assert r.sequences_to_explain == pytest.approx(0.6 / 0.08087875)  # 7.42
    assert r.implied_baseline_ms == pytest.approx(60 / 7)  # 8.571 ms
    assert r.verdict == "consistent" and "13 %" in r.reason and "\n" not in r.reason
    kv8 = context_latency.kv_bandwidth_model("deepseek-v4.1-flash", "b300", LO, HI, batch=8)
    r8 = context_latency.floor_vs_claim(kv8, *claim)  # 8 x 80.88 us = 0.647 ms
    assert r8.verdict == "consistent"  # 0.647 <= 0.6 + 0.05
    assert r8.sequences_to_explain == pytest.approx(r.sequences_to_explain)
    kv9 = context_latency.kv_bandwidth_model("deepseek-v4.1-flash", "b300", LO, HI, batch=9)
    assert context_latency.floor_vs_claim(kv9, *claim).verdict == "inconsistent"  # 0.728 ms


def test_main_series():
    import pandas as pd

    tab = pd.DataFrame(
        {
            "engine": ["e"] * 5,
            "config": ["A", "A", "B", "B", "B"],
            "batch": pd.array([1, 1, 1, 1, 1], dtype="Int64"),
            "context_tokens": [100, 200, 100, 200, 400],
            "median_tpot_ms": [1.0, 2.0, 1.0, 2.0, float("nan")],
        }
    )
    s = context_latency.main_series(tab)  # B's 400 has no value: A and B tie at 2, A first
    assert s["config"].tolist() == ["A", "A"]
    tab.loc[4, "median_tpot_ms"] = 3.0
    assert context_latency.main_series(tab)["context_tokens"].tolist() == [100, 200, 400]
    with pytest.raises(InputError, match="no point"):
        context_latency.main_series(tab.iloc[:0])
