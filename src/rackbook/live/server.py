"""A real ``vllm serve`` that nothing outlives: its own process group, stopped whole (SIGTERM,
then SIGKILL after a grace period) on every way out: SIGINT/SIGTERM handlers, ``atexit``, and
``PR_SET_PDEATHSIG`` for a recorder killed with SIGKILL. Its CPU cores: vLLM's CPU engine
busy-polls, so the API server and bench client (``front``) get their own (:data:`CPUS_ENV`)."""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import itertools
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from rackbook.errors import InputError
from rackbook.live.envfile import LIVE_VENV, api_key, redact, urlopen, vllm_environ

STARTUP_TIMEOUT_S = 300.0  # s to wait for /health (eager start here: about 25 to 40 s)
GRACE_S = 10.0  # s between SIGTERM and SIGKILL
TAIL_LINES = 30

#: ``auto`` (CPU build, >= 2 cores: the last ``max(1, n // 4)`` front), ``off``, or ``0-11/12-15``
#: (engine/front cpu lists).
CPUS_ENV = "RACKBOOK_LIVE_CPUS"
_LIVE: set[VllmServer] = set()
_LOCK = threading.Lock()


class ServerError(RuntimeError):
    """The server failed to start or died; the message ends with its log's last lines."""


def _note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) process ids whose process group is ``pgid`` (from /proc)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (d / "stat").read_text()
            state, _, pgrp = stat[stat.rfind(")") + 2 :].split()[:3]
            if int(pgrp) == pgid and state not in ("Z", "X"):
                pids.append(int(d.name))
    return sorted(pids)


def parse_cpu_list(text: str) -> frozenset[int]:
    """``"0,2-4"`` -> {0, 2, 3, 4}; raises ValueError on anything else."""
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a < 0 or b < a:
            raise ValueError(part)
        out.update(range(a, b + 1))
    if not out:
        raise ValueError(text)
    return frozenset(out)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """{0, 2, 3, 4} -> ``"0,2-4"``."""
    runs = [list(g) for _, g in itertools.groupby(enumerate(sorted(cpus)), lambda p: p[1] - p[0])]
    return ",".join(f"{r[0][1]}" if len(r) == 1 else f"{r[0][1]}-{r[-1][1]}" for r in runs)


@dataclass(frozen=True)
class CpuLayout:
    """Engine and front (API server + client) cores; both None when nothing is pinned."""

    mode: str  # auto | off | explicit
    engine: frozenset[int] | None
    front: frozenset[int] | None
    reason: str
    setting: str  # the RACKBOOK_LIVE_CPUS value it came from

    def describe(self) -> dict[str, Any]:
        """run.json's record.cpu_layout."""
        return {
            "setting": f"{CPUS_ENV}={self.setting}",
            "mode": self.mode,
            "pinned": self.engine is not None,
            "engine_cpus": format_cpu_list(self.engine) if self.engine else None,
            "api_server_and_client_cpus": format_cpu_list(self.front) if self.front else None,
            "reason": self.reason,
        }

    def label(self) -> str:
        if self.engine is None or self.front is None:  # both or neither
            return "unpinned"
        eng, front = format_cpu_list(self.engine), format_cpu_list(self.front)
        return f"engine cpus {eng}; api server + client cpus {front}"


