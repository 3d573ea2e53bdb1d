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
#: Row keys: name -> (required, integer); every value must be a positive number.
ROW_KEYS: dict[str, tuple[bool, bool]] = {
    "batch_size": (True, True),
    "decode_ranks": (False, True),
    "input_tokens": (True, True),
    "output_tokens": (True, True),
    "decode_s": (True, False),
    "prefill_s": (False, False),
    "total_s": (False, False),
}
#: Top-level keys a file may carry (anything else is refused, catching typos).
TOP_KEYS = tuple(
    "format schema_version engine engine_version model hardware command source date generator "
    "notes rows".split()
)


def _text(path: Path, field: str, value: Any, *, required: bool = True) -> str | None:
    given = points.text(path, field, value, optional=not required)
    return None if given is None else given.strip()


def parse_rows(path: Path, rows: Any) -> list[dict[str, float]]:
    """The checked rows (positive values, ``output_tokens >= 2``, one per batch and ranks)."""
    if not isinstance(rows, list) or not rows:
        raise InputError(path, "rows", "must be a non-empty list of objects")
    out, seen = [], set()
    for i, r in enumerate(rows):
        at = f"rows[{i}]"
        if not isinstance(r, dict):
            raise InputError(path, at, "must be an object")
        unknown = sorted(set(r) - set(ROW_KEYS))
        if unknown:
            known = ", ".join(ROW_KEYS)
            raise InputError(path, f"{at}.{unknown[0]}", f"unknown key; known: {known}")
        row: dict[str, float] = {}
        for key, (required, integer) in ROW_KEYS.items():
            if required or r.get(key) is not None:  # a missing one: number() says so
                row[key] = points.number(path, f"{at}.{key}", r.get(key), integer=integer)
        row.setdefault("decode_ranks", 1.0)
        for key in ("batch_size", "decode_ranks", "output_tokens", "input_tokens"):
            bound = key if key in ("batch_size", "decode_ranks") else "context"
            limits.bounded(row[key], bound, path, f"{at}.{key}")
        if row["output_tokens"] < 2:
            raise InputError(
                path, f"{at}.output_tokens", "must be >= 2 (decode is the tokens after the first)"
            )
        before = row.get("prefill_s", 0.0)
        if "total_s" in row and row["total_s"] < before + row["decode_s"] - 1e-9:
            what = "prefill_s + decode_s" if "prefill_s" in row else "decode_s"
            raise InputError(path, f"{at}.total_s", f"smaller than {what}")
        pair = (row["batch_size"], row["decode_ranks"])
        if pair in seen:
            raise InputError(
                path, at, f"a second row for batch_size {pair[0]:g} on {pair[1]:g} decode ranks"
            )
        seen.add(pair)
        out.append(row)
    total = sum(r["batch_size"] * r["decode_ranks"] for r in out)
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
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise InputError(path, unknown[0], f"unknown key; known: {', '.join(TOP_KEYS)}")
    head: dict[str, Any] = {"schema_version": data["schema_version"]}
    for k in ("engine", "engine_version", "model", "command", "source", "date", "notes"):
        head[k] = _text(path, k, data.get(k), required=k in ("engine", "engine_version", "model"))
    hw = data.get("hardware")
    if not isinstance(hw, dict):
        raise InputError(path, "hardware", "must be an object with gpu_id and gpu_count")
    head["gpu_id"] = _text(path, "hardware.gpu_id", hw.get("gpu_id"))
    count = points.number(path, "hardware.gpu_count", hw.get("gpu_count"), integer=True)
    limits.bounded(count, "gpus", path, "hardware.gpu_count")
    head["gpu_count"] = int(count)
    gen = data.get("generator")
    if gen is not None and (not isinstance(gen, dict) or "name" not in gen or "seed" not in gen):
        raise InputError(path, "generator", "must be an object with name and seed")
    head["generator"] = gen
    return head


def _ttft(r: dict[str, Any]) -> Any:
    """A row's time to first token (s): ``prefill_s``, else ``total_s - decode_s``, else 0."""
    return r.get("prefill_s", r["total_s"] - r["decode_s"] if "total_s" in r else 0.0)


def offline_engine_frames(
    path: str | Path, data: Any, engine: str | None = None
) -> tuple[traces.Trace, dict[str, Any]]:
    """The checked file as an unvalidated trace without ``run``, and its header; point ids
    ``<engine>-b<batch>[-r<ranks>]``."""
    path = Path(path)
    head = _header(path, data)
    label = _text(path, "--engine", engine) if engine is not None else head["engine"]
    assert label is not None  # required: _text refused None
    rows = parse_rows(path, data.get("rows"))
    b = head["batch_sizes"] = [int(r["batch_size"]) for r in rows]
    ranks = head["decode_ranks"] = [int(r["decode_ranks"]) for r in rows]
    pairs = list(zip(b, ranks, strict=True))
    pids = [f"{label}-b{n}" + (f"-r{k}" if b.count(n) > 1 else "") for n, k in pairs]
    each = [n * k for n, k in pairs]  # a row's identical requests
    ttft = np.repeat([_ttft(r) for r in rows], each)
    req = pd.DataFrame(
        {
            "request_id": [f"{p}/{i}" for p, n in zip(pids, each, strict=True) for i in range(n)],
            "point_id": np.repeat(pids, each).astype(object),
            "engine": label,
            "config": head["model"],
            "batch_size": pd.array(np.repeat(b, each), dtype="Int64"),
            "concurrency": pd.array([None] * sum(each), dtype="Int64"),
            "decode_ranks": pd.array(np.repeat(ranks, each), dtype="Int64"),
            "start_time_s": np.zeros(sum(each)),
            "ttft_s": ttft,
            "e2el_s": ttft + np.repeat([r["decode_s"] for r in rows], each),
            "prompt_tokens": np.repeat([int(r["input_tokens"]) for r in rows], each),
            "output_tokens": np.repeat([int(r["output_tokens"]) for r in rows], each),
            "success": np.ones(sum(each), dtype=bool),
            "error": "",
        }
    )
    keys = ["point_id", "engine", "config", "batch_size", "concurrency", "decode_ranks"]
    pts = (
        req.drop_duplicates("point_id")[keys]
        .reset_index(drop=True)
        .assign(
            window_start_s=0.0,
            duration_s=[r.get("total_s", _ttft(r) + r["decode_s"]) for r in rows],
            num_gpus=pd.array([head["gpu_count"]] * len(rows), dtype="Int64"),
            source=path.name,
        )
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
        parameters={
            "model": head["model"],
            "batch_sizes": head["batch_sizes"],  # per decode rank, one per row
            "decode_ranks": head["decode_ranks"],
            "source": head["source"],
            "date": head["date"],
        },
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
