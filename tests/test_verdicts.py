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


REMOTE = {
    "kind": "recorded",
    "hardware": {"gpus": [], "cpu_model": "Client CPU", "cpu_cores": 8},
    "server": {"same_host": False, "gpus": [{"name": "NVIDIA GB300"}, {"name": "NVIDIA GB300"}]},
    "engine": {"model": "DeepSeek-V4.1-Flash"},
}


def test_a_remote_endpoint_is_judged_on_its_declared_gpus_not_the_client():
    """``server.gpus`` of a remote endpoint name the GPUs (the client has none); on the same
    host the inventory does; a remote endpoint without a ``name`` reads as an empty name."""
    assert verdicts.gpu_names(REMOTE) == ["NVIDIA GB300", "NVIDIA GB300"]
    assert verdicts.on_gpus(REMOTE) and verdicts.can_test(REMOTE)  # the model named by engine
    same = {**REMOTE, "server": {**REMOTE["server"], "same_host": True}}
    assert verdicts.gpu_names(same) == [] and not verdicts.can_test(same)
    assert verdicts.gpu_names({"server": {"gpus": [{}, {"name": "B300"}]}}) == ["", "B300"]
    assert verdicts.gpu_names({"server": {"gpus": None}, "hardware": {"gpus": [{}]}}) == []
    assert verdicts.gpu_names({"server": "remote", "hardware": {"gpus": [{}]}}) == [""]
    assert verdicts.gpu_names({"hardware": None}) == []
    assert not verdicts.on_gpus({"server": {"gpus": [{}]}})  # an empty name is no GPU


def test_can_test_reads_the_model_from_parameters_or_engine_in_any_case():
    run = {**B300_RUN, "parameters": {}, "engine": {"served": "DEEPSEEK-V4.1-FLASH"}}
    assert verdicts.can_test(run)
    assert not verdicts.can_test({**run, "engine": {"served": "deepseek-v4-flash"}})
    assert verdicts.can_test({**B300_RUN, "parameters": {"m": "x"}}, model_key="x")
    assert not verdicts.can_test({k: v for k, v in B300_RUN.items() if k != "kind"})
    h200 = {**B300_RUN, "hardware": {"gpus": [{"name": "NVIDIA H200"}]}}
    assert verdicts.can_test(h200, ("H200",)) and not verdicts.can_test(h200)


def test_untested_names_the_hardware_what_and_needs():
    r = verdicts.untested("c.x", CPU_RUN, "826 tok/s", "4 B300")
    assert (r.claim_id, r.reading, r.verdict, r.margin) == ("c.x", "this run", "untested", "-")
    assert r.reason == "recorded on 2-core Some CPU, no GPU (826 tok/s); the claim needs 4 B300"


def test_run_reading_states_the_deviation_against_whose_figure():
    """900 against 826 within 10 %: +8.96 % of the published 826; against "the figure's"
    where the caller says so; 826 x 1.1 = 908.6 is at the tolerance, 909 past it."""
    kw = dict(testable=True, what="rate 900", run=B300_RUN, needs="n")
    r = verdicts.run_reading("c.x", 900.0, 826.0, 0.1, **kw)
    assert (r.claim_id, r.verdict, r.margin) == ("c.x", "consistent", "+9 %")
    assert r.reason == "rate 900, +9 % from the published 826 (tolerance 10 %)"
    r = verdicts.run_reading("c.x", 1234567.0, 1000000.0, 0.25, against="the figure's", **kw)
    assert r.reason == "rate 900, +23.5 % from the figure's 1e+06 (tolerance 25 %)"
    assert r.verdict == "consistent"
    r = verdicts.run_reading("c.x", 12345.0, 10000.0, 0.05, **kw)
    assert r.reason == "rate 900, +23.4 % from the published 1e+04 (tolerance 5 %)"
    at = verdicts.run_reading("c.x", 826.0 * 1.1, 826.0, 0.1 + 1e-12, **kw)
    past = verdicts.run_reading("c.x", 909.0, 826.0, 0.1, **kw)
    below = verdicts.run_reading("c.x", 743.0, 826.0, 0.1, **kw)  # -10.05 %
    assert (at.verdict, past.verdict, below.verdict) == (
        "consistent",
        "inconsistent",
        "inconsistent",
    )
    assert below.margin == "-10 %"
    for bad in (math.inf, -math.inf):
        r = verdicts.run_reading("c.x", bad, 826.0, 0.1, **kw)
        assert (r.verdict, r.margin, r.reason) == (
            "untested",
            "-",
            "rate 900: unknown in this trace",
        )
    r = verdicts.run_reading("c.x", None, 826.0, 0.1, **{**kw, "testable": False, "run": CPU_RUN})
    assert r.reason == "recorded on 2-core Some CPU, no GPU (rate 900); the claim needs n"


