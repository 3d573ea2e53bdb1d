"""pre-commit's commit-msg hook: the subject (first line) of a commit message is at most
:data:`MAX_SUBJECT` characters and not empty (CONTRIBUTING.md). Usage: ``commit_msg.py FILE``;
exit 1 with one line naming the length otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

#: Longest subject line (characters), as git's own tools and most forges show it whole.
MAX_SUBJECT = 72


def problem(message: str) -> str | None:
    """What is wrong with ``message``'s subject, or None (comment lines are git's, not read)."""
    lines = [ln for ln in message.splitlines() if not ln.startswith("#")]
    subject = lines[0].rstrip() if lines else ""
    if not subject:
        return "the commit subject (first line) is empty"
    if len(subject) > MAX_SUBJECT:
        return f"the commit subject is {len(subject)} characters: at most {MAX_SUBJECT}"
    return None


def main(argv: list[str]) -> int:
    found = problem(Path(argv[1]).read_text(encoding="utf-8"))
    if found is not None:
        print(f"error: {argv[1]}: subject: {found}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
