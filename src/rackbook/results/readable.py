"""What a chapter can read: a trace is checked before any notebook runs on it.

Every chapter reads a trace folder of the current schema version (:func:`rackbook.core.traces.
read_run` checks it). On top of that:

- a trace of kind ``published`` holds published points, not requests: no chapter measures it
  (``rackbook summarize`` reads it);
- a trace's scenario (``run.json`` ``record.scenario``; a trace with an ``expert_load`` table is
  an eplb-balance trace) must be the chapter's own; an imported trace without one is read as
  the chapter's;
- a trace without request rows is refused by every chapter that measures requests (all but
  eplb-balance, which reads expert loads): an empty trace is an error, not zeros.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rackbook.core import traces
from rackbook.errors import InputError

#: Chapters that read expert loads, not requests.
READS_EXPERT_LOADS = frozenset({"eplb-balance"})


def trace_scenario(run: dict[str, Any], tables: set[str]) -> str | None:
    """The scenario a trace was made for: its ``record.scenario``, ``eplb-balance`` for a trace
    with expert loads, else None (an imported trace says nothing)."""
    record = run.get("record")
    if isinstance(record, dict) and isinstance(record.get("scenario"), str):
        return str(record["scenario"])
    if "expert_load" in tables:
        return "eplb-balance"
    return None


def check_trace(result: str, path: str | Path, field: str = "trace") -> dict[str, Any]:
    """Refuse, naming what is wrong, a trace folder chapter ``result`` cannot read; its run.json.

    Raises :class:`InputError` (file: the folder, field: ``field``)."""
    path = Path(path)
    run = traces.read_run(path)
    tables = {f.stem for f in path.glob("*.parquet")}
    if run.get("kind") == "published":
        raise InputError(
            path,
            field,
            "a published trace (published points, no requests): the chapters measure recorded "
            "or synthetic traces; `rackbook summarize` reads this one",
        )
    scenario = trace_scenario(run, tables)
    if scenario is not None and scenario != result:
        raise InputError(
            path, field, f"a trace of scenario {scenario}, not {result}: the chapter cannot read it"
        )
    if result not in READS_EXPERT_LOADS and traces.table_rows(path, "requests") == 0:
        raise InputError(path, field, "no requests: an empty trace has nothing to measure")
    return run
