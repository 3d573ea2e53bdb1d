"""Helpers the live test modules (tests/live) share: the live env without API keys, waiting
with a deadline, process checks, and the held server of :func:`hold_server` (no test here;
pytest puts this folder on sys.path)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rackbook.live.envfile import live_python
from rackbook.live.envfile import vllm_environ as _vllm_environ
from rackbook.live.server import group_members

#: The held server's API key (:func:`hold_server`; a test value, no real key).
SECRET = "rk-live-test-secret-0123456789"

#: ``vllm serve`` flags of the held server (after the model): max-model-len 1024 holds the
#: six-scenario suite's longest context (768 + 32 tokens), max-num-seqs 8 its largest batch.
SERVE = ["--load-format", "dummy", "--dtype", "bfloat16", "--max-model-len", "1024",
         "--max-num-seqs", "8", "--enforce-eager", "--served-model-name", "tiny-moe"]  # fmt: skip


def vllm_environ(**extra: str) -> dict[str, str]:
    """env/live/vllm.env's environment, without any API key, plus ``extra``."""
    env = _vllm_environ()
    for k in ("RACKBOOK_API_KEY", "OPENAI_API_KEY", "VLLM_API_KEY"):
        env.pop(k, None)
    env.update(extra)
    return env


def wait_for(pred, timeout_s: float, what: str):
    """``pred()``'s first truthy value, polled every 0.3 s; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def kill_group(pgid: int | None) -> None:
    """SIGKILL a whole process group, if it still exists."""
    if pgid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def stop_holder(holder: subprocess.Popen, pgid: int | None) -> None:
    """Stop a ``python -m rackbook.live.server --hold`` process with SIGINT, as a user would,
    then check its server's process group is empty (killing what is left, then failing)."""
    if holder.poll() is None:
        holder.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            holder.wait(timeout=60)
    stragglers = group_members(pgid) if pgid else []
    kill_group(pgid)
    kill_group(holder.pid)
    assert stragglers == [], f"vLLM processes left after SIGINT: {stragglers}"


def accept_each(
    sock: socket.socket,
    done: threading.Event,
    handle: Callable[[socket.socket], None],
    most: int | None = None,
) -> None:
    """Hand each connection ``sock`` accepts to ``handle`` until ``done`` is set, the socket is
    closed or ``most`` were taken (a local test endpoint's accept loop; run it in a thread)."""
    sock.settimeout(0.1)
    taken = 0
    while not done.is_set() and (most is None or taken < most):
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        taken += 1
        handle(conn)


@dataclass(frozen=True)
class HeldServer:
    """A running tiny vLLM server: its URL, port, process group, the holder's status JSON
    (``members``, ``command``, ...) and its log file."""

    url: str
    port: int
    pgid: int
    info: dict
    log: Path


def hold_server(model: Path, tmp: Path) -> Iterator[HeldServer]:
    """Start ``python -m rackbook.live.server --hold`` on ``model`` (flags :data:`SERVE`, API
    key :data:`SECRET`), yield it once healthy, then stop it with SIGINT and check its process
    group is empty (the generator behind the session fixture ``held_server``)."""
    status, log, err = tmp / "server.json", tmp / "serve.log", tmp / "holder.err"
    with err.open("wb") as err_file:  # a file, not a pipe: a long session never fills it
        holder = subprocess.Popen(
            [str(live_python()), "-m", "rackbook.live.server", str(model), "--hold", "1800",
             "--status", str(status), "--log", str(log), "--", *SERVE],
            env=vllm_environ(RACKBOOK_API_KEY=SECRET), start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=err_file,
        )  # fmt: skip
    pgid = None
    try:
        wait_for(lambda: status.exists() or holder.poll() is not None, 300, "server health")
        assert holder.poll() is None, err.read_text()[-2000:]
        info = json.loads(status.read_text())
        pgid = info["pgid"]
        url = info["url"]
        yield HeldServer(url, int(url.rsplit(":", 1)[1]), pgid, info, log)
    finally:
        stop_holder(holder, pgid)
