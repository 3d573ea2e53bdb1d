"""Context-latency reading functions on their own, against hand-computed numbers: the published
figures come from the registry, the bytes-per-token physics, the growth of the context reads
against the claimed delta, the latency the two figures imply, this run's readings of the delta
and of the bytes, and the main series."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import edited_registry

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


def test_kv_bytes_run_reading_where_the_bytes_are_read():
    """metrics first, parameters second; a value that is not a number is not a report. 890 B
    exactly is +0 %; reported on a stand-in it is named but untested."""
    key = context_latency.KV_BYTES_KEY
    both = {**_run(), "metrics": {key: 890}, "parameters": {key: 2000, "model": "x"}}
    r = context_latency.kv_bytes_run_reading(both, True, KV_BYTES, 0.02)
    assert (r.verdict, r.margin) == ("consistent", "+0 %")
    assert r.reason == "890 B/token reported, +0 % from the published 890 (tolerance 2 %)"
    params = {**_run(), "parameters": {key: 908.0}}  # 908 / 890 - 1 = +2.02 % > 2 %
    r = context_latency.kv_bytes_run_reading(params, True, KV_BYTES, 0.02)
    assert (r.verdict, r.margin) == ("inconsistent", "+2 %")
    text = {**_run(), "metrics": {key: "890"}, "parameters": {key: 1000}}  # a string: skipped
    r = context_latency.kv_bytes_run_reading(text, True, KV_BYTES, 0.02)
    assert r.verdict == "inconsistent" and r.reason.startswith("1,000 B/token reported, +12.4 %")
    r = context_latency.kv_bytes_run_reading({**_run(), "metrics": {key: "890"}}, True, 890, 0.02)
    assert (r.verdict, r.margin, r.reason) == (
        "untested", "-",
        "the trace does not report the engine's KV bytes per token (run.json metrics."
        "kv_cache_bytes_per_token, from vLLM's start-up log of KV memory over KV tokens)",
    )  # fmt: skip
    cpu = {**_run(gpus=()), "metrics": {key: 890}}
    r = context_latency.kv_bytes_run_reading(cpu, False, KV_BYTES, 0.02)
    assert (r.verdict, r.reason) == (
        "untested",
        "recorded on 2-core Test CPU, no GPU (890 B/token reported); the claim needs vLLM's KV "
        "bytes per token of DeepSeek-V4.1-Flash on B300/GB300",
    )


def test_kv_bytes_physics_in_full():
    """FP4's exact 890 B/token, and the registry's 890 against BF16's 3,200: impossible, with
    the derivation as data either way."""
    m = catalogs.as_model(MODEL)
    r = context_latency.kv_bytes_physics(roofline.kv_bytes(m, "bf16"), 890.4)
    got = (r.claim_id, r.reading, r.verdict, r.margin)
    assert got == (context_latency.KV_BYTES_ID, "physics", "impossible", "3200 B/token derived")
    assert r.reason == (
        "the catalog's dimensions and bf16 formats give 3200 B/token, not 890.4: a different "
        "layout or storage format is meant"
    )
    assert r.derived == {
        "value": 3200, "unit": "B/token", "from": "the model card's dimensions and BF16 formats",
        "exact": False, "how": "2.5 rows x 1280 B",
    }  # fmt: skip
    # the claim is rounded to whole bytes before the comparison: 889.6 and 890.4 are 890
    fp4 = roofline.kv_bytes(m, "fp4")
    assert context_latency.kv_bytes_physics(fp4, 889.6).verdict == "possible"
    assert context_latency.kv_bytes_physics(fp4, 890.4).verdict == "possible"
    assert context_latency.kv_bytes_physics(fp4, 890.6).verdict == "impossible"


def test_growth_attainable_without_growth_and_at_batch_two():
    """From 128k to 128k the kernels add nothing: no ratio, no brief, no claim clause. Two
    sequences step in 1.428 ms: 2 / 1.428 ms / 4 GPUs = 350.1 tok/s per GPU."""
    m, hw = catalogs.as_model(MODEL), catalogs.as_gpu("gb300")
    flat = context_latency.growth_attainable(m, hw, 4, LO, LO, DELTA_MS)
    assert (flat["ratio"], flat["brief"], flat["added_s"]) == (None, "", 0.0)
    assert flat["text"].startswith(
        "measured kernels step 1 sequence on 4 GB300 in 1.17 ms at 128,000 tokens and add 0 µs "
        "by 128,000 (attention tensor-parallel"
    )
    two = context_latency.growth_attainable(m, hw, 4, LO, HI, DELTA_MS, batch=2)
    assert two["step_lo_s"] == pytest.approx(0.0014281040050225092, rel=1e-9)
    assert two["tok_s_per_gpu"] == pytest.approx(2 / two["step_lo_s"] / 4, rel=1e-12)
    assert two["ratio"] == pytest.approx(0.6e-3 / two["added_s"], rel=1e-12)
    assert two["brief"] == "6.1x what measured kernels add for 2 sequences"
    assert two["text"].startswith(
        "measured kernels step 2 sequences on 4 GB300 in 1.43 ms at 128,000 tokens and add 99 µs "
        "by 855,000: the claimed 0.6 ms is 6.1x that (attention tensor-parallel + experts "
        "expert-parallel on 4 GPUs (assumed: 2 sequences on 4 GPUs); "
    )


def test_implied_latency_without_measured_kernels():
    """No kernels' step (None, or a step of 0 s): the reading carries no attainable part. The
    floor of 0.3767 ms is 0.0377x of the longest implied 10 ms."""
    m, hw = catalogs.as_model(MODEL), catalogs.as_gpu("gb300")
    args = (DELTA_MS, TOL_MS, DELTA_PCT, TOL_PCT, m, hw, 4, LO, "fp4")
    for growth in (None, {"step_lo_s": 0.0}):
        im = context_latency.implied_latency_physics(*args, growth)
        assert im.reading.attainable is None
        got = (im.reading.claim_id, im.reading.reading, im.reading.verdict)
        assert got == (context_latency.DELTA_PCT_ID, "physics", "possible")
        assert im.reading.margin == "implied 7.33-10 ms"
        assert im.reading.reason == (
            "the two figures imply 7.33 to 10 ms per step at 128,000 tokens; one sequence on 4 "
            "GB300s cannot step faster than 0.377 ms"
        )
    # one GPU: the floor is one sequence's whole step on it, named in the singular
    one = context_latency.implied_latency_physics(DELTA_MS, TOL_MS, DELTA_PCT, TOL_PCT, m, hw, 1,
                                                  LO, "fp4")  # fmt: skip
    assert "one sequence on 1 GB300 cannot step faster than" in one.reading.reason
    assert one.step_floor_ms > im.step_floor_ms


def test_growth_physics_with_the_index_scan_s_compute():
    """15.45 us of reads and 5.96 us of compute against 0.6 ms: 600 / 21.40 = 28 to 600 /
    15.45 = 38.8 sequences; the margin is the reads' share alone (2.6 %)."""
    g = roofline.context_growth(MODEL, "gb300", LO, HI)
    r = context_latency.growth_physics(g, DELTA_MS, 0.005955584)
    assert (r.claim_ms, r.compute_ms, r.growth) == (DELTA_MS, 0.005955584, g)
    assert r.reading.margin == "floor 2.6 % of it" and r.reading.attainable is None
    assert r.reading.reason == (
        "sparse reads add at least 15.4 µs (2.6 % of 0.6 ms, 1 sequence) and the longer index "
        "scan's compute at least 5.96 µs more: 21.4 µs of the 600 µs even with none of it "
        "overlapped; reading every row would add 774 µs. The rest is not this sequence's "
        "indexer at peak: about 28 to 38.8 sequences per GPU growing together, kernels well "
        "below peak, or work the bounds leave out"
    )
    # 45 sequences: 45 x 15.44875 = 695.2 us, 1.16x the claim; the scan over the span named
    big = context_latency.growth_physics(roofline.context_growth(MODEL, "gb300", LO, HI, batch=45),
                                         DELTA_MS)  # fmt: skip
    assert (big.reading.verdict, big.reading.margin) == ("impossible", "floor 1.2e+02 % of it")
    assert big.reading.reason == (
        "the extra index-key scan of 45 sequences over 128,000 -> 855,000 tokens alone takes "
        "695 µs, 1.16x the claimed 0.6 ms"
    )
    assert big.per_sequence_ms == pytest.approx(0.01544875)


