"""JSON read in bounded memory: plain values parsed whole within :data:`VALUE_BUDGET_MB`; lists of
``top=`` keys cut into pieces of about :data:`PIECE` bytes, parsed by orjson into float64 arrays
bounded by :class:`Counts`. Every problem is one InputError."""

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
#: Bytes of list elements parsed at a time.
PIECE = 2 << 20
#: Bytes searched past :data:`PIECE` for a place to cut.
CUT_SEARCH = 1 << 20
#: Deepest nesting of lists and objects.
MAX_DEPTH = 64
#: Longest string (MB, 10**6 characters).
MAX_STRING_MB = 16.0
#: Longest integer literal (characters).
MAX_NUMBER_CHARS = 100
#: Most keys in one object.
MAX_KEYS = 100_000
#: Estimated Python memory of the plain values kept from one file (MB).
VALUE_BUDGET_MB = 256.0

#: Kinds a caller can give a top-level key (``top=`` of :func:`load`).
NUMBERS, RAGGED, SKIP = "numbers", "ragged", "skip"

_WS = re.compile(rb"[ \t\n\r]*")
#: The bytes of numbers (NaN and Infinity included), commas and brackets.
_NUMERIC = b"0123456789+-.eE,[] \t\n\rNaInfity"
#: Per kind: where a piece may end past :data:`PIECE`, the bytes of that match kept, the list's end.
_CUTS: dict[str, tuple[re.Pattern[bytes], int, bytes]] = {
    NUMBERS: (re.compile(rb","), 0, b"]"),
    RAGGED: (re.compile(rb"\][ \t\n\r]*,[ \t\n\r]*\["), 1, b"]]"),
    SKIP: (re.compile(rb'(?<!\\)"[ \t\n\r]*,[ \t\n\r]*"'), 1, b'"]'),
}


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


class _LongNumber(Exception):
    """An integer literal longer than :data:`MAX_NUMBER_CHARS`."""


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _LongNumber
    return int(text)


_DECODER = json.JSONDecoder(parse_int=_int)


def _field(path: tuple[Any, ...]) -> str:
    """``("rows", 3, "hardware")`` -> ``rows[3].hardware``; the top level is ``-``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "-"


def _estimate(text: bytes) -> int:
    """Estimated Python bytes of the values of JSON ``text``."""
    items = text.count(b",") + text.count(b":") + 1
    return len(text) + 40 * items + 64 * (text.count(b"{") + text.count(b"["))


def _loads(text: bytes) -> Any:
    """``text`` parsed by orjson, else by Python's json (NaN, Infinity); None where neither can."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return _DECODER.decode(text.decode())
    except (ValueError, RecursionError, _LongNumber):
        return None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _floats(got: list[Any]) -> np.ndarray | None:
    """``got`` as float64 if every element is a number."""
    if len(got) == 1 and not _is_number(got[0]):
        return None
    try:
        arr = np.array(got, dtype=np.float64)
    except (ValueError, TypeError):
        return None
    return arr if arr.ndim == 1 else None


