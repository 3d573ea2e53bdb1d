"""Order statistics from bucket passes over pieces are the numbers numpy gives."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_result

from rackbook.core import latency_pool, metrics, orderstats, summary
from rackbook.core.importers import vllm_bench
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import concat

PCTS = (0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0)


def _stats(pieces, pcts=PCTS):
    """(mean, std, median, percentiles) of the pieces taken together, or None."""
    res = orderstats.grouped_stats([pieces], pieces, pcts)
    return None if res is None else res[1]


def _pieces(v: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    cuts = np.sort(rng.integers(0, v.size + 1, 5))
    return [p for p in np.split(v, cuts)]


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 4097])
@pytest.mark.parametrize("kind", ["lognormal", "ties", "zeros-and-huge"])
def test_equal_to_numpy(monkeypatch, n, kind):
    monkeypatch.setattr(orderstats, "BLOCK", 64)  # many blocks per piece
    rng = np.random.default_rng(n)
    if kind == "lognormal":
        v = rng.lognormal(np.log(0.02), 0.3, n)
    elif kind == "ties":
        v = rng.integers(0, 4, n).astype(float) / 8
    else:
        v = np.where(rng.random(n) < 0.5, 0.0, rng.uniform(1e-9, 1e6, n))
    mean, std, median, pct = _stats(_pieces(v, rng))
    assert median == np.median(v)
    assert pct == [float(x) for x in np.percentile(v, PCTS)]
    assert mean == pytest.approx(np.mean(v), rel=1e-12)
    assert std == pytest.approx(np.std(v), rel=1e-9)
    ks = sorted({0, n - 1, n // 2})
    got = orderstats.grouped_order_stats([_pieces(v, rng)], [ks])[0][0]
    assert [got[k] for k in ks] == [np.sort(v)[k] for k in ks]


@pytest.mark.parametrize("bad", [-1.0, -0.0])
def test_negative_values_are_left_to_the_caller(bad):
    assert _stats([np.array([1.0, bad, 2.0])], (50.0,)) is None


def test_pool_with_a_negative_value_takes_numpys_statistics():
    v = np.array([0.3, -0.1, 0.2, 0.5, 0.4])
    pool = latency_pool.LatencyPool(2, capacity=5)
    pool.add(np.array([0, 0, 1, 1, 1], np.int8), v)
    total, per = pool.stats("x", PCTS, 2)
    assert total == metrics.latency_stats("x", v, PCTS)
    assert per == [metrics.latency_stats("x", w, PCTS) for w in (v[:2], v[2:])]


def test_large_windows_give_the_same_percentiles(tmp_path, monkeypatch):
    """A trace summarised in many blocks per window (the block lowered) gives the same
    medians and percentiles as the contiguous path, means and stds to rounding."""
    rng = np.random.default_rng(5)
    parts = []
    for b in (2, 4):
        n = 60
        out = rng.integers(2, 9, n)
        d = small_result(
            completed=n,
            input_lens=rng.integers(1, 50, n).tolist(),
            output_lens=out.tolist(),
            ttfts=rng.uniform(0.01, 0.2, n).tolist(),
            latencies=rng.uniform(0.5, 1.0, n).tolist(),
            errors=[""] * n,
            itls=[rng.uniform(1e-4, 0.05, int(o) - 1).tolist() for o in out],
        )
        d.pop("start_times", None)
        parts.append(
            vllm_bench.vllm_bench_frames(tmp_path / f"{b}.json", {"batch_size": str(b)}, data=d)
        )
    run = new_run_info(
        kind="synthetic",
        commands=["test"],
        parameters={},
        engine={"name": "t"},
        generator={"name": "tests/test_orderstats.py", "seed": 5},
    )
    t = concat(parts, run)
    want = summary.summarize(t).to_dict()
    monkeypatch.setattr(orderstats, "BLOCK", 16)
    got = summary.summarize(t).to_dict()
    for g, w in zip([got, *got["points"]], [want, *want["points"]], strict=True):
        for k, v in w.items():
            if isinstance(v, float) and (k.startswith("mean_") or k.startswith("std_")):
                assert g[k] == pytest.approx(v, rel=1e-12), k
            elif k != "points":
                assert g[k] == v, k


@pytest.mark.parametrize(
    "v",
    [
        np.full(10, 0.25),  # one value: one bucket
        np.array([0.0, 5e-324, 1e-300, 1e-3, 1.0, 1e150] * 3),  # nearly all doubles
        np.linspace(0.5, 0.5000001, 1000),  # a range narrower than one bucket of 16 bits
    ],
)
def test_buckets_span_any_range(v):
    b = orderstats._Buckets([[v]])
    assert b.size <= orderstats._BUCKETS and not b.negative
    assert np.all(np.diff(b.of(np.sort(v))) >= 0)  # buckets order like the values
    mean, std, median, pct = _stats([v])
    assert median == np.median(v) and pct == [float(x) for x in np.percentile(v, PCTS)]


@pytest.mark.parametrize("order", ["contiguous", "interleaved"])
@pytest.mark.parametrize("kind", ["lognormal", "ties", "zeros-and-huge"])
def test_pool_statistics_are_numpys(monkeypatch, order, kind):
    """Past the block size (lowered), points in order or interleaved: every median and
    percentile is numpy's on the point's values, bit for bit; means and stds to rounding."""
    monkeypatch.setattr(orderstats, "BLOCK", 64)
    rng = np.random.default_rng(7)
    n = 3000
    if kind == "lognormal":
        v = rng.lognormal(np.log(0.02), 0.3, n)
    elif kind == "ties":
        v = rng.integers(0, 4, n).astype(float) / 8
    else:
        v = np.where(rng.random(n) < 0.5, 0.0, 1e150 * rng.random(n))
    codes = np.repeat(np.arange(3), n // 3) if order == "contiguous" else np.arange(n) % 3
    pool = latency_pool.LatencyPool(3, exact=True, capacity=n)
    for lo in range(0, n, 700):  # in chunks, as a streamed summary adds them
        pool.add(codes[lo : lo + 700].astype(np.int8), v[lo : lo + 700])
    total, per = pool.stats("ttft", PCTS, 3)
    for got, want in zip([total, *per], [v, *(v[codes == i] for i in range(3))], strict=True):
        ref = metrics.latency_stats("ttft", want.copy(), PCTS)
        for k, x in ref.items():
            if k.startswith(("mean_", "std_")):
                assert got[k] == pytest.approx(x, rel=1e-12), k
            else:
                assert got[k] == x, k
