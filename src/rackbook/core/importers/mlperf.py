"""MLPerf Inference ``summary.csv`` as a ``published`` trace: ``Units: Tokens/s`` rows (of
``--model``) become points, others are counted as skipped; ``Result`` is the system's output tok/s,
per GPU ``Result / total_accelerators``."""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from rackbook.core import importers
from rackbook.core.importers import points
from rackbook.errors import InputError

FORMAT = "mlperf"

#: summary.csv columns the importer reads.
MLPERF_COLUMNS = tuple(
    "Organization Availability Division SystemName Platform Model Scenario Result "
    "accelerator_model_name total_accelerators Location framework version Units "
    "weight_data_types".split()
)
MLPERF_TOKEN_UNIT = "Tokens/s"


def read_points(path: Path, options: importers.Options) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The token-rate rows' points; parameters record ``--model`` and the skips."""
    pts, skipped = mlperf_points(path, options.model, options.source_url)
    return pts, {"model": options.model, "skipped": skipped}


read, summary = points.reader(FORMAT, read_points), points.summary


def _row(path: Path, f: str, row: dict[str, str], line: int, source_url: str) -> dict[str, Any]:
    """A token-rate row (field ``f``, CSV line ``line``) as a ``published_points`` row."""
    result, n = (_csv_number(path, f, row, k, line) for k in ("Result", "total_accelerators"))
    loc = (row["Location"] or "").removeprefix("./").strip("/")
    gh = points.GITHUB_BLOB.match(source_url)
    return {
        "point_id": f"{row['Organization']}/{row['Platform']}/{row['Model']}/{row['Scenario']}",
        "submitter": row["Organization"],
        "system": row["SystemName"],
        "category": f"{row['Division']}, {row['Availability']}",
        "hardware": row["accelerator_model_name"],
        "gpus": int(n),
        "model": row["Model"],
        "precision": row["weight_data_types"] or None,
        "engine": row["framework"] or None,
        "engine_version": row["version"] or None,
        "scenario": row["Scenario"],
        "tok_s_total": result,
        "tok_s_per_gpu": result / n,
        "per_gpu_basis": "computed on import: Result / total_accelerators",
        "tokens_counted": "output",
        "gpus_counted": "deployment",
        "speculation_kind": "real or none",
        "workload": "benchmark dataset",
        "url": f"https://github.com/{gh['repo']}/tree/{gh['commit']}/{loc}"
        if gh and loc
        else source_url,
    }


def mlperf_points(
    path: str | Path, model: str | None = None, source_url: str | None = None
) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
    """Token-rate rows as a ``published_points`` table and the skips; a row links to its
    ``Location`` at the commit of a GitHub blob ``source_url``, else to ``source_url``."""
    path = Path(path)
    reader = csv.DictReader(points.csv_lines(path), strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(path, "line 1", f"not valid CSV: {exc}") from None
    missing = [c for c in MLPERF_COLUMNS if c not in header]
    if missing:
        raise InputError(path, missing[0], "missing column in the header")
    if source_url is None:
        raise InputError(path, "--source-url", "required: summary.csv rows carry no link")
    skipped: dict[str, Counter[str]] = {"units": Counter(), "models": Counter()}
    out, i = [], -1
    try:
        for i, row in enumerate(reader):
            spans = [k for k, v in row.items() if isinstance(v, str) and "\n" in v]
            if spans:  # a quote left open swallows the rows after it into one field
                problem = f"field {spans[0]!r} runs over several lines: a quote left open? "
                problem += "(summary.csv fields hold no line breaks)"
                raise InputError(path, f"line {reader.line_num}", problem)
            unit = row.get("Units") or ""
            if unit != MLPERF_TOKEN_UNIT:
                skipped["units"][unit or "(empty)"] += 1
            elif model is not None and row["Model"] != model:
                skipped["models"][row["Model"]] += 1
            else:
                point = _row(path, f"rows[{i}]", row, reader.line_num, source_url)
                out.append({**point, "source_row": i})
    except csv.Error as exc:
        raise InputError(path, f"line {reader.line_num}", f"not valid CSV: {exc}") from None
    if i < 0:
        raise InputError(path, "rows", "no rows under the header")
    if not out:
        want = f" of model {model!r}" if model else ""
        raise InputError(path, "rows", f"no {MLPERF_TOKEN_UNIT} rows{want}")
    return points.frame(out), {k: dict(sorted(v.items())) for k, v in skipped.items()}


def _csv_number(path: Path, f: str, row: dict[str, str], key: str, line: int) -> float:
    """``row[key]`` (field ``f.key``) as a number > 0, whole for ``total_accelerators``."""
    text = row[key]
    try:
        value = float(text or "")
    except ValueError:
        problem = f"not a number ({text!r}) in a {MLPERF_TOKEN_UNIT} row (line {line})"
        raise InputError(path, f"{f}.{key}", problem) from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(path, f"{f}.{key}", f"must be a number > 0, got {text!r} (line {line})")
    if key == "total_accelerators" and value % 1 != 0:
        problem = f"not an integer ({value!r}) (line {line})"
        raise InputError(path, f"{f}.{key}", problem)
    return value
