"""The bad-input error (one ``error:`` line, exit 2), the termination exception, the logs."""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path


def one_line(text: str) -> str:
    """``text`` with control characters (newlines included) escaped: always one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class InputError(Exception):
    """Bad input: ``str(err)`` is ``"<file>: <field>: <problem>"``, always one line."""

    def __init__(self, file: str | Path | None, field: str | None, problem: str) -> None:
        self.file = one_line(str(file)) if file is not None else "-"
        self.field = one_line(field) if field else "-"
        self.problem = one_line(" ".join(str(problem).split()))
        super().__init__(f"{self.file}: {self.field}: {self.problem}")


class Terminated(BaseException):
    """Raised on SIGTERM, SIGHUP, SIGQUIT: cleanups unwind, then the CLI exits 128 + signum."""

    def __init__(self, signum: int = 15) -> None:
        self.signum = signum
        super().__init__(signum)


def log_stem(name: str) -> Path:
    """``NAME-TIME-PID`` in the temporary folder's private ``rackbook-UID``: rackbook's logs."""
    folder = Path(tempfile.gettempdir()) / f"rackbook-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def write_log(name: str, text: str) -> Path:
    """Write a traceback (ANSI colours removed) to :func:`log_stem` ``.log``; its path."""
    log = Path(f"{log_stem(name)}.log")
    log.write_text(re.sub(r"\x1b\[[0-9;]*m", "", text), encoding="utf-8")
    return log
