"""Rack scaling: which tokens a throughput counts, per-GPU figures, scaling efficiency, and the
readings of the published "954,000 tokens/s per GPU, 7.9x a node, $38.96 per GPU-hour".

Definitions (per sweep point, successful requests, window length ``duration_s`` in seconds):

- output tokens: sum(output_tokens); input tokens: sum(prompt_tokens);
- cached input tokens: prompt tokens served from the prefix cache (``cached_prompt_tokens`` when
  every request row has it; else ``input x hits / queries`` from the Prometheus counters in the
  ``server_metrics`` table, deltas after - before the point; else unknown, NaN);
- new input tokens = input - cached input (tokens the server had to prefill);
- each count / duration_s is a rate in tokens/s: ``output_tok_s``, ``new_input_tok_s``,
  ``cached_input_tok_s``, ``input_tok_s``; ``total_tok_s`` = input + output (vLLM's
  ``total_token_throughput``, cached tokens included); ``computed_tok_s`` = new input + output
  (tokens the GPUs computed);
- per GPU: each rate / num_gpus (``points.num_gpus``, else the ``gpus`` argument), as
  InferenceX's ``tput_per_gpu`` = total_token_throughput / GPUs.

Scaling: speedup = T_n / T_1; nodes = n_gpus / gpus_per_node; scaling efficiency = speedup /
nodes = (T_n / n_gpus) / (T_1 / gpus_per_node), the per-GPU ratio.

A dollar figure per GPU-hour is not a price per answer: an answer's price depends on how many
GPU-seconds it takes (its tokens, context, and the batch it shares), which a per-GPU-hour figure
does not say.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rackbook.core.server_metrics import prefix_cache_hit_rate
from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import roofline, units

#: Node sizes to read "a single node" as: catalog system ids (GB300 tray = 4 GPUs, HGX B300 = 8).
NODE_SYSTEMS: tuple[str, ...] = ("gb300-tray", "hgx-b300")

#: Token prices InferenceX uses, US dollars per million tokens (uncached input and output;
#: cached input). Source: claims-context.md section "Physics checks worth showing".
INFERENCEX_USD_PER_M_UNCACHED = 1.00
INFERENCEX_USD_PER_M_CACHED = 0.10
INFERENCEX_PRICES_SOURCE = (
    'claims-context.md section "Physics checks worth showing" (InferenceX prices tokens at '
    "$1/M uncached, $0.10/M cached; low confidence)"
)

#: The published figures (data/claims.yaml: rack-scaling.throughput, .speedup, .cost).
CLAIM_TOKENS_PER_S = 954_000.0
CLAIM_SPEEDUP = 7.9
CLAIM_USD_PER_GPU_HOUR = 38.96
CLAIM_GPUS = 72

TOKENS_FORMULA = (
    r"\text{tok/s} = \frac{\sum \text{tokens}}{\text{duration}},\quad "
    r"\text{new input} = \text{input} - \text{cached},\quad "
    r"\text{per GPU} = \frac{\text{tok/s}}{\text{GPUs}}"
)

_RATES = ("output", "new_input", "cached_input", "input", "total", "computed")


# ----------------------------------------------------------------------------- accounting


def token_accounting(trace: Trace, gpus: int | None = None) -> pd.DataFrame:
    """Per point: tokens/s counted as output, new (uncached) input, cached input, and totals,
    overall and per GPU.

    Columns: point_id, engine, config, num_gpus (``points.num_gpus``, else ``gpus``),
    replicas (``points.replicas`` if the trace has it, else the number of servers in
    ``server_metrics`` for the point, else NA), duration_s, requests (successful), token counts
    ``output_tokens``, ``input_tokens``, ``cached_input_tokens``, ``new_input_tokens``, rates
    ``<kind>_tok_s`` and ``<kind>_tok_s_per_gpu`` for kind in output, new_input, cached_input,
    input, total (input + output), computed (new input + output), all tokens/s; ``cached_source``
    (``requests`` | ``server_metrics`` | ``unknown``) and ``note`` (why it is unknown, or the
    counters used). Cached tokens unknown -> NaN in the cached, new input and computed columns.
    ``DataFrame.attrs["formula"]`` holds the definitions.
    """
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


# ----------------------------------------------------------------------------- scaling


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
    """Speedup T_n / T_1 and scaling efficiency = speedup / (n_gpus / gpus_per_node), which is
    the per-GPU ratio (T_n / n_gpus) / (T_1 / gpus_per_node). Throughputs in tokens/s (any
    consistent unit); 1.0 is linear scaling."""
    for name, v in (
        ("total_n", total_n),
        ("total_1", total_1),
        ("n_gpus", n_gpus),
        ("gpus_per_node", gpus_per_node),
    ):
        if not v > 0:
            raise InputError("-", name, f"must be > 0, got {v}")
    speedup = total_n / total_1
    nodes = n_gpus / gpus_per_node
    eff = speedup / nodes
    formula = (
        f"speedup = {total_n:,.6g} / {total_1:,.6g} = {speedup:.4g}x; nodes = {n_gpus} / "
        f"{gpus_per_node} = {nodes:g}; efficiency = {speedup:.4g} / {nodes:g} = {eff:.2%}"
    )
    return Scaling(speedup, nodes, eff, total_n / n_gpus, total_1 / gpus_per_node, formula)


def node_sizes(systems: tuple[str, ...] = NODE_SYSTEMS) -> dict[str, int]:
    """GPUs per node of each catalog system id (``gb300-tray`` -> 4, ``hgx-b300`` -> 8)."""
    return {s: catalogs.system(s).gpus for s in systems}


def speedup_readings(
    speedup: float = CLAIM_SPEEDUP,
    n_gpus: int = CLAIM_GPUS,
    systems: tuple[str, ...] = NODE_SYSTEMS,
) -> pd.DataFrame:
    """What a ``speedup`` over "a single node" means for each node size in ``systems``.

    Per system: gpus_per_node, nodes = n_gpus / gpus_per_node, efficiency = speedup / nodes
    (dimensionless), formula. 7.9x on 72 GPUs: 18 GB300 trays of 4 -> 7.9 / 18 = 43.9 %;
    9 HGX B300 nodes of 8 -> 7.9 / 9 = 87.8 %.
    """
    if not speedup > 0:
        raise InputError("-", "speedup", f"must be > 0, got {speedup}")
    rows = []
    for sid, per_node in node_sizes(systems).items():
        nodes = n_gpus / per_node
        eff = speedup / nodes
        rows.append(
            {
                "system": sid,
                "name": catalogs.system(sid).name,
                "gpus_per_node": per_node,
                "nodes": nodes,
                "speedup": speedup,
                "efficiency": eff,
                "formula": f"{n_gpus} GPUs / {per_node} = {nodes:g} nodes; "
                f"{speedup:g} / {nodes:g} = {eff:.1%}",
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- readings


def claim_readings(
    claim_value: float = CLAIM_TOKENS_PER_S,
    n_gpus: int = CLAIM_GPUS,
    model: ModelSpec | str = "deepseek-v4.1-flash",
    hw: GpuSpec | str = "b300",
    precision: str = "fp4",
    cached_share: float | None = None,
) -> pd.DataFrame:
    """Readings of "``claim_value`` tokens/s per GPU", each checked against the GPU's peak.

    For each reading: counted tokens/s per GPU; computed tokens/s per GPU (cached tokens cost
    about no FLOP); FLOP per computed token = 2 x active parameters of the phase
    (:func:`rackbook.physics.roofline.flops_per_token`); implied FLOP/s per GPU = computed tokens/s
    x
    FLOP/token; peak = dense FLOP/s at ``precision``; ``ratio`` = implied / peak;
    ``cap_tok_s`` = peak / FLOP per token
    (:func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`);
    ``survives`` = ratio <= 1 (NA when it hinges on an unknown cached share).

    Rows: ``per-gpu-decode`` (every token a computed decode token), ``per-gpu-prefill`` (every
    token a new-token prefill token), ``rack-total`` (the figure is the rack's total: / n_gpus,
    costed as decode), ``per-gpu-with-cached`` (per GPU, counting cache-hit input tokens:
    computed = (1 - cached_share) x figure, costed as decode; without ``cached_share`` the row
    gives the least share of cached tokens that fits, ``min_cached_share`` = 1 - cap / figure).

    DeepSeek-V4.1-Flash on B300 at FP4: 954,000 x 32 GFLOP = 30.5 PFLOP/s > 15 (2.04x peak;
    cap 468,750 tok/s); rack total 954,000 / 72 = 13,250 tok/s/GPU = 0.424 PFLOP/s (2.8 %).
    """
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    if not claim_value > 0:
        raise InputError("-", "claim_value", f"must be > 0, got {claim_value}")
    if cached_share is not None and not 0 <= cached_share <= 1:
        raise InputError("-", "cached_share", f"must be in [0, 1], got {cached_share}")
    caps = {
        ph: roofline.compute_ceiling_tokens_per_s(m, g, precision, ph) for ph in roofline.PHASES
    }
    peak = caps["decode"].flops_per_s
    rows = []

    def add(name: str, meaning: str, counted: float, computed: float, phase: str) -> None:
        cap = caps[phase]
        implied = computed * cap.flops_per_token
        ratio = implied / peak
        rows.append(
            {
                "reading": name,
                "meaning": meaning,
                "tok_s_per_gpu": counted,
                "computed_tok_s_per_gpu": computed,
                "phase": phase,
                "flops_per_token": cap.flops_per_token,
                "implied_flops_per_s": implied,
                "peak_flops_per_s": peak,
                "ratio": ratio,
                "cap_tok_s": cap.tokens_per_s,
                "min_cached_share": np.nan,
                "survives": ratio <= 1,
                "formula": f"{computed:,.0f} tok/s x {units.fmt(cap.flops_per_token, 'FLOP')}"
                f" = {units.fmt(implied, 'FLOP/s')} vs {units.fmt(peak, 'FLOP/s')} "
                f"({g.id} dense {precision}) = {ratio:.3g}x peak; cap {cap.tokens_per_s:,.0f} "
                "tok/s",
            }
        )

    add("per-gpu-decode", "computed decode tokens per GPU", claim_value, claim_value, "decode")
    add(
        "per-gpu-prefill",
        "computed new-token prefill tokens per GPU",
        claim_value,
        claim_value,
        "prefill",
    )
    per_gpu = claim_value / n_gpus
    add("rack-total", f"total of the {n_gpus}-GPU rack", per_gpu, per_gpu, "decode")
    rows[-1]["formula"] = f"{claim_value:,.0f} / {n_gpus} = {per_gpu:,.0f} tok/s/GPU; " + str(
        rows[-1]["formula"]
    )
    dec = caps["decode"]
    min_share = max(0.0, 1 - dec.tokens_per_s / claim_value)
    if cached_share is not None:
        computed = (1 - cached_share) * claim_value
        add(
            "per-gpu-with-cached",
            f"per GPU, {cached_share:.1%} of counted tokens cache hits",
            claim_value,
            computed,
            "decode",
        )
        rows[-1]["formula"] = (
            f"(1 - {cached_share:.4g}) x {claim_value:,.0f} = " + rows[-1]["formula"]
        )
    else:
        computed = dec.tokens_per_s
        add(
            "per-gpu-with-cached",
            "per GPU, counting cache-hit input tokens (share unknown)",
            claim_value,
            computed,
            "decode",
        )
        rows[-1]["survives"] = pd.NA
        rows[-1]["formula"] = (
            f"fits if >= 1 - {dec.tokens_per_s:,.0f} / {claim_value:,.0f} = {min_share:.1%} "
            "of counted tokens were cache hits (computed tokens at the cap)"
        )
    rows[-1]["min_cached_share"] = min_share
    out = pd.DataFrame(rows)
    out["survives"] = out["survives"].astype("boolean")
    return out


@dataclass(frozen=True)
class CostReadings:
    """Dollar readings of a per-GPU-hour figure.

    ``cost``: one row per (throughput reading, price basis): tokens/s per GPU, million tokens
    per GPU-hour, USD per GPU-hour, USD per million tokens = USD per GPU-hour / (tokens/s x
    3600 / 1e6). ``revenue``: per throughput reading, token revenue per GPU-hour at the
    InferenceX prices if every token were uncached / cached, and the cached share that makes
    the revenue equal the figure (NaN if none in [0, 1]). ``ratio_to_rental`` = figure / rental.
    """

    cost: pd.DataFrame
    revenue: pd.DataFrame
    ratio_to_rental: float
    formula: str


def cost_readings(
    price_per_gpu_hour: float = CLAIM_USD_PER_GPU_HOUR,
    tokens_per_s_per_gpu: dict[str, float] | None = None,
    rental_usd_per_gpu_hour: float | None = None,
    usd_per_m_uncached: float = INFERENCEX_USD_PER_M_UNCACHED,
    usd_per_m_cached: float = INFERENCEX_USD_PER_M_CACHED,
) -> CostReadings:
    """Read ``price_per_gpu_hour`` (US dollars per GPU-hour) as a cost and as token revenue.

    ``tokens_per_s_per_gpu``: reading name -> tokens/s per GPU (default: the claim as stated,
    954,000, and the rack-total reading, 954,000 / 72 = 13,250). ``rental_usd_per_gpu_hour``:
    default the catalog's ``gb300-rental`` price (about $2.65). Token prices in US dollars per
    million tokens, default InferenceX's ($1/M uncached input and output, $0.10/M cached
    input; :data:`INFERENCEX_PRICES_SOURCE`).

    - cost reading: USD per million tokens = price / (tokens/s x 3600 / 1e6);
    - revenue reading: USD per GPU-hour = tokens/s x 3600 / 1e6 x (p_u x (1 - s) + p_c x s) for
      cached share s; solved for s: s = (p_u - price / Mtok per hour) / (p_u - p_c).

    $/GPU-hour is not a price per answer: an answer costs its GPU-seconds (set by its tokens,
    context and batch) times the price per GPU-second, which this figure alone does not give.
    """
    if tokens_per_s_per_gpu is None:
        tokens_per_s_per_gpu = {
            "per GPU as stated": CLAIM_TOKENS_PER_S,
            f"rack total / {CLAIM_GPUS}": CLAIM_TOKENS_PER_S / CLAIM_GPUS,
        }
    if rental_usd_per_gpu_hour is None:
        rent = catalogs.price("gb300-rental")
        rental_usd_per_gpu_hour = rent.usd_per_gpu_hour
        rent_label, rent_source = f"rental ({rent.id})", rent.source
    else:
        rent_label, rent_source = "rental (given)", "argument rental_usd_per_gpu_hour"
    if not price_per_gpu_hour > 0 or not rental_usd_per_gpu_hour > 0:
        raise InputError("-", "price_per_gpu_hour", "prices must be > 0")
    if not usd_per_m_uncached > usd_per_m_cached >= 0:
        raise InputError("-", "usd_per_m_cached", "must be >= 0 and below the uncached token price")
    bases = {
        "claim as cost": (price_per_gpu_hour, "data/claims.yaml rack-scaling.cost"),
        rent_label: (rental_usd_per_gpu_hour, rent_source),
    }
    cost, revenue = [], []
    for name, tps in tokens_per_s_per_gpu.items():
        if not tps > 0:
            raise InputError("-", f"tokens_per_s_per_gpu[{name}]", f"must be > 0, got {tps}")
        mtok_h = tps * 3600 / 1e6
        for basis, (usd, source) in bases.items():
            per_m = usd / mtok_h
            cost.append(
                {
                    "reading": name,
                    "basis": basis,
                    "tok_s_per_gpu": tps,
                    "mtok_per_gpu_hour": mtok_h,
                    "usd_per_gpu_hour": usd,
                    "usd_per_m_tokens": per_m,
                    "source": source,
                    "formula": f"${usd:g} / ({tps:,.0f} tok/s x 3600 / 1e6 = {mtok_h:,.4g} M) "
                    f"= ${per_m:.4g}/M tokens",
                }
            )
        rev_u, rev_c = mtok_h * usd_per_m_uncached, mtok_h * usd_per_m_cached
        share = (usd_per_m_uncached - price_per_gpu_hour / mtok_h) / (
            usd_per_m_uncached - usd_per_m_cached
        )
        share = share if 0 <= share <= 1 else np.nan
        revenue.append(
            {
                "reading": name,
                "tok_s_per_gpu": tps,
                "mtok_per_gpu_hour": mtok_h,
                "revenue_all_uncached": rev_u,
                "revenue_all_cached": rev_c,
                "cached_share_matching": share,
                "formula": f"{mtok_h:,.4g} M tok/h x ${usd_per_m_uncached:g}/M = ${rev_u:,.4g}"
                f" (all uncached) .. x ${usd_per_m_cached:g}/M = ${rev_c:,.4g} (all cached); "
                + (
                    f"${price_per_gpu_hour:g} needs {share:.1%} cached"
                    if np.isfinite(share)
                    else f"${price_per_gpu_hour:g} is outside that range"
                ),
            }
        )
    ratio = price_per_gpu_hour / rental_usd_per_gpu_hour
    formula = (
        f"${price_per_gpu_hour:g} / ${rental_usd_per_gpu_hour:g} rental = {ratio:.3g}x; "
        f"token prices: {INFERENCEX_PRICES_SOURCE}"
    )
    return CostReadings(pd.DataFrame(cost), pd.DataFrame(revenue), ratio, formula)


# ---------------------------------------------------------------------------------------------
# scaling from a reference configuration
#
# Scaling of measured throughput from a reference configuration (one replica, "a node") to the
# other configurations of a trace.
#
# Definitions (tokens/s from :func:`rackbook.results.rack_scaling.token_accounting`; GPU counts per
# point):
#
# - GPUs of a point = ``points.num_gpus`` when recorded, else replicas x ``gpus_per_replica``
#   (replicas: ``points.replicas``, else the servers seen in ``server_metrics`` for the point,
#   else 1). On a CPU, where ``num_gpus`` is null, ``gpus_per_replica`` stands for the
#   accelerators one server would use;
# - per configuration, the point with the highest ``<metric>_tok_s`` (its peak) represents it;
# - speedup = T / T_ref; GPU ratio = n / n_ref; scaling efficiency = speedup / GPU ratio =
#   (T / n) / (T_ref / n_ref), the per-GPU ratio (1.0 = linear scaling);
# - linear line: T_ref x n / n_ref, the throughput of perfect scaling at n GPUs.

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
    """Per configuration of ``accounting`` (:func:`rackbook.results.rack_scaling.token_accounting`
    rows):
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
