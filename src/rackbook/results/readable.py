"""What a chapter can read: a trace folder checked before any notebook runs on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rackbook.core import traces
from rackbook.errors import InputError


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
