"""Expert-parallel load balancing (EPLB): balancedness, placements and DeepSeek's EPLB algorithm,
in numpy (no torch, no vLLM)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from rackbook.core.expert_load import as_loads, read_loads
from rackbook.errors import InputError

#: Name recorded in the metadata of every synthetic load set.
SYNTHETIC_GENERATOR = "rackbook.eplb.synthetic_loads (zipf-permuted-multinomial v1)"

_Source = str | Path | None


def check_layout(
    num_logical: int,
    ep_size: int,
    redundant: int,
    groups: int = 1,
    nodes: int = 1,
    source: _Source = None,
) -> int:
    """Check an EP layout; return the number of physical experts (logical + redundant)."""
    values = {"ep_size": ep_size, "redundant": redundant, "groups": groups, "nodes": nodes}
    for (name, value), low in zip(values.items(), (1, 0, 1, 1), strict=True):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(source, name, f"must be an integer >= {low}, got {value!r}")
    num_physical = num_logical + redundant
    if num_physical % ep_size:
        problem = f"{num_logical} experts + {redundant} redundant = {num_physical} physical experts"
        raise InputError(source, "ep_size", f"{problem} do not divide evenly over {ep_size} ranks")
    if num_logical % groups:
        raise InputError(source, "groups", f"{groups} groups do not divide {num_logical} experts")
    if groups % nodes == 0 and ep_size % nodes:
        problem = f"{ep_size} ranks do not divide evenly over {nodes} nodes"
        raise InputError(source, "nodes", problem)
    return num_physical


def _mean_over_max(rank_loads: Any, axis: int) -> float:
    arr = np.asarray(rank_loads, dtype=np.float64)
    arr = arr[None, :] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.size == 0:
        raise InputError(None, "rank_loads", f"expected shape (layers, ranks), got {arr.shape}")
    mx = float(arr.max(axis=axis).sum())
    return float(arr.mean(axis=axis).sum()) / mx if mx > 0 else 0.0


def balancedness(rank_loads: Any) -> float:
    """vLLM's EPLB balancedness (dimensionless, in (0, 1]; 1 = perfectly even)."""
    return _mean_over_max(rank_loads, axis=1)


def balancedness_legacy(rank_loads: Any) -> float:
    """The balancedness vLLM logged from about Aug 2025 to Aug 2026 (reduced on the wrong axis)."""
    return _mean_over_max(rank_loads, axis=0)


def static_placement(num_experts: int, ep_size: int, redundant: int = 0) -> np.ndarray:
    """Static (no-EPLB) placement as ``phy2log`` of shape ``(num_experts + redundant,)``."""
    check_layout(num_experts, ep_size, redundant)
    return np.concatenate(
        [np.arange(num_experts, dtype=np.int64), np.arange(redundant, dtype=np.int64) % num_experts]
    )


def replica_counts(phy2log: Any, num_logical: int) -> np.ndarray:
    """Replicas per logical expert, ``(layers, num_logical)`` int64 (vLLM's ``logcnt``)."""
    p2l = np.atleast_2d(np.asarray(phy2log, dtype=np.int64))
    cnt = np.zeros((p2l.shape[0], num_logical), dtype=np.int64)
    rows = np.repeat(np.arange(p2l.shape[0]), p2l.shape[1])
    np.add.at(cnt, (rows, p2l.ravel()), 1)
    return cnt


