"""rack-scaling: the tokens each sweep point counts (tok/s, in all and per GPU), the points' GPU
counts and scaling from a reference (speedup T_n / T_1, efficiency speedup / (n / n_1)); the
readings of ``rack-scaling.throughput``, ``.speedup`` and ``.cost`` against ceilings, cached
shares, cost and token revenue; the analysis, outcome and quoted values.
One idea: the chapter's readings and outcome; every reading feeds the outcome and the prose
quotes both, so they change together."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import units
from rackbook.core.server_metrics import prefix_cache_hit_rate
from rackbook.core.traces import Trace
from rackbook.core.units import number, percent, ratio_text
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Registry
from rackbook.physics import check, results_bounds, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts

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


#: The workload (tokens per request) the cache-hit reading assumes (the write-up gives none).
ASSUMED_ISL = 100_000
ASSUMED_OSL = 1_000

THROUGHPUT_CLAIM = "rack-scaling.throughput"
SPEEDUP_CLAIM = "rack-scaling.speedup"
COST_CLAIM = "rack-scaling.cost"
STATED = "per GPU as stated"
#: The values the prose quotes that are attributes of the analysis (chapter_common.glue).
GLUE = (
    "claim_tok_s claim_speedup claim_usd rack_gpus=rack.gpus gpu_name=gpu.name hardware unit "
    "metric=params.metric reference_config=params.reference_config band_low=band.low "
    "workload_isl=params.workload_isl workload_osl=params.workload_osl band_high=band.high "
    "rental_usd=rental.usd_per_gpu_hour ratio_rental=cost.ratio_to_rental"
)


def speedup_readings(
    speedup: float,
    claim_tok_s: float,
    n_gpus: int,
    model: ModelSpec | str,
    systems: tuple[str, ...] = NODE_SYSTEMS,
    *,
    isl: float = ASSUMED_ISL,
    osl: float = ASSUMED_OSL,
) -> pd.DataFrame:
    """Per node size of ``systems``: efficiency = speedup / nodes, the node as the
    rack total (tok/s per GPU vs its decode ceiling) and per GPU as stated (``stated_*``)."""
    rows = []
    for sid in systems:
        per_node = catalogs.system(sid).gpus
        node_gpu = catalogs.gpu(catalogs.system(sid).gpu)
        cap = roofline.compute_ceiling_tokens_per_s(model, node_gpu, "decode").tokens_per_s
        nodes = n_gpus / per_node
        eff = speedup / nodes
        node_per_gpu = claim_tok_s / speedup / per_node
        ratio = node_per_gpu / cap
        stated = claim_tok_s * n_gpus / speedup / per_node
        th = check.cached_share_threshold(
            model, node_gpu, per_node, stated, per="gpu", counted="total", isl=isl, osl=osl
        )
        s_text = f"at ISL {isl:,.0f} / OSL {osl:,.0f}, {th.formula}" + (
            " (the share is not published)" if th.verdict == "undetermined" else ""
        )
        formula = (
            f"{n_gpus} GPUs / {per_node} = {nodes:g} nodes; {speedup:g} / {nodes:g} = "
            f"{percent(eff)} per GPU; node as the rack total: {claim_tok_s:,.0f} / {speedup:g} / "
            f"{per_node} = {node_per_gpu:,.0f} tok/s per GPU = {ratio_text(ratio)} the "
            f"{node_gpu.label} decode compute ceiling of {cap:,.0f}"
        )
        row: dict[str, Any] = dict(system=sid, name=catalogs.system(sid).name, gpu=node_gpu.id)
        row |= dict(gpus_per_node=per_node, nodes=nodes, speedup=speedup, efficiency=eff)
        row |= dict(node_tok_s_per_gpu=node_per_gpu, ceiling_tok_s_per_gpu=cap, ratio=ratio)
        row |= dict(verdict=check.physics_verdict(ratio), formula=formula)
        share = np.nan if th.share is None else th.share
        row |= dict(stated_node_tok_s_per_gpu=stated, stated_min_cached_share=share)
        rows.append(row | dict(stated_verdict=th.verdict, stated_formula=s_text))
    out = pd.DataFrame(rows)
    out.attrs["workload"] = (isl, osl)
    return out


#: The readings of a per-GPU figure whose counted tokens the source does not state: label, what
#: it counts (``{n}``: the rack's GPUs) and the phase it is held to.
READINGS = {
    "per-gpu-decode": ("per GPU, decode tokens", "computed decode tokens per GPU", "decode"),
    "per-gpu-prefill": (
        "per GPU, prefill tokens",
        "computed new-token prefill tokens per GPU",
        "prefill",
    ),
    "per-gpu-with-cached": ("per GPU, cache hits counted", "", "prefill + decode"),
    "rack-total": ("rack total / GPUs", "total of the {n}-GPU rack", "decode"),
}
READING_LABELS = {k: label for k, (label, _, _) in READINGS.items()}


def throughput_readings(
    claim_value: float,
    n_gpus: int,
    model: ModelSpec | str,
    hw: GpuSpec | str,
    cached_share: float | None = None,
    *,
    isl: float = ASSUMED_ISL,
    osl: float = ASSUMED_OSL,
) -> pd.DataFrame:
    """Each reading (:data:`READINGS`) of "``claim_value`` tokens/s per GPU"; cache hits at
    ``cached_share``, else the least share that fits (``min_cached_share``)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    rows = []
    for name, (_, meaning, phase) in READINGS.items():
        if name == "per-gpu-with-cached":
            rows.append(_cached_reading(m, g, n_gpus, claim_value, isl, osl, cached_share))
            continue
        tok_s = claim_value / n_gpus if name == "rack-total" else claim_value
        c = check.check_claim(m, g, n_gpus, tok_s, phase=phase)
        split = f"{claim_value:,.0f} / {n_gpus} = " if name == "rack-total" else ""
        formula = (
            f"{split}{tok_s:,.0f} tok/s per GPU is {ratio_text(c.ratio)} the {phase} {c.limit} "
            f"ceiling of {c.ceiling_tok_s_per_gpu:,.0f} on {g.label}"
        )
        rows.append(_row(name, meaning.format(n=n_gpus), tok_s, tok_s, c, formula))
    out = pd.DataFrame(rows)
    out.attrs |= dict(workload=(isl, osl), cached_share=cached_share)
    return out


