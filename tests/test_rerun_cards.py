"""Rerun cards: read from the topology, its params files and the scenarios' plans, never typed."""

from __future__ import annotations

import re

import pytest

from rackbook import paths
from rackbook.book import rerun
from rackbook.cluster import recipes, topology
from rackbook.inputs.claims import load_claims

TOPO = topology.load_topology(paths.ROOT / "env/cluster/topology.yaml")


def _code_lines(md: str) -> list[str]:
    return [
        line for block in re.findall(r"```\w*\n(.*?)```", md, re.S) for line in block.split("\n")
    ]


def test_deployment_names_version_flags_and_weights_once():
    md = rerun.deployment()
    assert f"| vLLM | {TOPO.vllm.version} (image `{TOPO.vllm.image}:{TOPO.vllm.tag}`)" in md
    # every flag of every leader's serve line is on the page (the lines are only re-wrapped)
    flat = re.sub(r"\s*\\\n\s*", " ", md)
    for cmds in recipes.serve_commands(TOPO).values():
        for flag in re.findall(r"--[a-z-]+(?: [^-'][^ ]*)?", cmds[0].split("'")[0]):
            assert flag in flat, flag
    assert re.search(r"\| Weights \| 297 GB in HBM", md)  # 288.8 GB experts + 8.4 GB dense
    longest = max(_code_lines(md), key=len)
    assert len(longest) <= rerun.CODE_WIDTH, longest


@pytest.mark.parametrize("result", paths.RESULTS)
def test_card_names_command_parameters_budget_and_files(result):
    md = rerun.card(result)
    # the serve commands live once, on the rerun page, which the card links
    assert "vllm serve" not in md and "{ref}`rerun-deployment`" in md
    assert f"vLLM {TOPO.vllm.version}" in md
    flat = re.sub(r"\s*\\\n\s*", " ", md)
    assert "| Expected time | about " in md and "GPU-hours" in md
    assert f"rackbook run {result} --params-file env/cluster/generated/params/{result}.yaml" in flat
    assert f"`_build/executed/traces/{result}/`" in md and f"`_build/executed/{result}.json`" in md
    assert "RACKBOOK_SERVER_GPUS" in md
    longest = max(_code_lines(md), key=len)
    assert len(longest) <= rerun.CODE_WIDTH, longest


def test_rack_scaling_records_reference_and_rack_at_the_chapters_workload():
    """The 7.9x reading needs config 1x in the same trace, at the workload the verdict
    assumes: the record plan deploys the reference worker (1x) and the router (rack) at the
    chapter's ISL / OSL, with a prefix at AgentX's published 95 % hit rate."""
    from rackbook.inputs.scenarios import scenario
    from rackbook.results.rack_scaling import Params

    chapter = Params()
    plan = rerun.record_parameters(TOPO)
    assert (plan["input_len"], plan["output_len"]) == (chapter.workload_isl, chapter.workload_osl)
    assert (plan["input_len"], plan["output_len"]) == (100_000, 1_000)
    assert plan["prefix_len"] == 95_000  # 95 % of 100,000 (data/published/figures.yaml)
    assert (plan["reference_gpus"], plan["deployment_gpus"]) == (4, 72)
    sc = scenario("rack-scaling", {k: str(v) for k, v in plan.items()}, check=False)
    pts = [p for ph in sc.phases() for p in ph.points]
    assert [p.config for p in pts] == [chapter.reference_config, "rack"]
    assert [dict(p.labels)["num_gpus"] for p in pts] == ["4", "72"]
    assert [p.concurrency for p in pts] == [64 * 4, 64 * 64]
    params = recipes.params_files(TOPO)["rack-scaling"]
    assert params["source"] == "trace" and params["trace"] == recipes.RACK_TRACE
    assert params["reference_config"] == chapter.reference_config


def test_rack_scaling_sweep_by_hand():
    """1x: 256 streams x 4 = 1,024 requests on the 4-GPU reference; rack: 4,096 x 4 = 16,384
    on 68 GPUs; 100,000 prompt tokens (95,000 shared) and 1,000 output each. Prefill computes
    5,000 new tokens a request plus the prefix once per point: 87,230,000 tokens at
    128,000 / 2.460 s / 2 GPUs = 26,016.26 tok/s per GPU on 4 prefilling GPUs = 838.2 s.
    Decode: max(1,024,000 / (904.78 x 4), 4 x 1,000 / 457) = 282.9 s on the reference and
    16,384,000 / (904.78 x 68) = 266.3 s on the rack. Wall: 2 x 15 + 1,387.5 / 60 = 53.1 min;
    72 GPUs held: 63.7 GPU-hours."""
    rate = rerun.prefill_rate()
    assert rate.tok_s_per_gpu == pytest.approx(128_000 / 2.460 / 2)
    assert (rate.cfg, rate.gpus, rate.tokens) == ("DEP2", 2, 128_000)
    h = rerun.holding("rack-scaling", TOPO)
    assert (h.gpus, h.deployments, h.per_config) == (72, 2, {"1x": (4, 4), "rack": (68, 4)})
    sw = dict((r, s) for r, _, s in rerun.cost_rows(TOPO))["rack-scaling"]
    assert (sw.points, sw.requests) == (2, 17_408)
    assert (sw.prompt_tokens, sw.output_tokens) == (1_740_800_000, 17_408_000)
    assert sw.prefill_tokens == 87_230_000
    assert sw.prefill_s == pytest.approx(87_230_000 / (26_016.26 * 4), rel=1e-6)
    assert sw.decode_s == pytest.approx(1_024_000 / (904.78 * 4) + 16_384_000 / (904.78 * 68))
    assert sw.wall_min == pytest.approx(53.125, abs=0.01)
    assert sw.gpu_hours == pytest.approx(72 * sw.wall_min / 60)
    assert round(sw.gpu_hours, 1) == 63.7


