"""Single-user stream statistics on a hand-made trace, the acceptance length lookup, the
batch-1 floor against hand-computed numbers, every verdict the chapter can reach, and the claim's
figure read from the claims registry."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import analyse_shipped, edited_registry, headline_rows

from rackbook import paths
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import read_trace, validate
from rackbook.errors import InputError
from rackbook.physics.roofline import batch1_decode_ceiling_tokens_per_s
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


def _trace(tmp_path, parameters=None, labels=None, **over):
    labels = {"batch_size": "1", **(labels or {})}
    t = vllm_bench_frames(tmp_path / "r.json", labels, data=_data(**over))
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


FLOOR_ON = ("deepseek-v4.1-flash", "b300", 4)  # the claim's model, GPU and GPU count
CLAIM_ID = "single-user.throughput"
#: Batch-1 step floors on 4 x B300 (32 TB/s together). One token: dense 7,506,534,400 B +
#: 40 MoE layers x 6 experts x 18,800,640 B = 12,018,688,000 B / 32e12 B/s = 0.375584 ms,
#: 2,662.52 tok/s. A six-token verify (5 drafted + 1) reads at the fewest bytes the same six
#: experts per layer as one token (every verified token may pick them): 12,018,688,000 B +
#: 0.52 GB of drafter = 12,538,688,000 B / 32e12 = 0.391834 ms; x 3.51 tokens per step:
#: 8,957.88 tok/s (issue 28). Uniform routing, a typical step and not a bound: 384 x (1 - (1 -
#: 6/384)^6) = 34.62 distinct experts per layer: 7.507e9 + 40 x 34.62 x 18.80 MB = 33.544 GB,
#: + 0.52 GB = 34.064 GB / 32e12 = 1.06449 ms; 3,297.35 tok/s.
STEP_1_MS, CEIL_1 = 0.375584, 2662.520
STEP_S_MS, CEIL_S = 0.391834, 8957.875
UNIFORM_S = 3297.352


def test_batch1_floor():
    f = batch1_decode_ceiling_tokens_per_s(*FLOOR_ON)
    assert f.weight_bytes == 12_018_688_000 and f.step_s == pytest.approx(STEP_1_MS / 1e3)
    assert f.tokens_per_s == pytest.approx(CEIL_1, rel=1e-6)
    spec = batch1_decode_ceiling_tokens_per_s(*FLOOR_ON, acceptance_length=3.51)
    assert spec.verify_tokens == 6 and spec.draft_bytes == 520e6
    assert spec.step_s == pytest.approx(STEP_S_MS / 1e3, rel=1e-5)
    assert spec.tokens_per_s == pytest.approx(CEIL_S, rel=1e-6)


def test_claim_vs_floor():
    r = single_user.claim_vs_floor(826, *FLOOR_ON).set_index("reading")
    plain, spec = r.loc["no speculation"], r.loc["speculation"]
    assert plain["claim_ms_per_token"] == pytest.approx(1000 / 826)  # 1.2107 ms
    assert plain["floor_step_ms"] == pytest.approx(STEP_1_MS)
    assert plain["claim_share_of_ceiling"] == pytest.approx(826 / CEIL_1)  # 31.0 %
    assert plain["claim_step_ms"] / plain["floor_step_ms"] == pytest.approx(
        (1000 / 826) / STEP_1_MS
    )
    assert plain["claim_share_of_ceiling"] <= 1 and plain["verify_tokens"] == 1  # fits, 3.22x
    assert spec["acceptance_length"] == pytest.approx(3.51)
    assert spec["claim_step_ms"] == pytest.approx(3.51 * 1000 / 826)  # 4.249 ms
    assert spec["floor_step_ms"] / 3.51 == pytest.approx(STEP_S_MS / 3.51, rel=1e-5)
    assert spec["ceiling_tok_s"] == pytest.approx(CEIL_S, rel=1e-6)
    assert spec["weight_gb"] == pytest.approx(12.0187, abs=1e-4) and spec["draft_mb"] == 520
    assert spec["uniform_weight_gb"] == pytest.approx(33.5437, abs=1e-4)
    assert spec["uniform_tok_s"] == pytest.approx(UNIFORM_S, rel=1e-6)
    fast = single_user.claim_vs_floor(3000, *FLOOR_ON).set_index("reading")
    share = fast["claim_share_of_ceiling"]
    assert share["no speculation"] > 1 and share["speculation"] <= 1  # fits only speculating


def test_collective_budget():
    # (1.2107 - 0.3756) ms / 40 layers = 20.88 us; (4.2494 - 0.3918) ms / 40 = 96.44 us
    from rackbook.physics.results_bounds import collective_budget_us

    assert collective_budget_us(1 / 826, STEP_1_MS / 1e3, 40) == pytest.approx(20.8767, abs=1e-3)
    assert collective_budget_us(3.51 / 826, STEP_S_MS / 1e3, 40) == pytest.approx(96.4390, abs=1e-3)
    assert collective_budget_us(1e-3, 2e-3, 40) < 0  # no time left


# --------------------------------------------------------------------------------------------
# The chapter: analyse, its three readings and headlines

B300 = {"gpus": [{"name": "NVIDIA B300"}] * 4}


def _one_stream(tmp_path, output_tokens: int, gpus=None, hardware=None, testable=True):
    """One successful request: TTFT 0.1 s, then ``output_tokens - 1`` tokens in 1.0 s, one per
    chunk, i.e. ``output_tokens - 1`` tok/s; ``gpus``: the point's num_gpus label (None: not
    recorded); ``hardware``: run.json's inventory (None: a CPU); with B300 hardware and
    ``testable`` the run is a recording of DeepSeek-V4.1-Flash."""
    steps = output_tokens - 1
    t = _trace(
        tmp_path,
        labels={"num_gpus": str(gpus)} if gpus is not None else None,
        duration=1.1,
        input_lens=[10],
        output_lens=[output_tokens],
        ttfts=[0.1],
        latencies=[1.1],
        itls=[[1.0 / steps] * steps] if steps else [[]],
        start_times=[0.0],
        errors=[""],
    )
    t.run["hardware"] = hardware or {"gpus": [], "cpu_model": "Test CPU", "cpu_cores": 2}
    if hardware and testable:
        t.run["kind"] = "recorded"
        t.run["parameters"] = {"model": "deepseek-ai/DeepSeek-V4.1-Flash"}
    return t


@pytest.mark.parametrize(
    "output_tokens,gpus,params,hardware,verdict,reason",
    [
        (
            901,
            4,
            {},
            None,
            "untested",
            "recorded on 2-core Test CPU, no GPU (one stream at 900.0 tok/s on 4 accelerators); "
            "the claim needs one stream of DeepSeek-V4.1-Flash on 4 B300 GPUs",
        ),
        (
            901,
            1,
            {},
            B300,
            "untested",
            "recorded on 4 x NVIDIA B300 (one stream at 900.0 tok/s on 1 accelerator); "
            "the claim needs one stream of DeepSeek-V4.1-Flash on 4 B300 GPUs",
        ),
        # 900 / 826 - 1 = +8.96 %: within 10 %; the GPU count comes from the `gpus` parameter
        (
            901,
            None,
            {"gpus": 4},
            B300,
            "consistent",
            "one stream at 900.0 tok/s on 4 accelerators, +9 % from the published 826 "
            "(tolerance 10 %)",
        ),
        # 1000 / 826 - 1 = +21.07 %
        (
            1001,
            4,
            {},
            B300,
            "inconsistent",
            "one stream at 1,000.0 tok/s on 4 accelerators, +21.1 % from the published 826 "
            "(tolerance 10 %)",
        ),
    ],
    ids=["cpu", "b300-wrong-gpu-count", "within-tolerance", "outside-tolerance"],
)
def test_every_run_reading(tmp_path, output_tokens, gpus, params, hardware, verdict, reason):
    t = _one_stream(tmp_path, output_tokens, gpus, hardware)
    out = single_user.outcome(single_user.analyse(t, single_user.Params(**params)))
    r = out.reading(CLAIM_ID, "this run")
    assert (r.verdict, r.reason) == (verdict, reason)
    stream = out.headlines[0]
    assert stream.name == "stream_tok_s" and stream.claim_id == CLAIM_ID
    assert (stream.verdict, stream.reason) == (verdict, reason)
    expected = None if output_tokens == 1 else float(output_tokens - 1)
    assert stream.value == (pytest.approx(expected) if expected else None)


def test_a_b300_trace_of_another_model_is_untested(tmp_path):
    t = _one_stream(tmp_path, 901, 4, B300, testable=False)
    assert single_user.outcome(single_user.analyse(t)).reading(CLAIM_ID, "this run").verdict == (
        "untested"
    )


def _registry(tok_s: float | None = None, gpus: int | None = None):
    """A copy of the claims registry with single-user.throughput's figure and/or GPU count
    changed."""

    def edit(c):
        if tok_s is not None:
            c["value"] = tok_s
        if gpus is not None:
            c["scope"]["gpu_count"] = gpus

    return edited_registry({CLAIM_ID: edit})


@pytest.mark.parametrize(
    "claim,params,share,verdict,margin",
    [
        # bounds 2,662.5 (1 token per step) and 8,957.9 (3.51, fewest bytes): the higher
        # decides
        (826, {}, (31.02, 9.22), "possible", "9 % of the ceiling"),  # 826 / 8,957.9 = 0.092
        # 4,000 / 8,957.9 = 0.45: possible (it read 1.21x impossible with uniform routing)
        (4000, {}, (150.23, 44.65), "possible", "45 % of the ceiling"),
        (8000, {}, (300.47, 89.31), "possible", "89 % of the ceiling"),  # a bound: no margin
        # 9,100 / 8,957.9 = 1.016: above 100 % of the bound, impossible (no 15 % margin)
        (9100, {}, (341.78, 101.59), "impossible", "102 % of the ceiling"),
        # acceptance 1.02: 1.02 / 0.391834 ms = 2,603.1 tok/s, below the 2,662.5 of one token
        # per step, which then decides: 826 / 2,662.5 = 31 %
        (826, {"acceptance_length": 1.02}, (31.02, 31.73), "possible", "31 % of the ceiling"),
    ],
    ids=["published", "4000-not-impossible", "near-the-bound", "just-above", "short-acceptance"],
)
def test_every_physics_reading(tmp_path, claim, params, share, verdict, margin):
    an = single_user.analyse(
        _one_stream(tmp_path, 901), single_user.Params(**params), registry=_registry(claim)
    )
    out = single_user.outcome(an)
    r = out.reading(CLAIM_ID, "physics")
    assert (r.verdict, r.margin) == (verdict, margin)
    floor = out.headlines[-2:]
    assert [h.name for h in floor] == [
        "claim_share_of_floor_ceiling_no_speculation",
        "claim_share_of_floor_ceiling_speculation",
    ]
    assert tuple(h.value for h in floor) == pytest.approx(share, abs=0.01)
    assert all(h.kind == "modelled" and h.claim_id == CLAIM_ID for h in floor)
    assert all(h.unit == "% of ceiling" for h in floor)


@pytest.mark.parametrize("figure,ratio", [(None, "1.81x"), (700.0, "1.53x"), (200.0, "0.438x")])
def test_published_reading_follows_the_registry_figure(tmp_path, figure, ratio):
    """No published single-user figure has the claim's basis (V4.1-Flash, 4 B300, real
    speculation): the reading is none published whatever the figure, and names its closest
    point, vLLM's own V4.1-Flash on 4 GB300 (mean TPOT 2.19 ms, 456.6 tok/s per user), with
    the ratio of the registry's figure to it (826 -> 1.81x, 700 -> 1.53x, 200 -> 0.438x). The
    verdicts each way, on points of the claim's basis, are in tests/test_published.py."""
    reg = _registry(tok_s=figure) if figure is not None else None
    out = single_user.outcome(single_user.analyse(_one_stream(tmp_path, 901), registry=reg))
    r = out.reading(CLAIM_ID, "published")
    assert r.verdict == "none published"
    assert f"456.6 tok/s per user, the claim {ratio} it" in r.margin
    assert r.closest["url"] == "https://github.com/SemiAnalysisAI/InferenceX/pull/3176"


