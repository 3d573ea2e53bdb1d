"""Metrics against hand-computed values (vLLM's definitions)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_result

from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.metrics import (
    grouped_stats,
    latency_stats,
    mean_std,
    order_stats,
    tpot_s,
    vllm_metrics,
)
from rackbook.core.provenance import new_run_info
from rackbook.core.summary import summarize
from rackbook.core.traces import validate
from rackbook.errors import InputError


def _trace(tmp_path, d):
    p = tmp_path / "r.json"
    t = vllm_bench_frames(p, {"engine": "e"}, data=d)
    t.run = new_run_info(kind="recorded", commands=["x"], parameters={}, engine={"name": "t"})
    return validate(t)


def test_counts_and_throughputs(tmp_path):
    s = summarize(_trace(tmp_path, small_result())).to_dict()
    assert s["completed"] == 2 and s["failed"] == 1
    assert s["total_input_tokens"] == 30  # failed request's 30 prompt tokens not counted
    assert s["total_output_tokens"] == 6
    assert s["request_throughput"] == pytest.approx(1.0)
    assert s["output_throughput"] == pytest.approx(3.0)
    assert s["total_token_throughput"] == pytest.approx(18.0)


def test_latency_statistics(tmp_path):
    s = summarize(_trace(tmp_path, small_result())).to_dict()
    assert s["mean_ttft_ms"] == pytest.approx(150.0)
    assert s["median_ttft_ms"] == pytest.approx(150.0)
    assert s["std_ttft_ms"] == pytest.approx(50.0)  # population std, as np.std
    assert s["p99_ttft_ms"] == pytest.approx(199.0)  # linear interpolation
    # TPOT: (0.7-0.1)/3 = 0.2 s and (0.6-0.2)/1 = 0.4 s
    assert s["mean_tpot_ms"] == pytest.approx(300.0)
    # ITL pooled over successful requests: 0.1, 0.2, 0.3, 0.4
    assert s["mean_itl_ms"] == pytest.approx(250.0)
    assert s["p90_itl_ms"] == pytest.approx(370.0)
    assert s["mean_e2el_ms"] == pytest.approx(650.0)


def test_tpot_skips_single_token_requests():
    t = tpot_s(np.array([0.1, 0.1]), np.array([0.5, 0.9]), np.array([1, 5]))
    assert t.tolist() == pytest.approx([0.2])


def test_all_failed_is_refused_in_one_line(tmp_path):
    """Issue 38: an all-failed trace read as "one stream at nan tok/s", exit 0; vLLM's zeros
    are not a measurement either. Refused on import and on read."""
    d = small_result(errors=["a", "b", "c"], completed=0, failed=3)
    with pytest.raises(InputError, match="requests.success: no request succeeded"):
        _trace(tmp_path, d)


def test_points_are_summarised_separately(tmp_path):
    from rackbook.core.traces import concat

    a = vllm_bench_frames(tmp_path / "a.json", {"batch_size": "2"}, data=small_result())
    b = vllm_bench_frames(tmp_path / "b.json", {"batch_size": "4"}, data=small_result(duration=4.0))
    run = new_run_info(kind="recorded", commands=[], parameters={}, engine={})
    s = summarize(validate(concat([a, b], run))).to_dict()
    assert [p["batch_size"] for p in s["points"]] == [2, 4]
    assert s["duration"] == pytest.approx(6.0)
    assert s["points"][1]["output_throughput"] == pytest.approx(1.5)
    assert s["completed"] == 4
    assert s["mean_itl_ms"] == pytest.approx(250.0)


def test_translation_across_tools(tmp_path):
    from rackbook.core.cross_tool import translate

    t = translate(_trace(tmp_path, small_result()), gpus=2).set_index(["tool", "name"])["value"]
    assert t[("AIPerf", "inter_token_latency")] == pytest.approx(300.0)  # vLLM's TPOT
    assert t[("guidellm", "inter_token_latency")] == pytest.approx(300.0)
    # guidellm counts the first token: mean of 0.7/4 and 0.6/2 s = 237.5 ms
    assert t[("guidellm", "time_per_output_token")] == pytest.approx(237.5)
    assert t[("AIPerf", "inter_chunk_latency")] == pytest.approx(250.0)  # vLLM's ITL
    assert t[("InferenceX", "tput_per_gpu")] == pytest.approx(9.0)  # 18 tok/s / 2 GPUs
    assert t[("vLLM", "output_throughput / GPUs")] == pytest.approx(1.5)
    assert t[("InferenceX", "interactivity")] == pytest.approx(1000 / 300)


def test_summary_is_typed_and_its_json_keeps_vllm_names(tmp_path):
    s = summarize(_trace(tmp_path, small_result()))
    d = s.to_dict()
    assert s.metrics.completed == d["completed"] == 2
    assert s.metrics.total_output == d["total_output_tokens"] == 6
    assert s.metrics.latency["p99_ttft_ms"] == d["p99_ttft_ms"]
    assert [p.point_id for p in s.points] == [p["point_id"] for p in d["points"]]
    assert s.points[0].metrics.latency["mean_tpot_ms"] == d["points"][0]["mean_tpot_ms"]


def test_latency_stats_in_ms_as_vllm_keys_them():
    """metrics.latency_stats itself (the reference the streamed pool is held to): seconds in,
    milliseconds out, numpy's linear percentiles, vLLM's key for a fractional percentile."""
    got = latency_stats("ttft", np.array([4.0, 1.0, 3.0, 2.0]), (25.0, 99.0, 99.9))
    assert got == pytest.approx(
        {
            "mean_ttft_ms": 2500.0,
            "median_ttft_ms": 2500.0,
            "std_ttft_ms": 1000.0 * 1.25**0.5,  # population std
            "p25_ttft_ms": 1750.0,
            "p99_ttft_ms": 3970.0,  # 1 + 3 x 0.99 s
            "p99.9_ttft_ms": 3997.0,
        },
        rel=1e-12,
    )
    assert latency_stats("itl", np.zeros(0), (99.0,)) == {
        "mean_itl_ms": 0.0,
        "median_itl_ms": 0.0,
        "std_itl_ms": 0.0,
        "p99_itl_ms": 0.0,
    }


def test_vllm_metrics_counts_the_failed_requests(tmp_path):
    t = _trace(tmp_path, small_result())
    m = vllm_metrics(t.requests, t.itl["itl_s"].to_numpy(), 2.0, (50.0, 99.9))
    assert (m.completed, m.failed, m.total_input, m.total_output) == (2, 1, 30, 6)
    pct = {k: v for k, v in m.latency.items() if k in ("p50_ttft_ms", "p99.9_ttft_ms")}
    assert pct == pytest.approx({"p50_ttft_ms": 150.0, "p99.9_ttft_ms": 199.9}, rel=1e-12)
    assert m.to_dict()["p99.9_ttft_ms"] == pytest.approx(199.9, rel=1e-12)


def test_translation_table_defaults_and_edges(tmp_path):
    """One GPU by default; the table's columns; guidellm's TPOT over requests with tokens (one
    token counts: e2el / 1); no TPOT (every success one token long): interactivity NaN, not a
    division by zero; a TPOT under 1 ms still inverts."""
    from rackbook.core.cross_tool import translate

    one = small_result(output_lens=[1, 4, 0], itls=[[], [0.1, 0.15, 0.15], []])
    t = translate(_trace(tmp_path, one))
    assert list(t.columns) == ["quantity", "tool", "name", "value", "unit", "definition"]
    v = t.set_index(["tool", "name"])["value"]
    assert v[("InferenceX", "tput_per_gpu")] == pytest.approx((30 + 5) / 2.0)  # 1 GPU
    # (0.7 / 1 + 0.6 / 4) / 2 s
    assert v[("guidellm", "time_per_output_token")] == pytest.approx(425.0)
    only_one = small_result(output_lens=[1, 1, 0], itls=[[], [], []])
    v = translate(_trace(tmp_path, only_one)).set_index(["tool", "name"])["value"]
    assert np.isnan(v[("InferenceX", "interactivity")])
    assert v[("guidellm", "time_per_output_token")] == pytest.approx(650.0)  # (0.7 + 0.6) / 2
    fast = small_result(latencies=[0.1015, 0.2005, 0.0], itls=[[0.0005] * 3, [0.0005], []])
    v = translate(_trace(tmp_path, fast)).set_index(["tool", "name"])["value"]
    assert v[("InferenceX", "interactivity")] == pytest.approx(2000.0)  # TPOT 0.5 ms


def test_translation_reads_only_its_points_gaps(tmp_path):
    """The pooled gaps of the chosen point's successful requests, not another point's."""
    from rackbook.core.cross_tool import translate
    from rackbook.core.traces import concat

    parts = [
        vllm_bench_frames(tmp_path / f"{b}.json", {"batch_size": str(b)}, data=small_result(**kw))
        for b, kw in (
            (1, {}),
            # gaps that add up to each request's e2el - ttft (0.06 s and 0.04 s)
            (2, {"itls": [[0.01, 0.02, 0.03], [0.04], []], "latencies": [0.16, 0.24, 0.0]}),
        )
    ]
    run = new_run_info(kind="recorded", commands=["x"], parameters={}, engine={"name": "t"})
    t = validate(concat(parts, run))
    second = str(t.points["point_id"].iloc[1])
    v = translate(t, point_id=second).set_index(["tool", "name"])["value"]
    assert v[("AIPerf", "inter_chunk_latency")] == pytest.approx(25.0)  # 10, 20, 30, 40 ms
    v = translate(t).set_index(["tool", "name"])["value"]  # the first point by default
    assert v[("AIPerf", "inter_chunk_latency")] == pytest.approx(250.0)


PCTS = (0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0)


def _values(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "lognormal":
        return rng.lognormal(np.log(0.02), 0.3, n)
    if kind == "ties":
        return rng.integers(0, 4, n).astype(float) / 8
    return np.where(rng.random(n) < 0.5, 0.0, 1e150 * rng.random(n))


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 4097])
@pytest.mark.parametrize("kind", ["lognormal", "ties", "zeros-and-huge"])
def test_order_stats_are_numpys_bit_for_bit(n, kind):
    """One rank partitioned at a time gives np.median and np.percentile's numbers exactly."""
    v = _values(kind, n, np.random.default_rng(n))
    median, pct = order_stats(v.copy(), PCTS)
    assert median == np.median(v)
    assert pct == [float(x) for x in np.percentile(v, PCTS)]
    assert mean_std(v) == (np.mean(v), np.std(v))


