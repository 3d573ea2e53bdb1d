"""JSON read in bounded memory, with top-level lists typed: lists of ``top=`` keys cut into pieces
of about :data:`PIECE` bytes, parsed by orjson into float64 arrays bounded by :class:`Counts`;
the rest read by :class:`rackbook.core.jsonreader.Reader`. Every problem is one InputError."""

from __future__ import annotations

import contextlib
import gzip
import itertools
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import orjson

from rackbook import limits
from rackbook.core.jsonreader import DECODER, Reader
from rackbook.errors import InputError

PIECE = 2 << 20  # bytes of list elements parsed at a time
CUT_SEARCH = 1 << 20  # bytes searched past PIECE for a place to cut
NUMBERS, RAGGED, SKIP = "numbers", "ragged", "skip"  # kinds of top-level keys (``top=``)

_NUMERIC = b"0123456789+-.eE,[] \t\n\rNaInfity"  # bytes of numbers (NaN, Infinity), lists of them


@dataclass(frozen=True)
class Ragged:
    """A list of lists of numbers: lengths (one per inner list) and all values in order."""

    lens: np.ndarray  # int64
    values: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.lens)


@dataclass(frozen=True)
class Counts:
    """Bounds on typed lists: entries of one, numbers of an inner list, numbers in all."""

    entries: int
    inner: int
    total: int
    name: str = "requests"
    flat_index: bool = True  # a non-number of an inner list named KEY[k] (k over all values)
    not_list: str = "must be a list of seconds"


def _parse(text: bytes, kind: str) -> Any:
    """List elements ``text`` (orjson, else Python's json: NaN, Infinity) as ``kind`` reads them
    (numbers: twice the array; ragged: lengths and values), or None where they are not of it."""
    with contextlib.suppress(TypeError, ValueError, RecursionError, OverflowError):
        try:
            got = orjson.loads(b"[" + text + b"]")
        except orjson.JSONDecodeError:
            got = DECODER.decode("[" + text.decode() + "]")
        if kind == SKIP:
            return got
        if kind == NUMBERS:
            arr = np.array(got, dtype=np.float64)
            return (arr, arr) if arr.ndim == 1 else None
        if all(type(x) is list for x in got):
            k = np.fromiter(map(len, got), dtype=np.int64, count=len(got))
            return k, np.fromiter(itertools.chain.from_iterable(got), np.float64, int(k.sum()))
    return None


#: Per kind: where a piece may end past PIECE (and the bytes of the match it keeps), the list's
#: end.
_CUTS: dict[str, tuple[re.Pattern[bytes], int, bytes]] = {
    NUMBERS: (re.compile(rb","), 0, b"]"),
    RAGGED: (re.compile(rb"\][ \t\n\r]*,[ \t\n\r]*\["), 1, b"]]"),
    SKIP: (re.compile(rb'(?<!\\)"[ \t\n\r]*,[ \t\n\r]*"'), 1, b'"]'),
}


