"""What a chapter needs from the book around its analysis: values glued into the prose
(myst-nb ``glue``), boxes and tables."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, TypeGuard

import numpy as np

from rackbook.book.report import md_cell as _md_cell
from rackbook.book.report import render, table
from rackbook.core.units import number, plural, ratio_text
from rackbook.inputs import catalogs
from rackbook.inputs.claims import load_claims


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, so that glue's format specs (``:,.0f``) apply."""
    return value.item() if isinstance(value, np.generic) else value


def glue_values(values: Mapping[str, Any]) -> None:
    """Glue every value under its name, without displaying it (the prose shows it)."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, _plain(value), display=False)


def glue_figure(name: str, fig: Any) -> None:
    """Glue a figure's PNG (:func:`~rackbook.book.plotting.figure_png`) under ``name``."""
    import matplotlib.pyplot as plt
    from IPython.display import Image
    from myst_nb import glue

    from rackbook.book.plotting import figure_png

    glue(name, Image(data=figure_png(fig)), display=False)
    plt.close(fig)


def table_markdown(df: Any, columns: Mapping[str, tuple[str, str]]) -> str:
    """A DataFrame as a Markdown table: ``columns`` name -> (header with unit, format spec)."""

    def text(v: Any, spec: str) -> str:
        try:
            return format(v, spec) if spec else str(v)
        except (TypeError, ValueError):
            return str(v)

    head = " | ".join(h for h, _ in columns.values())
    rows = [
        [_md_cell(text(rec.get(n), spec)) for n, (_, spec) in columns.items()]
        for rec in df.to_dict("records")
    ]
    return "\n".join(table(head, rows, [bool(spec) for _, spec in columns.values()])) + "\n"


def folded(title: str, markdown: str) -> str:
    """``markdown`` in a dropdown titled ``title`` (its fence longer than any inside)."""
    inner = max((len(m) for m in re.findall(r"^(:{3,})", markdown, re.M)), default=3)
    fence = ":" * max(4, inner + 1)
    return f"{fence}{{dropdown}} {title}\n{markdown.strip()}\n{fence}\n"


def _doc(outcome: Any) -> dict[str, Any]:
    if isinstance(outcome, Mapping):
        return dict(outcome)
    return {"result": outcome.result, "readings": [asdict(r) for r in outcome.readings]}


def conclusion_markdown(outcome: Any) -> str:
    """The chapter's conclusion box: per claim its verdict word, finding and certainty."""
    from rackbook.results.conclusions import PLAIN_GRADES, conclusions, summarize

    doc = _doc(outcome)
    claims = {c.id: c for c in load_claims().claims}
    items = [(c, summarize(claims[c.claim_id], doc["readings"])) for c in conclusions(doc)]
    return render("conclusion.md.j2", items=items, grades=PLAIN_GRADES)


def glue_conclusion(outcome: Any) -> None:
    """Glue :func:`conclusion_markdown` as ``conclusion`` (Markdown) for ``{glue:md}``."""
    from IPython.display import Markdown
    from myst_nb import glue

    glue("conclusion", Markdown(conclusion_markdown(outcome)), display=False)


def _html(text: object) -> str:
    return html.escape(str(text), quote=True)


#: Longest basis a verdict cell names (a longer one is in its reason).
SHORT_BASIS = 60


def _reading_html(r: dict[str, Any], validation: str) -> str:
    """One reading in a verdict cell, its reason one click away."""
    from rackbook.results.conclusions import brief as expected_brief

    name = str(r.get("basis") or "")
    short = name and len(name) <= SHORT_BASIS and not any(c in name for c in ";|")
    att = r.get("attainable") or {}
    exp, ratio = att.get("expected") or {}, att.get("ratio")
    kernels = att.get("brief") or ""
    if not kernels and isinstance(ratio, (int, float)):
        kernels = f"{ratio_text(ratio)} what measured kernels reach"
    margin = str(r.get("margin") or "-")
    lines = ["" if margin == "-" else margin, expected_brief(exp, validation)]
    lines.append(kernels and f"kernel sum: {kernels}")
    small = "".join(f'<br><span class="rb-margin">{_html(x)}</span>' for x in lines if x)
    why = _html(r["reason"])
    why += f"<br>Expected: {_html(exp['text'])}" if exp.get("text") else ""
    why += f"<br>Attainable (kernel sum): {_html(att['text'])}" if att.get("text") else ""
    return (
        (f"as {_html(name)}: " if short else "")
        + f"<strong>{_html(r['verdict'])}</strong>{small}"
        + f"<details><summary>why</summary>{why}</details>"
    )


def readings_box(outcome: Any) -> str:
    """The claim-by-reading HTML verdict table, with the readings' questions above it."""
    from rackbook.physics.expected import load_fit
    from rackbook.results.headline import READING_TITLES, READINGS

    validation = load_fit().validation_text
    figures = {c.id: c.value_text for c in load_claims().claims}
    by_claim: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in _doc(outcome)["readings"]:
        by_claim.setdefault(r["claim_id"], {}).setdefault(r["reading"], []).append(r)
    head = "".join(f"<th>{READING_TITLES[k]}</th>" for k in READINGS)
    rows = [f'<table class="rb-readings"><thead><tr><th>claim</th>{head}</tr></thead><tbody>']
    for claim, kinds in by_claim.items():
        cells = "".join(
            f'<td data-label="{_html(READING_TITLES[k])}">'
            + ("".join(_reading_html(r, validation) for r in kinds.get(k, [])) or "-")
            + "</td>"
            for k in READINGS
        )
        name = figures.get(claim, claim)
        rows.append(f"<tr><td><strong>{_html(name)}</strong></td>{cells}</tr>")
    rows.append("</tbody></table>")
    intro = (
        "**Physics**: can any engine reach the figure on this hardware? **Published "
        "evidence**: where among independent measurements? **This run**: what does this "
        "chapter's trace say? Open *why* for a reading's reason."
    )
    return intro + "\n\n" + "".join(rows) + "\n"


