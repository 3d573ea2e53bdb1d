"""Notebooks are stored clean, parameterised, thin; the runner executes them with papermill."""

from __future__ import annotations

import json

import pytest

from rackbook import paths

NOTEBOOKS = sorted(paths.NOTEBOOKS.glob("*.ipynb"))


def test_every_result_name_is_known():
    assert NOTEBOOKS, "no notebooks"
    assert {p.stem for p in NOTEBOOKS} <= set(paths.RESULTS)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_without_outputs_and_parameters_first(nb):
    doc = json.loads(nb.read_text())
    code = [c for c in doc["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert "parameters" in code[0].get("metadata", {}).get("tags", [])
    first = "".join(code[0]["source"])
    assert 'source = "trace"' in first and "out_dir =" in first
    last = "".join(code[-1]["source"])
    assert ".write(" in last or "write_result(" in last


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_thin_no_function_or_class_definitions(nb):
    doc = json.loads(nb.read_text())
    for c in doc["cells"]:
        if c["cell_type"] == "code":
            src = "".join(c["source"])
            assert "\ndef " not in "\n" + src and "\nclass " not in "\n" + src, nb.name
