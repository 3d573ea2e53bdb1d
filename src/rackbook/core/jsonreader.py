"""A JSON file read in bounded memory, every problem one InputError: the buffer, plain values
parsed once a window of the file holds them (charged to :data:`VALUE_BUDGET_MB`), the limits on
depth, strings, integers and keys. :mod:`rackbook.core.jsonstream` reads typed lists with it."""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import IO, Any, cast

from rackbook.errors import InputError

CHUNK = 4 << 20  # bytes read from the file at a time
MAX_DEPTH = 64  # deepest nesting of lists and objects
MAX_STRING_MB = 16.0  # longest string (10**6 characters)
MAX_NUMBER_CHARS = 100  # longest integer literal (characters)
MAX_KEYS = 100_000  # most keys in one object
VALUE_BUDGET_MB = 256.0  # estimated Python memory of the plain values kept from one file (MB)

_WS, NL = re.compile(rb"[ \t\n\r]*"), b"\n"


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise OverflowError
    return int(text)


DECODER = json.JSONDecoder(parse_int=_int)
_REFUSED = {
    RecursionError: f"nested deeper than {MAX_DEPTH} levels (refused)",
    OverflowError: f"a number of more than {MAX_NUMBER_CHARS} characters",
}


def _estimate(text: bytes) -> int:
    """Estimated Python bytes of the values of JSON ``text``."""
    items = text.count(b",") + text.count(b":") + 1
    return len(text) + 40 * items + 64 * (text.count(b"{") + text.count(b"["))


class Reader:
    """A JSON file's bytes, read ahead in chunks; ``pos`` is the next byte to read."""

    def __init__(self, fh: IO[bytes], path: Path, cap: int | None) -> None:
        self.fh, self.path, self.cap = fh, path, cap
        self.buf, self.pos, self.eof = b"", 0, False
        self.lines = 0  # newlines before buf
        self.budget = int(VALUE_BUDGET_MB * 1e6)

    def want(self, n: int) -> int:
        while len(self.buf) - self.pos < n and not self.eof:
            data = self.fh.read(CHUNK)
            self.eof = not data
            self.lines += self.buf.count(NL, 0, self.pos)
            self.buf, self.pos = self.buf[self.pos :] + data, 0
            if self.cap is not None and self.fh.tell() > self.cap:  # bytes decompressed
                limit = "the limit for a gzip file; raise it with --max-input-mb"
                raise self.fail((), f"decompresses to over {self.cap / 1e6:g} MB ({limit})")
        return len(self.buf) - self.pos

    def ws(self) -> int:
        """Past whitespace: the next byte, or -1 at end of file."""
        self.pos = cast(re.Match[bytes], _WS.match(self.buf, self.pos)).end()
        while self.pos == len(self.buf) and self.want(1):
            self.pos = cast(re.Match[bytes], _WS.match(self.buf, self.pos)).end()
        return self.buf[self.pos] if self.pos < len(self.buf) else -1

    def fail(self, where: tuple[Any, ...] | str | int, problem: str) -> InputError:
        """``problem`` at a path (``("rows", 3, "hw")``: ``rows[3].hw``), a field or a buffer
        position (its line; at the end: truncated)."""
        if isinstance(where, int) and where >= len(self.buf) and self.eof:
            return InputError(self.path, "end of file", "truncated JSON")
        if isinstance(where, int):
            where = f"line {self.lines + self.buf.count(NL, 0, where) + 1}"
        elif isinstance(where, tuple):
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)
        return InputError(self.path, where.removeprefix(".") or "-", problem)

    def bad(self, msg: str) -> InputError:
        return self.fail(self.pos, f"not valid JSON: {msg}")

    def value(self, path: tuple[Any, ...], depth: int, charge: bool = True) -> Any:
        """The value at ``pos``, parsed once a window (doubled as needed) surely holds it."""
        w, end = 256, -1
        while end < 0:
            w *= 2
            at_end = self.want(w) < w
            text = self.buf[self.pos : self.pos + w]
            if charge and _estimate(text) > self.budget:
                why = f"the file's values need more than {VALUE_BUDGET_MB:g} MB of memory"
                raise self.fail(path, f"{why} (refused)")
            try:
                s = codecs.utf_8_decode(text, None, at_end)[0]
                v, end = DECODER.raw_decode(s)
            except UnicodeDecodeError as exc:
                problem = f"not UTF-8 text: byte 0x{text[exc.start]:02x} (save the file as UTF-8)"
                raise self.fail(self.pos + exc.start, problem) from None
            except json.JSONDecodeError as exc:  # near the window's end: maybe a cut
                cut = exc.msg.startswith("Unterminated string")
                if at_end or (exc.pos < len(s) - 16 and not cut):
                    at = len(self.buf) if cut else self.pos + len(s[: exc.pos].encode())
                    raise self.fail(at, f"not valid JSON: {exc.msg}") from None
            except (RecursionError, OverflowError) as exc:
                raise self.fail(path, _REFUSED[type(exc)]) from None
            end = end if at_end or 0 <= end < len(s) - 16 else -1
        self.walk(v, path, depth)
        n = len(s[:end].encode())
        self.budget -= _estimate(text[:n]) if charge else 0
        self.pos += n
        return v

    def walk(self, v: Any, path: tuple[Any, ...], depth: int) -> None:
        if isinstance(v, str) and len(v) > MAX_STRING_MB * 1e6:
            raise self.fail(path, f"a string longer than {MAX_STRING_MB:g} MB (refused)")
        if not isinstance(v, (list, dict)):
            return
        if depth >= MAX_DEPTH:
            raise self.fail(path, _REFUSED[RecursionError])
        if isinstance(v, dict) and len(v) > MAX_KEYS:
            raise self.fail(path, f"an object with more than {MAX_KEYS:,} keys (refused)")
        for k, x in v.items() if isinstance(v, dict) else enumerate(v):
            if isinstance(x, (list, dict)) or (isinstance(x, str) and len(x) > MAX_STRING_MB * 1e6):
                self.walk(x, (*path, k), depth + 1)

    def step(self, close: int, first: bool = False) -> int | None:
        """Past a comma (``first``: the bracket): the next byte, or None past ``close``."""
        c = self.ws()
        if c == close and not first:
            self.pos += 1
            return None
        if c != 0x2C and not first:
            raise self.bad("Expecting ',' delimiter")
        self.pos += 1
        c = self.ws()
        self.pos += c == close and first
        return None if c == close and first else c
