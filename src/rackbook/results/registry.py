"""A chapter's contract (:class:`Result`, :class:`Analysis`), its module, the tables chapters
declare (:class:`ChapterTable`) and what trace a chapter can read (:func:`check_trace`)."""

from __future__ import annotations

import functools
import importlib
from collections import UserDict
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rackbook.core import traces
from rackbook.errors import InputError
from rackbook.inputs.claims import Registry
from rackbook.paths import RESULTS
from rackbook.results import headline


@runtime_checkable
class Analysis(Protocol):
    trace: traces.Trace
    hardware: str
    readings: list[headline.ClaimReading]

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        ...


@runtime_checkable
class Result(Protocol):
    RESULT: str
    Params: type[headline.Params]
    FIGURES: tuple[str, ...]

    def analyse(
        self, trace: traces.Trace, params: Any = ..., registry: Registry | None = None
    ) -> Any: ...

    def outcome(self, analysis: Any) -> headline.Outcome: ...


def module(name: str) -> Any:
    """The module of result ``name`` (imported on first use)."""
    return importlib.import_module(f"rackbook.results.{name.replace('-', '_')}")


class ChapterTable(UserDict[str, Any]):
    """The union of the table ``attr`` (``DECISIVE``...) chapters declare, merged on first use."""

    def __init__(self, attr: str) -> None:
        self.attr = attr  # no UserDict.__init__: ``data`` is read from the chapters when needed

    @functools.cached_property
    def data(self) -> dict[str, Any]:  # type: ignore[override]
        return {k: v for n in RESULTS for k, v in getattr(module(n), self.attr, {}).items()}


def check_trace(result: str | None, path: str | Path, field: str = "trace") -> dict[str, Any]:
    """The run.json of a trace folder chapter ``result`` (None: ``rackbook check``) can read,
    else :class:`InputError` (a published trace, another scenario's, one without requests)."""
    path = Path(path)
    run = traces.read_run(path)
    if run.get("kind") == "published":
        why = "a published trace (published points, no requests): the readings measure recorded "
        raise InputError(path, field, why + "or synthetic traces; `rackbook summarize` reads it")
    record = run.get("record")
    scenario = record.get("scenario") if isinstance(record, dict) else None
    if not isinstance(scenario, str):  # an imported trace says nothing; expert loads: eplb
        scenario = "eplb-balance" if (path / "expert_load.parquet").exists() else None
    if None not in (scenario, result) and scenario != result:
        why = f"a trace of scenario {scenario}, not {result}: the chapter cannot read it"
        raise InputError(path, field, why)
    if result != "eplb-balance" and traces.table_rows(path, "requests") == 0:
        raise InputError(path, field, "no requests: an empty trace has nothing to measure")
    return run
