"""An output folder's marker (:data:`MARKER`): its kind, and a manifest mapping each relative path
to ``["f", SIZE, SHA256]``, ``["d"]``, ``["o"]`` (nested output), ``["l", TARGET]`` or ``["p"]``
(an fnmatch pattern being written). rackbook's temporaries ``.NAME.XXXXXXXX.tmp``/``.old`` match."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The file that marks a folder as an output rackbook wrote.
MARKER = ".rackbook-output"
HEAD = "rackbook output:"
_MANIFEST = "manifest: "
#: The largest marker read (bytes).
MAX_MARKER_BYTES = 64 * 1024 * 1024

#: What writes each kind of output, said in the marker for a person who finds it.
WRITERS: dict[str, str] = {
    "trace": "rackbook import or rackbook record",
    "results": "rackbook run or rackbook book --traces",
    "html": "rackbook book --html",
    "recipes": "rackbook recipes",
    "calibration": "rackbook calibrate",
    "raw": "rackbook record (its raw artifacts, beside the trace)",
}

TEMP_NAME = re.compile(r"^\.(?P<base>.+)\.[0-9a-f]{8}\.(?:tmp|old)$", re.DOTALL)

Manifest = dict[str, list[Any]]
#: The entry types (``x``: neither file, folder nor link: never matches).
_TYPES = ("f", "d", "o", "l", "p", "x")


def _regular(path: str | Path, read: Callable[[Any, os.stat_result], Any]) -> Any:
    """``read(file, stat)`` of the regular file ``path`` (no link followed), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with open(fd, "rb") as fh:  # closes fd
            st = os.fstat(fd)
            return read(fh, st) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return None


def digest(path: Path) -> tuple[int, str] | None:
    """(bytes, SHA-256) of the regular file ``path`` (no link followed), else None."""
    return _regular(path, lambda f, st: (st.st_size, hashlib.file_digest(f, "sha256").hexdigest()))


def text(kind: str, manifest: Manifest) -> str:
    """The marker's text for ``kind`` and ``manifest`` (sorted: stable bytes in git)."""
    listed = json.dumps(dict(sorted(manifest.items())), separators=(",", ":"), ensure_ascii=True)
    return (
        f"{HEAD} {kind}\n"
        f"Written by {WRITERS.get(kind, 'rackbook')}. rackbook replaces or deletes only the\n"
        "files listed below, as it wrote them; a folder holding anything else is refused.\n"
        f"{_MANIFEST}{listed}\n"
    )


def read(folder: str | Path) -> tuple[str, Manifest] | None:
    """(kind, manifest) of ``folder``'s marker; None without a valid one."""
    data = _regular(
        Path(folder) / MARKER, lambda fh, st: fh.read() if st.st_size <= MAX_MARKER_BYTES else None
    )
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").split("\n")
    kind = lines[0][len(HEAD) :].strip() if lines[0].startswith(HEAD) else ""
    listed = [ln[len(_MANIFEST) :] for ln in lines[1:] if ln.startswith(_MANIFEST)]
    if not kind or len(listed) != 1:
        return None
    try:
        manifest = json.loads(listed[0])
    except ValueError:
        return None
    if not isinstance(manifest, dict) or not all(
        isinstance(v, list) and v and v[0] in _TYPES for v in manifest.values()
    ):
        return None
    return kind, manifest


def scan(folder: str | Path, pending: tuple[str, ...] = ()) -> Manifest:
    """The manifest of what ``folder`` holds now (its marker left out), plus ``pending`` names."""
    folder = Path(folder)
    out: Manifest = {p: ["p"] for p in pending}
    for e in sorted(os.scandir(folder), key=lambda e: e.name):
        if e.name != MARKER:
            entries(Path(e.path), e.name, out)
    return out


def entries(path: Path, rel: str, out: Manifest) -> None:
    """Add the entries of ``path`` (listed as ``rel``) and everything under it; a sub-folder whose
    marker matches is one ``o`` entry."""
    if path.is_symlink():
        out[rel] = ["l", os.readlink(path)]
    elif path.is_dir():
        if problem(path) is None:
            out[rel] = ["o"]
            return
        out[rel] = ["d"]
        for e in sorted(os.scandir(path), key=lambda e: e.name):
            entries(Path(e.path), f"{rel}/{e.name}", out)
    else:
        got = digest(path)
        out[rel] = ["f", *got] if got is not None else ["x"]


def _pending(rel: str, patterns: list[str]) -> bool:
    parts = rel.split("/")
    return any(
        fnmatch.fnmatchcase("/".join(parts[: i + 1]), p)
        for p in patterns
        for i in range(len(parts))
    )


def _differs(
    e: os.DirEntry[str], rel: str, want: list[Any], walk: Callable[[Path, str], str | None]
) -> str | None:
    """Why entry ``e`` (at ``rel``) is not what ``want`` says, or None."""
    changed = f"{rel!r} is not what rackbook wrote there (changed or replaced since)"
    if e.is_symlink():
        return changed if want[0] != "l" or [os.readlink(e.path)] != want[1:] else None
    if e.is_dir(follow_symlinks=False):
        if want[0] == "o":
            return None if problem(e.path) is None else changed
        return walk(Path(e.path), rel + "/") if want[0] == "d" else changed
    if want[0] != "f" or list(digest(Path(e.path)) or ()) != want[1:]:
        return changed
    return None


def _check(folder: Path, manifest: Manifest, temps: list[Path] | None) -> str | None:
    patterns = [k for k, v in manifest.items() if v[0] == "p"]

    def walk(d: Path, prefix: str) -> str | None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            return f"{prefix or '.'!r} cannot be read ({exc.strerror or exc})"
        for e in entries:
            rel = prefix + e.name
            if (not prefix and e.name == MARKER) or _pending(rel, patterns):
                continue
            m = TEMP_NAME.match(e.name)
            if m and (prefix + m["base"] in manifest or _pending(prefix + m["base"], patterns)):
                if temps is not None:
                    temps.append(Path(e.path))
                continue
            want = manifest.get(rel)
            if want is None:
                return f"holds {rel!r}, which rackbook did not write (not in its {MARKER})"
            found = _differs(e, rel, want, walk)
            if found is not None:
                return found
        return None

    return walk(folder, "")


def problem(
    folder: str | Path, listed: Manifest | None = None, temps: list[Path] | None = None
) -> str | None:
    """Why ``folder`` does not match ``listed`` (default: its marker's manifest), a sentence, or
    None; ``temps`` collects rackbook's temporaries beside its entries."""
    if listed is None:
        found = read(folder)
        if found is None:
            return f"has no valid {MARKER} file"
        listed = found[1]
    return _check(Path(folder), listed, temps)


def remark(folder: str | Path) -> None:
    """Rewrite ``folder``'s marker with what it holds now (shipped folders edited in git)."""
    found = read(folder)
    if found is None:
        raise SystemExit(f"error: {folder}: {MARKER}: missing (not a rackbook output)")
    Path(folder, MARKER).write_text(text(found[0], scan(folder)), encoding="utf-8")


if __name__ == "__main__":  # python -m rackbook.core.manifest FOLDER...
    import sys

    for arg in sys.argv[1:]:
        remark(arg)
