"""Decode latency against context length on a hand-made trace, the linear fit, deltas, and the
KV-bandwidth model against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
from conftest import synthetic_run

from rackbook.core.importers import vllm_bench_frames
from rackbook.core.traces import concat, validate
from rackbook.errors import InputError
from rackbook.results import context_latency

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