def test_delta_run_reading_in_full():
    """A requested pair on a GPU: +0.58 ms is 0.02 under the claim (margin -0.02 ms); in %:
    100 x 0.58 / 8.57 = +6.768 %, -0.232 % from 7. A resolved fit adds nothing to the words."""
    ok = _delta(LO, HI, 8.57, 9.15, pair="requested")
    resolved = context_latency.LinearFit(8.0, 1e-6, 0.9, 3, LO, HI, (0.0005, 0.0015))
    r = context_latency.delta_run_reading(
        ok, True, _run(), resolved, claim=DELTA_MS, tolerance=TOL_MS,
        claim_id=context_latency.DELTA_ID,
    )  # fmt: skip
    got = (r.claim_id, r.reading, r.verdict, r.margin)
    assert got == (context_latency.DELTA_ID, "this run", "consistent", "-0.02 ms")
    assert r.reason == "+0.58 ms from 128,000 to 855,000 tokens, claim +0.6 ms (tolerance 0.05)"
    r = context_latency.delta_run_reading(
        ok, True, _run(), None, claim=DELTA_PCT, tolerance=TOL_PCT,
        claim_id=context_latency.DELTA_PCT_ID, percent=True,
    )  # fmt: skip
    assert r.reason == "+6.77 % from 128,000 to 855,000 tokens, claim +7 % (tolerance 0.5)"
    # binary-exact: +0.625 ms against 0.5 +/- 0.125 is at the tolerance (consistent), +0.75
    # one step beyond it; the margin is the signed distance from the claim
    for hi_ms, verdict, margin in [(8.625, "consistent", "+0.125 ms"),
                                   (8.75, "inconsistent", "+0.25 ms")]:  # fmt: skip
        r = context_latency.delta_run_reading(
            _delta(LO, HI, 8.0, hi_ms, pair="requested"), True, _run(), None, claim=0.5,
            tolerance=0.125, claim_id="x",
        )  # fmt: skip
        assert (r.verdict, r.margin) == (verdict, margin)
    lacks = context_latency.delta_run_reading(
        _delta(), True, _run(), None, claim=DELTA_MS, tolerance=TOL_MS, claim_id="x"
    )  # fmt: skip
    assert (lacks.claim_id, lacks.verdict, lacks.margin, lacks.reason) == (
        "x", "untested", "-",
        "+2 ms from 256 to 4,096 tokens (longest-available): lacks the claimed lengths",
    )  # fmt: skip
    cpu = context_latency.delta_run_reading(
        _delta(), False, _run(gpus=()), None, claim=DELTA_MS, tolerance=TOL_MS, claim_id="x"
    )  # fmt: skip
    assert cpu.reason == (
        "recorded on 2-core Test CPU, no GPU (+2 ms from 256 to 4,096 tokens); the claim needs "
        "DeepSeek-V4.1-Flash on B300/GB300 at 128k and 855k tokens of context"
    )


