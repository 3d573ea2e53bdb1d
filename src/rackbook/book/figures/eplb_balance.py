"""Figures of the eplb-balance chapter (data: :class:`rackbook.results.eplb_balance.Analysis`).

Every figure draws the trace or the synthetic routing model, and says which in its title; the
claim's figures appear only as labelled reference lines. Legends sit below the axes, outside
the data."""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.eplb_balance import SWEEPS, Analysis


def _source(a: Analysis) -> str:
    """What the loads are, for titles."""
    return "synthetic routing model" if a.trace.kind == "synthetic" else a.hardware


def rank_loads(a: Analysis) -> Figure:
    """Tokens per EP rank in the shown layer of the first scored step, static vs after EPLB."""
    r = a.ranks
    fig, ax = plt.subplots(layout="constrained")
    ax.bar(r["rank"] - 0.2, r["static"], width=0.4, label="static placement")
    ax.bar(r["rank"] + 0.2, r["eplb"], width=0.4, label="after EPLB")
    ax.axhline(r["static"].mean(), color="0.3", lw=1, ls="--", label="mean (uniform routing)")
    plotting.label(
        ax,
        "EP rank (index)",
        "token-expert assignments on the rank (tokens)",
        f"Layer {a.params.show_layer}, decode step {a.params.fit_windows}: load per rank "
        f"({_source(a)})",
    )
    fig.legend(loc="outside lower center", ncols=3, fontsize=8)
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
            "Zipf skew of expert popularity (exponent, 0 = uniform)",
            "Balance against routing skew",
            a.skew,
        ),
        "batch_per_rank": (
            "decode batch per rank (sequences, log2 scale)",
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
    fig, ax = plt.subplots(layout="constrained")
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
    plotting.label(ax, xlabel, "balancedness (0 to 1)", f"{title} (synthetic routing model)")
    fig.legend(loc="outside lower center", ncols=3, fontsize=8)
    return fig


def _sweep(x: str) -> Callable[[Analysis], Figure]:
    def draw(a: Analysis) -> Figure:
        return balance_against(a, x)

    draw.__name__ = f"balance_against_{x}"
    draw.__doc__ = f"Modelled balancedness against {x} (:func:`balance_against`)."
    return draw


#: The chapter's figures by glue name.
FIGURES: dict[str, Callable[[Analysis], Figure]] = {
    "fig_ranks": rank_loads,
    "fig_ep": _sweep("ep_size"),
    "fig_redundant": _sweep("redundant"),
    "fig_skew": _sweep("skew"),
    "fig_batch": _sweep("batch_per_rank"),
}
