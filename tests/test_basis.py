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


# ----------------------------------------------------------------------------- edges (issue 39)


def test_short_says_each_part_once_in_order():
    b = basis.make(POINT)
    assert b.short() == (
        "throughput; output tokens; per GPU (deployment, 8 GPUs); workload fixed lengths; "
        "speculation none; statistic rate; DeepSeek-R1; GB300; vLLM"
    )
    names = {"DeepSeek-R1": "DeepSeek R1", "GB300": "GB300 NVL72"}
    assert b.short(names).endswith("; DeepSeek R1; GB300 NVL72; vLLM")
    total = basis.make(POINT | {"per": "deployment", "gpu_count": None})
    assert "; deployment total (deployment); " in total.short()
    spec = basis.make(POINT | {"speculation": "simulated", "acceptance": 3.5})
    assert "; speculation simulated (acceptance 3.5); " in spec.short()


def test_short_leaves_out_parts_that_do_not_apply_and_says_what_is_not_stated():
    silent = basis.make(
        POINT
        | {"metric": "unknown", "per": "unknown", "gpus": "unknown", "statistic": "value"}
        | {"hardware": "unknown", "engine": "unknown", "model": "M"},
        claim=True,
    )
    assert silent.short() == (
        "what it measures: not stated; output tokens; per what: not stated; "
        "workload fixed lengths; speculation none; M; hardware not stated; engine not stated"
    )
    na = basis.make(
        POINT
        | {"tokens": "-", "per": "-", "gpus": "-", "workload": "-", "speculation": "-"}
        | {"statistic": "-"}
    )
    assert na.short() == "throughput; DeepSeek-R1; GB300; vLLM"
    user = basis.make(POINT | {"per": "user", "gpus": "-", "statistic": "median"})
    assert user.short().startswith("throughput; output tokens; per user; workload fixed lengths")
    assert "; statistic median; " in user.short()


def test_make_refuses_each_missing_or_empty_part_by_name():
    for part in ("tokens", "metric", "model", "gpu_count"):
        raw = {k: v for k, v in POINT.items() if k != part}
        with pytest.raises(ValueError, match=f"^{part}: missing basis part$"):
            basis.make(raw)
    with pytest.raises(ValueError, match="^tokens: missing"):  # the first in the parts' order
        basis.make({k: v for k, v in POINT.items() if k not in ("tokens", "model")})
    for bad in ("", "  ", 3):
        with pytest.raises(ValueError, match="^engine: must be a non-empty text$"):
            basis.make(POINT | {"engine": bad})
    with pytest.raises(ValueError, match="^a: unknown basis part"):  # the first, sorted
        basis.make(POINT | {"b": 1, "a": 1})


@pytest.mark.parametrize(
    "part,value,ok",
    [
        ("gpu_count", 1, True),
        ("gpu_count", 0, False),
        ("gpu_count", -8, False),
        ("gpu_count", True, False),
        ("gpu_count", 8.0, False),
        ("isl", 1, True),
        ("osl", 0, False),
        ("concurrency", "4", False),
        ("context", 0, True),  # no cached prefix: stated
        ("context", False, False),
        ("context", -1, False),
    ],
)
def test_counts_are_whole_numbers_above_zero(part, value, ok):
    if ok:
        assert getattr(basis.make(POINT | {part: value}), part) == value
    else:
        with pytest.raises(ValueError, match=f"^{part}: must be a whole number > 0, got"):
            basis.make(POINT | {part: value})


def test_shares_and_acceptance_at_their_bounds():
    for share in (0, 1, 0.5):
        got = basis.make(POINT | {"cached_share": share}).cached_share
        assert got == share and type(got) is float
    for share in (-0.01, 1.01):
        with pytest.raises(ValueError, match="^cached_share: must be between 0 and 1"):
            basis.make(POINT | {"cached_share": share})
    for bad in (True, "0.5", float("nan"), float("inf")):
        with pytest.raises(ValueError, match="^cached_share: must be a finite number"):
            basis.make(POINT | {"cached_share": bad})
    for spec in ("real", "simulated"):
        got = basis.make(POINT | {"speculation": spec, "acceptance": 1}).acceptance
        assert got == 1.0 and type(got) is float
    with pytest.raises(ValueError, match="^acceptance: tokens per step must be >= 1"):
        basis.make(POINT | {"speculation": "real", "acceptance": 0.99})
    for spec in ("none", "real or none", "unknown"):
        with pytest.raises(ValueError, match="^acceptance: only with speculation real"):
            basis.make(POINT | {"speculation": spec, "acceptance": 2.0}, claim=True)


def test_a_per_gpu_rate_names_its_gpus_other_figures_need_not():
    assert basis.make(POINT | {"tokens": "-", "gpus": "-"}).gpus == "-"
    assert basis.make(POINT | {"per": "user", "gpus": "-"}).gpus == "-"
    assert basis.make(POINT | {"gpus": "unknown"}, claim=True).gpus == "unknown"


def test_replace_validates_as_a_claim():
    b = basis.make(POINT)
    assert b.replace(tokens="unknown").tokens == "unknown"  # a claim may be silent
    assert b.replace(gpu_count=72) == dataclasses.replace(b, gpu_count=72)
    with pytest.raises(ValueError, match="^gpu_count: must be a whole number"):
        b.replace(gpu_count=0)


