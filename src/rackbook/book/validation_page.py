"""The generated part of the page "How well does rackbook predict?": the held-out validation
(:mod:`rackbook.results.validation`) as tables and a predicted-against-measured figure."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from rackbook.book import plotting
from rackbook.book.report import render
from rackbook.core.fsio import atomic_write_bytes, atomic_write_text
from rackbook.physics import expected as exp_mod
from rackbook.results import validation

#: How many of the largest misses the page names.
OUTLIERS = 6


def report() -> dict[str, Any]:
    """``rackbook validate --json``'s report (held out by source) with the excluded points."""
    points, excluded = validation.load()
    rep = validation.report(points, exp_mod.load_fit())
    rep["excluded"] = [{"id": x.id, "source": x.source, "reason": x.reason} for x in excluded]
    rep["notes"] = {p.id: p.note for p in points}
    return rep


def _group(rep: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for name in sorted({str(p[key]) for p in rep["points"]}):
        preds = [p for p in rep["points"] if str(p[key]) == name]
        r = np.array([p["ratio"] for p in preds])
        s = {
            "points": len(r),
            "median_ratio": float(np.median(r)),
            "within_2x": float(np.mean((r >= 0.5) & (r <= 2))),
            "inside": float(np.mean([p["inside"] for p in preds])),
        }
        rows.append((name, s))
    return rows


def page(rep: dict[str, Any]) -> str:
    """The page's generated tables from ``rep`` (:func:`report`)."""
    fit = rep["fit"]
    has_band = "log_low" in fit and "log_high" in fit
    keys = {"decoding batch per GPU": "band", "GPU": "gpu", "source": "source"}
    return render(
        "validation.md.j2",
        rep=rep,
        fit=fit,
        band=(math.exp(fit["log_low"]), math.exp(fit["log_high"])) if has_band else None,
        all_text=exp_mod.held_out_text(rep["all"]),
        groups={title: _group(rep, key) for title, key in keys.items()},
        worst=sorted(rep["points"], key=lambda p: -abs(math.log(p["ratio"])))[:OUTLIERS],
    )


def figure(rep: dict[str, Any]) -> bytes:
    """Predicted against measured (tok/s per GPU, log axes), one marker per source, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plotting.apply_style()
    fig, ax = plt.subplots(figsize=(plotting.MAX_WIDTH_IN, 4.6))
    pts = rep["points"]
    lo = min(min(p["measured"], p["expected"]) for p in pts) / 2
    hi = max(max(p["measured"], p["expected"]) for p in pts) * 2
    xs = np.geomspace(lo, hi, 50)
    ax.fill_between(xs, xs / 2, xs * 2, color="0.9", label="within 2x")
    ax.plot(xs, xs, color="0.3", lw=1, label="measured = expected")
    for i, src in enumerate(sorted({p["source"] for p in pts})):
        mine = [p for p in pts if p["source"] == src]
        marker = plotting.MARKERS[i % len(plotting.MARKERS)]
        colour = plotting.PALETTE[i % len(plotting.PALETTE)]
        xy = [p["expected"] for p in mine], [p["measured"] for p in mine]
        ax.scatter(*xy, marker=marker, color=colour, label=src, s=28)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    plotting.label(ax, "expected, held out (tok/s per GPU)", "measured (tok/s per GPU)")
    ax.legend(fontsize=plotting.SMALL_PT, loc="upper left", ncol=2)
    data = plotting.figure_png(fig)
    plt.close(fig)
    return data


def generate(folder: Path) -> list[Path]:
    """Write ``validation.md`` and ``validation.png`` into ``folder``."""
    rep = report()
    return [
        atomic_write_text(folder / "validation.md", page(rep)),
        atomic_write_bytes(folder / "validation.png", figure(rep)),
    ]
