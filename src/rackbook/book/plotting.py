"""One plotting style for the whole book: colour-blind-safe palette, labelled axes with units."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np

#: Okabe & Ito (2008) colour-blind-safe palette.
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # green
    "#D55E00",  # vermillion
    "#CC79A7",  # purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")


def apply_style() -> None:
    """Set the book's display defaults (call once at the top of a notebook): matplotlib's
    style, and numpy scalars shown as plain numbers (``1.5``, not ``np.float64(1.5)``), which
    is what myst-nb's ``glue`` needs to format them in prose."""
    np.set_printoptions(legacy="1.25")
    mpl.rcParams.update(
        {
            "figure.figsize": (7.0, 4.2),
            "figure.dpi": 110,
            "savefig.bbox": "tight",
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": mpl.cycler(color=PALETTE),
            "legend.frameon": False,
            "font.size": 10,
        }
    )


def label(ax: Any, x: str, y: str, title: str | None = None) -> Any:
    """Label axes; ``x`` and ``y`` must carry units, e.g. ``"batch size (requests)"``."""
    if "(" not in x or "(" not in y:
        raise ValueError(f"axis labels need units in parentheses: {x!r}, {y!r}")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if title:
        ax.set_title(title)
    return ax
