"""Scaling of measured throughput from a reference configuration (one replica, "a node") to the
other configurations of a trace.

Definitions (tokens/s from :func:`rackbook.scaling.token_accounting`; GPU counts per point):

- GPUs of a point = ``points.num_gpus`` when recorded, else replicas x ``gpus_per_replica``
  (replicas: ``points.replicas``, else the servers seen in ``server_metrics`` for the point,
  else 1). On a CPU, where ``num_gpus`` is null, ``gpus_per_replica`` stands for the
  accelerators one server would use;
- per configuration, the point with the highest ``<metric>_tok_s`` (its peak) represents it;
- speedup = T / T_ref; GPU ratio = n / n_ref; scaling efficiency = speedup / GPU ratio =
  (T / n) / (T_ref / n_ref), the per-GPU ratio (1.0 = linear scaling);
- linear line: T_ref x n / n_ref, the throughput of perfect scaling at n GPUs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from rackbook import scaling
from rackbook.errors import InputError
from rackbook.traces import Trace

#: Token kinds a scaling metric may name (``<metric>_tok_s`` columns of token_accounting).
METRICS: tuple[str, ...] = ("total", "output", "input", "new_input", "cached_input", "computed")


def with_gpu_counts(trace: Trace, gpus_per_replica: int = 1) -> Trace:
    """A copy of ``trace`` whose null ``points.num_gpus`` are replicas x ``gpus_per_replica``.

    Adds the points columns ``replicas`` (filled as described in the module docstring) and
    ``gpus_source`` (``points.num_gpus`` or ``replicas x gpus_per_replica``). Other tables are
    shared with ``trace``, not copied.
    """
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


def scaling_vs_reference(
    accounting: pd.DataFrame, reference_config: str = "1x", metric: str = "total"
) -> pd.DataFrame:
    """Per configuration of ``accounting`` (:func:`rackbook.scaling.token_accounting` rows):
    config, point_id, num_gpus, replicas, tok_s (``<metric>_tok_s`` of the configuration's peak
    point), tok_s_per_gpu, gpu_ratio, linear_tok_s, speedup, efficiency, formula. The reference
    row comes first (speedup and efficiency 1); the others follow in GPU order. Throughputs in
    tokens/s. An unknown throughput (NaN, e.g. cached tokens unknown) gives NaN ratios and a
    formula that says so.
    """
    if metric not in METRICS:
        raise InputError("-", "metric", f"{metric!r} is not one of {', '.join(METRICS)}")
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
        i = int(np.nanargmax(v)) if np.isfinite(v).any() else 0
        peaks.append(g.iloc[i])
    tab = pd.DataFrame(peaks).reset_index(drop=True)
    ref = tab[tab["config"] == reference_config].iloc[0]
    t_ref, n_ref = float(ref[col]), int(ref["num_gpus"])
    rows = []
    for _, r in tab.iterrows():
        t, n = float(r[col]), int(r["num_gpus"])
        row = {
            "config": r["config"],
            "point_id": r["point_id"],
            "num_gpus": n,
            "replicas": r["replicas"],
            "tok_s": t,
            "tok_s_per_gpu": t / n,
            "gpu_ratio": n / n_ref,
            "linear_tok_s": t_ref * n / n_ref,
        }
        if np.isfinite(t) and np.isfinite(t_ref) and t > 0 and t_ref > 0:
            s = scaling.scaling_efficiency(t, t_ref, n, n_ref)
            row.update(speedup=s.speedup, efficiency=s.efficiency, formula=s.formula)
        else:
            row.update(
                speedup=np.nan, efficiency=np.nan, formula=f"{metric} tokens/s unknown: no ratio"
            )
        rows.append(row)
    out = pd.DataFrame(rows)
    out["is_reference"] = out["config"] == reference_config
    out = out.sort_values(["is_reference", "num_gpus"], ascending=[False, True], kind="stable")
    out = out.drop(columns="is_reference").reset_index(drop=True)
    out["replicas"] = out["replicas"].astype("Int64")
    return out
