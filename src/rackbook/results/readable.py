"""What a chapter can read: a trace folder checked before any notebook runs on it."""

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
    """The run.json of a trace folder chapter ``result`` can read, else an :class:`InputError`
    naming ``field``: a published trace, another scenario's (an imported trace without one is
    the chapter's), or one without requests (all chapters but eplb-balance) is refused."""
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
