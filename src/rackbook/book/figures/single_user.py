"""Figures of the single-user chapter (data: :class:`rackbook.results.single_user.Analysis`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.single_user import Analysis


def gaps(a: Analysis) -> Figure:
    """Histogram and CDF of the gaps between streamed chunks (ms), with the gap percentiles."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    if a.gaps_ms.size:
        ax1.hist(a.gaps_ms, bins=40, color=plotting.PALETTE[0])
        v = np.sort(a.gaps_ms)
        ax2.step(v, np.arange(1, v.size + 1) / v.size, where="post", color=plotting.PALETTE[0])
        for i, (q, ms) in enumerate(a.stats.gaps_ms.items()):
            ax2.axvline(ms, color=plotting.PALETTE[1 + i], ls=":", label=f"p{q:g} = {ms:.2f} ms")
        ax2.legend(loc="lower right", fontsize=8)
    else:
        ax1.text(0.5, 0.5, "no gaps in this trace", ha="center", transform=ax1.transAxes)
    plotting.label(ax1, "gap between streamed chunks (ms)", "gaps (count)", "Gap histogram")
    plotting.label(ax2, "gap between streamed chunks (ms)", "fraction of gaps (1)", "Gap CDF")
    return fig


def claim_vs_floor(a: Analysis) -> Figure:
    """Time per output token of the claim against the batch-1 bandwidth floor, without and
    with speculative decoding."""
    fl = a.floor
    fig, ax = plt.subplots()
    x = np.arange(len(fl))
    ax.bar(
        x - 0.2,
        fl["floor_ms_per_token"],
        width=0.4,
        color=plotting.PALETTE[2],
        label="bandwidth floor per token",
    )
    ax.bar(
        x + 0.2,
        fl["claim_ms_per_token"],
        width=0.4,
        color=plotting.PALETTE[0],
        label=f"claim: {a.claim_tok_s:g} tok/s",
    )
    ticks = [f"{r.reading}\n({r.acceptance_length:g} tokens/step)" for r in fl.itertuples()]
    ax.set_xticks(x, ticks)
    plotting.label(
        ax,
        "decode mode (acceptance length)",
        "time per output token (ms)",
        f"The claim against the batch-1 floor on {a.floor_gpus} x {a.params.gpu_id}",
    )
    ax.set_ylim(0, 1.3 * max(fl["floor_ms_per_token"].max(), fl["claim_ms_per_token"].max()))
    ax.legend(loc="upper center", ncol=2)
    return fig
