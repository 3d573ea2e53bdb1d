"""A lean reader of vLLM's detailed result JSON: the ``itls`` gaps straight into numpy.

A detailed result of 100k requests x 128 tokens holds 12.7M inter-token gaps, most of the
file's bytes. Parsed whole, each becomes a Python float inside a Python list (about 32 bytes
each: 0.4 GB beside the file's text) before it is copied into an array. Here the top-level
``"itls": [[...], ...]`` is located in the raw bytes and parsed piece by piece (about 8 MB of
text each, cut between two inner lists) by orjson, each piece copied into float64 arrays and
dropped before the next; orjson parses the rest of the file (``itls`` replaced by ``null``).
The numbers are those orjson gives for the whole file.

The lean path is taken only for input it is sure of: each piece parses and holds only lists of
numbers, and the parsed rest is an object whose ``itls`` is the placeholder. Anything else
(NaN, strings, nesting, a duplicate key, invalid JSON...) returns None, and the caller parses
the file whole as before, so every error message is unchanged.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rackbook import limits

#: Files smaller than this are parsed whole (the fast path pays off on large files only).
MIN_BYTES = 1 << 20
#: Text of ``itls`` parsed at a time (bytes): its Python floats take about 4x that.
PIECE_BYTES = 8 << 20

_KEY = b'"itls"'
_WS = b" \t\n\r"
_CUT = re.compile(rb"\][ \t\n\r]*,[ \t\n\r]*")
_END = re.compile(rb"\][ \t\n\r]*\]")


@dataclass(frozen=True)
class RaggedGaps:
    """``itls`` read by :func:`load_detailed`: gaps per request and all gaps in request order
    (seconds), as the JSON list of lists holds them."""

    lens: np.ndarray  # int64, one per request
    values: np.ndarray  # float64, sum(lens)

    def __len__(self) -> int:
        return len(self.lens)


def _read(path: Path) -> bytes | None:
    try:
        if not path.is_file():
            return None
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = limits.gunzip(data, path)  # bounded: an InputError past the size limit
    except (OSError, EOFError, zlib.error):
        return None
    return data


def _segment(raw: bytes) -> tuple[int, int] | None:
    """Start and end (exclusive) of the value of the top-level ``"itls"`` key: ``[`` ...
    ``]``; None when not found as a key followed by a list."""
    start = 0
    while True:
        k = raw.find(_KEY, start)
        if k < 0:
            return None
        start = k + len(_KEY)
        if k > 0 and raw[k - 1] == 0x5C:  # \"itls\" inside a string
            continue
        i = start
        while i < len(raw) and raw[i] in _WS:
            i += 1
        if i >= len(raw) or raw[i] != 0x3A:  # ':'
            continue
        i += 1
        while i < len(raw) and raw[i] in _WS:
            i += 1
        if i >= len(raw) or raw[i] != 0x5B:  # '['
            return None
        m = _END.search(raw, i)  # the first "]]": inner lists hold no list
        return (i, m.end()) if m else None


def _pieces(raw: bytes, s: int, e: int, size: int) -> Iterator[bytes]:
    """The segment ``raw[s:e]`` (``[`` ... ``]``) as JSON lists of about ``size`` bytes each,
    cut between two inner lists (after a ``]`` and its comma)."""
    pos, last = s + 1, e - 1
    while pos < last:
        m = _CUT.search(raw, min(pos + size, last), last)
        cut, nxt = (m.start() + 1, m.end()) if m else (last, last)
        yield b"[" + raw[pos:cut] + b"]"
        pos = nxt


def _gaps(raw: bytes, s: int, e: int) -> RaggedGaps | None:
    """Parse the segment piece by piece (orjson, then numpy), so that its Python floats exist
    for one piece at a time; None unless every element is a list of numbers."""
    import orjson

    lens, values = [], []
    for piece in _pieces(raw, s, e, PIECE_BYTES):
        try:
            lists = orjson.loads(piece)
        except orjson.JSONDecodeError:
            return None
        if not all(type(x) is list for x in lists):
            return None
        k = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        try:
            v = np.fromiter(
                itertools.chain.from_iterable(lists), dtype=np.float64, count=int(k.sum())
            )
        except (TypeError, ValueError):
            return None
        lens.append(k)
        values.append(v)
        del lists
    if not lens:
        return RaggedGaps(np.zeros(0, dtype=np.int64), np.zeros(0))
    return RaggedGaps(np.concatenate(lens), np.concatenate(values))


def load_detailed(path: str | Path) -> dict[str, Any] | None:
    """The parsed result with ``itls`` as :class:`RaggedGaps`, or None to parse it as before."""
    import orjson

    raw = _read(Path(path))
    if raw is None or len(raw) < MIN_BYTES:
        return None
    seg = _segment(raw)
    if seg is None:
        return None
    s, e = seg
    gaps = _gaps(raw, s, e)
    if gaps is None:
        return None
    rest = raw[:s] + b"null" + raw[e:]
    del raw
    try:
        d = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return None
    del rest
    if not isinstance(d, dict) or "itls" not in d or d["itls"] is not None:
        return None
    d["itls"] = gaps
    return d
