"""Figures of the prefill-gain chapter (data: :class:`rackbook.results.prefill_gain.Analysis`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.prefill_gain import Analysis


def throughput_distribution(a: Analysis) -> Figure:
    """Empirical distribution of per-request new-token tok/s of A and B, each with a dotted line
    at its chosen statistic."""
    fig, ax = plt.subplots()
    t = a.table
    for i, cfg in enumerate((a.params.config_a, a.params.config_b)):
        v = np.sort(t.loc[(t["config"] == cfg) & t["new_tok_s"].notna(), "new_tok_s"])
        ax.step(
            v,
            np.arange(1, v.size + 1) / v.size,
            where="post",
            color=plotting.PALETTE[i],
            label=f"config {cfg} ({v.size} requests)",
        )
        ax.axvline(a.stat_tok_s(cfg), color=plotting.PALETTE[i], ls=":", lw=1)
    plotting.label(
        ax,
        "new-token prefill throughput per request (tok/s)",
        "fraction of requests (1)",
        "Distribution of new-token throughput, A and B",
    )
    ax.legend(loc="lower right")
    return fig


def gain_against_range(a: Analysis) -> Figure:
    """The measured gain (%) with its bootstrap interval, over the published range."""
    g, p = a.gain, a.params
    fig, ax = plt.subplots(figsize=(7, 2.4))
    ax.axvspan(
        100 * a.claim_low,
        100 * a.claim_high,
        color=plotting.PALETTE[2],
        alpha=0.2,
        label="published range",
    )
    ax.axvline(0, color="0.4", lw=0.8)
    ax.errorbar(
        [100 * g.gain],
        [0],
        xerr=[[100 * (g.gain - g.low)], [100 * (g.high - g.gain)]],
        fmt="o",
        capsize=6,
        color=plotting.PALETTE[0],
        label=f"measured, {g.level:.0%} bootstrap interval",
    )
    ax.set_yticks([])
    plotting.label(
        ax,
        f"gain of {p.config_b} over {p.config_a}, {p.stat} new-token tok/s (%)",
        "(no unit)",
        "Measured gain against the published range",
    )
    ax.legend(loc="upper left", fontsize=8)
    return fig


def prefix_read_ceiling(a: Analysis) -> Figure:
    """The modelled new-token prefill ceiling (tok/s) against the cached prefix (tokens), with
    and without new tokens sharing one read of the prefix, and the claim's prefix."""
    p = a.params
    fig, ax = plt.subplots()
    for i, (r, c) in enumerate(a.curve.groupby("reuse")):
        ax.plot(
            c["prefix"],
            c["tok_s"],
            color=plotting.PALETTE[i],
            label=f"{r} new token(s) per prefix read",
        )
    ax.axvline(
        a.claim_prefix, color="0.4", ls="--", lw=0.8, label=f"claim: {a.claim_prefix:,} cached"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    plotting.label(
        ax,
        "cached prefix (tokens, log)",
        "new-token prefill ceiling (tok/s, log)",
        f"Prefill behind a cached prefix ({p.model_id}, {p.prefill_gpus} x {p.gpu_id})",
    )
    ax.legend(fontsize=8)
    return fig
