"""Every figure of the book is drawn for the text column's full width: its saved PNG is at most
:data:`plotting.MAX_WIDTH_IN` wide and its smallest text at least :data:`plotting.SMALL_PT`
(the browser test measures the same figures as Chromium lays them out); every legend entry
names something drawn (never an empty series)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

from rackbook import paths
from rackbook.book import plotting
from rackbook.book.figures import published
from rackbook.core import traces
from rackbook.results import REGISTRY


def _figures():
    """(result, name, maker) for every figure a chapter draws on its shipped trace."""
    out = []
    for r in paths.RESULTS:
        mod = r.replace("-", "_")
        figures = importlib.import_module(f"rackbook.book.figures.{mod}")
        out += [pytest.param(r, n, m, id=f"{r}-{n}") for n, m in figures.FIGURES.items()]
        if "claim_vs_published(" in (paths.NOTEBOOKS / f"{r}.ipynb").read_text(encoding="utf-8"):
            out.append(pytest.param(r, "fig_published", None, id=f"{r}-fig_published"))
    return out


_ANALYSES: dict[str, object] = {}


def _analysis(result: str):  # type: ignore[no-untyped-def]
    if result not in _ANALYSES:
        _ANALYSES[result] = REGISTRY[result].analyse(traces.read_trace(paths.TRACES / result))
    return _ANALYSES[result]


@pytest.mark.parametrize(("result", "name", "make"), _figures())
def test_a_figure_is_drawn_for_the_column(result, name, make):
    matplotlib.use("Agg")
    plotting.apply_style()
    fig = published.claim_vs_published(result) if make is None else make(_analysis(result))
    data = plotting.figure_png(fig)
    assert undrawn_legend_entries(fig) == [], (result, name)
    plt.close(fig)
    if os.environ.get("RACKBOOK_FIGURE_DIR"):  # to look at them by hand
        Path(os.environ["RACKBOOK_FIGURE_DIR"], f"{result}-{name}.png").write_bytes(data)
    facts = plotting.png_facts(data)
    width_in = facts["width"] / facts["dpi"]
    assert facts["min_pt"] >= plotting.SMALL_PT, (result, name, facts)
    assert width_in <= plotting.MAX_WIDTH_IN + 0.05, (result, name, round(width_in, 2))
    # shown at a 1,400 px window's column (about 770 px) the smallest text is >= 11 px
    assert plotting.rendered_font_px(facts, 770) >= 11


def _drawn(artist) -> bool:  # type: ignore[no-untyped-def]
    """Whether an artist puts something on the panel: a line with points, a collection with
    offsets or paths, a patch, a bar container with bars."""
    from matplotlib.collections import Collection, PathCollection
    from matplotlib.container import Container
    from matplotlib.lines import Line2D

    if isinstance(artist, Line2D):
        return len(artist.get_xdata()) > 0
    if isinstance(artist, PathCollection):  # a scatter: its points
        return len(artist.get_offsets()) > 0
    if isinstance(artist, Collection):
        return len(artist.get_offsets()) > 0 or len(artist.get_paths()) > 0
    if isinstance(artist, Container):
        return len(artist) > 0
    return artist.get_visible()


def undrawn_legend_entries(fig) -> list[str]:  # type: ignore[no-untyped-def]
    """Each legend entry of ``fig`` (axes' and figure legends) that no drawn artist of the
    figure carries: a label whose points are empty, or a label with no artist at all."""
    drawn: set[str] = set()
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    for ax in fig.axes:
        for a in [*ax.get_children(), *ax.containers]:
            if _drawn(a):
                drawn.add(str(a.get_label()))
    return [
        t.get_text()
        for leg in legends
        if leg is not None
        for t in leg.get_texts()
        if t.get_text() not in drawn
    ]


def test_a_legend_entry_with_no_points_is_found():
    matplotlib.use("Agg")
    fig, ax = plt.subplots()
    ax.scatter([], [], label="never drawn")
    ax.plot([1, 2], [1, 2], label="a line")
    ax.legend()
    assert undrawn_legend_entries(fig) == ["never drawn"]
    plt.close(fig)


def test_png_facts_read_what_figure_png_writes():
    matplotlib.use("Agg")
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlabel("x (s)", fontsize=7)
    facts = plotting.png_facts(plotting.figure_png(fig, dpi=100))
    plt.close(fig)
    assert facts["min_pt"] == 7 and facts["dpi"] == 100 and 300 < facts["width"] <= 400
    assert plotting.rendered_font_px(facts, facts["width"] * 2) == pytest.approx(7 / 72 * 200)
