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
    body = "\n".join(f"- {f}" for f in outcome.flips) or "- nothing short of a new trace"
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
