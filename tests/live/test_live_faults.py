"""Faults survived, against real vLLM on CPU (marked ``live`` and ``faults``; run by
``make test-live``).

A fault-injecting HTTP proxy on 127.0.0.1 sits between the recorder's client (``vllm bench
serve``) and a real server: it answers some completion requests with HTTP 500, stalls one
stream, resets one connection mid-stream and puts a malformed SSE line in one stream. Each
becomes a failed request with its reason, the point is kept with its metrics from the rest and
its failed share stated. SIGINT and SIGTERM during server start-up and during a point end the
recorder with one ``error:`` line, no process left (found by an environment marker) and no
trace written; an attached endpoint's server lives on. The proxy and signal tests that need a
running server share the session's held server (``held_server`` in tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from livehelp import SECRET, accept_each, alive, vllm_environ, wait_for

from rackbook.live.envfile import LIVE_VENV, live_python, live_venv_ready
from rackbook.live.server import group_members
from rackbook.paths import TINY_MODEL

pytestmark = [
    pytest.mark.live,
    pytest.mark.faults,
    pytest.mark.skipif(
        not live_venv_ready(),
        reason=f"live venv {LIVE_VENV} absent: run `bash env/live/setup.sh` to enable",
    ),
]

#: Output tokens of every measured request (the recorder's warm-up requests ask for at most 8).
WINDOW_OUTPUT = 16


def marked(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries ``marker``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (d / "environ").read_bytes() and alive(int(d.name)):
                    out.append(int(d.name))
    return out


# ----------------------------------------------------------------------------- the proxy
class FaultProxy:
    """An HTTP proxy on 127.0.0.1 that forwards to ``upstream`` and injects ``plan[n]`` into
    the n-th measured completion request (0-based; modulo ``period`` when given, so that a
    point the recorder runs again meets the same faults): ``"500"``, ``"stall"`` (200 and
    event-stream headers, then nothing), ``"reset"`` (the stream cut with a TCP reset after
    its first bytes) or
    ``"malformed"`` (a non-JSON ``data:`` line after the first event). Bounded: at most
    ``max_requests`` requests, a stall lasts at most ``stall_s`` seconds, and :meth:`close`
    ends everything."""

    def __init__(self, upstream: int, plan: dict[int, str], stall_s: float = 30.0,
                 max_requests: int = 200, period: int = 0) -> None:  # fmt: skip
        self.upstream, self.plan, self.stall_s = upstream, plan, stall_s
        self.period = period  # > 0: the plan repeats every `period` requests (a re-run point)
        self.max_requests = max_requests
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen: list[str] = []  # the mode of each measured completion request (or "ok")
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        def start(conn: socket.socket) -> None:
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

        accept_each(self.sock, self.done, start, most=self.max_requests)

    def close(self) -> None:
        self.done.set()
        self.sock.close()
        self.thread.join(timeout=5)

    @staticmethod
    def _read_request(conn: socket.socket) -> tuple[bytes, bytes] | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(body) < length:
            body += conn.recv(65536)
        return head, body

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(60)
        with contextlib.closing(conn):
            while not self.done.is_set():
                req = self._read_request(conn)
                if req is None:
                    return
                head, body = req
                if not self._one(conn, head, body):
                    return

    @staticmethod
    def _measured(body: bytes) -> bool:
        """A request of the measured window: it asks for WINDOW_OUTPUT tokens (the recorder's
        warm-up requests ask for at most 8), so the plan never hits a warm-up."""
        with contextlib.suppress(ValueError):
            return json.loads(body).get("max_tokens") == WINDOW_OUTPUT
        return False

    def _one(self, conn: socket.socket, head: bytes, body: bytes) -> bool:
        """Answer one request; False when the connection must end."""
        method, path = head.split(b" ", 2)[:2]
        mode = "ok"
        if method == b"POST" and path.endswith(b"/completions") and self._measured(body):
            with self.lock:
                n = len(self.seen)
                mode = self.plan.get(n % self.period if self.period else n, "ok")
                self.seen.append(mode)
        if mode == "500":
            msg = b'{"error": "injected by the test proxy"}'
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json"
                         b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(msg), msg))  # fmt: skip
            return False
        if mode == "stall":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Connection: close\r\n\r\n")  # fmt: skip
            self.done.wait(self.stall_s)
            return False
        lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"connection:")]
        up = socket.create_connection(("127.0.0.1", self.upstream), timeout=60)
        with contextlib.closing(up):
            up.sendall(b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body)
            resp = b""
            while b"\r\n\r\n" not in resp:
                chunk = up.recv(65536)
                if not chunk:
                    break
                resp += chunk
            rhead, _, rest = resp.partition(b"\r\n\r\n")
            rhead = b"\r\n".join(
                ln for ln in rhead.split(b"\r\n") if not ln.lower().startswith(b"connection:")
            )
            conn.sendall(rhead + b"\r\nConnection: close\r\n\r\n")
            if mode == "malformed":
                # the whole (short) stream, then one chunk: its first event, a line that is not
                # JSON, the other events (one chunk, so the client reads them together)
                while chunk := up.recv(65536):
                    rest += chunk
                events = _unchunk(rest)
                first, _, others = events.partition(b"\n\n")
                body = first + b"\n\ndata: {this is not json\n\n" + others
                conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
                return False
            if mode == "reset":  # the body's first bytes (not a whole event), then a reset
                while not rest:
                    rest = up.recv(65536)
                conn.sendall(rest[:8])
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                return False  # closing with SO_LINGER 0 sends the reset
            while True:
                if rest:
                    conn.sendall(rest)
                rest = up.recv(65536)
                if not rest:
                    return False


def _unchunk(data: bytes) -> bytes:
    """The payload of an HTTP/1.1 chunked body."""
    out = b""
    while data:
        size, _, data = data.partition(b"\r\n")
        n = int(size.split(b";")[0] or b"0", 16)
        if n == 0:
            break
        out, data = out + data[:n], data[n + 2 :]
    return out


# ----------------------------------------------------------------------------- recording
def record(out: Path, url: str, *extra: str, timeout: float = 300, **env: str):
    args = [str(live_python()), "-m", "rackbook.cli", "record", "single-user", "-o", str(out),
            "--endpoint", url, "--no-progress", "--accept-invalid", "-p", "model",
            str(TINY_MODEL), "-p", "input_len", "16", "-p", "output_len", str(WINDOW_OUTPUT),
            *extra]  # fmt: skip
    env = {"RACKBOOK_API_KEY": SECRET, **env}  # the held server asks for its key
    return subprocess.run(args, env=vllm_environ(**env), capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


# ----------------------------------------------------------------------------- proxy faults
#: Which measured request (0-based, one at a time) gets which fault, and the text its failure
#: must carry: the server's 500; a reset (aiohttp's ClientPayloadError, or vLLM's "Never
#: received a valid chunk" when it reads as the end of the stream: any reason); a malformed
#: SSE line.
FAULTS = {
    1: ("500", "Internal Server Error"),
    3: ("reset", ""),
    5: ("malformed", "JSONDecodeError"),
}


def test_faulty_requests_are_failed_requests_each_with_its_reason(held_server, tmp_path):
    """Requests 1, 3 and 5 of 8 each get a different fault (one point, so the faults share it
    as they would in a real run): the point is kept, 5 of its 8 requests succeed, each failure
    carries its own fault's reason, the metrics use the 5, and run.json states the point's
    requests and successful ones."""
    plan = {n: mode for n, (mode, _) in FAULTS.items()}
    proxy = FaultProxy(held_server.port, plan, stall_s=5, period=8)
    try:
        out = tmp_path / "trace"
        r = record(out, f"http://127.0.0.1:{proxy.port}", "-p", "num_requests", "8")
        assert r.returncode == 0, r.stderr[-3000:]
    finally:
        proxy.close()
    from rackbook.core import summary, traces

    t = traces.read_trace(out)
    req = t.requests.sort_values("start_time_s", kind="stable")  # the order they were sent
    assert len(req) == 8 and int(req["success"].sum()) == 5, proxy.seen
    assert [i for i, ok in enumerate(req["success"]) if not ok] == sorted(FAULTS)
    failed = req.loc[~req["success"].astype(bool), "error"].tolist()
    for error, (mode, reason) in zip(failed, [FAULTS[n] for n in sorted(FAULTS)], strict=True):
        assert error and reason in error, (mode, error)
    (pid,) = t.points["point_id"]
    v = t.run["validity"][pid]
    assert (v["requests"], v["successful"], v["failed"], v["failed_share"]) == (8, 5, 3, 0.375)
    got = summary.summarize(t).to_dict()  # vLLM's metrics over the 5 that succeeded
    assert (got["completed"], got["failed"]) == (5, 3)
    assert got["total_output_tokens"] == 5 * WINDOW_OUTPUT
    # the recorder may run a point again once (validity): each attempt met the same faults
    assert len(proxy.seen) in (8, 16)
    assert all(proxy.seen.count(mode) == len(proxy.seen) // 8 for mode in plan.values())


def test_a_point_whose_every_request_fails_stops_the_recording(held_server, tmp_path):
    """Every measured request answered HTTP 500: no point is made of nothing. The recording
    stops with one line naming the point, its counts and --resume; record.json keeps the
    failure and its raw results; no trace folder is written."""
    proxy = FaultProxy(held_server.port, {0: "500"}, period=1)
    try:
        out = tmp_path / "trace"
        r = record(out, f"http://127.0.0.1:{proxy.port}", "-p", "num_requests", "4")
    finally:
        proxy.close()
    assert r.returncode == 2, r.stderr[-3000:]
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, r.stderr[-3000:]
    assert "point failed: every request failed (0 requests completed, 4 failed" in errors[0]
    assert "--resume" in errors[0]
    assert set(proxy.seen) == {"500"} and len(proxy.seen) == 4
    assert not out.exists()
    (info,) = [json.loads(p.read_text()) for p in tmp_path.rglob("record.json")]
    (failure,) = info["failures"]
    assert (failure["requests_completed"], failure["requests_failed"]) == (0, 4)
    assert failure["reason"] == "every request failed" and failure["raw"]


def test_a_stalled_stream_times_out_instead_of_hanging(held_server, tmp_path):
    """A stream that sends headers and then nothing fails after RACKBOOK_REQUEST_TIMEOUT_S
    seconds with the client's timeout as its reason; the recording ends on its own."""
    proxy = FaultProxy(held_server.port, {1: "stall"}, stall_s=60, period=3)
    try:
        t0 = time.monotonic()
        out = tmp_path / "trace"
        r = record(out, f"http://127.0.0.1:{proxy.port}", "-p", "num_requests", "3",
                   timeout=240, RACKBOOK_REQUEST_TIMEOUT_S="3")  # fmt: skip
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stderr[-3000:]
    finally:
        proxy.close()
    from rackbook.core import traces

    t = traces.read_trace(out)
    assert proxy.seen in (["ok", "stall", "ok"], ["ok", "stall", "ok"] * 2)
    assert int(t.requests["success"].sum()) == 2
    (err,) = t.requests.loc[~t.requests["success"].astype(bool), "error"]
    assert "Timeout" in err or "timeout" in err, err[-500:]
    assert took < 200  # the stall (60 s at the proxy) did not hold the recording
    assert t.run["record"]["request_timeout_s"] == 3.0