def _row(
    name: str, meaning: str, counted: float, computed: float, c: check.Check, formula: str
) -> dict[str, Any]:
    row: dict[str, Any] = dict(reading=name, meaning=meaning, tok_s_per_gpu=counted)
    row |= dict(computed_tok_s_per_gpu=computed, phase=READINGS[name][2])
    row |= dict(ceiling_tok_s_per_gpu=c.ceiling_tok_s_per_gpu, limit=c.limit, ratio=c.ratio)
    return row | dict(verdict=c.verdict, min_cached_share=np.nan, formula=formula)


def _cached_reading(
    m: ModelSpec,
    g: GpuSpec,
    n_gpus: int,
    claim: float,
    isl: float,
    osl: float,
    cached_share: float | None,
) -> dict[str, Any]:
    assumed = " (assumed: the write-up gives no workload)"
    work = f"ISL {isl:,.0f} / OSL {osl:,.0f}" + (
        assumed if (isl, osl) == (ASSUMED_ISL, ASSUMED_OSL) else ""
    )
    kw: dict[str, Any] = dict(counted="total", isl=isl, osl=osl)

    def at(share: float, meaning: str) -> tuple[dict[str, Any], str]:
        c = check.check_claim(m, g, n_gpus, claim, cached_share=share, **kw)
        computed = c.workload["new_input_tok_s_per_gpu"] + c.workload["output_tok_s_per_gpu"]
        formula = f"at {work} with {percent(share)} of the input tokens cached: {c.reason}"
        return _row("per-gpu-with-cached", meaning, claim, computed, c, formula), c.reason

    if cached_share is not None:
        return at(cached_share, f"per GPU, {percent(cached_share)} of input tokens cache hits")[0]
    th = check.cached_share_threshold(m, g, n_gpus, claim, per="gpu", **kw)
    top = results_bounds.cached_ceiling(m, g, n_gpus)
    bound = top.ceiling_tok_s_per_gpu
    share = 1 - 1 / isl if claim > bound or th.share is None else th.share
    row, reason = at(share, "per GPU, counting cache-hit input tokens (share not published)")
    row["min_cached_share"] = np.nan if th.share is None else th.share
    how = (
        f"on any workload no cached share reaches more than {number(bound, 3)} tok/s per GPU "
        f"(requests of {top.workload['isl'] + 1:,.0f} tokens, all cached but one new input token,"
        " one output token)"
    )
    if claim > bound:
        row |= dict(ratio=claim / bound, verdict="impossible", ceiling_tok_s_per_gpu=bound)
        row["limit"] = "cached prefix"
        row["formula"] = (
            f"{claim:,.0f} tok/s per GPU is {ratio_text(claim / bound)} what any cached share "
            f"allows: {how}"
        )
    elif th.share is None:
        row |= dict(verdict="impossible", formula=f"at {work}: {th.formula}")
    elif th.share > 0:
        row |= dict(ratio=np.nan, verdict="undetermined")
        row["formula"] = (
            f"at {work} it fits once at least {percent(th.share)} of the input tokens are cache "
            f"hits (sufficient: every larger share fits too; the share is not published); there "
            f"{reason}; {how}"
        )
    return row


#: The compute ceiling per GPU (LaTeX): routed experts and the rest each at their precision.
CEILING_FORMULA = (
    r"C_\text{compute} = \frac{1}{\dfrac{2\,P_\text{routed}}{F_\text{routed}} + "
    r"\dfrac{2\,P_\text{dense}}{F_\text{dense}}}\ \text{tok/s per GPU}"
)


def ceilings(model: ModelSpec | str, hw: GpuSpec | str, n_gpus: int) -> pd.DataFrame:
    """Compute and HBM ceilings (tok/s per GPU) in decode and prefill, formulas and ``latex``."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    rows = []
    for phase in ("decode", "prefill"):
        c = check.check_claim(m, g, n_gpus, 1.0, phase=phase)
        for r in c.ceilings:
            if r.name == "memory capacity":
                continue
            latex = results_bounds.compute_ceiling_latex(m, g, phase) if r.name == "compute" else ""
            rows.append((r.name, phase, r.tok_s_per_gpu, r.formula, latex))
    return pd.DataFrame(rows, columns=["ceiling", "phase", "tok_s_per_gpu", "formula", "latex"])


def throughput_attainable(
    readings: pd.DataFrame, model: ModelSpec, gpu: GpuSpec, n_gpus: int
) -> dict[str, Any]:
    """What measured kernels reach for the figure as stated and (``rack_total``) as the rack's."""
    by = readings.set_index("reading")
    isl, osl = readings.attrs["workload"]
    share = by.loc["per-gpu-with-cached", "min_cached_share"]
    share = share if np.isfinite(share) else readings.attrs["cached_share"]
    rack = float(by.loc["rack-total", "tok_s_per_gpu"])
    a_rack = verdicts.attainable(
        check.check_claim(model, gpu, n_gpus, rack, phase="decode"), "as the rack's total"
    )
    if share is None:
        return a_rack | {"rack_total": a_rack}
    claim, kw = float(by.loc["per-gpu-decode", "tok_s_per_gpu"]), dict(isl=isl, osl=osl)
    c = check.check_claim(model, gpu, n_gpus, claim, counted="total", cached_share=share, **kw)
    cached = f"{percent(share)} of the input cached at ISL {isl:,.0f} / OSL {osl:,.0f}"
    a = verdicts.attainable(c, f"per GPU as stated, {cached}")
    brief = f"as stated at {percent(share)} cached, {a['ratio']:.2g}x what measured kernels "
    brief += f"reach; as the rack's total, {a_rack['ratio']:.2g}x"
    return a | {"text": f"{a['text']}; {a_rack['text']}", "rack_total": a_rack, "brief": brief}