def cpu_layout(on_cpu: bool, attached: bool = False) -> CpuLayout:
    """The layout ``$RACKBOOK_LIVE_CPUS`` asks for (``attached``: none); InputError on a bad one."""
    raw = os.environ.get(CPUS_ENV, "auto")
    text, avail = raw.strip().lower() or "auto", frozenset(os.sched_getaffinity(0))
    auto = text == "auto"
    for mode, unpinned, why in (  # the first that holds: nothing pinned
        ("off", text in ("off", "none", "0", "no", "false"), f"{CPUS_ENV}={raw}"),
        ("off", attached, "servers given with --endpoint: not started here"),
        ("auto", auto and not on_cpu, "not a CPU build of vLLM"),
        ("auto", auto and len(avail) < 2, f"only {len(avail)} usable core"),
    ):
        if unpinned:
            return CpuLayout(mode, None, None, f"{why}: nothing pinned", raw)
    if auto:
        s, k = sorted(avail), max(1, len(avail) // 4)
        why = (
            "CPU build: the engine core and worker busy-poll (sched_yield) and starve anything "
            "sharing their cores; API server and bench client get their own"
        )
        return CpuLayout("auto", frozenset(s[:-k]), frozenset(s[-k:]), why, raw)
    engine_text, sep, front_text = raw.partition("/")
    try:
        engine, front = parse_cpu_list(engine_text), parse_cpu_list(front_text if sep else "")
    except ValueError:
        why = "expected auto, off or ENGINE/FRONT cpu lists (e.g. 0/1 or 0-11/12-15)"
        raise InputError(CPUS_ENV, raw, why) from None
    if engine & front:
        raise InputError(CPUS_ENV, raw, "engine and front cpu lists overlap")
    if missing := (engine | front) - avail:
        why = f"cpus {format_cpu_list(missing)} not usable here ({format_cpu_list(avail)})"
        raise InputError(CPUS_ENV, raw, why)
    return CpuLayout("explicit", engine, front, f"{CPUS_ENV}={raw}", raw)


def set_process_affinity(pid: int, cpus: Iterable[int]) -> None:
    """Pin every current thread of ``pid`` (threads it creates later inherit)."""
    with contextlib.suppress(OSError):  # the process is gone
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that just exited
                os.sched_setaffinity(int(task.name), set(cpus))


@contextlib.contextmanager
def pinned_self(cpus: frozenset[int] | None) -> Iterator[None]:
    """The block with this process on ``cpus`` (None: unchanged), restored afterwards."""
    old = os.sched_getaffinity(0)
    set_process_affinity(os.getpid(), old if cpus is None else cpus)
    try:
        yield
    finally:
        set_process_affinity(os.getpid(), old)


def _pdeathsig_fn(cpus: frozenset[int] | None = None) -> Callable[[], None]:
    # preexec: SIGTERM when the parent dies (PR_SET_PDEATHSIG = 1), pinned to ``cpus``
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def fn() -> None:
        prctl(1, int(signal.SIGTERM), 0, 0, 0)
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    return fn


class VllmServer:
    """``vllm serve MODEL``'s process group on 127.0.0.1; the key in VLLM_API_KEY; pinned cores."""

    def __init__(
        self,
        model: str | Path,
        serve_args: Sequence[str] = (),
        *,
        log_path: str | Path,
        port: int | None = None,
        grace_s: float = GRACE_S,
        cpus: frozenset[int] | None = None,
        front_cpus: frozenset[int] | None = None,
    ) -> None:
        bad = [a for a in serve_args if a.split("=")[0] in ("--host", "--port", "--api-key")]
        if bad:
            raise ValueError(f"serve_args must not set {bad[0]} (the harness sets it)")
        self.model, self.serve_args, self.host = str(model), list(serve_args), "127.0.0.1"
        self.port, self.log_path, self.grace_s = port or free_port(), Path(log_path), grace_s
        self.env = vllm_environ()
        self.key = api_key(self.env)
        self.env |= {"VLLM_API_KEY": self.key} if self.key else {}
        self.cpus, self.front_cpus = (frozenset(c) if c else None for c in (cpus, front_cpus))
        self.affinity: dict[str, str] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.pgid: int | None = None
        self.started_at, self.stopped = 0.0, False
        self.startup_s: float | None = None  # seconds from start to the first /health 200
        self._pump: threading.Thread | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def argv(self) -> list[str]:
        net = ["--host", self.host, "--port", str(self.port)]
        return [str(LIVE_VENV / "bin" / "vllm"), "serve", self.model, *net, *self.serve_args]

    @property
    def command(self) -> str:
        return redact(shlex.join(["vllm", *self.argv[1:]]), self.key)

    def info(self) -> dict[str, Any]:
        """What run.json keeps about this server (cpus: process comm:pid -> cores)."""
        out: dict[str, Any] = {"command": self.command, "url": self.base_url, "pgid": self.pgid}
        out |= {"startup_s": self.startup_s, "log": self.log_path.name}
        if self.cpus or self.front_cpus:
            on, moved = (format_cpu_list(c) if c else None for c in (self.cpus, self.front_cpus))
            out["cpus"] = {
                "started_on": on,
                "api_server_moved_to": moved,
                "observed": self.affinity,
            }
        return out

    def _place_api_server(self) -> None:
        assert self.pgid is not None
        if self.front_cpus:
            set_process_affinity(self.pgid, self.front_cpus)
        for pid in group_members(self.pgid):
            with contextlib.suppress(OSError):
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                self.affinity[f"{comm}:{pid}"] = format_cpu_list(os.sched_getaffinity(pid))

    def start(self) -> VllmServer:
        """Launch the process group; returns at once (:meth:`wait_healthy` waits)."""
        if self.proc is not None:
            return self
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        install_signal_handlers()
        with _LOCK:
            self.started_at = time.monotonic()
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=_pdeathsig_fn(self.cpus),  # noqa: PLW1509
            )
            self.pgid = self.proc.pid  # session leader: pgid == pid
            _LIVE.add(self)
        self._pump = threading.Thread(target=self._pump_log, name="vllm-log", daemon=True)
        self._pump.start()
        where = f", cpus {format_cpu_list(self.cpus)}" if self.cpus else ""
        _note(f"started: {self.command} (pgid {self.pgid}{where}, log {self.log_path})")
        return self

    def _pump_log(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        with open(self.log_path, "w", encoding="utf-8") as log:
            for raw in self.proc.stdout:
                line = redact(raw.decode("utf-8", "replace"), self.key)
                log.write(line)
                log.flush()
                self._tail.append(line.rstrip("\n"))

    def tail(self, n: int = TAIL_LINES) -> str:
        if self._pump is not None:
            self._pump.join(timeout=0.5)
        return "\n".join(list(self._tail)[-n:])

    def wait_healthy(self) -> float:
        """Seconds to a 200 from ``GET /health``; ServerError (group stopped) on exit or timeout."""
        assert self.proc is not None, "start() first"
        timeout_s, next_note = STARTUP_TIMEOUT_S, self.started_at + 10.0
        while True:
            if RECEIVED:  # a signal deferred during start-up: act on it here
                act_on_signal(force=True)
            if (code := self.proc.poll()) is not None:
                self._failed(f"vllm serve exited with code {code} before /health answered")
            with contextlib.suppress(OSError), urlopen(f"{self.base_url}/health", self.key, 2) as r:
                if r.status == 200:  # an HTTP error status raises (an OSError): not yet
                    self.startup_s = time.monotonic() - self.started_at
                    if self.cpus or self.front_cpus:
                        self._place_api_server()
                    _note(f"server up after {self.startup_s:.1f} s at {self.base_url}")
                    return self.startup_s
            if (now := time.monotonic()) > self.started_at + timeout_s:
                self._failed(f"vllm serve not healthy after {timeout_s:.0f} s")
            if now >= next_note:
                waited = f"{now - self.started_at:.0f} s (timeout {timeout_s:.0f} s)"
                _note(f"waiting for {self.base_url}/health: {waited}")
                next_note += 10.0
            time.sleep(0.5)

    def _failed(self, why: str) -> NoReturn:
        self.stop()
        raise ServerError(f"{why}; last lines of {self.log_path}:\n{self.tail()}")

    def stop(self) -> list[int]:
        """Stop the group: SIGTERM, wait ``grace_s``, SIGKILL; the pids SIGKILL took."""
        with _LOCK:
            if self.proc is None or self.stopped:
                return []
            self.stopped = True
            _LIVE.discard(self)
        pgid = self.pgid
        assert pgid is not None
        for sig, wait_s in ((signal.SIGTERM, self.grace_s), (signal.SIGKILL, 5.0)):
            killed = group_members(pgid) if sig == signal.SIGKILL else []
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
            deadline = time.monotonic() + wait_s
            while (alive := group_members(pgid)) and time.monotonic() < deadline:
                self.proc.poll()  # reaps the leader once it exits
                time.sleep(0.1)
            if not alive:
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        if self._pump is not None:
            self._pump.join(timeout=2.0)
        return killed


def stop_all() -> None:
    """Stop every server this process started and has not stopped."""
    for srv in list(_LIVE):
        with contextlib.suppress(Exception):
            srv.stop()


_HANDLERS_INSTALLED = False
RECEIVED: list[int] = []  # signals received by this process's handlers, in order
_DEFERRED = 0  # depth of deferred_signals blocks: while > 0 a signal is only recorded


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """SIGINT/SIGTERM only recorded in the block (a cut import could abort); acted on after."""
    global _DEFERRED
    _DEFERRED += 1
    try:
        yield
    finally:
        _DEFERRED -= 1
    act_on_signal()


def act_on_signal(force: bool = False) -> None:
    """After a signal (``force``: even deferred): servers stopped, KeyboardInterrupt/SystemExit."""
    if not RECEIVED or (_DEFERRED and not force):
        return
    # a second Ctrl-C must not cut the stop short (it would skip the SIGKILL escalation)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stop_all()
    if RECEIVED[0] == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + RECEIVED[0])


def on_signal(signum: int, _frame: object) -> None:
    """The stop signals' handler: recorded, acted on now or (start-up) at a safe point."""
    RECEIVED.append(signum)
    act_on_signal()


def install_signal_handlers() -> None:
    """Stop all servers on SIGINT/SIGTERM and at exit (main thread only; idempotent)."""
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    atexit.register(stop_all)
    _HANDLERS_INSTALLED = True


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rackbook.live.server MODEL [--hold S] [--status F] -- ARGS``: a held server."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m rackbook.live.server")
    p.add_argument("model")
    p.add_argument("--hold", type=float, default=0.0, help="seconds to keep it up")
    p.add_argument("--status", type=Path, default=None, help="JSON written once healthy")
    p.add_argument("--log", type=Path, default=Path("vllm-serve.log"))
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    a = p.parse_args(argv[:cut])
    srv = VllmServer(a.model, argv[cut + 1 :], log_path=a.log).start()
    try:
        srv.wait_healthy()
        if a.status:
            members = [] if srv.pgid is None else group_members(srv.pgid)
            a.status.write_text(json.dumps({**srv.info(), "members": members}))
        time.sleep(a.hold)
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
