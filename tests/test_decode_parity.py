"""Decode parity on hand-made traces: throughput per batch size, the parity table, the largest
gap and every verdict the chapter can reach, with expectations computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import analyse_shipped, edited_registry, headline_rows, synthetic_trace

from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.physics import check, roofline
from rackbook.results import decode_parity


def _result(n: int, out: int, ttft: float, lat: float, inp: int = 100) -> dict:
    return {
        "duration": 10.0,
        "input_lens": [inp] * n,
        "output_lens": [out] * n,
        "ttfts": [ttft] * n,
        "latencies": [lat] * n,
        "itls": [[(lat - ttft) / (out - 1)] * (out - 1)] * n,
        "start_times": [0.0] * n,
        "errors": [""] * n,
    }


def _trace(tmp_path, points, gpus=(), ttft=0.1):
    """points: (engine, batch, latency of engine's requests); 2 requests of 11 output tokens,
    TTFT ``ttft`` s each. run.json's GPU inventory: ``gpus``."""
    frames = [
        vllm_bench_frames(
            tmp_path / f"{eng}-{b}.json",
            {"engine": eng, "batch_size": str(b)},
            point_id=f"{eng}-{b}",
            data=_result(2, 11, ttft, lat),
        )
        for eng, b, lat in points
    ]
    t = synthetic_trace(frames)
    t.run["hardware"] = {"gpus": [{"name": g} for g in gpus]}
    return t


# Batch 8: A decodes 8 x 20 / 2.0 = 80 tok/s, B 8 x 20 / 1.9 = 84.21: ratio 0.95, gap -5 %.
# Batch 16: A 16 x 20 / 2.0 = 160, B 16 x 20 / 1.6 = 200: ratio 0.8, gap -20 %.
POINTS = [("a", 8, 1.1), ("b", 8, 1.05), ("a", 16, 1.1), ("b", 16, 0.9)]


def test_throughput_parity_and_largest_gap_by_hand(tmp_path):
    t = _trace(tmp_path, POINTS)
    table = decode_parity.throughput_table(t).set_index(["engine", "batch"])
    assert table.loc[("a", 8), "decode_tok_s"] == pytest.approx(80.0)
    assert table.loc[("b", 16), "decode_tok_s"] == pytest.approx(200.0)
    assert table.loc[("a", 8), "tpot_ms"] == pytest.approx(100.0)  # 2.0 s / 20 tokens
    assert table.loc[("a", 8), "prefill_tok_s"] == pytest.approx(8 * 100 / 0.1)
    par = decode_parity.parity(decode_parity.throughput_table(t), "a", "b")
    assert par["gap_pct"].round(6).tolist() == [-5.0, -20.0]
    assert decode_parity.largest_gap(par) == (16, pytest.approx(-20.0))


def test_parity_keeps_only_batch_sizes_both_engines_measured(tmp_path):
    t = _trace(tmp_path, [*POINTS, ("a", 32, 1.1)])
    par = decode_parity.parity(decode_parity.throughput_table(t), "a", "b")
    assert par["batch"].tolist() == [8, 16]
    with pytest.raises(ValueError) as e:
        decode_parity.largest_gap(par.iloc[:0])
    assert str(e.value) == "no batch size measured by both engines"


def _testable(t, gpus):
    """A recorded trace on ``gpus`` serving the claim's model (what can test the claim)."""
    t.run["kind"] = "recorded"
    t.run["parameters"] = {"model": "deepseek-ai/DeepSeek-V4.1-Flash"}
    return t


@pytest.mark.parametrize(
    "gpus,engine_b,points,verdict",
    [
        ((), "b", POINTS, "untested"),  # CPU stand-in
        (("NVIDIA B300",), "b", POINTS, "untested"),  # engine B is not DeepInfer
        (
            ("NVIDIA B300",),
            "deepinfer",
            [("a", 8, 1.1), ("deepinfer", 8, 1.05), ("a", 16, 1.1), ("deepinfer", 16, 1.06)],
            "consistent",
        ),
        # inside the band where measured, but the claim's batch 16 is missing: not covered
        (("NVIDIA B300",), "deepinfer", [("a", 8, 1.1), ("deepinfer", 8, 1.05)], "untested"),
        (("NVIDIA B300",), "deepinfer", [("a", 16, 1.1), ("deepinfer", 16, 0.9)], "inconsistent"),
        (("NVIDIA B300",), "deepinfer", [("a", 8, 1.1)], "untested"),  # one engine only
    ],
    ids=["cpu", "not-deepinfer", "within-band", "partial-range", "outside-band", "one-engine"],
)
def test_every_run_reading(tmp_path, gpus, engine_b, points, verdict):
    t = _trace(tmp_path, points, gpus)
    if gpus:
        _testable(t, gpus)
    params = decode_parity.Params(engine_a="a", engine_b=engine_b, batch_sizes=[8, 16])
    out = decode_parity.outcome(decode_parity.analyse(t, params))
    run = out.reading("decode-parity.gap", "this run")
    assert run.verdict == verdict
    gap = [(h.verdict, h.claim_id) for h in out.headlines if h.name == "max_decode_gap"]
    # the gap headline exists once both engines measured a batch size, and carries the verdict
    compared = {b for e, b, _ in points if e == "a"} & {b for e, b, _ in points if e != "a"}
    assert gap == ([(verdict, "decode-parity.gap")] if compared else [])
    if verdict == "untested" and len(points) == 2:
        assert "batch sizes 16 not measured by both engines" in run.reason
        assert "range is not covered" in run.reason
    elif verdict == "untested" and gpus and engine_b == "deepinfer":
        # the missing piece is named, with the command that supplies it
        assert run.reason == (
            "no engine-B points (deepinfer): record an offline engine or import its results "
            "with `rackbook import offline-engine`"
        )


def _ceiling(batch: int, ranks: int) -> float:
    params = decode_parity.Params(batch_sizes=[batch])
    return float(decode_parity.ceilings(params, ranks)["ceiling_tok_s_per_gpu"].iloc[0])


@pytest.mark.parametrize(
    "share,verdict", [(0.5, "possible"), (1.0, "possible"), (1.05, "impossible")]
)
def test_every_physics_reading(tmp_path, share, verdict):
    """On one decode rank, an engine decoding at ``share`` x the decode bound of batch 8 (the
    fewest bytes: 12.02 GB / 8 TB/s = 1.502 ms per step of 8 tokens, 5,326 tok/s): above it
    the batch is not what the claim says (impossible), at or below it possible (a bound has
    no margin). TTFT 10 ms, so the short decode windows are not burst deliveries."""
    rate = share * _ceiling(8, 1)
    d = 8 * 20 / 2 / rate / 2  # per-request decode seconds: decode tok/s = 8 x 20 / (2 d)
    pts = [("a", 8, 0.01 + 2 * d), ("deepinfer", 8, 0.01 + 2 * d)]
    t = _testable(_trace(tmp_path, pts, ("NVIDIA B300",), ttft=0.01), ("NVIDIA B300",))
    params = decode_parity.Params(engine_a="a", engine_b="deepinfer", batch_sizes=[8])
    out = decode_parity.outcome(decode_parity.analyse(t, params))
    r = out.reading("decode-parity.gap", "physics")
    assert r.verdict == verdict
    assert r.margin == f"{share:.3g}x the ceiling"
    assert r.ratio == pytest.approx(share, rel=1e-6)
    assert r.attainable["text"].startswith("measured kernels reach ")


def test_physics_is_undetermined_for_a_stand_in(tmp_path):
    """A CPU trace cannot put an engine against a GB300 ceiling: the reading names the span of
    ceilings, 64 ranks at batch 8 and 16 per rank, and decides nothing."""
    out = decode_parity.outcome(
        decode_parity.analyse(
            _trace(tmp_path, POINTS),
            decode_parity.Params(engine_a="a", engine_b="b", batch_sizes=[8, 16]),
        )
    )
    r = out.reading("decode-parity.gap", "physics")
    assert r.verdict == "undetermined"
    lo, hi = _ceiling(8, 64), _ceiling(16, 64)
    if round(lo) == round(hi):  # one value, said once with why (never "X at 8 to X at 16")
        assert f"ceiling of {lo:,.0f} tok/s per GPU at every batch from 8 to 16" in r.reason
    else:
        assert f"{lo:,.0f} tok/s per GPU at batch 8 per rank to {hi:,.0f} at 16" in r.reason


def test_ceilings_are_the_decode_bound():
    """Per-rank batch 8 on 64 GB300 ranks: 512 sequences read the dense weights once in all and
    the fewest experts (top-6 per layer), 12.02 GB over 64 x 8 TB/s = 23.5 us: 340,803 tok/s
    per GPU, above the compute ceiling 1 / (2 x 8.4935e9 / 15e15 + 2 x 7.5065e9 / 5e15) =
    241,834, which binds at every batch (the memory-bandwidth figure used to read 5,326 with
    every GPU re-reading the dense weights). On one rank batch 8 is bandwidth-bound: 8 tokens
    / 1.502 ms = 5,326."""
    c = decode_parity.ceilings(decode_parity.Params())
    assert c["batch"].tolist() == [8, 16, 32, 64, 128, 256]
    assert c["ceiling_tok_s_per_gpu"].to_list() == pytest.approx([241_834] * 6, abs=1)
    assert set(c["limit"]) == {"compute"}
    assert _ceiling(8, 1) == pytest.approx(5326, rel=1e-3)


def test_the_band_comes_from_the_registry(tmp_path):
    """Widen the published band in a copy of the registry: the same -20 % gap turns consistent,
    and the headline's definition shows the new band, not the old."""
    reg = edited_registry({"decode-parity.gap": lambda c: c.update(value=25.0)})
    t = _testable(_trace(tmp_path, [("a", 16, 1.1), ("deepinfer", 16, 0.9)], ("NVIDIA B300",)), 1)
    params = decode_parity.Params(engine_a="a", engine_b="deepinfer", batch_sizes=[16])
    an = decode_parity.analyse(t, params, registry=reg)
    out = decode_parity.outcome(an)
    assert an.band_pct == 25.0
    assert out.reading("decode-parity.gap", "this run").verdict == "consistent"
    text = " ".join(h.definition + h.reason for h in out.headlines)
    assert "25 %" in text and "6 %" not in text


def test_the_shipped_traces_values_in_full():
    """Every value the chapter glues on the shipped CPU trace with the notebook's defaults: the
    largest gaps are the golden headline file's (-50.39 % decode at batch 256, -84.47 %
    prefill); the decode bound is GB300's compute ceiling at every batch (241,834 tok/s/GPU)."""
    v = analyse_shipped("decode-parity").values()
    assert v == {
        "hardware": "2-core AMD EPYC, no GPU", "trace_kind": "recorded",
        "max_gap_pct": pytest.approx(-50.38863409393093, rel=1e-9), "worst_batch": 256,
        "inside": 0, "n_batches": 6,
        "prefill_gap_pct": pytest.approx(-84.4658262003999, rel=1e-9),
        "claim_batch_low": 8, "claim_batch_high": 256, "ceiling_ranks": 64,
        "ceiling_low_batch": pytest.approx(241_833.53309428057, rel=1e-9),
        "ceiling_high_batch": pytest.approx(241_833.53309428057, rel=1e-9),
        "ceiling_limit": "compute",
    }  # fmt: skip


def test_the_shipped_traces_headlines_and_flips_in_full():
    out = decode_parity.outcome(analyse_shipped("decode-parity"))
    got = headline_rows(out.headlines)
    claim, nc = "decode-parity.gap", "not comparable"
    ceilings = [
        (f"ceiling_batch_{b}", 241_834, "tok/s/GPU", "modelled", nc, None)
        for b in (8, 16, 32, 64, 128, 256)
    ]
    assert got == [
        ("max_decode_gap", -50.39, "%", "measured", "untested", claim),
        ("batch_sizes_within_band", 0, "batch sizes", "measured", "untested", claim),
        ("max_prefill_gap", -84.47, "%", "measured", nc, None),
        *ceilings,
    ]
    h = {x.name: x for x in out.headlines}
    signed = "largest |A/B - 1| of {} throughput over the batch sizes, signed"
    assert h["max_decode_gap"].definition == signed.format("decode")
    assert h["max_prefill_gap"].definition == signed.format("prefill")
    assert h["max_prefill_gap"].reason == (
        "the write-up gives no number for prefill, only that it follows a curve"
    )
    assert h["batch_sizes_within_band"].definition == (
        "batch sizes whose decode gap is within +/-6 %, of 6"
    )
    assert h["max_decode_gap"].reason.startswith(
        "recorded on 2-core AMD EPYC, no GPU (largest gap -50.4 % at batch 256; 0/6 batch sizes "
        "within the band); the claim needs vLLM against DeepInfer's offline benchmark on "
        "Blackwell GPUs"
    )
    assert h["max_decode_gap"].hardware == "2-core AMD EPYC, no GPU"
    assert len(h["max_decode_gap"].trace_ids) == 1 and h["ceiling_batch_8"].trace_ids == []
    assert h["ceiling_batch_128"].definition == (
        "decode bound per GPU (compute) at batch 128 per rank on 64 x gb300"
    )
    assert h["ceiling_batch_8"].reason == "bounds each engine, not their ratio"
    assert out.reading(claim, "physics").reason == (
        "a ratio of two engines on the same GPUs: physics bounds each (a compute ceiling of "
        "241,834 tok/s per GPU at every batch from 8 to 256 per rank, since from batch 8 compute, "
        "not the weight read, binds), not the ratio"
    )
    assert out.flips == [
        "this run: a trace of vLLM and DeepInfer on Blackwell GPUs serving DeepSeek-V4.1-Flash "
        "at per-rank batches 8 to 256 turns it consistent if every gap is within 6 %, "
        "inconsistent otherwise",
        "physics: an engine above 241,834 tok/s per GPU at batch 8 per rank or any larger batch "
        "(the compute ceiling does not grow with it) would mean the batch is not per rank on 64 "
        "ranks",
        "published: any DeepInfer throughput measurement at these batch sizes",
    ]


def test_throughput_table_rows_in_full(tmp_path):
    """Engine a at batch 8 on 4 decode ranks: 2 requests of 10 decode tokens in 1.0 s each
    (latency 1.1 s - TTFT 0.1 s): 8 x 20 / 2.0 = 80 tok/s per rank, 4 x 80 = 320 of all ranks,
    8 x 100 / 0.1 = 8,000 prefill tok/s, TPOT 2,000 ms / 20 = 100 ms, TTFT 100 ms; b at batch
    16 on one rank: 16 x 20 / 1.6 = 200 tok/s, TPOT 80 ms. Rows sort by engine, then batch."""
    t = _trace(tmp_path, [("b", 16, 0.9), ("a", 8, 1.1)])
    t.points["decode_ranks"] = t.points["point_id"].map({"a-8": 4, "b-16": 1}).astype("Int64")
    tab = decode_parity.throughput_table(t)
    assert list(tab.columns) == [
        "point_id", "engine", "config", "batch", "decode_ranks", "requests", "decode_tok_s",
        "decode_tok_s_total", "prefill_tok_s", "tpot_ms", "ttft_ms",
    ]  # fmt: skip
    got = [tuple(r) for r in tab.itertuples(index=False)]
    assert got == [
        ("a-8", "a", "default", 8, 4, 2, pytest.approx(80.0), pytest.approx(320.0),
         pytest.approx(8000.0), pytest.approx(100.0), pytest.approx(100.0)),
        ("b-16", "b", "default", 16, 1, 2, pytest.approx(200.0), pytest.approx(200.0),
         pytest.approx(16000.0), pytest.approx(80.0), pytest.approx(100.0)),
    ]  # fmt: skip


def test_a_ceiling_that_grows_with_the_batch(tmp_path):
    """Batch 1 and 2 per rank on 64 GB300 ranks are bandwidth-bound: 42,600 and 85,201 tok/s
    per GPU (twice the tokens per weight read), so the span names both ceilings and the
    physics flip names the larger batch's own ceiling; measured kernels reach 583 and 1,018."""
    pts = [("a", 1, 1.1), ("b", 1, 1.05), ("a", 2, 1.1), ("b", 2, 0.9)]
    an = decode_parity.analyse(
        _trace(tmp_path, pts), decode_parity.Params(engine_a="a", engine_b="b", batch_sizes=[1, 2])
    )
    v = an.values()
    assert (v["worst_batch"], v["inside"], v["n_batches"]) == (2, 1, 2)
    assert v["max_gap_pct"] == pytest.approx(-20.0) and v["prefill_gap_pct"] == pytest.approx(0)
    assert v["ceiling_low_batch"] == pytest.approx(42_600.3237624606, rel=1e-9)
    assert v["ceiling_high_batch"] == pytest.approx(85_200.6475249212, rel=1e-9)
    assert v["ceiling_limit"] == "memory bandwidth"
    out = decode_parity.outcome(an)
    assert out.flips[1] == (
        "physics: an engine above 42,600 tok/s per GPU at batch 1 per rank (or 85,201 at 2) "
        "would mean the batch is not per rank on 64 ranks"
    )
    phys = out.reading("decode-parity.gap", "physics")
    assert phys.reason == (
        "a ratio of two engines on the same GPUs: physics bounds each (ceilings 42,600 tok/s "
        "per GPU at batch 1 per rank to 85,201 at 2), not the ratio"
    )
    assert phys.attainable["text"].startswith(
        "measured kernels reach 583 tok/s per GPU at batch 1 per rank and 1,018 at 2 on 64 "
        "ranks (attention data-parallel + experts expert-parallel on 64 GPUs"
    )
    assert phys.attainable["text"].endswith(
        "the claim is a ratio of two engines, which this does not bound"
    )
    assert phys.attainable["ratio"] is None and phys.margin == "-"
    expected = phys.attainable["expected"]  # the claim's 1.0 against what deployments reach
    assert expected["ratio"] == pytest.approx(1 / expected["tok_s_per_gpu"], rel=1e-9)
    assert phys.attainable["tok_s_per_gpu"] == pytest.approx(1017.7483516185964, rel=1e-9)
    mixed = decode_parity.analyse(
        _trace(tmp_path, pts), decode_parity.Params(engine_a="a", engine_b="b", batch_sizes=[1, 8])
    )
    assert mixed.values()["ceiling_limit"] == "memory bandwidth and compute"


def test_engine_b_from_trace_b_replaces_the_first_traces_engine_b(tmp_path):
    """Engine A's points come from the first trace, engine B's from ``trace_b`` only: the
    first trace's DeepInfer point (0.5 s) and trace_b's vLLM point (0.3 s) are dropped, so A
    decodes 80 tok/s and B 8 x 20 / 1.9 = 84.21 at batch 8: gap -5 %, consistent when both
    traces are Blackwell recordings, untested when trace_b is not."""
    g = ("NVIDIA B300",)
    a = _testable(_trace(tmp_path / "a", [("a", 8, 1.1), ("deepinfer", 8, 0.5)], g), g)
    params = decode_parity.Params(engine_a="a", engine_b="deepinfer", batch_sizes=[8])
    cases = ((g, "consistent", "-5.0 %", "1 x NVIDIA B300"), ((), "untested", "-", None))
    for gpus, verdict, margin, label in cases:
        b = _trace(tmp_path / f"b{len(gpus)}", [("deepinfer", 8, 1.05), ("a", 8, 0.3)], gpus)
        b = _testable(b, gpus)
        an = decode_parity.analyse(a, params, trace_b=b)
        tab = an.table
        assert list(zip(tab["point_id"], tab["decode_tok_s"].round(2), strict=True)) == [
            ("a-8", 80.0),
            ("deepinfer-8", 84.21),
        ]
        if label:
            assert an.hardware == f"1 x NVIDIA B300; engine B: {label}"
        else:
            assert an.hardware.startswith("1 x NVIDIA B300; engine B: ") and "no GPU" in an.hardware
        out = decode_parity.outcome(an)
        assert out.trace_ids == [a.trace_id, b.trace_id]
        run = out.reading("decode-parity.gap", "this run")
        assert (run.verdict, run.margin) == (verdict, margin)


def test_throughput_table_edge_rows(tmp_path):
    """Edited requests, one point each: a point without a batch (skipped, and the points after
    it still read), one whose requests all failed (skipped), outputs of 0 and 11 tokens (0 + 10
    decode tokens, never -1 + 10), a zero decode time (no decode rate, no TPOT), a zero TTFT (no
    prefill rate) and 0.8 s of decode in all (8 x 20 / 0.8 = 200 tok/s, 400 on 2 ranks)."""
    pts = [("n", 8, 1.1), ("f", 8, 1.1), ("o", 8, 1.1), ("z", 8, 1.1), ("t", 8, 1.1), ("s", 8, 0.5)]
    t = _trace(tmp_path, pts)
    t.points.loc[t.points["point_id"] == "n-8", ["batch_size", "concurrency"]] = pd.NA
    t.points["decode_ranks"] = t.points["point_id"].map({"s-8": 2}).fillna(1).astype("Int64")
    req = t.requests
    req.loc[req["point_id"] == "f-8", "success"] = False
    first = req.index[req["point_id"] == "o-8"][0]
    req.loc[first, "output_tokens"] = 0
    z = req["point_id"] == "z-8"
    req.loc[z, "e2el_s"], req.loc[z, "output_tokens"] = req.loc[z, "ttft_s"], 1
    req.loc[req["point_id"] == "t-8", "ttft_s"] = 0.0
    tab = decode_parity.throughput_table(t).set_index("point_id")
    assert tab.index.tolist() == ["o-8", "s-8", "t-8", "z-8"]
    assert tab.loc["o-8", "decode_tok_s"] == pytest.approx(8 * 10 / 2.0)
    assert tab.loc["o-8", "tpot_ms"] == pytest.approx(200.0)  # 2,000 ms / 10 tokens
    z_row = tab.loc["z-8", ["decode_tok_s", "decode_tok_s_total", "tpot_ms"]]
    assert z_row.isna().all() and tab.loc["z-8", "prefill_tok_s"] == pytest.approx(8000.0)
    assert np.isnan(tab.loc["t-8", "prefill_tok_s"]) and tab.loc["t-8", "ttft_ms"] == 0.0
    s = tab.loc["s-8"]
    assert (s["decode_tok_s"], s["decode_tok_s_total"]) == (pytest.approx(200), pytest.approx(400))
    ordered = decode_parity.throughput_table(t)
    assert ordered.index.tolist() == [0, 1, 2, 3]


def test_parity_takes_each_batchs_widest_point_and_keeps_integer_columns(tmp_path):
    """Engine a measured batch 8 on 1 rank (80 tok/s) and on 4 ranks (8 x 20 / 1.0 = 160):
    parity reads the 4-rank point; with no batch in common the table is empty, its batch and
    rank columns still integers."""
    t = _trace(tmp_path, [("a", 8, 1.1), ("a", 16, 0.6), ("b", 8, 1.1)])
    t.points.loc[t.points["point_id"] == "a-16", "batch_size"] = 8
    t.points["decode_ranks"] = t.points["point_id"].map({"a-16": 4}).fillna(1).astype("Int64")
    par = decode_parity.parity(decode_parity.throughput_table(t), "a", "b")
    assert par[["batch", "a", "b", "ranks_a", "ranks_b"]].values.tolist() == [[8, 160, 80, 4, 1]]
    assert par["gap_pct"].tolist() == [pytest.approx(100.0)]
    none = decode_parity.parity(decode_parity.throughput_table(t), "a", "c")
    assert none.empty and none["batch"].dtype == "int64" and none["ranks_a"].dtype == "int64"


def test_missing_piece_names_every_missing_engine():
    params = decode_parity.Params(engine_a="a", engine_b="b")
    empty = pd.DataFrame({"batch": []})
    assert decode_parity.missing_piece(set(), params, empty) == (
        "no engine-A points (a): record vLLM's sweep (`--source live`) or import its results "
        "with `rackbook import vllm-bench`; no engine-B points (b): record an offline engine or "
        "import its results with `rackbook import offline-engine`"
    )
    both = decode_parity.missing_piece({"a", "b"}, params, empty)
    assert both == "no batch size per rank measured by both engines"
    assert decode_parity.missing_piece({"a", "b"}, params, pd.DataFrame({"batch": [8]})) == ""


def test_the_band_parameter_the_claims_batches_and_a_gap_exactly_at_the_band(tmp_path):
    """``band_pct`` given replaces the registry's 6 %; batch 16 is measured by both engines but
    not asked for, so it is left out of the decode and the prefill tables; a gap exactly at the
    band is inside it (|gap| <= band)."""
    g = ("NVIDIA B200",)  # Blackwell (not Ultra): DeepInfer's claim is on Blackwell GPUs
    pts = [("a", 8, 1.1), ("deepinfer", 8, 1.05), ("a", 16, 1.1), ("deepinfer", 16, 0.9)]
    t = _testable(_trace(tmp_path, pts, g), g)
    gap = abs(decode_parity.parity(decode_parity.throughput_table(t), "a", "deepinfer")["gap_pct"])
    params = decode_parity.Params(
        engine_a="a", engine_b="deepinfer", batch_sizes=[8], band_pct=float(gap.iloc[0])
    )
    an = decode_parity.analyse(t, params)
    assert an.band_pct == gap.iloc[0] and an.inside == 1
    assert an.decode["batch"].tolist() == [8] and an.prefill["batch"].tolist() == [8]
    out = decode_parity.outcome(an)
    assert out.parameters["band_pct"] == gap.iloc[0]
    run = out.reading("decode-parity.gap", "this run")
    assert (run.verdict, run.margin) == ("consistent", "-5.0 %")
    assert run.reason == "largest gap -5.0 % at batch 8; 1/1 batch sizes within the band"
    default = decode_parity.Params(engine_a="a", engine_b="deepinfer", batch_sizes=[8])
    assert decode_parity.outcome(decode_parity.analyse(t, default)).parameters["band_pct"] == 6.0


def test_one_engine_only_has_no_gap_values(tmp_path):
    """Without a batch both engines measured: no gap (NaN), worst batch 0, the run reading's
    margin "-", and its reason the missing piece."""
    an = decode_parity.analyse(
        _trace(tmp_path, [("a", 8, 1.1)]), decode_parity.Params(engine_a="a", engine_b="b")
    )
    v = an.values()
    assert np.isnan(v["max_gap_pct"]) and np.isnan(v["prefill_gap_pct"])
    assert (v["worst_batch"], v["inside"], v["n_batches"]) == (0, 0, 0)
    run = decode_parity.outcome(an).reading("decode-parity.gap", "this run")
    assert (run.verdict, run.margin) == ("untested", "-")
    assert run.reason.startswith("no engine-B points (b): record an offline engine")


def test_a_claim_without_a_batch_span(tmp_path):
    """A registry whose claim names no batch sizes: the values say None, the flip names the
    chapter's own span, 8 to 256; a claim of 16 to 128 is named as such."""
    reg = edited_registry({"decode-parity.gap": lambda c: c["scope"].update(batch_sizes=None)})
    ab = decode_parity.Params(engine_a="a", engine_b="b", batch_sizes=[8, 16])
    an = decode_parity.analyse(_trace(tmp_path, POINTS), ab, registry=reg)
    v = an.values()
    assert (v["claim_batch_low"], v["claim_batch_high"]) == (None, None)
    assert "at per-rank batches 8 to 256 turns it consistent" in decode_parity.outcome(an).flips[0]
    span = {"low": 16, "high": 128}
    reg = edited_registry({"decode-parity.gap": lambda c: c["scope"].update(batch_sizes=span)})
    an = decode_parity.analyse(_trace(tmp_path, POINTS), ab, registry=reg)
    assert "at per-rank batches 16 to 128 turns it consistent" in decode_parity.outcome(an).flips[0]


def test_uncovered_claim_batches_are_listed(tmp_path):
    g = ("NVIDIA B300",)
    t = _testable(_trace(tmp_path, [("a", 8, 1.1), ("deepinfer", 8, 1.05)], g), g)
    params = decode_parity.Params(engine_a="a", engine_b="deepinfer", batch_sizes=[8, 16, 32])
    run = decode_parity.outcome(decode_parity.analyse(t, params)).reading(
        "decode-parity.gap", "this run"
    )
    assert run.reason == (
        "largest gap -5.0 % at batch 8; 1/1 batch sizes within the band; the claim's batch sizes "
        "16, 32 not measured by both engines: the claim's range is not covered"
    )


def test_decode_bound_and_ceilings_table(tmp_path):
    """On 64 GB300 ranks batch 8 per rank is compute-bound (the decode phase's roofline), on one
    rank memory-bound; the table keeps batch, ceiling, limit and formula. Batch 1, 2, 4 per
    rank: the values quote the first ceiling and the last (42,600 and 4 x that)."""
    p = decode_parity.Params()
    comp = roofline.compute_ceiling_tokens_per_s("deepseek-v4.1-flash", "gb300", "decode")
    b = decode_parity.decode_bound(p, 64, 8)
    assert b == check.PerGpuCeiling("compute", comp.tokens_per_s, comp.formula, "decode")
    assert decode_parity.decode_bound(p, 1, 8).name == "memory bandwidth"
    c = decode_parity.ceilings(decode_parity.Params(batch_sizes=[16, 8]))
    assert list(c.columns) == ["batch", "ceiling_tok_s_per_gpu", "limit", "formula"]
    assert c["batch"].tolist() == [8, 16] and c["formula"].tolist() == [comp.formula] * 2
    three = decode_parity.Params(engine_a="a", engine_b="b", batch_sizes=[1, 2, 4])
    v = decode_parity.analyse(_trace(tmp_path, POINTS), three).values()
    assert v["ceiling_low_batch"] == pytest.approx(42_600.3237624606, rel=1e-9)
    assert v["ceiling_high_batch"] == pytest.approx(4 * 42_600.3237624606, rel=1e-9)