def test_floor_gpus_default_to_the_claims_count(tmp_path):
    t = _one_stream(tmp_path, 901)
    an = single_user.analyse(t, registry=_registry(gpus=8))
    assert an.floor_gpus == 8 and an.values()["floor_gpus"] == 8
    assert an.reading("no speculation")["floor_step_ms"] == pytest.approx(STEP_1_MS / 2)
    assert "on 8 B300 GPUs" in single_user.outcome(an).reading(CLAIM_ID, "this run").reason
    mine = single_user.analyse(t, single_user.Params(floor_gpus=2))
    assert mine.floor_gpus == 2 and mine.reading("no speculation")["floor_step_ms"] == (
        pytest.approx(2 * STEP_1_MS)  # 12.02 GB / (2 x 8 TB/s)
    )
    assert single_user.outcome(mine).parameters["floor_gpus"] == 2
    # the per-GPU readings: the claim over its GPUs, the rack figure over the rack's GPUs
    assert mine.per_gpu_single_user == pytest.approx(826 / 2)
    assert an.per_gpu_rack == pytest.approx(954_000 / 72)


def test_acceptance_length_parameter(tmp_path):
    an = single_user.analyse(_one_stream(tmp_path, 901), single_user.Params(acceptance_length=2.0))
    assert (an.acceptance, an.acceptance_from) == (2.0, "parameter")
    assert an.reading("speculation")["ceiling_tok_s"] == pytest.approx(2 / (STEP_S_MS / 1e3))
    assert single_user.outcome(an).parameters["acceptance_length"] == 2.0


