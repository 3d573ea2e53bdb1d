"""The book's plotting style: colour-blind-safe palette, axes labelled with units, text sized
for a figure shown at the column's full width (laptop and phone)."""

from __future__ import annotations

import io
from typing import Any

import matplotlib as mpl
import numpy as np
from cycler import cycler

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

#: Body text of a figure (axis labels, titles), in points.
TEXT_PT = 11.0
#: The smallest text (ticks, legends, notes), in points: >= 11 CSS px in a 1,400 px window for a
#: figure at most :data:`MAX_WIDTH_IN` wide.
SMALL_PT = 10.0
#: Widest a saved figure may be, in inches (wider ones shrink their text below the above).
MAX_WIDTH_IN = 6.6
#: Pixels per inch of the book's PNGs (about twice the column's width).
RENDER_DPI = 200
#: PNG text keys: the smallest font (pt) and the dpi, to turn points into CSS pixels.
META_MIN_PT = "rackbook:min-font-pt"
META_DPI = "rackbook:dpi"


def apply_style() -> None:
    """Set the book's matplotlib style and plain numpy scalar printing (for ``glue``)."""
    np.set_printoptions(legacy="1.25")
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 3.5),
            "figure.dpi": 110,
            "savefig.bbox": "tight",
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": cycler(color=PALETTE),
            "legend.frameon": False,
            "font.size": TEXT_PT,
            "axes.titlesize": TEXT_PT,
            "axes.labelsize": TEXT_PT,
            "figure.titlesize": TEXT_PT,
            "xtick.labelsize": SMALL_PT,
            "ytick.labelsize": SMALL_PT,
            "legend.fontsize": SMALL_PT,
        }
    )


def figure_png(fig: Any, dpi: int = RENDER_DPI) -> bytes:
    """The figure as the book's PNG at ``dpi``, its smallest visible font (pt) and dpi in PNG
    text (:data:`TEXT_PT` when it draws no text)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    sizes = [
        float(t.get_fontsize())
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.figure is not None
    ]
    meta = {META_MIN_PT: f"{min(sizes, default=TEXT_PT):g}", META_DPI: str(dpi)}
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=meta)
    return buf.getvalue()


def png_facts(data: bytes) -> dict[str, float]:
    """Width (px) of a PNG and the two text entries :func:`figure_png` writes (``min_pt``,
    ``dpi``; absent when the PNG has none)."""
    from PIL import Image

    with Image.open(io.BytesIO(data), formats=["PNG"]) as im:
        text = getattr(im, "text", {})
        out: dict[str, float] = {"width": im.width}
    for key, name in ((META_MIN_PT, "min_pt"), (META_DPI, "dpi")):
        if key in text:
            out[name] = float(text[key])
    return out


def rendered_font_px(facts: dict[str, float], shown_width_px: float) -> float:
    """CSS pixels of a figure's smallest text when its PNG (:func:`png_facts`) is shown
    ``shown_width_px`` wide: points at the PNG's dpi, scaled by shown / natural width."""
    return facts["min_pt"] / 72 * facts["dpi"] * shown_width_px / facts["width"]


def label(ax: Any, x: str, y: str | None, title: str | None = None) -> Any:
    """Label axes; ``x`` and ``y`` must carry units, e.g. ``"batch size (requests)"``; ``y``
    None: a panel without a y axis (no ticks, no horizontal grid)."""
    if "(" not in x or (y is not None and "(" not in y):
        raise ValueError(f"axis labels need units in parentheses: {x!r}, {y!r}")
    ax.set_xlabel(x)
    if y is None:
        ax.set_yticks([])
        ax.grid(axis="y", visible=False)
    else:
        ax.set_ylabel(y)
    if title:
        ax.set_title(title)
    return ax


def ticks(spec: str) -> Any:
    """A tick formatter writing values with format ``spec`` (``g``: 0.5, 2, 100)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: format(v, spec))


def axes(
    x: str, y: str | None, title: str | None = None, log: str = "", fmt: str = "", **kw: Any
) -> tuple[Any, Any]:
    """A one-panel figure (``kw``: ``pyplot.subplots``', e.g. ``figsize`` in inches) labelled
    by :func:`label`; ``log``: the axes (``x``, ``y``, ``xy``) on a log scale, their ticks
    written with format ``fmt``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(**kw)
    for a in log:
        getattr(ax, f"set_{a}scale")("log")
        if fmt:
            getattr(ax, f"{a}axis").set_major_formatter(ticks(fmt))
    return fig, label(ax, x, y, title)


def legend(where: Any, below: float | None = None, *args: Any, **kw: Any) -> Any:
    """A legend under the axes (``below``: its top in axes fraction) or, for a figure,
    under the panels; one column unless ``ncols``."""
    kw.setdefault("ncols", 1)
    if below is not None:
        return where.legend(*args, loc="upper center", bbox_to_anchor=(0.5, below), **kw)
    return where.legend(*args, loc="outside lower center", **kw)


def note(ax: Any, text: str, xy: Any, offset: tuple[float, float], **kw: Any) -> Any:
    """``text`` at ``offset`` points from ``xy``, at :data:`SMALL_PT` unless ``fontsize``."""
    kw.setdefault("fontsize", SMALL_PT)
    return ax.annotate(text, xy, textcoords="offset points", xytext=offset, **kw)


def stand_in(ax: Any, text: str) -> None:
    """Mark a panel drawn from stand-in data with ``text`` in a grey box, top left."""
    box = {"boxstyle": "square,pad=0.25", "fc": "0.93", "ec": "0.6", "lw": 0.6}
    where = {"transform": ax.transAxes, "ha": "left", "va": "top", "zorder": 10}
    ax.text(0.01, 0.98, text, fontsize=SMALL_PT, color="0.25", bbox=box, **where)
