"""The basis of every figure (rackbook.core.basis): claims state theirs as the write-up does,
published points from their sources' own definitions, and a published point never leaves its
token kind, GPU counting or speculation unknown."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from rackbook import paths
from rackbook.core import basis
from rackbook.errors import InputError
from rackbook.inputs import claims
from rackbook.inputs import claims as figures
from rackbook.results import evidence

POINT = dict(
    metric="throughput", tokens="output", per="GPU", gpus="deployment", gpu_count=8,
    workload="fixed lengths", speculation="none", statistic="rate", serving="aggregated",
    model="DeepSeek-R1", hardware="GB300", engine="vLLM",
)  # fmt: skip


def test_make_validates_every_part():
    b = basis.make(POINT)
    assert b.tokens == "output" and b.gpu_count == 8
    for part in ("tokens", "gpus", "speculation", "workload", "statistic"):
        with pytest.raises(ValueError, match=f"^{part}: a published point must state"):
            basis.make(POINT | {part: "unknown"})
        b = vars(basis.make(POINT | {part: "unknown"}, claim=True))
        assert [k for k, v in b.items() if v == "unknown"] == [part]
    # serving may stay unknown where the source says nothing (MLPerf's summary.csv)
    assert basis.make(POINT | {"serving": "unknown"}).serving == "unknown"
    with pytest.raises(ValueError, match="^tokens: 'all' is not one of"):
        basis.make(POINT | {"tokens": "all"})
    with pytest.raises(ValueError, match="^cached_share: must be between 0 and 1"):
        basis.make(POINT | {"cached_share": 1.5})
    with pytest.raises(ValueError, match="^acceptance: only with speculation"):
        basis.make(POINT | {"acceptance": 3.5})
    with pytest.raises(ValueError, match="^gpu_count: must be a whole number > 0"):
        basis.make(POINT | {"gpu_count": 0})
    with pytest.raises(ValueError, match="^colour: unknown basis part"):
        basis.make(POINT | {"colour": "red"})
    with pytest.raises(ValueError, match="^gpus: a per-GPU token rate must say"):
        basis.make(POINT | {"gpus": "-"})


def test_differences_name_each_part():
    claim = basis.make(
        POINT
        | {"tokens": "unknown", "model": "DeepSeek-V4.1-Flash", "gpu_count": 72}
        | {"speculation": "unknown"},
        claim=True,
    )
    point = basis.make(POINT | {"speculation": "simulated", "acceptance": 3.51})
    parts = ("metric", "tokens", "model", "hardware", "gpu_count", "speculation")
    got = basis.differences(claim, point, parts)
    # tokens unknown in the claim: not a difference (the readings expand it); model, count and
    # a simulated acceptance are
    assert [d.part for d in got] == ["model", "gpu_count", "speculation"]
    assert (got[2].point, got[2].claim) == ("simulated", "unknown")
    assert got[2].text == str(got[2]) == "speculation: simulated (claim: unknown)"
    assert got[1].text == f"GPU count: {POINT['gpu_count']} (claim: 72)"
    assert basis.differences(claim, basis.make(POINT | {"speculation": "real"}), parts)[
        -1
    ].part == ("gpu_count")
    # a difference without a value of the claim's says only the point's
    assert basis.Difference("counting", "derived").text == "counting: derived"
    # GB300 and B300 are different hardware; V4-Flash-0731 is not V4.1-Flash
    assert basis.hardware_key("NVIDIA GB300") == "gb300" != basis.hardware_key("B300")
    assert basis.model_key("DeepSeek-V4-Flash-0731") == "deepseek-v4-flash-0731"
    assert basis.model_key("deepseek-ai/DeepSeek-V4.1-Flash") == "deepseek-v4.1-flash"


def test_every_claim_states_its_basis():
    reg = claims.load_claims()
    for c in reg.claims:
        b = c.figure_basis
        assert b.engine == "vLLM" and b.model == c.scope.model
    th = reg.get("rack-scaling.throughput").figure_basis
    # "par GPU" on the 72-GPU rack, agentic; which tokens are counted is not said
    assert (th.per, th.gpu_count, th.workload, th.tokens) == ("GPU", 72, "agentic trace", "unknown")
    su = reg.get("single-user.throughput").figure_basis
    assert (su.tokens, su.per, su.gpu_count, su.concurrency) == ("output", "user", 4, 1)
    assert su.statistic == "unknown" and su.speculation == "unknown"
    assert reg.get("rack-scaling.cost").figure_basis.metric == "unknown"


def _claims_with(tmp_path, change):
    raw = yaml.safe_load((paths.DATA / "claims.yaml").read_text())
    change(raw["claims"])
    p = tmp_path / "claims.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    return p


def test_claim_basis_errors_name_the_field(tmp_path):
    bad = _claims_with(tmp_path, lambda c: c[1]["basis"].update(tokens="most"))
    with pytest.raises(InputError, match=r"claims\[rack-scaling.throughput\].basis.tokens"):
        claims.load_claims(bad)
    bad = _claims_with(tmp_path, lambda c: c[1]["basis"].update(model="x"))
    with pytest.raises(InputError, match="basis.model: comes from scope"):
        claims.load_claims(bad)


def _figures_with(tmp_path, change):
    raw = yaml.safe_load((paths.DATA / "published" / "figures.yaml").read_text())
    change(raw["figures"])
    p = tmp_path / "figures.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    return p


@pytest.mark.parametrize("part", ["tokens", "gpus", "speculation"])
def test_a_figure_with_an_unknown_basis_part_fails(tmp_path, part):
    bad = _figures_with(tmp_path, lambda f: f[0]["basis"].update({part: "unknown"}))
    with pytest.raises(InputError, match=rf"basis.{part}: a published point must state"):
        figures.load_figures(bad)
    gone = _figures_with(tmp_path, lambda f: f[0].pop("basis"))
    with pytest.raises(InputError, match="basis: field required"):
        figures.load_figures(gone)
    twice = _figures_with(tmp_path, lambda f: f[0]["basis"].update(model="x"))
    with pytest.raises(InputError, match="basis.model: comes from the figure's own field"):
        figures.load_figures(twice)


def test_every_published_point_has_a_complete_basis():
    """Every point of the book (shipped traces, computed ratios, registry figures) states its
    token kind, GPU counting and speculation from its source's own definitions."""
    pts = evidence.published_points()
    assert len(pts) >= 70
    for _, r in pts.iterrows():
        b = r["basis"]
        assert isinstance(b, basis.Basis), r["id"]
        for part in basis.CHOICES:
            if part in basis.UNKNOWN_IN_POINTS:  # serving: unknown where the source is silent
                continue
            assert getattr(b, part) != basis.UNKNOWN, (r["id"], part)
    by_id = pts.set_index("id")["basis"]
    # the sources' own definitions
    ml = by_id["mlperf-v6.1-dsr1:NVIDIA/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Offline"]
    assert (ml.tokens, ml.gpus) == ("output", "deployment")  # MLPerf Result: output tokens
    sg = by_id["sglang-cookbook-v4:b300/flash/fp4/low-latency/c1"]
    assert (sg.statistic, sg.speculation, sg.gpu_count) == ("mean", "real", 4)
    ag = by_id["figures:inferencex-pr3176.vllm-gb300-c128-total"]
    assert (ag.tokens, ag.workload, ag.speculation) == (
        "input incl. cached+output", "agentic trace", "simulated",
    )  # fmt: skip
    assert dataclasses.asdict(ag)["counting"].startswith("each turn's whole prompt")
