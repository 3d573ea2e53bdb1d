"""Figures of the rack-scaling chapter (data: :class:`rackbook.results.rack_scaling.Analysis`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.rack_scaling import Analysis


def token_kinds(a: Analysis) -> Figure:
    """Throughput per GPU of every point, stacked by token kind: output, new input, cached
    input (all input as new when the cached share is unknown)."""
    acc = a.accounting
    fig, ax = plt.subplots()
    x = np.arange(len(acc))
    out_g = acc["output_tok_s_per_gpu"].to_numpy(float)
    new_g = acc["new_input_tok_s_per_gpu"].fillna(acc["input_tok_s_per_gpu"]).to_numpy(float)
    cac_g = acc["cached_input_tok_s_per_gpu"].fillna(0).to_numpy(float)
    ax.bar(x, out_g, color=plotting.PALETTE[0], label="output")
    ax.bar(
        x,
        new_g,
        bottom=out_g,
        color=plotting.PALETTE[1],
        label="new input" + ("" if a.cached_known else " (all input: cached share unknown)"),
    )
    ax.bar(x, cac_g, bottom=out_g + new_g, color=plotting.PALETTE[2], label="cached input")
    ax.set_xticks(
        x, [f"{c}\n{g} GPU(s)" for c, g in zip(acc["config"], acc["num_gpus"], strict=True)]
    )
    plotting.label(
        ax,
        "configuration (label, GPUs)",
        "throughput per GPU (tok/s)",
        "Which tokens a per-GPU throughput counts",
    )
    ax.set_ylim(0, 1.3 * np.nanmax(out_g + new_g + cac_g))
    ax.legend(loc="upper center", ncol=3, fontsize=8)
    return fig


def scaling(a: Analysis) -> Figure:
    """Throughput of each configuration against its GPU count, with the linear-scaling line
    from the reference."""
    sc, metric = a.scaling, a.params.metric
    fig, ax = plt.subplots()
    gmax = int(sc["num_gpus"].max())
    ref = sc.iloc[0]
    line = np.array([0, gmax * 1.1])
    ax.plot(
        line,
        ref["tok_s"] * line / ref["num_gpus"],
        ls="--",
        color="0.5",
        label=f"linear scaling from {a.params.reference_config}",
    )
    ax.plot(sc["num_gpus"], sc["tok_s"], marker="o", ls="none", ms=8, label=f"measured ({metric})")
    for r in sc.itertuples():
        ax.annotate(
            f"{r.config}: {r.speedup:.2f}x, eff. {r.efficiency:.0%}",
            (r.num_gpus, r.tok_s),
            textcoords="offset points",
            xytext=(6, -12),
        )
    ax.set_xlim(0, gmax * 1.1)
    ax.set_ylim(0, None)
    plotting.label(
        ax,
        "GPUs serving (count)",
        f"{metric} throughput (tok/s)",
        "Throughput against GPU count, with the linear-scaling line",
    )
    ax.legend(loc="upper left")
    return fig


def readings(a: Analysis) -> Figure:
    """Computed tokens per GPU of each reading of the throughput figure, against the GPU's
    compute ceiling per phase (log scale)."""
    rd, p = a.readings, a.params
    fig, ax = plt.subplots()
    y = np.arange(len(rd))
    colors = [
        plotting.PALETTE[2] if v == "consistent" else plotting.PALETTE[3] for v in rd["verdict"]
    ]
    ax.barh(y, rd["computed_tok_s_per_gpu"], color=colors)
    caps = rd.groupby("phase")["cap_tok_s"].first()
    for i, (ph, cap) in enumerate(caps.items()):
        ax.axvline(
            cap,
            color=plotting.PALETTE[4 + i],
            ls="--",
            label=f"{p.gpu_id} {p.precision} ceiling, {ph}: {cap:,.0f} tok/s",
        )
    for i, r in enumerate(rd.itertuples()):
        ax.annotate(
            f"{r.ratio:.3g}x peak",
            (r.computed_tok_s_per_gpu, i),
            va="center",
            textcoords="offset points",
            xytext=(4, 0),
            fontsize=8,
        )
    ax.set_yticks(y, rd["reading"])
    ax.set_xscale("log")
    ax.set_xlim(1e3, 1e7)
    plotting.label(
        ax,
        "computed tokens per GPU (tok/s, log)",
        f"reading (of {a.claim_tok_s:,.0f} tok/s)",
        "Readings of the claim against the physical ceiling",
    )
    ax.legend(loc="lower right", fontsize=8)
    return fig


def node_efficiency(a: Analysis) -> Figure:
    """Scaling efficiency the published speedup means for each node size."""
    sp = a.speedups
    fig, ax = plt.subplots()
    ax.bar(sp["system"], 100 * sp["efficiency"], color=plotting.PALETTE[0])
    ax.axhline(100, color="0.4", lw=0.8, ls="--", label="linear scaling (100 %)")
    for i, r in enumerate(sp.itertuples()):
        ax.annotate(
            f"{r.gpus_per_node} GPUs/node, {r.nodes:g} nodes: {r.efficiency:.1%}",
            (i, 100 * r.efficiency),
            ha="center",
            textcoords="offset points",
            xytext=(0, 4),
        )
    plotting.label(
        ax,
        "what 'a node' is (catalog system)",
        "scaling efficiency (%)",
        f"{a.claim_speedup:g}x on {a.rack.gpus} GPUs, by node size",
    )
    ax.set_ylim(0, 115)
    ax.legend(loc="upper left")
    return fig