def test_decode_parity_budget_adds_prefill_to_output_tokens():
    """Decode parity: 6 batch sizes (8 to 256 per rank, x 64 ranks), 1,024 in / 1,024 out:
    264,241,152 output tokens at 904.78 output tok/s per GPU on 68 GPUs = 4,294.8 s, plus
    264,241,152 prompt tokens on the 4 prefill GPUs at 26,016.26 tok/s = 2,539.2 s: 113.9
    minutes of measuring (prefill and decode added, an upper bound)."""
    sw = dict((r, s) for r, _, s in rerun.cost_rows(TOPO))["decode-parity"]
    assert sw.output_tokens == sw.prefill_tokens == 264_241_152
    assert sw.decode_s == pytest.approx(264_241_152 / (904.78 * 68))
    assert sw.prefill_s == pytest.approx(264_241_152 / (26_016.26 * 4), rel=1e-6)
    assert round((sw.decode_s + sw.prefill_s) / 60) == 114
    md = rerun.card("decode-parity")
    assert "about 129 min" in md and "42 min prefilling 264,241,152 prompt tokens" in md
    assert "72 min decoding at 905 output tok/s per GPU" in md


def test_cost_table_states_each_chapter_and_the_total():
    """One row per chapter from the cards' sweeps and a total row that adds them."""
    rows = rerun.cost_rows(TOPO)
    table = rerun.cost_table()
    for r, h, sw in rows:
        line = next(x for x in table.splitlines() if x.startswith(f"| {r} |"))
        assert line.endswith(f"| {h.gpus} ({h.deployments}) | {sw.wall_min:,.0f} min "
                             f"| {sw.gpu_hours:,.1f} |")  # fmt: skip
    total = sum(sw.gpu_hours for _, _, sw in rows)
    assert f"| **{total:,.1f}** |" in table
    assert round(total, 1) == 297.4
    assert "26,016 prompt tok/s per GPU" in table and "no claim's own figure" in table


def test_one_node_cards_measure_the_reference_worker():
    """context-latency's model reads one copy of the weights over one tray of 4 and one
    GPU's KV reads (data-parallel attention): its card measures the reference worker with
    those parameters; single-user's 4-GPU claim measures it too, not the router."""
    from rackbook.results.context_latency import Params

    files = recipes.params_files(TOPO)
    ref = recipes.reference_endpoint(TOPO)
    assert ref == "http://dsv41-flash-reference-api:8300"
    cl = files["context-latency"]
    assert cl["endpoint"] == ref and files["single-user"]["endpoint"] == ref
    assert (cl["weight_gpus"], cl["n_gpus"]) == (Params().weight_gpus, Params().n_gpus) == (4, 1)
    ctx = load_claims().get("context-latency.delta").scope.context_tokens
    assert min(cl["context_lengths"]) == ctx.low and max(cl["context_lengths"]) == ctx.high
    for r in ("context-latency", "single-user"):
        h = rerun.holding(r, TOPO)
        assert (h.gpus, h.serving, h.prefill) == (4, 4, 4)
        md = rerun.card(r)
        assert "-p endpoint $(cat logs/JOBID/reference-endpoint)" in md
        assert 'export RACKBOOK_SERVER_GPUS="4 x NVIDIA GB300"' in md  # the tray, not the rack
        assert "1 deployment, 4 GPUs held, 15 min to start it;" in md


def test_single_stream_sweep_is_bound_by_one_users_speed():
    sw = dict((r, s) for r, _, s in rerun.cost_rows(TOPO))["single-user"]
    _, one, _ = rerun.assumptions()
    assert sw.decode_s == pytest.approx(sw.output_tokens / one)


def test_time_assumption_is_published_not_a_claims_figure():
    batched, one, url = rerun.assumptions()
    claimed = {c.value for c in load_claims().claims if c.value is not None}
    rate = rerun.prefill_rate().tok_s_per_gpu
    assert batched not in claimed and one not in claimed and rate not in claimed
    assert batched == pytest.approx(904.78)  # output tokens, not the 104,429.47 total
    assert url.startswith("https://github.com/SemiAnalysisAI/InferenceX/")
    assert rerun.prefill_rate().url == (
        "https://vllm.ai/blog-assets/interactive_pages/dsv41-prefill-ttft.html"
    )


def test_prefill_gain_card_defines_its_baseline():
    md = rerun.card("prefill-gain")
    assert "-p endpoint_a http://BASELINE:8000" in md and "136 GPUs held" in md
    assert "same model, same 68 GPUs, same serve flags" in md
    assert "last vLLM release before the three prefill changes" in md
    assert "the operator picks it" in md and "128,000-token prefix" in md


def test_wrap_keeps_words_and_json():
    import json
    import shlex

    cmd = recipes.serve_commands(TOPO)["decode"][0]
    wrapped = rerun.wrap(cmd)
    assert all(len(line) <= 88 for line in wrapped.split("\n"))
    a, b = shlex.split(cmd), shlex.split(wrapped.replace("\\\n", " "))
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x == y or json.loads(x) == json.loads(y)


@pytest.mark.parametrize(
    ("given", "field", "problem"),
    [
        ({"reference_gpus": "4"}, "reference_gpus", "together"),
        ({"reference_gpus": "8", "deployment_gpus": "4"}, "deployment_gpus", "must exceed"),
    ],
)
def test_two_deployment_plan_refuses_a_half_given_pair(given, field, problem):
    from rackbook.errors import InputError
    from rackbook.inputs.scenarios import scenario

    with pytest.raises(InputError) as exc:
        scenario("rack-scaling", given)
    assert exc.value.field == field and problem in exc.value.problem