class _Lists(Reader):
    """A reader of top-level lists typed by ``top=``: numbers, lists of numbers, skipped."""

    def over(self, path: tuple[Any, ...], bound: int, unit: str, why: str) -> InputError:
        return self.fail(path, f"more than {bound:,} {unit}: must be at most {bound:,} ({why})")

    def piece(self, kind: str) -> Any:
        """Elements to a cut past PIECE bytes (else the list's end) converted, or None."""
        cut, keep, end = _CUTS[kind]
        self.want(PIECE + CUT_SEARCH)
        start, buf = self.pos, self.buf
        lo = min(start + PIECE, len(buf))
        m = cut.search(buf, lo, lo + CUT_SEARCH)
        at = -1 if m is None else m.start()
        for _ in range(2):  # to the cut, else to the list's end
            text = buf[start : at + keep] if at > start else b""
            if text and (kind == SKIP or not text.translate(None, _NUMERIC)):
                out = _parse(text, kind)
                if out is not None:
                    self.pos += len(text)
                    return out
            at = buf.find(end, start, lo + CUT_SEARCH)
        return None

    def items(self, kind: str, one: Callable[[int], Any]) -> Iterator[Any]:
        """The list at ``pos`` in pieces; ``one(c)`` reads elements where a piece fails."""
        c, fast = self.step(0x5D, True), 0
        while c is not None:
            tried = self.pos >= fast
            got = self.piece(kind) if tried else None
            if got is None:
                fast = self.pos + PIECE if tried else fast
                got = one(c)
            yield got
            c = self.step(0x5D)

    def array(
        self, path: tuple[Any, ...], kind: str, c: Counts, name: str, row: int = -1, at: int = 0
    ) -> Any:
        """The list at ``pos`` in pieces: of numbers (a ragged list's ``row``: at most ``c.inner``)
        as float64, a non-number named ``NAME[at + i]``; of lists of numbers (``RAGGED``) as
        :class:`Ragged`, a long one read as numbers."""
        ragged, lens, parts, n, total = kind == RAGGED, [], [], 0, 0
        bound = c.inner if row >= 0 else c.entries
        what = "numbers of one list" if row >= 0 else f"rackbook's bound on {c.name}"
        out = np.zeros(0)  # RAGGED: the values, written in place (no copy at the end)

        def one(b: int) -> tuple[np.ndarray, np.ndarray]:
            if not ragged:
                v = self.value((*path, n), 2)
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise self.fail(f"{name}[{at + n}]" if name else (*path, n), "not a number")
                return (v := np.array([v], dtype=np.float64)), v
            if b in (0x5D, -1):
                raise self.bad("Expecting value")
            if b != 0x5B:
                raise self.fail(f"{name}[{n}]", c.not_list)
            v = self.array((*path, n), NUMBERS, c, name if c.flat_index else "", n, total)
            return np.array([len(v)]), v

        for k, v in self.items(kind, one):
            if ragged and len(k) and int(k.max()) > c.inner:
                i = n + int(np.argmax(k > c.inner))
                raise self.over((*path, i), c.inner, "entries", "numbers of one list")
            n, total = n + len(k), total + len(v)
            if n > bound:
                raise self.over(path, bound, "lists" if ragged else "entries", what)
            if ragged and total > c.total:
                raise self.over(path, c.total, "numbers in all", "rackbook's bound")
            if not ragged:
                parts.append(v)
                continue
            lens.append(k)
            if not len(out):  # room for every number the file can hold, resident as written:
                # two bytes each at least ("1,"); a gzip file: its cap on what it inflates to
                size = self.cap if self.cap is not None else self.path.stat().st_size
                out = np.empty(max(min(c.total, size // 2 + 1), total), np.float64)
            out[total - len(v) : total] = v
        if not ragged:
            return np.concatenate(parts) if parts else np.zeros(0)
        # a view: the pages past ``total`` were never written, so never resident
        return Ragged(np.concatenate(lens) if lens else np.zeros(0, np.int64), out[:total])

    def typed(self, top: Mapping[str, str], counts: Counts) -> dict[str, Any]:
        out: dict[str, Any] = {}
        c = self.step(0x7D, True)
        while c is not None:
            if c != 0x22:
                raise self.bad("Expecting property name enclosed in double quotes")
            key = self.value((), 1)
            if self.ws() != 0x3A:
                raise self.bad("Expecting ':' delimiter")
            self.pos += 1
            kind = top.get(key) if self.ws() == 0x5B else None
            if kind == SKIP:
                for _ in self.items(SKIP, lambda c: [self.value((key,), 2, False)]):  # noqa: B023
                    pass
            elif kind is not None:
                out[key] = self.array((key,), kind, counts, key)
            elif top.get(key) == SKIP:
                self.value((key,), 1, False)
            else:
                out[key] = self.value((key,), 1)
            c = self.step(0x7D)
        return out


def load(
    path: str | Path, top: Mapping[str, str] | None = None, counts: Counts | None = None
) -> Any:
    """The JSON file at ``path``; ``top`` types top-level keys (:data:`NUMBERS`, :data:`RAGGED`,
    :data:`SKIP`) within ``counts`` (a non-list value kept as parsed). Every problem is one
    InputError."""
    path = limits.input_file(path, what="JSON file", streamed=True)
    gz = path.suffix == ".gz"
    try:
        with cast(IO[bytes], gzip.open(path, "rb")) if gz else open(path, "rb") as fh:
            r = _Lists(fh, path, limits.streamed_cap(path.stat().st_size) if gz else None)
            r.want(1 << 16)
            if b"\0" in r.buf[: 1 << 16]:
                raise InputError(path, "-", "not text (binary file?)")
            r.pos = 3 if r.buf.startswith(b"\xef\xbb\xbf") else 0  # a UTF-8 byte-order mark
            c = r.ws()
            if c < 0:
                raise InputError(path, "-", "file is empty")
            out = r.typed(top, counts or Counts(0, 0, 0)) if top and c == 0x7B else r.value((), 0)
            if r.ws() >= 0:
                raise r.bad("Extra data")
            return out
    except (OSError, EOFError, zlib.error) as exc:
        problem = "not a valid gzip file" if gz else f"cannot read: {exc}"
        raise InputError(path, "-", problem) from None
