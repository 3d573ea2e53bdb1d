"""Decode parity on hand-made traces: throughput per batch size, the parity table, the largest
gap and every verdict the chapter can reach, with expectations computed by hand."""

from __future__ import annotations

import copy

import pytest
from conftest import synthetic_trace

from rackbook.core.importers import vllm_bench_frames
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


def _trace(tmp_path, points, gpus=()):
    """points: (engine, batch, latency of engine's requests); 2 requests of 11 output tokens,
    TTFT 0.1 s each. run.json's GPU inventory: ``gpus``."""
    frames = [
        vllm_bench_frames(
            tmp_path / f"{eng}-{b}.json",
            {"engine": eng, "batch_size": str(b)},
            point_id=f"{eng}-{b}",
            data=_result(2, 11, 0.1, lat),
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


@pytest.mark.parametrize(
    "gpus,engine_b,points,verdict",
    [
        ((), "b", POINTS, "not reproduced"),  # CPU stand-in
        (("NVIDIA B300",), "b", POINTS, "not reproduced"),  # engine B is not DeepInfer
        (("NVIDIA B300",), "deepinfer", [("a", 8, 1.1), ("deepinfer", 8, 1.05)], "consistent"),
        (("NVIDIA B300",), "deepinfer", [("a", 16, 1.1), ("deepinfer", 16, 0.9)], "inconsistent"),
    ],
    ids=["cpu", "not-deepinfer", "within-band", "outside-band"],
)
def test_every_verdict(tmp_path, gpus, engine_b, points, verdict):
    t = _trace(tmp_path, points, gpus)
    params = decode_parity.Params(engine_a="a", engine_b=engine_b, batch_sizes=[8, 16])
    an = decode_parity.analyse(t, params)
    assert an.verdict == verdict
    out = decode_parity.outcome(an)
    assert out.verdict == verdict and out.headlines[0].verdict == verdict
    assert out.headlines[0].claim_id == "decode-parity.gap"


def test_the_band_comes_from_the_registry(tmp_path):
    """Widen the published band in a copy of the registry: the same -20 % gap turns consistent,
    and the headline's definition shows the new band, not the old."""
    raw = load_claims().model_dump(mode="python")
    raw = copy.deepcopy(raw)
    for c in raw["claims"]:
        if c["id"] == "decode-parity.gap":
            c["value"] = 25.0
    reg = parse_claims(raw, "edited")
    t = _trace(tmp_path, [("a", 16, 1.1), ("deepinfer", 16, 0.9)], ("NVIDIA B300",))
    params = decode_parity.Params(engine_a="a", engine_b="deepinfer", batch_sizes=[16])
    an = decode_parity.analyse(t, params, registry=reg)
    assert an.band_pct == 25.0 and an.verdict == "consistent"
    text = " ".join(h.definition + h.reason for h in decode_parity.outcome(an).headlines)
    assert "25 %" in text and "6 %" not in text