def flips_box(outcome: Any) -> str:
    """A dropdown of what would flip each verdict (computed thresholds)."""
    from rackbook.physics.results_bounds import verdict_rule

    return render("chapter-boxes.md.j2", box="flips", flips=outcome.flips, rule=verdict_rule().text)


def standin_warning(kind: str, hardware: str, testable: bool) -> str:
    """A warning when the chapter's trace cannot test its claims; empty when it can."""
    if testable:
        return ""
    what = {
        "synthetic": "a synthetic input (generated, with its generator and seed in run.json)",
        "published": "numbers transcribed from a publication",
    }.get(kind, f"a recording on {hardware}")
    return render("chapter-boxes.md.j2", box="standin", what=what)


def evidence_markdown(result: str) -> str:
    """The chapter's published points per claim, used or not, and how each differs."""
    from rackbook.results import evidence

    figures = {c.id: c.value_text for c in load_claims().claims}
    table = evidence.evidence_table(result)
    if table.empty:
        return "No published measurement bears on this result.\n"
    groups = []
    for claim_id, rows in table.groupby("claim_id", sort=False):
        head = rows[rows["kind"] == "claim"]
        pts = rows[rows["kind"] == "published"].sort_values("used", ascending=False, kind="stable")
        records = pts.to_dict("records")
        ends = _range_ends([r for r in records if r["used"]])
        rest = [r for r in records if r not in ends]
        groups.append(
            {
                "name": figures.get(str(claim_id), claim_id),
                "head": head.iloc[0].to_dict() if len(head) else None,
                "bases": rows[rows["kind"] == "reading"].to_dict("records"),
                "points": records,
                "ends": _points_table(ends) if ends else [],
                "rest": _points_table(rest) if rest else [],
                "more": len(rest),
            }
        )
    body = render("evidence.md.j2", groups=groups, known=_known, linked=_linked)
    n = int((table["kind"] == "published").sum())
    return folded(
        f"The published points set beside each claim ({plural(n, 'point')}), with how each "
        "differs from the claim",
        body,
    )


def _linked(text: object) -> str:
    return re.sub(r"\((https?://[^\s)]+)\)", r"([source](\1))", _md_cell(text))


def _short(text: object, width: int) -> str:
    text = " ".join(str(text).split())
    cut = text[: width - 1].rsplit(" ", 1)[0].rstrip(",;:(")
    return text if len(text) <= width else cut + "\u2026"


def _range_ends(used: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The used points holding the lowest and highest value (all when none is finite)."""
    if not (values := [r["value"] for r in used if finite(r.get("value"))]):
        return used
    lo, hi = min(values), max(values)
    ends: dict[float, dict[str, Any]] = {}
    for r in used:
        if r.get("value") in (lo, hi):
            ends.setdefault(r["value"], r)
    return list(ends.values())


def _points_table(records: list[dict[str, Any]]) -> list[str]:
    rows, names = [], catalogs.display_names()
    for r in records:
        url = r.get("url")
        who = _md_cell(_short(r["who"], 48))
        src = f"[{who}]({url})" if isinstance(url, str) and url else who
        gpus = r.get("gpus")
        n = "" if gpus is None or gpus != gpus else f" x {int(gpus)}"  # None or NaN: no count
        hw = names.get(str(r["hardware"]), r["hardware"])
        # never "not stated x 16": a count alone reads "16 GPUs"
        parts = [f"{hw}{n}" if _known(r["hardware"]) else n.replace(" x ", "") + " GPUs" * bool(n)]
        parts += [
            _short(names.get(str(r[k]), r[k]), 32) for k in ("model", "engine") if _known(r[k])
        ]
        system = _md_cell(", ".join(p for p in parts if p) or "not stated")
        value = r.get("value")
        shown = "-"
        if finite(value):
            shown = number(value)
            shown += "" if str(r["unit"]) in ("1", "") else f" {r['unit']}"  # no unit "1"
        used = ("yes" if r["used"] else "no") + " (not verified)" * (not r.get("verified", True))
        diff = str(r.get("comparable") or "").removeprefix("differs from the claim in: ")
        cells = [r["as_published"], shown, r.get("basis") or "-"]
        rows.append([src, system, *map(_md_cell, cells), used, _md_cell(diff) or "nothing named"])
    head = "source | system | as published | value | basis | used | differs from the claim in"
    return table(head, rows)


def headlines_box(outcome: Any) -> str:
    """The chapter's headline values, folded in a dropdown titled with their count."""
    return render("chapter-boxes.md.j2", box="headlines", outcome=outcome)


def finite(x: Any) -> TypeGuard[float]:
    """A real number, neither NaN nor infinite."""
    return isinstance(x, (int, float)) and math.isfinite(x)


def _known(x: object) -> bool:
    """A table field that holds something (not None, NaN, empty, "unknown" or "not stated")."""
    return str(x).strip().lower() not in ("", "nan", "none", "unknown", "not stated", "-")


def validity_warning(trace: Any) -> str:
    """A warning with the counts when flagged requests were left out; else empty."""
    s = getattr(trace, "screening", None)
    return render("chapter-boxes.md.j2", box="validity", screening=s) if s and s.flagged else ""
