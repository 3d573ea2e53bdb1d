"""Decode parity on hand-made traces: throughput per batch size, the parity table, the largest
gap and every verdict the chapter can reach, with expectations computed by hand."""

from __future__ import annotations

import copy

import pytest
from conftest import analyse_shipped, synthetic_trace

from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.inputs.claims import load_claims, parse_claims
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
    with pytest.raises(ValueError, match="no batch size measured by both engines"):
        decode_parity.largest_gap(par.iloc[:0])


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
    raw = load_claims().model_dump(mode="python")
    raw = copy.deepcopy(raw)
    for c in raw["claims"]:
        if c["id"] == "decode-parity.gap":
            c["value"] = 25.0
    reg = parse_claims(raw, "edited")
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
    got = [(h.name, h.value, h.unit, h.kind, h.verdict, h.claim_id) for h in out.headlines]
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
