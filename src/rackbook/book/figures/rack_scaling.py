"""Figures of the rack-scaling chapter; trace figures name their hardware. USD, not ``$``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from rackbook.book import plotting
from rackbook.core.units import percent, plural, ratio_text
from rackbook.results.rack_scaling import READING_LABELS, Analysis

#: Colour of each physics verdict.
VERDICT_COLOURS = {
    "possible": plotting.PALETTE[2],
    "undetermined": plotting.PALETTE[1],
    "impossible": plotting.PALETTE[3],
}
_THOUSANDS = plotting.ticks(",.0f")


def _source(a: Analysis) -> str:
    return "" if a.testable else f"\nstand-in on {a.hardware}, not GB300"


#: A white box behind a label, so that gridlines and ceiling lines do not run through it.
_BOX = {"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}


def _usd(v: float) -> str:
    """Dollars on a figure: cents below 1,000, whole dollars above."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.2f}"


def token_kinds(a: Analysis) -> Figure:
    """Throughput per GPU (or replica) of every point, stacked: output, new and cached input."""
    acc, u = a.accounting, a.unit
    heading = f"Which tokens a per-{u} throughput counts{_source(a)}"
    fig, ax = plotting.axes(f"configuration (label, {u}s)", f"throughput per {u} (tok/s)", heading)
    x = np.arange(len(acc))
    out_g = acc["output_tok_s_per_gpu"].to_numpy(float)
    new_g = acc["new_input_tok_s_per_gpu"].fillna(acc["input_tok_s_per_gpu"]).to_numpy(float)
    cac_g = acc["cached_input_tok_s_per_gpu"].fillna(0).to_numpy(float)
    ax.bar(x, out_g, width=0.5, color=plotting.PALETTE[0], label="output")
    new_label = "new input" + ("" if a.cached_known else " (all input: cached share unknown)")
    ax.bar(x, new_g, width=0.5, bottom=out_g, color=plotting.PALETTE[1], label=new_label)
    top = out_g + new_g
    ax.bar(x, cac_g, width=0.5, bottom=top, color=plotting.PALETTE[2], label="cached input")
    names = [f"{c}\n{plural(int(g), u)}" for c, g in zip(acc.config, acc.num_gpus, strict=True)]
    ax.set_xticks(x, names)
    ax.yaxis.set_major_formatter(_THOUSANDS)
    ax.set_ylim(0, 1.3 * float((top + cac_g).max()))  # room for the legend
    ax.legend(loc="upper right", ncol=1)  # inside: never over the axis label
    return fig


def scaling(a: Analysis) -> Figure:
    """Throughput of each configuration against its GPU count, with linear scaling."""
    sc, metric, u = a.scaling, a.params.metric, a.unit
    heading = f"Throughput against {u}s, with the linear-scaling line{_source(a)}"
    fig, ax = plotting.axes(f"{u}s serving (count)", f"{metric} throughput (tok/s)", heading)
    gmax = int(sc["num_gpus"].max())
    ref = sc.iloc[0]
    line = np.array([0, gmax + 0.5])
    linear = f"linear scaling from {a.params.reference_config}"
    ax.plot(line, ref["tok_s"] * line / ref["num_gpus"], ls="--", color="0.5", label=linear)
    ax.plot(sc["num_gpus"], sc["tok_s"], marker="o", ls="none", ms=8, label=f"measured ({metric})")
    for r in sc.itertuples():
        last = r.num_gpus == gmax and r.num_gpus != ref["num_gpus"]
        text = (
            f"{r.config}: reference"
            if r.config == a.params.reference_config
            else f"{r.config}: {r.speedup:.2f}x, efficiency {r.efficiency:.0%}"
        )
        # clear of the others' labels and of the line: the last above its point, no overlap
        off, where = ((8, 14), ("right", "bottom")) if last else ((0, -20), ("center", "top"))
        plotting.note(ax, text, (r.num_gpus, r.tok_s), off, ha=where[0], va=where[1], bbox=_BOX)
    ax.set(xlim=(0, gmax + 0.5), ylim=(0, None))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(_THOUSANDS)
    ax.legend(loc="upper left")
    return fig


def readings(a: Analysis) -> Figure:
    """Computed tokens per GPU of each reading of the published throughput against the GPU's
    ceilings, log scale; each bar coloured by its physics verdict."""
    rd = a.throughput
    heading = f"What {a.claim_tok_s:,.0f} tok/s 'per GPU' needs from one {a.params.gpu_id.upper()}"
    xl, yl = "computed tokens per GPU (tok/s, log)", "reading ('per GPU' as)"
    fig, ax = plotting.axes(xl, yl, heading, figsize=(6.4, 4.6), layout="constrained", log="x")
    y = np.arange(len(rd))[::-1]
    for yi, r in zip(y, rd.itertuples(), strict=True):
        unknown = not np.isfinite(r.ratio)
        style = {"hatch": "//", "alpha": 0.6} if unknown else {"hatch": None, "alpha": 1.0}
        ax.barh(yi, r.computed_tok_s_per_gpu, height=0.5, color=VERDICT_COLOURS[r.verdict], **style)
        text = (
            f"fits if >= {percent(r.min_cached_share, 0)} cached: {r.verdict}"
            if unknown
            else f"{ratio_text(r.ratio)} the {r.phase} ceiling: {r.verdict}"
        )
        # above its bar, from the axis' left edge: no empty decades for labels
        where = {"xycoords": ("axes fraction", "data"), "va": "bottom", "ha": "left", "zorder": 5}
        ax.annotate(text, (0.01, yi + 0.28), fontsize=plotting.SMALL_PT, bbox=_BOX, **where)
    styles = {
        ("compute", "decode"): (plotting.PALETTE[0], "--"),
        ("memory bandwidth", "decode"): (plotting.PALETTE[5], ":"),
        ("compute", "prefill"): (plotting.PALETTE[4], "-."),
    }
    for c in a.ceilings.itertuples():
        colour, ls = styles[(c.ceiling, c.phase)]
        label = f"{c.ceiling} ceiling, {c.phase}: {c.tok_s_per_gpu:,.0f} tok/s per GPU"
        ax.axvline(c.tok_s_per_gpu, color=colour, ls=ls, lw=1.2, label=label)
    ax.set_yticks(y, [READING_LABELS.get(r, r) for r in rd["reading"]])
    lo = min(rd["computed_tok_s_per_gpu"].min(), a.ceilings["tok_s_per_gpu"].min())
    hi = max(rd["computed_tok_s_per_gpu"].max(), a.ceilings["tok_s_per_gpu"].max())
    ax.set(xlim=(lo / 2, hi * 2), ylim=(-0.5, len(rd) - 0.1))
    ax.grid(axis="y", visible=False)
    plotting.legend(ax, below=-0.18)
    return fig