def _rows(got: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """Lengths and values of ``got`` if it is a list of lists of numbers."""
    if not all(type(x) is list for x in got):
        return None
    k = np.fromiter(map(len, got), dtype=np.int64, count=len(got))
    try:
        return k, np.fromiter(itertools.chain.from_iterable(got), np.float64, int(k.sum()))
    except (TypeError, ValueError):
        return None


class _Reader:
    def __init__(self, fh: IO[bytes], path: Path, cap: int | None) -> None:
        self.fh, self.path, self.cap = fh, path, cap
        self.buf, self.pos, self.eof = b"", 0, False
        self.offset = self.lines = 0  # file bytes and newlines before buf
        self.budget = int(VALUE_BUDGET_MB * 1e6)
        self.lengths: dict[str, int] = {}
        # numbers the file can hold: two bytes each at least ("1,"); a gzip file: its cap
        self.most_numbers = (cap if cap is not None else path.stat().st_size) // 2 + 1

    def more(self) -> bool:
        """Read another chunk, dropping what is before ``pos``; False at end of file."""
        data = b"" if self.eof else self.fh.read(CHUNK)
        if not data:
            self.eof = True
            return False
        self.lines += self.buf.count(b"\n", 0, self.pos)
        self.offset += self.pos
        self.buf, self.pos = self.buf[self.pos :] + data, 0
        if self.cap is not None and self.offset + len(self.buf) > self.cap:
            limit = (
                "the input size limit"
                if limits.max_input_mb() != limits.DEFAULT_MAX_INPUT_MB
                else f"the limit for a gzip file: {limits.GZIP_RATIO} times its size, "
                f"at least {limits.GZIP_FLOOR_MB:g} MB"
            )
            raise self.fail(
                (),
                f"decompresses to over {self.cap / 1e6:g} MB ({limit}; raise it with "
                "--max-input-mb)",
            )
        return True

    def want(self, n: int) -> int:
        """Bytes after ``pos``: at least ``n`` unless the file ends first."""
        while len(self.buf) - self.pos < n and self.more():
            pass
        return len(self.buf) - self.pos

    def ws(self) -> int | None:
        """Skip whitespace; the next byte, or None at end of file."""
        while True:
            self.pos = cast(re.Match[bytes], _WS.match(self.buf, self.pos)).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return None

    def line(self, pos: int) -> int:
        return self.lines + self.buf.count(b"\n", 0, pos) + 1

    def fail(self, path: tuple[Any, ...], problem: str) -> InputError:
        return InputError(self.path, _field(path), problem)

    def value(self, path: tuple[Any, ...], depth: int, charge: bool = True) -> Any:
        """The value at ``pos``, parsed once a window (doubled as needed) holds it, then walked."""
        w = 512
        while True:
            at_end = self.want(w) < w
            text = self.buf[self.pos : self.pos + w]
            if charge and _estimate(text) > self.budget:
                raise self.fail(
                    path,
                    f"the file's values need more than {VALUE_BUDGET_MB:g} MB of memory (refused)",
                )
            try:
                v, n = (orjson.loads(text), len(text)) if at_end else self.decode(text, path)
            except orjson.JSONDecodeError:
                v, n = self.decode(text, path, at_end)
            if n >= 0:
                break
            w *= 2
        _walk(v, path, depth, self)
        if charge:
            self.budget -= _estimate(text[:n])
        self.pos += n
        return v

    def decode(self, text: bytes, path: tuple[Any, ...], at_end: bool = False) -> tuple[Any, int]:
        """The value ``text`` starts with and its bytes (by Python's json); -1 where the window
        may have cut it."""
        try:
            s = text.decode()
        except UnicodeDecodeError as exc:
            if at_end or exc.start < len(text) - 3:
                line = f"line {self.line(self.pos + exc.start)}"
                problem = f"not UTF-8 text: byte 0x{text[exc.start]:02x} (save the file as UTF-8)"
                raise InputError(self.path, line, problem) from None
            s = text[: exc.start].decode()
        try:
            v, end = _DECODER.raw_decode(s)
        except json.JSONDecodeError as exc:
            if at_end or (exc.pos < len(s) - 16 and not exc.msg.startswith("Unterminated")):
                raise _Syntax(exc.msg, self.pos + len(s[: exc.pos].encode())) from None
            return None, -1
        except RecursionError:
            raise self.fail(path, f"nested deeper than {MAX_DEPTH} levels (refused)") from None
        except _LongNumber:
            raise self.fail(
                path, f"a number of more than {MAX_NUMBER_CHARS} characters (refused)"
            ) from None
        return (v, len(s[:end].encode())) if at_end or end < len(s) - 16 else (None, -1)

    def open(self, close: int) -> int | None:
        """Past an opening bracket: the first byte, or None when ``close`` follows (consumed)."""
        self.pos += 1
        c = self.ws()
        if c == close:
            self.pos += 1
            return None
        if c is None:
            raise _Truncated
        return c

    def step(self, close: int) -> int | None:
        """Past an element's comma: the next byte, or None when ``close`` ended the container."""
        c = self.ws()
        if c == close:
            self.pos += 1
            return None
        if c != 0x2C:
            raise _Truncated if c is None else _Syntax("Expecting ',' delimiter", self.pos)
        self.pos += 1
        c = self.ws()
        if c is None:
            raise _Truncated
        return c

    def key(self, c: int, n: int) -> str:
        """The ``n``-th key of an object at ``pos`` (``c`` its first byte), past its colon."""
        if c != 0x22:
            raise _Syntax("Expecting property name enclosed in double quotes", self.pos)
        if n > MAX_KEYS:
            raise self.fail((), f"an object with more than {MAX_KEYS:,} keys (refused)")
        key = self.value((), 1, charge=False)
        after = self.ws()
        if after != 0x3A:
            raise _Truncated if after is None else _Syntax("Expecting ':' delimiter", self.pos)
        self.pos += 1
        return cast(str, key)

    def piece(self, kind: str) -> list[Any] | None:
        """Whole elements from ``pos`` to a cut after about :data:`PIECE` bytes (or the list's end),
        parsed; None (``pos`` unmoved) where there is none."""
        cut, keep, end = _CUTS[kind]
        self.want(PIECE + CUT_SEARCH)
        start, buf = self.pos, self.buf
        lo = min(start + PIECE, len(buf))
        at = buf.find(end, start, lo)
        if at < 0:
            m = cut.search(buf, lo, lo + CUT_SEARCH)
            if m is None:
                return None
            at = m.start()
        text = buf[start : at + keep]
        if not text or (kind != SKIP and text.translate(None, _NUMERIC)):
            return None
        got = _loads(b"[" + text + b"]")
        if got is not None:
            self.pos += len(text)
        return cast("list[Any] | None", got)

    def numbers(
        self,
        path: tuple[Any, ...],
        bound: int,
        what: str,
        exact: bool = False,
        name: str = "",
        flat0: int = 0,
    ) -> np.ndarray:
        """The list at ``pos`` as float64, at most ``bound`` entries (``exact``: a longer one read
        through to name its length); a non-number is ``NAME[i]``, ``i`` counted from ``flat0``."""
        c = self.open(0x5D)
        parts: list[np.ndarray] = []
        n = 0
        while c is not None:
            got = self.piece(NUMBERS)
            if got is None:  # one element alone (a cut inside a value, or not a number)
                got = [self.value((*path, n), 2)]
            arr = _floats(got)
            if arr is None:
                bad = next(i for i, v in enumerate(got) if not _is_number(v))
                raise InputError(
                    self.path, f"{name or _field(path)}[{flat0 + n + bad}]", "not a number"
                )
            n += len(arr)
            if n > bound and not exact:
                raise self.fail(
                    path, f"more than {bound:,} entries: must be at most {bound:,} ({what})"
                )
            if n <= bound:
                parts.append(arr)
            else:  # counted to the end (to name the length), not kept
                parts.clear()
            c = self.step(0x5D)
        if n > bound:
            raise self.fail(path, f"has {n} entries, expected {bound} ({what})")
        return np.concatenate(parts) if parts else np.zeros(0)

    def ragged(self, path: tuple[Any, ...], counts: Counts, key: str) -> Ragged:
        """A list of lists of numbers at ``pos``: runs of lists at once, a long list in pieces."""
        c = self.open(0x5D)
        lens: list[np.ndarray] = []
        out = np.zeros(0)  # the values, written in place (no copy at the end)
        rows = total = 0
        bound = self.row_bound(counts)
        while c is not None:
            if c == 0x5D:
                raise _Syntax("Expecting value", self.pos)
            if c != 0x5B:
                raise InputError(self.path, f"{key}[{rows}]", counts.not_list)
            got = self.piece(RAGGED)
            kv = None if got is None else _rows(got)
            if kv is None:
                flat = (key, total) if counts.flat_index else ("", 0)
                one = self.numbers((*path, rows), counts.inner, "numbers of one list", False, *flat)
                kv = np.array([len(one)]), one
            k, v = kv
            if len(k) and int(k.max()) > counts.inner:
                i = rows + int(np.argmax(k > counts.inner))
                raise self.fail(
                    (*path, i),
                    f"more than {counts.inner:,} entries: must be at most {counts.inner:,} "
                    "(numbers of one list)",
                )
            rows += len(k)
            total += len(v)
            if rows > bound:
                raise self.fail(
                    path,
                    f"must be a list of {bound} lists ({counts.per})"
                    if counts.same_length in self.lengths
                    else f"more than {bound:,} lists: must be at most {bound:,} "
                    f"(rackbook's bound on {counts.name})",
                )
            if total > counts.total:
                raise self.fail(
                    path,
                    f"more than {counts.total:,} numbers in all: must be at most "
                    f"{counts.total:,} (rackbook's bound)",
                )
            lens.append(k)
            if not len(out):  # room for every number the file can hold, resident as written
                out = np.empty(max(min(counts.total, self.most_numbers), total), np.float64)
            out[total - len(v) : total] = v
            c = self.step(0x5D)
        # a view: the pages past ``total`` were never written, so never resident
        return Ragged(np.concatenate(lens) if lens else np.zeros(0, np.int64), out[:total])

    def skip(self, path: tuple[Any, ...]) -> None:
        """Check the list at ``pos`` and drop it (one by one where no piece was found)."""
        c = self.open(0x5D)
        n = fast = 0
        while c is not None:
            tried = self.pos >= fast
            got = self.piece(SKIP) if tried else None
            if got is None:
                fast = self.pos + PIECE if tried else fast
                got = [self.value((*path, n), 2, False)]
            n += len(got)
            c = self.step(0x5D)

    def row_bound(self, counts: Counts) -> int:
        return self.lengths.get(counts.same_length or "", counts.entries)


def _walk(v: Any, path: tuple[Any, ...], depth: int, r: _Reader) -> None:
    """Refuse strings, nesting and objects past their limits inside ``v`` (``depth`` levels in)."""
    if isinstance(v, str) and len(v) > MAX_STRING_MB * 1e6:
        raise r.fail(path, f"a string longer than {MAX_STRING_MB:g} MB (refused)")
    if not isinstance(v, (list, dict)):
        return
    if depth >= MAX_DEPTH:
        raise r.fail(path, f"nested deeper than {MAX_DEPTH} levels (refused)")
    if isinstance(v, dict) and len(v) > MAX_KEYS:
        raise r.fail(path, f"an object with more than {MAX_KEYS:,} keys (refused)")
    for k, x in v.items() if isinstance(v, dict) else enumerate(v):
        if isinstance(x, (str, list, dict)):
            _walk(x, (*path, k), depth + 1, r)


def load(
    path: str | Path, top: Mapping[str, str] | None = None, counts: Counts | None = None
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
            return _document(r, top or {}, counts or Counts(0, 0, 0))
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(
                path, "-", "not a valid gzip file" if gz else f"cannot read: {exc}"
            ) from None
        except _Truncated:
            raise InputError(path, "end of file", "truncated JSON") from None
        except _Syntax as exc:
            if (exc.pos >= len(r.buf) and r.eof) or exc.msg.startswith("Unterminated string"):
                raise InputError(path, "end of file", "truncated JSON") from None
            raise InputError(
                path, f"line {r.line(exc.pos)}", f"not valid JSON: {exc.msg}"
            ) from None


def _document(r: _Reader, top: Mapping[str, str], counts: Counts) -> Any:
    r.want(1 << 16)
    if b"\0" in r.buf[: 1 << 16]:
        raise InputError(r.path, "-", "not text (binary file?)")
    if r.buf.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark
        r.pos = 3
    c = r.ws()
    if c is None:
        raise InputError(r.path, "-", "file is empty")
    out = _typed(r, top, counts) if top and c == 0x7B else r.value((), 0)
    if r.ws() is not None:
        raise _Syntax("Extra data", r.pos)
    return out


def _typed(r: _Reader, top: Mapping[str, str], counts: Counts) -> dict[str, Any]:
    """The top-level object, its ``top`` keys' lists read as typed."""
    out: dict[str, Any] = {}
    c = r.open(0x7D)
    n = 0
    while c is not None:
        n += 1
        key = r.key(c, n)
        kind = top.get(key) if r.ws() == 0x5B else None
        v: Any = None
        if kind == NUMBERS:
            exact = counts.same_length in r.lengths
            what = counts.per if exact else f"rackbook's bound on {counts.name}"
            v = r.numbers((key,), r.row_bound(counts), what, exact, key)
        elif kind == RAGGED:
            v = r.ragged((key,), counts, key)
        elif kind == SKIP:
            r.skip((key,))
        else:
            v = r.value((key,), 1, top.get(key) != SKIP)
        if key == counts.same_length and isinstance(v, (np.ndarray, Ragged)):
            r.lengths[key] = len(v)
        if top.get(key) != SKIP:
            out[key] = v
        c = r.step(0x7D)
    return out
