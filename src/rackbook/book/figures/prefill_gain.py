"""Figures of the prefill-gain chapter (an untestable gain never beside the published range)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from rackbook.book import plotting
from rackbook.inputs import catalogs
from rackbook.results.prefill_gain import Analysis


def _where(a: Analysis) -> str:
    return f"on {a.hardware}" if a.testable else "CPU stand-in, not GB300"


def throughput_distribution(a: Analysis) -> Figure:
    """Empirical distribution of per-request new-token tok/s of A and B, with their statistic."""
    fig, ax = plotting.axes(
        "new-token prefill throughput per request (tok/s)",
        "cumulative share of requests (0 to 1)",
        f"New-token throughput per request\n({_where(a)})",
        layout="constrained",
    )
    t = a.table
    for i, cfg in enumerate((a.params.config_a, a.params.config_b)):
        rows = (t["config"] == cfg) & t["new_tok_s"].notna()
        v = np.sort(t.loc[rows, "new_tok_s"], kind="stable")
        if not v.size:
            continue
        label = f"config {cfg}: {a.serve_args(cfg.lower())} ({v.size} requests)"
        share = np.arange(1, v.size + 1) / v.size
        ax.step(v, share, where="post", color=plotting.PALETTE[i], label=label)
        stat = f"{a.params.stat} of {cfg}"
        ax.axvline(a.stat_tok_s(cfg), color=plotting.PALETTE[i], ls=":", lw=1, label=stat)
    ax.set_ylim(0, 1.02)
    plotting.legend(fig)
    return fig


def gain_interval(a: Analysis) -> Figure:
    """The measured gain (%) with its bootstrap interval; the published range beside it only
    when the trace can test the claim."""
    g, p = a.gain, a.params
    what = "" if a.testable else f"\n{a.serve_args('b')} over {a.serve_args('a')}"
    x = f"gain of {p.config_b} over {p.config_a}, {p.stat} new-token tok/s (%)"
    title = f"This run's gain ({_where(a)}){what}"
    fig, ax = plotting.axes(x, None, title, figsize=(6.4, 2.2), layout="constrained")
    ax.title.set_fontsize(plotting.SMALL_PT)
    ax.axvline(0, color="0.4", lw=0.8)
    ax.text(0, 0.55, " no gain", color="0.4", fontsize=plotting.SMALL_PT, va="center")
    if g is None:
        ax.text(0.5, 0.5, a.missing or "no gain", ha="center", va="center", transform=ax.transAxes)
    else:
        err = [[100 * (g.gain - g.low)], [100 * (g.high - g.gain)]]
        label = f"{p.stat} gain of {p.config_b} over {p.config_a}, with its {g.level:.0%} bootstrap"
        style = {"fmt": "o", "capsize": 6, "color": plotting.PALETTE[0]}
        ax.errorbar([100 * g.gain], [0], xerr=err, label=f"{label} interval", **style)
        text = f"{100 * g.gain:+.1f} % ({100 * g.low:+.1f} to {100 * g.high:+.1f} %)"
        plotting.note(ax, text, (100 * g.gain, 0), (0, 12), ha="center")
        lo, hi = 100 * min(g.low, 0), 100 * max(g.high, 0)
        if a.testable:
            span = (100 * a.claim_low, 100 * a.claim_high)
            ax.axvspan(*span, color=plotting.PALETTE[2], alpha=0.2, label="published range")
            lo, hi = min(lo, 100 * a.claim_low), max(hi, 100 * a.claim_high)
        pad = 0.15 * (hi - lo or 10)
        ax.set_xlim(lo - pad, hi + pad)
        plotting.legend(fig, fontsize=plotting.SMALL_PT)
    ax.set_ylim(-1, 1)
    return fig


def _minor(v: float, _: object) -> str:
    """Label the minor ticks of a log axis at 2, 3 and 5 times a power of ten only."""
    lead = round(v / 10 ** np.floor(np.log10(v))) if v > 0 else 0
    return f"{v:,.0f}" if lead in (2, 3, 5) else ""


def prefix_read_ceiling(a: Analysis) -> Figure:
    """The modelled new-token prefill ceiling (tok/s) against the cached prefix (tokens), per
    new tokens sharing one read of it, and the claim's prefix."""
    p = a.params
    fig, ax = plotting.axes(
        "cached prefix (tokens, log scale)",
        "new-token prefill ceiling (tok/s, log scale)",
        f"Modelled: {catalogs.as_model(p.model_id).name} on {p.prefill_gpus} x "
        f"{catalogs.as_gpu(p.gpu_id).label}, {p.kv_dtype.upper()} KV",
        layout="constrained",
        log="xy",
        fmt=",.0f",  # 100,000 rather than 10^5
    )
    for i, (r, c) in enumerate(a.curve.groupby("reuse")):
        label = f"{r:,} new {'token' if r == 1 else 'tokens'} per read of the prefix"
        ax.plot(c["prefix"], c["tok_s"], color=plotting.PALETTE[i], label=label)
    claim = f"claim: {a.claim_prefix:,} cached"
    ax.axvline(a.claim_prefix, color="0.4", ls="--", lw=0.8, label=claim)
    ax.yaxis.set_minor_formatter(FuncFormatter(_minor))
    plotting.legend(fig)
    return fig


#: The chapter's figures by glue name.
FIGURES = {
    "fig_distribution": throughput_distribution,
    "fig_gain": gain_interval,
    "fig_ceiling": prefix_read_ceiling,
}