def test_a_bad_request_timeout_is_one_line(tmp_path):
    r = record(tmp_path / "t", "http://127.0.0.1:9", RACKBOOK_REQUEST_TIMEOUT_S="soon", timeout=120)
    assert r.returncode == 2
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert errors == ["error: RACKBOOK_REQUEST_TIMEOUT_S: soon: not a positive number of seconds"]
    assert not (tmp_path / "t").exists()


# ----------------------------------------------------------------------------- signals
@pytest.mark.parametrize(
    ("sig", "when"),
    [
        # during start-up the handler only records the signal; the wait loop acts on it (a
        # SystemExit raised inside the client's import could abort the interpreter)
        (signal.SIGTERM, "start-up"),
        (signal.SIGINT, "start-up"),
        # during a point, attached to the session's held server: the recorder ends, the
        # user's server lives on. (SIGINT during a point with the recorder's own server, whose
        # whole process group must go: test_live_vllm.py's
        # test_sigint_during_recording_leaves_no_vllm_process.)
        (signal.SIGTERM, "point"),
    ],
)
def test_a_signal_stops_everything_and_writes_no_trace(tmp_path, request, sig, when):
    """SIGTERM/SIGINT while the recorder starts its own server, or while a point runs against
    an endpoint: exit 143/130 with one error line, every process of the run gone, no trace
    folder; an attached endpoint's server is not stopped."""
    marker = f"RACKBOOK_FAULT_TEST={uuid.uuid4().hex}"
    out = tmp_path / "trace"
    raw = Path(str(out) + ".raw")
    env = vllm_environ(**dict([marker.split("=", 1)]))
    args = [str(live_python()), "-m", "rackbook.cli", "record", "single-user", "-o", str(out),
            "--no-progress", "--accept-invalid", "-p", "num_requests", "200", "-p",
            "input_len", "16", "-p", "output_len", "64"]  # fmt: skip
    held = None
    if when == "point":
        held = request.getfixturevalue("held_server")
        args += ["--endpoint", held.url, "-p", "model", str(TINY_MODEL)]
        env["RACKBOOK_API_KEY"] = SECRET
        members = group_members(held.pgid)
    rec = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)  # fmt: skip
    try:
        if when == "start-up":  # the server's log exists: vllm serve is starting
            wait_for(lambda: (raw / "vllm-serve.log").exists() or rec.poll() is not None, 120,
                     "the server to start")  # fmt: skip
            time.sleep(2)
        else:  # the warm-up is done: the measured point is running
            wait_for(lambda: (raw / "serve" / "warmup.json").exists() or rec.poll() is not None,
                     300, "the warm-up")  # fmt: skip
            time.sleep(2)
        assert rec.poll() is None, rec.stderr.read()[-2000:]
        # the recorder (and, starting its own, its server's processes)
        assert len(marked(marker)) >= (1 if held else 2)
        rec.send_signal(sig)
        rc = rec.wait(timeout=120)
        err = rec.stderr.read()
        assert rc == 128 + sig, err[-2000:]
        errors = [x for x in err.splitlines() if x.startswith("error:")]
        assert len(errors) == 1, err[-2000:]
        assert ("terminated" if sig == signal.SIGTERM else "interrupted") in errors[0]
        assert "Traceback" not in err
        wait_for(lambda: not marked(marker), 30, "every process of the run to end")
        assert not out.exists()
        if held:  # the endpoint's server is the user's: still whole, still answering
            assert group_members(held.pgid) == members
            with urllib.request.urlopen(f"{held.url}/health", timeout=30) as answer:
                assert answer.status == 200
    finally:
        if rec.poll() is None:
            rec.kill()
        for pid in marked(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
