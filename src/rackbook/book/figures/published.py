"""The published-evidence figure: each claim beside the measurements set against it."""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rackbook.book import plotting
from rackbook.book.chapter import finite
from rackbook.results import evidence

#: Marker styles of modelled prices, points of another basis and analogues.
_MODELLED = {"marker": "D", "facecolors": "none", "edgecolors": plotting.PALETTE[2]}
_OTHER = {"facecolors": "none", "edgecolors": plotting.PALETTE[0]}
_ANALOGUE = {"marker": "x", "color": plotting.PALETTE[1]}


def _points(rows: Any) -> Any:
    """Published measurements of the claim's quantity and analogues in its unit (drawn apart:
    they never decide)."""
    head = rows[rows["kind"] == "claim"]
    unit = str(head["unit"].iloc[0]) if len(head) else None
    pub = rows["kind"] == "published"
    keep = (rows["role"] == "measurement") | ((rows["role"] == "analogue") & (rows["unit"] == unit))
    return rows[pub & keep & rows["value"].map(finite)]


def _modelled(pts: Any) -> Any:
    """Which points are a modelled price of the figures registry (by source and value)."""
    from rackbook.inputs.claims import load_figures

    modelled = {(f.url, float(f.value)) for f in load_figures().figures if f.modelled}
    pairs = zip(pts["url"].astype(str), pts["value"].astype(float), strict=True)
    return np.array([p in modelled for p in pairs], dtype=bool)


def _scaled_readings(claim_id: str, value: float) -> list[tuple[str, float]]:
    """(legend text, value) of the claim's figure on each plausible basis that rescales it,
    one per distinct factor (:data:`rackbook.results.evidence.PLAUSIBLE`)."""
    out: dict[float, tuple[str, float]] = {}
    if not math.isfinite(value):
        return []
    for p in evidence.PLAUSIBLE.get(claim_id, ()):
        scale = float(getattr(p, "scale", 1.0))
        if scale != 1.0 and scale not in out:
            how = str(getattr(p, "conversion", "") or "rescaled").replace("the figure ", "")
            how = how.replace(", divided by its ", " / ")
            v = value * scale
            out[scale] = (f"{how}: {v:,.0f}" if v >= 100 else f"{how}: {v:.3g}", v)
    return list(out.values())


def claim_vs_published(result: str) -> Figure:
    """One panel per claim of ``result`` with published points in its unit (filled: the
    claim's basis; diamonds: modelled prices; hollow: another basis; crosses: analogues), log
    where they span over a decade, and the claim's figure as a line."""
    t = evidence.evidence_table(result)
    claims = []
    for cid, rows in t.groupby("claim_id", sort=False):
        head = rows[rows["kind"] == "claim"]
        pts = _points(rows)
        if len(pts) and len(head):
            claims.append((cid, head.iloc[0], pts))
    if not claims:
        raise ValueError(f"{result}: no published point in a claim's unit")
    size = (6.4, 1.4 + 1.15 * len(claims))
    fig, axes = plt.subplots(len(claims), 1, figsize=size, squeeze=False, layout="constrained")
    for ax, (_cid, head, pts) in zip(axes[:, 0], claims, strict=True):
        vals = pts["value"].astype(float).to_numpy()
        claim = float(head["value"]) if finite(head["value"]) else float("nan")
        used = pts["used"].to_numpy(bool)
        analogue = pts["role"].eq("analogue").to_numpy(bool)
        modelled = _modelled(pts)
        rng = np.random.default_rng(0)  # fixed jitter: points of equal value stay readable
        y = rng.uniform(-0.25, 0.25, len(vals))
        kinds = (  # a legend entry only for what is drawn; modelled prices shown apart
            (used & ~modelled, {"color": plotting.PALETTE[0]}, "published, same basis"),
            (used & modelled, _MODELLED, "modelled price (a cost model's rate)"),
            (~used & ~analogue, _OTHER, "published, another basis"),
            (analogue, _ANALOGUE, "analogue (never decides)"),
        )
        for mask, style, label in kinds:
            if mask.any():
                ax.scatter(vals[mask], y[mask], label=label, **style)
        if math.isfinite(claim):
            ax.axvline(claim, color=plotting.PALETTE[3], lw=2, label="the claim's figure")
        readings = _scaled_readings(_cid, claim)
        for text, v in readings:  # the figure on another basis the chapter reads it on
            ax.axvline(v, color=plotting.PALETTE[3], lw=2, ls="--", label=text)
        span = [v for v in (*vals, claim, *(v for _, v in readings)) if v > 0]  # NaN: none
        if span and max(span) / min(span) > 10:
            ax.set_xscale("log")
            # ticks at 1, 2 and 5 per decade over up to two decades, else one: never overlapping
            decades = math.log10(max(span) / min(span))
            subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
            big = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
            ax.xaxis.set_major_formatter(big)
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks([])
        ax.set_ylim(-0.6, 0.6)
        unit = str(head["unit"]).replace("$/", "USD per ").replace("$", "USD ")
        unit = {"1": "ratio", "": "ratio", "x": "ratio (x)"}.get(unit, unit)
        shown = str(head["as_published"]).replace("$", "USD ")
        ax.set_xlabel(f"{unit} (line: the claim's {shown})")
        ax.grid(axis="y", visible=False)
    axes[0, 0].set_title("The claim beside published measurements (published figures only)")
    seen: dict[str, Any] = {}
    for ax in axes[:, 0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    wide = max(map(len, seen), default=0) > 40  # two columns of long labels overflow the width
    ncols = 1 if wide else min(2, len(seen))
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=ncols)
    return fig
