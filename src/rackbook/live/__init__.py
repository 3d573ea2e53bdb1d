"""Live mode: traces recorded from real vLLM servers in .venv-live. Importing it imports no vllm
or torch: ``rackbook record`` re-executes itself there; :func:`record_trace` runs it as a child."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rackbook.errors import InputError
from rackbook.live.envfile import LIVE_VENV, live_python, live_venv_ready, vllm_environ
from rackbook.paths import resolve

#: The CLI in .venv-live (the recorder: its ``record`` verb).
_CHILD = ("-m", "rackbook.cli")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)):
        return ",".join(map(_value, v))
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
    """``rackbook record`` arguments; parameters whose value is None left out."""
    argv = [scenario, *(w for url in endpoints for w in ("--endpoint", str(url)))]
    if serve:
        argv += ["--serve", serve if isinstance(serve, str) else shlex.join(map(str, serve))]
    given = {k: v for k, v in (parameters or {}).items() if v is not None}
    argv += ["-o", str(output), *(w for k, v in given.items() for w in ("-p", k, _value(v)))]
    return argv + ["--resume"] * resume


def _run(cmd: list[str]) -> tuple[int, list[str], str]:
    """(exit code, stdout lines, last 64 KiB of stderr); Ctrl-C goes to the child first."""
    with tempfile.TemporaryFile() as out:
        pipe, none = subprocess.PIPE, subprocess.DEVNULL
        proc = subprocess.Popen(cmd, stdout=out, stderr=pipe, stdin=none, env=vllm_environ())
        assert proc.stderr is not None
        tail = b""
        try:  # its stderr passed on as it comes
            while chunk := os.read(proc.stderr.fileno(), 4096):
                sys.stderr.write(chunk.decode("utf-8", "replace"))
                sys.stderr.flush()
                tail = (tail + chunk)[-65536:]
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)  # the child stops its servers, then exits
            while proc.returncode is None:  # returning before it stops could orphan its servers
                with contextlib.suppress(KeyboardInterrupt):
                    proc.wait()
            raise
        out.seek(0)
        lines = out.read().decode("utf-8", "replace").splitlines()
        return rc, lines, tail.decode("utf-8", "replace")


def record_trace(scenario: str, *, output: str | Path, **options: Any) -> Path:
    """Path of the trace of ``scenario`` recorded in .venv-live (``options``: recorder_argv's)."""
    _check_venv()
    out = resolve(output)
    argv = recorder_argv(scenario, output=out, **options)
    rc, lines, err = _run([str(live_python()), *_CHILD, "record", *argv])
    if rc == 0:
        return Path(lines[-1]) if lines else out
    said = [x.strip() for x in err.replace("\r", "\n").splitlines() if x.strip()]
    errors = [x.removeprefix("error:").strip() for x in said if x.startswith("error:")]
    if errors and len(parts := errors[-1].split(": ", 2)) == 3:
        raise InputError(*parts)
    last = f": {said[-1][:300]}" if said else ""
    raise InputError("rackbook record", "-", f"recorder exited with code {rc}{last}")


def cli_record(args: argparse.Namespace) -> int:
    """``rackbook record``: here when this Python has vLLM, else exec of .venv-live's Python."""
    if importlib.util.find_spec("vllm") is not None:
        from rackbook.live.record import main

        return main(args)
    _check_venv()
    if not any(LIVE_VENV.glob("lib/python*/site-packages/rackbook-*.dist-info")):
        why = "live venv incomplete (rackbook is not installed in it): run `make live-setup` again"
        raise InputError(LIVE_VENV, "-", why)
    py = str(live_python())
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(py, [py, *_CHILD, *args.argv], vllm_environ())
    return 0  # not reached


def _check_venv() -> None:
    if not live_venv_ready():
        raise InputError(LIVE_VENV, "-", "live venv missing: run `bash env/live/setup.sh` first")
