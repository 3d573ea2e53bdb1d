"""The chapter template (``book/_template/chapter.ipynb``, CONTRIBUTING.md "Add a chapter")
keeps the shape every chapter must have, so that a chapter copied from it passes
``tests/test_notebooks.py`` once its placeholders are filled; and it stays out of the book build
and out of the executed notebooks (it imports a result that does not exist)."""

from __future__ import annotations

import json

import test_notebooks as shape
import yaml

from rackbook import paths

TEMPLATE = paths.ROOT / "book" / "_template" / "chapter.ipynb"


def test_template_has_a_chapter_shape():
    shape.test_stored_without_outputs_and_parameters_first(TEMPLATE)
    shape.test_thin(TEMPLATE)
    shape.test_chapter_shape(TEMPLATE)


def test_template_placeholders_are_the_documented_ones():
    """Every placeholder CONTRIBUTING.md tells a contributor to replace, and no real result."""
    text = TEMPLATE.read_text()
    for placeholder in ("NAME", "my_result", "TITLE", "TODO"):
        assert placeholder in text, placeholder
    code = "".join("".join(c["source"]) for c in json.loads(text)["cells"])
    assert not any(f'"{r}"' in code for r in paths.RESULTS)
    contributing = (paths.ROOT / "CONTRIBUTING.md").read_text()
    assert "book/_template/chapter.ipynb" in contributing


def test_template_is_neither_built_nor_executed():
    config = yaml.safe_load((paths.ROOT / "_config.yml").read_text())
    assert "book/_template" in config["exclude_patterns"]
    toc = (paths.ROOT / "_toc.yml").read_text()
    assert "_template" not in toc
    assert TEMPLATE.parent != paths.NOTEBOOKS  # the nbmake run copies notebooks/*.ipynb
