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


def _trace_copy(tmp_path, name: str, **run_changes):  # type: ignore[no-untyped-def]
    import json
    import shutil

    folder = tmp_path / name
    shutil.copytree(paths.DATA / "traces" / name, folder)
    run = json.loads((folder / "run.json").read_text())
    for k, v in run_changes.items():
        if v is None:
            run.pop(k, None)
        else:
            run[k] = v
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def test_check_trace_names_the_trace_a_chapter_cannot_read(tmp_path):
    """check_trace: a chapter reads its own scenario's trace (an imported one says none; expert
    loads make it eplb-balance's), never a published trace, nor one without requests (eplb
    reads expert loads only); the error names the folder and the field given."""
    import pandas as pd

    from rackbook.errors import InputError

    pg = _trace_copy(tmp_path, "prefill-gain")
    assert registry.check_trace("prefill-gain", pg)["record"]["scenario"] == "prefill-gain"
    assert registry.check_trace(None, pg)["trace_id"]
    with pytest.raises(
        InputError,
        match="prefill-gain: trace: a trace of scenario prefill-gain, not decode-parity: ",
    ):
        registry.check_trace("decode-parity", pg)
    with pytest.raises(InputError, match=r"--trace: a trace of scenario prefill-gain, not rack"):
        registry.check_trace("rack-scaling", pg, "--trace")
    published = paths.DATA / "published" / "mlperf-v6.1-dsr1"
    with pytest.raises(
        InputError,
        match=r"mlperf-v6.1-dsr1: trace: a published trace \(published points, no requests\)",
    ):
        registry.check_trace("rack-scaling", published)
    with pytest.raises(
        InputError, match="recorded or synthetic traces; `rackbook summarize` reads it"
    ):
        registry.check_trace(None, published, "x")
    imported = _trace_copy(tmp_path, "single-user", record=None)
    assert registry.check_trace("decode-parity", imported)  # it says no scenario: any chapter
    odd = _trace_copy(tmp_path, "context-latency", record="not a mapping")
    assert registry.check_trace("decode-parity", odd)
    eplb = _trace_copy(tmp_path, "eplb-balance", record=None)
    with pytest.raises(InputError, match="a trace of scenario eplb-balance, not decode-parity"):
        registry.check_trace("decode-parity", eplb)
    assert registry.check_trace("eplb-balance", eplb)
    req = pg / "requests.parquet"
    pd.read_parquet(req).head(0).to_parquet(req)
    with pytest.raises(
        InputError, match="prefill-gain: trace: no requests: an empty trace has nothing to measure"
    ):
        registry.check_trace("prefill-gain", pg)
    req = eplb / "requests.parquet"
    pd.read_parquet(req).head(0).to_parquet(req)
    assert registry.check_trace("eplb-balance", eplb)  # it reads the expert loads


def test_module_and_chapter_tables():
    assert registry.module("single-user").__name__ == "rackbook.results.single_user"
    assert registry.module("rack-scaling") is importlib.import_module(
        "rackbook.results.rack_scaling"
    )
    t = registry.ChapterTable("DECISIVE")
    assert t.attr == "DECISIVE" and "single-user.throughput" in t
    assert (
        t["single-user.throughput"]
        == registry.module("single-user").DECISIVE["single-user.throughput"]
    )
    assert dict(registry.ChapterTable("NO_SUCH_TABLE")) == {}
