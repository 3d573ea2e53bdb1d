"""All six scenarios end to end against real vLLM (``env/record/ci-suite.sh``), as one live test.

The suite records each scenario with small parameters on the tiny model and executes each
chapter on its trace. Four scenarios attach to a held server; here that is the test session's
(``held_server``), so ``make test`` starts one server fewer. rack-scaling and prefill-gain start
their own servers, which must all be gone at the end. The traces stay in ``.cache/test/live-ci``
under ``make test`` (next to its build folder) for a look afterwards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from livehelp import SECRET, vllm_environ

from rackbook.core.provenance import expand_repo
from rackbook.live.envfile import LIVE_VENV, live_venv_ready
from rackbook.live.server import group_members
from rackbook.paths import RESULTS, ROOT, TINY_MODEL

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not live_venv_ready(),
        reason=f"live venv {LIVE_VENV} absent: run `bash env/live/setup.sh` to enable",
    ),
]

ATTACHED = {"decode-parity", "eplb-balance", "context-latency", "single-user"}


def test_all_six_scenarios_record_and_execute(tmp_path, held_server):
    build = os.environ.get("RACKBOOK_BUILD")
    out = Path(build).parent / "live-ci" if build else tmp_path / "live-ci"
    members = group_members(held_server.pgid)
    env = vllm_environ(
        RACKBOOK_API_KEY=SECRET,
        RACKBOOK_SUITE_ENDPOINT=held_server.url,
        RACKBOOK_SUITE_SERVER_LOG=str(held_server.log),
    )
    r = subprocess.run(
        ["bash", str(ROOT / "env/record/ci-suite.sh"), str(out)],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    # "[ci] STEP: N s" after each step (a library's warning may end without a newline)
    laps = re.findall(r"\[ci\] ([a-z-]+): (\d+) s", r.stderr)
    print("suite laps (seconds since its start):", laps)  # shown by pytest -s or on failure
    assert r.returncode == 0, r.stderr[-4000:]
    assert [step for step, _ in laps] == [
        "held-server", "decode-parity", "context-latency", "single-user", "eplb-balance",
        "rack-scaling", "prefill-gain", "notebooks",
    ]  # fmt: skip
    for name in RESULTS:
        run = json.loads((out / name / "run.json").read_text())
        assert run["kind"] == ("synthetic" if name == "eplb-balance" else "recorded"), name
        steps = {**run["record"]["engines"], **run["record"]["phases"]}  # engines or phases
        servers = [s for e in steps.values() for s in e.get("servers", [])]
        if name in ATTACHED:  # recorded against the session's server, on this host
            server = run["server"]
            assert server["endpoints"] == [held_server.url] and server["same_host"], name
            assert expand_repo(server["model"]) == str(TINY_MODEL), name
            assert not any(s["started_by_recorder"] for s in servers), name
        else:  # the recorder started (and stopped) its own
            assert "server" not in run and servers, name
            assert all(s["started_by_recorder"] and s["survivors"] == [] for s in servers), name
        if name == "decode-parity":  # engine B, the offline vllm.LLM, still ran here
            assert set(run["record"]["engines"]) == {"vllm-serve", "vllm-offline"}
        headline = json.loads((out / "executed" / f"{name}.json").read_text())
        assert headline, name
    # the suite stopped every server it started and left the session's server whole
    assert group_members(held_server.pgid) == members
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".log", ".txt", ".ipynb"):
            assert SECRET.encode() not in f.read_bytes(), f
