"""The physics readings of rack-scaling's throughput and speedup figures: each reading of
"tokens/s per GPU" (decode, prefill, cache hits counted, the rack's total) against the catalogs'
ceilings (:mod:`rackbook.physics`), the ceilings with their arithmetic, what measured kernels
reach, and the claims' physics verdicts with their reasons."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.units import number, percent, ratio_text
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check, results_bounds, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts
from rackbook.results.rack_scaling.scaling import NODE_SYSTEMS, node_sizes

#: The workload the cache-hit reading assumes, tokens per request (ISL, OSL): an agentic
#: request with a long context and a short answer. The write-up gives no ISL or OSL, only "long
#: contexts that keep growing"; every threshold that depends on it says it is assumed.
ASSUMED_ISL = 100_000
ASSUMED_OSL = 1_000

#: The claims this chapter tests (data/claims.yaml), and two it quotes to keep them apart.
THROUGHPUT_CLAIM = "rack-scaling.throughput"
SPEEDUP_CLAIM = "rack-scaling.speedup"


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
    """What a ``speedup`` over "a single node" on ``n_gpus`` GPUs means for each node size in
    ``systems`` (against the node's own GPU; ``hw`` is not used): scaling efficiency =
    speedup / nodes, and the node it implies on two bases:

    - the rack total (``node_*``, ``ratio``, ``verdict``): ``claim_tok_s`` / speedup per GPU
      of the node against its decode compute ceiling (7.9x with 954,000 tok/s on 18 trays of
      4: 30,190 tok/s per GPU, 0.125x GB300's 241,834);
    - per GPU as stated (``stated_*``): claim x n_gpus / speedup / GPUs per node, fitting only
      with ``stated_min_cached_share`` of its input cached at ``isl`` / ``osl``.
    """
    if not speedup > 0:
        raise InputError("-", "speedup", f"must be > 0, got {speedup}")
    isl = ASSUMED_ISL if isl is None else isl
    osl = ASSUMED_OSL if osl is None else osl
    rows = []
    for sid, per_node in node_sizes(systems).items():
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
        s_verdict = th.verdict
        s_text = f"at ISL {isl:,.0f} / OSL {osl:,.0f}, {th.formula}" + (
            " (the share is not published)" if th.verdict == "undetermined" else ""
        )
        rows.append(
            {
                "system": sid,
                "name": catalogs.system(sid).name,
                "gpu": node_gpu.id,
                "gpus_per_node": per_node,
                "nodes": nodes,
                "speedup": speedup,
                "efficiency": eff,
                "node_tok_s_per_gpu": node_per_gpu,
                "ceiling_tok_s_per_gpu": cap,
                "ratio": ratio,
                "verdict": check.physics_verdict(ratio),
                "formula": f"{n_gpus} GPUs / {per_node} = {nodes:g} nodes; {speedup:g} / "
                f"{nodes:g} = {percent(eff)} per GPU; node as the rack total: {claim_tok_s:,.0f} / "
                f"{speedup:g} / {per_node} = {node_per_gpu:,.0f} tok/s per GPU = "
                f"{ratio_text(ratio)} "
                f"the {node_gpu.label} decode compute ceiling of {cap:,.0f}",
                "stated_node_tok_s_per_gpu": stated,
                "stated_min_cached_share": np.nan if th.share is None else th.share,
                "stated_verdict": s_verdict,
                "stated_formula": s_text,
            }
        )
    out = pd.DataFrame(rows)
    out.attrs["workload"] = (isl, osl)
    return out


#: Readings of a per-GPU throughput figure whose counted tokens the source does not state.
READINGS = ("per-gpu-decode", "per-gpu-prefill", "per-gpu-with-cached", "rack-total")
#: Each reading in a few words (tables and figures).
READING_LABELS = {
    "per-gpu-decode": "per GPU, decode tokens",
    "per-gpu-prefill": "per GPU, prefill tokens",
    "per-gpu-with-cached": "per GPU, cache hits counted",
    "rack-total": "rack total / GPUs",
}


def check_command(
    model: ModelSpec, gpu: GpuSpec, gpus: int, tok_s: float, isl: float, osl: float, share: float
) -> str:
    """The ``rackbook check`` command that reads the same figure on the same workload."""
    return (
        f"rackbook check --model {model.id} --gpu {gpu.id} --gpus {gpus} --tok-s {tok_s:g} "
        f"--per gpu --counted total --isl {isl:g} --osl {osl:g} --cached-share {share:.3f}"
    )


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
    """Readings of "``claim_value`` tokens/s per GPU" (:data:`READINGS`), each judged by
    :func:`rackbook.physics.check.check_claim`: computed decode tokens; computed prefill
    tokens; input + output with cache hits counted on the workload ``isl`` / ``osl`` at
    ``cached_share`` of the input, else at the least share that fits (``min_cached_share``,
    undetermined; impossible where none fits); the rack's total / ``n_gpus``. Columns: reading,
    meaning, tok_s_per_gpu, computed_tok_s_per_gpu, phase, ceiling_tok_s_per_gpu, limit,
    ratio, verdict, min_cached_share, formula, command (``rackbook check``, cached row).
    """
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    isl = ASSUMED_ISL if isl is None else isl
    osl = ASSUMED_OSL if osl is None else osl
    if not claim_value > 0:
        raise InputError("-", "claim_value", f"must be > 0, got {claim_value}")
    if cached_share is not None and not 0 <= cached_share < 1:
        raise InputError("-", "cached_share", f"must be in [0, 1), got {cached_share}")
    per_gpu = claim_value / n_gpus
    rack = _bound_row(m, g, n_gpus, "rack-total", f"total of the {n_gpus}-GPU rack", per_gpu)
    rack["formula"] = (
        f"{claim_value:,.0f} / {n_gpus} = {per_gpu:,.0f} tok/s per GPU; " + (rack["formula"])
    )
    rows = [
        _bound_row(m, g, n_gpus, "per-gpu-decode", "computed decode tokens per GPU", claim_value),
        _bound_row(
            m,
            g,
            n_gpus,
            "per-gpu-prefill",
            "computed new-token prefill tokens per GPU",
            claim_value,
            "prefill",
        ),
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
    """A row reading ``tok_s`` (tokens/s per GPU) as computed tokens of ``phase``."""
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
    """A row of :func:`throughput_readings` (tokens/s per GPU)."""
    return {
        "reading": name,
        "meaning": meaning,
        "tok_s_per_gpu": counted,
        "computed_tok_s_per_gpu": computed,
        "phase": phase,
        "ceiling_tok_s_per_gpu": c.ceiling_tok_s_per_gpu,
        "limit": c.limit,
        "ratio": c.ratio,
        "verdict": c.verdict,
        "min_cached_share": np.nan,
        "formula": formula,
        "command": command,
    }


def _workload_text(isl: float, osl: float) -> str:
    """The workload as rows and reasons name it: "ISL 100,000 / OSL 1,000 (assumed: ...)"."""
    assumed = (isl, osl) == (ASSUMED_ISL, ASSUMED_OSL)
    return f"ISL {isl:,.0f} / OSL {osl:,.0f}" + (
        " (assumed: the write-up gives no workload)" if assumed else ""
    )


def _cached_row(
    m: ModelSpec,
    g: GpuSpec,
    n_gpus: int,
    claim_value: float,
    isl: float,
    osl: float,
    share: float,
    meaning: str,
) -> tuple[dict[str, Any], str]:
    """The ``per-gpu-with-cached`` row at a cached ``share`` (0-1) and the check's reason."""
    c = check.check_claim(
        m, g, n_gpus, claim_value, counted="total", isl=isl, osl=osl, cached_share=share
    )
    w = c.workload
    row = _row(
        "per-gpu-with-cached",
        meaning,
        claim_value,
        w["new_input_tok_s_per_gpu"] + w["output_tok_s_per_gpu"],
        "prefill + decode",
        c,
        f"at {_workload_text(isl, osl)} with {percent(share)} of the input tokens cached: "
        f"{c.reason}",
        check_command(m, g, n_gpus, claim_value, isl, osl, share),
    )
    return row, c.reason


def _cached_reading(
    m: ModelSpec,
    g: GpuSpec,
    n_gpus: int,
    claim_value: float,
    isl: float,
    osl: float,
    cached_share: float | None,
) -> dict[str, Any]:
    """The ``per-gpu-with-cached`` row (see :func:`throughput_readings`)."""
    if cached_share is not None:
        meaning = f"per GPU, {percent(cached_share)} of input tokens cache hits"
        return _cached_row(m, g, n_gpus, claim_value, isl, osl, cached_share, meaning)[0]
    work = _workload_text(isl, osl)
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
    row, reason = _cached_row(m, g, n_gpus, claim_value, isl, osl, share, meaning)
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


#: The compute ceiling per GPU (LaTeX): every FLOP/s of the GPU spent on the per-token GEMMs,
#: routed experts and the rest each at the precision they run at.
CEILING_FORMULA = (
    r"C_\text{compute} = \frac{1}{\dfrac{2\,P_\text{routed}}{F_\text{routed}} + "
    r"\dfrac{2\,P_\text{dense}}{F_\text{dense}}}\ \text{tok/s per GPU}"
)


def ceilings(model: ModelSpec | str, hw: GpuSpec | str, n_gpus: int) -> pd.DataFrame:
    """The ceilings per GPU of ``n_gpus`` the throughput is judged against: compute and HBM
    bandwidth (no context read) in decode and prefill. Columns: ceiling, phase, tok_s_per_gpu,
    formula, latex (compute only, :data:`CEILING_FORMULA` with its numbers)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    rows = []
    for phase in ("decode", "prefill"):
        c = check.check_claim(m, g, n_gpus, 1.0, phase=phase)
        for r in c.ceilings:
            if r.name == "memory capacity":
                continue
            latex = ""
            if r.name == "compute":  # the same number, written out by the physics
                latex = results_bounds.compute_ceiling_latex(m, g, phase)
            rows.append(
                {
                    "ceiling": r.name,
                    "phase": phase,
                    "tok_s_per_gpu": r.tok_s_per_gpu,
                    "formula": r.formula,
                    "latex": latex,
                }
            )
    return pd.DataFrame(rows)


def throughput_attainable(
    readings: pd.DataFrame, model: ModelSpec, gpu: GpuSpec, n_gpus: int
) -> dict[str, Any]:
    """What measured kernels reach for the throughput as stated (at the least or given cached
    share) and, under ``rack_total``, as the rack's total."""
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
    """The claim as written ("per GPU"): the most permissive of its per-GPU readings; the
    rack-total reading in the reason."""
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
    # the workload a cached share is read at (none where no share on any workload reaches it)
    workload = (
        None if cached["limit"] == "cached prefix" else {"isl": float(isl), "osl": float(osl)}
    )
    # the margin of the reading that decided the verdict, never a ratio that contradicts it
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
    """The speedup read per GPU as stated (``stated_verdict`` of :func:`speedup_readings`): one
    verdict for every node size, else undetermined; the rack-total basis in the reason."""
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
