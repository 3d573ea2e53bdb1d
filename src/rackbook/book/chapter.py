"""What a chapter needs from the book around its analysis: numbers glued into the prose
(myst-nb ``glue``, one call for all of them) and the headline table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, so that glue's format specs (``:,.0f``) apply."""
    return value.item() if isinstance(value, np.generic) else value


def glue_values(values: Mapping[str, Any]) -> None:
    """Glue every value under its name, without displaying it (the prose shows it)."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, _plain(value), display=False)


def glue_figure(name: str, fig: Any) -> None:
    """Glue a figure under ``name`` without displaying it: the chapter places it with a
    ``{glue:figure}`` directive that gives it a caption and a label to ``{numref}``."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    glue(name, fig, display=False)
    plt.close(fig)


def _admonition(kind: str, title: str, body: str, cls: str | None = None) -> str:
    head = f":::{{{kind}}} {title}".rstrip() if kind == "admonition" else f":::{{{kind}}}"
    opts = f"\n:class: {cls}" if cls else ""
    return f"{head}{opts}\n{body.strip()}\n:::\n"


def readings_box(outcome: Any) -> str:
    """The chapter's verdict box: a MyST admonition holding each claim's three readings
    (physics, published evidence, this run), each a verdict and its reason."""
    return _admonition(
        "admonition",
        "Verdict: three readings per claim",
        "Each reading answers a different question and none stands for another. "
        "**Physics**: can any engine reach the figure on this hardware? **Published "
        "evidence**: where does it sit among independent measurements of comparable systems? "
        "**This run**: what does the trace this chapter executed say?\n\n"
        + outcome.readings_markdown(),
        "important",
    )


def flips_box(outcome: Any) -> str:
    """What would turn each verdict the other way: computed thresholds, one bullet each."""
    body = "\n".join(f"- {_md_cell(f)}" for f in outcome.flips) or "- nothing short of a new trace"
    return _admonition("admonition", "What would flip it", body, "tip")


def standin_warning(kind: str, hardware: str, testable: bool) -> str:
    """A warning admonition when the chapter's trace cannot test its claims (a CPU stand-in,
    other GPUs, a synthetic input); empty when it can."""
    if testable:
        return ""
    what = {
        "synthetic": "a synthetic input (generated, with its generator and seed in run.json)",
        "published": "numbers transcribed from a publication",
    }.get(kind, f"a recording on {hardware}")
    return _admonition(
        "warning",
        "",
        f"The trace behind this chapter's measured numbers is {what}, not the claim's "
        "hardware and model. It shows the method end to end; its numbers are not evidence "
        "for or against the claim, and its reading is **untested**.",
    )


def evidence_markdown(result: str) -> str:
    """The chapter's published-measurements table: for each claim of ``result``, its published
    reading, then every published point set beside it (linked to its source), the value in the
    claim's unit, whether the reading used it, and how it differs from the claim."""
    import math

    from rackbook.results import evidence

    table = evidence.evidence_table(result)
    if table.empty:
        return "No published measurement bears on this result.\n"
    out = []
    for claim_id, rows in table.groupby("claim_id", sort=False):
        head = rows[rows["kind"] == "claim"]
        pts = rows[rows["kind"] != "claim"].sort_values("used", ascending=False, kind="stable")
        if len(head):
            h = head.iloc[0]
            out.append(
                f"**`{claim_id}`** ({_md_cell(h['as_published'])}): published reading "
                f"**{h['verdict']}**"
                + (f" [{h['margin']}]" if h["margin"] not in ("-", "") else "")
            )
        if pts.empty:
            out += ["", "No published point.", ""]
            continue
        out += [
            "",
            "| source | system | as published | value | used | differs from the claim in |",
            "|---|---|---|---|---|---|",
        ]
        for r in pts.to_dict("records"):
            url = r.get("url")
            who = _md_cell(r["who"])
            src = f"[{who}]({url})" if isinstance(url, str) and url else who
            gpus = r.get("gpus")
            n = (
                ""
                if gpus is None or (isinstance(gpus, float) and math.isnan(gpus))
                else f" x {int(gpus)}"
            )
            parts = [f"{r['hardware']}{n}" if _known(r["hardware"]) else n.strip(" x")]
            parts += [str(r[k]) for k in ("model", "engine") if _known(r[k])]
            system = _md_cell(", ".join(p for p in parts if p) or "not stated")
            value = r.get("value")
            finite = isinstance(value, (int, float)) and math.isfinite(value)
            shown = "-"
            if finite:
                shown = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.4g}"
                shown += f" {r['unit']}"
            used = "yes" if r["used"] else "no"
            if not r.get("verified", True):
                used += " (not verified)"
            diff = str(r.get("comparable") or "")
            diff = diff.split("): ", 1)[1] if "): " in diff else diff
            out.append(
                f"| {src} | {system} | {_md_cell(r['as_published'])} | {_md_cell(shown)} | {used} "
                f"| {_md_cell(diff) or 'nothing named'} |"
            )
        out.append("")
    return "\n".join(out) + "\n"


def _known(x: object) -> bool:
    """A table field that holds something (not None, NaN or empty)."""
    return not (x is None or (isinstance(x, float) and x != x) or str(x).strip() in ("", "nan"))


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("$", "\\$").replace("\n", " ")


def validity_warning(trace: Any) -> str:
    """A warning admonition with the counts when the analysis left flagged requests out
    (:func:`rackbook.core.validity.valid_trace`); empty when none was flagged."""
    s = getattr(trace, "screening", None)
    if s is None or not s.flagged:
        return ""
    return _admonition(
        "warning",
        "",
        f"Measurement validity: {s.text()} A flagged request is one whose timestamps measure "
        "the client rather than the engine (tokens delivered in one burst, gaps below the "
        "clock's resolution or far below the engine's step) or whose token counts disagree "
        "with the server's; see the methodology's section on measurement validity.",
    )
