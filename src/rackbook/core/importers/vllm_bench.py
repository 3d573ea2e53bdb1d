"""``vllm bench serve --save-result --save-detailed`` JSON (per-request arrays, times in s) as a
one-point trace (the live recorder converts with :func:`vllm_bench_frames` too)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rackbook import limits
from rackbook.core import importers, provenance, traces
from rackbook.core.importers import points
from rackbook.core.vllm_json import RaggedGaps, load_detailed
from rackbook.errors import InputError

FORMAT = "vllm-bench"
DETAILED_KEYS = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "errors")
#: Scenario labels of integer request and point columns (the last only of points).
INT_LABELS = ("batch_size", "concurrency", "decode_ranks", "context_tokens", "num_gpus")


def _num_array(path: Path, key: str, values: Any, n: int | None, integer: bool = False) -> Any:
    """List ``key`` (``n`` entries, one per request; None: gaps) as checked float64."""
    if not isinstance(values, (list, np.ndarray)):
        raise InputError(path, key, f"must be a list, got {type(values).__name__}")
    if n is not None and len(values) != n:
        raise InputError(path, key, f"has {len(values)} entries, expected {n} (one per request)")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(i for i, v in enumerate(values) if not isinstance(v, (int, float)))
        raise InputError(path, f"{key}[{bad}]", "not a number") from None
    if arr.ndim != 1:
        raise InputError(path, key, "must be a flat list of numbers")
    if integer and np.isfinite(arr).all() and (arr % 1 != 0).any():
        raise InputError(path, f"{key}[{int(np.argmax(arr % 1 != 0))}]", "not an integer")
    traces.check_values(arr, path, key, traces.RowNames(keys={}), tokens=integer)
    return arr


#: Request columns -> (the vLLM result's per-request list, whole numbers), in checking order.
ARRAYS = {
    "prompt_tokens": ("input_lens", True),
    "output_tokens": ("output_lens", True),
    "ttft_s": ("ttfts", False),
    "e2el_s": ("latencies", False),
}
#: Request columns named in errors by the result's keys.
VLLM_KEYS = traces.RowNames(
    keys={c: k for c, (k, _) in ARRAYS.items()} | {"itl_s": "itls", "start_time_s": "start_times"}
)


def _flat_itls(path: Path, itls: list[Any] | RaggedGaps) -> tuple[np.ndarray, np.ndarray]:
    """Ragged ``itls`` as (request row, gap s) arrays."""
    if not isinstance(itls, RaggedGaps):
        bad = next((i for i, g in enumerate(itls) if not isinstance(g, list)), None)
        if bad is not None:
            raise InputError(path, f"itls[{bad}]", "must be a list of seconds")
        lens = np.fromiter(map(len, itls), dtype=np.int64, count=len(itls))
        try:
            flat = np.fromiter(itertools.chain.from_iterable(itls), np.float64, int(lens.sum()))
        except (TypeError, ValueError):  # only to name the bad entry
            flat = _num_array(path, "itls", [*itertools.chain(*itls)], None)
        itls = RaggedGaps(lens, flat)
    rows = np.repeat(np.arange(len(itls.lens), dtype=np.int64), itls.lens)
    return rows, _num_array(path, "itls", itls.values, None)


def _request_ids(pid: str, n: int) -> pd.Series:
    ids = pc.binary_join_element_wise(pid + "/", pa.array(np.arange(n)).cast(pa.string()), "")
    return pd.Series(ids.to_numpy(zero_copy_only=False), dtype="string")


def _int_column(value: int | None, n: int) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(
        np.full(n, 0 if value is None else value, dtype=np.int64), np.full(n, value is None)
    )


def _duration(path: Path, d: Any) -> float:
    """The result's ``duration`` (s), its per-request arrays present."""
    if not isinstance(d, dict):
        raise InputError(path, "-", f"top level must be a JSON object, got {type(d).__name__}")
    missing = [k for k in DETAILED_KEYS if k not in d]
    if missing:
        hint = " (rerun vllm bench serve with --save-detailed)" if "ttfts" in missing else ""
        raise InputError(path, missing[0], f"missing per-request array{hint}")
    return points.cell(path, "duration", d.get("duration"), "number")