def throughput_physics(
    readings: pd.DataFrame, attainable: dict[str, Any] | None = None
) -> headline.ClaimReading:
    """The claim as written ("per GPU"): the most permissive of its per-GPU readings."""
    by = readings.set_index("reading")
    (isl, osl), (dec, pre, cached, rack) = readings.attrs["workload"], (by.loc[k] for k in READINGS)
    per_gpu = by.loc[list(READINGS)[:3]]
    best = min(per_gpu["verdict"], key=["possible", "undetermined", "impossible"].index)
    need = percent(cached["min_cached_share"])
    if cached["limit"] == "cached prefix":
        hits = f"no cached share reaches it ({ratio_text(cached['ratio'])} the most any allows)"
    elif np.isfinite(cached["ratio"]):
        hits = f"at the given share, {cached['formula']}"
    else:
        hits = f"it fits only once at least {need} of the input tokens are prefix-cache hits at "
        hits += f"ISL {isl:,.0f} / OSL {osl:,.0f} (assumed; the share and workload unpublished)"
    clauses = [
        f"as computed tokens per GPU it needs {ratio_text(dec['ratio'])} the decode ceiling and "
        f"{ratio_text(pre['ratio'])} the prefill ceiling",
        f"counting cache hits, {hits}",
        f"as the rack's total ({rack['tok_s_per_gpu']:,.0f} per GPU) it is {rack['verdict']}",
    ]
    decided, ratio = per_gpu[per_gpu["verdict"] == best].iloc[0], None
    if best == "undetermined" and np.isfinite(cached["min_cached_share"]):
        holds = f"fits only if >= {need} of the input is cached"
    elif np.isfinite(decided["ratio"]):
        ratio = float(decided["ratio"])
        holds = headline.ceiling_margin(ratio, f"the {decided['phase']} ceiling")
    else:
        holds = "no cached share fits"
    computed: dict[str, Any] = dict(name="computed tokens per GPU", verdict=str(dec["verdict"]))
    computed |= dict(ratio=float(dec["ratio"]), ceiling="decode ceiling")
    total: dict[str, Any] = dict(name="the rack's total", verdict=str(rack["verdict"]))
    condition = dict(basis=STATED, condition=holds)
    kw: dict[str, Any] = dict(attainable=attainable, ratio=ratio, condition=condition)
    kw["on_bases"] = (computed, total | dict(tok_s_per_gpu=float(rack["tok_s_per_gpu"])))
    if cached["limit"] != "cached prefix":
        kw["workload"] = {"isl": float(isl), "osl": float(osl)}
    margin = f"{STATED}: {holds}"
    return common.reading(THROUGHPUT_CLAIM, "physics", best, margin, clauses, **kw)


def speedup_attainable(speedups: pd.DataFrame, model: ModelSpec) -> dict[str, Any]:
    """What measured kernels reach for the smallest node the speedup implies (rack total)."""
    r = speedups.loc[speedups["gpus_per_node"].idxmin()]
    n, tok_s = int(r["gpus_per_node"]), float(r["node_tok_s_per_gpu"])
    c = check.check_claim(model, str(r["gpu"]), n, tok_s, phase="decode")
    a = verdicts.attainable(c, f"a {n}-GPU node, the rack's total / speedup")
    return a | {
        "brief": f"the implied {n}-GPU node is {a['ratio']:.2g}x what measured kernels reach"
    }


def speedup_physics(
    speedups: pd.DataFrame, attainable: dict[str, Any] | None = None
) -> headline.ClaimReading:
    """The speedup per GPU as stated: the node sizes' one ``stated_verdict``, else undetermined."""
    vs = set(speedups["stated_verdict"])
    isl, osl = speedups.attrs["workload"]
    stated, total = [], []
    for r in speedups.itertuples():
        share = r.stated_min_cached_share
        fits = f"fits once at least {percent(share)} of its input tokens are cache hits"
        stated.append(
            f"nodes of {r.gpus_per_node} {r.gpu.upper()}: {percent(r.efficiency)} scaling "
            f"efficiency, the node at {r.stated_node_tok_s_per_gpu:,.0f} counted tok/s per GPU, "
            f"which {fits if np.isfinite(share) else 'no cached share fits'}"
        )
        total.append(
            f"{r.gpus_per_node}-GPU nodes at {r.node_tok_s_per_gpu:,.0f} tok/s per GPU, "
            f"{ratio_text(r.ratio)} the {r.gpu.upper()} decode ceiling ({r.verdict})"
        )
    share = speedups["stated_min_cached_share"].max(skipna=False)
    clauses = [
        f"on the throughput's basis (per GPU as stated, cache hits counted, ISL {isl:,.0f} "
        f"/ OSL {osl:,.0f} assumed): {'; '.join(stated)}",
        f"with the throughput as the rack's total: {'; '.join(total)}",
        "super-linear per-GPU scaling would also be possible",
    ]
    fits = "with nothing cached" if share == 0 else f"at >= {percent(share)} cached"
    margin = (
        f"per GPU as stated: {f'fits {fits}' if np.isfinite(share) else 'no cached share fits'}"
    )
    v = vs.pop() if len(vs) == 1 else "undetermined"
    return common.reading(SPEEDUP_CLAIM, "physics", v, margin, clauses, attainable=attainable)


