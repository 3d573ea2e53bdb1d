"""Issue 39's code habits, held by tests: no line packing hidden from the formatter, no
function over 100 lines in ``src/``."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rackbook"


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_src_has_no_fmt_skip() -> None:
    # '# fmt: skip' keeps a statement packed on fewer lines than ruff format writes it;
    # data tables may sit between '# fmt: off' and '# fmt: on', one record per line
    found = [
        f"{p.relative_to(SRC)}:{i}"
        for p in _modules()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "# fmt: skip" in line
    ]
    assert found == []


def test_no_function_over_100_lines() -> None:
    long = []
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > 100:
                    long.append(f"{p.relative_to(SRC)}:{node.name} {n}")
    assert long == []


def test_the_checks_see_the_package() -> None:
    # the two tests above would pass on an empty folder
    assert len(_modules()) > 50 and SRC / "physics" / "check.py" in _modules()
