"""What eplb-balance measures: expert loads, static placement and EPLB fitted on the first steps
and scored on the later ones, uniform routing's per-step floor, the recovered share (%), sweeps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import expert_load
from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.physics import eplb
from rackbook.results.eplb_balance.synthetic import Shape, redundant_for, tokens_per_step


def loads_from_table(df: pd.DataFrame, where: str | Path | None = None) -> np.ndarray:
    """``expert_load`` rows -> ``(windows, layers, experts)`` float64 tokens."""
    if df.empty:
        raise InputError(where, "expert_load", "no rows")
    key = ["window", "layer", "expert"]
    for col in key:
        if (df[col] < 0).any():
            raise InputError(where, f"expert_load.{col}", "negative index")
    if df.duplicated(key).any():
        raise InputError(where, "expert_load", "duplicate (window, layer, expert) rows")
    shape = tuple(int(df[c].max()) + 1 for c in key)
    if len(df) != shape[0] * shape[1] * shape[2]:
        raise InputError(
            where,
            "expert_load",
            f"incomplete grid: {len(df)} rows for {shape[0]} windows x {shape[1]} layers x "
            f"{shape[2]} experts",
        )
    arr = np.zeros(shape, dtype=np.float64)
    arr[df["window"].to_numpy(), df["layer"].to_numpy(), df["expert"].to_numpy()] = df[
        "tokens"
    ].to_numpy(np.float64)
    for w in range(shape[0]):
        expert_load.as_loads(arr[w], where, f"expert_load window {w}")
    return arr


def trace_loads(tr: Trace) -> np.ndarray:
    if "expert_load" not in tr.extra:
        raise InputError(tr.path, "expert_load", "the trace has no expert_load table")
    return loads_from_table(tr.extra["expert_load"], tr.path)


@dataclass
class Placements:
    """Static and EPLB placements (``phy2log``) for one layout, fitted on summed loads."""

    static: np.ndarray
    eplb: np.ndarray
    ep_size: int


def score(
    loads: np.ndarray,
    fit_windows: int,
    ep_size: int,
    redundant: int,
    groups: int = 1,
    nodes: int = 1,
) -> tuple[dict[str, float], pd.DataFrame]:
    """EPLB fitted on the first ``fit_windows`` windows summed, beside vLLM's static placement
    (:class:`Placements` in the table's ``attrs["placements"]``), each's balancedness (vLLM's,
    ``*_legacy``) on every later window: (means and recovered fractions, per window)."""
    arr = np.asarray(loads, dtype=np.float64)
    if not 1 <= fit_windows < arr.shape[0]:
        problem = f"need 1 <= fit_windows < {arr.shape[0]} windows (at least one left to score)"
        raise InputError(None, "fit_windows", problem)
    fit_loads, scored = arr[:fit_windows].sum(axis=0), arr[fit_windows:]
    num_logical = fit_loads.shape[1]
    num_physical = eplb.check_layout(num_logical, ep_size, redundant, groups, nodes)
    phy2log, _, _ = eplb.rebalance_experts(fit_loads, num_physical, groups, nodes, ep_size)
    pl = Placements(eplb.static_placement(num_logical, ep_size, redundant), phy2log, ep_size)
    rows = []
    for i, window in enumerate(scored):
        rs = eplb.rank_loads_from_placement(window, pl.static, ep_size)
        re = eplb.rank_loads_from_placement(window, pl.eplb, ep_size)
        legacy = (eplb.balancedness_legacy(rs), eplb.balancedness_legacy(re))
        rows.append((fit_windows + i, eplb.balancedness(rs), eplb.balancedness(re), *legacy))
    per = pd.DataFrame(rows, columns=["window", "static", "eplb", "static_legacy", "eplb_legacy"])
    s = {k: float(per[k].mean()) for k in ("static", "eplb", "static_legacy", "eplb_legacy")}
    s["fraction_recovered_gap"] = eplb.fraction_recovered_gap(s["static"], s["eplb"])
    s["fraction_of_uniform"] = eplb.fraction_of_uniform(s["eplb"])
    s.update(ep_size=ep_size, redundant=redundant, fit_windows=fit_windows, scored=len(per))
    per.attrs["placements"] = pl
    return s, per


def layer_rank_loads(loads: np.ndarray, pl: Placements, window: int, layer: int) -> pd.DataFrame:
    """Tokens per EP rank in one layer of one window, static vs EPLB (one row per rank)."""
    one = loads[window, layer][None, :]
    static = eplb.rank_loads_from_placement(one, pl.static, pl.ep_size)[0]  # one row, all layers
    moved = eplb.rank_loads_from_placement(one, pl.eplb[layer], pl.ep_size)[0]  # per layer
    return pd.DataFrame({"rank": np.arange(pl.ep_size), "static": static, "eplb": moved})


def uniform_floor(
    num_layers: int, tokens_per_layer: int, ep_size: int, seed: int = 0, windows: int = 8
) -> float:
    """Mean per-step balancedness of uniform routing (below 1: a step is a finite sample)."""
    rng = np.random.default_rng(seed)
    p = np.full(ep_size, 1.0 / ep_size)
    vals = [
        eplb.balancedness(rng.multinomial(tokens_per_layer, p, size=num_layers))
        for _ in range(windows)
    ]
    return float(np.mean(vals))


def recovered_shares(static: float, eplb_value: float, floor: float) -> pd.DataFrame:
    """Three readings of "share of uniform routing's potential recovered" (percent)."""
    gap = "(T_eplb - T_static) / (T_uniform - T_static), T_uniform = 1"
    same = "T_eplb / T_uniform, T_uniform = per-step balancedness of uniform routing"
    ratio = "T_eplb / T_uniform, T_uniform = 1"
    rows = [
        ("gap closed", gap, 100 * eplb.fraction_recovered_gap(static, eplb_value)),
        ("ratio to uniform", ratio, 100 * eplb.fraction_of_uniform(eplb_value)),
        (
            "ratio to uniform, same sampling",
            same,
            100 * eplb.fraction_of_uniform(eplb_value, floor),
        ),
    ]
    return pd.DataFrame(rows, columns=["reading", "formula", "pct"])


def scenario(
    *,
    skew: float,
    seed: int,
    shape: Shape,
    ep_size: int,
    redundant: int,
    batch_per_rank: int,
    windows: int,
    fit_windows: int,
    groups: int = 1,
    nodes: int = 1,
) -> dict[str, float]:
    """:func:`score` of synthetic loads for one layout, with ``uniform_floor`` and ``skew``."""
    n = tokens_per_step(batch_per_rank, ep_size, shape.top_k)
    loads, _ = eplb.synthetic_loads(shape.num_layers, shape.num_experts, n, skew, seed, windows)
    s, _ = score(loads, fit_windows, ep_size, redundant, groups, nodes)
    s["uniform_floor"] = uniform_floor(shape.num_layers, n, ep_size, seed, windows - fit_windows)
    s["skew"] = float(skew)
    s["batch_per_rank"] = int(batch_per_rank)
    return s


def sweep(base: dict[str, Any], name: str, values: Iterable[Any]) -> pd.DataFrame:
    """:func:`scenario` per value of parameter ``name`` (over ``ep_size``, redundant follows)."""
    rows = []
    for v in values:
        kw = {**base, name: v}
        if name == "ep_size":
            kw["redundant"] = redundant_for(int(v), base["shape"].num_experts)
        rows.append(scenario(**kw))
    return pd.DataFrame(rows)
