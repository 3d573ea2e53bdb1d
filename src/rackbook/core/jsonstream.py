"""A JSON reader whose memory is bounded by how it reads, not by the file's size.

The file (plain or gzip) is read through a :data:`CHUNK` buffer; runs of list elements are cut after
about :data:`PIECE` bytes and parsed by orjson at once (else element by element). Plain values are
charged against :data:`VALUE_BUDGET_MB`; :data:`NUMBERS` and :data:`RAGGED` keys go into float64
arrays bounded by :class:`Counts`; :data:`SKIP` keys are checked and dropped. Nesting past
:data:`MAX_DEPTH`, strings past :data:`MAX_STRING_MB`, numbers past :data:`MAX_NUMBER_CHARS`
characters and objects past :data:`MAX_KEYS` keys are refused, each one InputError; syntax errors
are worded as Python's ``json`` words them.
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import orjson

from rackbook import limits
from rackbook.errors import InputError

#: Bytes read from the file at a time.
CHUNK = 4 << 20
#: Bytes of list elements parsed by orjson at a time.
PIECE = 2 << 20
#: Bytes searched past :data:`PIECE` for a place to cut (else elements are read one by one).
CUT_SEARCH = 1 << 20
#: Deepest nesting of lists and objects (no file rackbook reads nests past 10).
MAX_DEPTH = 64
#: Longest single string (MB of JSON text, 10**6 bytes).
MAX_STRING_MB = 16.0
#: Longest number literal (characters): a double needs at most 25.
MAX_NUMBER_CHARS = 100
#: Most keys in one object.
MAX_KEYS = 100_000
#: Estimated Python memory of the plain values kept from one file (MB).
VALUE_BUDGET_MB = 256.0

#: Kinds a caller can give a top-level key (``top=`` of :func:`load`).
NUMBERS, RAGGED, SKIP = "numbers", "ragged", "skip"

_WS = re.compile(rb"[ \t\n\r]*")
_STR_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NAME = re.compile(rb"-?[A-Za-z]+")
_LITERALS: dict[bytes, Any] = {
    b"true": True,
    b"false": False,
    b"null": None,
    b"NaN": float("nan"),
    b"Infinity": float("inf"),
    b"-Infinity": float("-inf"),
}
#: How runs of list elements are cut, by the first byte of the run's first element.
_CUTS = {
    ord("{"): re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{"),
    ord("["): re.compile(rb"\][ \t\n\r]*,[ \t\n\r]*\["),
    ord('"'): re.compile(rb'"[ \t\n\r]*,[ \t\n\r]*"'),
}
_ANY_CUT = re.compile(rb",")
#: The byte that ends an element starting with the key's byte.
_CLOSERS = {ord("{"): ord("}"), ord("["): ord("]"), ord('"'): ord('"')}
#: What :meth:`_Reader.step` gives when the container closed.
_CLOSED = -1
#: Estimated bytes of one Python value beyond its text (object header and reference).
_PER_VALUE = 64


@dataclass(frozen=True)
class Ragged:
    """A list of lists of numbers: lengths (one per inner list) and all values in order."""

    lens: np.ndarray  # int64
    values: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.lens)


@dataclass(frozen=True)
class Counts:
    """Bounds on typed lists; ``same_length``: a key whose length bounds the others'."""

    entries: int
    inner: int
    total: int
    name: str = "requests"
    same_length: str | None = None
    per: str = "one per request"
    flat_index: bool = True  # a non-number of an inner list named KEY[k] (k over all values)
    not_list: str = "must be a list of seconds"


class _Syntax(Exception):
    """Not valid JSON at byte ``pos`` of the buffer (``msg`` as Python's json words it)."""

    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(msg)
        self.msg, self.pos = msg, pos


class _Truncated(Exception):
    """The file ended inside a value."""


def _match_end(pattern: re.Pattern[bytes], buf: bytes, pos: int) -> int:
    """Where ``pattern``'s match at ``pos`` ends (the pattern matches the empty string)."""
    m = pattern.match(buf, pos)
    return pos if m is None else m.end()