@pytest.mark.parametrize(
    "name,key",
    [
        ("DeepSeek V4.1 Flash", "deepseek-v4.1-flash"),
        ("DeepSeek-V4.1Flash-FP4", "deepseek-v4.1-flash"),
        ("DeepSeek_V4_Flash", "deepseek-v4-flash"),
        ("deepseek-ai/DeepSeek-V4-Flash-0731", "deepseek-v4-flash-0731"),
        ("DeepSeek-V4-Pro", "deepseek-v4-pro"),
        ("DSR1", "deepseek-r1"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"),
        ("DeepSeek R1/V3", "deepseek-r1"),
        ("DeepSeek-V3/R1", "deepseek-r1"),
        ("Kimi-K3", "kimi-k3"),
        ("moonshotai/Kimi-K3-Instruct", "kimi-k3"),
        ("deepseek-ai/DeepSeek-V4-Pro-FP8", "deepseek-v4-pro"),
        ("Kimi K2", "kimik2"),
        ("K3 Llama", "k3llama"),
        ("Llama 3", "llama3"),
    ],
)
def test_model_key(name, key):
    assert basis.model_key(name) == key


@pytest.mark.parametrize(
    "hardware,key,generation",
    [
        ("NVIDIA GB300 NVL72", "gb300", "blackwell ultra"),
        ("NVIDIA B300-SXM-270GB", "b300", "blackwell ultra"),
        ("GB200", "gb200", "blackwell"),
        ("b200", "b200", "blackwell"),
        ("AMD MI355X", "mi355x", "cdna4"),
        ("MI300X", "mi300x", "cdna3"),
        ("H100 SXM", "h100", "hopper"),
        ("H-200", "h200", "hopper"),
        ("H800", "h800", "hopper"),
        ("TPU v5e", "tpuv5e", "tpuv5e"),
    ],
)
def test_hardware_key_and_class(hardware, key, generation):
    assert basis.hardware_key(hardware) == key
    assert basis.hardware_class(hardware) == generation


@pytest.mark.parametrize(
    "engine,key",
    [
        ("vLLM 0.9", "vllm"),
        ("SGLang", "sglang"),
        ("TensorRT-LLM", "tensorrt-llm"),
        ("NVIDIA TRT-LLM", "tensorrt-llm"),
        ("DeepSeek", "deepseek"),
        ("Dynamo", "dynamo"),
    ],
)
def test_engine_key(engine, key):
    assert basis.engine_key(engine) == key


def test_difference_text_names_the_part_and_its_point_by_name():
    d = basis.Difference("hardware", "gb300", "B300")
    assert d.named({"gb300": "GB300 NVL72"}) == "hardware: GB300 NVL72 (claim: B300)"
    assert d.named({"b300": "B300"}) == "hardware: gb300 (claim: B300)"
    assert str(basis.Difference("tokens", "output", "computed")) == (
        "tokens counted: output (claim: computed)"
    )
    assert basis.Difference("cached_share", 0.5).text == "cached share: 0.5"


@pytest.mark.parametrize(
    "claim,point,differs",
    [
        ("unknown", "real", False),
        ("unknown", "simulated", True),  # a simulated system never matches a silent claim
        ("simulated", "simulated", False),
        ("simulated", "real", True),
        ("real", "none", True),
        ("none", "none", False),
        ("-", "simulated", False),
        ("real", "-", False),
    ],
)
def test_speculation_differs_when_one_side_alone_is_simulated(claim, point, differs):
    c = basis.make(POINT | {"speculation": claim}, claim=True)
    p = basis.make(POINT | {"speculation": point})
    got = basis.differences(c, p, ("speculation",))
    assert got == ([basis.Difference("speculation", point, claim)] if differs else [])


def test_differences_compare_names_by_key_and_say_not_stated():
    c = basis.make(
        POINT | {"model": "DeepSeek-V4.1-Flash", "engine": "vLLM", "isl": 1024}, claim=True
    )
    same = POINT | {"model": "deepseek-ai/deepseek-v4.1-flash", "hardware": "NVIDIA GB300 NVL72"}
    p = basis.make(same | {"engine": "vllm 0.9"})
    parts = ("model", "hardware", "engine", "isl", "osl", "gpu_count", "tokens")
    assert basis.differences(c, p, parts) == [basis.Difference("isl", "not stated", 1024)]
    p2 = basis.make(same | {"hardware": "B300", "isl": 2048, "tokens": "computed", "gpu_count": 4})
    got = basis.differences(c, p2, parts)
    assert [(d.part, d.point, d.claim) for d in got] == [
        ("hardware", "B300", "GB300"),
        ("isl", 2048, 1024),
        ("gpu_count", 4, 8),
        ("tokens", "computed", "output"),
    ]
    silent = basis.make(POINT | {"serving": "unknown"})
    c2 = basis.make(POINT | {"serving": "disaggregated"}, claim=True)
    assert basis.differences(c2, silent, ("serving",)) == [
        basis.Difference("serving", "not stated", "disaggregated")
    ]
    assert basis.differences(silent, c2, ("serving",)) == []  # the claim is silent


def test_every_count_and_share_is_checked_past_a_cold_context_or_no_share():
    """A context of 0 and a missing cached share are stated, and the checks go on after them."""
    with pytest.raises(ValueError, match="^concurrency: must be a whole number > 0, got 0"):
        basis.make(POINT | {"context": 0, "concurrency": 0})
    with pytest.raises(ValueError, match="^acceptance: must be a finite number, got nan"):
        basis.make(POINT | {"speculation": "real", "acceptance": float("nan")})


def test_differences_go_on_past_a_matching_speculation():
    c = basis.make(POINT | {"speculation": "real", "gpu_count": 72})
    p = basis.make(POINT | {"speculation": "real"})
    assert basis.differences(c, p, ("speculation", "gpu_count")) == [
        basis.Difference("gpu_count", 8, 72)
    ]
