"""Scenario plans, the notebook-facing ``record_trace`` call and trace conversion, without vLLM.

Nothing here starts a server or contacts any address: endpoints appear only as text.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rackbook.live as live
from rackbook import paths
from rackbook.cli import build_parser
from rackbook.core import traces
from rackbook.errors import InputError
from rackbook.inputs.scenarios import EplbBalance, RackScaling, scenario
from rackbook.live.record import CPU_EPLB, Recorder
from rackbook.live.record import record as record_cli


# ----------------------------------------------------------------------------- parameters
def notebook_record_parameters(result: str) -> tuple[dict[str, Any], dict[str, ast.expr]]:
    """A notebook's parameters cell run (name -> default value), and the ``parameters=`` of its
    live cell's ``record_trace(...)`` call (name passed -> the expression passed)."""
    nb = json.loads((paths.NOTEBOOKS / f"{result}.ipynb").read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    (cell,) = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    defaults: dict[str, Any] = {}
    exec("".join(cell["source"]), {}, defaults)  # plain assignments of literals
    calls = [
        node
        for c in code
        for node in ast.walk(ast.parse("".join(c["source"])))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "record_trace"
    ]
    (call,) = calls
    (kw,) = [k for k in call.keywords if k.arg == "parameters"]
    assert isinstance(kw.value, ast.Dict)
    passed = {ast.literal_eval(k): v for k, v in zip(kw.value.keys, kw.value.values, strict=True)}
    return defaults, passed


def _bumped(v: Any) -> Any:
    """A value unlike ``v`` of the same kind (integers + 1), to see each one arrive."""
    if isinstance(v, list):
        return [_bumped(x) for x in v]
    return v + 1 if isinstance(v, int) and not isinstance(v, bool) else v


@pytest.mark.parametrize("result", paths.RESULTS)
def test_each_notebooks_live_parameters_reach_its_scenario(result, tmp_path):
    """What each notebook's live cell passes to ``record_trace`` (names read from the notebook,
    values from its parameters cell) goes through its argv and the recorder's parser into the
    scenario unchanged: every name is a parameter the scenario knows, each value arrives, and
    the notebook's defaults make a plan the scenario accepts."""
    defaults, passed = notebook_record_parameters(result)
    assert passed, f"{result}: its record_trace() call passes no parameters"
    for name, expr in passed.items():  # each value is a parameter of the notebook itself
        assert isinstance(expr, ast.Name) and expr.id in defaults, (result, name)
    values = {name: defaults[expr.id] for name, expr in passed.items()}  # type: ignore[attr-defined]
    for given, check in ((values, True), ({k: _bumped(v) for k, v in values.items()}, False)):
        argv = live.recorder_argv(result, output=tmp_path / "t", parameters=given)
        args = build_parser().parse_args(["record", *argv])
        sc = scenario(args.scenario, dict(args.parameter), check=check)
        got = sc.parameters()
        assert {k: got[k] for k in given if given[k] is not None} == {
            k: v for k, v in given.items() if v is not None
        }


def test_a_notebook_parameter_the_scenario_lacks_is_refused(tmp_path):
    argv = live.recorder_argv("single-user", output=tmp_path / "t", parameters={"prompts": 4})
    with pytest.raises(InputError, match="unknown parameter"):
        scenario("single-user", dict(build_parser().parse_args(["record", *argv]).parameter))


def test_prefill_gain_plan_two_configs_with_prefix():
    sc = scenario("prefill-gain", {"prefix_tokens": "512", "new_tokens": "128"})
    a, b = sc.phases()
    assert (a.label, b.label) == ("A", "B")
    assert a.serve_args[-2:] == ("--max-num-batched-tokens", "64")
    assert b.serve_args[-2:] == ("--max-num-batched-tokens", "2048")
    assert "--enable-prefix-caching" in a.serve_args and "--enable-prefix-caching" in b.serve_args
    (pa,) = a.points
    assert (pa.config, pa.prefix_len, pa.input_len, pa.concurrency) == ("A", 512, 128, 1)
    assert sc.parameters()["prefix_tokens"] == 512 and sc.parameters()["new_tokens"] == 128
    with pytest.raises(InputError) as exc:
        scenario("prefill-gain", {"prefix_tokens": "4000", "new_tokens": "256"})
    assert exc.value.field == "max_model_len"  # 4000 + 256 + 4 > 4096


def test_rack_scaling_plan_shards_per_replica():
    sc = scenario("rack-scaling", {"replicas": "2,1", "input_len": "512", "prefix_len": "384"})
    (ph,) = sc.phases()
    assert ph.servers == 2
    assert [(p.point_id, p.shards, p.input_len, p.prefix_len) for p in ph.points] == [
        ("1x", 1, 128, 384),
        ("2x", 2, 128, 384),
    ]  # random part = input_len - prefix_len
    assert ph.points[1].raw_names() == ["2x.s0.json", "2x.s1.json"]
    # each point its own prompts (shard k adds k): 2x's first shard never repeats 1x's prompts
    assert [p.seed for p in ph.points] == [0, 16]
    with pytest.raises(InputError) as exc:
        scenario("rack-scaling", {"prefix_len": "512", "input_len": "512"})
    assert exc.value.field == "prefix_len"


def test_context_latency_points_label_context():
    sc = scenario("context-latency", {"context_lengths": "128,3584", "output_len": "128"})
    pts = sc.phases()[0].points
    assert [dict(p.labels)["context_tokens"] for p in pts] == ["128", "3584"]
    assert [p.input_len for p in pts] == [128, 3584] and pts[0].concurrency == 1
    with pytest.raises(InputError) as exc:
        scenario("context-latency", {"context_lengths": "4000", "output_len": "128"})
    assert exc.value.field == "max_model_len"


def test_single_user_one_point_concurrency_one():
    (ph,) = scenario("single-user", {}).phases()
    (p,) = ph.points
    assert (p.concurrency, p.output_len, p.num_prompts) == (1, 512, 4)


# ----------------------------------------------------------------------------- endpoints
def test_endpoints_remote_allowed_and_counted(tmp_path):
    """Remote URLs are accepted (users' clusters); the count must match the plan. Nothing is
    contacted: the Recorder only checks the list."""
    sc = scenario("prefill-gain", {})
    rec = Recorder(sc, tmp_path / "t", endpoints=["http://10.0.0.1:8000/", "http://h2:8000"])
    assert rec._phase_endpoints(rec.phases[1]) == ["http://h2:8000"]
    assert rec._phase_endpoints(rec.phases[0]) == ["http://10.0.0.1:8000"]
    with pytest.raises(InputError, match="uses 2 server"):
        Recorder(sc, tmp_path / "t", endpoints=["http://10.0.0.1:8000"])
    args = build_parser().parse_args(["record", "single-user", "--endpoint", "ftp://x"])
    with pytest.raises(InputError, match="http"):
        record_cli(args)


def test_eplb_own_server_on_cpu_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("rackbook.live.record.on_cpu", lambda: True)
    rec = Recorder(EplbBalance(), tmp_path / "t")
    with pytest.raises(InputError) as exc:
        rec.run_phase(rec.phases[0])
    assert "vLLM on CPU refuses --enable-eplb" in str(exc.value) and CPU_EPLB in str(exc.value)


# ----------------------------------------------------------------------------- conversion
def _result(starts, ttft, lat, outs, itls, duration, conc):
    n = len(starts)
    return {
        "duration": duration,
        "completed": n,
        "failed": 0,
        "max_concurrency": conc,
        "input_lens": [192] * n,
        "output_lens": outs,
        "ttfts": ttft,
        "itls": itls,
        "latencies": lat,
        "start_times": starts,
        "errors": [""] * n,
    }


def _samples(gen, hits, queries):
    return [
        {"metric": "vllm:generation_tokens_total", "labels": '{engine="0"}', "value": gen},
        {"metric": "vllm:prefix_cache_hits_total", "labels": '{engine="0"}', "value": hits},
        {"metric": "vllm:prefix_cache_queries_total", "labels": '{engine="0"}', "value": queries},
    ]


def test_two_shards_merge_on_one_clock(tmp_path):
    """Two shards of one point (monotonic clock values as vLLM writes them): request starts
    relative to the earliest shard's first request, window to the last shard's end, counters
    from both replicas, replicas column 2. Numbers by hand."""
    sc = RackScaling(replicas=(2,), input_len=192, prefix_len=128, output_len=3)
    out = tmp_path / "trace"
    raw = tmp_path / "trace.raw"
    (raw / "serve").mkdir(parents=True)
    (raw / "metrics").mkdir()
    s0 = _result([1000.0, 1000.5], [0.1, 0.2], [0.4, 0.5], [3, 3], [[0.1, 0.2]] * 2, 1.2, 2)
    s1 = _result([1000.3], [0.1], [0.5], [3], [[0.2, 0.2]], 2.0, 2)
    (raw / "serve" / "2x.s0.json").write_text(json.dumps(s0))
    (raw / "serve" / "2x.s1.json").write_text(json.dumps(s1))
    u0, u1 = "http://127.0.0.1:1", "http://127.0.0.1:2"
    (raw / "metrics" / "2x.json").write_text(
        json.dumps(
            {
                "servers": [
                    {"server": u0, "before": _samples(10, 0, 0), "after": _samples(16, 256, 384)},
                    {"server": u1, "before": _samples(0, 0, 0), "after": _samples(3, 128, 192)},
                ]
            }
        )
    )
    rec = Recorder(sc, out)
    rec.info["points"]["2x"] = {"servers": [u0, u1], "server_generation_tokens": 9.0}
    rec.convert()
    t = traces.read_trace(out)
    p = t.points.iloc[0]
    assert p["point_id"] == "2x" and int(p["replicas"]) == 2 and int(p["concurrency"]) == 4
    assert p["duration_s"] == pytest.approx(0.3 + 2.0)  # shard 1 starts 0.3 s in, lasts 2.0 s
    r = t.requests.sort_values("start_time_s")
    assert list(r["start_time_s"].round(6)) == [0.0, 0.3, 0.5]
    assert list(r["request_id"]) == ["2x/s0/0", "2x/s1/0", "2x/s0/1"]
    assert list(r["server"]) == [u0, u1, u0] and list(r["shard"]) == [0, 1, 0]
    # hits 256 + 128 = 384 = 3 requests x prefix 128: every request found exactly the prefix
    assert list(t.requests["cached_prompt_tokens"]) == [128, 128, 128]
    assert len(t.itl) == 6
    sm = t.extra["server_metrics"]
    assert sorted(sm["server"].unique()) == [u0, u1]
    d = t.run["record"]["client_server_discrepancy"]["2x"]
    assert d == {
        "client_output_tokens": 9,
        "server_generation_tokens": 9.0,
        "client_minus_server": 0.0,
        "server_prefix_cache_hits": 384.0,
    }
    assert t.run["record"]["points"]["2x"]["shard_offsets_s"] == pytest.approx([0.0, 0.3])


def test_eplb_log_and_dump_into_tables(tmp_path):
    """EPLB lines written here from the format vLLM's eplb_state.py documents (not captured
    from a GPU run): ``EPLB step: %d for model %s: avg_tokens=..., max_tokens=...,
    balancedness=..., steps until the next rearrangement: %d``."""
    log = tmp_path / "server.log"
    log.write_text(
        "INFO 12-02 starting\n"
        "(APIServer) INFO [eplb_state.py:1] EPLB step: 10 for model m: avg_tokens=100.00, "
        "max_tokens=250, balancedness=0.4000, steps until the next rearrangement: 90\n"
        "(APIServer) INFO [eplb_state.py:1] EPLB step: 20 for model m: avg_tokens=120.00, "
        "max_tokens=150, balancedness=0.8000, steps until the next rearrangement: 80\n"
    )
    dump = tmp_path / "loads.json"
    dump.write_text(json.dumps({"loads": [[1, 2, 3], [4, 5, 6]]}))
    sc = EplbBalance(server_log=str(log), expert_load=str(dump))
    kind, gen, notes, tables = Recorder(sc, tmp_path / "t")._eplb_tables()
    assert kind == "recorded" and gen is None
    el = tables["eplb_log"]
    assert list(el["step"]) == [10, 20] and list(el["balancedness"]) == [0.4, 0.8]
    assert list(el["max_tokens"]) == [250.0, 150.0]
    x = tables["expert_load"]
    assert len(x) == 6 and x["tokens"].sum() == 21 and set(x["window"]) == {0}
    assert x.set_index(["layer", "expert"]).loc[(1, 2), "tokens"] == 6
    log.write_text("no eplb here\n")
    _, _, notes, tables = Recorder(EplbBalance(server_log=str(log)), tmp_path / "u")._eplb_tables()
    assert len(tables["eplb_log"]) == 0 and "refuses --enable-eplb" in notes


# ----------------------------------------------------------------------------- record()
def test_recorder_argv_lists_none_and_bools(tmp_path):
    argv = live.recorder_argv(
        "rack-scaling",
        output=tmp_path / "o",
        endpoints=["http://h:1"],
        serve=["--max-num-batched-tokens", "512"],
        parameters={"replicas": [1, 2], "prefix_len": 384, "serve_args_a": None, "warmup": False},
        resume=True,
    )
    assert argv == [
        "rack-scaling", "--endpoint", "http://h:1", "--serve", "--max-num-batched-tokens 512",
        "-o", str(tmp_path / "o"),
        "-p", "replicas", "1,2", "-p", "prefix_len", "384", "-p", "warmup", "false", "--resume",
    ]  # fmt: skip


def _fake_recorder(tmp_path: Path, monkeypatch, body: str) -> Path:
    """A stand-in for .venv-live's python (a script), so record() runs without vLLM."""
    exe = tmp_path / "fake-python"
    exe.write_text(f"#!{sys.executable}\nimport sys, signal, time, pathlib\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(live, "live_python", lambda: exe)
    monkeypatch.setattr(live, "live_venv_ready", lambda: True)
    return exe


def test_record_returns_path_and_streams_progress(tmp_path, monkeypatch, capfd):
    _fake_recorder(
        tmp_path,
        monkeypatch,
        "print('[record] point 1/1', file=sys.stderr)\n"
        "print(sys.argv[sys.argv.index('-o') + 1])\n"
        "assert sys.argv[1:5] == ['-m', 'rackbook.cli', 'record', 'single-user'], sys.argv",
    )
    p = live.record_trace("single-user", output=tmp_path / "tr", parameters={"output_len": 8})
    assert p == tmp_path / "tr"
    assert "[record] point 1/1" in capfd.readouterr().err


def test_record_raises_the_recorders_one_line_error(tmp_path, monkeypatch):
    _fake_recorder(
        tmp_path,
        monkeypatch,
        "print('error: -p: replicas: needs at least one value', file=sys.stderr); sys.exit(2)",
    )
    with pytest.raises(InputError) as exc:
        live.record_trace("rack-scaling", output=tmp_path / "tr")
    assert (exc.value.file, exc.value.field) == ("-p", "replicas")
    assert exc.value.problem == "needs at least one value"


def test_record_forwards_ctrl_c_and_waits_for_the_child(tmp_path, monkeypatch):
    """A KeyboardInterrupt in the caller (a notebook interrupt) becomes SIGINT for the child;
    record() returns only after the child finished its clean-up (it writes ``done``)."""
    started, done = tmp_path / "started", tmp_path / "done"
    _fake_recorder(
        tmp_path,
        monkeypatch,
        "def h(*_):\n"
        "    time.sleep(0.5)  # stopping servers takes a while\n"
        f"    pathlib.Path({str(done)!r}).write_text('x'); sys.exit(130)\n"
        "signal.signal(signal.SIGINT, h)\n"
        f"pathlib.Path({str(started)!r}).write_text('x')\n"
        "time.sleep(60)",
    )

    def interrupt_when_started() -> None:
        while not started.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # what a notebook interrupt does to the kernel

    # A kernel raises KeyboardInterrupt on SIGINT; a test process started in the background by
    # a non-interactive shell inherits SIGINT ignored (POSIX), and Python keeps it so.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_when_started, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            live.record_trace("single-user", output=tmp_path / "tr")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done.exists()  # the child's handler ran to the end before record() returned
    assert os.environ.get("PYTEST_CURRENT_TEST")  # still in the test: nothing else interrupted
