"""Which tokens a throughput counts: per sweep point, the output, input, cached and new input
tokens of its successful requests over its window, as rates in tokens/s, in all and per GPU
(definitions in :mod:`rackbook.results.rack_scaling`), and the GPU counts of a trace's points."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from rackbook.core.server_metrics import prefix_cache_hit_rate
from rackbook.core.traces import Trace
from rackbook.errors import InputError

TOKENS_FORMULA = (
    r"\text{tok/s} = \frac{\sum \text{tokens}}{\text{duration}},\quad "
    r"\text{new input} = \text{input} - \text{cached},\quad "
    r"\text{per GPU} = \frac{\text{tok/s}}{\text{GPUs}}"
)

_RATES = ("output", "new_input", "cached_input", "input", "total", "computed")


def token_accounting(trace: Trace, gpus: int | None = None) -> pd.DataFrame:
    """Per point: point_id, engine, config, num_gpus (``points.num_gpus``, else ``gpus``),
    replicas (``points.replicas``, else servers in ``server_metrics``, else NA), duration_s,
    requests, token counts, rates ``<kind>_tok_s`` and ``<kind>_tok_s_per_gpu`` (tokens/s) for
    each kind of ``_RATES``, ``cached_source`` (``requests`` | ``server_metrics`` | ``unknown``)
    and ``note``. Cached tokens unknown: NaN in the cached, new input and computed columns."""
    if gpus is not None and gpus <= 0:
        raise InputError("-", "gpus", f"must be > 0, got {gpus}")
    req = trace.requests[trace.requests["success"]]
    sm = trace.extra.get("server_metrics")
    rows = []
    for _, p in trace.points.iterrows():
        pid = p["point_id"]
        r = req[req["point_id"] == pid]
        dur = float(p["duration_s"])
        n_in = int(r["prompt_tokens"].sum())
        n_out = int(r["output_tokens"].sum())
        cached_col = r["cached_prompt_tokens"]
        if len(r) and cached_col.notna().all():
            cached, source, note = float(cached_col.sum()), "requests", ""
        elif sm is not None:
            rate, how = prefix_cache_hit_rate(sm, pid)
            if np.isfinite(rate):
                cached, source = rate * n_in, "server_metrics"
                note = f"cached = input x hit rate {rate:.4g} ({how})"
            else:
                cached, source, note = np.nan, "unknown", f"cached input unknown: {how}"
        else:
            cached, source = np.nan, "unknown"
            note = "cached input unknown: no cached_prompt_tokens and no server_metrics table"
        n_gpu = p["num_gpus"] if pd.notna(p["num_gpus"]) else gpus
        if "replicas" in p.index and pd.notna(p["replicas"]):
            replicas = int(p["replicas"])
        elif sm is not None and (sm["point_id"] == pid).any():
            replicas = int(sm.loc[sm["point_id"] == pid, "server"].nunique())
        else:
            replicas = pd.NA
        counts = {
            "output": n_out,
            "new_input": n_in - cached,
            "cached_input": cached,
            "input": n_in,
            "total": n_in + n_out,
            "computed": n_in - cached + n_out,
        }
        row = {
            "point_id": pid,
            "engine": p["engine"],
            "config": p["config"],
            "num_gpus": pd.NA if n_gpu is None else int(n_gpu),
            "replicas": replicas,
            "duration_s": dur,
            "requests": len(r),
            "output_tokens": n_out,
            "input_tokens": n_in,
            "cached_input_tokens": cached,
            "new_input_tokens": n_in - cached,
        }
        for k in _RATES:
            row[f"{k}_tok_s"] = counts[k] / dur
        for k in _RATES:
            row[f"{k}_tok_s_per_gpu"] = counts[k] / dur / n_gpu if n_gpu else np.nan
        row["cached_source"] = source
        row["note"] = note
        rows.append(row)
    out = pd.DataFrame(rows)
    if not out.empty:
        out["num_gpus"] = out["num_gpus"].astype("Int64")
        out["replicas"] = out["replicas"].astype("Int64")
    out.attrs["formula"] = TOKENS_FORMULA
    return out


#: Token kinds a scaling metric may name (``<metric>_tok_s`` columns of token_accounting).
METRICS: tuple[str, ...] = ("total", "output", "input", "new_input", "cached_input", "computed")


def with_gpu_counts(trace: Trace, gpus_per_replica: int = 1) -> Trace:
    """A copy of ``trace`` whose null ``points.num_gpus`` are replicas (``points.replicas``,
    else servers in ``server_metrics``, else 1) x ``gpus_per_replica``, with ``replicas`` and
    ``gpus_source`` columns added; other tables shared, not copied."""
    if gpus_per_replica < 1:
        raise InputError("-", "gpus_per_replica", f"must be >= 1, got {gpus_per_replica}")
    pts = trace.points.copy()
    sm = trace.extra.get("server_metrics")
    replicas, gpus, source = [], [], []
    for _, p in pts.iterrows():
        r = p["replicas"] if "replicas" in p.index else pd.NA
        if pd.isna(r):
            seen = sm.loc[sm["point_id"] == p["point_id"], "server"] if sm is not None else []
            r = int(pd.Series(seen).nunique()) if len(seen) else 1
        replicas.append(int(r))
        if pd.notna(p["num_gpus"]):
            gpus.append(int(p["num_gpus"]))
            source.append("points.num_gpus")
        else:
            gpus.append(int(r) * gpus_per_replica)
            source.append(f"replicas x gpus_per_replica ({int(r)} x {gpus_per_replica})")
    pts["replicas"] = pd.array(replicas, dtype="Int64")
    pts["num_gpus"] = pd.array(gpus, dtype="Int64")
    pts["gpus_source"] = pd.array(source, dtype="string")
    return dataclasses.replace(trace, points=pts)
