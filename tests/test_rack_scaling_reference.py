"""Per-point GPU counts from replicas, and scaling against a reference configuration, on
hand-made traces with hand-computed expectations."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import synthetic_trace

from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.errors import InputError
from rackbook.results import rack_scaling


def _result(n, inp, out, duration):
    return {
        "duration": duration,
        "input_lens": [inp] * n,
        "output_lens": [out] * n,
        "ttfts": [0.1] * n,
        "latencies": [1.0] * n,
        "itls": [[0.9 / (out - 1)] * (out - 1)] * n,
        "start_times": [0.0] * n,
        "errors": [""] * n,
    }


def _trace(tmp_path, points, server_metrics=None):
    """points: (point_id, config, replicas or None, num_gpus label or None, n, inp, out, dur)."""
    frames = []
    for pid, cfg, rep, gpus, n, inp, out, dur in points:
        labels = {"config": cfg} | ({"num_gpus": str(gpus)} if gpus else {})
        t = vllm_bench_frames(
            tmp_path / f"{pid}.json", labels, point_id=pid, data=_result(n, inp, out, dur)
        )
        if rep is not None:
            t.points["replicas"] = rep
        frames.append(t)
    return synthetic_trace(frames, server_metrics)


def test_gpu_counts_from_replicas_points_and_servers(tmp_path):
    sm = pd.DataFrame(
        [
            ("c", s, ph, "vllm:prefix_cache_hits", "", 0.0)
            for s in ("u1", "u2", "u3")
            for ph in ("before", "after")
        ],
        columns=["point_id", "server", "phase", "metric", "labels", "value"],
    )
    t = _trace(
        tmp_path,
        [
            ("a", "1x", 1, None, 2, 10, 5, 1.0),  # replicas column -> 1 x 4
            ("b", "Nx", 2, 16, 2, 10, 5, 1.0),  # recorded num_gpus wins
            ("c", "Mx", None, None, 2, 10, 5, 1.0),  # 3 servers in server_metrics -> 3 x 4
        ],
        sm,
    )
    t.points["replicas"] = pd.array([1, 2, None], dtype="Int64")
    g = rack_scaling.with_gpu_counts(t, 4)
    assert g.points["num_gpus"].tolist() == [4, 16, 12]
    assert g.points["replicas"].tolist() == [1, 2, 3]
    assert t.points["num_gpus"].isna().sum() == 2  # the original is untouched


def test_scaling_against_the_reference(tmp_path):
    t = _trace(
        tmp_path,
        [
            # 1x: 4 requests x (100 + 10) tokens in 2 s = 220 tok/s total on 1 GPU
            ("r1", "1x", 1, None, 4, 100, 10, 2.0),
            # 1x again, slower (10 s): not the peak, ignored
            ("r1-slow", "1x", 1, None, 4, 100, 10, 10.0),
            # 3x: 9 requests x 110 in 2.5 s = 396 tok/s on 3 GPUs
            ("r3", "3x", 3, None, 9, 100, 10, 2.5),
        ],
    )
    acc = rack_scaling.token_accounting(rack_scaling.with_gpu_counts(t, 1))
    sc = rack_scaling.scaling_vs_reference(acc, "1x", "total")
    assert sc["config"].tolist() == ["1x", "3x"]
    assert sc["point_id"].tolist() == ["r1", "r3"]
    ref, top = sc.iloc[0], sc.iloc[1]
    assert ref["tok_s"] == pytest.approx(220.0) and ref["speedup"] == pytest.approx(1.0)
    assert top["tok_s"] == pytest.approx(396.0)
    assert top["speedup"] == pytest.approx(1.8)  # 396 / 220
    assert top["efficiency"] == pytest.approx(0.6)  # (396 / 3) / (220 / 1)
    assert top["linear_tok_s"] == pytest.approx(660.0)
    assert top["tok_s_per_gpu"] == pytest.approx(132.0)
    out = rack_scaling.scaling_vs_reference(acc, "1x", "output")
    # output: 40 / 2 = 20 tok/s vs 90 / 2.5 = 36 tok/s -> 1.8x as well
    assert out.iloc[1]["speedup"] == pytest.approx(1.8)


def test_unknown_metric_reference_or_gpus_and_nan_throughput(tmp_path):
    t = _trace(
        tmp_path, [("r1", "1x", 1, None, 2, 10, 5, 1.0), ("r2", "2x", 2, None, 2, 10, 5, 1.0)]
    )
    acc = rack_scaling.token_accounting(rack_scaling.with_gpu_counts(t, 1))
    with pytest.raises(InputError, match="no point with config 'one'; known: 1x, 2x"):
        rack_scaling.scaling_vs_reference(acc, "one", "total")
    with pytest.raises(InputError, match="num_gpus"):
        rack_scaling.scaling_vs_reference(rack_scaling.token_accounting(t), "1x", "total")
    # cached tokens unknown: the computed throughput and its ratios are NaN
    sc = rack_scaling.scaling_vs_reference(acc, "1x", "computed")
    assert math.isnan(sc.iloc[1]["speedup"]) and math.isnan(sc.iloc[1]["efficiency"])


def test_scaling_refusals_name_the_field_and_the_problem_in_full(tmp_path):
    t = _trace(
        tmp_path, [("r1", "1x", 1, None, 2, 10, 5, 1.0), ("r2", "2x", 2, None, 2, 10, 5, 1.0)]
    )
    acc = rack_scaling.token_accounting(rack_scaling.with_gpu_counts(t, 1))
    with pytest.raises(InputError) as e:
        rack_scaling.scaling_vs_reference(acc, "one")
    assert str(e.value) == "-: reference_config: no point with config 'one'; known: 1x, 2x"
    with pytest.raises(InputError) as e:
        rack_scaling.scaling_vs_reference(rack_scaling.token_accounting(t), "1x")
    assert str(e.value) == ("-: num_gpus: unknown for some point: fill it with with_gpu_counts")