def test_the_collective_budget_is_in_the_values_and_flips(tmp_path):
    an = single_user.analyse(_one_stream(tmp_path, 901))
    v = an.values()
    assert v["moe_layers"] == 40
    assert v["budget_1_us"] == pytest.approx(20.8767, abs=1e-3)  # (1.2107 - 0.3756) / 40 ms
    assert v["budget_s_us"] == pytest.approx(96.4390, abs=1e-3)  # (4.2494 - 0.3918) / 40 ms
    flips = single_user.outcome(an).flips
    # impossible above the bound itself, 8,957.88 (above 100 % of a bound: no margin)
    assert flips[0].startswith("physics: impossible above 8,958 tok/s, possible at or below")
    assert "20.9 µs per MoE layer" in flips[0] and "96.4 µs with speculation" in flips[0]


def test_the_claim_comes_from_the_registry():
    """Change the published 826 tok/s to 913 in a copy of the registry and analyse the shipped
    trace: the floor headlines follow, 826 is gone from every reason and definition, and the
    stream's reading, once the trace can speak to the claim, is measured against 913."""
    tr = read_trace(paths.TRACES / "single-user")
    an = single_user.analyse(tr, registry=_registry(913))
    assert an.claim_tok_s == 913 and an.values()["claim_tok_s"] == 913
    out = single_user.outcome(an)
    by_name = {h.name: h for h in out.headlines}
    plain = by_name["claim_share_of_floor_ceiling_no_speculation"]
    spec = by_name["claim_share_of_floor_ceiling_speculation"]
    # 1000 / 913 = 1.0953 ms; 3.51 x 1000 / 913 = 3.8445 ms; 913 / 2,662.52; 913 / 8,957.88
    assert plain.reason == "floor 0.3756 ms/step vs 1.095 ms implied"
    assert spec.reason == "floor 0.3918 ms/step vs 3.844 ms implied"
    assert (plain.value, spec.value) == (34.2908, 10.1921)
    texts = [h.reason + h.definition for h in out.headlines] + [r.reason for r in out.readings]
    assert all("826" not in t for t in texts + out.flips)
    # The shipped trace ran on a CPU: the stream's reason says so and quotes no figure. Told it
    # ran on the claim's 4 B300 GPUs, the same stream is set against the registry's figure.
    assert by_name["stream_tok_s"].reason.startswith("recorded on 2-core AMD EPYC, no GPU")
    tr.run["hardware"] = B300
    tr.run["parameters"] = {**(tr.run.get("parameters") or {}), "model": "DeepSeek-V4.1-Flash"}
    params = single_user.Params(gpus=4)
    on_b300 = single_user.outcome(single_user.analyse(tr, params, registry=_registry(913)))
    stream = on_b300.reading(CLAIM_ID, "this run")
    assert stream.verdict == "inconsistent"
    # 180.18 / 913 - 1 = -80.3 % (against 826 it would be -78.2 %)
    assert stream.reason == (
        "one stream at 180.2 tok/s on 4 accelerators, -80.3 % from the published 913 "
        "(tolerance 10 %)"
    )
    before = single_user.outcome(single_user.analyse(tr, params)).reading(CLAIM_ID, "this run")
    assert "-78.2 % from the published 826" in before.reason


