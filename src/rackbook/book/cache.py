"""The cache of executed notebooks (trace mode only): ``DIR/.RESULT.key`` holds a SHA-256 of
the notebook, its parameters, the files they name, the shared data, the env lock, the source
and Python, and the hashes of ``RESULT.ipynb`` and ``RESULT.json``; all three must match."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import rackbook
from rackbook import paths
from rackbook.core.fsio import atomic_write_text, update_manifest

#: Format of the key; bump it when what the key covers changes.
KEY_VERSION = 1
#: The package whose source is part of every key (tests point it elsewhere).
PACKAGE_SOURCE: Path = Path(rackbook.__file__).resolve().parent
#: Parameters that name where outputs go, never hashed by content.
OUTPUT_PARAMETERS = frozenset({"out_dir"})


def _shared_inputs() -> list[Path]:
    data = paths.DATA
    return [
        data / "claims.yaml",
        data / "hardware.yaml",
        data / "models",
        data / "published",
        paths.ROOT / "book" / "_template",  # the words of the boxes and cards chapters glue
        paths.ROOT / "env" / "requirements-book.lock",
    ]


def _entries(root: Path) -> Iterable[Path]:
    yield root
    if root.is_file():
        return
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for x in dirs:
            yield Path(d) / x
        for f in sorted(files):
            yield Path(d) / f


def hash_tree(h: Any, root: Path, label: str) -> None:
    """Feed ``root``'s relative paths and file bytes into ``h`` (missing hashes as missing)."""
    h.update(f"\0tree\0{label}\0".encode())
    if not root.exists():
        h.update(b"\0missing\0")
        return
    for f in _entries(root):
        rel = f.relative_to(root).as_posix()
        if not f.is_file():
            h.update(f"\0dir\0{rel}\0".encode())
            continue
        data = f.read_bytes()
        h.update(f"\0file\0{rel}\0{len(data)}\0".encode())
        h.update(data)


def _input_paths(params: Mapping[str, Any]) -> list[tuple[str, Path]]:
    found = []
    for name in sorted(params):
        value = params[name]
        if name in OUTPUT_PARAMETERS or not isinstance(value, str) or not value:
            continue
        try:
            p = paths.resolve(value)
            if p.exists():
                found.append((name, p))
        except (OSError, ValueError):
            continue
    return found


def chapter_key(notebook: Path, params: Mapping[str, Any]) -> str:
    """Hex SHA-256 of ``notebook`` executed with ``params`` (defaults included)."""
    h = hashlib.sha256()
    h.update(f"rackbook-cache-{KEY_VERSION}\0{sys.version}\0".encode())
    h.update(b"\0notebook\0" + notebook.read_bytes())
    h.update(b"\0params\0" + json.dumps(params, sort_keys=True, default=str).encode())
    for name, p in _input_paths(params):
        hash_tree(h, p, f"param:{name}")
    for p in _shared_inputs():
        hash_tree(h, p, f"shared:{p.name}")
    hash_tree(h, PACKAGE_SOURCE, "package")
    return h.hexdigest()


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def stamp_path(out_dir: Path, result: str) -> Path:
    """Where the key of ``result``'s outputs in ``out_dir`` is kept."""
    return out_dir / f".{result}.key"


def outputs(out_dir: Path, result: str) -> tuple[Path, Path]:
    """The executed notebook and the headline JSON of ``result`` in ``out_dir``."""
    return out_dir / f"{result}.ipynb", out_dir / f"{result}.json"


def is_fresh(out_dir: Path, result: str, key: str) -> bool:
    """True when ``out_dir`` holds ``result``'s outputs made with ``key``, unchanged since."""
    try:
        doc = json.loads(stamp_path(out_dir, result).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("key") != key:
        return False
    nb, headline = outputs(out_dir, result)
    return doc.get("ipynb") == _sha(nb) is not None and doc.get("json") == _sha(headline)


def forget(out_dir: Path, result: str) -> None:
    """Drop ``result``'s stamp (before executing it again)."""
    stamp_path(out_dir, result).unlink(missing_ok=True)


def remember(out_dir: Path, result: str, key: str) -> None:
    """Record that ``result``'s outputs in ``out_dir`` were made with ``key``."""
    nb, headline = outputs(out_dir, result)
    doc = {"key": key, "ipynb": _sha(nb), "json": _sha(headline)}
    atomic_write_text(stamp_path(out_dir, result), json.dumps(doc, indent=1) + "\n")
    update_manifest(out_dir, record=[stamp_path(out_dir, result).name])
