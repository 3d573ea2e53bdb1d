"""New-token prefill throughput, the gain of one configuration over another, and the prefix-read
roofline model, against hand-computed numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rackbook.core.importers import vllm_bench_frames
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import concat, validate
from rackbook.errors import InputError
from rackbook.results import prefill_gain


def _result(inp, ttft, out=2, errors=None):
    n = len(inp)
    return {
        "duration": 10.0,
        "input_lens": inp,
        "output_lens": [out] * n,
        "ttfts": ttft,
        "latencies": [t + 0.01 for t in ttft],
        "itls": [[0.01]] * n,
        "start_times": [0.0] * n,
        "errors": errors or [""] * n,
    }


def _trace(tmp_path, parts, parameters=None):
    frames = [
        vllm_bench_frames(tmp_path / f"{cfg}.json", {"config": cfg}, data=d) for cfg, d in parts
    ]
    run = new_run_info(
        kind="synthetic",
        commands=[],
        parameters=parameters or {},
        engine={},
        generator={"name": "hand-made test", "seed": 0},
    )
    return validate(concat(frames, run))


A_TTFT = [0.1, 0.2, 0.4, 0.5]  # 100 new tokens each -> 1000, 500, 250, 200 tok/s


def _ab(tmp_path, factor=1.5):
    return _trace(
        tmp_path,
        [
            ("A", _result([1100] * 4, A_TTFT)),
            ("B", _result([1100] * 4, [t / factor for t in A_TTFT])),
        ],
        parameters={"prefix_tokens": 1000},
    )


def test_new_tokens_from_rows(tmp_path):
    t = _trace(tmp_path, [("A", _result([1000, 2000], [0.1, 0.5]))])
    t.requests["cached_prompt_tokens"] = pd.array([600, 1000], dtype="Int64")
    tab = prefill_gain.new_token_prefill(t)
    assert tab["new_tokens"].tolist() == [400, 1000]
    assert tab["new_tok_s"].tolist() == pytest.approx([4000.0, 2000.0])
    assert set(tab["cached_source"]) == {"row"}


def test_prefix_from_run_parameters_argument_or_error(tmp_path):
    t = _ab(tmp_path)
    tab = prefill_gain.new_token_prefill(t)
    assert set(tab["cached_source"]) == {"run.json parameters.prefix_tokens"}
    assert tab["new_tokens"].unique().tolist() == [100]
    tab = prefill_gain.new_token_prefill(t, prefix_tokens=600)
    assert tab["new_tokens"].unique().tolist() == [500] and set(tab["cached_source"]) == {
        "argument"
    }
    t.run["parameters"] = {}
    with pytest.raises(InputError, match="cached_prompt_tokens: missing and no prefix length"):
        prefill_gain.new_token_prefill(t)


def test_failed_and_fully_cached_requests_are_left_out(tmp_path):
    t = _trace(
        tmp_path,
        [("A", _result([1100, 900, 1100], [0.1, 0.1, 0.2], errors=["", "", "boom"]))],
        parameters={"random_prefix_len": 1000},
    )
    tab = prefill_gain.new_token_prefill(t)
    assert len(tab) == 2  # the failed request is not a row
    assert tab["new_tok_s"].iloc[0] == pytest.approx(1000.0)
    assert math.isnan(tab["new_tok_s"].iloc[1])  # 900 - 1000 < 0 new tokens
    s = prefill_gain.summary(tab).iloc[0]
    assert s["requests"] == 1 and s["excluded"] == 1


def test_summary_statistics(tmp_path):
    s = prefill_gain.summary(prefill_gain.new_token_prefill(_ab(tmp_path))).set_index("config")
    a = s.loc["A"]
    assert a["mean_tok_s"] == pytest.approx(487.5)  # (1000 + 500 + 250 + 200) / 4
    assert a["median_tok_s"] == pytest.approx(375.0)
    assert a["p10_tok_s"] == pytest.approx(215.0)  # 200 + 0.3 x 50
    assert a["p90_tok_s"] == pytest.approx(850.0)  # 500 + 0.7 x 500
    assert a["spread_tok_s"] == pytest.approx(635.0)
    assert a["pooled_tok_s"] == pytest.approx(400 / 1.2)
    assert s.loc["B", "median_tok_s"] == pytest.approx(562.5)


@pytest.mark.parametrize("stat", ["mean", "median", "pooled"])
def test_gain_point_estimate_and_seeded_bootstrap(tmp_path, stat):
    tab = prefill_gain.new_token_prefill(_ab(tmp_path, factor=1.5))
    g = prefill_gain.gain(tab, "A", "B", stat=stat, n_boot=500, seed=3)
    assert g.gain == pytest.approx(0.5)  # every B request is 1.5x its A twin
    assert g.low < 0.5 < g.high  # independent resampling of 4 varied requests spreads
    again = prefill_gain.gain(tab, "A", "B", stat=stat, n_boot=500, seed=3)
    assert (again.low, again.high) == (g.low, g.high)
    assert g.n_a == g.n_b == 4 and "+50.0%" in g.formula


def test_gain_without_spread_when_requests_are_alike(tmp_path):
    t = _trace(
        tmp_path,
        [("A", _result([1100] * 3, [0.2] * 3)), ("B", _result([1100] * 3, [0.1] * 3))],
        parameters={"prefix_tokens": 1000},
    )
    g = prefill_gain.gain(prefill_gain.new_token_prefill(t), "A", "B", n_boot=50)
    assert g.gain == pytest.approx(1.0) and g.low == pytest.approx(1.0)
    assert g.high == pytest.approx(1.0)
    with pytest.raises(InputError, match="no usable request with config = 'C'"):
        prefill_gain.gain(prefill_gain.new_token_prefill(t), "A", "C")
    with pytest.raises(InputError, match="stat"):
        prefill_gain.gain(prefill_gain.new_token_prefill(t), "A", "B", stat="p99")


def test_verdict_range():
    assert prefill_gain.verdict_range(0.40, 0.35, 0.44).verdict == "inside"
    assert prefill_gain.verdict_range(0.50, 0.35, 0.44).verdict == "above"
    g = prefill_gain.Gain("A", "B", "median", 1, 1.3, 0.30, 0.25, 0.36, 0.9, 4, 4, 10, 0, "")
    v = prefill_gain.verdict_range(g, 0.35, 0.44)
    assert v.verdict == "consistent" and v.overlaps and not v.inside
    g = prefill_gain.Gain("A", "B", "median", 1, 1.2, 0.20, 0.10, 0.30, 0.9, 4, 4, 10, 0, "")
    assert prefill_gain.verdict_range(g, 0.35, 0.44).verdict == "below"
    assert "+35% .. +44%" in prefill_gain.verdict_range(g, 0.35, 0.44).text


def test_prefix_read_model_128k():
    r = prefill_gain.prefix_read_model("deepseek-v4.1-flash", "b300", 128_000)
    assert r.kv_bytes_per_new_token == 128_000 * 890 == 113_920_000
    assert r.read_s_per_new_token == pytest.approx(113_920_000 / 8e12)  # 14.24 us
    assert r.compute_s_per_new_token == pytest.approx(16e9 / 15e15)  # 1.067 us
    assert r.bound == "KV read" and r.tokens_per_s == pytest.approx(8e12 / 113_920_000)
    shared = prefill_gain.prefix_read_model("deepseek-v4.1-flash", "b300", 128_000, reuse_tokens=16)
    assert shared.read_s_per_new_token == pytest.approx(0.89e-6)  # 14.24 us / 16
    assert shared.bound == "compute" and shared.tokens_per_s == pytest.approx(937_500)
    assert np.isclose(float(shared), 937_500)
