"""Physics readings of rack-scaling's figures: "tokens/s per GPU" and the speedup against the
ceilings, what measured kernels reach, and the dollars per GPU-hour as cost and token revenue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.units import number, percent, ratio_text
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check, results_bounds, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts
from rackbook.results.rack_scaling.measure import NODE_SYSTEMS

#: The workload (tokens per request) the cache-hit reading assumes (the write-up gives none).
ASSUMED_ISL = 100_000
ASSUMED_OSL = 1_000

THROUGHPUT_CLAIM = "rack-scaling.throughput"
SPEEDUP_CLAIM = "rack-scaling.speedup"
COST_CLAIM = "rack-scaling.cost"


def speedup_readings(
    speedup: float,
    claim_tok_s: float,
    n_gpus: int,
    model: ModelSpec | str,
    hw: GpuSpec | str | None = None,
    systems: tuple[str, ...] = NODE_SYSTEMS,
    *,
    isl: float | None = None,
    osl: float | None = None,
) -> pd.DataFrame:
    """Per node size of ``systems`` (``hw`` unused): efficiency = speedup / nodes, the node as the
    rack total (tok/s per GPU vs its decode ceiling) and per GPU as stated (``stated_*``)."""
    isl = ASSUMED_ISL if isl is None else isl
    osl = ASSUMED_OSL if osl is None else osl
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


#: Each reading of a per-GPU figure whose counted tokens the source does not state, in words.
READING_LABELS = {
    "per-gpu-decode": "per GPU, decode tokens",
    "per-gpu-prefill": "per GPU, prefill tokens",
    "per-gpu-with-cached": "per GPU, cache hits counted",
    "rack-total": "rack total / GPUs",
}


def throughput_readings(
    claim_value: float,
    n_gpus: int,
    model: ModelSpec | str,
    hw: GpuSpec | str,
    cached_share: float | None = None,
    *,
    isl: float | None = None,
    osl: float | None = None,
) -> pd.DataFrame:
    """Each reading (:data:`READING_LABELS`) of "``claim_value`` tokens/s per GPU"; cache hits
    at ``cached_share``, else the least share that fits (``min_cached_share``)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    isl = ASSUMED_ISL if isl is None else isl
    osl = ASSUMED_OSL if osl is None else osl
    per_gpu = claim_value / n_gpus
    rack = _bound_row(m, g, n_gpus, "rack-total", f"total of the {n_gpus}-GPU rack", per_gpu)
    rack["formula"] = (
        f"{claim_value:,.0f} / {n_gpus} = {per_gpu:,.0f} tok/s per GPU; " + (rack["formula"])
    )
    prefill = "computed new-token prefill tokens per GPU"
    rows = [
        _bound_row(m, g, n_gpus, "per-gpu-decode", "computed decode tokens per GPU", claim_value),
        _bound_row(m, g, n_gpus, "per-gpu-prefill", prefill, claim_value, "prefill"),
        _cached_reading(m, g, n_gpus, claim_value, isl, osl, cached_share),
        rack,
    ]
    out = pd.DataFrame(rows)
    out.attrs["workload"] = (isl, osl)
    out.attrs["cached_share"] = cached_share
    return out


def _bound_row(
    m: ModelSpec,
    g: GpuSpec,
    n_gpus: int,
    name: str,
    meaning: str,
    tok_s: float,
    phase: str = "decode",
) -> dict[str, Any]:
    c = check.check_claim(m, g, n_gpus, tok_s, phase=phase)
    text = (
        f"{tok_s:,.0f} tok/s per GPU is {ratio_text(c.ratio)} the {phase} {c.limit} ceiling "
        f"of {c.ceiling_tok_s_per_gpu:,.0f} on {g.label}"
    )
    return _row(name, meaning, tok_s, tok_s, phase, c, text)


def _row(
    name: str,
    meaning: str,
    counted: float,
    computed: float,
    phase: str,
    c: check.Check,
    formula: str,
    command: str = "",
) -> dict[str, Any]:
    row: dict[str, Any] = dict(reading=name, meaning=meaning, tok_s_per_gpu=counted)
    row |= dict(computed_tok_s_per_gpu=computed, phase=phase)
    row |= dict(ceiling_tok_s_per_gpu=c.ceiling_tok_s_per_gpu, limit=c.limit, ratio=c.ratio)
    return row | dict(verdict=c.verdict, min_cached_share=np.nan, formula=formula, command=command)