def test_values_hold_every_glued_name():
    """Every {glue:text}`name` of the notebook's prose is a value of the analysis."""
    nb = json.loads((paths.NOTEBOOKS / "single-user.ipynb").read_text())
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    glued = set(re.findall(r"\{glue:text\}`([A-Za-z_0-9]+)", prose))
    assert glued and glued <= set(
        single_user.analyse(read_trace(paths.TRACES / "single-user")).values()
    )


# --------------------------------------------------------------------------------------------
# What is not one measurable stream is refused, not read as "one stream at nan tok/s"

V41_FIXTURE = Path(__file__).parent / "fixtures" / "vllm-bench-v41-flash" / "synthetic-c8.json"


@pytest.mark.parametrize(
    ("over", "problem"),
    [
        # one output token: no decode time, the speed would be nan
        ({"output_lens": [1], "itls": [[]]}, "no successful request with a decode step"),
        ({"errors": ["boom"]}, "no successful request: every request failed"),
    ],
    ids=["no-decode", "all-failed"],
)
def test_a_stream_without_a_measurable_request_is_an_error(tmp_path, over, problem):
    t = _one_stream(tmp_path, 901, 4, B300)
    for key, value in over.items():  # the request table as the importer would have it
        col = {"output_lens": "output_tokens", "errors": "error"}.get(key)
        if col:
            t.requests[col] = value
    if "errors" in over:
        t.requests["success"] = False
    with pytest.raises(InputError) as exc:
        single_user.analyse(t)
    assert exc.value.field == "requests" and problem in exc.value.problem


