"""The recorder's validity decision, without vLLM: rows cut from real burst recordings
(tests/fixtures/validity) and clean rows are fed to the checks and to the recorder's loop."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from rackbook.cli import build_parser
from rackbook.core import traces, validity
from rackbook.errors import InputError, Terminated
from rackbook.inputs.scenarios import SingleUser
from rackbook.live.record import MAX_ATTEMPTS, Recorder, decide

FIX = FIXTURES / "validity"


def test_decide_keeps_reruns_once_then_refuses_or_accepts():
    assert MAX_ATTEMPTS == 2
    assert decide(None, 1, False) == "keep"
    assert decide("2 of 4 flagged", 1, False) == "rerun"
    assert decide("2 of 4 flagged", 2, False) == "refuse"
    assert decide("2 of 4 flagged", 2, True) == "accept"
    assert decide(None, 2, False) == "keep"


def test_burst_rows_are_refused_clean_rows_kept():
    burst = traces.read_trace(FIX / "single-user")
    clean = traces.read_trace(FIX / "clean-prefill")
    why = validity.refusal(burst, "single-user")
    assert why and "4 of 4 requests flagged" in why
    assert decide(why, 2, False) == "refuse"
    assert decide(validity.refusal(clean, "prefill-B"), 1, False) == "keep"


def test_parser_has_accept_invalid():
    args = build_parser().parse_args(["record", "single-user", "--accept-invalid"])
    assert args.accept_invalid


def _fake_recorder(tmp_path, monkeypatch, outcomes, accept_invalid=False):
    """A Recorder whose points 'run' by copying fixture rows: ``outcomes`` lists, per attempt,
    which fixture the point's raw result is (burst or clean)."""
    sc = SingleUser(num_requests=4)
    rec = Recorder(sc, tmp_path / "t", accept_invalid=accept_invalid)
    rec.raw.mkdir(parents=True)
    seen = []

    def run_point(phase, pt, *a):
        name = outcomes[len(seen)]
        seen.append(name)
        (rec.raw / "serve").mkdir(exist_ok=True)
        (rec.raw / "serve" / pt.raw_names()[0]).write_text("{}")
        return 1.0

    def point_refusal(phase, pt):
        t = traces.read_trace(FIX / seen[-1])
        return validity.refusal(t, str(t.points["point_id"].iloc[0]))

    monkeypatch.setattr(rec, "run_point", run_point)
    monkeypatch.setattr(rec, "point_refusal", point_refusal)
    return rec, seen


def _loop(rec):
    """The recorder's per-point loop (Recorder._run_phase) on its one point."""
    phase = rec.phases[0]
    pt = phase.points[0]
    for attempt in range(1, MAX_ATTEMPTS + 1):
        rec.run_point(phase, pt)
        if rec.judge(pt.point_id, attempt, rec.point_refusal(phase, pt), pt.raw_names(), "serve"):
            return True
    return False


def test_recorder_reruns_a_burst_point_once_and_keeps_a_clean_rerun(tmp_path, monkeypatch):
    rec, seen = _fake_recorder(tmp_path, monkeypatch, ["single-user", "clean-prefill"])
    assert _loop(rec) and seen == ["single-user", "clean-prefill"]
    v = json.loads((rec.raw / "record.json").read_text())["validity"]["single-user"]
    assert v["outcome"] == "keep" and v["attempts"][1]["flagged"] is None
    assert "4 of 4 requests flagged" in v["attempts"][0]["flagged"]
    assert (rec.raw / "rejected" / "single-user.1.json").exists()  # the refused attempt
    assert (rec.raw / "serve" / "single-user.json").exists()  # the kept one


def test_recorder_refuses_a_point_of_bursts_with_one_line(tmp_path, monkeypatch):
    rec, seen = _fake_recorder(tmp_path, monkeypatch, ["single-user", "single-user"])
    with pytest.raises(InputError) as exc:
        _loop(rec)
    msg = str(exc.value)
    assert "\n" not in msg and "single-user" in msg and "refused after 2 attempts" in msg
    assert "4 of 4 requests flagged" in msg and "--accept-invalid" in msg
    info = json.loads((rec.raw / "record.json").read_text())
    assert info["validity"]["single-user"]["outcome"] == "refuse"
    assert info["accepted_invalid"] == []
    assert not (rec.raw / "serve" / "single-user.json").exists()  # --resume runs it again