def test_claimed_span_refuses_a_claim_without_contexts():
    unstated = {context_latency.DELTA_ID: lambda c: c["scope"].update(context_tokens=None)}
    reg = edited_registry(unstated, "edited.yaml")
    with pytest.raises(InputError) as e:
        context_latency.claimed_span(reg)
    assert str(e.value) == (
        "edited.yaml: claims[context-latency.delta].scope.context_tokens: not stated"
    )


def test_main_series_refuses_a_table_without_latencies():
    tab = pd.DataFrame({"engine": ["e"], "config": ["A"], "batch": pd.array([pd.NA], "Int64"),
                        "context_tokens": [100], "median_tpot_ms": [float("nan")]})  # fmt: skip
    with pytest.raises(InputError) as e:
        context_latency.main_series(tab)
    assert str(e.value) == (
        "-: median_tpot_ms: no point has a value (requests of one output token?)"
    )
    with pytest.raises(InputError, match="no point with context_tokens and median_tpot_ms"):
        context_latency.main_series(tab.drop(columns="median_tpot_ms"))
    # a batch of <NA> is a series label of its own; the larger series wins over the first
    tab = pd.DataFrame({"engine": ["e"] * 3, "config": ["A"] * 3,
                        "batch": pd.array([pd.NA, 1, 1], "Int64"),
                        "context_tokens": [100, 100, 200],
                        "median_tpot_ms": [1.0, 2.0, 3.0]})  # fmt: skip
    s = context_latency.main_series(tab)
    assert s["median_tpot_ms"].tolist() == [2.0, 3.0] and s.index.tolist() == [0, 1]
    assert list(s.columns) == list(tab.columns)  # the old index is dropped, not kept


