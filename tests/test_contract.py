"""The six results keep one contract (rackbook.results.registry): the registry lists them in the
book's order, each a module with its name, ``Params``, ``analyse``, ``outcome`` and the figures
its chapter glues, drawn by the book's figures module of the same name; each analysis carries
its claims' readings as one type."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from rackbook import paths
from rackbook.results import REGISTRY, headline, registry


def test_the_registry_lists_the_six_results_in_the_books_order():
    assert list(REGISTRY) == list(paths.RESULTS)
    assert len(REGISTRY) == 6


@pytest.mark.parametrize("name", paths.RESULTS)
def test_each_result_keeps_the_contract(name):
    result = REGISTRY[name]
    assert isinstance(result, registry.Result)
    assert result.RESULT == name
    assert dataclasses.is_dataclass(result.Params)
    assert issubclass(result.Params, headline.Params)
    result.Params()  # every parameter has a default
    assert list(inspect.signature(result.analyse).parameters)[:3] == ["trace", "params", "registry"]
    assert list(inspect.signature(result.outcome).parameters) == ["a"]
    drawn = importlib.import_module(f"rackbook.book.figures.{name.replace('-', '_')}").FIGURES
    assert tuple(drawn) == result.FIGURES


@pytest.mark.parametrize("name", paths.RESULTS)
def test_each_analysis_carries_its_readings_as_one_type(shipped_chapter, name):
    an, out = shipped_chapter(name)
    assert isinstance(an, registry.Analysis)
    assert an.readings and all(isinstance(r, headline.ClaimReading) for r in an.readings)
    assert isinstance(out, headline.Outcome) and out.result == name
    assert out.readings == an.readings
    assert isinstance(an.values(), dict)


def test_a_module_without_the_contract_fails_the_check():
    from rackbook.results import verdicts

    assert not isinstance(verdicts, registry.Result)
    assert not isinstance(object(), registry.Analysis)
