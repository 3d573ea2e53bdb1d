"""What a generated sentence must never show a reader (a template leak): used by
``tests/test_template_leaks.py`` on every sentence generator, and usable on a built page."""

from __future__ import annotations

import re

from rackbook.inputs.catalogs import list_models, load_hardware

#: Words that may legitimately repeat ("that that" is rare in this book; numbers are not words).
_REPEATABLE = {"had", "that", "is"}

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Python None", re.compile(r"(?<![\w`'\"])None\b(?![`'\"])")),
    ("a NaN", re.compile(r"(?<![\w`])(?:nan|NaN)(?![\w`])")),
    ("unknown (unknown)", re.compile(r"\bunknown \(unknown\)")),
    (  # a {name} that is not a MyST directive (":::{note}") or role ("{ref}`x`")
        "an unfilled placeholder",
        re.compile(r"(?<![:`])\{[a-z_]+\}(?!`)|\[(?:a|an|the) [a-z][^\]]*\](?!\()"),
    ),
    ("'us' for microseconds", re.compile(r"\d\s?us\b(?! per GPU)|\bus per\b")),
    ("'not stated' in arithmetic", re.compile(r"not stated (?:x|\*|/) ?\d")),
    ("'per unknown'", re.compile(r"\bper unknown\b")),
)
#: Number style a reader meets in what the book prints (the presentation layer's output, not a
#: reading's raw reason): checked by ``leaks(text, style=True)``.
_STYLE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("scientific notation", re.compile(r"\b\d(?:\.\d+)?e[+-]\d\d\b")),
    ("a ratio past 3 significant figures", re.compile(r"(?<![\d.,])0\.\d{4,}x\b")),
    ("cents on thousands of dollars", re.compile(r"\$\d{1,3}(?:,\d{3})+\.\d\d\b")),
    ("a percentage without its space", re.compile(r"(?<![\w.])\d+(?:\.\d+)?%")),
    (  # "the ceiling is 332,736; ... it rises to 332,736"
        "a change from a value to itself",
        re.compile(r"\b([\d,]{4,})\b[^.]{0,200}?\b(?:rises|falls|grows) to \1\b"),
    ),
    ("deferred to the notebook", re.compile(r"to be settled in the notebook")),
)
_DOUBLED = re.compile(r"\b([A-Za-z][a-z]+)(?: (?:and|or)| ,|,)? \1\b")


def _catalog_ids() -> set[str]:
    hw = load_hardware()
    return set(hw.gpus) | set(hw.systems) | set(hw.prices) | set(list_models())


def leaks(text: str, ids: set[str] | None = None, style: bool = False) -> list[str]:
    """Each template leak in ``text`` as ``kind: excerpt`` (empty when none): a Python None or
    NaN, "unknown (unknown)", a doubled word ("possible and possible"), a raw catalog id in
    parentheses ("(b300)"), an unfilled placeholder ("[a rental price]", "{name}"), "us"
    written for µs, "not stated x 16"."""
    out = []
    for kind, pat in _PATTERNS + (_STYLE if style else ()):
        out += [f"{kind}: {_around(text, m)}" for m in pat.finditer(text)]
    for m in _DOUBLED.finditer(text):
        if m.group(1).lower() not in _REPEATABLE:
            out.append(f"a doubled word: {_around(text, m)}")
    for i in sorted(ids if ids is not None else _catalog_ids()):
        for m in re.finditer(rf"\({re.escape(i)}\)", text):
            out.append(f"a raw catalog id: {_around(text, m)}")
    return out


def bare_ids(text: str, ids: set[str] | None = None) -> list[str]:
    """Each catalog id written as a bare word in ``text`` ("on 72 x gb300"), as ``excerpt``: a
    reader's line names a GPU or model by its display name ("GB300", "DeepSeek-V4.1-Flash").
    Case-sensitive; an id inside a longer name, a path or a URL ("gb300-nvl72", "/gb300") does
    not count."""
    out = []
    for i in sorted(ids if ids is not None else _catalog_ids()):
        for m in re.finditer(rf"(?<![\w/.-]){re.escape(i)}(?![\w-])", text):
            out.append(_around(text, m))
    return out


def _around(text: str, m: re.Match[str], width: int = 40) -> str:
    return text[max(0, m.start() - width) : m.end() + width].replace("\n", " ")
