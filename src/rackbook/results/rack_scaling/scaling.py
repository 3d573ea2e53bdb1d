"""Scaling of a throughput: from one node to a rack (speedup, nodes, scaling efficiency), the
node sizes "a single node" may mean, and the measured scaling of a trace's configurations from a
reference configuration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rackbook.core.units import percent
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.results.rack_scaling.tokens import METRICS

#: Node sizes to read "a single node" as: catalog system ids (GB300 tray = 4 GPUs, HGX B300 = 8).
NODE_SYSTEMS: tuple[str, ...] = ("gb300-tray", "hgx-b300")


@dataclass(frozen=True)
class Scaling:
    """Scaling of a throughput from one node to ``n_gpus`` GPUs (throughputs in tokens/s)."""

    speedup: float
    nodes: float
    efficiency: float
    per_gpu_n: float
    per_gpu_1: float
    formula: str


def scaling_efficiency(total_n: float, total_1: float, n_gpus: int, gpus_per_node: int) -> Scaling:
    """Speedup T_n / T_1 and scaling efficiency = speedup / (n_gpus / gpus_per_node), the
    per-GPU ratio (1.0: linear). Throughputs in tokens/s (any consistent unit)."""
    given = dict(total_n=total_n, total_1=total_1, n_gpus=n_gpus, gpus_per_node=gpus_per_node)
    for name, v in given.items():
        if not v > 0:
            raise InputError("-", name, f"must be > 0, got {v}")
    speedup = total_n / total_1
    nodes = n_gpus / gpus_per_node
    eff = speedup / nodes
    formula = (
        f"speedup = {total_n:,.6g} / {total_1:,.6g} = {speedup:.4g}x; nodes = {n_gpus} / "
        f"{gpus_per_node} = {nodes:g}; efficiency = {speedup:.4g} / {nodes:g} = {percent(eff, 2)}"
    )
    return Scaling(speedup, nodes, eff, total_n / n_gpus, total_1 / gpus_per_node, formula)


def node_sizes(systems: tuple[str, ...] = NODE_SYSTEMS) -> dict[str, int]:
    """GPUs per node of each catalog system id (``gb300-tray`` -> 4, ``hgx-b300`` -> 8)."""
    return {s: catalogs.system(s).gpus for s in systems}


def scaling_vs_reference(
    accounting: pd.DataFrame, reference_config: str = "1x", metric: str = "total"
) -> pd.DataFrame:
    """Scaling from ``reference_config`` per configuration of ``accounting``
    (:func:`rackbook.results.rack_scaling.token_accounting` rows, GPU counts filled), read at
    its peak ``<metric>_tok_s`` point: config, point_id, num_gpus, replicas, tok_s,
    tok_s_per_gpu, gpu_ratio, linear_tok_s (T_ref x n / n_ref), speedup, efficiency, formula;
    tokens/s. The reference first, then GPU order; an unknown throughput gives NaN ratios."""
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
            s = scaling_efficiency(t, t_ref, n, n_ref)
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


SPEEDUP_FORMULA = (
    r"\text{speedup} = \frac{T_n}{T_1},\quad "
    r"\text{efficiency} = \frac{T_n / n}{T_1 / n_1} = \frac{\text{speedup}}{n / n_1}"
)
