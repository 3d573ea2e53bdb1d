"""Figures of the eplb-balance chapter (data: :class:`rackbook.results.eplb_balance.Analysis`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.eplb_balance import SWEEPS, Analysis


def rank_loads(a: Analysis) -> Figure:
    """Tokens per EP rank in the shown layer of the first scored step, static vs after EPLB."""
    r = a.ranks
    fig, ax = plt.subplots()
    ax.bar(r["rank"] - 0.2, r["static"], width=0.4, label="static placement")
    ax.bar(r["rank"] + 0.2, r["eplb"], width=0.4, label="after EPLB")
    ax.axhline(r["static"].mean(), color="0.3", lw=1, ls="--", label="mean (uniform routing)")
    plotting.label(
        ax,
        "EP rank (index)",
        "tokens routed to the rank's experts (tokens)",
        f"Layer {a.params.show_layer}, decode step {a.params.fit_windows}: load per rank",
    )
    ax.legend()
    return fig


def _panel(a: Analysis, x: str) -> tuple[str, str, float]:
    """x-axis label, title and the chapter's own value of sweep parameter ``x``."""
    p = a.params
    return {
        "ep_size": (
            "EP size (ranks)",
            "Balance against EP size (one redundant slot per rank)",
            p.ep_size,
        ),
        "redundant": (
            f"redundant experts at EP {p.ep_size} (experts)",
            "Balance against redundant experts",
            p.redundant,
        ),
        "skew": (
            "Zipf skew of expert popularity (1)",
            "Balance against routing skew (0 = uniform)",
            a.skew,
        ),
        "batch_per_rank": (
            "decode batch per rank (sequences, log2)",
            "Balance against batch: a decode step is a sample",
            a.batch_per_rank,
        ),
    }[x]


def balance_against(a: Analysis, x: str) -> Figure:
    """Modelled balancedness, static and after EPLB, against sweep parameter ``x`` (one of
    :data:`rackbook.results.eplb_balance.SWEEPS`), with uniform routing's per-step floor, the
    claim's before and after figures, and the chapter's own value of ``x``."""
    if x not in SWEEPS:
        raise ValueError(f"no sweep {x!r}; expected one of {', '.join(SWEEPS)}")
    xlabel, title, mark = _panel(a, x)
    df = a.sweeps[x]
    fig, ax = plt.subplots()
    ax.plot(df[x], df["static"], marker="o", label="static placement")
    ax.plot(df[x], df["eplb"], marker="s", label="after EPLB")
    ax.plot(df[x], df["uniform_floor"], ls=":", color="0.4", label="uniform routing, per step")
    ax.axhline(a.before, color=plotting.PALETTE[3], lw=0.8, ls="--", label=f"claim: {a.before:g}")
    ax.axhline(a.after, color=plotting.PALETTE[2], lw=0.8, ls="--", label=f"claim: {a.after:g}")
    ax.axvline(mark, color="0.5", lw=0.8, ls=":", label="this chapter's parameters")
    if x == "batch_per_rank":
        ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.02)
    plotting.label(ax, xlabel, "balancedness (1)", title)
    ax.legend(fontsize=8)
    return fig
