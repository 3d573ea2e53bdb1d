"""Unit tests of the live harness's pure-Python parts (no vLLM needed; not marked live)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rackbook.errors import InputError
from rackbook.inputs.scenarios import DecodeParity, scenario
from rackbook.live.envfile import api_key, read_env_file, redact
from rackbook.live.record import Recorder, counter_delta, parse_metrics, scrape
from rackbook.live.server import VllmServer, free_port, group_members

METRICS = """\
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 320.0
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09
vllm:generation_tokens_total{engine="0",model_name="m"} 64.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 2.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.25
python_gc_objects_collected_total{generation="0"} 123.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} NaN
"""


def test_prom_parse_keeps_vllm_families_drops_created_buckets_nan():
    s = parse_metrics(METRICS)
    names = [x["metric"] for x in s]
    assert names == [
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:request_success_total",
        "vllm:request_success_total",
        "vllm:time_to_first_token_seconds_sum",
    ]
    assert s[0]["labels"] == '{engine="0",model_name="m"}' and s[0]["value"] == 320.0


def test_prom_delta_sums_label_sets(tmp_path):
    before = parse_metrics(METRICS)
    after = parse_metrics(
        METRICS.replace('"length",model_name="m"} 2.0', '"length",model_name="m"} 10.0')
        .replace('"stop",model_name="m"} 1.0', '"stop",model_name="m"} 4.0')
        .replace("} 64.0", "} 320.0")
    )
    assert counter_delta(before, after, "vllm:request_success_total") == 11.0  # 8 + 3
    assert counter_delta(before, after, "vllm:generation_tokens_total") == 256.0
    rec = object.__new__(Recorder)  # its server_metrics rows of the point's saved samples
    rec.raw = tmp_path
    (tmp_path / "metrics").mkdir()
    saved = {"before": before, "after": after}
    doc = {"servers": [{"server": "http://127.0.0.1:1", **saved}]}
    (tmp_path / "metrics" / "p1.json").write_text(json.dumps(doc))
    rows, hits = rec._metric_rows("p1")
    assert hits == 0.0 and len(rows) == len(before) + len(after)
    assert rows[len(before) + 1] == {
        "point_id": "p1",
        "server": "http://127.0.0.1:1",
        "phase": "after",
        "metric": "vllm:generation_tokens_total",
        "labels": '{engine="0",model_name="m"}',
        "value": 320.0,
    }


def test_decode_parity_defaults_and_overrides():
    d = scenario("decode-parity", {})
    assert d.batch_sizes == (8, 16, 32, 64, 128, 256)
    assert (d.input_len, d.output_len, d.prompts_per_batch) == (64, 32, 8)
    flags = d.serve_args()
    assert flags[flags.index("--max-num-seqs") + 1] == "256"
    assert "--enforce-eager" in flags and "--host" not in flags
    d2 = DecodeParity.from_params({"batch_sizes": "2, 4", "output_len": "8", "warmup": "no"})
    assert d2.batch_sizes == (2, 4) and d2.output_len == 8 and d2.warmup is False
    assert d2.point_id("serve", 4) == "serve-b4"
    assert d2.parameters()["batch_sizes"] == [2, 4]


def test_decode_parity_batch_is_per_rank():
    """On 64 decode ranks, per-rank batch 256 is a client concurrency of 16,384 and 8 x 16,384
    prompts; the point is labelled with its per-rank batch and its ranks. The server's
    max-num-seqs is per rank, so it need not hold the whole concurrency."""
    d = DecodeParity.from_params({"batch_sizes": "8,256", "decode_ranks": "64"})
    (phase,) = d.phases()
    p8, p256 = phase.points
    assert (p256.concurrency, p256.num_prompts) == (16_384, 8 * 16_384)
    assert (p8.concurrency, p8.num_prompts, p8.point_id) == (512, 4096, "serve-b8")
    assert dict(p256.labels) == {"engine": "vllm-serve", "batch_size": "256", "decode_ranks": "64"}
    assert d.parameters()["decode_ranks"] == 64
    one = scenario("decode-parity", {"batch_sizes": "8"})
    assert one.decode_ranks == 1 and one.phases()[0].points[0].concurrency == 8


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"decode_ranks": "0"}, "decode_ranks"),
        ({"batch_sizes": "8,x"}, "batch_sizes"),
        ({"batch_sizes": "0"}, "batch_sizes"),
        ({"nope": "1"}, "nope"),
        ({"output_len": "-3"}, "output_len"),
        ({"batch_sizes": "512"}, "max_num_seqs"),
        ({"input_len": "250"}, "max_model_len"),
        ({"engines": "serve,gpu"}, "engines"),
    ],
)
def test_decode_parity_bad_params_name_the_field(params, field):
    with pytest.raises(InputError) as exc:
        DecodeParity.from_params(params)
    assert exc.value.field == field


def test_unknown_scenario():
    with pytest.raises(InputError, match="not one of decode-parity"):
        scenario("rack-scaling-xl", {})


def test_env_file_is_loopback_and_offline():
    env = read_env_file()
    assert env["VLLM_HOST_IP"] == "127.0.0.1"
    assert env["HF_HUB_OFFLINE"] == "1" and env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["VLLM_NO_USAGE_STATS"] == "1" and env["DO_NOT_TRACK"] == "1"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_env_file_bad_line(tmp_path):
    p = tmp_path / "x.env"
    p.write_text("# ok\nA=1\nthis is not an assignment\n")
    with pytest.raises(InputError) as exc:
        read_env_file(p)
    assert exc.value.field == "line 3"


def test_api_key_from_env_and_redaction():
    assert api_key({"OPENAI_API_KEY": "sk-abc123"}) == "sk-abc123"
    assert api_key({"RACKBOOK_API_KEY": "first", "OPENAI_API_KEY": "second"}) == "first"
    assert api_key({}) is None
    said = "curl -H 'Authorization: Bearer sk-abc123' ab"
    assert redact(said, "sk-abc123") == "curl -H 'Authorization: Bearer <redacted>' ab"
    assert redact(said, "ab") == redact(said, None) == said  # too-short keys are left alone


def test_server_command_never_carries_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("RACKBOOK_API_KEY", "secret-key-42")
    srv = VllmServer("m", ["--max-num-seqs", "4"], log_path=tmp_path / "l.log", port=8123)
    assert srv.command == (
        "vllm serve m --host 127.0.0.1 --port 8123 --max-num-seqs 4"
    )  # the key goes through VLLM_API_KEY in the child's environment only
    assert srv.env["VLLM_API_KEY"] == "secret-key-42"
    with pytest.raises(ValueError, match="--port"):
        VllmServer("m", ["--port", "1"], log_path=tmp_path / "l.log")


def test_group_members_and_stop_kill_a_whole_process_group(tmp_path):
    """The stop logic on a stand-in group: a leader whose child ignores SIGTERM."""
    ready = tmp_path / "ready"
    child = (
        "import pathlib, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "pathlib.Path(sys.argv[1]).touch(); time.sleep(60)"
    )
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}, {str(ready)!r}])\n"
        "time.sleep(60)\n"
    )
    srv = VllmServer("m", [], log_path=tmp_path / "l.log", grace_s=1.0)
    srv.proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    srv.pgid = srv.proc.pid
    deadline = time.monotonic() + 20
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    members = group_members(srv.pgid)
    assert len(members) == 2 and srv.pgid in members
    killed = srv.stop()
    assert len(killed) == 1 and killed[0] != srv.pgid  # the SIGTERM-ignoring child
    assert group_members(srv.pgid) == []
    assert srv.stop() == []  # idempotent


def test_free_port_is_bindable():
    import socket

    p = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", p))
    assert 0 < p < 65536


def test_metrics_scrape_of_a_cut_answer_is_a_connection_error():
    """A /metrics answer cut short (found through the fault proxy) is a ConnectionError, which
    the recorder turns into a failed point, not a traceback."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nvllm:x 1\n")
        conn.close()

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        with pytest.raises(ConnectionError, match="broken /metrics answer"):
            scrape(f"http://127.0.0.1:{srv.getsockname()[1]}", timeout_s=5)
    finally:
        t.join(timeout=5)
        srv.close()


DEFERRED = """
import os, signal, sys, time
from rackbook.live import server
server.install_signal_handlers()
with server.deferred_signals():
    os.kill(os.getpid(), signal.SIG{name})
    time.sleep(0.2)  # the handler has run: it only recorded the signal
    print("still here", server.RECEIVED, flush=True)
print("not reached", flush=True)
"""


@pytest.mark.parametrize(("name", "code"), [("TERM", 143), ("INT", None)])
def test_a_signal_during_start_up_is_acted_on_at_a_safe_point(name, code):
    """During start-up (deferred_signals) SIGTERM/SIGINT are recorded, not raised where they
    land (an import half done); the block's end stops the servers and raises."""
    p = subprocess.run(
        [sys.executable, "-c", DEFERRED.replace("{name}", name)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "still here" in p.stdout and "not reached" not in p.stdout
    if code is not None:
        assert p.returncode == code, p.stderr
    else:
        assert "KeyboardInterrupt" in p.stderr
