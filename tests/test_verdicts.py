"""Verdict words for measured and modelled numbers, and headline values for unknowns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rackbook.results import prefill_gain, rack_scaling, verdicts

GPU_RUN = {"hardware": {"gpus": [{"name": "NVIDIA GB300"}] * 4, "hosts": 1}}
CPU_RUN = {"hardware": {"gpus": [], "cpu_model": "Some CPU", "cpu_cores": 2}}


def test_gpu_names_and_matching():
    assert verdicts.gpu_names(GPU_RUN) == ["NVIDIA GB300"] * 4
    assert verdicts.on_gpus(GPU_RUN) and verdicts.on_gpus(GPU_RUN, verdicts.BLACKWELL)
    assert not verdicts.on_gpus({"hardware": {"gpus": [{"name": "NVIDIA H200"}]}})
    assert not verdicts.on_gpus(CPU_RUN) and not verdicts.on_gpus({})
    assert verdicts.on_gpus({"hardware": {"gpus": [{"name": "nvidia b200"}]}}, verdicts.BLACKWELL)
    assert not verdicts.on_gpus({"hardware": {"gpus": [{"name": "nvidia b200"}]}})


def test_against_value():
    v, r = verdicts.against_value(900.0, 826.0, 0.1, True, "x", "t", GPU_RUN)
    assert v == "consistent" and "+9.0%" in r  # 900 / 826 - 1 = 8.96 %
    v, r = verdicts.against_value(700.0, 826.0, 0.1, True, "x", "t", GPU_RUN)
    assert v == "inconsistent" and "-15.3%" in r
    v, r = verdicts.against_value(900.0, 826.0, 0.1, False, "x", "4 B300", CPU_RUN)
    assert v == "not reproduced" and r == "x; measured on 2-core Some CPU, no GPU, not on 4 B300"
    assert verdicts.against_value(None, 1.0, 0.1, True, "x", "t", GPU_RUN)[0] == "not comparable"
    assert verdicts.against_value(np.nan, 1.0, 0.1, True, "x", "t", GPU_RUN)[0] == (
        "not comparable"
    )


def test_gain_verdict_maps_range_words():
    inside = prefill_gain.verdict_range(0.40, 0.35, 0.44)
    below = prefill_gain.verdict_range(0.10, 0.35, 0.44)
    above = prefill_gain.verdict_range(0.60, 0.35, 0.44)
    assert verdicts.gain_verdict(inside, True, "t", GPU_RUN)[0] == "consistent"
    assert verdicts.gain_verdict(below, True, "t", GPU_RUN)[0] == "inconsistent"
    assert verdicts.gain_verdict(above, True, "t", GPU_RUN)[0] == "inconsistent"
    v, r = verdicts.gain_verdict(inside, False, "Blackwell", CPU_RUN)
    assert v == "not reproduced" and r.endswith("not on Blackwell") and "+40.0%" in r


def test_reading_verdicts_on_the_published_figure():
    rv = verdicts.reading_verdicts(rack_scaling.claim_readings(954_000, 72)).set_index("reading")
    # 954,000 x 32 GFLOP = 30.5 PFLOP/s > 15 (2.04x); prefill 1.02x; rack total 0.0283x
    assert rv.loc["per-gpu-decode", "verdict"] == "inconsistent"
    assert "2.04x" in rv.loc["per-gpu-decode", "reason"]
    assert rv.loc["per-gpu-prefill", "verdict"] == "inconsistent"
    assert rv.loc["rack-total", "verdict"] == "consistent"
    # fits only with >= 1 - 468,750 / 954,000 = 50.9 % cache hits
    assert rv.loc["per-gpu-with-cached", "verdict"] == "consistent"
    assert "50.9%" in rv.loc["per-gpu-with-cached", "reason"]
    assert verdicts.fits_verdict(True) == "consistent"
    assert verdicts.fits_verdict(np.bool_(False)) == "inconsistent"


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
