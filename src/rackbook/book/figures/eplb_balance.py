"""Figures of the eplb-balance chapter: the data's source in the title, claims as lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.eplb_balance import SWEEPS, Analysis


def rank_loads(a: Analysis) -> Figure:
    """Tokens per EP rank in the shown layer of the first scored step, static vs after EPLB."""
    r, p = a.ranks, a.params
    source = "synthetic routing model" if a.trace.kind == "synthetic" else a.hardware
    heading = f"Layer {p.show_layer}, decode step {p.fit_windows}: load per rank ({source})"
    y = "token-expert assignments on the rank (tokens)"
    fig, ax = plotting.axes("EP rank (index)", y, heading, layout="constrained")
    ax.bar(r["rank"] - 0.2, r["static"], width=0.4, label="static placement")
    ax.bar(r["rank"] + 0.2, r["eplb"], width=0.4, label="after EPLB")
    ax.axhline(r["static"].mean(), color="0.3", lw=1, ls="--", label="mean (uniform routing)")
    plotting.legend(fig)
    return fig


#: Per sweep parameter: its panel's title and x-axis label.
_AXES = {
    "ep_size": ("against EP size", "EP size (ranks)"),
    "redundant": ("against redundant experts", "redundant experts (count)"),
    "skew": ("against routing skew", "Zipf exponent (0 = uniform)"),
    "batch_per_rank": ("against decode batch per rank", "sequences per rank (log2)"),
}


def _draw_sweep(ax: Any, a: Analysis, x: str) -> None:
    """One sweep on ``ax``: static and EPLB balancedness against ``x``, with the claims."""
    mark = getattr(a.params if x in ("ep_size", "redundant") else a, x)
    df = a.sweeps[x]
    ax.plot(df[x], df["static"], marker="o", label="model: static placement")
    ax.plot(df[x], df["eplb"], marker="s", label="model: after EPLB")
    ax.plot(df[x], df["uniform_floor"], ls=":", color="0.4", label="uniform routing, per step")
    ax.axhline(a.before, color=plotting.PALETTE[3], lw=0.8, ls="--", label=f"claim: {a.before:g}")
    ax.axhline(a.after, color=plotting.PALETTE[2], lw=0.8, ls="--", label=f"claim: {a.after:g}")
    ax.axvline(mark, color="0.5", lw=0.8, ls=":", label="this chapter's parameters")
    if x == "batch_per_rank":
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(df[x]), [f"{int(v):,}" for v in df[x]])  # 8, 16, ... not 2^3
        ax.minorticks_off()
    ax.set_ylim(0, 1.02)
    title, xlabel = _AXES[x]
    plotting.label(ax, xlabel, "balancedness (0 to 1)", title)


def sweeps(a: Analysis) -> Figure:
    """Every sweep of :data:`rackbook.results.eplb_balance.SWEEPS`, one panel each (2 x 2)."""
    fig, axes = plt.subplots(2, 2, figsize=(6.4, 5.6), sharey=True, layout="constrained")
    for ax, x in zip(axes.flat, SWEEPS, strict=True):
        _draw_sweep(ax, a, x)
    for ax in axes[:, 1]:
        ax.set_ylabel("")
    fig.suptitle("Modelled balancedness, static and after EPLB\n(synthetic routing model)")
    plotting.legend(fig, None, *axes.flat[0].get_legend_handles_labels())
    return fig


#: The chapter's figures by glue name.
FIGURES: dict[str, Callable[[Analysis], Figure]] = {"fig_ranks": rank_loads, "fig_sweeps": sweeps}