def test_several_requests_in_flight_are_not_one_stream(tmp_path):
    """Two requests overlapping in time (no concurrency recorded): refused, naming how many
    were in flight; one after the other (within the clock tolerance) is one stream."""
    t = _trace(tmp_path, start_times=[0.0, 0.05, 1.5])  # the first two overlap
    t.requests["concurrency"] = pd.array([pd.NA] * 3, dtype="Int64")
    problem = single_user.stream_problem(t.requests)
    assert problem is not None and problem.startswith("not one stream: up to 2 requests")
    lat = t.requests["e2el_s"].tolist()
    # each starts as the one before ends (half a millisecond early: the clocks' tolerance)
    t.requests["start_time_s"] = [0.0, lat[0] - 0.0005, lat[0] + lat[1]]
    assert single_user.stream_problem(t.requests) is None


def test_a_concurrency_8_benchmark_is_refused_before_any_work(tmp_path, run_cli):
    """A vllm bench serve result at max_concurrency 8 (synthetic fixture): `run single-user`
    refuses it in one line naming the concurrency, before a kernel starts (no output)."""
    trace = tmp_path / "t"
    assert run_cli("import", "vllm-bench", str(V41_FIXTURE), "-o", str(trace))[0] == 0
    out = tmp_path / "out"
    code, _, err = run_cli("run", "single-user", "-p", "trace", str(trace), "--out", str(out))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "not one stream: recorded at concurrency 8" in err and "parameter trace" in err
    assert not (out / "single-user.json").exists()


def test_the_shipped_traces_values_in_full():
    """Every value the chapter glues on the shipped CPU trace with the notebook's defaults: the
    stream's rate, gaps and tokens per chunk are the golden headline file's (180.16 tok/s, p50
    5.497 ms, p99 13.663 ms, 1.021 tokens); 826 tok/s is 1 / 826 s = 1.2107 ms per token; the
    rack claim is 954,000 / 72 = 13,250 tok/s per GPU, this one 826 / 4 = 206.5."""
    v = analyse_shipped("single-user").values()
    approx = {
        "budget_1_us": 20.876743825665862, "budget_s_us": 96.43901682808718,
        "ceiling_1": 2662.5202351537873, "ceiling_s": 8957.875018502733,
        "claim_ms": 1000 / 826, "floor_ms": 0.375584, "floor_s_ms": 0.391834,
        "gap_max_ms": 92.93017899926781, "gap_min_ms": 0.0049780001063481905,
        "ms_per_token": 5.550687073997206, "share_1_pct": 31.0232384,
        "share_s_pct": 9.220936866096867, "tok_s": 180.15787715445322,
        "uniform_s_gb": 33.5436954219696, "uniform_s_tok_s": 3297.3521694759656,
        "weights_1_gb": 12.018688, "weights_s_gb": 12.018688,
    }  # fmt: skip
    exact = {
        "acc_floor": 3.51, "acceptance": "unknown",
        "acceptance_source": "no speculative decoding: no spec-decode statistics in run.json "
        "or server_metrics",
        "claim_gpus": 4, "claim_tok_s": 826.0, "draft_mb": 520.0, "floor_gpus": 4,
        "moe_layers": 40, "n_requests": 32, "p50": "5.5", "p90": "8.85", "p99": "13.7",
        "per_chunk": "1.02", "rack_gpus": 72, "rack_per_gpu": 13_250.0,
        "rack_tok_s": 954_000.0, "su_per_gpu": 206.5, "verify_tokens": 6,
    }  # fmt: skip
    assert v == exact | {k: pytest.approx(x, rel=1e-9) for k, x in approx.items()}