def test_parameters_takes_named_fields_resolved_ones_replaced_and_tuples_as_lists():
    from types import SimpleNamespace

    p = SimpleNamespace(model="m", gpus=(1, 2), isl=100, unused=0)
    assert verdicts.parameters(p, "model gpus isl") == {"model": "m", "gpus": [1, 2], "isl": 100}
    got = verdicts.parameters(p, "model  isl", isl=None, extra=1)
    assert got == {"model": "m", "isl": None}
    assert verdicts.parameters(p, "gpus", gpus=(3,)) == {"gpus": [3]}


def test_number_rounds_to_four_decimals_by_default_and_keeps_ints():
    assert verdicts.number(1.234567) == 1.2346 and verdicts.number("2.5") == 2.5
    assert verdicts.number(True) == 1 and type(verdicts.number(7)) is int
    assert verdicts.number(-math.inf) is None and verdicts.number([1]) is None
    assert verdicts.text(1234.49) == "1,234" and verdicts.text(0.1234567890123, ".13f") == (
        "0.1234567890120"
    )  # 12 decimals kept
    assert verdicts.text(math.inf) == "unknown" and verdicts.text("x", unknown="?") == "?"


def test_attainable_carries_the_kernels_and_the_expected_reading_per_gpu():
    """954,000 as the rack's total: 13,250 tok/s per GPU against what measured kernels reach
    and what real deployments reach (the stored fit); ``what`` leads both sentences."""
    from rackbook.physics import attainable as at
    from rackbook.physics import check
    from rackbook.physics import expected as ex

    c = check.check_claim("deepseek-v4.1-flash", "gb300", 72, 954_000, per="total")
    got, bare = verdicts.attainable(c, "as total"), verdicts.attainable(c)
    keys = {"tok_s_per_gpu", "ratio", "deployment", "deployment_name", "calibration", "binding"}
    assert set(got) == keys | {"text", "expected"}
    a = at.for_check(c)
    assert got["tok_s_per_gpu"] == a.tok_s_per_gpu and got["ratio"] == a.ratio
    assert got["ratio"] == pytest.approx(13_250 / got["tok_s_per_gpu"])
    assert got["text"] == "as total: " + bare["text"] and bare["text"] == a.text
    e = got["expected"]
    assert set(e) == {"tok_s_per_gpu", "low", "high", "ratio", "deployment", "text"}
    assert e["low"] < e["tok_s_per_gpu"] < e["high"]
    assert e["ratio"] == pytest.approx(13_250 / e["tok_s_per_gpu"])
    assert e["tok_s_per_gpu"] == ex.for_check(c, fit=ex.load_fit()).tok_s_per_gpu
    assert e["text"].startswith("as total: real deployments reach")
    assert e["text"] == "as total: " + bare["expected"]["text"]
    assert "validation: median measured/expected" in e["text"]


def test_attainable_of_a_figure_that_does_not_fit_has_no_expected_reading():
    from rackbook.physics import check

    c = check.check_claim("deepseek-v4.1-flash", "h200", 1, 10)  # the weights do not fit
    got = verdicts.attainable(c, "x")
    assert got["tok_s_per_gpu"] == 0.0 and got["ratio"] is None
    assert got["text"].startswith("x: 10 output tok/s per GPU: measured kernels cannot reach")
    assert got["expected"] == dict.fromkeys(("tok_s_per_gpu", "low", "high", "ratio",
                                             "deployment"), None) | {"text": ""}  # fmt: skip


def test_run_reading_edges_tolerance_in_whole_percent_and_the_claim_named():
    """A tolerance is printed in whole percent (12.5 % as 12 %); |1.5 - 1.0| = 0.5 exactly is
    within a tolerance of 0.5; an untested reading keeps the claim's id; parameters that are
    not JSON (a path) are read as text."""
    from pathlib import PurePosixPath

    kw = dict(testable=True, what="w", run=B300_RUN, needs="n")
    r = verdicts.run_reading("c.x", 1000.0, 1000.0, 0.125, **kw)
    assert r.reason == "w, +0 % from the published 1,000 (tolerance 12 %)"
    assert verdicts.within("c.x", 1.5, 1.0, 0.5, "m", "why").verdict == "consistent"
    assert verdicts.run_reading("c.x", None, 1.0, 0.1, **kw).claim_id == "c.x"
    assert verdicts.run_reading("c.x", 1.0, 1.0, 0.1, **{**kw, "testable": False}).claim_id == (
        "c.x"
    )
    run = {**B300_RUN, "parameters": {"model": PurePosixPath("deepseek-ai/DeepSeek-V4.1-Flash")}}
    assert verdicts.can_test(run)