#: The token prices (data/hardware.yaml) the dollar figure is read at as revenue.
TOKEN_PRICES = "inferencex-tco-calculator"
#: The catalog price (an ownership-cost model's) the dollar figure is set against by default.
DEFAULT_PRICE = "gb300-tco-hyperscaler"
#: GPUs of one cloud instance of a GB300 NVL72 (a 4-GPU compute tray).
INSTANCE_GPUS = 4
REVENUE_FORMULA = (
    r"\text{revenue} = \frac{\text{tok/s per GPU} \times 3600}{10^6}\,"
    r"\bigl(p_u\,(1 - s) + p_c\,s\bigr)\ \text{USD per GPU-hour}"
)


@dataclass(frozen=True)
class CostReadings:
    """``cost`` per (reading, price basis), ``revenue`` per reading, figure / rental."""

    cost: pd.DataFrame
    revenue: pd.DataFrame
    ratio_to_rental: float


def cost_readings(
    price_per_gpu_hour: float, tokens_per_s_per_gpu: dict[str, float], price_id: str = DEFAULT_PRICE
) -> CostReadings:
    """``price_per_gpu_hour`` (USD) as USD per million tokens beside the catalog price
    ``price_id``, and as token revenue per GPU-hour: Mtok per hour x (p_u (1 - s) + p_c s), p in
    USD per million tokens."""
    prices, rent = catalogs.token_price(TOKEN_PRICES), catalogs.price(price_id)
    usd = price_per_gpu_hour
    p_u, p_c = prices.usd_per_m_uncached, prices.usd_per_m_cached
    bases = {"claim as cost": usd, f"{rent.kind} ({rent.id})": rent.usd_per_gpu_hour}
    cost, revenue = [], []
    for name, tps in tokens_per_s_per_gpu.items():
        mtok_h = tps * 3600 / 1e6
        cost += [(name, basis, x / mtok_h) for basis, x in bases.items()]
        rev_u, rev_c = mtok_h * p_u, mtok_h * p_c
        share = (p_u - usd / mtok_h) / (p_u - p_c)
        share = share if 0 <= share <= 1 else np.nan
        needs = f"needs {percent(share)} cached" if np.isfinite(share) else "is outside that range"
        formula = (
            f"{mtok_h:,.4g} M tok/h x ${p_u:g}/M = ${rev_u:,.4g} (all uncached) .. x ${p_c:g}/M = "
            f"${rev_c:,.4g} (all cached); ${usd:g} {needs}"
        )
        revenue.append((name, tps, mtok_h, rev_u, rev_c, share, formula))
    cols = "reading tok_s_per_gpu mtok_per_gpu_hour revenue_all_uncached revenue_all_cached "
    cols += "cached_share_matching formula"
    cost_df = pd.DataFrame(cost, columns=["reading", "basis", "usd_per_m_tokens"])
    return CostReadings(
        cost_df, pd.DataFrame(revenue, columns=cols.split()), usd / rent.usd_per_gpu_hour
    )


def cost_physics(cost: CostReadings, price_per_gpu_hour: float) -> headline.ClaimReading:
    """``undetermined``: no ceiling bounds a price."""
    ratio = cost.ratio_to_rental
    inst = price_per_gpu_hour / INSTANCE_GPUS
    clauses = [
        f"${price_per_gpu_hour:g} per GPU-hour is a price ({ratio_text(ratio)} the catalog's "
        f"reference price, a cost model's rate; read as one {INSTANCE_GPUS}-GPU instance-hour, "
        f"${inst:.2f} per GPU-hour), and no ceiling bounds a price: physics reads throughputs, "
        "not dollars",
        "the published reading compares it with list prices, per GPU-hour and per "
        "instance-hour, and with modelled rental and ownership rates",
        "its cost and revenue tables read it on both throughput bases (per GPU as stated, and "
        "the rack total)",
    ]
    margin = "not a physics quantity"
    return common.reading(COST_CLAIM, "physics", "undetermined", margin, clauses)


def token_revenue(row: pd.Series) -> float:
    """USD per GPU-hour of an accounting row: (computed p_u + cached p_c) x 3600 / 1e6."""
    p = catalogs.token_price(TOKEN_PRICES)
    uncached, cached = row["computed_tok_s_per_gpu"], row["cached_input_tok_s_per_gpu"]
    return float((uncached * p.usd_per_m_uncached + cached * p.usd_per_m_cached) * 3600 / 1e6)


RESULT = "rack-scaling"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.rack_scaling``).
FIGURES: tuple[str, ...] = ("fig_tokens", "fig_scaling", "fig_readings", "fig_nodes", "fig_revenue")

SINGLE_USER_CLAIM = "single-user.throughput"
DECODE_PARITY_CLAIM = "decode-parity.gap"


def _table(head: str, rows: list[list[str]], note: str = "") -> str:
    """A Markdown table (``head``: ``a|b``) whose cells show ``|`` and ``$`` literally (``$`` opens
    MyST math), then ``note``."""
    lines = ["| " + " | ".join(map(headline.cell, r)) + " |" for r in [head.split("|"), *rows]]
    lines.insert(1, "|" + "---|" * (head.count("|") + 1))
    return "\n".join(lines) + "\n" + (f"\n{note}\n" if note else "")


