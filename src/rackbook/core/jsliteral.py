"""The JavaScript literal a module assigns to a name (objects, arrays, strings, numbers, ``true``,
``false``, ``null``, ``undefined``, comments, trailing commas), for the SGLang cookbook's data file;
nothing runs. Every error is one InputError naming file and line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from rackbook.errors import InputError


class _JsParser:
    _NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    _NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
    _STRINGS = {q: re.compile(rf"{q}((?:\\[\s\S]|[^\\\n{q}])*){q}") for q in "\"'"}
    _ESCAPE = re.compile(r"\\([\s\S])")
    _BLANK = re.compile(r"(?:\s+|//[^\n]*|/\*[\s\S]*?\*/)*")

    def __init__(self, text: str, path: Path) -> None:
        self.text, self.path, self.pos = text, path, 0

    def fail(self, problem: str) -> InputError:
        line = self.text.count("\n", 0, self.pos) + 1
        return InputError(self.path, f"line {line}", problem)

    def skip(self) -> None:
        """Past whitespace and comments."""
        self.pos = cast(re.Match[str], self._BLANK.match(self.text, self.pos)).end()
        if self.text.startswith("/*", self.pos):
            raise self.fail("comment left open to the end of the file")

    def value(self) -> Any:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of file")
        c = self.text[self.pos]
        if c in "{[":
            return self.container(c == "{")
        if c in "\"'":
            return self.string()
        m = self._NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return float(m.group()) if any(x in m.group() for x in ".eE") else int(m.group())
        m = self._NAME.match(self.text, self.pos)
        if m and m.group() in ("true", "false", "null", "undefined"):
            self.pos = m.end()
            return {"true": True, "false": False}.get(m.group())
        raise self.fail(f"unexpected {self.text[self.pos : self.pos + 12]!r}")

    def string(self) -> str:
        """The quoted string at ``pos``, on one line (``\\n``, ``\\t``; else the character)."""
        m = self._STRINGS[self.text[self.pos]].match(self.text, self.pos)
        if m is None:
            raise self.fail("string left open")
        self.pos = m.end()
        return self._ESCAPE.sub(lambda e: {"n": "\n", "t": "\t"}.get(e[1], e[1]), m[1])

    def container(self, keyed: bool) -> Any:
        """The object (``keyed``) or list at ``pos``."""
        self.pos += 1  # past the bracket
        out: Any = {} if keyed else []
        close, what = ("}", "an object") if keyed else ("]", "a list")
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                self.pos += 1
                return out
            if keyed:
                key = self.key()
                if key in out:
                    raise self.fail(f"duplicate key {key!r}")
                self.skip()
                if not self.text.startswith(":", self.pos):
                    found = self.text[self.pos : self.pos + 12] or "end of file"
                    raise self.fail(f"expected ':', found {found!r}")
                self.pos += 1
                out[key] = self.value()
            else:
                out.append(self.value())
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith(close, self.pos):
                raise self.fail(f"expected ',' or {close!r} in {what}")

    def key(self) -> str:
        if self.pos < len(self.text) and self.text[self.pos] in "\"'":
            return self.string()
        m = self._NAME.match(self.text, self.pos)
        if not m:
            raise self.fail("expected a key")
        self.pos = m.end()
        return m.group()


def parse_js_export(text: str, name: str, path: str | Path = "<text>") -> Any:
    """The literal assigned to ``name`` in JavaScript ``text``; errors name the line."""
    path = Path(path)
    m = re.search(rf"(?:export\s+)?(?:const|let|var)\s+{re.escape(name)}\s*=", text)
    if not m:
        raise InputError(path, name, f"no `export const {name} = ...` in the file")
    p = _JsParser(text, path)
    p.pos = m.end()
    return p.value()
