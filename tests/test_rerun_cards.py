"""Rerun cards: read from the topology, its params files and the scenarios' plans, never typed."""

from __future__ import annotations

import re

import pytest

from rackbook import paths
from rackbook.book import rerun
from rackbook.cluster import commands, notebook_params, topology
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
    for cmds in commands.serve_commands(TOPO).values():
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


def test_rack_scaling_sweep_by_hand():
    """4,096 streams (64 per decode rank x 64) x 4 requests each; 512 prompt (384 shared) and 64
    output tokens per request, measured at 904.78 output tok/s per GPU on 68 GPUs, or 457 tok/s
    per stream: the throughput bound, 1,048,576 / (904.78 x 68) = 17.0 s, is the longer."""
    params = notebook_params.params_files(TOPO)["rack-scaling"]
    assert params["concurrency"] == 64 * 64 and params["gpus_per_replica"] == 72
    sw = rerun.sweep("rack-scaling", params, gpus=68)
    assert (sw.points, sw.requests) == (1, 16_384)
    assert (sw.prompt_tokens, sw.output_tokens) == (16_384 * 512, 16_384 * 64)
    batched, one, _ = rerun.assumptions()
    assert sw.run_s == pytest.approx(max(16_384 * 64 / (batched * 68), 4 * 64 / one))
    assert sw.run_s == pytest.approx(1_048_576 / (904.78 * 68))
    assert sw.wall_min == pytest.approx(15 + sw.run_s / 60)
    assert sw.gpu_hours == pytest.approx(68 * sw.wall_min / 60)


def test_decode_parity_budget_uses_output_tokens():
    """Decode parity: 6 batch sizes (8 to 256 per rank, x 64 ranks), 1,024 in / 1,024 out:
    264,241,152 output tokens at 904.78 output tok/s per GPU on 68 GPUs = 4,294.8 s, about 72
    minutes of measuring (at 104,429 tok/s/GPU, a total that counts re-read cached prefix, it
    was about 2 minutes and the card said about 17 in all)."""
    params = notebook_params.params_files(TOPO)["decode-parity"]
    sw = rerun.sweep("decode-parity", params, gpus=68)
    assert sw.output_tokens == 264_241_152
    assert sw.run_s == pytest.approx(264_241_152 / (904.78 * 68))
    assert round(sw.run_s / 60) == 72
    md = rerun.card("decode-parity")
    assert "about 87 min" in md and "72 min measuring at 905 output tok/s per GPU" in md


def test_single_stream_sweep_is_bound_by_one_users_speed():
    params = notebook_params.params_files(TOPO)["single-user"]
    sw = rerun.sweep("single-user", params, gpus=4)
    _, one, _ = rerun.assumptions()
    assert sw.run_s == pytest.approx(sw.output_tokens / one)


def test_time_assumption_is_published_not_a_claims_figure():
    batched, one, url = rerun.assumptions()
    claimed = {c.value for c in load_claims().claims if c.value is not None}
    assert batched not in claimed and one not in claimed
    assert batched == pytest.approx(904.78)  # output tokens, not the 104,429.47 total
    assert url.startswith("https://github.com/SemiAnalysisAI/InferenceX/")


def test_prefill_gain_card_asks_for_the_baseline_endpoint():
    md = rerun.card("prefill-gain")
    assert "-p endpoint_a http://BASELINE:8000" in md and "2 deployments of 68 GPUs" in md


def test_wrap_keeps_words_and_json():
    import json
    import shlex

    cmd = commands.serve_commands(TOPO)["decode"][0]
    wrapped = rerun.wrap(cmd)
    assert all(len(line) <= 88 for line in wrapped.split("\n"))
    a, b = shlex.split(cmd), shlex.split(wrapped.replace("\\\n", " "))
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x == y or json.loads(x) == json.loads(y)
