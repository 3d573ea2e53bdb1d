"""MLPerf Inference ``summary.csv`` as a ``published`` trace: ``Units: Tokens/s`` rows (of
``--model``) become points, others are counted as skipped; ``Result`` is the system's output tok/s,
per GPU ``Result / total_accelerators``."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from rackbook.core import importers
from rackbook.core.importers import points
from rackbook.errors import InputError

FORMAT = "mlperf"
MLPERF_TOKEN_UNIT = "Tokens/s"
#: Point columns -> the summary.csv column read as given (``?``: an empty one is None).
_AS_GIVEN = {
    "submitter": "Organization",
    "system": "SystemName",
    "hardware": "accelerator_model_name",
    "model": "Model",
    "precision": "weight_data_types?",
    "engine": "framework?",
    "engine_version": "version?",
    "scenario": "Scenario",
}
#: Point columns the same in every row.
_FIXED = {
    "per_gpu_basis": "computed on import: Result / total_accelerators",
    "tokens_counted": "output",
    "gpus_counted": "deployment",
    "speculation_kind": "real or none",
    "workload": "benchmark dataset",
}
#: summary.csv columns the importer reads.
MLPERF_COLUMNS = (
    *(c.rstrip("?") for c in _AS_GIVEN.values()),
    *"Availability Division Platform Result total_accelerators Location Units".split(),
)


def read_points(path: Path, options: importers.Options) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The token-rate rows' points; parameters record ``--model`` and the skips."""
    pts, skipped = mlperf_points(path, options.model, options.source_url)
    return pts, {"model": options.model, "skipped": skipped}


read, summary = points.reader(FORMAT, read_points), points.summary


def _number(path: Path, field: str, text: str, line: int, integer: bool = False) -> float:
    """CSV ``text`` as a number > 0 (whole with ``integer``); the problem names the line."""
    try:
        return points.cell(path, field, float(text), "whole" if integer else "number")
    except (TypeError, ValueError):
        problem = f"not a number ({text!r})"
    except InputError as exc:
        problem = exc.problem
    raise InputError(path, field, f"{problem} in a {MLPERF_TOKEN_UNIT} row (line {line})")


def _row(path: Path, i: int, row: dict[str, str], line: int, source_url: str) -> dict[str, Any]:
    """Token-rate row ``i`` (CSV line ``line``) as a ``published_points`` row."""
    result = _number(path, f"rows[{i}].Result", row["Result"], line)
    n = _number(path, f"rows[{i}].total_accelerators", row["total_accelerators"], line, True)
    loc = (row["Location"] or "").removeprefix("./").strip("/")
    gh = points.GITHUB_BLOB.match(source_url)
    url = f"https://github.com/{gh['repo']}/tree/{gh['commit']}/{loc}" if gh and loc else source_url
    return {
        "point_id": "/".join(row[k] for k in ("Organization", "Platform", "Model", "Scenario")),
        **{c: row[k] if k in row else row[k[:-1]] or None for c, k in _AS_GIVEN.items()},
        "category": f"{row['Division']}, {row['Availability']}",
        "gpus": int(n),
        "tok_s_total": result,
        "tok_s_per_gpu": result / n,
        **_FIXED,
        "url": url,
        "source_row": i,
    }


def mlperf_points(
    path: str | Path, model: str | None = None, source_url: str | None = None
) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
    """Token-rate rows as a ``published_points`` table and the skips; a row links to its
    ``Location`` at the commit of a GitHub blob ``source_url``, else to ``source_url``."""
    path = Path(path)
    reader = csv.DictReader(points.csv_lines(path), strict=True)
    try:
        missing = [c for c in MLPERF_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(path, missing[0], "missing column in the header")
        if source_url is None:
            raise InputError(path, "--source-url", "required: summary.csv rows carry no link")
        skipped: dict[str, Counter[str]] = {"units": Counter(), "models": Counter()}
        out, i = [], -1
        for i, row in enumerate(reader):
            spans = [k for k, v in row.items() if isinstance(v, str) and "\n" in v]
            if spans:  # a quote left open swallows the rows after it into one field
                problem = f"field {spans[0]!r} runs over several lines: a quote left open? "
                raise InputError(path, f"line {reader.line_num}", problem + "(no line breaks)")
            if row["Units"] != MLPERF_TOKEN_UNIT:
                skipped["units"][row["Units"] or "(empty)"] += 1
            elif model is not None and row["Model"] != model:
                skipped["models"][row["Model"]] += 1
            else:
                out.append(_row(path, i, row, reader.line_num, source_url))
    except csv.Error as exc:
        raise InputError(path, f"line {reader.reader.line_num}", f"not valid CSV: {exc}") from None
    if i < 0:
        raise InputError(path, "rows", "no rows under the header")
    if not out:
        want = f" of model {model!r}" if model else ""
        raise InputError(path, "rows", f"no {MLPERF_TOKEN_UNIT} rows{want}")
    return points.frame(out), {k: dict(sorted(v.items())) for k, v in skipped.items()}
