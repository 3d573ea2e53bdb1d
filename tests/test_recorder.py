"""The recorder's point bookkeeping, without a server (issue 38: CI blamed a server death on
the point that had already finished).

A point's first attempt that the validity check flags is run again; until a point is kept,
record.json must not list it as recorded, and the list of kept points (``points_kept``) is
the event a caller may act on (the live resume test waits for it, recorder.HOLD_ENV).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from rackbook.errors import InputError
from rackbook.live import record as recorder


def bare(tmp_path: Path, accept_invalid: bool = True) -> recorder.Recorder:
    """A Recorder with only its bookkeeping (no scenario, no server)."""
    rec = object.__new__(recorder.Recorder)
    rec.raw = tmp_path / "t.raw"
    (rec.raw / "serve").mkdir(parents=True)
    rec.accept_invalid = accept_invalid
    rec.commands = []
    rec.info = {"points": {}, "failures": [], "validity": {}, "accepted_invalid": [],
                "points_kept": []}  # fmt: skip
    return rec


def saved(rec: recorder.Recorder) -> dict:
    return json.loads((rec.raw / "record.json").read_text())


def attempt(rec: recorder.Recorder, pid: str, n: int, reason: str | None) -> bool:
    """What run_point then judge do for one attempt of ``pid``: the raw result written, the
    point's record written, then judged."""
    (rec.raw / "serve" / f"{pid}.json").write_text(json.dumps({"attempt": n}))
    rec.info["points"][pid] = {"attempt": n}
    rec._save_info()
    return rec.judge(pid, n, reason, [f"{pid}.json"], "serve")


def test_a_flagged_first_attempt_is_not_listed_until_kept(tmp_path: Path) -> None:
    rec = bare(tmp_path)
    assert attempt(rec, "ctx-32", 1, "tiny gaps") is False  # run again
    on_disk = saved(rec)
    assert "ctx-32" not in on_disk["points"] and on_disk["points_kept"] == []
    assert (rec.raw / "rejected" / "ctx-32.1.json").is_file()
    assert not (rec.raw / "serve" / "ctx-32.json").exists()
    assert attempt(rec, "ctx-32", 2, "tiny gaps") is True  # kept: --accept-invalid
    on_disk = saved(rec)
    assert on_disk["points"]["ctx-32"] == {"attempt": 2}
    assert on_disk["points_kept"] == ["ctx-32"]
    assert attempt(rec, "ctx-64", 1, None) is True
    assert saved(rec)["points_kept"] == ["ctx-32", "ctx-64"]


def test_a_refused_point_is_not_listed(tmp_path: Path) -> None:
    rec = bare(tmp_path, accept_invalid=False)
    assert attempt(rec, "ctx-32", 1, "burst") is False
    with pytest.raises(InputError, match="refused after 2 attempts"):
        attempt(rec, "ctx-32", 2, "burst")
    on_disk = saved(rec)
    assert on_disk["points"] == {} and on_disk["points_kept"] == []


def test_the_recorder_holds_after_the_named_point_until_told(tmp_path, monkeypatch) -> None:
    """recorder.HOLD_ENV: after the point is kept the recorder writes POINT.kept and waits for
    ``go``; other points pass straight through."""
    hold = tmp_path / "hold"
    hold.mkdir()
    monkeypatch.setenv(recorder.HOLD_ENV, f"ctx-32:{hold}")
    rec = bare(tmp_path)
    assert attempt(rec, "ctx-16", 1, None) is True  # not the named point: no wait
    assert not (hold / "ctx-16.kept").exists()
    done = threading.Event()
    worker = threading.Thread(
        target=lambda: (attempt(rec, "ctx-32", 1, None), done.set()), daemon=True
    )
    worker.start()
    while not (hold / "ctx-32.kept").exists():  # the event: written once the point is kept
        worker.join(0.01)
    assert saved(rec)["points_kept"] == ["ctx-16", "ctx-32"]
    assert not done.is_set()  # holding
    (hold / "go").touch()
    worker.join()
    assert done.is_set()


class _FakeClient:
    """vLLM's bench client without vLLM: each run writes an empty result and says 3 requests
    of 10 tokens completed in 2 s."""

    calls: list[tuple[str, str]] = []

    def __init__(self, log) -> None:
        pass

    def preload(self) -> float:
        return 0.5

    def presample(self, argv) -> float:
        self.calls.append(("presample", argv[argv.index("--result-filename") + 1]))
        return 0.25

    def forget_samples(self) -> None:
        pass

    def run(self, argv) -> dict:
        folder = Path(argv[argv.index("--result-dir") + 1])
        name = argv[argv.index("--result-filename") + 1]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
        self.calls.append(("run", name))
        return {"duration": 2.0, "completed": 3, "failed": 0, "output_throughput": 15.0,
                "total_output_tokens": 30}  # fmt: skip