def rank_loads_from_placement(logical_loads: Any, phy2log: Any, ep_size: int) -> np.ndarray:
    """Tokens per EP rank, ``(layers, ep_size)``, for a placement (every expert placed)."""
    loads = as_loads(logical_loads)
    num_layers, num_logical = loads.shape
    p2l = np.asarray(phy2log, dtype=np.int64)
    if p2l.ndim == 1:
        p2l = np.broadcast_to(p2l, (num_layers, p2l.shape[0]))
    if p2l.ndim != 2 or p2l.shape[0] != num_layers:
        raise InputError(None, "phy2log", f"shape {p2l.shape} does not match {num_layers} layers")
    num_physical = p2l.shape[1]
    if ep_size < 1 or num_physical % ep_size:
        raise InputError(
            None, "ep_size", f"{num_physical} physical experts do not divide over {ep_size} ranks"
        )
    share = np.take_along_axis(loads / replica_counts(p2l, num_logical), p2l, axis=1)
    return share.reshape(num_layers, ep_size, num_physical // ep_size).sum(axis=2)


# DeepSeek's EPLB as vLLM runs it: a numpy port of vllm/distributed/eplb/policy/default.py
# (vLLM 0.32/0.33, Apache-2.0), same steps and order; equal weights go by ascending item id
# (a stable sort: one of the orders vLLM's unstable one may give, the same on every CPU).


def balanced_packing(weight: np.ndarray, num_packs: int) -> tuple[np.ndarray, np.ndarray]:
    """Pack ``n`` weighted items per row into ``num_packs`` packs of exactly ``n / num_packs``."""
    num_layers, num_items = weight.shape
    per_pack = num_items // num_packs
    if per_pack == 1:
        pack_index = np.tile(np.arange(num_items, dtype=np.int64), (num_layers, 1))
        return pack_index, np.zeros_like(pack_index)
    order = np.argsort(-weight, axis=-1, kind="stable")  # equal weights: lower item id first
    pack_index = np.full((num_layers, num_items), -1, dtype=np.int64)
    rank_in_pack = np.full((num_layers, num_items), -1, dtype=np.int64)
    pack_weights = np.zeros((num_layers, num_packs), dtype=np.float64)
    pack_items = np.zeros((num_layers, num_packs), dtype=np.int64)
    # every layer's greedy pass at once (argmin takes each row's first minimum, as a loop would)
    rows = np.arange(num_layers)
    for step in range(num_items):
        item = order[:, step]
        pack = np.argmin(pack_weights, axis=1)
        pack_index[rows, item] = pack
        n = pack_items[rows, pack]
        rank_in_pack[rows, item] = n
        pack_weights[rows, pack] += weight[rows, item]
        pack_items[rows, pack] = n + 1
        full = n + 1 == per_pack
        pack_weights[rows[full], pack[full]] = np.inf  # full: never the lightest again
    return pack_index, rank_in_pack


def replicate_experts(weight: np.ndarray, num_phy: int) -> tuple[np.ndarray, np.ndarray]:
    """Add replicas one by one to the expert with the highest load per replica."""
    rows, num_log = weight.shape
    phy2log = np.tile(np.arange(num_phy, dtype=np.int64), (rows, 1))
    logcnt = np.ones((rows, num_log), dtype=np.int64)
    r = np.arange(rows, dtype=np.int64)
    for i in range(num_log, num_phy):
        hottest = np.argmax(weight / logcnt, axis=-1)
        phy2log[:, i] = hottest
        logcnt[r, hottest] += 1
    return phy2log, logcnt


def rebalance_experts_hierarchical(
    weight: np.ndarray, num_physical: int, num_groups: int, num_nodes: int, num_ranks: int
) -> np.ndarray:
    """Hierarchical EPLB; returns ``phy2log`` ``(layers, num_physical)``."""
    num_layers, num_logical = weight.shape  # the layout checked (check_layout): all divide
    group_size = num_logical // num_groups
    groups_per_node = num_groups // num_nodes
    per_rank = num_physical // num_ranks

    # 1. groups -> nodes
    group_load = weight.reshape(num_layers, num_groups, group_size).sum(axis=-1)
    g_pack, g_rank = balanced_packing(group_load, num_nodes)
    log2mlog = (
        ((g_pack * groups_per_node + g_rank)[..., None] * group_size)
        + np.arange(group_size, dtype=np.int64)
    ).reshape(num_layers, num_logical)
    mlog2log = np.argsort(log2mlog, axis=1, kind="stable")  # the inverse permutation

    # 2. replicas within each node
    mlog_load = np.take_along_axis(weight, mlog2log, axis=1).reshape(-1, num_logical // num_nodes)
    phy2mlog, mlogcnt = replicate_experts(mlog_load, num_physical // num_nodes)

    # 3. replicas -> ranks of the node
    phy_load = np.take_along_axis(mlog_load / mlogcnt, phy2mlog, axis=1)
    pack, rank_in_pack = balanced_packing(phy_load, num_ranks // num_nodes)
    pphy2phy = np.argsort(pack * per_rank + rank_in_pack, axis=1, kind="stable")
    pphy2mlog = np.take_along_axis(phy2mlog, pphy2phy, axis=1)
    pphy2mlog = (
        pphy2mlog.reshape(num_layers, num_nodes, -1)
        + np.arange(0, num_logical, num_logical // num_nodes, dtype=np.int64)[None, :, None]
    ).reshape(num_layers, -1)
    return np.take_along_axis(mlog2log, pphy2mlog, axis=1)


def eplb_branch(num_groups: int, num_nodes: int) -> str:
    """``"hierarchical"`` when expert groups divide evenly over nodes, else ``"global"``."""
    return "hierarchical" if num_groups % num_nodes == 0 else "global"


def rebalance_experts(
    weight: Any, num_replicas: int, num_groups: int, num_nodes: int, num_ranks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DeepSeek's EPLB as vLLM's ``DefaultEplbPolicy.rebalance_experts`` runs it (numpy port)."""
    w = as_loads(weight, field="weight").astype(np.float32)
    if eplb_branch(num_groups, num_nodes) == "global":
        num_groups = num_nodes = 1
    phy2log = rebalance_experts_hierarchical(w, num_replicas, num_groups, num_nodes, num_ranks)
    logcnt = replica_counts(phy2log, w.shape[1])  # and log2phy, as vLLM's compute_logical_maps
    log2phy = np.full((*logcnt.shape, max(int(logcnt.max()), 1)), -1, dtype=np.int64)
    running, layers = np.zeros_like(logcnt), np.arange(phy2log.shape[0])
    for phys in range(phy2log.shape[1]):
        log = phy2log[:, phys]
        log2phy[layers, log, running[layers, log]] = phys
        running[layers, log] += 1
    return phy2log, log2phy, logcnt


def fraction_recovered_gap(t_static: float, t_eplb: float, t_uniform: float = 1.0) -> float:
    """Share of the static-to-uniform throughput gap that EPLB closes."""
    gap = t_uniform - t_static
    return (t_eplb - t_static) / gap if gap != 0 else math.nan


def fraction_of_uniform(t_eplb: float, t_uniform: float = 1.0) -> float:
    """EPLB throughput as a share of uniform routing's: ``T_eplb / T_uniform``."""
    return t_eplb / t_uniform if t_uniform != 0 else math.nan


def synthetic_popularity(
    num_layers: int, num_experts: int, skew: float, seed: int
) -> tuple[np.ndarray, np.random.Generator]:
    """Routing probabilities ``(layers, experts)`` of the SYNTHETIC model, and the generator."""
    if not math.isfinite(skew) or skew < 0:
        raise InputError(None, "skew", f"must be finite and >= 0, got {skew!r}")
    rng = np.random.default_rng(seed)
    weights = np.arange(1, num_experts + 1, dtype=np.float64) ** -float(skew)
    weights /= weights.sum()
    pop = np.empty((num_layers, num_experts), dtype=np.float64)
    for layer in range(num_layers):
        pop[layer, rng.permutation(num_experts)] = weights
    return pop, rng


def synthetic_loads(
    num_layers: int,
    num_experts: int,
    tokens_per_layer: int,
    skew: float,
    seed: int,
    windows: int = 1,
) -> tuple[np.ndarray, dict[str, Any]]:
    """SYNTHETIC expert loads: ``(loads, metadata)``; loads ``(windows, layers, experts)`` int64."""
    pop, rng = synthetic_popularity(num_layers, num_experts, skew, seed)
    loads = np.empty((windows, num_layers, num_experts), dtype=np.int64)
    for w in range(windows):
        for layer in range(num_layers):
            loads[w, layer] = rng.multinomial(tokens_per_layer, pop[layer])
    names = ("num_layers", "num_experts", "tokens_per_layer", "windows")
    counts = zip(names, map(int, (num_layers, num_experts, tokens_per_layer, windows)), strict=True)
    note = "synthetic routing (Zipf-like popularity over a seeded per-layer permutation, "
    note += "multinomial draws); not measured from any model"
    meta = dict(kind="synthetic", generator=SYNTHETIC_GENERATOR, seed=int(seed), skew=float(skew))
    return loads, meta | dict(counts) | {"note": note}


def calibrate_skew(
    target_static_balancedness: float,
    ep_size: int,
    *,
    num_layers: int,
    num_experts: int,
    tokens_per_layer: int,
    seed: int = 0,
    redundant: int = 0,
    windows: int = 1,
) -> dict[str, Any]:
    """The SYNTHETIC skew whose static placement at ``ep_size`` scores the target (within 1e-4)."""
    tol = 1e-4
    phy2log = static_placement(num_experts, ep_size, redundant)  # checks the layout

    def f(s: float) -> float:
        loads, _ = synthetic_loads(num_layers, num_experts, tokens_per_layer, s, seed, windows)
        return balancedness(rank_loads_from_placement(loads.sum(axis=0), phy2log, ep_size))

    target = float(target_static_balancedness)
    lo, f_lo = 0.0, f(0.0)
    if f_lo < target:
        raise InputError(
            None, "target", f"{target} is above the static balancedness at skew 0 ({f_lo:.4f})"
        )
    hi, f_hi = 1.0, f(1.0)
    while f_hi >= target:
        if hi >= 64:
            raise InputError(
                None, "target", f"{target} is below the static balancedness at skew 64 ({f_hi:.4f})"
            )
        lo, f_lo = hi, f_hi
        hi *= 2
        f_hi = f(hi)
    iterations = 0
    while iterations < 200 and abs(f_lo - target) > tol and hi - lo > 1e-9:
        mid, iterations = 0.5 * (lo + hi), iterations + 1
        f_mid = f(mid)
        if f_mid >= target or abs(f_mid - target) <= tol:  # within tol: lo ends the search
            lo, f_lo = mid, f_mid
        if f_mid < target:
            hi, f_hi = mid, f_mid
    skew, achieved = (lo, f_lo) if abs(f_lo - target) <= abs(f_hi - target) else (hi, f_hi)
    _, meta = synthetic_loads(num_layers, num_experts, tokens_per_layer, skew, seed, 1)
    meta.update(windows=int(windows))
    return {
        "skew": skew,
        "balancedness_static": achieved,
        "target": target,
        "ep_size": int(ep_size),
        "redundant": int(redundant),
        "iterations": iterations,
        **meta,
    }


def evaluate(
    loads: Any,
    ep_size: int,
    redundant: int,
    groups: int = 1,
    nodes: int = 1,
    *,
    eval_loads: Any = None,
    source: _Source = None,
) -> dict[str, Any]:
    """Balancedness and modelled MoE throughput before (static) and after EPLB."""
    fit = as_loads(loads, source)
    if float(fit.sum()) == 0:
        raise InputError(source, "loads", "all token counts are zero; balancedness is undefined")
    measure = fit if eval_loads is None else as_loads(eval_loads, source, "eval_loads")
    if measure.shape != fit.shape:
        raise InputError(source, "eval_loads", f"shape {measure.shape} != loads {fit.shape}")
    num_layers, num_logical = fit.shape
    num_physical = check_layout(num_logical, ep_size, redundant, groups, nodes, source)

    static = static_placement(num_logical, ep_size, redundant)
    phy2log, _, logcnt = rebalance_experts(fit, num_physical, groups, nodes, ep_size)
    r_static = rank_loads_from_placement(measure, static, ep_size)
    r_eplb = rank_loads_from_placement(measure, phy2log, ep_size)

    t_static, t_eplb = balancedness(r_static), balancedness(r_eplb)  # = throughput / uniform's
    gap = fraction_recovered_gap(t_static, t_eplb)
    names = "num_layers num_logical_experts num_physical_experts ep_size redundant groups nodes"
    sizes = (num_layers, num_logical, num_physical, ep_size, redundant, groups, nodes)
    return {
        "balancedness_static": t_static,
        "balancedness_eplb": t_eplb,
        "balancedness_static_legacy": balancedness_legacy(r_static),
        "balancedness_eplb_legacy": balancedness_legacy(r_eplb),
        "fraction_recovered_gap": None if math.isnan(gap) else gap,
        "fraction_of_uniform": fraction_of_uniform(t_eplb),
        **{k: int(v) for k, v in zip(names.split(), sizes, strict=True)},
        "policy": eplb_branch(groups, nodes),
        "max_replicas": int(logcnt.max()),
        "tokens": float(measure.sum()),
    }


def cli_eplb(args: argparse.Namespace) -> int:
    """``rackbook eplb LOADS --ep-size N --redundant R [--groups G] [--nodes K] [--json]``."""
    path = Path(args.loads)
    loads = read_loads(path)
    res = evaluate(loads, args.ep_size, args.redundant, args.groups, args.nodes, source=path)
    f = {k: "n/a" if v is None else f"{v:.4f}" for k, v in res.items() if not isinstance(v, str)}
    print(
        f"{path}: {res['num_layers']} layers x {res['num_logical_experts']} experts, "
        f"EP {res['ep_size']}, {res['num_physical_experts']} physical experts "
        f"({res['redundant']} redundant), {res['policy']} EPLB\n"
        f"balancedness (vLLM): static {f['balancedness_static']} -> EPLB {f['balancedness_eplb']}\n"
        f"balancedness (legacy axis, vLLM ~2025-08..2026-08): static "
        f"{f['balancedness_static_legacy']} -> EPLB {f['balancedness_eplb_legacy']}\n"
        "MoE throughput vs uniform routing (slowest rank sets the step): "
        f"{f['fraction_of_uniform']} of uniform, "
        f"{f['fraction_recovered_gap']} of the static-to-uniform gap recovered"
    )
    if args.json:
        print(json.dumps({**res, "source": str(path)}, allow_nan=False))
    return 0
