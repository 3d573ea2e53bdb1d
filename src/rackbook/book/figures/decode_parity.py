"""Figures of the decode-parity chapter (data: :class:`rackbook.results.decode_parity.Analysis`)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

from rackbook.book import plotting
from rackbook.results.decode_parity import Analysis


def _batch_axis(ax: Any, batches: Any) -> None:
    """A log2 batch axis ticked at the batch sizes, written 8, 16, ... (not 2^3, 2^4)."""
    ticks = sorted({int(b) for b in batches})
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    ax.xaxis.set_major_formatter(fmt)


def _mark(ax: Any, a: Analysis) -> None:
    """The in-image stand-in label when the trace cannot test the claim."""
    if any(r.reading == "this run" and r.verdict == "untested" for r in a.readings):
        plotting.stand_in(ax, f"stand-in data: {a.hardware}, not the claim's GPUs")


def _engines(a: Analysis) -> list[tuple[str, str]]:
    return [(a.params.engine_a, "A: online server"), (a.params.engine_b, "B: offline batch")]


def _by_engine(a: Analysis, column: str, labels: list[str], y: str, title: str) -> Figure:
    """``column`` of both engines (legend ``labels``) against batch size."""
    fig, ax = plt.subplots()
    for i, ((eng, _), label) in enumerate(zip(_engines(a), labels, strict=True)):
        t = a.table[a.table["engine"] == eng]
        ax.plot(t["batch"], t[column], marker=plotting.MARKERS[i], label=label)
    _batch_axis(ax, a.table["batch"])
    ax.set_yscale("log" if column == "prefill_tok_s" else "linear")
    plotting.label(ax, "batch size B (requests, log scale)", y, title)
    _mark(ax, a)
    ax.legend(loc="best")
    return fig


def decode_throughput(a: Analysis) -> Figure:
    """Decode throughput (tok/s) of both engines against batch size."""
    labels = [f"{label} ({eng})" for eng, label in _engines(a)]
    heading = "Decode throughput against batch size"
    return _by_engine(a, "decode_tok_s", labels, "decode throughput (tok/s)", heading)


def parity_ratio(a: Analysis) -> Figure:
    """Throughput ratio A/B for decode and prefill, with the claim's band around 1."""
    fig, ax = plt.subplots()
    band = a.band_pct / 100
    ax.axhspan(
        1 - band,
        1 + band,
        color=plotting.PALETTE[2],
        alpha=0.15,
        label=f"claim: within +/-{a.band_pct:g} %",
    )
    ax.axhline(1, color="0.4", lw=0.8)
    ax.plot(a.decode["batch"], a.decode["ratio"], marker="o", label="decode A/B")
    ax.plot(a.prefill["batch"], a.prefill["ratio"], marker="s", ls="--", label="prefill A/B")
    _batch_axis(ax, a.decode["batch"])
    plotting.label(
        ax,
        "batch size B (requests, log scale)",
        "throughput ratio A/B (online / offline)",
        "Online over offline, with the claim's band",
    )
    _mark(ax, a)
    ax.legend(loc="best")
    return fig


def prefill_throughput(a: Analysis) -> Figure:
    """Prefill throughput (prompt tok/s of TTFT) of both engines against batch size."""
    labels = [eng for eng, _ in _engines(a)]
    heading = "The prefill side: prompt tokens per second of TTFT"
    return _by_engine(a, "prefill_tok_s", labels, "prefill throughput (tok/s, log)", heading)


#: The chapter's figures by glue name.
FIGURES = {
    "fig_decode": decode_throughput,
    "fig_ratio": parity_ratio,
    "fig_prefill": prefill_throughput,
}