#: The notebook's ``parameters`` and the assumed workload (tokens per request).
Params = headline.params(RESULT, workload_isl=ASSUMED_ISL, workload_osl=ASSUMED_OSL)
REPORTED = "gpus_per_replica reference_config metric model_id gpu_id system_id node_systems "
REPORTED += "price_id cached_share rel_tol workload_isl workload_osl"


class Analysis(common.Chapter):
    """Token accounting, scaling, ceilings, physics, cost and readings of a trace."""

    PARAMS = Params

    def analyse(self, p: Any, reg: Registry) -> None:
        self.registry = reg
        claims = (THROUGHPUT_CLAIM, SPEEDUP_CLAIM, COST_CLAIM)
        self.claim_tok_s, self.claim_speedup, self.claim_usd = (reg.value(c) for c in claims)
        self.rack, self.gpu = rack, gpu = catalogs.system(p.system_id), catalogs.gpu(p.gpu_id)
        self.rental = catalogs.price(p.price_id)
        self.model = model = catalogs.load_model(p.model_id)
        self.trace = tr = with_gpu_counts(self.trace, p.gpus_per_replica)
        self.accounting = acc = token_accounting(tr)
        self.largest = acc.loc[acc["num_gpus"].astype(float).idxmax()]  # the largest point
        self.cached_known = bool(np.isfinite(self.largest["cached_input_tok_s"]))
        # without the reference the smallest configuration stands in (the reading says so)
        ref_cfg = p.reference_config
        if ref_cfg not in set(acc["config"]):
            ref_cfg = str(acc.loc[acc["num_gpus"].astype(float).idxmin(), "config"])
        self.scaling = scaling_vs_reference(acc, ref_cfg, p.metric)
        self.top = self.scaling.iloc[-1]  # the largest configuration against the reference
        self.ceilings = ceilings(model, gpu, rack.gpus)
        work = dict(isl=p.workload_isl, osl=p.workload_osl)
        self.throughput = throughput_readings(
            self.claim_tok_s, rack.gpus, model, gpu, p.cached_share, **work
        )
        nodes = tuple(p.node_systems)
        self.speedups = speedup_readings(
            self.claim_speedup, self.claim_tok_s, rack.gpus, model, nodes, **work
        )
        self.rack_reading = f"rack total / {rack.gpus}"
        bases = {STATED: self.claim_tok_s, self.rack_reading: self.claim_tok_s / rack.gpus}
        self.cost = cost_readings(self.claim_usd, bases, p.price_id)
        self.band = check.sensitivity(model=model, gpu=gpu, gpus=rack.gpus, tok_s=self.claim_tok_s)
        self.revenue_run = token_revenue(self.largest)
        self.testable = (
            verdicts.can_test(tr.run) and int(self.scaling["num_gpus"].max()) >= rack.gpus
        )
        self.readings = self._readings(ref_cfg)

    def _readings(self, ref_cfg: str) -> list[headline.ClaimReading]:
        nx, top, u, gpus, txt = self.largest, self.top, self.unit, self.rack.gpus, verdicts.text
        run: dict[str, Any] = dict(rel_tol=self.params.rel_tol, testable=self.testable)
        run |= dict(run=self.trace.run, needs=f"{gpus} GB300 GPUs of one {self.rack.name} ")
        run["needs"] += "serving DeepSeek-V4.1-Flash"
        what = f"total {txt(nx['total_tok_s_per_gpu'], ',.1f')} tok/s per {u} on "
        what += f"{units.plural(int(nx['num_gpus']), u)}, {txt(nx['total_tok_s'])} tok/s in all"
        speedup = f"speedup {txt(top['speedup'], '.2f')}x, efficiency "
        speedup += f"{txt(100 * top['efficiency'], '.1f')} %"
        revenue = f"token revenue ${txt(self.revenue_run, ',.4g')} per {u}-hour at InferenceX's "
        revenue += f"token prices, config {nx['config']}"
        measured = float(nx["total_tok_s_per_gpu"])
        thr, sp = self.throughput, self.speedups
        tp = throughput_physics(thr, throughput_attainable(thr, self.model, self.gpu, gpus))
        tp_run = verdicts.run_reading(
            THROUGHPUT_CLAIM, measured, self.claim_tok_s, what=what, **run
        )
        sp_run = self._speedup_run(ref_cfg, speedup, run)
        usd = self.claim_usd
        cost_run = verdicts.run_reading(COST_CLAIM, self.revenue_run, usd, what=revenue, **run)
        sp_phys = speedup_physics(sp, speedup_attainable(sp, self.model))
        pairs = ((tp, tp_run), (sp_phys, sp_run), (cost_physics(self.cost, usd), cost_run))
        return common.readings(self.registry, *pairs)

    def _speedup_run(self, ref_cfg: str, what: str, run: dict[str, Any]) -> headline.ClaimReading:
        reference, n = self.params.reference_config, len(self.scaling)
        if n > 1 and ref_cfg == reference:
            top = float(self.top["speedup"])
            return verdicts.run_reading(SPEEDUP_CLAIM, top, self.claim_speedup, what=what, **run)
        why = (
            "one configuration only: no speedup; record the single-node reference and the rack"
            if n < 2
            else f"no point with config {reference!r} (the single-node reference): "
            f"record one; {ref_cfg} stands in for the figures"
        )
        return headline.ClaimReading(SPEEDUP_CLAIM, "this run", "untested", "-", why)

    @property
    def unit(self) -> str:
        """``GPU``, or ``replica`` where one CPU server stands for one GPU."""
        gpus = verdicts.gpu_names(self.trace.run) or self.params.gpus_per_replica > 1
        return "GPU" if gpus else "replica"

    def cap(self, ceiling: str, phase: str) -> float:
        """A ceiling of :attr:`ceilings` in tokens/s per GPU."""
        c = self.ceilings
        return float(c[(c["ceiling"] == ceiling) & (c["phase"] == phase)]["tok_s_per_gpu"].iloc[0])

    def accounting_markdown(self) -> str:
        """Tokens/s of every point, counted by kind, and per GPU (or replica)."""
        u = self.unit
        kinds = ("output", "new_input", "cached_input", "total", "computed")
        rows = [
            [f"{r['config']} ({units.plural(int(r['num_gpus']), u)})"]
            + [verdicts.text(r[f"{k}_tok_s"], ",.1f") for k in kinds]
            + [verdicts.text(r["total_tok_s_per_gpu"], ",.1f")]
            for _, r in self.accounting.iterrows()
        ]
        head = f"config|output|new input|cached input|total|computed|total per {u}"
        return _table(head, rows, "All in tokens per second.")

    def ceilings_markdown(self) -> str:
        """The compute ceilings (display math) and every ceiling's formula."""
        maths = [f"$$ {x} $$" for x in self.ceilings["latex"] if x]
        rows = [
            [f"{r.ceiling}, {r.phase}", f"{r.tok_s_per_gpu:,.0f}", r.formula]
            for r in self.ceilings.itertuples()
        ]
        return "\n\n".join(maths) + "\n\n" + _table("ceiling|tok/s per GPU|how", rows)

    def throughput_markdown(self) -> str:
        """Each reading of the throughput figure against its ceiling (tokens/s per GPU)."""
        rows = []
        for r in self.throughput.itertuples():
            cached = r.reading == "per-gpu-with-cached" and not np.isfinite(r.ratio)
            fits = f"fits once at least {percent(r.min_cached_share)} of the input is cached"
            rows.append(
                [READING_LABELS.get(r.reading, r.reading), f"{r.tok_s_per_gpu:,.0f}"]
                + [("at most " if cached else "") + f"{r.computed_tok_s_per_gpu:,.0f}"]
                + [f"{r.ceiling_tok_s_per_gpu:,.0f} ({r.phase})"]
                + [fits if cached else ratio_text(r.ratio), f"**{r.verdict}**"]
            )
        head, note = "reading|counted|computed|ceiling|computed / ceiling|physics", "Counted, "
        return _table(head, rows, note + "computed and ceiling in tokens per second per GPU.")

    def speedups_markdown(self) -> str:
        """What the speedup means for each node size, and the node it implies."""
        rows = [
            [r.name, f"{r.gpus_per_node}", f"{r.nodes:g}", percent(r.efficiency)]
            + [f"{r.node_tok_s_per_gpu:,.0f}", ratio_text(r.ratio), f"**{r.verdict}**"]
            for r in self.speedups.itertuples()
        ]
        head = "what 'a node' is|GPUs per node|nodes in the rack|scaling efficiency|"
        return _table(f"{head}node tok/s per GPU|node / ceiling|physics", rows)

    def cost_markdown(self) -> str:
        """The dollar figure per million tokens, and the token revenue range, per reading."""
        cost = self.cost.cost.set_index(["reading", "basis"])["usd_per_m_tokens"]
        rows = []
        for r in self.cost.revenue.itertuples():
            per_m = cost.loc[r.reading]
            share = r.cached_share_matching
            rows.append(
                [r.reading, f"{r.tok_s_per_gpu:,.0f}", f"{r.mtok_per_gpu_hour:,.1f}"]
                + [f"${per_m.iloc[0]:,.4f}", f"${per_m.iloc[1]:,.4f}"]
                + [f"{_usd(r.revenue_all_cached)} to {_usd(r.revenue_all_uncached)}"]
                + [percent(share) if np.isfinite(share) else "none"]
            )
        head = "throughput reading|tok/s per GPU|M tok per GPU-hour|USD per M tok, as cost|"
        head += "USD per M tok, ownership cost|revenue (USD per GPU-hour)|"
        return _table(f"{head}cached share for ${self.claim_usd:g}", rows)

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        nx, top, reg = self.largest, self.top, self.registry
        by = self.throughput.set_index("reading")
        sp = float(top["speedup"])
        verb = "grew to" if sp > 1.005 else "shrank to" if sp < 0.995 else "stayed at"
        change = f"{verb} {sp:.2f}x" if np.isfinite(sp) else "is unknown"
        u = self.unit
        dec, pre = self.model.active_params("decode"), self.model.active_params("prefill")
        assert dec is not None and pre is not None, "the catalog model states its active params"
        out = common.glue(self, GLUE) | {
            "su_claim": reg.value(SINGLE_USER_CLAIM),
            "su_gpus": reg.get(SINGLE_USER_CLAIM).scope.gpu_count,
            "dp_claim": reg.value(DECODE_PARITY_CLAIM),
            "active_decode_b": dec / 1e9,
            "active_prefill_b": pre / 1e9,
            "price_uncached": catalogs.token_price(TOKEN_PRICES).usd_per_m_uncached,
            "price_cached": catalogs.token_price(TOKEN_PRICES).usd_per_m_cached,
            "nx_config": str(nx["config"]),
            "nx_units": units.plural(int(nx["num_gpus"]), u),
            **{
                f"nx_{k}": verdicts.text(nx[f"{k}_tok_s"], ",.1f")
                for k in ("total", "output", "new_input", "cached_input", "computed")
            },
            "nx_total_per_gpu": verdicts.text(nx["total_tok_s_per_gpu"], ",.1f"),
            "nx_cached_source": str(nx["cached_source"]),
            "ref_units": units.plural(int(self.scaling.iloc[0]["num_gpus"]), u),
            "top_units": units.plural(int(top["num_gpus"]), u),
            "speedup": verdicts.text(sp, ".2f"),
            "scaling_change": change,
            "efficiency_pct": verdicts.text(100 * top["efficiency"], ".1f"),
            "cap_decode": self.cap("compute", "decode"),
            **{f"ratio_{k}": by.loc[f"per-gpu-{k}", "ratio"] for k in ("decode", "prefill")},
            "rack_per_gpu": by.loc["rack-total", "tok_s_per_gpu"],
            "rack_ratio_pct": 100 * by.loc["rack-total", "ratio"],
            **{f"v_{r.split('-')[-1]}": v for r, v in by["verdict"].items()},
            "v_rack": by.loc["rack-total", "verdict"],
            "min_cached_pct": 100 * by.loc["per-gpu-with-cached", "min_cached_share"],
        }
        return out | self._node_and_cost_values()

    def _node_and_cost_values(self) -> dict[str, Any]:
        spi = self.speedups.set_index("system")
        rev = self.cost.revenue.set_index("reading")
        cst = self.cost.cost.set_index(["reading", "basis"])["usd_per_m_tokens"]
        out: dict[str, Any] = {}
        for n, s in (("tray", self.params.node_systems[0]), ("hgx", self.params.node_systems[-1])):
            out |= {
                f"{n}_gpus": int(spi.loc[s, "gpus_per_node"]),
                f"node_{n}_ratio": spi.loc[s, "ratio"],
                f"node_{n}_gpu": str(spi.loc[s, "gpu"]).upper(),
                f"stated_{n}_per_gpu": spi.loc[s, "stated_node_tok_s_per_gpu"],
                f"stated_{n}_pct": 100 * spi.loc[s, "stated_min_cached_share"],
                f"eff_{n}_pct": 100 * spi.loc[s, "efficiency"],
                f"nodes_{n}": spi.loc[s, "nodes"],
                f"node_{n}_per_gpu": spi.loc[s, "node_tok_s_per_gpu"],
            }
        return out | {
            "usd_per_m_stated": cst[(STATED, "claim as cost")],
            "usd_per_m_rack": cst[(self.rack_reading, "claim as cost")],
            "rev_share_rack": verdicts.text(
                100 * rev.loc[self.rack_reading, "cached_share_matching"], ".1f"
            ),
            "rev_min_rack": rev.loc[self.rack_reading, "revenue_all_cached"],
            "rev_max_rack": rev.loc[self.rack_reading, "revenue_all_uncached"],
            "rev_min_stated": rev.loc[STATED, "revenue_all_cached"],
        }