def node_efficiency(a: Analysis) -> Figure:
    """Per node size: the speedup's scaling efficiency and the node throughput it implies."""
    sp = a.speedups
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.4, 5.0))
    names = [f"{r.gpus_per_node} GPUs per node\n({r.nodes:g} nodes)" for r in sp.itertuples()]
    x = np.arange(len(sp))
    left.bar(x, 100 * sp["efficiency"], width=0.5, color=plotting.PALETTE[0])
    left.axhline(100, color="0.4", lw=0.8, ls="--", label="linear scaling (100 %)")
    for i, e in enumerate(sp["efficiency"]):
        plotting.note(
            left, f"{e:.1%}", (i, 100 * e), (0, 4), ha="center", fontsize=plotting.TEXT_PT
        )
    left.set_xticks(x, names)
    left.set_ylim(0, 125)
    heading = f"{a.claim_speedup:g}x on {a.rack.gpus} GPUs"
    plotting.label(left, "what 'a node' is (GPUs)", "scaling efficiency (%)", heading)
    left.legend(loc="upper left")
    colours = [VERDICT_COLOURS[v] for v in sp["verdict"]]
    right.bar(x, sp["node_tok_s_per_gpu"], width=0.5, color=colours)
    cap = float(sp["ceiling_tok_s_per_gpu"].iloc[0])
    ceiling = f"decode compute ceiling: {cap:,.0f}"
    right.axhline(cap, color=plotting.PALETTE[0], ls="--", label=ceiling)
    for i, r in enumerate(sp.itertuples()):
        text = f"{r.ratio:.3g}x: {r.verdict}"
        plotting.note(right, text, (i, r.node_tok_s_per_gpu), (0, 4), ha="center")
    right.set_xticks(x, names)
    right.set_ylim(0, cap * 1.25)
    right.yaxis.set_major_formatter(_THOUSANDS)
    heading = "The node it implies (rack total / speedup)"
    plotting.label(right, "what 'a node' is (GPUs)", "node throughput per GPU (tok/s)", heading)
    right.legend(loc="upper right", fontsize=plotting.SMALL_PT)
    fig.tight_layout()
    return fig


def revenue(a: Analysis) -> Figure:
    """The dollar figure against each reading's token revenue per GPU-hour and the rental."""
    rv = a.cost.revenue
    heading = "The dollar figure as token revenue, by throughput reading"
    xl, yl = "token revenue per GPU-hour (USD, log)", "reading (tok/s per GPU)"
    fig, ax = plotting.axes(xl, yl, heading, figsize=(6.4, 3.8), layout="constrained", log="x")
    y = np.arange(len(rv))[::-1]
    for yi, r in zip(y, rv.itertuples(), strict=True):
        span = [r.revenue_all_cached, r.revenue_all_uncached]
        ax.plot(span, [yi, yi], lw=10, solid_capstyle="butt", color=plotting.PALETTE[0], alpha=0.7)
        text = f"USD {_usd(r.revenue_all_cached)} (all cached) to {_usd(r.revenue_all_uncached)}"
        mid = ((r.revenue_all_cached * r.revenue_all_uncached) ** 0.5, yi)
        # above its bar: the axis spans only the data, no empty decades
        plotting.note(ax, text, mid, (0, 9), va="bottom", ha="center", bbox=_BOX)
    figure = f"the figure: {a.claim_usd:g} USD per GPU-hour"
    ax.axvline(a.claim_usd, color=plotting.PALETTE[3], lw=1.5, label=figure)
    rent = a.rental.usd_per_gpu_hour
    ax.axvline(rent, color="0.4", ls="--", label=f"catalog GB300 price: {rent:g} USD per GPU-hour")
    names = [f"{r.reading}\n({r.tok_s_per_gpu:,.0f} tok/s per GPU)" for r in rv.itertuples()]
    ax.set_yticks(y, names)
    lo = min(rv["revenue_all_cached"].min(), a.rental.usd_per_gpu_hour)
    ax.set(xlim=(lo / 2, rv["revenue_all_uncached"].max() * 3), ylim=(-0.6, len(rv) - 0.4))
    ax.grid(axis="y", visible=False)
    plotting.legend(ax, below=-0.18)
    return fig


#: The chapter's figures by glue name.
FIGURES = {
    "fig_tokens": token_kinds,
    "fig_scaling": scaling,
    "fig_readings": readings,
    "fig_nodes": node_efficiency,
    "fig_revenue": revenue,
}
