"""Verdict words for measured and modelled numbers, and headline values for unknowns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rackbook.results import verdicts

GPU_RUN = {"hardware": {"gpus": [{"name": "NVIDIA GB300"}] * 4, "hosts": 1}}
CPU_RUN = {"hardware": {"gpus": [], "cpu_model": "Some CPU", "cpu_cores": 2}}


def test_gpu_names_and_matching():
    assert verdicts.gpu_names(GPU_RUN) == ["NVIDIA GB300"] * 4
    assert verdicts.on_gpus(GPU_RUN) and verdicts.on_gpus(GPU_RUN, verdicts.BLACKWELL)
    assert not verdicts.on_gpus({"hardware": {"gpus": [{"name": "NVIDIA H200"}]}})
    assert not verdicts.on_gpus(CPU_RUN) and not verdicts.on_gpus({})
    assert verdicts.on_gpus({"hardware": {"gpus": [{"name": "nvidia b200"}]}}, verdicts.BLACKWELL)
    assert not verdicts.on_gpus({"hardware": {"gpus": [{"name": "nvidia b200"}]}})


B300_RUN = {
    "kind": "recorded",
    "hardware": {"gpus": [{"name": "NVIDIA B300"}] * 4},
    "parameters": {"model": "deepseek-ai/DeepSeek-V4.1-Flash"},
}


def test_can_test_needs_recorded_claim_gpus_and_model():
    assert verdicts.can_test(B300_RUN)
    assert not verdicts.can_test({**B300_RUN, "kind": "synthetic"})
    assert not verdicts.can_test({**B300_RUN, "parameters": {"model": "tiny-moe"}})
    assert not verdicts.can_test({**B300_RUN, "hardware": {"gpus": [{"name": "NVIDIA H200"}]}})
    assert verdicts.can_test(
        {**B300_RUN, "hardware": {"gpus": [{"name": "NVIDIA B200"}]}}, verdicts.BLACKWELL
    )


@pytest.mark.parametrize(
    "measured,run,verdict,margin",
    [
        (900.0, B300_RUN, "consistent", "+9 %"),  # 900 / 826 - 1 = 8.96 %
        (700.0, B300_RUN, "inconsistent", "-15.3 %"),  # 700 / 826 - 1 = -15.25 %
        (900.0, CPU_RUN, "untested", "-"),
        (None, B300_RUN, "untested", "-"),
        (np.nan, B300_RUN, "untested", "-"),
    ],
)
def test_run_reading(measured, run, verdict, margin):
    r = verdicts.run_reading(
        "single-user.throughput", measured, 826.0, 0.1, testable=verdicts.can_test(run),
        what="x", run=run, needs="4 B300",
    )  # fmt: skip
    assert (r.reading, r.verdict, r.margin) == ("this run", verdict, margin)
    if run is CPU_RUN:
        assert r.reason == "recorded on 2-core Some CPU, no GPU (x); the claim needs 4 B300"


@pytest.mark.parametrize(
    "claimed,verdict",
    [
        (84.0, "possible"),
        (85.0, "possible"),
        (100.0, "possible"),
        (103.0, "impossible"),
        (116.0, "impossible"),
    ],
)
def test_physics_reading_margin_edges(claimed, verdict):
    """Against a bound of 100 (the least time the work can take): at or below 100 % possible,
    above 100 % impossible; no modelling margin (issue 28: it read 85-100 % undetermined)."""
    from rackbook.physics.check import physics_verdict
    from rackbook.results.headline import ceiling_margin

    ratio = claimed / 100.0
    assert physics_verdict(ratio) == verdict
    assert ceiling_margin(ratio) == f"{claimed / 100:.3g}x the ceiling"


def test_number_and_text_for_unknowns():
    assert verdicts.number(1.23456, 2) == 1.23 and verdicts.number(7) == 7
    assert verdicts.number(np.float64(2.5)) == 2.5 and verdicts.number(np.int64(3)) == 3.0
    for x in (None, pd.NA, float("nan"), math.inf, "abc"):
        assert verdicts.number(x) is None
    assert verdicts.text(1234.5, ",.1f") == "1,234.5"
    assert verdicts.text(float("nan")) == "unknown" and verdicts.text(None, ".2f", "-") == "-"


@pytest.mark.parametrize("bad", [pd.NA, None])
def test_text_never_formats_missing(bad):
    assert verdicts.text(bad, ".3f") == "unknown"


def test_within_is_consistent_at_the_tolerance_and_not_past_it():
    at = verdicts.within("x.y", 0.96, 0.94, 0.02 + 1e-12, "+0.02", "why")
    past = verdicts.within("x.y", 0.97, 0.94, 0.02, "+0.03", "why")
    below = verdicts.within("x.y", 0.91, 0.94, 0.02, "-0.03", "why")
    assert (at.verdict, past.verdict, below.verdict) == (
        "consistent",
        "inconsistent",
        "inconsistent",
    )
    assert (at.reading, at.margin, at.reason) == ("this run", "+0.02", "why")
