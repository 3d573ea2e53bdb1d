"""An offline engine's fixed-batch results (format in book/rerun.md) as a trace: each row one point
of ``batch_size x decode_ranks`` identical requests, ``ttft_s`` = ``prefill_s`` (else ``total_s -
decode_s``, else 0), ``e2el_s`` = ``ttft_s + decode_s``; kind ``synthetic`` with a ``generator``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook import limits
from rackbook.core import importers, jsonstream, provenance, traces
from rackbook.core.importers import points
from rackbook.errors import InputError

FORMAT = "offline-engine"
FILE_FORMAT = "rackbook-offline-engine"  # the file's ``format`` field
SCHEMA_VERSIONS = (1,)
#: Row key -> (its :func:`.points.cell` check, the ``limits.BOUNDS`` name holding it), in order.
ROW_KEYS: dict[str, tuple[str, str | None]] = {
    "batch_size": ("whole", "batch_size"),
    "decode_ranks": ("whole?", "decode_ranks"),
    "input_tokens": ("whole", "context"),
    "output_tokens": ("whole", "context"),
    "decode_s": ("number", None),
    "prefill_s": ("number?", None),
    "total_s": ("number?", None),
}
#: Top-level text keys -> their check (``?``: may be absent).
HEAD_KEYS = {k: "text" for k in ("engine", "engine_version", "model")}
HEAD_KEYS |= {k: "text?" for k in ("command", "source", "date", "notes")}
#: Top-level keys a file may carry (anything else is refused, catching typos).
TOP_KEYS = (*HEAD_KEYS, "format", "schema_version", "hardware", "generator", "rows")


def _known(path: Path, at: str, obj: dict[str, Any], known: Any) -> None:
    """An InputError at ``at.KEY`` for the first key of ``obj`` not in ``known``."""
    unknown = sorted(set(obj) - set(known))
    if unknown:
        field = f"{at}.{unknown[0]}" if at else unknown[0]
        raise InputError(path, field, f"unknown key; known: {', '.join(known)}")


def _row(path: Path, at: str, r: Any) -> dict[str, Any]:
    """Row ``at`` checked: positive values within bounds, ``output_tokens >= 2``, times add up."""
    _known(path, at, points.mapping(path, at, r), ROW_KEYS)
    row = {"decode_ranks": 1}
    for key, (check, bound) in ROW_KEYS.items():
        value = points.cell(path, f"{at}.{key}", r.get(key), check)
        if value is not None:
            row[key] = value if bound is None else limits.bounded(value, bound, path, f"{at}.{key}")
    if row["output_tokens"] < 2:
        problem = "must be >= 2 (decode is the tokens after the first)"
        raise InputError(path, f"{at}.output_tokens", problem)
    before = row.get("prefill_s", 0.0)
    if "total_s" in row and row["total_s"] < before + row["decode_s"] - 1e-9:
        what = "prefill_s + decode_s" if "prefill_s" in row else "decode_s"
        raise InputError(path, f"{at}.total_s", f"smaller than {what}")
    return row


def parse_rows(path: Path, rows: Any) -> pd.DataFrame:
    """The checked rows as a table (``prefill_s``, ``total_s`` NaN where absent), one per batch
    and decode ranks."""
    if not isinstance(rows, list) or not rows:
        raise InputError(path, "rows", "must be a non-empty list of objects")
    out = pd.DataFrame([_row(path, f"rows[{i}]", r) for i, r in enumerate(rows)])
    out = out.reindex(columns=list(ROW_KEYS))
    twice = out.duplicated(["batch_size", "decode_ranks"])
    if twice.any():
        i = int(np.argmax(twice))
        b, k = out.loc[i, "batch_size"], out.loc[i, "decode_ranks"]
        raise InputError(path, f"rows[{i}]", f"a second row for batch_size {b} on {k} decode ranks")
    total = int((out["batch_size"] * out["decode_ranks"]).sum())
    limits.bounded(total, "requests", path, "rows (batch_size x decode_ranks, summed)")
    return out


def _header(path: Path, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InputError(path, "-", f"top level must be a JSON object, got {type(data).__name__}")
    if data.get("format") != FILE_FORMAT:
        raise InputError(path, "format", f"must be {FILE_FORMAT!r}, got {data.get('format')!r}")
    if (version := data.get("schema_version")) not in SCHEMA_VERSIONS:
        known = ", ".join(map(str, SCHEMA_VERSIONS))
        raise InputError(path, "schema_version", f"{version!r} is not one of {known}")
    _known(path, "", data, TOP_KEYS)
    head = {k: points.cell(path, k, data.get(k), c) for k, c in HEAD_KEYS.items()}
    head = {k: v if v is None else v.strip() for k, v in head.items()}
    hw = points.mapping(path, "hardware", data.get("hardware"))
    head["gpu_id"] = points.cell(path, "hardware.gpu_id", hw.get("gpu_id"), "text").strip()
    count = points.cell(path, "hardware.gpu_count", hw.get("gpu_count"), "whole")
    head["gpu_count"] = limits.bounded(count, "gpus", path, "hardware.gpu_count")
    # a generator makes the trace synthetic: traces.validate checks its name and seed
    return {**head, "generator": data.get("generator"), "schema_version": version}


def offline_engine_frames(
    path: str | Path, data: Any, engine: str | None = None
) -> tuple[traces.Trace, dict[str, Any]]:
    """The checked file as an unvalidated trace without ``run``, and its header; point ids
    ``<engine>-b<batch>[-r<ranks>]``."""
    path = Path(path)
    head = _header(path, data)
    label = head["engine"] if engine is None else points.cell(path, "--engine", engine, "text")
    rows = parse_rows(path, data.get("rows"))
    b, ranks = rows["batch_size"], rows["decode_ranks"]
    head["batch_sizes"], head["decode_ranks"] = b.tolist(), ranks.tolist()
    pid = label.strip() + "-b" + b.astype(str)
    pid += np.where(b.duplicated(keep=False), "-r" + ranks.astype(str), "")
    each = (b * ranks).to_numpy()  # a row's identical requests
    ttft = rows["prefill_s"].fillna(rows["total_s"] - rows["decode_s"]).fillna(0.0)
    rows = rows.assign(point_id=pid, ttft_s=ttft, e2el_s=ttft + rows["decode_s"])
    per = rows.loc[rows.index.repeat(each)]
    n = len(per)
    req = pd.DataFrame(
        {
            "request_id": [f"{p}/{i}" for p, k in zip(pid, each, strict=True) for i in range(k)],
            "point_id": per["point_id"].to_numpy(dtype=object),
            "engine": label.strip(),
            "config": head["model"],
            "batch_size": pd.array(per["batch_size"], dtype="Int64"),
            "concurrency": pd.array([None] * n, dtype="Int64"),
            "decode_ranks": pd.array(per["decode_ranks"], dtype="Int64"),
            "start_time_s": np.zeros(n),
            "ttft_s": per["ttft_s"].to_numpy(dtype=float),
            "e2el_s": per["e2el_s"].to_numpy(dtype=float),
            "prompt_tokens": per["input_tokens"].to_numpy(dtype=np.int64),
            "output_tokens": per["output_tokens"].to_numpy(dtype=np.int64),
            "success": np.ones(n, dtype=bool),
            "error": "",
        }
    )
    keys = ["point_id", "engine", "config", "batch_size", "concurrency", "decode_ranks"]
    pts = req.drop_duplicates("point_id")[keys].reset_index(drop=True)
    pts = pts.assign(
        window_start_s=0.0,
        duration_s=rows["total_s"].fillna(ttft + rows["decode_s"]).to_numpy(dtype=float),
        num_gpus=pd.array([head["gpu_count"]] * len(rows), dtype="Int64"),
        source=path.name,
    )
    itl = pd.DataFrame({"request_row": np.zeros(0, np.int64), "itl_s": np.zeros(0)})
    return traces.Trace({}, req, itl, pts), head


def read(path: Path, options: importers.Options, command: str) -> traces.Trace:
    """The checked file as a trace recording ``command`` (``--engine`` overrides the label); the
    hardware as the file states it."""
    data = jsonstream.load(path)  # checks existence, emptiness, JSON syntax
    t, head = offline_engine_frames(path, data, options.engine)
    raw = path.read_bytes()
    rows_note = f"imported from {path.name} by `rackbook import offline-engine`"
    t.run = provenance.new_run_info(
        kind="recorded" if head["generator"] is None else "synthetic",
        commands=[command, *([head["command"]] if head["command"] else [])],
        # batch_sizes: per decode rank, one per row
        parameters={k: head[k] for k in ("model", "batch_sizes", "decode_ranks", "source", "date")},
        engine={"name": head["engine"], "version": head["engine_version"]},
        generator=head["generator"],
        notes=rows_note + (f"; {head['notes']}" if head["notes"] else ""),
        source_file={
            "name": path.name,
            "bytes": len(raw),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "format": f"{FILE_FORMAT}/{head['schema_version']}",
        },
    )
    t.run["hardware"] = {
        "gpus": [{"name": head["gpu_id"]} for _ in range(head["gpu_count"])],
        "hosts": None,
        "note": f"as stated in {path.name}; not measured by the importing machine",
    }
    return t


def summary(t: traces.Trace) -> str:
    """``N points, R requests (KIND), trace_id ID``."""
    return f"{len(t.points)} points, {len(t.requests)} requests ({t.kind}), trace_id {t.trace_id}"