def _field(path: tuple[Any, ...]) -> str:
    """``("rows", 3, "hardware")`` -> ``rows[3].hardware``; the top level is ``-``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "-"


class _Reader:
    def __init__(self, fh: IO[bytes], path: Path, cap: int | None) -> None:
        self.fh, self.path, self.cap = fh, path, cap
        self.buf, self.pos, self.eof = b"", 0, False
        self.offset = 0  # file bytes before buf
        self.lines = 0  # newlines before buf
        self.budget = int(VALUE_BUDGET_MB * 1e6)
        self.max_string = int(MAX_STRING_MB * 1e6)
        self.lengths: dict[str, int] = {}
        self.parsed = 0  # bytes parsed in runs of elements
        # numbers the file can hold: two bytes each at least ("1,"); a gzip file: its cap
        self.most_numbers = (cap if cap is not None else path.stat().st_size) // 2 + 1
        self.wasted = 0  # bytes of runs that did not parse (a cut inside a value)

    # ------------------------------------------------------------------ buffer

    def more(self) -> bool:
        """Read another chunk, dropping what is before ``pos``; False at end of file."""
        if self.eof:
            return False
        data = self.fh.read(CHUNK)
        if not data:
            self.eof = True
            return False
        self.lines += self.buf.count(b"\n", 0, self.pos)
        self.offset += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        if self.cap is not None and self.offset + len(self.buf) > self.cap:
            limit = (
                "the input size limit"
                if limits.max_input_mb() != limits.DEFAULT_MAX_INPUT_MB
                else f"the limit for a gzip file: {limits.GZIP_RATIO} times its size, "
                f"at least {limits.GZIP_FLOOR_MB:g} MB"
            )
            raise InputError(
                self.path,
                "-",
                f"decompresses to over {self.cap / 1e6:g} MB ({limit}; raise it "
                "with --max-input-mb)",
            )
        return True

    def want(self, n: int) -> int:
        """At least ``n`` bytes after ``pos`` unless the file ends first; bytes available."""
        while len(self.buf) - self.pos < n and self.more():
            pass
        return len(self.buf) - self.pos

    def ws(self) -> int | None:
        """Skip whitespace; the next byte, or None at end of file."""
        while True:
            self.pos = _match_end(_WS, self.buf, self.pos)
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return None

    def line(self, pos: int | None = None) -> int:
        return self.lines + self.buf.count(b"\n", 0, self.pos if pos is None else pos) + 1

    def fail(self, path: tuple[Any, ...], problem: str) -> InputError:
        return InputError(self.path, _field(path), problem)

    def charge(self, path: tuple[Any, ...], cost: int) -> None:
        self.budget -= cost
        if self.budget < 0:
            raise self.fail(
                path,
                f"the file's values need more than {VALUE_BUDGET_MB:g} MB of memory "
                "(too many values for this kind of file: refused)",
            )

    def expect_value(self) -> int:
        c = self.ws()
        if c is None:
            raise _Truncated
        return c

    # ------------------------------------------------------------------ plain values

    def value(self, path: tuple[Any, ...], depth: int, keep: bool) -> Any:
        c = self.expect_value()
        if c == 0x7B:  # {
            return self.obj(path, depth + 1, keep)
        if c == 0x5B:  # [
            return self.arr(path, depth + 1, keep)
        if c == 0x22:  # "
            s = self.string(path)
            if keep:
                self.charge(path, _PER_VALUE + len(s))
            return s
        v = self.scalar(path)
        if keep:
            self.charge(path, 32)
        return v

    def step(self, close: int) -> int:
        """Past an element's comma: the next byte, or :data:`_CLOSED` when ``close`` ended it."""
        c = self.ws()
        if c == 0x2C:
            self.pos += 1
            c = self.ws()
        elif c == close:
            self.pos += 1
            return _CLOSED
        elif c is not None:
            raise _Syntax("Expecting ',' delimiter", self.pos)
        if c is None:
            raise _Truncated
        return c

    def opening(self, path: tuple[Any, ...], depth: int, close: int, keep: bool) -> int:
        """Past an opening bracket: the first byte, or :data:`_CLOSED` when empty."""
        self.nest(path, depth)
        self.pos += 1
        c = self.ws()
        if c != close:
            if c is None:
                raise _Truncated
            return c
        self.pos += 1
        if keep:
            self.charge(path, _PER_VALUE)
        return _CLOSED

    def key(self, path: tuple[Any, ...], c: int, n: int) -> str:
        """The ``n``-th key of an object at ``pos`` (``c`` its first byte), past its colon."""
        if c != 0x22:
            raise _Syntax("Expecting property name enclosed in double quotes", self.pos)
        if n > MAX_KEYS:
            raise self.fail(path, f"an object with more than {MAX_KEYS:,} keys (refused)")
        key = self.string(path)
        after = self.ws()
        if after != 0x3A:
            if after is None:
                raise _Truncated
            raise _Syntax("Expecting ':' delimiter", self.pos)
        self.pos += 1
        return key

    def nest(self, path: tuple[Any, ...], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(path, f"nested deeper than {MAX_DEPTH} levels (refused)")

    def string(self, path: tuple[Any, ...]) -> str:
        """The string at ``pos`` (its opening quote)."""
        while True:
            end = _match_end(_STR_BODY, self.buf, self.pos + 1)
            closed = end < len(self.buf) and self.buf[end] == 0x22
            if end - self.pos + closed > self.max_string:
                raise self.fail(
                    path,
                    f"a string longer than {MAX_STRING_MB:g} MB at line {self.line()} (refused)",
                )
            if closed:
                break
            if not self.more():
                raise _Truncated
        raw = self.buf[self.pos : end + 1]
        try:
            s = orjson.loads(raw)
        except orjson.JSONDecodeError:
            s = self.bad_string(raw)
        self.pos = end + 1
        return s

    def bad_string(self, raw: bytes) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                self.path,
                f"line {self.line()}",
                f"not UTF-8 text: byte 0x{raw[exc.start]:02x} (save the file as UTF-8)",
            ) from None
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise _Syntax(exc.msg, self.pos + len(text[: exc.pos].encode())) from None
        raise _Syntax("a lone surrogate escape (\\ud800-\\udfff) in a string", self.pos)

    def scalar(self, path: tuple[Any, ...]) -> Any:
        """A number or literal at ``pos``."""
        self.want(MAX_NUMBER_CHARS + 1)
        m = _NUMBER.match(self.buf, self.pos)
        if m:  # at least one digit: never the "-" of -Infinity
            tok = m.group()
            if len(tok) > MAX_NUMBER_CHARS:
                raise self.fail(
                    path,
                    f"a number of more than {MAX_NUMBER_CHARS} characters at line {self.line()} "
                    "(refused)",
                )
            self.pos = m.end()
            try:
                return orjson.loads(tok)
            except orjson.JSONDecodeError:  # 1e999: Python's json gives inf
                return float(tok)
        m = _NAME.match(self.buf, self.pos)
        if m and m.group() in _LITERALS:
            self.pos = m.end()
            return _LITERALS[m.group()]
        if self.pos >= len(self.buf):
            raise _Truncated
        raise _Syntax("Expecting value", self.pos)

    def obj(self, path: tuple[Any, ...], depth: int, keep: bool) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        n = 0
        c = self.opening(path, depth, 0x7D, keep)
        if c == _CLOSED:
            return out if keep else None
        while True:
            if c is None:
                raise _Truncated
            n += 1
            key = self.key(path, c, n)
            v = self.value((*path, key), depth, keep)
            if keep:
                self.charge(path, _PER_VALUE + len(key))
                out[key] = v
            c = self.step(0x7D)
            if c == _CLOSED:
                return out if keep else None

    def arr(self, path: tuple[Any, ...], depth: int, keep: bool) -> list[Any] | None:
        out: list[Any] = []
        n = 0
        misses = 0
        c = self.opening(path, depth, 0x5D, keep)
        if c == _CLOSED:
            return out if keep else None
        while True:
            if c is None:
                raise _Truncated
            run = self.run(c, depth) if misses < 8 else None
            if run is not None:
                got, text = run
                if keep:
                    self.charge((*path, n), _estimate(text))
                    out.extend(got)
                n += len(got)
                misses = 0
            else:
                misses += 1
                v = self.value((*path, n), depth, keep)
                if keep:
                    self.charge(path, 8)
                    out.append(v)
                n += 1
            c = self.step(0x5D)
            if c == _CLOSED:
                return out if keep else None

    def run(self, first: int, depth: int) -> tuple[list[Any], bytes] | None:
        """Elements from ``pos`` to a cut after about :data:`PIECE` bytes, parsed at once by orjson;
        None where no cut parses. Only lists of the first two levels; failed tries bounded by the
        bytes parsed."""
        if depth > 2 or self.wasted > (16 << 20) + 2 * self.parsed:
            return None
        # a run is shorter than the longest string: no string in it can be too long
        avail = min(self.want(PIECE + CUT_SEARCH), self.max_string)
        start = self.pos
        lo = start + min(PIECE, avail)
        closer = _CLOSERS.get(first)
        cands: list[int] = []
        if avail <= PIECE:  # the list may end within the buffer
            end = self.buf.find(b"]", start, lo)
            if end > start:
                cands.append(end)
        for m in _CUTS.get(first, _ANY_CUT).finditer(self.buf, lo, start + avail):
            cands.append(m.start() + (1 if first in _CUTS else 0))
            if len(cands) >= 2:
                break
        back = lo
        tries = 0
        while tries < 2:  # backwards from the target, for a list ending within the buffer
            k = self.buf.rfind(b",", start, back)
            if k <= start:
                break
            back = k
            j = k - 1
            while j > start and self.buf[j] in b" \t\n\r":
                j -= 1
            if closer is None or self.buf[j] == closer:
                cands.append(k)
                tries += 1
        for cut in cands:
            text = self.buf[start:cut]
            try:
                got = orjson.loads(b"[" + text + b"]")
            except orjson.JSONDecodeError:
                self.wasted += len(text)
                continue
            if depth + 1 + _depth_hint(text) > MAX_DEPTH:
                return None
            self.parsed += len(text)
            self.pos = cut
            return got, text
        return None

    # ------------------------------------------------------------------ typed lists

    def typed_start(self) -> int | None:
        """Past a typed list's ``[``: its first byte (None at end of file), or :data:`_CLOSED`
        for an empty list (consumed); :class:`_NotList` for another value."""
        if self.expect_value() != 0x5B:
            raise _NotList
        self.pos += 1
        c = self.ws()
        if c == 0x5D:
            self.pos += 1
            return _CLOSED
        return c

    def numbers(
        self,
        path: tuple[Any, ...],
        bound: int,
        what: str,
        flat0: int = 0,
        key: str = "",
        exact: bool = False,
    ) -> np.ndarray:
        """A list of numbers at ``pos`` as float64, at most ``bound`` entries (``exact``: a longer
        one read through and its length named); a non-number is ``KEY[i]: not a number`` (``i`` from
        ``flat0``)."""
        c = self.typed_start()
        if c == _CLOSED:
            return np.zeros(0)
        parts: list[np.ndarray] = []
        n = 0
        while True:
            if c is None:
                raise _Truncated
            self.want(PIECE + CUT_SEARCH)
            start = self.pos
            got: Any = None
            lo = min(start + PIECE, len(self.buf))
            end = self.buf.find(b"]", start, lo)
            cut = end if end >= 0 else self.buf.find(b",", lo, lo + CUT_SEARCH)
            if cut > start and _numeric(self.buf[start:cut]):
                try:
                    got = orjson.loads(b"[" + self.buf[start:cut] + b"]")
                except orjson.JSONDecodeError:
                    got = None
            fast = got is not None
            if fast:
                self.pos = cut
            else:  # one element alone (NaN, a string, invalid JSON: named below)
                got = [self.value((*path, n), 0, True)]
            arr = None
            if fast or _is_number(got[0]):  # a run of numbers, or one number
                try:
                    arr = np.array(got, dtype=np.float64)
                except (ValueError, TypeError):  # a list among the numbers: named below
                    arr = None
            if arr is None or arr.ndim != 1:
                bad = next(i for i, v in enumerate(got) if not _is_number(v))
                raise InputError(
                    self.path, f"{key or _field(path)}[{flat0 + n + bad}]", "not a number"
                )
            n += len(arr)
            if n > bound and not exact:
                raise self.fail(
                    path,
                    f"more than {bound:,} entries: must be at most {bound:,} ({what})",
                )
            if n <= bound:
                parts.append(arr)
            else:  # counted to the end (to name the length), not kept
                parts.clear()
            c = self.step(0x5D)
            if c == _CLOSED:
                if n > bound:
                    raise self.fail(path, f"has {n} entries, expected {bound} ({what})")
                return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def ragged(self, path: tuple[Any, ...], counts: Counts, key: str) -> Ragged:
        """A list of lists of numbers at ``pos``: whole runs at once, long lists in pieces."""
        c = self.typed_start()
        if c == _CLOSED:
            return Ragged(np.zeros(0, dtype=np.int64), np.zeros(0))
        lens: list[np.ndarray] = []
        out: np.ndarray | None = None  # the values, written in place (no copy at the end)
        rows = total = 0
        rows_bound = self.row_bound(counts, key)
        while True:
            if c is None:
                raise _Truncated
            got = None
            if c == 0x5B:
                got = self.ragged_run()
            if got is not None:
                k, v = got
                if len(k) and int(k.max()) > counts.inner:
                    i = rows + int(np.argmax(k > counts.inner))
                    raise self.fail(
                        (*path, i),
                        f"more than {counts.inner:,} entries: must be at most "
                        f"{counts.inner:,} (numbers of one list)",
                    )
            else:
                if c != 0x5B:
                    raise InputError(self.path, f"{key}[{rows}]", counts.not_list)
                one = self.numbers(
                    (*path, rows),
                    counts.inner,
                    "numbers of one list",
                    total if counts.flat_index else 0,
                    key if counts.flat_index else "",
                )
                k, v = np.array([len(one)], dtype=np.int64), one
            rows += len(k)
            total += len(v)
            if rows > rows_bound:
                raise self.fail(
                    path,
                    f"must be a list of {rows_bound} lists ({counts.per})"
                    if counts.same_length in self.lengths
                    else f"more than {rows_bound:,} lists: must be at most {rows_bound:,} "
                    f"(rackbook's bound on {counts.name})",
                )
            if total > counts.total:
                raise self.fail(
                    path,
                    f"more than {counts.total:,} numbers in all: must be at most "
                    f"{counts.total:,} (rackbook's bound)",
                )
            lens.append(k)
            if out is None:  # room for every number the file can hold, resident as written
                out = np.empty(max(min(counts.total, self.most_numbers), total), np.float64)
            out[total - len(v) : total] = v
            del v
            c = self.step(0x5D)
            if c == _CLOSED:
                # a view: the pages past ``total`` were never written, so never resident
                return Ragged(np.concatenate(lens), out[:total])
            if c == 0x5D:
                raise _Syntax("Expecting value", self.pos)

    def ragged_run(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Whole inner lists up to about :data:`PIECE` bytes, if all numbers; else None."""
        self.want(PIECE + CUT_SEARCH)
        start = self.pos
        lo = min(start + PIECE, len(self.buf))
        m = _CUTS[0x5B].search(self.buf, lo, min(lo + CUT_SEARCH, len(self.buf)))
        if m is None:  # the rest of the list closes within the buffer?
            e = re.compile(rb"\][ \t\n\r]*\]").search(self.buf, start, lo)
            if e is None:
                return None
            cut = e.start() + 1
        else:
            cut = m.start() + 1
        text = self.buf[start:cut]
        if not _numeric(text):
            return None
        try:
            lists = orjson.loads(b"[" + text + b"]")
        except orjson.JSONDecodeError:
            return None
        if not all(type(x) is list for x in lists):
            return None
        k = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        try:
            v = np.fromiter(itertools.chain.from_iterable(lists), np.float64, int(k.sum()))
        except (TypeError, ValueError):
            return None
        self.pos = cut
        return k, v

    def row_bound(self, counts: Counts, key: str) -> int:
        if counts.same_length is not None and counts.same_length in self.lengths:
            return self.lengths[counts.same_length]
        return counts.entries


#: Bytes of JSON text that hold only numbers (and lists of them).
_NUMERIC = b"0123456789+-.eE,[] \t\n\r"


def _numeric(text: bytes) -> bool:
    """Whether ``text`` holds only numbers, commas and brackets."""
    return not text.translate(None, _NUMERIC)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _NotList(Exception):
    """A typed key's value is not a list: read it as a plain value for the caller to name."""


def _estimate(text: bytes) -> int:
    """Estimated Python bytes of the values of ``text`` (a run of elements)."""
    items = text.count(b",") + text.count(b":") + 1
    return len(text) + 40 * items + _PER_VALUE * (text.count(b"{") + text.count(b"["))


def _depth_hint(text: bytes) -> int:
    """An upper bound on the nesting inside ``text`` (brackets counted, strings included)."""
    n = text.count(b"[") + text.count(b"{")
    if n < MAX_DEPTH:
        return n
    a = np.frombuffer(text, dtype=np.uint8)
    step = (a == 0x5B).astype(np.int32) + (a == 0x7B) - (a == 0x5D) - (a == 0x7D)
    return int(np.cumsum(step).max(initial=0))


def load(
    path: str | Path,
    top: Mapping[str, str] | None = None,
    counts: Counts | None = None,
) -> Any:
    """The JSON file at ``path``; ``top`` types top-level keys (:data:`NUMBERS`, :data:`RAGGED`,
    :data:`SKIP`) within ``counts`` (a non-list value kept as parsed). Every problem is one
    InputError."""
    path = limits.input_file(path, what="JSON file", streamed=True)
    gz = path.suffix == ".gz"
    try:
        fh = cast(IO[bytes], gzip.open(path, "rb")) if gz else open(path, "rb")
        cap = limits.streamed_cap(path.stat().st_size) if gz else None
    except OSError as exc:
        raise InputError(path, "-", f"cannot read: {exc.strerror or exc}") from None
    with fh:
        r = _Reader(fh, path, cap)
        try:
            return _document(r, top or {}, counts)
        except (OSError, EOFError, zlib.error) as exc:
            if gz:
                raise InputError(path, "-", "not a valid gzip file") from None
            raise InputError(path, "-", f"cannot read: {exc}") from None
        except _Truncated:
            raise InputError(path, "end of file", "truncated JSON") from None
        except _Syntax as exc:
            if exc.pos >= len(r.buf) and r.eof:
                raise InputError(path, "end of file", "truncated JSON") from None
            raise InputError(
                path, f"line {r.line(exc.pos)}", f"not valid JSON: {exc.msg}"
            ) from None


def _head(r: _Reader) -> None:
    """The checks of the file's start: empty, binary, a UTF-8 byte-order mark (skipped)."""
    r.want(1 << 16)
    head = r.buf[: 1 << 16]
    if not head.strip():
        if r.ws() is None:
            raise InputError(r.path, "-", "file is empty")
    if b"\0" in head:
        raise InputError(r.path, "-", "not text (binary file?)")
    if head.startswith(b"\xef\xbb\xbf"):
        r.pos = 3


def _document(r: _Reader, top: Mapping[str, str], counts: Counts | None) -> Any:
    _head(r)
    c = r.ws()
    if c == 0x7B and top:
        out = _typed_object(r, top, counts or Counts(0, 0, 0))
    else:
        if c is not None and c not in b'{["-0123456789tfnNI':
            raise _Syntax("Expecting value", r.pos)
        out = r.value((), 0, True)
    if r.ws() is not None:
        raise _Syntax("Extra data", r.pos)
    return out


def _typed_object(r: _Reader, top: Mapping[str, str], counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    c = r.opening((), 1, 0x7D, False)
    if c == _CLOSED:
        return out
    n = 0
    while True:
        n += 1
        key = r.key((), c, n)
        kind = top.get(key)
        try:
            if kind == NUMBERS:
                exact = counts.same_length in r.lengths
                what = counts.per if exact else f"rackbook's bound on {counts.name}"
                bound = r.row_bound(counts, key)
                v: Any = r.numbers((key,), bound, what, key=key, exact=exact)
            elif kind == RAGGED:
                v = r.ragged((key,), counts, key)
            elif kind == SKIP:
                v = r.value((key,), 1, False)
            else:
                v = r.value((key,), 1, True)
                r.charge((key,), _PER_VALUE + len(key))
        except _NotList:
            v = r.value((key,), 1, True)
        if isinstance(v, (np.ndarray, Ragged)) and key == counts.same_length:
            r.lengths[key] = len(v)
        if kind != SKIP:
            out[key] = v
        c = r.step(0x7D)
        if c == _CLOSED:
            return out
