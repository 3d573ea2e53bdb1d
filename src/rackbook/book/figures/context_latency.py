"""Figures of the context-latency chapter (from its ``Analysis``)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.inputs import catalogs
from rackbook.results import verdicts
from rackbook.results.context_latency import Analysis

_LINES = ["-", "--", ":"]


def kv_per_sequence(a: Analysis) -> Figure:
    """Global KV of one sequence (GB) against context, per KV dtype, the claimed pair marked."""
    heading = "Global KV cache of one sequence against context length"
    x, y = "context (thousand tokens)", "global KV per sequence (GB)"
    fig, ax = plotting.axes(x, y, heading)
    for i, d in enumerate(catalogs.PRECISIONS):
        t = a.memory[d]
        label = f"{d}: {a.kv_bytes[d].bytes_per_token} B/token"
        gb = t["kv_bytes_per_sequence"] / 1e9
        ax.plot(t["context_tokens"] / 1e3, gb, ls=_LINES[i], label=label)
    for c in (a.lo, a.hi):
        ax.axvline(c / 1e3, color="0.5", lw=0.8)
        y = a.at.loc[c, "kv_bytes_per_sequence"] / 1e9
        ax.plot([c / 1e3], [y], "o", color=plotting.PALETTE[0])
        note = f"{c / 1e3:,.0f}k: {y * 1e3:,.0f} MB"
        plotting.note(ax, note, (c / 1e3, y), (6, 6), fontsize=plotting.TEXT_PT)
    ax.legend(loc="upper left")
    return fig


def sequences_per_gpu(a: Analysis) -> Figure:
    """Sequences whose KV fits on one GPU after the weights (log) against context, per dtype."""
    heading = f"Sequences per GPU ({a.hw.id.upper()}) after the weights"
    x, y = "context (thousand tokens)", "KV fits per GPU (sequences, log)"
    fig, ax = plotting.axes(x, y, heading, log="y")
    for i, d in enumerate(catalogs.PRECISIONS):
        t = a.memory[d]
        ax.plot(t["context_tokens"] / 1e3, t["sequences_per_gpu"], ls=_LINES[i], label=d)
    for c in (a.lo, a.hi):
        ax.axvline(c / 1e3, color="0.5", lw=0.8)
        n = a.at.loc[c, "sequences_per_gpu"]
        note = f"{n:,} at {c / 1e3:,.0f}k"
        plotting.note(ax, note, (c / 1e3, n), (6, 6), fontsize=plotting.TEXT_PT)
    ax.legend(loc="upper right")
    return fig


def decode_latency(a: Analysis) -> Figure:
    """Median and mean TPOT (ms) against context, the linear fit (95 % CI of its slope) and the
    pair the delta is taken between."""
    s, f, d = a.series, a.fit, a.measured
    where = a.hardware if verdicts.gpu_names(a.trace.run) else f"CPU stand-in: {a.hardware}"
    title = f"Decode latency against context\n({where})"
    fig, ax = plotting.axes("context (tokens)", "decode latency (ms per token)", title)
    x = s["context_tokens"].to_numpy(float)
    ax.plot(x, s["median_tpot_ms"], "o", label="median TPOT per point")
    ax.plot(x, s["mean_tpot_ms"], "s", mfc="none", label="mean TPOT per point")
    xs = np.linspace(x.min(), x.max(), 50)
    lo, hi = f.slope_ci_per_1k
    fit = f"fit: {f.slope_per_1k:.2f} ms per 1k tokens (95 % CI {lo:.2f} to {hi:.2f})"
    ys = f.intercept_ms + f.slope_ms_per_token * xs
    ax.plot(xs, ys, "-", color=plotting.PALETTE[3], label=f"{fit}, R² = {f.r2:.2f}")
    pair, colour = f"pair for the delta: {d.delta_ms:+.2f} ms", plotting.PALETTE[2]
    ax.plot([d.lo, d.hi], [d.lo_ms, d.hi_ms], "D", ms=9, mfc="none", label=pair, c=colour)
    ax.set_ylim(bottom=0)
    plotting.legend(ax, below=-0.2)
    return fig


def context_growth(a: Analysis) -> Figure:
    """Extra time per decode step (ms, log) against sequences per GPU growing lo -> hi tokens:
    sparse floor and dense bound, with the claimed delta and its tolerance as a band."""
    g, p = a.growth, a.params
    n = np.unique(np.geomspace(1, max(64, 2 * g.sequences_to_explain), 40).round())
    per_sparse = g.growth.sparse_ms / g.growth.batch
    per_dense = g.growth.dense_ms / g.growth.batch
    claim, tol = g.claim_ms, a.tolerance_ms
    fig, ax = plotting.axes(
        f"sequences per GPU, each growing {a.lo / 1e3:,.0f}k -> {a.hi / 1e3:,.0f}k tokens (log2)",
        "extra time per decode step (ms, log)",
        f"Extra context reads at {a.hw.hbm_bandwidth_bytes_per_s / 1e12:g} TB/s "
        f"({p.kv_dtype}, modelled)",
    )
    band = f"claim: +{claim:g} ms (+/-{tol:g} ms)"
    ax.axhspan(claim - tol, claim + tol, color=plotting.PALETTE[1], alpha=0.3, label=band)
    dense = f"dense bound: every row ({1000 * per_dense:,.0f} µs per sequence)"
    ax.plot(n, n * per_dense, "--", color=plotting.PALETTE[3], label=dense)
    sparse = f"sparse floor: scan + top-k ({1000 * per_sparse:.3g} µs per sequence)"
    ax.plot(n, n * per_sparse, "-", color=plotting.PALETTE[0], label=sparse)
    ax.axvline(g.sequences_to_explain, color="0.5", lw=0.8)
    reach = f"{g.sequences_to_explain:.0f} sequences\nreach the claim"
    plotting.note(ax, reach, (g.sequences_to_explain, per_sparse), (6, 0))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(plotting.ticks(",.0f"))
    ax.yaxis.set_major_formatter(plotting.ticks("g"))
    plotting.legend(ax, below=-0.2)
    return fig


def implied_latency(a: Analysis) -> Figure:
    """The decode latency at lo (ms) the delta and percent imply, with its rounding range,
    against the least step time of one sequence."""
    im = a.implied
    x, title = f"decode step at {a.lo:,} tokens (ms, log)", "The latency the two figures imply,"
    title += "\nagainst the step floor (modelled)"
    fig, ax = plotting.axes(x, None, title, figsize=(6.4, 2.4), log="x", fmt="g")
    band = f"implied by the claims: {im.low_ms:.2f} to {im.high_ms:.1f} ms"
    ax.axvspan(im.low_ms, im.high_ms, color=plotting.PALETTE[1], alpha=0.3, label=band)
    central = f"100 x {a.growth.claim_ms:g} ms / {a.claim_pct.value:g} % = {im.central_ms:.2f} ms"
    ax.plot([im.central_ms], [0.5], "o", color=plotting.PALETTE[1], label=central)
    floor = f"step floor: {im.step_floor_ms:.3f} ms (1 sequence, {a.params.weight_gpus} GPUs)"
    ax.axvline(im.step_floor_ms, color=plotting.PALETTE[0], lw=2, label=floor)
    ax.set_xlim(im.step_floor_ms / 2, im.high_ms * 2)
    plotting.legend(ax, below=-0.45)
    return fig


#: The chapter's figures by glue name.
FIGURES = {
    "fig_memory": kv_per_sequence,
    "fig_capacity": sequences_per_gpu,
    "fig_latency": decode_latency,
    "fig_growth": context_growth,
    "fig_implied": implied_latency,
}