@pytest.mark.parametrize("order", ["contiguous", "interleaved"])
@pytest.mark.parametrize("kind", ["lognormal", "ties", "zeros-and-huge"])
def test_grouped_stats_are_numpys_per_point(order, kind):
    """Points in order or interleaved: every statistic is numpy's on the point's values (row
    order kept for mean and std), bit for bit; an unknown point (index 3) counts in the whole."""
    rng = np.random.default_rng(7)
    n = 3000
    v = _values(kind, n, rng)
    codes = np.repeat(np.arange(4), n // 4) if order == "contiguous" else np.arange(n) % 4
    total, per = grouped_stats("ttft", v.copy(), codes.astype(np.int8), 3, PCTS)
    assert len(per) == 3
    assert total == latency_stats("ttft", v, PCTS)
    assert per == [latency_stats("ttft", v[codes == i], PCTS) for i in range(3)]
    empty = grouped_stats("x", np.zeros(0), np.zeros(0, np.int8), 2, (99.0,))
    assert empty == (latency_stats("x", np.zeros(0), (99.0,)),) + ([empty[0]] * 2,)


def test_percentiles_between_ranks_are_numpys_bit_for_bit():
    """Every percentile from 0 to 100 by 0.5 on uneven values: the interpolation between two
    ranks rounds as numpy's does (from below under half the step, from above at or past it)."""
    rng = np.random.default_rng(11)
    pcts = tuple(float(p) for p in np.arange(0, 100.5, 0.5))
    for n in (2, 3, 10, 401):
        v = rng.random(n) * 10.0 ** rng.integers(-3, 4, n)
        assert order_stats(v.copy(), pcts)[1] == [float(x) for x in np.percentile(v, pcts)]


def test_statistics_past_one_block_are_numpys():
    """More values than one block (1 Mi): mean, std and each point's statistics still match
    numpy over all of them, in order and interleaved."""
    rng = np.random.default_rng(5)
    n = (1 << 20) + 300_001
    v = rng.lognormal(np.log(0.02), 0.3, n)
    mean, std = mean_std(v)
    assert mean == pytest.approx(np.mean(v), rel=1e-12)
    assert std == pytest.approx(np.std(v), rel=1e-9)
    for codes in (np.repeat(np.arange(3), -(-n // 3))[:n], np.arange(n) % 3):
        total, per = grouped_stats("itl", v.copy(), codes.astype(np.int8), 3, (50.0, 99.0))
        for i, got in enumerate(per):
            w = v[codes == i]
            assert got["median_itl_ms"] == float(np.median(w) * 1000)
            assert got["p99_itl_ms"] == float(np.percentile(w, 99.0) * 1000)
            assert got["mean_itl_ms"] == pytest.approx(np.mean(w) * 1000, rel=1e-12)
        assert total["p50_itl_ms"] == float(np.percentile(v, 50.0) * 1000)


def test_latency_stats_leaves_the_callers_array_in_place():
    v = np.array([0.3, 0.1, 0.2, 0.05])
    latency_stats("ttft", v, (50.0,))
    assert v.tolist() == [0.3, 0.1, 0.2, 0.05]