def test_the_shipped_traces_headlines_and_flips_in_full():
    out = single_user.outcome(analyse_shipped("single-user"))
    got = headline_rows(out.headlines)
    claim, nc, share = "single-user.throughput", "not comparable", "% of ceiling"
    assert got == [
        ("stream_tok_s", 180.16, "tok/s", "measured", "untested", claim),
        ("gap_p50_ms", 5.497, "ms", "measured", nc, None),
        ("gap_p99_ms", 13.663, "ms", "measured", nc, None),
        ("tokens_per_chunk", 1.021, "tokens", "measured", nc, None),
        ("acceptance_length", None, "tokens/step", "measured", nc, None),
        ("claim_share_of_floor_ceiling_no_speculation", 31.0232, share, "modelled", "possible",
         claim),
        ("claim_share_of_floor_ceiling_speculation", 9.2209, share, "modelled", "possible", claim),
    ]  # fmt: skip
    h = {x.name: x for x in out.headlines}
    assert h["stream_tok_s"].definition == (
        "sum(output tokens - 1) / sum(e2el - ttft) over one-at-a-time requests"
    )
    assert h["stream_tok_s"].reason == (
        "recorded on 2-core AMD EPYC, no GPU (one stream at 180.2 tok/s on 1 accelerator); the "
        "claim needs one stream of DeepSeek-V4.1-Flash on 4 B300 GPUs"
    )
    assert h["gap_p50_ms"].definition == "median gap between streamed chunks; null without gaps"
    assert h["gap_p99_ms"].definition == (
        "99th percentile gap between streamed chunks; null without gaps"
    )
    assert h["gap_p99_ms"].reason == "the write-up gives no gap figure"
    assert h["tokens_per_chunk"].definition == "sum(output tokens - 1) / number of gaps"
    assert h["tokens_per_chunk"].reason == "above 1 when chunks carry several tokens"
    assert h["acceptance_length"].definition == (
        "speculative-decoding acceptance length; null when the trace has none"
    )
    assert h["claim_share_of_floor_ceiling_no_speculation"].definition == (
        "claim / batch-1 bandwidth bound (fewest bytes per step) on 4 x B300, 1 tokens per step"
    )
    assert h["claim_share_of_floor_ceiling_no_speculation"].reason == (
        "floor 0.3756 ms/step vs 1.211 ms implied"
    )
    assert h["claim_share_of_floor_ceiling_speculation"].reason == (
        "floor 0.3918 ms/step vs 4.249 ms implied"
    )
    assert out.flips == [
        "physics: impossible above 8,958 tok/s, possible at or below (the higher bound, 3.51 "
        "tokens per step on 4 GPUs, B300, fewest bytes per step); at one token per step the claim "
        "leaves 20.9 µs per MoE layer for the dispatch and combine across the GPUs (96.4 µs with "
        "speculation)",
        "this run: one stream of DeepSeek-V4.1-Flash on 4 B300 GPUs within 10 % of 826 tok/s "
        "reads consistent, outside it inconsistent",
    ]


def _stream(starts, e2el=1.0, n=(11, 11), ok=(True, True), conc=(1, 1), ttft=0.1):
    k = len(starts)
    return pd.DataFrame({
        "point_id": ["p"] * k, "concurrency": list(conc)[:k], "success": list(ok)[:k],
        "start_time_s": list(starts), "e2el_s": [e2el] * k, "output_tokens": list(n)[:k],
        "ttft_s": [ttft] * k,
    })  # fmt: skip