def test_growth_physics_without_compute_and_without_growth():
    """No compute given: the reads alone, 15.4 us of 600 (600 / 15.45 = 38.8 -> "39 to 38.8"
    sequences). No growth at all (128k to 128k) with 5 us of compute: nothing per sequence, so
    no number of sequences explains the claim (inf), and 600 / 5 = 120 at the low end."""
    g = roofline.context_growth(MODEL, "gb300", LO, HI)
    r = context_latency.growth_physics(g, DELTA_MS)
    assert r.compute_ms == 0.0
    assert r.reading.reason.startswith(
        "sparse reads add at least 15.4 µs (2.6 % of 0.6 ms, 1 sequence) and the longer index "
        "scan's compute at least 0 µs more: 15.4 µs of the 600 µs even with none of it "
        "overlapped; reading every row would add 774 µs. The rest is not this sequence's "
        "indexer at peak: about 39 to 38.8 sequences per GPU"
    )
    flat = context_latency.growth_physics(
        roofline.context_growth(MODEL, "gb300", LO, LO), DELTA_MS, 0.005
    )
    assert (flat.per_sequence_ms, flat.sequences_to_explain) == (0.0, math.inf)
    assert (flat.reading.verdict, flat.reading.margin) == ("possible", "floor 0 % of it")
    assert "about 120 to inf sequences per GPU" in flat.reading.reason


def test_memory_by_context_past_the_batch_limit_and_without_room():
    """1,000 tokens at FP4: 178 GB / 890 kB = 200,000 sequences, past the engine's batch limit
    of 65,536 (a capacity, not a batch: not capped). Weights of 300 GB per GPU on a 278 GB
    GB300: nothing fits, and the formula says which."""
    kw = dict(weight_bytes_per_gpu=100e9)
    short = context_latency.memory_by_context(MODEL, "gb300", [1000], **kw)
    assert short["sequences_per_gpu"].tolist() == [200_000]
    heavy = context_latency.memory_by_context(MODEL, "gb300", [1000], weight_bytes_per_gpu=300e9)
    assert heavy.drop(columns="formula").to_dict("list") == {
        "context_tokens": [1000], "kv_bytes_per_sequence": [890_000], "sequences_per_gpu": [0],
        "free_bytes": [-22e9],
    }  # fmt: skip
    assert heavy["formula"].tolist() == [
        "the weights do not fit: 300 GB per GPU (1 GPU, all weights spread) > 278 GB usable "
        "(278 GB HBM)"
    ]


def test_implied_latency_floor_reads_the_cache_at_its_dtype():
    """The floor reads one sequence's context at 128k over 4 GPUs: 31.82 MB at FP4, 61.16 MB at
    FP8 (scan 330 B/token); (61.16352 - 31.819776) / 4 MB / 8 TB/s = 0.000917 ms more."""
    m, hw = catalogs.as_model(MODEL), catalogs.as_gpu("gb300")
    floors = [
        context_latency.implied_latency_physics(
            DELTA_MS, TOL_MS, DELTA_PCT, TOL_PCT, m, hw, 4, LO, d
        ).step_floor_ms
        for d in ("fp4", "fp8")
    ]
    extra = (61.16352e6 - 31.819776e6) / 4 / 8e12 * 1000
    assert floors == pytest.approx([0.376662848, 0.376662848 + extra], rel=1e-12)