analyse = Analysis


def _measured(a: Analysis) -> list[headline.Headline]:
    nx, top, p, num = a.largest, a.top, a.params, verdicts.number
    run = headline.by_claim(a.readings, "this run")
    cfg, u = nx["config"], a.unit
    note = nx["note"] or "cached count from the requests' cached_prompt_tokens"
    prices, null = catalogs.token_price(TOKEN_PRICES), "; null when the cached count is unknown"
    total = f"(input + output tokens) / window / {u}s, config {cfg} on "
    total += units.plural(int(nx["num_gpus"]), u)
    new = f"(input - cached input) tokens / window, config {cfg}{null}"
    cached = f"prefix-cache-hit input tokens / window, config {cfg}{null}"
    speedup = f"{p.metric} tok/s of config {top['config']} / config {p.reference_config}"
    eff = f"(T_n / n {u}s) / (T_1 / n_1 {u}s), the per-{u} ratio"
    revenue = f"(computed tok/s x ${prices.usd_per_m_uncached:g}/M + cached input tok/s x "
    revenue += f"${prices.usd_per_m_cached:g}/M) per {u} x 3600, config {cfg}{null}"
    tp, sp, cost = run[THROUGHPUT_CLAIM], run[SPEEDUP_CLAIM], run[COST_CLAIM]
    unsaid = "the write-up does not say which tokens it counts"
    output = f"output tokens / window, config {cfg}"
    rates = [
        (tp, "total_tok_s_per_gpu", f"tok/s/{u}", total),
        (unsaid, "output_tok_s", "tok/s", output),
        (note, "new_input_tok_s", "tok/s", new),
        (note, "cached_input_tok_s", "tok/s", cached),
    ]
    rows = [(r, f"measured_{k}", num(nx[k], 2), unit, what) for r, k, unit, what in rates]
    rows += [
        (sp, "measured_speedup", num(top["speedup"], 3), "x", speedup),
        (sp, "measured_scaling_efficiency", num(top["efficiency"], 4), "1", eff),
        (cost, "measured_token_revenue", num(a.revenue_run, 6), f"USD/{u}-hour", revenue),
    ]
    return common.headlines(rows, **common.where(a))


