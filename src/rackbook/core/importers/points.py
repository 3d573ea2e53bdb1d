"""What the published importers share: the ``published_points`` table (tok/s, latencies in s) and
the kind ``published`` trace holding it (other tables empty)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from rackbook.core import importers, provenance, schema, traces
from rackbook.core.importers import sourcefile

#: A published format's reading of its file: (points, the run's ``parameters``: what it skipped).
PointsReader = Callable[[Path, importers.Options], tuple[pd.DataFrame, dict[str, Any]]]


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows (dicts by column name) as a ``published_points`` table of the schema's types."""
    cols = schema.EXTRA_TABLES["published_points"]
    df = pd.DataFrame(rows, columns=[c.name for c in cols])
    for c in cols:
        if c.dtype == "int64":
            df[c.name] = pd.array(df[c.name].tolist(), dtype="Int64")
        elif c.dtype == "float64":
            df[c.name] = pd.to_numeric(df[c.name], errors="raise").astype("float64")
        else:
            df[c.name] = df[c.name].astype("string")
    return df


def empty_table(table: str) -> pd.DataFrame:
    """An empty table with the schema's columns and types."""
    dtypes = {"string": "string", "int64": "Int64", "float64": "float64", "bool": "bool"}
    return pd.DataFrame(
        {c.name: pd.Series([], dtype=dtypes[c.dtype]) for c in schema.TABLES[table]}
    )


def published_trace(
    points: pd.DataFrame,
    fmt: str,
    source: dict[str, Any],
    command: str,
    parameters: dict[str, Any] | None = None,
    notes: str = "",
) -> traces.Trace:
    """A kind ``published`` trace holding ``points`` (its other tables empty)."""
    run = provenance.new_run_info(
        kind="published",
        commands=[command],
        parameters={"format": fmt, **(parameters or {})},
        engine={"name": fmt, "version": None, "what": importers.get(fmt).what},
        notes=notes
        or f"published measurements imported from {source['file']} by `rackbook import {fmt}`; "
        "hardware, GPUs and engine are per row in published_points",
        source=source,
        rows=[
            {"point_id": p, "url": u, "date": None if pd.isna(d) else d}
            for p, u, d in zip(points["point_id"], points["url"], points["date"], strict=True)
        ],
    )
    run["hardware"] = {"gpus": [], "hosts": None, "note": "not measured here: see published_points"}
    run["recorded_by"] = None
    return traces.Trace(
        run,
        empty_table("requests"),
        empty_table("itl"),
        empty_table("points"),
        {"published_points": points},
    )


def read_published(
    fmt: str, path: Path, options: importers.Options, command: str, read_points: PointsReader
) -> traces.Trace:
    """The ``published`` trace of ``read_points``; undated points take ``--source-date``."""
    sourcefile.check_text(path)
    src = sourcefile.source_info(path, options.source_url, options.source_date)
    pts, params = read_points(path, options)
    if options.source_date is not None:
        pts["date"] = pts["date"].fillna(options.source_date)
    return published_trace(pts, fmt, src, command, params)


def summary(t: traces.Trace) -> str:
    """``N published points, trace_id ID`` and what the import skipped, by kind."""
    pts = t.extra["published_points"]
    skipped = t.run["parameters"].get("skipped") or {}
    told = "; ".join(
        f"skipped {k}: " + ", ".join(f"{n} {u}" for u, n in v.items())
        if isinstance(v, dict)
        else f"skipped {k}: {v}"
        for k, v in skipped.items()
        if v
    )
    return f"{len(pts)} published points, trace_id {t.trace_id}" + (f" ({told})" if told else "")
