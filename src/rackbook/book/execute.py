"""Execute one notebook with papermill in a child process logging to a file; a signal stops
child and kernel; a cell's InputError comes back to the parent as JSON."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rackbook.errors import log_stem

#: Seconds the child gets to stop its kernel after SIGTERM before both are killed.
STOP_GRACE_S = 1.0

#: The environment variable naming the file a kernel writes an uncaught InputError's fields to.
ERROR_ENV = "RACKBOOK_KERNEL_ERROR"


def report_input_errors() -> None:
    """In the kernel: write a cell's uncaught InputError as JSON to :data:`ERROR_ENV`'s file."""
    from IPython import get_ipython

    from rackbook.errors import InputError

    def handler(shell: Any, etype: type, value: InputError, tb: Any, tb_offset: Any = None) -> Any:
        fields = {"file": value.file, "field": value.field, "problem": value.problem}
        Path(os.environ[ERROR_ENV]).write_text(json.dumps(fields), encoding="utf-8")
        return shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)

    get_ipython().set_custom_exc((InputError,), handler)


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` (None off Linux): the child gets ``sig`` when this process dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, int(sig), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call: nothing would signal
            os._exit(128 + int(sig))

    return preexec


def execute_notebook(
    nb: Path,
    output: Path,
    parameters: dict[str, Any],
    cwd: Path,
    progress: bool,
    log_name: str,
    stage: Path | None = None,
) -> None:
    """Execute ``nb`` into ``output`` in a child process (headline JSON to ``stage``);
    raises InputError, PapermillExecutionError or RuntimeError naming the log."""
    stem = log_stem(log_name)
    log, spec, result, kernel_error = (
        Path(f"{stem}.{s}") for s in ("log", "spec.json", "result.json", "error.json")
    )
    term = os.dup(2) if progress else None  # the progress bar's way to the terminal
    paths = {"nb": nb, "output": output, "cwd": cwd, "result": result, "error": kernel_error}
    job = {k: str(v) for k, v in paths.items()} | {"parameters": parameters, "progress_fd": term}
    job["stage"] = None if stage is None else str(stage)
    spec.write_text(json.dumps(job), encoding="utf-8")
    try:
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rackbook.book.execute", str(spec)],
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=subprocess.STDOUT,
                pass_fds=(term,) if term is not None else (),
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),  # it stops its kernel, then exits
            )
            if term is not None:
                os.close(term)
                term = None
            try:
                code = proc.wait()
            except BaseException:
                _stop(proc)
                log.unlink()
                raise
        if result.is_file() or code == 0:
            log.unlink()  # nothing to read in it: a failed cell is raised with its traceback
        if result.is_file() and kernel_error.is_file():
            from rackbook.errors import InputError

            raise InputError(**json.loads(kernel_error.read_text(encoding="utf-8")))
        if result.is_file():
            failed = json.loads(result.read_text(encoding="utf-8"))
            from papermill.exceptions import PapermillExecutionError

            raise PapermillExecutionError(**failed)
        if code != 0:
            raise RuntimeError(f"notebook execution failed (exit code {code}); log: {log}")
    finally:
        if term is not None:
            os.close(term)
        for f in (spec, result, kernel_error):
            with contextlib.suppress(FileNotFoundError):
                f.unlink()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child (it stops its kernel); if it lingers, SIGKILL its group and kernel."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        kernels = _children(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in kernels:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def _children(pid: int) -> list[int]:
    import psutil

    with contextlib.suppress(psutil.Error):
        return [c.pid for c in psutil.Process(pid).children()]
    return []


_REPORT = "from rackbook.book.execute import report_input_errors; report_input_errors()"


def _child_main(spec_path: str) -> int:
    """The child: execute the spec's notebook; a fatal signal kills the kernel."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))

    def _on_signal(signum: int, _frame: object) -> None:
        for pid in _children(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, _on_signal)
    if spec.get("stage"):
        from rackbook.results.headline import STAGE_ENV

        os.environ[STAGE_ENV] = spec["stage"]  # the kernel inherits it
    os.environ[ERROR_ENV] = spec["error"]
    import papermill
    from papermill.exceptions import PapermillExecutionError

    progress: bool | dict[str, Any] = False
    if spec["progress_fd"] is not None:
        progress = {"file": os.fdopen(spec["progress_fd"], "w")}
    try:
        papermill.execute_notebook(
            spec["nb"],
            spec["output"],
            parameters=spec["parameters"],
            kernel_name="python3",
            progress_bar=progress,
            cwd=spec["cwd"],
            log_output=False,
            extra_arguments=[f"--IPKernelApp.exec_lines={_REPORT}"],
        )
    except PapermillExecutionError as exc:
        keys = ("cell_index", "exec_count", "source", "ename", "evalue", "traceback")
        failed = {k: getattr(exc, k) for k in keys}
        Path(spec["result"]).write_text(json.dumps(failed), encoding="utf-8")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1]))
