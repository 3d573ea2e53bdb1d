"""Single-user stream statistics on a hand-made trace, the acceptance length lookup, and the
batch-1 floor against hand-computed numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rackbook.core.importers import vllm_bench_frames
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import validate
from rackbook.errors import InputError
from rackbook.results import single_user


def _data(**over):
    d = {
        "duration": 2.0,
        "input_lens": [10, 10, 10],
        "output_lens": [5, 3, 0],
        "ttfts": [0.1, 0.2, 0.0],
        "latencies": [0.5, 0.8, 0.0],
        # request 0: 4 gaps summing to 0.4 s; request 1: 2 gaps summing to 0.6 s
        "itls": [[0.05, 0.1, 0.1, 0.15], [0.2, 0.4], []],
        "start_times": [0.0, 1.0, 2.0],
        "errors": ["", "", "boom"],
    }
    d.update(over)
    return d


def _trace(tmp_path, parameters=None, **over):
    t = vllm_bench_frames(tmp_path / "r.json", {"batch_size": "1"}, data=_data(**over))
    t.run = new_run_info(
        kind="synthetic",
        commands=[],
        parameters=parameters or {},
        engine={},
        generator={"name": "hand-made test", "seed": 0},
    )
    return validate(t)


def test_stream_stats(tmp_path):
    s = single_user.stream_stats(_trace(tmp_path))
    assert s.per_request["tok_s"].tolist() == pytest.approx([10.0, 2 / 0.6])  # 4/0.4, 2/0.6
    assert s.per_request["gaps"].tolist() == [4, 2]
    assert s.tokens_per_s == pytest.approx(6.0)  # (4 + 2) / (0.4 + 0.6)
    # pooled gaps sorted .05 .1 .1 .15 .2 .4: p50 = .125, p90 = .2 + .5 x .2, p99 = .2 + .95 x .2
    assert s.gaps_ms[50.0] == pytest.approx(125.0)
    assert s.gaps_ms[90.0] == pytest.approx(300.0)
    assert s.gaps_ms[99.0] == pytest.approx(390.0)
    assert s.tokens_per_chunk == pytest.approx(1.0)
    assert s.acceptance_length is None and "no spec-decode" in s.acceptance_source


def test_tokens_per_chunk_with_multi_token_chunks(tmp_path):
    t = _trace(
        tmp_path,
        output_lens=[9, 3, 0],  # request 0: 8 tokens after the first, in 4 chunks
    )
    s = single_user.stream_stats(t)
    assert s.tokens_per_chunk == pytest.approx((8 + 2) / 6)
    assert s.per_request["tok_s"].iloc[0] == pytest.approx(20.0)  # 8 / 0.4


def test_acceptance_length_from_run_json(tmp_path):
    t = _trace(tmp_path, parameters={"spec_decode_acceptance_length": 3.25})
    assert single_user.acceptance_length(t) == (
        3.25,
        "run.json parameters.spec_decode_acceptance_length",
    )
    t.run["parameters"] = {"spec_decode_acceptance_length": 0.5}
    with pytest.raises(InputError, match="spec_decode_acceptance_length"):
        single_user.acceptance_length(t)


def test_acceptance_length_from_counters(tmp_path):
    t = _trace(tmp_path)
    pid = t.points["point_id"].iloc[0]
    t.extra["server_metrics"] = pd.DataFrame(
        [
            (pid, "s", "before", "vllm:spec_decode_num_accepted_tokens_total", "", 100.0),
            (pid, "s", "after", "vllm:spec_decode_num_accepted_tokens_total", "", 350.0),
            (pid, "s", "before", "vllm:spec_decode_num_drafts", "", 40.0),
            (pid, "s", "after", "vllm:spec_decode_num_drafts", "", 140.0),
        ],
        columns=["point_id", "server", "phase", "metric", "labels", "value"],
    )
    t = validate(t)
    acc, src = single_user.acceptance_length(t)
    assert acc == pytest.approx(3.5)  # 1 + 250 / 100
    assert "server_metrics" in src
    assert single_user.stream_stats(t, pid).acceptance_length == pytest.approx(3.5)
    with pytest.raises(InputError, match="point_id"):
        single_user.stream_stats(t, "nope")


def test_no_decode_time_gives_nan(tmp_path):
    t = _trace(tmp_path, output_lens=[1, 1, 0], itls=[[], [], []])
    s = single_user.stream_stats(t)
    assert math.isnan(s.tokens_per_s) and math.isnan(s.gaps_ms[50.0])


def test_batch1_floor():
    f = single_user.batch1_floor()
    assert f.step_s == pytest.approx(12e9 / 32e12)  # 0.375 ms
    assert f.tokens_per_s == pytest.approx(2666.667, rel=1e-6)
    assert single_user.batch1_floor(acceptance_length=3.51).tokens_per_s == pytest.approx(9360.0)


def test_claim_vs_floor():
    r = single_user.claim_vs_floor(826).set_index("reading")
    plain, spec = r.loc["no speculation"], r.loc["speculation"]
    assert plain["claim_ms_per_token"] == pytest.approx(1000 / 826)  # 1.2107 ms
    assert plain["floor_step_ms"] == pytest.approx(0.375)
    assert plain["claim_share_of_ceiling"] == pytest.approx(826 / (1 / 0.375e-3))
    assert plain["step_headroom"] == pytest.approx((1000 / 826) / 0.375)
    assert bool(plain["fits"])
    assert spec["acceptance_length"] == pytest.approx(3.51)
    assert spec["claim_step_ms"] == pytest.approx(3.51 * 1000 / 826)  # 4.249 ms
    assert spec["floor_ms_per_token"] == pytest.approx(0.375 / 3.51)
    assert spec["ceiling_tok_s"] == pytest.approx(9360.0)
    fast = single_user.claim_vs_floor(3000).set_index("reading")
    assert not bool(fast.loc["no speculation", "fits"]) and bool(fast.loc["speculation", "fits"])
