"""A published source file read safely (whole and bounded, or as bounded CSV lines) and its
provenance; every problem is one InputError."""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rackbook import limits
from rackbook.core import schema
from rackbook.errors import InputError

#: A GitHub blob URL at a commit: its repository, commit and path.
GITHUB_BLOB = re.compile(
    r"^https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/(?P<commit>[0-9a-fA-F]{7,40})/(?P<path>.+)$"
)


def read_text(path: Path, cap_mb: float | None = None) -> str:
    """The file's text (at most ``cap_mb`` MB); missing, empty, binary, not UTF-8: InputError."""
    limits.input_file(path, cap_mb=cap_mb)
    data = path.read_bytes()
    if not data.strip():
        raise InputError(path, "-", "file is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, "-", limits.decode_problem(data, exc)) from None


def check_text(path: Path) -> None:
    """InputError when missing, empty or binary, reading only the start."""
    limits.input_file(path, streamed=True)
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
        if b"\0" in head:
            raise InputError(path, "-", "not text (binary file?)")
        chunk = head
        while not chunk.strip():
            if not chunk:
                raise InputError(path, "-", "file is empty")
            chunk = fh.read(1 << 20)


def _check_utf8(path: Path) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                start = max(exc.start - len(decoder.getstate()[0]), 0)
                line = lines + chunk.count(b"\n", 0, start) + 1
                byte = f"0x{chunk[start]:02x}"
                problem = f"not UTF-8 text: byte {byte} on line {line} (save the file as UTF-8)"
                raise InputError(path, "-", problem) from None
            lines += chunk.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            problem = "not UTF-8 text: cut inside a character"
            raise InputError(path, "end of file", problem) from None


def csv_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 CSV file (BOM dropped), one at a time, each at most
    :data:`rackbook.limits.CSV_LINE_MB` MB, at most ``BOUNDS["csv_lines"]`` in all."""
    check_text(path)
    _check_utf8(path)  # whole first: a line then decodes (a longer one was refused, not cut)
    longest = int(limits.CSV_LINE_MB * 1e6)
    bound = limits.BOUNDS["csv_lines"]
    with path.open("rb") as fh:
        for n, raw in enumerate(iter(lambda: fh.readline(longest + 1), b""), 1):
            if len(raw) > longest:
                raise InputError(
                    path, f"line {n}", f"longer than {limits.CSV_LINE_MB:g} MB (refused)"
                )
            if n > bound:
                raise InputError(
                    path, "rows", f"more than {bound:,} lines (rackbook's bound on csv lines)"
                )
            yield raw.decode("utf-8-sig" if n == 1 else "utf-8")


def source_info(path: Path, url: str | None = None, date: str | None = None) -> dict[str, Any]:
    """Provenance: name, SHA-256, URL (and a GitHub blob's repo, path, commit), date (checked by
    :func:`rackbook.core.importers.check_options`)."""
    if url is not None and not schema.URL.match(url):
        raise InputError(path, "--source-url", f"{url!r} is not an http(s) link")
    with path.open("rb") as fh:
        sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    info: dict[str, Any] = {
        "file": path.name,
        "sha256": sha256,
        "url": url,
        "repo": None,
        "path": None,
        "commit": None,
        "date": date,
    }
    m = GITHUB_BLOB.match(url or "")
    if m:
        info.update(repo=m["repo"], path=m["path"], commit=m["commit"])
    return info
