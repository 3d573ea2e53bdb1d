"""Figures of the single-user chapter (data: :class:`rackbook.results.single_user.Analysis`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.core.units import plural
from rackbook.results import verdicts
from rackbook.results.single_user import Analysis


def gaps(a: Analysis) -> Figure:
    """Histogram and CDF of the gaps between streamed chunks (ms, log), with percentiles."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6.4, 5.2), sharex=True, layout="constrained")
    g = a.gaps_ms[a.gaps_ms > 0]
    if g.size:
        lo, hi = g.min(), g.max()
        bins = np.geomspace(lo / 1.05, hi * 1.05, 41)
        ax1.hist(g, bins=bins, color=plotting.PALETTE[0])
        v = np.sort(g, kind="stable")
        ax2.step(v, np.arange(1, v.size + 1) / v.size, where="post", color=plotting.PALETTE[0])
        for i, (q, ms) in enumerate(a.stats.gaps_ms.items()):
            ax2.axvline(ms, color=plotting.PALETTE[1 + i], ls=":", label=f"p{q:g} = {ms:.3g} ms")
        ax2.legend(loc="upper left", fontsize=plotting.SMALL_PT)
        ax1.set_xscale("log")
        ax1.xaxis.set_major_formatter(plotting.ticks("g"))
    else:
        ax1.text(0.5, 0.5, "no gaps in this trace", ha="center", transform=ax1.transAxes)
    x = "gap between streamed chunks (ms, log)"
    plotting.label(ax1, x, "gaps (count)", "Gap histogram")
    plotting.label(ax2, x, "share of gaps (fraction)", "Gap CDF")
    where = a.hardware if verdicts.gpu_names(a.trace.run) else f"CPU stand-in: {a.hardware}"
    fig.suptitle(f"Gaps of one stream\n({where})", fontsize=plotting.TEXT_PT)
    return fig


def claim_vs_floor(a: Analysis) -> Figure:
    """The claim's share of the batch-1 bandwidth ceiling (%), without and with speculative
    decoding (above 100 % impossible)."""
    fl = a.floor
    heading = (
        f"{a.claim_tok_s:g} tok/s against the batch-1 ceiling on {a.floor_gpus} x "
        f"{a.params.gpu_id.upper()} (modelled)"
    )
    y = "claim / bandwidth ceiling (%)"
    fig, ax = plotting.axes("decode mode (acceptance length)", y, heading)
    ax.axhline(100, color="0.3", lw=1.2, ls="--", label="the ceiling: above it, impossible")
    x = np.arange(len(fl))
    share = 100 * fl["claim_share_of_ceiling"]
    bars = ax.bar(x, share, width=0.5, color=[plotting.PALETTE[2], plotting.PALETTE[0]])
    for b, r in zip(bars, fl.itertuples(), strict=True):
        text = f"{100 * r.claim_share_of_ceiling:.0f} % of {r.ceiling_tok_s:,.0f} tok/s"
        top = (b.get_x() + b.get_width() / 2, b.get_height())
        plotting.note(ax, text, top, (0, 4), ha="center")
    steps = [plural(r.acceptance_length, "token") for r in fl.itertuples()]
    ax.set_xticks(x, [f"{r}\n({s} per step)" for r, s in zip(fl["reading"], steps, strict=True)])
    ax.set_ylim(0, max(130, 1.2 * share.max()))
    plotting.legend(ax, below=-0.22)
    return fig


def step_budget(a: Analysis) -> Figure:
    """The step time the claim implies (ms): the bandwidth floor and what is left, per mode."""
    fl = a.floor
    xl, yl = "time of one decode step the claim implies (ms)", "decode mode (tokens per step)"
    title = "Where the claimed step time goes (modelled)"
    fig, ax = plotting.axes(xl, yl, title, figsize=(6.4, 3.6), layout="constrained")
    y = np.arange(len(fl))
    ax.barh(y, fl["floor_step_ms"], color=plotting.PALETTE[2], label="streaming the bytes (floor)")
    left = fl["claim_step_ms"] - fl["floor_step_ms"]
    rest = "left for collectives, compute, launches"
    ax.barh(y, left, left=fl["floor_step_ms"], color=plotting.PALETTE[1], label=rest)
    for i, r in enumerate(fl.itertuples()):
        us = 1000 * (r.claim_step_ms - r.floor_step_ms) / a.moe_layers
        plotting.note(ax, f"{us:.3g} µs per MoE layer", (r.claim_step_ms, i), (4, 0), va="center")
    ax.set_yticks(y, [f"{r.reading} ({r.acceptance_length:g})" for r in fl.itertuples()])
    ax.set_xlim(0, 1.6 * fl["claim_step_ms"].max())
    plotting.legend(ax, below=-0.22)
    return fig


#: The chapter's figures by glue name.
FIGURES = {"fig_gaps": gaps, "fig_ceiling": claim_vs_floor, "fig_budget": step_budget}