def _workload_text(isl: float, osl: float) -> str:
    assumed = (isl, osl) == (ASSUMED_ISL, ASSUMED_OSL)
    return f"ISL {isl:,.0f} / OSL {osl:,.0f}" + (
        " (assumed: the write-up gives no workload)" if assumed else ""
    )


def _cached_reading(
    m: ModelSpec,
    g: GpuSpec,
    n_gpus: int,
    claim_value: float,
    isl: float,
    osl: float,
    cached_share: float | None,
) -> dict[str, Any]:
    work = _workload_text(isl, osl)

    def at(share: float, meaning: str) -> tuple[dict[str, Any], str]:
        kw: dict[str, Any] = dict(counted="total", isl=isl, osl=osl, cached_share=share)
        c = check.check_claim(m, g, n_gpus, claim_value, **kw)
        computed = c.workload["new_input_tok_s_per_gpu"] + c.workload["output_tok_s_per_gpu"]
        formula = f"at {work} with {percent(share)} of the input tokens cached: {c.reason}"
        command = (
            f"rackbook check --model {m.id} --gpu {g.id} --gpus {n_gpus} --tok-s {claim_value:g} "
            f"--per gpu --counted total --isl {isl:g} --osl {osl:g} --cached-share {share:.3f}"
        )
        phase = "prefill + decode"
        row = _row(
            "per-gpu-with-cached", meaning, claim_value, computed, phase, c, formula, command
        )
        return row, c.reason

    if cached_share is not None:
        return at(cached_share, f"per GPU, {percent(cached_share)} of input tokens cache hits")[0]
    th = check.cached_share_threshold(
        m, g, n_gpus, claim_value, per="gpu", counted="total", isl=isl, osl=osl
    )
    top = results_bounds.cached_ceiling(m, g, n_gpus)
    bound = top.ceiling_tok_s_per_gpu
    ctx = top.workload["isl"] + 1
    how = (
        f"on any workload no cached share reaches more than {number(bound, 3)} tok/s per GPU "
        f"(requests of {ctx:,.0f} tokens, all cached but one new input token, one output "
        "token)"
    )
    meaning = "per GPU, counting cache-hit input tokens (share not published)"
    share = 1 - 1 / isl if claim_value > bound or th.share is None else th.share
    row, reason = at(share, meaning)
    row["min_cached_share"] = np.nan if th.share is None else th.share
    if claim_value > bound:
        row.update(
            ratio=claim_value / bound,
            verdict="impossible",
            ceiling_tok_s_per_gpu=bound,
            limit="cached prefix",
            formula=f"{claim_value:,.0f} tok/s per GPU is {ratio_text(claim_value / bound)} what "
            f"any cached share allows: {how}",
        )
    elif th.share is None:
        row.update(verdict="impossible", formula=f"at {work}: {th.formula}")
    elif th.share > 0:
        row.update(
            ratio=np.nan,
            verdict="undetermined",
            formula=f"at {work} it fits once at least {percent(th.share)} of the input "
            f"tokens are cache hits (sufficient: every larger share fits too; the share "
            f"is not published); there {reason}; {how}",
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
    isl, osl = readings.attrs.get("workload", (ASSUMED_ISL, ASSUMED_OSL))
    claim = float(by.loc["per-gpu-decode", "tok_s_per_gpu"])
    cached = by.loc["per-gpu-with-cached"]
    share = cached["min_cached_share"]
    if not np.isfinite(share):
        share = readings.attrs.get("cached_share")
    rack = by.loc["rack-total"]
    c_rack = check.check_claim(model, gpu, n_gpus, float(rack["tok_s_per_gpu"]), phase="decode")
    a_rack = verdicts.attainable(c_rack, "as the rack's total")
    if share is None:
        return {**a_rack, "rack_total": a_rack}
    c = check.check_claim(
        model, gpu, n_gpus, claim, counted="total", isl=isl, osl=osl, cached_share=share
    )
    a = verdicts.attainable(
        c,
        f"per GPU as stated, {percent(share)} of the input cached at ISL {isl:,.0f} / OSL "
        f"{osl:,.0f}",
    )
    return {
        **a,
        "text": f"{a['text']}; {a_rack['text']}",
        "rack_total": a_rack,
        "brief": f"as stated at {percent(share)} cached, {a['ratio']:.2g}x what measured kernels "
        f"reach; as the rack's total, {a_rack['ratio']:.2g}x",
    }


def throughput_physics(
    readings: pd.DataFrame, attainable: dict[str, Any] | None = None
) -> headline.ClaimReading:
    """The claim as written ("per GPU"): the most permissive of its per-GPU readings."""
    by = readings.set_index("reading")
    per_gpu = by.loc[["per-gpu-decode", "per-gpu-prefill", "per-gpu-with-cached"]]
    order = {"possible": 0, "undetermined": 1, "impossible": 2}
    best = min(per_gpu["verdict"], key=order.__getitem__)
    dec, pre = by.loc["per-gpu-decode"], by.loc["per-gpu-prefill"]
    isl, osl = readings.attrs.get("workload", (ASSUMED_ISL, ASSUMED_OSL))
    rack, cached = by.loc["rack-total"], by.loc["per-gpu-with-cached"]
    computed: dict[str, Any] = {"name": "computed tokens per GPU", "verdict": str(dec["verdict"])}
    computed |= {"ratio": float(dec["ratio"]), "ceiling": "decode ceiling"}
    total: dict[str, Any] = {"name": "the rack's total", "verdict": str(rack["verdict"])}
    total["tok_s_per_gpu"] = float(rack["tok_s_per_gpu"])
    clauses = [
        f"as {computed['name']} it needs {ratio_text(computed['ratio'])} the "
        f"{computed['ceiling']} and "
        f"{ratio_text(pre['ratio'])} the prefill ceiling",
        "counting cache hits, "
        + (
            f"no cached share reaches it ({ratio_text(cached['ratio'])} the most any share allows)"
            if cached["limit"] == "cached prefix"
            else f"at the given share, {cached['formula']}"
            if np.isfinite(cached["ratio"])
            else f"it fits only once at least {percent(cached['min_cached_share'])} of the input "
            f"tokens are prefix-cache hits at ISL {isl:,.0f} / OSL {osl:,.0f} (a workload "
            "assumed here; the share and the workload are not published)"
        ),
        f"as {total['name']} ({total['tok_s_per_gpu']:,.0f} per GPU) it is {total['verdict']}",
    ]
    workload = (
        None if cached["limit"] == "cached prefix" else {"isl": float(isl), "osl": float(osl)}
    )
    decided = per_gpu[per_gpu["verdict"] == best].iloc[0]
    ratio = None
    if best == "undetermined" and np.isfinite(cached["min_cached_share"]):
        holds = f"fits only if >= {percent(cached['min_cached_share'])} of the input is cached"
    elif np.isfinite(decided["ratio"]):
        ratio = float(decided["ratio"])
        holds = headline.ceiling_margin(ratio, f"the {decided['phase']} ceiling")
    else:
        holds = "no cached share fits"
    condition = {"basis": "per GPU as stated", "condition": holds}
    margin = f"{condition['basis']}: {holds}"
    return common.reading(
        THROUGHPUT_CLAIM,
        "physics",
        best,
        margin,
        clauses,
        attainable=attainable,
        ratio=ratio,
        on_bases=(computed, total),
        workload=workload,
        condition=condition,
    )


def speedup_attainable(speedups: pd.DataFrame, model: ModelSpec) -> dict[str, Any]:
    """What measured kernels reach for the smallest node the speedup implies (rack total)."""
    r = speedups.loc[speedups["gpus_per_node"].idxmin()]
    n, tok_s = int(r["gpus_per_node"]), float(r["node_tok_s_per_gpu"])
    c = check.check_claim(model, str(r["gpu"]), n, tok_s, phase="decode")
    a = verdicts.attainable(c, f"a {n}-GPU node, the rack's total / speedup")
    return {
        **a,
        "brief": f"the implied {n}-GPU node is {a['ratio']:.2g}x what measured kernels reach",
    }


def speedup_physics(
    speedups: pd.DataFrame, attainable: dict[str, Any] | None = None
) -> headline.ClaimReading:
    """The speedup per GPU as stated: the node sizes' one ``stated_verdict``, else undetermined."""
    vs = set(speedups["stated_verdict"])
    isl, osl = speedups.attrs.get("workload", (ASSUMED_ISL, ASSUMED_OSL))
    v = vs.pop() if len(vs) == 1 else "undetermined"
    stated = "; ".join(
        f"nodes of {r.gpus_per_node} {r.gpu.upper()}: {percent(r.efficiency)} scaling efficiency, "
        f"the node at {r.stated_node_tok_s_per_gpu:,.0f} counted tok/s per GPU, "
        + (
            f"which fits once at least {percent(r.stated_min_cached_share)} of its input tokens "
            "are cache hits"
            if np.isfinite(r.stated_min_cached_share)
            else "which no cached share fits"
        )
        for r in speedups.itertuples()
    )
    total = "; ".join(
        f"{r.gpus_per_node}-GPU nodes at {r.node_tok_s_per_gpu:,.0f} tok/s per GPU, "
        f"{ratio_text(r.ratio)} the {r.gpu.upper()} decode ceiling ({r.verdict})"
        for r in speedups.itertuples()
    )
    share = speedups["stated_min_cached_share"].max(skipna=False)
    clauses = [
        f"on the throughput's basis (per GPU as stated, cache hits counted, ISL {isl:,.0f} "
        f"/ OSL {osl:,.0f} assumed): {stated}",
        f"with the throughput as the rack's total: {total}",
        "super-linear per-GPU scaling would also be possible",
    ]
    margin = "per GPU as stated: " + (
        "no cached share fits"
        if not np.isfinite(share)
        else "fits with nothing cached"
        if share == 0
        else f"fits at >= {percent(share)} cached"
    )
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
    formula: str


def cost_readings(
    price_per_gpu_hour: float,
    tokens_per_s_per_gpu: dict[str, float],
    rental_usd_per_gpu_hour: float | None = None,
    cached_share: float | None = None,
) -> CostReadings:
    """``price_per_gpu_hour`` (USD) as USD per million tokens beside the rental, and as token
    revenue per GPU-hour: Mtok per hour x (p_u (1 - s) + p_c s), p in USD per million tokens."""
    prices = catalogs.token_price(TOKEN_PRICES)
    source = (
        f"{prices.sources[0]} (uncached input and output ${prices.usd_per_m_uncached:g}/M "
        f"tokens, cached input ${prices.usd_per_m_cached:.2f}/M; read {prices.read})"
    )
    if rental_usd_per_gpu_hour is None:
        rent = catalogs.price(DEFAULT_PRICE)
        rental_usd_per_gpu_hour = rent.usd_per_gpu_hour
        rent_label, rent_source = f"{rent.kind} ({rent.id})", rent.sources[0]
    else:
        rent_label, rent_source = "reference (given)", "argument rental_usd_per_gpu_hour"
    bases = {
        "claim as cost": (price_per_gpu_hour, f"data/claims.yaml {COST_CLAIM}"),
        rent_label: (rental_usd_per_gpu_hour, rent_source),
    }
    prices_um = (prices.usd_per_m_uncached, prices.usd_per_m_cached)
    cost, revenue = [], []
    for name, tps in tokens_per_s_per_gpu.items():
        mtok_h = tps * 3600 / 1e6
        for basis, (usd, where) in bases.items():
            per_m = usd / mtok_h
            how = f"${usd:g} / ({tps:,.0f} tok/s x 3600 / 1e6 = {mtok_h:,.4g} M) = ${per_m:.4g}/M"
            cost.append((name, basis, tps, mtok_h, usd, per_m, where, how + " tokens"))
        revenue.append(_revenue_row(name, tps, price_per_gpu_hour, *prices_um, cached_share))
    ratio = price_per_gpu_hour / rental_usd_per_gpu_hour
    formula = (
        f"${price_per_gpu_hour:g} / ${rental_usd_per_gpu_hour:g} reference price = "
        f"{ratio_text(ratio)}; token prices: {source}"
    )
    cols = ["reading", "basis", "tok_s_per_gpu", "mtok_per_gpu_hour", "usd_per_gpu_hour"]
    cost_df = pd.DataFrame(cost, columns=[*cols, "usd_per_m_tokens", "source", "formula"])
    return CostReadings(cost_df, pd.DataFrame(revenue), ratio, formula)


def _revenue_row(
    name: str, tps: float, price: float, p_u: float, p_c: float, cached_share: float | None
) -> dict[str, Any]:
    mtok_h = tps * 3600 / 1e6
    rev_u, rev_c = mtok_h * p_u, mtok_h * p_c
    share = (p_u - price / mtok_h) / (p_u - p_c)
    share = share if 0 <= share <= 1 else np.nan
    at_share = (
        np.nan if cached_share is None else mtok_h * (p_u * (1 - cached_share) + p_c * cached_share)
    )
    needs = f"needs {percent(share)} cached" if np.isfinite(share) else "is outside that range"
    formula = (
        f"{mtok_h:,.4g} M tok/h x ${p_u:g}/M = ${rev_u:,.4g} (all uncached) .. x ${p_c:g}/M = "
        f"${rev_c:,.4g} (all cached); ${price:g} {needs}"
    )
    row = dict(reading=name, tok_s_per_gpu=tps, mtok_per_gpu_hour=mtok_h)
    row |= dict(revenue_all_uncached=rev_u, revenue_all_cached=rev_c)
    return row | dict(cached_share_matching=share, revenue_at_share=at_share, formula=formula)


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
