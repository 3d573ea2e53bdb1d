"""Figures of the decode-parity chapter (data: :class:`rackbook.results.decode_parity.Analysis`)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from rackbook.book import plotting
from rackbook.results.decode_parity import Analysis

_BATCH = "batch size B (requests, log scale)"


def _frame(a: Analysis, fig: Figure, ax: Any, batches: Any) -> Figure:
    """A log2 batch axis ticked at the batch sizes (8, 16, ... not 2^3), the stand-in label
    when the trace cannot test the claim, and the legend."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({int(b) for b in batches}))
    ax.xaxis.set_major_formatter(plotting.ticks("g"))
    ax.set_xticks([], minor=True)
    if any(r.reading == "this run" and r.verdict == "untested" for r in a.readings):
        plotting.stand_in(ax, f"stand-in data: {a.hardware}, not the claim's GPUs")
    ax.legend(loc="best")
    return fig


def _by_engine(a: Analysis, column: str, y: str, title: str, log: str = "") -> Figure:
    """``column`` of both engines against batch size (legend: the engine, with its role when
    linear)."""
    fig, ax = plotting.axes(_BATCH, y, title, log=log)
    roles = {a.params.engine_a: "A: online server", a.params.engine_b: "B: offline batch"}
    for i, (eng, role) in enumerate(roles.items()):
        t = a.table[a.table["engine"] == eng]
        label = eng if log else f"{role} ({eng})"
        ax.plot(t["batch"], t[column], marker=plotting.MARKERS[i], label=label)
    return _frame(a, fig, ax, a.table["batch"])


def decode_throughput(a: Analysis) -> Figure:
    """Decode throughput (tok/s) of both engines against batch size."""
    heading = "Decode throughput against batch size"
    return _by_engine(a, "decode_tok_s", "decode throughput (tok/s)", heading)


def parity_ratio(a: Analysis) -> Figure:
    """Throughput ratio A/B for decode and prefill, with the claim's band around 1."""
    y = "throughput ratio A/B (online / offline)"
    fig, ax = plotting.axes(_BATCH, y, "Online over offline, with the claim's band")
    band, label = a.band_pct / 100, f"claim: within +/-{a.band_pct:g} %"
    ax.axhspan(1 - band, 1 + band, color=plotting.PALETTE[2], alpha=0.15, label=label)
    ax.axhline(1, color="0.4", lw=0.8)
    ax.plot(a.decode["batch"], a.decode["ratio"], marker="o", label="decode A/B")
    ax.plot(a.prefill["batch"], a.prefill["ratio"], marker="s", ls="--", label="prefill A/B")
    return _frame(a, fig, ax, a.decode["batch"])


def prefill_throughput(a: Analysis) -> Figure:
    """Prefill throughput (prompt tok/s of TTFT) of both engines against batch size."""
    heading = "The prefill side: prompt tokens per second of TTFT"
    return _by_engine(a, "prefill_tok_s", "prefill throughput (tok/s, log)", heading, "y")


#: The chapter's figures by glue name.
FIGURES = {
    "fig_decode": decode_throughput,
    "fig_ratio": parity_ratio,
    "fig_prefill": prefill_throughput,
}
