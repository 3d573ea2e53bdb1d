"""rackbook.results.eplb_balance: the synthetic default trace of eplb-balance, loads from traces,
scoring."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rackbook import paths
from rackbook.core import traces
from rackbook.errors import InputError
from rackbook.physics import eplb
from rackbook.results import eplb_balance

DEFAULT = paths.TRACES / "eplb-balance"


@pytest.fixture(scope="module")
def default_trace() -> traces.Trace:
    return traces.read_trace(DEFAULT)


def test_default_trace_is_synthetic_with_generator_seed_and_calibration(default_trace) -> None:
    run = default_trace.run
    assert run["kind"] == "synthetic"
    gen = run["generator"]
    assert gen["name"] == eplb.SYNTHETIC_GENERATOR
    assert gen["seed"] == 0
    assert gen["calibrated"] is True
    assert gen["calibration"]["target"] == 0.35
    assert gen["calibration"]["target_claim"] == "eplb-balance.before"
    assert (gen["calibration"]["ep_size"], gen["calibration"]["redundant"]) == (64, 64)
    assert "SYNTHETIC" in run["notes"]
    # 12 decode steps x 40 layers x 384 experts (shape from the model catalog)
    loads = eplb_balance.trace_loads(default_trace)
    assert loads.shape == (12, 40, 384)
    # each layer of each step counts batch 64 x EP 64 x top-6 = 24,576 assignments
    assert (loads.sum(axis=2) == 64 * 64 * 6).all()


def test_regenerating_with_the_same_seed_gives_identical_loads(default_trace) -> None:
    again = eplb_balance.build_default_trace(eplb_balance.Spec())
    np.testing.assert_array_equal(
        eplb_balance.loads_from_table(again.extra["expert_load"]),
        eplb_balance.trace_loads(default_trace),
    )
    assert again.run["generator"]["skew"] == default_trace.run["generator"]["skew"]
    other = eplb_balance.build_default_trace(eplb_balance.Spec(seed=1))
    assert not np.array_equal(
        eplb_balance.loads_from_table(other.extra["expert_load"]),
        eplb_balance.trace_loads(default_trace),
    )


def test_calibration_target_holds_within_001(default_trace) -> None:
    loads = eplb_balance.trace_loads(default_trace)
    # the step it was calibrated on
    static = eplb.static_placement(384, 64, 64)
    b0 = eplb.balancedness(eplb.rank_loads_from_placement(loads[0], static, 64))
    assert b0 == pytest.approx(0.35, abs=0.01)
    assert default_trace.run["generator"]["calibration"]["achieved"] == pytest.approx(b0, abs=1e-12)
    # and the later steps it was not calibrated on
    summary, per = eplb_balance.score(loads, 8, 64, 64)
    assert summary["static"] == pytest.approx(0.35, abs=0.01)
    assert list(per["window"]) == [8, 9, 10, 11]


def test_score_hand_example() -> None:
    # 2 steps, 1 layer, 4 experts, 2 ranks, no redundancy. Step 0 fits: expert loads
    # [4, 3, 2, 1] -> EPLB packs {0, 3} and {1, 2}: 5 and 5. Static: {0, 1} = 7 and {2, 3} = 3.
    # Scored step 1 = same loads: static mean 5 / max 7; EPLB 5 / 5 = 1.
    loads = np.array([[[4, 3, 2, 1]], [[4, 3, 2, 1]]], dtype=float)
    s, per = eplb_balance.score(loads, 1, 2, 0)
    assert s["static"] == pytest.approx(5 / 7)
    assert s["eplb"] == pytest.approx(1.0)
    # gap closed: (1 - 5/7) / (1 - 5/7) = 1; ratio to uniform = 1
    assert s["fraction_recovered_gap"] == pytest.approx(1.0)
    assert s["fraction_of_uniform"] == pytest.approx(1.0)
    assert len(per) == 1
    with pytest.raises(InputError, match="fit_windows"):
        eplb_balance.score(loads, 2, 2, 0)


def test_readings_of_the_claims_own_figures() -> None:
    r = eplb_balance.readings(0.35, 0.94, 0.969)
    pct = dict(zip(r["reading"], r["pct"], strict=True))
    assert pct["gap closed"] == pytest.approx(100 * 0.59 / 0.65)  # 90.77 %
    assert pct["ratio to uniform"] == pytest.approx(94.0)
    assert pct["ratio to uniform, same sampling"] == pytest.approx(100 * 0.94 / 0.969)  # 97.0


def test_uniform_floor_is_below_one_and_rises_with_tokens() -> None:
    small = eplb_balance.uniform_floor(40, 64 * 8 * 6, 64)
    large = eplb_balance.uniform_floor(40, 64 * 256 * 6, 64)
    assert 0 < small < large < 1
    # one rank only: max = mean
    assert eplb_balance.uniform_floor(4, 100, 1) == 1.0


def test_redundant_for_and_tokens_per_step() -> None:
    assert eplb_balance.redundant_for(64, 384) == 64  # 7 slots x 64 = 448
    assert eplb_balance.redundant_for(72, 384) == 120  # (6 + 1) x 72 = 504
    assert eplb_balance.redundant_for(8, 384, 0) == 0
    assert eplb_balance.tokens_per_step(64, 64, 6) == 24_576


def test_loads_from_table_rejects_incomplete_grid() -> None:
    df = eplb_balance.loads_table(np.ones((2, 2, 3)))
    with pytest.raises(InputError, match="incomplete grid"):
        eplb_balance.loads_from_table(df.iloc[:-1])
    with pytest.raises(InputError, match="duplicate"):
        eplb_balance.loads_from_table(pd.concat([df, df.iloc[:1]]))


def test_verdicts() -> None:
    synthetic = {"kind": "synthetic", "generator": {"calibration": {"target_claim": "x.before"}}}
    assert eplb_balance.verdict(synthetic, "x.before", 0.35, 0.005, 0.35)[0] == "not comparable"
    assert eplb_balance.verdict(synthetic, "x.after", 0.94, 0.005, 0.94)[0] == "not reproduced"
    cpu = {"kind": "recorded", "hardware": {"gpus": [], "cpu_model": "cpu", "cpu_cores": 2}}
    assert eplb_balance.verdict(cpu, "x.after", 0.94, 0.005, 0.94)[0] == "not reproduced"
    gpu = {"kind": "recorded", "hardware": {"gpus": [{"name": "B300"}]}}
    assert eplb_balance.verdict(gpu, "x.after", 0.943, 0.005, 0.94)[0] == "consistent"
    assert eplb_balance.verdict(gpu, "x.after", 0.90, 0.005, 0.94)[0] == "inconsistent"
    assert eplb_balance.overall(["not comparable", "not reproduced"]) == "not reproduced"
    assert eplb_balance.overall(["consistent", "inconsistent"]) == "inconsistent"
    assert eplb_balance.overall(["not comparable", "consistent"]) == "consistent"
