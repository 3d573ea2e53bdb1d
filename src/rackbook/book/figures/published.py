"""The published-evidence figure every chapter with published points can show: each claim's
figure beside the independent measurements set against it (data:
:func:`rackbook.results.evidence.evidence_table`)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rackbook.book import plotting
from rackbook.results import evidence


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(float(x))


def has_points(result: str) -> bool:
    """True when some claim of ``result`` has a published point in its own unit."""
    t = evidence.evidence_table(result)
    return bool(len(_points(t)))


def _points(rows):  # type: ignore[no-untyped-def]
    """Published measurements of the claim's own quantity (analogues and context rows measure
    something else and are never drawn on the claim's axis)."""
    return rows[(rows["kind"] != "claim") & (rows["role"] == "measurement")
                & rows["value"].map(_finite)]  # fmt: skip


def claim_vs_published(result: str) -> Figure:
    """One panel per claim of ``result`` that has published points in its unit: the points
    (filled: used by the published reading; hollow: shown, not comparable enough to decide it)
    on a log axis where they span more than a decade, and the claim's figure as a line."""
    t = evidence.evidence_table(result)
    claims = []
    for cid, rows in t.groupby("claim_id", sort=False):
        head = rows[rows["kind"] == "claim"]
        pts = _points(rows)
        if len(pts) and len(head):
            claims.append((cid, head.iloc[0], pts))
    if not claims:
        raise ValueError(f"{result}: no published point in a claim's unit")
    fig, axes = plt.subplots(len(claims), 1, figsize=(7.0, 1.3 + 1.25 * len(claims)), squeeze=False)
    for ax, (_cid, head, pts) in zip(axes[:, 0], claims, strict=True):
        vals = pts["value"].astype(float).to_numpy()
        claim = float(head["value"]) if _finite(head["value"]) else float("nan")
        used = pts["used"].to_numpy(bool)
        rng = np.random.default_rng(0)  # fixed jitter: points of equal value stay readable
        y = rng.uniform(-0.25, 0.25, len(vals))
        ax.scatter(vals[used], y[used], color=plotting.PALETTE[0], label="published, used")
        ax.scatter(
            vals[~used], y[~used], facecolors="none", edgecolors=plotting.PALETTE[0],
            label="published, not comparable enough",
        )  # fmt: skip
        if math.isfinite(claim):
            ax.axvline(claim, color=plotting.PALETTE[3], lw=2, label="the claim's figure")
        span = np.concatenate([vals, [claim] if math.isfinite(claim) else []])
        span = span[span > 0]
        if len(span) and span.max() / span.min() > 10:
            ax.set_xscale("log")
            # a span of one or two decades gets ticks at 1, 2 and 5 per decade (several labels,
            # not one); a wider span one per decade, so that the labels never overlap
            decades = math.log10(span.max() / span.min())
            subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
            ax.xaxis.set_major_formatter(
                FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
            )
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks([])
        ax.set_ylim(-0.6, 0.6)
        unit = str(head["unit"]) if head["unit"] not in ("1", "") else "ratio"
        unit = unit.replace("$/", "USD per ").replace("$", "USD ")
        unit = "ratio (x)" if unit == "x" else unit
        shown = str(head["as_published"]).replace("$", "USD ")
        ax.set_xlabel(f"{unit}: the claim's {shown} (line) beside published points")
        ax.grid(axis="y", visible=False)
    axes[0, 0].set_title("The claim beside published measurements (published figures only)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
