"""Stable staged sources between builds: :func:`sync_tree` rewrites only changed files;
:func:`tree_digest` names a staged tree so an unchanged build is skipped."""

from __future__ import annotations

import filecmp
import hashlib
import os
import shutil
from pathlib import Path


def _relative_files(root: Path) -> set[str]:
    return {(Path(d) / f).relative_to(root).as_posix() for d, _, fs in os.walk(root) for f in fs}


def sync_tree(src: Path, dst: Path) -> list[str]:
    """Make ``dst`` hold exactly ``src``'s files (unchanged bytes left alone); returns the
    relative paths copied or deleted, sorted."""
    dst.mkdir(parents=True, exist_ok=True)
    new, old, changed = _relative_files(src), _relative_files(dst), []
    for rel in sorted(new):
        s, d = src / rel, dst / rel
        if d.is_file() and filecmp.cmp(s, d, shallow=False):
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        tmp = d.with_name(f".{d.name}.sync-tmp")
        shutil.copyfile(s, tmp)
        os.replace(tmp, d)
        changed.append(rel)
    for rel in sorted(old - new):
        (dst / rel).unlink()
        changed.append(rel)
    for folder, _dirs, _files in sorted(os.walk(dst), key=lambda t: -len(t[0])):
        p = Path(folder)
        if p != dst and not any(p.iterdir()):
            p.rmdir()
    return sorted(changed)


def tree_digest(root: Path, extra: str = "") -> str:
    """SHA-256 (hex) over ``root``'s relative names and bytes
    (:func:`rackbook.book.cache.hash_tree`), and ``extra``."""
    from rackbook.book.cache import hash_tree

    h = hashlib.sha256(extra.encode())
    hash_tree(h, root, "tree")
    return h.hexdigest()


def read_stamp(path: Path) -> str | None:
    """The digest recorded at ``path``, or None."""
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
