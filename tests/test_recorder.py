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
from rackbook.live import recorder


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
