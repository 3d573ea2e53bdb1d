"""What rack-scaling measures: the tokens each sweep point counts (tok/s, in all and per GPU),
the points' GPU counts, and scaling from a reference (speedup T_n / T_1, efficiency
speedup / (n / n_1))."""

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
SPEEDUP_FORMULA = (
    r"\text{speedup} = \frac{T_n}{T_1},\quad "
    r"\text{efficiency} = \frac{T_n / n}{T_1 / n_1} = \frac{\text{speedup}}{n / n_1}"
)

_RATES = ("output", "new_input", "cached_input", "input", "total", "computed")
#: Node sizes to read "a single node" as: catalog system ids (GB300 tray = 4 GPUs, HGX B300 = 8).
NODE_SYSTEMS: tuple[str, ...] = ("gb300-tray", "hgx-b300")


def _replicas(p: pd.Series, sm: pd.DataFrame | None) -> int | None:
    if pd.notna(p.get("replicas", pd.NA)):
        return int(p["replicas"])
    seen = sm.loc[sm["point_id"] == p["point_id"], "server"] if sm is not None else []
    return int(pd.Series(seen).nunique()) if len(seen) else None


def _cached(
    r: pd.DataFrame, sm: pd.DataFrame | None, pid: str, n_in: int
) -> tuple[float, str, str]:
    if len(r) and r["cached_prompt_tokens"].notna().all():
        return float(r["cached_prompt_tokens"].sum()), "requests", ""
    if sm is None:
        note = "cached input unknown: no cached_prompt_tokens and no server_metrics table"
        return np.nan, "unknown", note
    rate, how = prefix_cache_hit_rate(sm, pid)
    if np.isfinite(rate):
        return rate * n_in, "server_metrics", f"cached = input x hit rate {rate:.4g} ({how})"
    return np.nan, "unknown", f"cached input unknown: {how}"


def token_accounting(trace: Trace, gpus: int | None = None) -> pd.DataFrame:
    """Per point: GPUs, replicas, token counts, ``<kind>_tok_s`` and ``<kind>_tok_s_per_gpu``
    (tok/s) of each of ``_RATES``, where the cached count came from; NaN where it is unknown."""
    req = trace.requests[trace.requests["success"]]
    sm = trace.extra.get("server_metrics")
    rows = []
    for _, p in trace.points.iterrows():
        pid, dur = p["point_id"], float(p["duration_s"])
        r = req[req["point_id"] == pid]
        n_in, n_out = int(r["prompt_tokens"].sum()), int(r["output_tokens"].sum())
        cached, source, note = _cached(r, sm, pid, n_in)
        n_gpu = p["num_gpus"] if pd.notna(p["num_gpus"]) else gpus
        replicas = _replicas(p, sm)
        counts = dict(output=n_out, new_input=n_in - cached, cached_input=cached, input=n_in)
        counts |= dict(total=n_in + n_out, computed=n_in - cached + n_out)
        row = dict(point_id=pid, engine=p["engine"], config=p["config"])
        row |= dict(num_gpus=pd.NA if n_gpu is None else int(n_gpu))
        row |= dict(replicas=pd.NA if replicas is None else replicas, duration_s=dur)
        row |= dict(requests=len(r), output_tokens=n_out, input_tokens=n_in)
        row |= dict(cached_input_tokens=cached, new_input_tokens=n_in - cached)
        row |= {f"{k}_tok_s": counts[k] / dur for k in _RATES}
        row |= {f"{k}_tok_s_per_gpu": counts[k] / dur / n_gpu if n_gpu else np.nan for k in _RATES}
        rows.append(row | dict(cached_source=source, note=note))
    out = pd.DataFrame(rows)
    if not out.empty:
        out["num_gpus"] = out["num_gpus"].astype("Int64")
        out["replicas"] = out["replicas"].astype("Int64")
    out.attrs["formula"] = TOKENS_FORMULA
    return out


def with_gpu_counts(trace: Trace, gpus_per_replica: int = 1) -> Trace:
    """``trace`` whose null ``points.num_gpus`` are replicas (else 1) x ``gpus_per_replica``."""
    pts = trace.points.copy()
    sm = trace.extra.get("server_metrics")
    replicas, gpus = [], []
    for _, p in pts.iterrows():
        r = _replicas(p, sm)
        replicas.append(r := 1 if r is None else r)
        gpus.append(int(p["num_gpus"]) if pd.notna(p["num_gpus"]) else r * gpus_per_replica)
    pts["replicas"] = pd.array(replicas, dtype="Int64")
    pts["num_gpus"] = pd.array(gpus, dtype="Int64")
    return dataclasses.replace(trace, points=pts)


def scaling_vs_reference(
    accounting: pd.DataFrame, reference_config: str = "1x", metric: str = "total"
) -> pd.DataFrame:
    """Per configuration at its peak ``<metric>_tok_s`` point: tok/s, per GPU, speedup and
    efficiency against ``reference_config`` (listed first); NaN ratios where unknown."""
    col = f"{metric}_tok_s"
    if reference_config not in set(accounting["config"]):
        known = ", ".join(sorted(map(str, set(accounting["config"]))))
        raise InputError(
            "-", "reference_config", f"no point with config {reference_config!r}; known: {known}"
        )
    if accounting["num_gpus"].isna().any():
        raise InputError("-", "num_gpus", "unknown for some point: fill it with with_gpu_counts")
    peaks = []
    for _, g in accounting.groupby("config", sort=False):
        v = g[col].to_numpy(np.float64)
        peaks.append(g.iloc[int(np.nanargmax(v)) if np.isfinite(v).any() else 0])
    tab = pd.DataFrame(peaks).reset_index(drop=True)
    ref = tab[tab["config"] == reference_config].iloc[0]
    t_ref, n_ref = float(ref[col]), int(ref["num_gpus"])
    rows = []
    for _, r in tab.iterrows():
        t, n = float(r[col]), int(r["num_gpus"])
        row = dict(config=r["config"], point_id=r["point_id"], num_gpus=n, replicas=r["replicas"])
        row |= dict(
            tok_s=t, tok_s_per_gpu=t / n, gpu_ratio=n / n_ref, linear_tok_s=t_ref * n / n_ref
        )
        speedup = (
            t / t_ref if np.isfinite(t) and np.isfinite(t_ref) and t > 0 and t_ref > 0 else np.nan
        )
        row |= dict(speedup=speedup, efficiency=speedup / (n / n_ref))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["is_reference"] = out["config"] == reference_config
    out = out.sort_values(["is_reference", "num_gpus"], ascending=[False, True], kind="stable")
    out = out.drop(columns="is_reference").reset_index(drop=True)
    out["replicas"] = out["replicas"].astype("Int64")
    return out
