"""Context-latency reading functions on their own, against hand-computed numbers: the published
figures come from the registry, the bytes-per-token physics, the growth of the context reads
against the claimed delta, the latency the two figures imply, this run's readings of the delta
and of the bytes, and the main series."""

from __future__ import annotations

import pandas as pd
import pytest

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.claims import load_claims
from rackbook.physics import roofline
from rackbook.results import context_latency

#: The published figures (data/claims.yaml), as the hand computations below use them: context
#: pair (tokens), bytes per token, delta (ms, %) and tolerances.
LO, HI = 128_000, 855_000
KV_BYTES = 890
DELTA_MS, DELTA_PCT = 0.6, 7.0
TOL_MS, TOL_PCT = 0.05, 0.5
MODEL = "deepseek-v4.1-flash"


def _delta(lo=256, hi=4096, lo_ms=20.0, hi_ms=22.0, pair="longest-available"):
    d = hi_ms - lo_ms
    return context_latency.Delta(lo, hi, lo_ms, hi_ms, d, 100 * d / lo_ms, pair)


def _run(kind="recorded", gpus=("NVIDIA GB300",), model="deepseek-ai/DeepSeek-V4.1-Flash"):
    return {
        "kind": kind,
        "hardware": {"gpus": [{"name": g} for g in gpus], "cpu_model": "Test CPU", "cpu_cores": 2},
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


@pytest.mark.parametrize(
    "dtype,verdict,why",
    [
        ("fp4", "possible", "give 890 B/token: 2.5 rows x 356 B"),  # 2.5 x (288 + 68)
        ("fp8", "impossible", "give 1650 B/token, not 890"),  # 2.5 x (528 + 132)
    ],
)
def test_kv_bytes_physics(dtype, verdict, why):
    r = context_latency.kv_bytes_physics(roofline.kv_bytes(catalogs.as_model(MODEL), dtype), 890)
    assert (r.reading, r.verdict) == ("physics", verdict) and why in r.reason


@pytest.mark.parametrize(
    "batch,verdict,n_seq",
    [
        (1, "possible", 600 / 15.44875),  # 15.45 us of 600 us; 38.84 sequences reach it
        (38, "possible", 600 / 15.44875),  # 587.05 us: 0.978x, under the bound (no margin)
        (39, "impossible", 600 / 15.44875),  # 602.50 us: 1.004x, above the floor itself
        (45, "impossible", 600 / 15.44875),  # 695.19 us: 1.159x
    ],
)
def test_growth_physics(batch, verdict, n_seq):
    g = roofline.context_growth(MODEL, "gb300", LO, HI, batch=batch)
    r = context_latency.growth_physics(g, DELTA_MS)
    assert r.reading.verdict == verdict
    assert r.per_sequence_ms == pytest.approx(0.01544875)
    assert r.sequences_to_explain == pytest.approx(n_seq)  # per sequence, whatever the batch
    assert r.share == pytest.approx(batch * 0.01544875 / 0.6)


def test_implied_latency_physics():
    m, hw = catalogs.as_model(MODEL), catalogs.as_gpu("gb300")
    im = context_latency.implied_latency_physics(
        DELTA_MS, TOL_MS, DELTA_PCT, TOL_PCT, m, hw, 4, LO, "fp4"
    )
    assert im.central_ms == pytest.approx(60 / 7)  # 8.571 ms
    assert im.low_ms == pytest.approx(55 / 7.5)  # 7.333 ms
    assert im.high_ms == pytest.approx(65 / 6.5)  # 10.0 ms
    # one sequence on 4 GPUs: (1.877 GB dense + 1.128 GB experts + 7.955 MB context) / 8 TB/s
    assert im.step_floor_ms == pytest.approx(0.3766, abs=1e-4)
    assert im.reading.verdict == "possible" and "7.33 to 10 ms" in im.reading.reason


def test_delta_run_reading():
    ms = dict(claim=DELTA_MS, tolerance=TOL_MS, claim_id=context_latency.DELTA_ID)
    pct = dict(claim=DELTA_PCT, tolerance=TOL_PCT, claim_id=context_latency.DELTA_PCT_ID)
    d = _delta()  # +2 ms, +10 %
    r = context_latency.delta_run_reading(d, False, _run(gpus=()), None, **ms)
    assert r.verdict == "untested" and "+2 ms" in r.reason and "2-core Test CPU" in r.reason
    r = context_latency.delta_run_reading(d, True, _run(), None, **ms)
    assert r.verdict == "untested" and "longest-available" in r.reason
    ok = _delta(LO, HI, 8.57, 9.15, pair="requested")  # +0.58 ms, +6.77 %
    assert context_latency.delta_run_reading(ok, True, _run(), None, **ms).verdict == ("consistent")
    r = context_latency.delta_run_reading(ok, True, _run(), None, percent=True, **pct)
    assert r.verdict == "consistent" and r.margin == "-0.232 %"
    off = _delta(LO, HI, 8.57, 9.30, pair="requested")  # +0.73 ms, +8.5 %
    assert context_latency.delta_run_reading(off, True, _run(), None, **ms).verdict == (
        "inconsistent"
    )
    r = context_latency.delta_run_reading(off, True, _run(), None, percent=True, **pct)
    assert r.verdict == "inconsistent"


def test_an_unresolved_slope_is_named_in_the_reading():
    flat = pd.DataFrame({"context_tokens": [1000, 2000, 3000], "median_tpot_ms": [12, 11, 13]})
    fit = context_latency.fit_linear(flat)  # slope 0.5 ms/1k, CI 0.5 +/- 11.0
    assert not fit.resolved
    r = context_latency.delta_run_reading(
        _delta(), False, _run(gpus=()), fit, claim=DELTA_MS, tolerance=TOL_MS,
        claim_id=context_latency.DELTA_ID,
    )  # fmt: skip
    assert "a slope not resolved from zero" in r.reason


@pytest.mark.parametrize(
    "run,testable,verdict,why",
    [
        (_run(gpus=()), False, "untested", "recorded on 2-core Test CPU, no GPU"),
        (_run(), True, "untested", "does not report"),
        ({**_run(), "metrics": {"kv_cache_bytes_per_token": 899.0}}, True, "consistent", "+1 %"),
        (
            {**_run(), "metrics": {"kv_cache_bytes_per_token": 910.0}},
            True,
            "inconsistent",
            "+2.2 %",
        ),
    ],
    ids=["cpu", "not-reported", "within-2-percent", "outside-2-percent"],
)
def test_kv_bytes_run_reading(run, testable, verdict, why):
    r = context_latency.kv_bytes_run_reading(run, testable, KV_BYTES, 0.02)
    assert r.verdict == verdict and why in r.reason


def test_main_series():
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