def _modelled(a: Analysis) -> list[headline.Headline]:
    p, num = a.params, verdicts.number
    rows: list[tuple[Any, ...]] = []
    for r in a.throughput[a.throughput["reading"] != "per-gpu-with-cached"].itertuples():
        what = f"{r.meaning}: claimed / ceiling on {p.gpu_id} ({r.limit})"
        head = (THROUGHPUT_CLAIM, f"reading_{r.reading}", num(r.ratio, 4), "x ceiling")
        rows.append((*head, what, r.verdict, r.formula))
    c = a.throughput.set_index("reading").loc["per-gpu-with-cached"]
    least = (
        "least share of the input tokens that must be prefix-cache hits for the "
        f"figure, per GPU on {p.gpu_id}, to fit the whole workload (ISL {p.workload_isl:,} / "
        f"OSL {p.workload_osl:,}, assumed: new-token prefill behind the cached prefix, "
        "attention over it, output decode); sufficient, not only necessary"
    )
    name, share = "reading_per-gpu-with-cached_min_cached_share", num(c["min_cached_share"], 4)
    rows.append((THROUGHPUT_CLAIM, name, share, "1", least, c["verdict"], c["formula"]))
    for r in a.speedups.itertuples():
        what = f"{a.claim_speedup:g} / ({a.rack.gpus} GPUs / {r.gpus_per_node} per node): "
        what += "per-GPU scaling efficiency"
        how = f"per GPU as stated: {r.stated_formula}; as the rack total: {r.formula}"
        head = (SPEEDUP_CLAIM, f"speedup_efficiency_{r.system}", num(r.efficiency, 4), "1")
        rows.append((*head, what, r.stated_verdict, how))
    rev = a.cost.revenue.set_index("reading").loc[a.rack_reading]
    cost_v = headline.by_claim(a.readings, "physics")[COST_CLAIM].verdict
    revenue = (
        "cached share at which token revenue per GPU-hour ($1/M uncached, $0.10/M "
        "cached) equals the figure, rack-total reading; null if none"
    )
    at = num(rev["cached_share_matching"], 4)
    cost = (COST_CLAIM, "revenue_cached_share_rack_total", at, "1", revenue, cost_v, rev["formula"])
    what = "$/GPU-hour figure / the catalog's GB300 ownership cost (InferenceX's model)"
    why = "$/GPU-hour is not a price per answer; what the dollars are is not stated"
    rental = common.headlines(
        [(why, "cost_ratio_to_rental", num(a.cost.ratio_to_rental, 3), "x", what)]
    )
    return [*(common.modelled(*r) for r in rows), *rental, common.modelled(*cost)]


