"""One error type for bad input, rendered as a single ``error:`` line by the CLI (exit code 2)."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input: names the file (or other source), the field and the problem.

    ``str(err)`` is ``"<file>: <field>: <problem>"``; the CLI prefixes ``error: `` and exits 2.
    """

    def __init__(self, file: str | Path | None, field: str | None, problem: str) -> None:
        self.file = str(file) if file is not None else "-"
        self.field = field or "-"
        self.problem = " ".join(str(problem).split())  # always one line
        super().__init__(f"{self.file}: {self.field}: {self.problem}")
