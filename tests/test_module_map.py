"""README.md's module map names every module under ``src/rackbook``, and nothing else.

The map is the table under ``## Module map``: one row a package (first cell, e.g.
``rackbook.core``), its modules in the second cell, each in backticks. A module name ending in
``/`` (``figures/``) points to a subpackage, which has a row of its own either way. Every
package under ``src/rackbook`` (a folder with ``__init__.py``) has a row, every module of it is
named in that row, and every name in the map is a module or subpackage that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

from rackbook import paths

SRC = paths.ROOT / "src"
README = paths.ROOT / "README.md"


def module_map(readme: str) -> dict[str, list[str]]:
    """Package (dotted) -> the names its row lists, in the order written."""
    section = re.search(r"^## Module map\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert section, "README.md has no '## Module map' section"
    rows: dict[str, list[str]] = {}
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        package = cells[0].strip("`")
        assert package not in rows, f"the map has two rows for {package}"
        rows[package] = re.findall(r"`([^`]+)`", cells[1])
    return rows


def packages_on_disk(src: Path) -> dict[str, set[str]]:
    """Package (dotted) -> its modules and subpackages (``name/``), as found under ``src``.

    A subpackage needs no entry in its parent's row (its own row names it), but may have one."""
    found: dict[str, set[str]] = {}
    for init in sorted((src / "rackbook").rglob("__init__.py")):
        folder = init.parent
        package = ".".join(folder.relative_to(src).parts)
        names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        names |= {f"{d.name}/" for d in folder.iterdir() if (d / "__init__.py").is_file()}
        found[package] = names
    return found


def map_mismatches(rows: dict[str, list[str]], disk: dict[str, set[str]]) -> list[str]:
    """Each way the map and the source tree disagree, in one line each (empty: they agree)."""
    problems = []
    for package in sorted(disk.keys() - rows.keys()):
        problems.append(f"package {package} has no row in the map")
    for package in sorted(rows.keys() - disk.keys()):
        problems.append(f"the map's row {package} names no package under src/")
    for package in sorted(rows.keys() & disk.keys()):
        listed = rows[package]
        for name in sorted({n for n in listed if listed.count(n) > 1}):
            problems.append(f"{package}: `{name}` listed twice")
        for name in sorted({n for n in disk[package] if not n.endswith("/")} - set(listed)):
            problems.append(f"{package}: module `{name}` is not in the map")
        for name in sorted(set(listed) - disk[package]):
            problems.append(f"{package}: the map names `{name}`, which does not exist")
    return problems


def test_readme_module_map_matches_the_source_tree():
    rows = module_map(README.read_text(encoding="utf-8"))
    disk = packages_on_disk(SRC)
    assert len(disk) >= 8 and sum(map(len, disk.values())) >= 60  # the tree was found
    assert map_mismatches(rows, disk) == []


def test_a_missing_or_stale_entry_is_named():
    """The comparison itself: a module left out, one that no longer exists, a package without
    a row, a subpackage entry, a duplicate."""
    disk = {"rackbook": {"cli", "sub/"}, "rackbook.sub": {"a", "b"}}
    good = {"rackbook": ["cli", "sub/"], "rackbook.sub": ["a", "b"]}
    assert map_mismatches(good, disk) == []
    assert map_mismatches({"rackbook": ["cli", "sub/"], "rackbook.sub": ["a"]}, disk) == [
        "rackbook.sub: module `b` is not in the map"
    ]
    assert map_mismatches({**good, "rackbook.sub": ["a", "b", "gone"]}, disk) == [
        "rackbook.sub: the map names `gone`, which does not exist"
    ]
    assert map_mismatches({"rackbook": ["cli", "sub/"]}, disk) == [
        "package rackbook.sub has no row in the map"
    ]
    assert map_mismatches({"rackbook": ["cli"], "rackbook.sub": ["a", "b"]}, disk) == []
    assert map_mismatches({**good, "rackbook": ["cli", "sub/", "gone/"]}, disk) == [
        "rackbook: the map names `gone/`, which does not exist"
    ]
    assert map_mismatches({**good, "rackbook": ["cli", "cli", "sub/"]}, disk) == [
        "rackbook: `cli` listed twice"
    ]


def test_the_map_is_read_from_the_table():
    text = (
        "## Module map\n\n| package | modules | what |\n|---|---|---|\n"
        "| `rackbook.x` | `a`, `b/` | the `c` of it |\n\nprose `d`\n\n"
        "## Next\n| `rackbook.y` | `e` | f |\n"
    )
    assert module_map(text) == {"rackbook.x": ["a", "b/"]}