def _request_columns(path: Path, d: dict[str, Any]) -> dict[str, Any]:
    """The checked per-request arrays as request columns, with ``success``, ``error``, ``itls``."""
    if not isinstance(d["input_lens"], (list, np.ndarray)):
        raise InputError(path, "input_lens", "must be a list")
    n = len(d["input_lens"])
    if n == 0:
        raise InputError(path, "input_lens", "no requests: every per-request list is empty")
    cols = {c: _num_array(path, k, d[k], n, integer=i) for c, (k, i) in ARRAYS.items()}
    lat = cols["e2el_s"]
    start = np.full(n, np.nan)
    if d.get("start_times") is not None:
        start = _num_array(path, "start_times", d["start_times"], n)
    for key, kinds, what in (
        ("errors", list, "strings"),
        ("itls", (list, RaggedGaps), "lists (one per request)"),
    ):
        if not isinstance(d[key], kinds) or len(d[key]) != n:
            raise InputError(path, key, f"must be a list of {n} {what}")
    errs, itls = ["" if e is None else str(e) for e in d["errors"]], d["itls"]
    # vLLM marks success apart from the error text: a successful request took time or tokens
    took = (lat > 0) | (cols["output_tokens"] > 0)
    success = np.array([e == "" for e in errs], dtype=bool) & took
    completed = d.get("completed")
    if isinstance(completed, int) and int(success.sum()) != completed:
        problem = f"says {completed} but {int(success.sum())} requests have no error"
        raise InputError(path, "completed", problem)
    traces.check_latency_unit(lat[success], path, "latencies")
    traces.check_request_rows(cols, success, path, VLLM_KEYS)
    return {**cols, "start_time_s": start, "success": success, "error": errs, "itls": itls}


def _int_labels(path: Path, d: dict[str, Any], labels: dict[str, str]) -> dict[str, int | None]:
    """:data:`INT_LABELS` popped from ``labels``, concurrency else ``max_concurrency``."""
    ints: dict[str, int | None] = {k: None for k in INT_LABELS}
    mc = points.cell(path, "max_concurrency", d.get("max_concurrency"), "whole?")
    if mc is not None:
        ints["concurrency"] = limits.bounded(mc, "concurrency", path, "max_concurrency")
    for k in INT_LABELS:
        if k in labels:
            try:
                ints[k] = int(labels.pop(k))
            except ValueError:
                raise InputError(path, f"label {k}", "must be an integer") from None
    if ints["decode_ranks"] is not None and ints["decode_ranks"] < 1:
        raise InputError(path, "label decode_ranks", "must be a positive integer")
    return ints


