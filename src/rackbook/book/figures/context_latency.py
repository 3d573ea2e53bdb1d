"""Figures of the context-latency chapter (data:
:class:`rackbook.results.context_latency.Analysis`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.inputs import catalogs
from rackbook.results.context_latency import Analysis

_LINES = ["-", "--", ":"]


def kv_per_sequence(a: Analysis) -> Figure:
    """Global KV bytes of one sequence (GB) against context length, at every KV dtype, with the
    claimed pair of contexts marked."""
    fig, ax = plt.subplots()
    for i, d in enumerate(catalogs.PRECISIONS):
        t = a.memory[d]
        ax.plot(
            t["context_tokens"] / 1e3,
            t["kv_bytes_per_sequence"] / 1e9,
            ls=_LINES[i],
            label=f"{d}: {a.kv_bytes[d].bytes_per_token} B/token",
        )
    for c in (a.lo, a.hi):
        ax.axvline(c / 1e3, color="0.5", lw=0.8)
        y = a.at.loc[c, "kv_bytes_per_sequence"] / 1e9
        ax.plot([c / 1e3], [y], "o", color=plotting.PALETTE[0])
        ax.annotate(
            f"{c / 1e3:,.0f}k: {y * 1e3:,.0f} MB",
            (c / 1e3, y),
            textcoords="offset points",
            xytext=(6, 6),
        )
    plotting.label(
        ax,
        "context (thousand tokens)",
        "global KV per sequence (GB)",
        "Global KV cache of one sequence against context length",
    )
    ax.legend()
    return fig


def sequences_per_gpu(a: Analysis) -> Figure:
    """Sequences whose KV fits on one GPU after the weights (log) against context length, at
    every KV dtype."""
    fig, ax = plt.subplots()
    for i, d in enumerate(catalogs.PRECISIONS):
        t = a.memory[d]
        ax.plot(t["context_tokens"] / 1e3, t["sequences_per_gpu"], ls=_LINES[i], label=d)
    for c in (a.lo, a.hi):
        ax.axvline(c / 1e3, color="0.5", lw=0.8)
        n = a.at.loc[c, "sequences_per_gpu"]
        ax.annotate(
            f"{n:,} at {c / 1e3:,.0f}k", (c / 1e3, n), textcoords="offset points", xytext=(6, 6)
        )
    ax.set_yscale("log")
    plotting.label(
        ax,
        "context (thousand tokens)",
        "KV fits per GPU (sequences, log)",
        f"Sequences per {a.hw.name.split(' (')[0]} after the weights",
    )
    ax.legend()
    return fig


def decode_latency(a: Analysis) -> Figure:
    """The trace's median TPOT and ITL (ms) against context length, the linear fit and the pair
    the delta is taken between."""
    s, f, d = a.series, a.fit, a.measured
    fig, ax = plt.subplots()
    x = s["context_tokens"].to_numpy(float)
    ax.plot(x, s["median_tpot_ms"], "o", label="median TPOT per point")
    ax.plot(x, s["median_itl_ms"], "s", mfc="none", label="median ITL per point")
    xs = np.linspace(x.min(), x.max(), 50)
    ax.plot(
        xs,
        f.predict(xs),
        "-",
        color=plotting.PALETTE[3],
        label=f"fit: {f.intercept_ms:.3g} ms + {f.slope_per_1k:.3g} ms per 1k tokens",
    )
    ax.plot(
        [d.lo, d.hi],
        [d.lo_ms, d.hi_ms],
        "D",
        color=plotting.PALETTE[2],
        ms=9,
        mfc="none",
        label=f"pair for the delta: {d.delta_ms:+.3g} ms",
    )
    plotting.label(
        ax,
        "context (tokens)",
        "decode latency (ms per token)",
        f"Decode latency against context ({a.trace.kind}, {a.hardware})",
    )
    ax.legend()
    return fig


def kv_read_floor(a: Analysis) -> Figure:
    """Extra time per decode step (ms) that KV reads take against sequences per GPU, each
    growing from lo to hi tokens, with the claimed delta and its tolerance as a band."""
    fl, p = a.floor, a.params
    per_seq_ms = fl.floor_ms / p.batch
    n = np.arange(1, max(12, int(np.ceil(2 * fl.sequences_to_explain))) + 1)
    claim, tol = fl.claim_ms, a.tolerance_ms
    fig, ax = plt.subplots()
    ax.axhspan(
        claim - tol,
        claim + tol,
        color=plotting.PALETTE[1],
        alpha=0.25,
        label=f"claim: +{claim:g} ms (+/-{tol:g})",
    )
    ax.plot(
        n,
        n * per_seq_ms,
        "o-",
        ms=4,
        label=f"KV-read floor: n x {1000 * per_seq_ms:.3g} us ({p.kv_dtype}, {p.n_gpus} GPU(s))",
    )
    ax.plot(
        n,
        n * per_seq_ms * a.idx_share,
        "--",
        color=plotting.PALETTE[4],
        label="of which indexer keys",
    )
    ax.axvline(fl.sequences_to_explain, color="0.5", lw=0.8)
    ax.annotate(
        f"{fl.sequences_to_explain:.1f} sequences reach the claim",
        (fl.sequences_to_explain, 0),
        textcoords="offset points",
        xytext=(6, 4),
    )
    lo, hi = a.lo / 1e3, a.hi / 1e3
    plotting.label(
        ax,
        f"sequences per GPU, each growing {lo:,.0f}k -> {hi:,.0f}k tokens (sequences)",
        "extra time per decode step (ms)",
        f"Extra KV reads from {lo:,.0f}k to {hi:,.0f}k tokens, at "
        f"{a.hw.hbm_bandwidth_bytes_per_s / 1e12:g} TB/s",
    )
    ax.legend()
    return fig