def test_one_stream_within_the_overlap_tolerance():
    """A request of 1.0 s from t = 0 ends at 1.0 - 0.001 (the tolerance) = 0.999 s: the next may
    start there (an end before a start at a tie) but not 1 ms earlier."""
    assert single_user.stream_problem(_stream([0.0, 0.999])) is None
    assert single_user.stream_problem(_stream([0.0, 0.5])) == (
        "not one stream: up to 2 requests in flight at once (start_time_s + e2el_s); the "
        "single-user chapter reads one stream (one request after another)"
    )
    assert single_user.stream_problem(_stream([0.0, 0.998]), "p").startswith(
        "not one stream: up to 2 requests in flight at once at point p ("
    )


def test_every_reason_a_stream_cannot_be_read():
    assert single_user.stream_problem(_stream([0.0, 2.0]), "q") == "no request at point q"
    assert single_user.stream_problem(_stream([])) == "no request"
    assert single_user.stream_problem(_stream([0.0, 2.0], conc=(1, 2))) == (
        "not one stream: recorded at concurrency 2 (point p); the single-user chapter reads one "
        "stream (concurrency 1): give -p point_id of a concurrency-1 point, or record one stream"
    )
    assert single_user.stream_problem(_stream([0.0, 2.0], ok=(False, False)), "p") == (
        "no successful request at point p: every request failed (see requests.error)"
    )
    one_token = single_user.stream_problem(_stream([0.0, 2.0], n=(1, 1)))
    assert one_token == (
        "no successful request with a decode step (output_tokens >= 2 after the first token's "
        "time): one stream's speed is unknown"
    )
    assert single_user.stream_problem(_stream([0.0, 2.0], n=(2, 1))) is None  # 2 tokens: one step
    assert single_user.stream_problem(_stream([0.0, 2.0], ttft=1.0)) is not None  # no decode time
    assert single_user.stream_problem(_stream([0.0], conc=(1,))) is None  # one request


def test_stream_stats_per_request_in_full(tmp_path):
    """The two successful requests of ``_data``: 5 and 3 output tokens decoded in 0.4 s and
    0.6 s (4 / 0.4 = 10 tok/s, TPOT 100 ms; 2 / 0.6 = 3.33 tok/s, TPOT 300 ms) over 4 and 2
    gaps; the failed one is left out, and its gaps too. The pooled gaps stay in trace order."""
    t = _trace(tmp_path)
    s = single_user.stream_stats(t)
    per = s.per_request
    assert list(per.columns) == ["request_id", "output_tokens", "decode_s", "tok_s", "tpot_ms",
                                 "gaps"]  # fmt: skip
    assert per["request_id"].tolist() == t.requests["request_id"].tolist()[:2]
    assert per["output_tokens"].tolist() == [5, 3]
    assert per["decode_s"].tolist() == pytest.approx([0.4, 0.6])
    assert per["tpot_ms"].tolist() == pytest.approx([100.0, 300.0])
    assert s.gaps.tolist() == pytest.approx([50.0, 100.0, 100.0, 150.0, 200.0, 400.0])
    pid = t.points["point_id"].iloc[0]
    assert single_user.stream_stats(t, pid).tokens_per_s == pytest.approx(6.0)
    with pytest.raises(InputError) as e:
        single_user.stream_stats(t, "nope")
    assert (e.value.field, e.value.problem) == ("point_id", "no point 'nope'")


def test_the_shipped_traces_physics_reading_in_full():
    """826 / 8,958 = 9 % of the bound at 3.51 tokens per step, 826 / 2,663 = 31 % of the one at
    one token per step; the acceptance length's source is named; the attainable estimate rides
    along."""
    r = analyse_shipped("single-user").readings[0]
    assert (r.verdict, r.margin) == ("possible", "9 % of the ceiling")
    assert r.reason == (
        "826 tok/s is 9 % of the 8,958 tok/s bandwidth bound at 3.51 tokens per step and 31 % of "
        "2,663 at 1 per step on 4 B300s, each step streaming the fewest bytes it can (the dense "
        "weights once, the top-k experts per layer however many tokens it verifies, the "
        "drafter); per-layer dispatch and combine across the GPUs are not counted; 3.51 tokens "
        "per step is InferenceX's measured acceptance length, not the claim's (the write-up "
        "names no acceptance length)"
    )
    assert r.attainable is not None and r.attainable["tok_s_per_gpu"] == pytest.approx(
        483.1275365632664, rel=1e-9
    )