class _FakeServer:
    """A vllm serve process that is never started."""

    def __init__(self, model, args, log_path, cpus, front_cpus) -> None:
        self.base_url, self.command, self.proc, self.pgid = (
            "http://127.0.0.1:9",
            "serve",
            None,
            None,
        )
        self.stopped = False

    def start(self) -> None:
        _FakeClient.calls.append(("start", self.base_url))

    def wait_healthy(self) -> None:
        pass

    def info(self) -> dict:
        return {"url": self.base_url}

    def stop(self) -> bool:
        _FakeClient.calls.append(("stop", self.base_url))
        return False


def test_the_phase_loop_starts_warms_measures_and_stops(tmp_path, monkeypatch) -> None:
    """Recorder.run_phase with a fake client and server (no vLLM): the server starts, the
    point's prompts are drawn while it starts, one warm-up run, the point's run, the server
    stops; the point's record carries the client's numbers and the servers' token counter."""
    from rackbook.inputs.scenarios import SingleUser
    from rackbook.live import bench

    _FakeClient.calls = []
    monkeypatch.setattr(bench, "BenchClient", _FakeClient)
    monkeypatch.setattr(recorder, "VllmServer", _FakeServer)
    monkeypatch.setattr(recorder, "group_members", lambda pgid: [])
    monkeypatch.setattr(recorder, "on_cpu", lambda: False)
    counter = iter([0.0, 40.0])  # vllm:generation_tokens_total before and after the point
    gen = {"metric": "vllm:generation_tokens_total", "labels": "{}"}
    sample = lambda u, key: [gen | {"value": next(counter)}]  # noqa: E731
    monkeypatch.setattr(recorder, "scrape", sample)
    monkeypatch.setattr(recorder.Recorder, "point_refusal", lambda self, phase, pt: None)
    rec = recorder.Recorder(SingleUser(num_requests=3), tmp_path / "t", progress=False)
    rec.raw.mkdir(parents=True)
    rec.run_phase(rec.phases[0])
    assert _FakeClient.calls == [
        ("start", "http://127.0.0.1:9"),
        ("presample", "single-user.json"),
        ("run", "warmup.json"),
        ("run", "single-user.json"),
        ("stop", "http://127.0.0.1:9"),
    ]
    info = saved(rec)
    point = info["points"]["single-user"]
    assert point["duration_s"] == [2.0] and (point["completed"], point["failed"]) == (3, 0)
    assert point["client_output_tokens"] == 30 and point["server_generation_tokens"] == 40.0
    assert point["client_minus_server_tokens"] == -10.0
    phase = info["phases"][rec.phases[0].label]
    assert (phase["import_s"], phase["presample_s"]) == (0.5, 0.25)
    assert phase["servers"][0]["started_by_recorder"] is True
    assert phase["servers"][0]["sigkill_needed"] is False
    assert info["points_kept"] == ["single-user"]


def test_the_offline_sweep_records_each_batch_once_kept(tmp_path, monkeypatch) -> None:
    """Recorder.run_offline with the offline engine's loop but no vLLM (rounds of steady
    tokens): one raw file and one kept point per batch size, the engine's command and the
    recorder's cores (a cpu list, not a Python set) in record.json."""
    from rackbook.inputs.scenarios import DecodeParity
    from rackbook.live import bench

    def timed(self, prompts, max_tokens) -> dict:
        n = len(prompts)
        gaps = [[0.01] * (max_tokens - 1) for _ in prompts]
        late = 0.01 * max_tokens
        lens = {"prompt_lens": [len(p) for p in prompts], "output_lens": [max_tokens] * n}
        times = {"ttfts": [0.01] * n, "latencies": [late] * n, "itls": gaps}
        return {"start": 1.0, "seconds": late, **lens, **times}

    real = bench.OfflineEngine

    def engine(args) -> bench.OfflineEngine:
        eng = object.__new__(real)
        eng.args, eng.init_s = args, 0.5
        return eng

    monkeypatch.setattr(bench.OfflineEngine, "_timed_batch", timed)
    monkeypatch.setattr(bench, "OfflineEngine", engine)
    monkeypatch.setattr(recorder, "on_cpu", lambda: False)
    sc = DecodeParity(batch_sizes=(2, 4), input_len=8, output_len=16, prompts_per_batch=2)
    rec = recorder.Recorder(sc, tmp_path / "t", progress=False)
    rec.raw.mkdir(parents=True)
    rec.run_offline()
    rec._save_info()
    info = saved(rec)
    assert info["points_kept"] == ["offline-b2", "offline-b4"]
    assert sorted(p.name for p in (rec.raw / "offline").iterdir()) == ["b2.json", "b4.json"]
    eng = info["engines"]["vllm-offline"]
    assert "vllm.LLM(model=" in eng["command"] and "load_format='dummy'" in eng["command"]
    assert (
        eng["cpu_layout"].startswith("unpinned (recorder's cpus ") and "{" not in eng["cpu_layout"]
    )
    assert info["points"]["offline-b4"]["command"].startswith(eng["command"] + " .generate(B=4")
    doc = json.loads((rec.raw / "offline" / "b4.json").read_text())
    assert doc["completed"] == 8 and doc["total_output_tokens"] == 8 * 16
