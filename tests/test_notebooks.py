"""Notebooks are stored clean, parameterised and thin: they narrate, call rackbook and plot.

Limits (the design's): at most 150 non-blank code lines per notebook and 20 per code cell, the
parameters cell included; no function or class defined in a cell; the first code cell holds the
parameters, the last one writes the chapter's outcome (its headline JSON).
"""

from __future__ import annotations

import json

import pytest

from rackbook import paths

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("*.ipynb"))
MAX_LINES, MAX_CELL = 150, 20


def _code(nb):
    doc = json.loads(nb.read_text())
    return [c for c in doc["cells"] if c["cell_type"] == "code"]


def _lines(cell) -> int:
    return sum(1 for line in "".join(cell["source"]).splitlines() if line.strip())


def test_every_result_has_its_notebook():
    assert {p.stem for p in NOTEBOOKS} == set(paths.RESULTS)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_without_outputs_and_parameters_first(nb):
    code = _code(nb)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert "parameters" in code[0].get("metadata", {}).get("tags", [])
    first = "".join(code[0]["source"])
    assert 'source = "trace"' in first and "out_dir =" in first
    last = "".join(code[-1]["source"])
    assert ".write(" in last


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_thin(nb):
    code = _code(nb)
    sizes = [_lines(c) for c in code]
    assert sum(sizes) <= MAX_LINES, f"{sum(sizes)} code lines"
    assert max(sizes) <= MAX_CELL, f"a cell of {max(sizes)} lines"
    for c in code:
        src = "\n" + "".join(c["source"])
        assert "\ndef " not in src and "\nclass " not in src, nb.name


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_published_number_typed_in_the_notebook(nb):
    """Published claim figures reach a chapter only from the claims registry (glued)."""
    from rackbook.inputs.claims import load_claims

    text = nb.read_text()
    for c in load_claims().for_result(nb.stem):
        figures = [c.value] if c.value is not None else [c.values.low, c.values.high]
        for x in figures:
            for shown in {f"{x:g}", f"{x:,.0f}", f"{int(x)}" if float(x).is_integer() else None}:
                if shown and len(shown.replace(",", "").replace(".", "")) >= 2:
                    assert f" {shown} " not in text and f"{shown} %" not in text, (c.id, shown)


HIDDEN = {"remove-input", "remove-cell", "hide-input"}
MAX_VISIBLE = 40


def _markdown(nb) -> str:
    doc = json.loads(nb.read_text())
    return "\n".join("".join(c["source"]) for c in doc["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chapter_shape(nb):
    """A chapter a reader can follow: little visible code, the book's sections, an admonition,
    and every figure placed with a label and a caption (myst-nb glue figures)."""
    visible = [
        c for c in _code(nb) if not HIDDEN & set(c.get("metadata", {}).get("tags", []))
    ]  # fmt: skip
    assert sum(_lines(c) for c in visible) <= MAX_VISIBLE
    md = _markdown(nb)
    for section in ("## How to read it", "## The evidence", "## Verdict", "## Summary",
                    "## Rerun it on your cluster", "## What's next"):  # fmt: skip
        assert section in md, section
    assert ":::{note}" in md or ":::{warning}" in md or ":::{admonition}" in md
    assert "```{margin}" in md  # a short aside in the margin, as the admired books have
    assert "rerun.card(" in "".join("".join(c["source"]) for c in _code(nb))  # the rerun card
    figures = md.count("{glue:figure}")
    assert figures >= 1 and md.count(":name: fig-") == figures
    assert md.count("{numref}`fig-") >= figures  # every figure is referenced from the text
    assert "plt.show()" not in "".join("".join(c["source"]) for c in _code(nb))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_parameter_defaults_match_the_analysis(nb):
    """A notebook's parameters cell is what papermill passes to ``Params.from_mapping``, and
    ``Params`` is made from that cell by rackbook's own reader: a default the two read apart (a
    GPU id, a tolerance) would silently change the chapter. Each has the same default."""
    import ast
    import dataclasses

    import papermill

    from rackbook.results import REGISTRY

    declared = papermill.inspect_notebook(str(nb))
    params = REGISTRY[nb.stem].Params
    for f in dataclasses.fields(params):
        if f.name not in declared:
            continue
        got = ast.literal_eval(declared[f.name]["default"])
        want = f.default
        if isinstance(want, tuple):
            want = list(want)
        assert got == want, f"{nb.stem}: {f.name} = {got!r} in the notebook, {want!r} in Params"
