"""One error type for bad input, rendered as a single ``error:`` line by the CLI (exit code 2),
and the exception a termination signal raises (exit code 143)."""

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
    """Bad input: names the file (or other source), the field and the problem.

    ``str(err)`` is ``"<file>: <field>: <problem>"``; the CLI prefixes ``error: `` and exits 2.
    """

    def __init__(self, file: str | Path | None, field: str | None, problem: str) -> None:
        self.file = one_line(str(file)) if file is not None else "-"
        self.field = one_line(field) if field else "-"
        self.problem = one_line(" ".join(str(problem).split()))  # always one line
        super().__init__(f"{self.file}: {self.field}: {self.problem}")


class Terminated(BaseException):
    """Raised by the CLI's SIGTERM, SIGHUP and SIGQUIT handler (as KeyboardInterrupt for SIGINT):
    every cleanup unwinds, then the CLI exits 128 + the signal's number (143 for SIGTERM)."""

    def __init__(self, signum: int = 15) -> None:
        self.signum = signum
        super().__init__(signum)


def log_stem(name: str) -> Path:
    """``NAME-TIME-PID`` in the temporary folder's ``rackbook-UID`` (private to the user,
    created): where rackbook's logs go, never into an output. Add the suffix."""
    folder = Path(tempfile.gettempdir()) / f"rackbook-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def write_log(name: str, text: str) -> Path:
    """Write a traceback (ANSI colours removed) to :func:`log_stem` ``.log``; its path (named
    by the error line)."""
    log = Path(f"{log_stem(name)}.log")
    log.write_text(re.sub(r"\x1b\[[0-9;]*m", "", text), encoding="utf-8")
    return log