def test_recorder_accept_invalid_keeps_and_says_so(tmp_path, monkeypatch):
    rec, _ = _fake_recorder(tmp_path, monkeypatch, ["single-user"] * 2, accept_invalid=True)
    assert _loop(rec)
    info = json.loads((rec.raw / "record.json").read_text())
    assert info["accepted_invalid"] == ["single-user"]
    assert info["validity"]["single-user"]["outcome"] == "accept"


def test_convert_writes_validity_and_accepted_invalid_into_run_json(tmp_path):
    """A raw recording of the burst rows (vLLM's JSON keys), converted: run.json carries the
    per-point validity and the accepted list."""
    t = traces.read_trace(FIX / "single-user")
    r = t.requests
    gaps = [t.itl.loc[t.itl["request_row"] == i, "itl_s"].tolist() for i in range(len(r))]
    doc = {
        "duration": float(t.points["duration_s"].iloc[0]),
        "completed": len(r),
        "failed": 0,
        "max_concurrency": 1,
        "input_lens": r["prompt_tokens"].tolist(),
        "output_lens": r["output_tokens"].tolist(),
        "ttfts": r["ttft_s"].tolist(),
        "itls": gaps,
        "latencies": r["e2el_s"].tolist(),
        "start_times": r["start_time_s"].tolist(),
        "errors": [""] * len(r),
    }
    rec = Recorder(SingleUser(num_requests=4), tmp_path / "t")
    (rec.raw / "serve").mkdir(parents=True)
    (rec.raw / "serve" / "single-user.json").write_text(json.dumps(doc))
    rec.info["accepted_invalid"] = ["single-user"]
    rec.convert()
    run = traces.read_trace(tmp_path / "t").run
    assert run["accepted_invalid"] == ["single-user"]
    v = run["validity"]["single-user"]
    assert (v["requests"], v["valid"], v["flagged"]) == (4, 0, 4)
    assert "0 valid requests" in v["reason"]


def test_cli_execs_the_live_venvs_cli_with_the_command_line_as_given(tmp_path, monkeypatch):
    """Without vLLM here, ``rackbook record`` re-executes .venv-live's CLI on the same words."""
    from rackbook import cli, live

    (tmp_path / "lib" / "python3" / "site-packages" / "rackbook-0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(live, "LIVE_VENV", tmp_path)
    monkeypatch.setattr(live, "live_venv_ready", lambda: True)
    monkeypatch.setattr(live, "live_python", lambda: tmp_path / "python")
    execs = []
    monkeypatch.setattr(live.os, "execve", lambda exe, argv, env: execs.append(argv))
    words = ["record", "single-user", "--accept-invalid", "-o", "rel/out", "--no-progress"]
    assert cli.main(words) == 0
    assert execs == [[str(tmp_path / "python"), "-m", "rackbook.cli", *words]]


@pytest.mark.parametrize(
    ("exc", "code", "said"),
    [(KeyboardInterrupt(), 130, "interrupted"), (Terminated(15), 143, "terminated by SIGTERM")],
)
def test_a_signal_while_recording_stops_the_servers_in_one_line(
    exc, code, said, tmp_path, monkeypatch, capsys
):
    """Ctrl-C, or SIGTERM through the CLI's handler (Terminated), while recording: every server
    stopped, one line, exit 128 + the signal."""
    import importlib.util

    import rackbook.live.record as rec
    from rackbook import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "vllm" else real(n, *a)
    )
    monkeypatch.setattr(rec, "vllm_environ", lambda: {})
    monkeypatch.setattr(rec, "api_key", lambda: None)
    monkeypatch.setenv("RACKBOOK_LIVE_CPUS", "off")
    stopped = []
    monkeypatch.setattr(rec, "stop_all", lambda: stopped.append(True))

    def run(_self):
        raise exc

    monkeypatch.setattr(rec.Recorder, "run", run)
    assert cli.main(["record", "single-user", "-o", str(tmp_path / "t")]) == code
    assert capsys.readouterr().err == f"error: -: -: {said} (servers stopped)\n"
    assert stopped == [True]
