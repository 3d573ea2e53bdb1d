"""No module under ``src/`` is longer than :data:`MAX_LINES` lines unless it says why it is one
idea: a line of its module docstring starting with ``One idea:`` and giving the reason (at least
:data:`MIN_REASON_WORDS` words), e.g. ``One idea: the trace schema; every column of every
table is declared here so that readers and writers cannot disagree.``

:data:`BEING_SPLIT` lists the modules still over the limit while the branch named beside each
splits them (issue 32); the lead removes an entry when that branch merges, and an entry whose
module is no longer over the limit fails the test so that the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

from rackbook import paths

SRC = paths.ROOT / "src"
MAX_LINES = 800
MIN_REASON_WORDS = 6
MARKER = "One idea:"

#: module (path under src/) -> who is splitting it. Remove an entry when its branch merges.
BEING_SPLIT: dict[str, str] = {}


def line_count(path: Path) -> int:
    """Lines in a file, as ``wc -l`` counts them with a last line lacking its newline added."""
    text = path.read_text(encoding="utf-8")
    return len(text.splitlines())


def one_idea_reason(source: str) -> str | None:
    """The reason a module's docstring gives for being one idea (the text after ``One idea:``
    on a line of its own, with the lines that continue it), or None when it gives none."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(MARKER):
            reason = [line[len(MARKER) :]]
            for more in lines[i + 1 :]:
                if not more.strip():
                    break
                reason.append(more)
            return " ".join(" ".join(reason).split())
    return None


def oversized(src: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """Module (path under ``src``) -> its lines, for each module over ``limit`` lines whose
    docstring gives no reason of :data:`MIN_REASON_WORDS` words or more."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        n = line_count(path)
        if n <= limit:
            continue
        reason = one_idea_reason(path.read_text(encoding="utf-8"))
        if reason is None or len(reason.split()) < MIN_REASON_WORDS:
            found[path.relative_to(src).as_posix()] = n
    return found


def test_no_module_over_the_limit_without_a_reason():
    found = oversized(SRC)
    assert sum(1 for _ in SRC.rglob("*.py")) >= 60  # the tree was found
    unexplained = {m: n for m, n in found.items() if m not in BEING_SPLIT}
    assert unexplained == {}, f"over {MAX_LINES} lines with no 'One idea:' reason"


def test_every_module_being_split_is_still_over_the_limit():
    """An entry whose module was split (or removed) goes: the allowlist only shrinks."""
    found = oversized(SRC)
    assert sorted(m for m in BEING_SPLIT if m not in found) == []


def test_the_reason_is_read_from_the_docstring(tmp_path):
    long_body = "x = 1\n" * 20
    cases = {
        "plain.py": '"""A module."""\n' + long_body,
        "reason.py": '"""A module.\n\nOne idea: the schema, every column declared once so\n'
        'that readers and writers agree.\n"""\n' + long_body,
        "short.py": '"""A module.\n\nOne idea: it is big.\n"""\n' + long_body,
        "comment.py": "# One idea: a comment is not the docstring, whatever it says here\n"
        + long_body,
        "small.py": '"""Short."""\nx = 1\n',
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert oversized(tmp_path, limit=10) == {"plain.py": 21, "short.py": 24, "comment.py": 21}
    assert one_idea_reason(cases["reason.py"]) == (
        "the schema, every column declared once so that readers and writers agree."
    )
