"""What ``rackbook run`` and ``list`` print under each result (headline values, 4 significant
digits, and what moved since the last run); Markdown helpers and the template renderer."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

#: How a missing value reads.
NOT_RECORDED = "not recorded"


def value_text(value: Any, unit: str | None = None) -> str:
    """A headline value as printed (``180.2 tok/s``, ``1,234 ms``, ``not recorded``)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return NOT_RECORDED
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, int) or (value.is_integer() and abs(value) >= 1000):
        text = f"{value:,.0f}"
    else:
        text = f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return text if unit in (None, "", "1") else f"{text} {unit}"


def _headlines(doc: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    found = (doc or {}).get("headlines") or []
    return {h["name"]: h for h in found if isinstance(h, dict) and isinstance(h.get("name"), str)}


def _verdicts(doc: dict[str, Any] | None) -> dict[tuple[str, str], str]:
    return {
        (str(r["claim_id"]), str(r["reading"])): str(r["verdict"])
        for r in (doc or {}).get("readings") or []
        if isinstance(r, dict) and {"claim_id", "reading", "verdict"} <= set(r)
    }


def changes(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """What moved from headline JSON ``old`` (None: no last run) to ``new``."""
    if old is None:
        return []
    out = []
    before, after = _verdicts(old), _verdicts(new)
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, "absent"), after.get(key, "absent")
        if a != b:
            out.append(f"{key[0]} {key[1]}: {a} -> {b}")
    hb, ha = _headlines(old), _headlines(new)
    for name in [*ha, *(n for n in hb if n not in ha)]:
        was, now = hb.get(name), ha.get(name)
        if was is None or now is None:
            out.append(f"{name}: {'new' if was is None else 'gone'}")
            continue
        va, vb = (value_text(h.get("value"), h.get("unit")) for h in (was, now))
        if va != vb:
            out.append(f"{name}: {va} -> {vb}")
        if was.get("verdict") != now.get("verdict"):
            out.append(f"{name} verdict: {was.get('verdict')} -> {now.get('verdict')}")
    return out


def block(doc: dict[str, Any], old: dict[str, Any] | None = None, *, compare: bool) -> list[str]:
    """The lines under a result's verdict: per headline value ``name = VALUE UNIT (claim:
    verdict)`` or ``(no claim)``, then (``compare``) first run, unchanged or what moved."""
    lines = []
    for name, h in _headlines(doc).items():
        said = f"{h['claim_id']}: {h.get('verdict')}" if h.get("claim_id") else "no claim"
        lines.append(f"  {name} = {value_text(h.get('value'), h.get('unit'))} ({said})")
    if not compare:
        return lines
    moved = "; ".join(changes(old, doc))
    last = "first run in this folder" if old is None else "unchanged since the last run"
    return [*lines, f"  changed since the last run: {moved}" if moved else f"  {last}"]


def table(head: str, rows: Iterable[Iterable[object]], right: Sequence[bool] = ()) -> list[str]:
    """A Markdown table's lines from ``head`` (``"a | b"``), escaped cells, columns ``right``."""
    right = right or [False] * (head.count("|") + 1)
    lines = [f"| {head} |", "|" + "".join("---:|" if r else "---|" for r in right)]
    return lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows]


def md(text: object) -> str:
    """Text safe inside MyST: ``$`` escaped, bare URLs linked."""
    text = str(text).replace("$", "\\$")
    return re.sub(r"(?<![<(])(https?://[^\s)>\]]+[^\s)>\].,;:])", r"<\1>", text)


def cell(text: object) -> str:
    """Text safe inside a Markdown table cell."""
    return md(text).replace("|", "\\|").replace("\n", " ")


def md_cell(text: object) -> str:
    """Text safe inside a Markdown table cell or bold run: ``|`` and ``$`` escaped, one line."""
    return str(text).replace("|", "\\|").replace("$", "\\$").replace("\n", " ")


def render(template: str, **values: Any) -> str:
    """``book/_template/TEMPLATE`` (Jinja2) filled with ``values``; an undefined name raises."""
    import jinja2

    from rackbook import paths
    from rackbook.core.units import plural

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(paths.ROOT / "book" / "_template"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,  # autoescape off (the default): Markdown, not HTML
    )
    env.filters |= {"fmt": format, "md": md, "cell": cell, "mdcell": md_cell}
    env.filters["pipes"] = lambda v: str(v).replace("|", "\\|")
    env.globals |= {"plural": plural}
    return env.get_template(template).render(**values)