def flips(a: Analysis) -> list[str]:
    """What would turn each reading (USD: ``$`` opens math in Markdown)."""
    hi = results_bounds.verdict_rule().impossible_above
    t, s, tol = a.claim_tok_s, a.claim_speedup, a.params.rel_tol
    work = f"ISL {a.params.workload_isl:,} / OSL {a.params.workload_osl:,}, assumed"
    need = a.throughput.set_index("reading").loc["per-gpu-with-cached", "min_cached_share"]
    bound = results_bounds.cached_ceiling(a.model, a.gpu, a.rack.gpus).ceiling_tok_s_per_gpu
    fits = f"possible once a published cached share reaches {percent(need)}, impossible below"
    tp = f"throughput, physics (per GPU as stated, cache hits counted, {work}): "
    tp += f"{fits if np.isfinite(need) else 'no cached share fits'}; as computed tokens possible "
    tp += f"up to {hi * a.cap('compute', 'prefill'):,.0f} tok/s per GPU (prefill ceiling), "
    tp += f"impossible above {units.number(bound, 3)} tok/s per GPU on any workload; decode "
    tp += f"ratio {a.band.text}"
    sd, nodes = a.speedups, []
    caps = hi * sd["ceiling_tok_s_per_gpu"] * sd["gpus_per_node"]
    for r in sd.itertuples():
        node, share = f"{r.gpus_per_node}-GPU {r.gpu.upper()} nodes", r.stated_min_cached_share
        nodes.append(
            f"{node} fit from {percent(share)} cache hits"
            if np.isfinite(share)
            else f"no cached share fits {node}"
        )
    sp = f"speedup, physics (throughput's basis, {work}): {'; '.join(nodes)}. As the rack's "
    sp += f"total: possible below {s * caps.min():,.0f} tok/s (every node within its ceiling), "
    sp += f"impossible above {s * caps.max():,.0f} tok/s; at {t:,.0f} tok/s, possible above "
    sp += f"{ratio_text(t / caps.min())}, impossible below {ratio_text(t / caps.max())}"
    return [
        tp,
        sp,
        "cost, physics: nothing turns it; no ceiling bounds a price",
        "published, every claim: an independent measurement of DeepSeek-V4.1-Flash on a GB300 "
        "NVL72 (none located)",
        f"this run, throughput and speedup: a trace on {a.rack.gpus} GB300 GPUs serving "
        f"DeepSeek-V4.1-Flash, with a one-node reference, within {percent(tol, 0)} of {t:,.0f} "
        f"tok/s per GPU and of {s:g}x",
        f"this run, cost: its token revenue per GPU-hour at InferenceX's prices (needs the cached "
        f"count) within {percent(tol, 0)} of USD {a.claim_usd:g}",
    ]


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, the three readings of each claim and what would flip them."""
    return common.outcome(RESULT, a, _measured(a) + _modelled(a), flips(a), REPORTED)


def _usd(v: float) -> str:
    return f"${v:,.0f}" if abs(v) >= 1000 else f"${v:,.2f}"


# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {
    "rack-scaling.throughput": tuple(
        "metric tokens per gpus model hardware gpu_count workload speculation".split()
    ),
    "rack-scaling.speedup": ("metric", "counting", "model", "hardware", "workload", "speculation"),
    "rack-scaling.cost": ("metric", "hardware"),
}
READING_NOTES = {
    "rack-scaling.throughput": "the write-up describes an agentic workload with long, growing "
    "contexts and says neither which tokens it counts (cached prefix or not) nor whether "
    "'per GPU' divides the rack's total",
    "rack-scaling.speedup": "the write-up does not say what a node is; MLPerf's 72-GPU results "
    "may be independent replicas (its summary does not say how the GPUs serve), so its "
    "72-over-8 ratios may count replicas rather than one deployment's scaling",
    "rack-scaling.cost": "the write-up does not say what the dollars are; each price is read "
    "with its own source (InferenceX's GB300 rental and ownership prices are placeholders, "
    "1.2x GB200 pricing per its constants file; OCI's list price was read only in a price "
    "compilation)",
}