def vllm_bench_frames(
    path: str | Path,
    labels: dict[str, str] | None = None,
    point_id: str | None = None,
    data: dict[str, Any] | None = None,
) -> traces.Trace:
    """One detailed result as an unvalidated one-point trace (``run`` empty); ``labels`` other
    than scenario keys become text columns."""
    path = Path(path)
    d = load_detailed(path) if data is None else data
    dur = _duration(path, d)
    c = _request_columns(path, d)
    request_row, itl_s = _flat_itls(path, c["itls"])
    if not c["success"].all():  # a failed request's gaps feed no metric, as in vLLM's
        keep = c["success"][request_row]
        if not keep.all():  # copied only when a failed request has gaps: 16 B a gap
            request_row, itl_s = request_row[keep], itl_s[keep]
        del keep
    labels = dict(labels or {})
    stem = Path(path.stem).stem if path.suffix == ".gz" else path.stem  # r.json.gz -> r
    pid = point_id or labels.pop("point_id", None) or stem
    labels.pop("point_id", None)
    ints = _int_labels(path, d, labels)
    engine = labels.pop("engine", str(d.get("backend") or "vllm"))
    config = labels.pop("config", "default")
    n = len(c["success"])
    start = c["start_time_s"]
    t0 = float(np.nanmin(start)) if np.isfinite(start).any() else 0.0
    req_ints = INT_LABELS[:4]
    req = pd.DataFrame(
        {
            "request_id": _request_ids(pid, n),
            "point_id": pid,
            "engine": engine,
            "config": config,
            **{k: _int_column(ints[k], n) for k in req_ints},
            "start_time_s": start - t0,
            "ttft_s": c["ttft_s"],
            "e2el_s": c["e2el_s"],
            "prompt_tokens": c["prompt_tokens"].astype(np.int64),
            "cached_prompt_tokens": _int_column(None, n),
            "output_tokens": c["output_tokens"].astype(np.int64),
            "success": c["success"],
            "error": c["error"],
        }
    )
    pts = req.loc[:0, ["point_id", "engine", "config", *req_ints]].assign(
        window_start_s=0.0,
        duration_s=dur,
        num_gpus=pd.array([ints["num_gpus"]], dtype="Int64"),
        source=path.name,
    )
    for k, v in labels.items():
        if k in req.columns:  # a measured field (the CLI refuses it first)
            raise InputError(path, f"label {k}", "is a measured field: a label never replaces it")
        req[k] = v
    gap = pd.DataFrame({"request_row": request_row, "itl_s": itl_s}, copy=False)
    return traces.Trace({}, req, gap, pts)


def read(path: Path, options: importers.Options, command: str) -> traces.Trace:
    """The result as a one-point trace of kind ``--kind`` (default ``recorded``); with ``--gpu ID
    --gpus N`` the GPUs are recorded as declared."""
    kind = options.kind or "recorded"
    hw = options.hardware
    given = options.labels.get("num_gpus")
    if hw is not None and given is not None and int(given) != hw.count:
        raise InputError(path, "--gpus", f"{hw.count} differs from --label num_gpus={given}")
    d = load_detailed(path)
    labels = dict(options.labels)
    if hw is not None:
        labels["num_gpus"] = str(hw.count)  # the point's GPU count: per-GPU rates
    t = vllm_bench_frames(path, labels, data=d)
    keep = "date backend endpoint_type model_id tokenizer_id num_prompts request_rate burstiness"
    t.run = provenance.new_run_info(
        kind=kind,
        commands=[str(d.get("command") or f"vllm bench serve (result file {path.name})")],
        parameters={k: d.get(k) for k in (*keep.split(), "max_concurrency") if k in d},
        engine={"name": "vllm", "version": d.get("vllm_version") or d.get("version")},
        notes=f"imported from {path.name} by `rackbook import vllm-bench`",
        hardware_note="hardware of the importing machine; the benchmark may have run elsewhere",
    )
    if hw is not None:  # the GPUs as declared, this machine kept apart
        t.run["hardware"] = {
            "gpus": [{"name": hw.label, "catalog_id": hw.id} for _ in range(hw.count)],
            "hosts": None,
            "declared": {
                "gpu": hw.id,
                **{k: getattr(hw, k) for k in ("name", "count", "catalog")},
                "by": "the user, at import (rackbook import --gpu ID --gpus N); not probed",
            },
            "importing_machine": t.run["hardware"],
            "note": "the GPUs the benchmark ran on as the user declared them; the machine that "
            "imported it is hardware.importing_machine",
        }
        t.run.pop("hardware_note", None)
    if kind == "synthetic":
        t.run["generator"] = {"name": "unknown (imported)", "seed": None}
    return t  # the parsed JSON, most of the memory, is freed here


def summary(t: traces.Trace) -> str:
    """``N requests, G gaps, trace_id ID`` (and the GPUs when declared at import)."""
    line = f"{len(t.requests)} requests, {len(t.itl)} gaps, trace_id {t.trace_id}"
    if isinstance((t.run.get("hardware") or {}).get("declared"), dict):
        line += f", on {provenance.hardware_label(t.run)}"
    return line
