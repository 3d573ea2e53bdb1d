"""Rack scaling: which tokens a throughput counts, per-GPU figures, scaling efficiency, and the
readings of the published figures (data/claims.yaml: ``rack-scaling.throughput`` tokens/s "per
GPU", ``rack-scaling.speedup`` over a single node, ``rack-scaling.cost`` dollars per GPU-hour).

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
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import validity
from rackbook.core.provenance import hardware_label
from rackbook.core.server_metrics import prefix_cache_hit_rate
from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec, PriceSpec, SystemSpec
from rackbook.inputs.claims import Registry, load_claims
from rackbook.physics import check, results_bounds, roofline
from rackbook.physics.units import plural
from rackbook.results import evidence, headline, verdicts

#: Node sizes to read "a single node" as: catalog system ids (GB300 tray = 4 GPUs, HGX B300 = 8).
NODE_SYSTEMS: tuple[str, ...] = ("gb300-tray", "hgx-b300")

#: Token prices InferenceX's cost calculator uses, US dollars per million tokens (uncached
#: input and output; cached input).
INFERENCEX_USD_PER_M_UNCACHED = 1.00
INFERENCEX_USD_PER_M_CACHED = 0.10
INFERENCEX_PRICES_SOURCE = (
    "https://github.com/SemiAnalysisAI/InferenceX-app/blob/main/docs/tco-calculator.md "
    "(uncached input and output $1/M tokens, cached input $0.10/M)"
)

#: The workload the cache-hit reading assumes, tokens per request (ISL, OSL): an agentic
#: request with a long context and a short answer. The write-up gives no ISL or OSL, only "long
#: contexts that keep growing"; every threshold that depends on it says it is assumed.
ASSUMED_ISL = 100_000
ASSUMED_OSL = 1_000

RESULT = "rack-scaling"
#: The claims this chapter tests (data/claims.yaml), and two it quotes to keep them apart.
THROUGHPUT_CLAIM = "rack-scaling.throughput"
SPEEDUP_CLAIM = "rack-scaling.speedup"
COST_CLAIM = "rack-scaling.cost"
#: The catalog price the dollar figure is set against by default: InferenceX's GB300 hourly
#: rate, an ownership-cost model's (labelled so in data/hardware.yaml).
DEFAULT_PRICE = "gb300-tco-hyperscaler"
#: GPUs of one cloud instance of a GB300 NVL72 (a 4-GPU compute tray): the dollar figure read
#: as the price of one instance-hour is figure / 4 per GPU-hour.
INSTANCE_GPUS = 4

SINGLE_USER_CLAIM = "single-user.throughput"
DECODE_PARITY_CLAIM = "decode-parity.gap"

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
    ``systems``, read as the rack's aggregate (rack throughput / node throughput) and per GPU
    (scaling efficiency = speedup / nodes; above 1 is super-linear, which wide expert
    parallelism can give), with the physics of the node it implies on two bases, each against
    the node's own GPU (a GB300 tray's GB300, an HGX B300's B300; ``hw`` is not used):

    - the rack total (``node_*``, ``ratio``, ``verdict``): the throughput claim ``claim_tok_s``
      as the rack's total / speedup, per GPU of the node, against that GPU's decode compute
      ceiling. E.g. 7.9x on 72 GPUs with 954,000 tok/s: 18 trays of 4 -> 43.9 % efficiency;
      the tray serves 954,000 / 7.9 / 4 = 30,190 tok/s per GPU, 0.125x GB300's 241,834; an
      HGX B300 15,095, 0.0694x B300's 217,650;
    - per GPU as stated, cache hits counted (``stated_*``, the basis the throughput's physics
      reading decides on): the node counts claim x n_gpus / speedup tokens/s, each GPU
      claim x n_gpus / speedup / GPUs per node, and fits only with at least
      ``stated_min_cached_share`` of its input tokens cached at the workload ``isl`` / ``osl``
      (:func:`rackbook.physics.check.cached_share_threshold`): undetermined while the
      share is unpublished, impossible when no share fits.
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
                f"{nodes:g} = {eff:.1%} per GPU; node as the rack total: {claim_tok_s:,.0f} / "
                f"{speedup:g} / {per_node} = {node_per_gpu:,.0f} tok/s per GPU = {ratio:.3g}x "
                f"the {node_gpu.id} decode compute ceiling of {cap:,.0f}",
                "stated_node_tok_s_per_gpu": stated,
                "stated_min_cached_share": np.nan if th.share is None else th.share,
                "stated_verdict": s_verdict,
                "stated_formula": s_text,
            }
        )
    out = pd.DataFrame(rows)
    out.attrs["workload"] = (isl, osl)
    return out


# ----------------------------------------------------------------------------- readings

#: Readings of a per-GPU throughput figure whose counted tokens the source does not state.
READINGS = ("per-gpu-decode", "per-gpu-prefill", "per-gpu-with-cached", "rack-total")
#: Each reading in a few words (tables and figures).
READING_LABELS = {
    "per-gpu-decode": "per GPU, decode tokens",
    "per-gpu-prefill": "per GPU, prefill tokens",
    "per-gpu-with-cached": "per GPU, cache hits counted",
    "rack-total": "rack total / GPUs",
}


def cached_ceiling(model: ModelSpec | str, hw: GpuSpec | str, n_gpus: int) -> check.Check:
    """The most counted tokens/s per GPU any cached share can give
    (:func:`rackbook.physics.results_bounds.cached_ceiling`). DeepSeek-V4.1-Flash on GB300
    NVL72: about 3e10 tok/s/GPU."""
    return results_bounds.cached_ceiling(model, hw, n_gpus)


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
    """Readings of "``claim_value`` tokens/s per GPU", each judged by
    :func:`rackbook.physics.check.check_claim`.

    Rows: ``per-gpu-decode`` (every token a computed decode token, no context), ``per-gpu-
    prefill`` (every token a new-token prefill token, through the encoder layers),
    ``per-gpu-with-cached`` (per GPU, input + output counted, cache-hit input tokens included,
    on the whole workload ``isl`` / ``osl``, default :data:`ASSUMED_ISL` / :data:`ASSUMED_OSL`:
    the new input tokens' prefill behind the cached prefix, attention over it and the output
    tokens' decode share the GPUs' time; ``cached_share``, the share of the INPUT tokens that
    were cache hits, as ``rackbook check --cached-share``; without it the row gives the least
    share that fits, ``min_cached_share``, sufficient and not only necessary
    (:func:`rackbook.physics.check.cached_share_threshold`), and is undetermined, or
    impossible where no share fits or the figure is above what any workload gives,
    :func:`cached_ceiling`), ``rack-total`` (the figure is the rack's total: / n_gpus).
    Columns: reading, meaning, tok_s_per_gpu, computed_tok_s_per_gpu, phase,
    ceiling_tok_s_per_gpu, limit, ratio, verdict, min_cached_share, formula, command (the
    ``rackbook check`` line of the cache-hit row).
    """
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    isl = ASSUMED_ISL if isl is None else isl
    osl = ASSUMED_OSL if osl is None else osl
    if not claim_value > 0:
        raise InputError("-", "claim_value", f"must be > 0, got {claim_value}")
    if cached_share is not None and not 0 <= cached_share < 1:
        raise InputError("-", "cached_share", f"must be in [0, 1), got {cached_share}")
    rows = []

    def add(name: str, meaning: str, counted: float, computed: float, phase: str) -> dict:
        c = check.check_claim(m, g, n_gpus, computed, phase=phase)
        text = (
            f"{computed:,.0f} tok/s per GPU is {c.ratio:.3g}x the {phase} {c.limit} ceiling "
            f"of {c.ceiling_tok_s_per_gpu:,.0f} on {g.id}"
        )
        row = {
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
            "formula": text,
            "command": "",
        }
        rows.append(row)
        return row

    add("per-gpu-decode", "computed decode tokens per GPU", claim_value, claim_value, "decode")
    add(
        "per-gpu-prefill",
        "computed new-token prefill tokens per GPU",
        claim_value,
        claim_value,
        "prefill",
    )
    work = f"ISL {isl:,.0f} / OSL {osl:,.0f}" + (
        " (assumed: the write-up gives no workload)"
        if (isl, osl) == (ASSUMED_ISL, ASSUMED_OSL)
        else ""
    )

    def cached_row(share: float, meaning: str) -> dict:
        c = check.check_claim(
            m, g, n_gpus, claim_value, counted="total", isl=isl, osl=osl, cached_share=share
        )
        w = c.workload
        row = {
            "reading": "per-gpu-with-cached",
            "meaning": meaning,
            "tok_s_per_gpu": claim_value,
            "computed_tok_s_per_gpu": w["new_input_tok_s_per_gpu"] + w["output_tok_s_per_gpu"],
            "phase": "prefill + decode",
            "ceiling_tok_s_per_gpu": c.ceiling_tok_s_per_gpu,
            "limit": c.limit,
            "ratio": c.ratio,
            "verdict": c.verdict,
            "min_cached_share": np.nan,
            "formula": f"at {work} with {share:.1%} of the input tokens cached: {c.reason}",
            "command": check_command(m, g, n_gpus, claim_value, isl, osl, share),
        }
        rows.append(row)
        return row | {"reason": c.reason}

    if cached_share is not None:
        cached_row(cached_share, f"per GPU, {cached_share:.1%} of input tokens cache hits")
        th_share = np.nan
    else:
        th = check.cached_share_threshold(
            m, g, n_gpus, claim_value, per="gpu", counted="total", isl=isl, osl=osl
        )
        th_share = np.nan if th.share is None else th.share
        top = cached_ceiling(m, g, n_gpus)
        bound = top.ceiling_tok_s_per_gpu
        ctx = top.workload["isl"] + 1
        how = (
            f"on any workload no cached share reaches more than {bound:,.3g} tok/s per GPU "
            f"(requests of {ctx:,.0f} tokens, all cached but one new input token, one output "
            "token)"
        )
        meaning = "per GPU, counting cache-hit input tokens (share not published)"
        if claim_value > bound:
            cached_row(1 - 1 / isl, meaning)
            rows[-1].update(
                ratio=claim_value / bound,
                verdict="impossible",
                ceiling_tok_s_per_gpu=bound,
                limit="cached prefix",
                formula=f"{claim_value:,.0f} tok/s per GPU is {claim_value / bound:.3g}x what "
                f"any cached share allows: {how}",
            )
        elif th.share is None:
            cached_row(1 - 1 / isl, meaning)
            rows[-1].update(verdict="impossible", formula=f"at {work}: {th.formula}")
        elif th.share == 0:
            cached_row(0.0, meaning)
        else:
            reason = cached_row(th.share, meaning)["reason"]
            if th.share > 0:
                rows[-1].update(
                    ratio=np.nan,
                    verdict="undetermined",
                    formula=f"at {work} it fits once at least {th.share:.1%} of the input "
                    f"tokens are cache hits (sufficient: every larger share fits too; the share "
                    f"is not published); there {reason}; {how}",
                )
    rows[-1]["min_cached_share"] = th_share
    per_gpu = claim_value / n_gpus
    r = add("rack-total", f"total of the {n_gpus}-GPU rack", per_gpu, per_gpu, "decode")
    r["formula"] = f"{claim_value:,.0f} / {n_gpus} = {per_gpu:,.0f} tok/s per GPU; " + r["formula"]
    out = pd.DataFrame(rows)
    out.attrs["workload"] = (isl, osl)
    out.attrs["cached_share"] = cached_share
    return out


#: The compute ceiling per GPU (LaTeX): every FLOP/s of the GPU spent on the per-token GEMMs,
#: routed experts and the rest each at the precision they run at.
CEILING_FORMULA = (
    r"C_\text{compute} = \frac{1}{\dfrac{2\,P_\text{routed}}{F_\text{routed}} + "
    r"\dfrac{2\,P_\text{dense}}{F_\text{dense}}}\ \text{tok/s per GPU}"
)


def _plurals(text: str) -> str:
    """``1 GPU(s)`` -> ``1 GPU``, ``72 GPU(s)`` -> ``72 GPUs`` in a physics formula."""
    text = re.sub(r"\b1 tokens\b", "1 token", text)
    return re.sub(
        r"(\d[\d,.]*) (\w+)\(s\)",
        lambda m: f"{m[1]} {m[2]}" + ("" if m[1] == "1" else "s"),
        text,
    )


def _sci(x: float) -> str:
    """A LaTeX number in engineering notation: ``8.49 \\times 10^{9}``, ``15 \\times 10^{15}``."""
    exp = 3 * int(np.floor(np.log10(abs(x)) / 3))
    return rf"{x / 10**exp:.3g} \times 10^{{{exp}}}"


def ceilings(model: ModelSpec | str, hw: GpuSpec | str, n_gpus: int) -> pd.DataFrame:
    """The ceilings the throughput readings are judged against, per GPU of ``n_gpus``: compute
    in decode and in prefill (:func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`)
    and HBM bandwidth in decode at the best batch that fits (no context read: the most
    permissive case). Columns: ceiling, phase, tok_s_per_gpu, formula (words), latex (the
    compute ceilings with their numbers, :data:`CEILING_FORMULA`; empty for bandwidth)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(hw)
    rows = []
    for phase in ("decode", "prefill"):
        c = check.check_claim(m, g, n_gpus, 1.0, phase=phase)
        for r in c.readings:
            if r.name == "memory capacity":
                continue
            latex = ""
            if r.name == "compute":
                sp = roofline.weight_split(m, phase)
                f_r = g.flops(g.run_precision(sp.routed_dtype))
                f_d = g.flops(g.run_precision(sp.dense_dtype))
                routed = rf"\dfrac{{2 \times {_sci(sp.routed_params)}}}{{{_sci(f_r)}}}"
                dense = rf"\dfrac{{2 \times {_sci(sp.dense_params)}}}{{{_sci(f_d)}}}"
                value = f"{r.tok_s_per_gpu:,.0f}".replace(",", "{,}")
                latex = (
                    rf"C_\text{{{phase}}} = \frac{{1}}{{{routed} + {dense}}} = {value}"
                    r"\ \text{tok/s per GPU}"
                )
            rows.append(
                {
                    "ceiling": r.name,
                    "phase": phase,
                    "tok_s_per_gpu": r.tok_s_per_gpu,
                    "formula": _plurals(r.formula),
                    "latex": latex,
                }
            )
    return pd.DataFrame(rows)


def throughput_attainable(
    readings: pd.DataFrame, model: ModelSpec, gpu: GpuSpec, n_gpus: int
) -> dict[str, Any]:
    """What measured kernels reach for the throughput on the basis its physics reading
    decides on (per GPU as stated, cache hits counted, at the least cached share the bound
    allows on the workload, or the given share) and as the rack's total
    (:func:`rackbook.results.verdicts.attainable`); the stated basis fills the fields, the
    rack total is under ``rack_total`` and in the text."""
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
        f"per GPU as stated, {share:.1%} of the input cached at ISL {isl:,.0f} / OSL {osl:,.0f}",
    )
    return {
        **a,
        "text": f"{a['text']}; {a_rack['text']}",
        "rack_total": a_rack,
        "brief": f"as stated at {share:.1%} cached, {a['ratio']:.2g}x what measured kernels "
        f"reach; as the rack's total, {a_rack['ratio']:.2g}x",
    }


def throughput_physics(
    readings: pd.DataFrame, attainable: dict[str, Any] | None = None
) -> headline.ClaimReading:
    """The claim as written ("per GPU"): the most permissive of its per-GPU readings (decode,
    prefill, counting cache hits); the rack-total reading, which contradicts "per GPU", is
    given in the reason."""
    by = readings.set_index("reading")
    per_gpu = by.loc[["per-gpu-decode", "per-gpu-prefill", "per-gpu-with-cached"]]
    order = {"possible": 0, "undetermined": 1, "impossible": 2}
    best = min(per_gpu["verdict"], key=order.__getitem__)
    dec, pre = by.loc["per-gpu-decode"], by.loc["per-gpu-prefill"]
    isl, osl = readings.attrs.get("workload", (ASSUMED_ISL, ASSUMED_OSL))
    rack, cached = by.loc["rack-total"], by.loc["per-gpu-with-cached"]
    reason = (
        f"as computed tokens per GPU it needs {dec['ratio']:.3g}x the decode ceiling and "
        f"{pre['ratio']:.3g}x the prefill ceiling; counting cache hits, "
        + (
            f"no cached share reaches it ({cached['ratio']:.3g}x the most any share allows)"
            if cached["limit"] == "cached prefix"
            else f"at the given share, {cached['formula']}"
            if np.isfinite(cached["ratio"])
            else f"it fits only once at least {cached['min_cached_share']:.1%} of the input "
            f"tokens are prefix-cache hits at ISL {isl:,.0f} / OSL {osl:,.0f} (a workload "
            "assumed here; the share and the workload are not published)"
        )
        + f"; as the rack's total "
        f"({rack['tok_s_per_gpu']:,.0f} per GPU) it is {rack['verdict']}"
    )
    # the margin of the reading that decided the verdict, never a ratio that contradicts it
    decided = per_gpu[per_gpu["verdict"] == best].iloc[0]
    if best == "undetermined" and np.isfinite(cached["min_cached_share"]):
        margin = (
            f"per GPU as stated: fits only if >= {cached['min_cached_share']:.1%} of the input "
            "is cached"
        )
    elif np.isfinite(decided["ratio"]):
        margin = f"per GPU as stated: {decided['ratio']:.3g}x the {decided['phase']} ceiling"
    else:
        margin = "per GPU as stated: no cached share fits"
    return headline.ClaimReading(
        THROUGHPUT_CLAIM, "physics", best, margin, reason, attainable=attainable
    )


def speedup_attainable(speedups: pd.DataFrame, model: ModelSpec) -> dict[str, Any]:
    """What measured kernels reach for the smallest node the speedup implies, its throughput
    read as the rack's total / speedup (:func:`rackbook.results.verdicts.attainable`)."""
    r = speedups.loc[speedups["gpus_per_node"].idxmin()]
    c = check.check_claim(
        model, str(r["gpu"]), int(r["gpus_per_node"]), float(r["node_tok_s_per_gpu"]),
        phase="decode",
    )  # fmt: skip
    n = int(r["gpus_per_node"])
    a = verdicts.attainable(c, f"a {n}-GPU node, the rack's total / speedup")
    return {
        **a,
        "brief": f"the implied {n}-GPU node is {a['ratio']:.2g}x what measured kernels reach",
    }


def speedup_physics(
    speedups: pd.DataFrame, attainable: dict[str, Any] | None = None
) -> headline.ClaimReading:
    """The speedup over "a single node", read on the throughput reading's basis (per GPU as
    stated, cache hits counted: ``stated_verdict`` of :func:`speedup_readings`): the node it
    implies fits with an unpublished cached share (undetermined), with none (possible) or with
    no share (impossible), the same verdict for every node size or else undetermined; the
    rack-total basis, on which every node size is possible, is given in the reason."""
    vs = set(speedups["stated_verdict"])
    isl, osl = speedups.attrs.get("workload", (ASSUMED_ISL, ASSUMED_OSL))
    v = vs.pop() if len(vs) == 1 else "undetermined"
    stated = "; ".join(
        f"nodes of {r.gpus_per_node} {r.gpu.upper()}: {r.efficiency:.1%} scaling efficiency, "
        f"the node at {r.stated_node_tok_s_per_gpu:,.0f} counted tok/s per GPU, "
        + (
            f"which fits once at least {r.stated_min_cached_share:.1%} of its input tokens are "
            "cache hits"
            if np.isfinite(r.stated_min_cached_share)
            else "which no cached share fits"
        )
        for r in speedups.itertuples()
    )
    total = "; ".join(
        f"{r.gpus_per_node}-GPU nodes at {r.node_tok_s_per_gpu:,.0f} tok/s per GPU, "
        f"{r.ratio:.3g}x the {r.gpu.upper()} decode ceiling ({r.verdict})"
        for r in speedups.itertuples()
    )
    share = speedups["stated_min_cached_share"].max(skipna=False)
    return headline.ClaimReading(
        SPEEDUP_CLAIM,
        "physics",
        v,
        "per GPU as stated: "
        + (
            "no cached share fits"
            if not np.isfinite(share)
            else "fits with nothing cached"
            if share == 0
            else f"fits at >= {share:.1%} cached"
        ),
        f"on the throughput's basis (per GPU as stated, cache hits counted, ISL {isl:,.0f} "
        f"/ OSL {osl:,.0f} assumed): {stated}; with the throughput as the rack's total: "
        f"{total}; super-linear per-GPU scaling would also be possible",
        attainable=attainable,
    )


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
    price_per_gpu_hour: float,
    tokens_per_s_per_gpu: dict[str, float],
    rental_usd_per_gpu_hour: float | None = None,
    usd_per_m_uncached: float = INFERENCEX_USD_PER_M_UNCACHED,
    usd_per_m_cached: float = INFERENCEX_USD_PER_M_CACHED,
    cached_share: float | None = None,
) -> CostReadings:
    """Read ``price_per_gpu_hour`` (US dollars per GPU-hour) as a cost and as token revenue.

    ``tokens_per_s_per_gpu``: reading name -> tokens/s per GPU (the chapter passes the claim as
    stated and its rack-total reading, figure / GPUs of the rack). ``rental_usd_per_gpu_hour``:
    the reference price; default the catalog's ``gb300-tco-hyperscaler`` (about $2.65, the
    hourly rate of InferenceX's ownership-cost model, labelled with its kind). Token prices in
    US dollars per million tokens, default InferenceX's ($1/M uncached input and output,
    $0.10/M cached input; :data:`INFERENCEX_PRICES_SOURCE`).

    - cost reading: USD per million tokens = price / (tokens/s x 3600 / 1e6);
    - revenue reading: USD per GPU-hour = tokens/s x 3600 / 1e6 x (p_u x (1 - s) + p_c x s) for
      cached share s; solved for s: s = (p_u - price / Mtok per hour) / (p_u - p_c). With a
      known ``cached_share`` the revenue at that share is ``revenue_at_share`` (else NaN).

    $/GPU-hour is not a price per answer: an answer costs its GPU-seconds (set by its tokens,
    context and batch) times the price per GPU-second, which this figure alone does not give.
    """
    if rental_usd_per_gpu_hour is None:
        rent = catalogs.price(DEFAULT_PRICE)
        rental_usd_per_gpu_hour = rent.usd_per_gpu_hour
        rent_label, rent_source = f"{rent.kind} ({rent.id})", rent.sources[0]
    else:
        rent_label, rent_source = "reference (given)", "argument rental_usd_per_gpu_hour"
    if not price_per_gpu_hour > 0 or not rental_usd_per_gpu_hour > 0:
        raise InputError("-", "price_per_gpu_hour", "prices must be > 0")
    if cached_share is not None and not 0 <= cached_share <= 1:
        raise InputError("-", "cached_share", f"must be in [0, 1], got {cached_share}")
    if not usd_per_m_uncached > usd_per_m_cached >= 0:
        raise InputError("-", "usd_per_m_cached", "must be >= 0 and below the uncached token price")
    bases = {
        "claim as cost": (price_per_gpu_hour, f"data/claims.yaml {COST_CLAIM}"),
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
        at_share = (
            np.nan
            if cached_share is None
            else mtok_h
            * (usd_per_m_uncached * (1 - cached_share) + usd_per_m_cached * cached_share)
        )
        revenue.append(
            {
                "reading": name,
                "tok_s_per_gpu": tps,
                "mtok_per_gpu_hour": mtok_h,
                "revenue_all_uncached": rev_u,
                "revenue_all_cached": rev_c,
                "cached_share_matching": share,
                "revenue_at_share": at_share,
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
        f"${price_per_gpu_hour:g} / ${rental_usd_per_gpu_hour:g} reference price = {ratio:.3g}x; "
        f"token prices: {INFERENCEX_PRICES_SOURCE}"
    )
    return CostReadings(pd.DataFrame(cost), pd.DataFrame(revenue), ratio, formula)


def cost_physics(cost: CostReadings, price_per_gpu_hour: float) -> headline.ClaimReading:
    """A price is never a physics reading: no ceiling bounds what a GPU-hour costs or earns
    (token prices are a business's choice, not a property of the hardware), so the physics
    verdict is ``undetermined`` for any dollar figure, with the reason saying why. The cost
    and token-revenue tables stay beside it as arithmetic; the published reading judges the
    figure against rental, list and ownership prices."""
    ratio = cost.ratio_to_rental
    inst = price_per_gpu_hour / INSTANCE_GPUS
    return headline.ClaimReading(
        COST_CLAIM,
        "physics",
        "undetermined",
        "not a physics quantity",
        f"${price_per_gpu_hour:g} per GPU-hour is a price ({ratio:.3g}x the catalog's reference "
        f"price, a cost model's rate; read as one {INSTANCE_GPUS}-GPU instance-hour, "
        f"${inst:.2f} per GPU-hour), and no ceiling bounds a price: physics reads throughputs, "
        "not dollars; the published reading compares it with list prices, per GPU-hour and "
        "per instance-hour, and with modelled rental and ownership rates; its cost and revenue "
        "tables read it on both throughput bases (per GPU as stated, and the rack total)",
    )


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


# --------------------------------------------------------------------------------------------
# The chapter

SPEEDUP_FORMULA = (
    r"\text{speedup} = \frac{T_n}{T_1},\quad "
    r"\text{efficiency} = \frac{T_n / n}{T_1 / n_1} = \frac{\text{speedup}}{n / n_1}"
)
REVENUE_FORMULA = (
    r"\text{revenue} = \frac{\text{tok/s per GPU} \times 3600}{10^6}\,"
    r"\bigl(p_u\,(1 - s) + p_c\,s\bigr)\ \text{USD per GPU-hour}"
)
#: The cost reading of the throughput figure as stated (per GPU).
STATED = "per GPU as stated"


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table whose cells show ``|`` and ``$`` literally (the book parses displayed
    Markdown as MyST, where ``$`` opens math)."""

    def cell(x: object) -> str:
        return str(x).replace("|", "\\|").replace("$", "\\$")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def token_revenue(
    row: pd.Series,
    usd_per_m_uncached: float = INFERENCEX_USD_PER_M_UNCACHED,
    usd_per_m_cached: float = INFERENCEX_USD_PER_M_CACHED,
) -> float:
    """Token revenue per GPU-hour (US dollars) of a :func:`token_accounting` row at the given
    token prices: (computed tok/s per GPU x p_u + cached input tok/s per GPU x p_c) x 3600 /
    1e6. NaN when the cached count (hence the computed one) is unknown."""
    uncached, cached = row["computed_tok_s_per_gpu"], row["cached_input_tok_s_per_gpu"]
    return float((uncached * usd_per_m_uncached + cached * usd_per_m_cached) * 3600 / 1e6)


@dataclass(frozen=True)
class Params(headline.Params):
    """The chapter's analysis parameters (the notebook's ``parameters`` cell): GPUs per server
    where the trace does not record them, the reference configuration and the token kind to
    scale, the catalog ids of the model, GPU, rack, node sizes and rental price the readings
    use, the share of the input tokens that were cache hits if known (None: not published),
    the relative tolerance of measured against published (GB300 traces only), and the workload
    (input and output tokens per request) the cache-hit reading assumes, since the write-up
    gives none (``workload_isl``, ``workload_osl``: not notebook parameters, set them here)."""

    gpus_per_replica: int = 1
    reference_config: str = "1x"
    metric: str = "total"
    model_id: str = "deepseek-v4.1-flash"
    gpu_id: str = "gb300"
    system_id: str = "gb300-nvl72"
    node_systems: tuple[str, ...] | list[str] = NODE_SYSTEMS
    price_id: str = DEFAULT_PRICE
    cached_share: float | None = None
    rel_tol: float = 0.10
    workload_isl: int = ASSUMED_ISL
    workload_osl: int = ASSUMED_OSL


@dataclass
class Analysis:
    """Everything the chapter shows: the token accounting of every point, scaling from the
    reference, the ceilings and the physics of the three published figures, their readings,
    and the values its prose quotes."""

    trace: Trace
    params: Params
    registry: Registry
    claim_tok_s: float
    claim_speedup: float
    claim_usd: float
    rack: SystemSpec
    gpu: GpuSpec
    model: ModelSpec
    rental: PriceSpec
    accounting: pd.DataFrame
    scaling: pd.DataFrame
    ceilings: pd.DataFrame
    throughput: pd.DataFrame
    speedups: pd.DataFrame
    cost: CostReadings
    band: check.Band
    readings: list[headline.ClaimReading]
    hardware: str
    testable: bool
    revenue_run: float

    @property
    def largest(self) -> pd.Series:
        """The accounting row of the configuration with the most GPUs."""
        return self.accounting.loc[self.accounting["num_gpus"].astype(float).idxmax()]

    @property
    def top(self) -> pd.Series:
        """The scaling row of the largest configuration (last in GPU order)."""
        return self.scaling.iloc[-1]

    @property
    def rack_reading(self) -> str:
        """Name of the cost reading of the throughput figure as the rack's total."""
        return f"rack total / {self.rack.gpus}"

    @property
    def unit(self) -> str:
        """What the trace's per-unit figures divide by: ``GPU``, or ``replica`` on a machine
        without GPUs where one server stands for one GPU (``gpus_per_replica`` 1)."""
        gpus = verdicts.gpu_names(self.trace.run) or self.params.gpus_per_replica > 1
        return "GPU" if gpus else "replica"

    @property
    def cached_known(self) -> bool:
        """True when the largest configuration's cached input tokens are known."""
        return bool(np.isfinite(self.largest["cached_input_tok_s"]))

    @property
    def cached_note(self) -> str:
        """Where the largest configuration's cached count comes from, or why it is unknown."""
        return self.largest["note"] or "cached count from the requests' cached_prompt_tokens"

    def cap(self, ceiling: str, phase: str) -> float:
        """A ceiling of :attr:`ceilings` in tokens/s per GPU."""
        c = self.ceilings
        return float(c[(c["ceiling"] == ceiling) & (c["phase"] == phase)]["tok_s_per_gpu"].iloc[0])

    # ----------------------------------------------------------------- tables the chapter shows

    def accounting_markdown(self) -> str:
        """Tokens/s of every point, counted by kind, and per GPU (or replica)."""
        u = self.unit
        rows = [
            [
                f"{r.config} ({plural(int(r.num_gpus), u)})",
                f"{r.output_tok_s:,.1f}",
                verdicts.text(r.new_input_tok_s, ",.1f"),
                verdicts.text(r.cached_input_tok_s, ",.1f"),
                f"{r.total_tok_s:,.1f}",
                verdicts.text(r.computed_tok_s, ",.1f"),
                verdicts.text(r.total_tok_s_per_gpu, ",.1f"),
            ]
            for r in self.accounting.itertuples()
        ]
        head = ["config", "output", "new input", "cached input", "total", "computed"]
        return _table([*head, f"total per {u}"], rows) + "\nAll in tokens per second.\n"

    def ceilings_markdown(self) -> str:
        """The compute ceilings with their numbers (display math) and every ceiling's formula."""
        maths = [f"$$ {x} $$" for x in self.ceilings["latex"] if x]
        rows = [
            [f"{r.ceiling}, {r.phase}", f"{r.tok_s_per_gpu:,.0f}", r.formula]
            for r in self.ceilings.itertuples()
        ]
        return "\n\n".join(maths) + "\n\n" + _table(["ceiling", "tok/s per GPU", "how"], rows)

    def throughput_markdown(self) -> str:
        """Each reading of the throughput figure against its ceiling (tokens/s per GPU)."""
        rows = []
        for r in self.throughput.itertuples():
            cached = r.reading == "per-gpu-with-cached" and not np.isfinite(r.ratio)
            rows.append(
                [
                    READING_LABELS.get(r.reading, r.reading),
                    f"{r.tok_s_per_gpu:,.0f}",
                    f"at most {r.computed_tok_s_per_gpu:,.0f}"
                    if cached
                    else f"{r.computed_tok_s_per_gpu:,.0f}",
                    f"{r.ceiling_tok_s_per_gpu:,.0f} ({r.phase})",
                    f"fits once at least {r.min_cached_share:.1%} of the input is cached"
                    if cached
                    else f"{r.ratio:.3g}x",
                    f"**{r.verdict}**",
                ]
            )
        head = ["reading", "counted", "computed", "ceiling", "computed / ceiling", "physics"]
        return (
            _table(head, rows) + "\nCounted, computed and ceiling in tokens per second per GPU.\n"
        )

    def speedups_markdown(self) -> str:
        """What the speedup means for each node size, and the node it implies."""
        rows = [
            [
                r.name,
                f"{r.gpus_per_node}",
                f"{r.nodes:g}",
                f"{r.efficiency:.1%}",
                f"{r.node_tok_s_per_gpu:,.0f}",
                f"{r.ratio:.3g}x",
                f"**{r.verdict}**",
            ]
            for r in self.speedups.itertuples()
        ]
        head = [
            "what 'a node' is",
            "GPUs per node",
            "nodes in the rack",
            "scaling efficiency",
            "node tok/s per GPU",
            "node / ceiling",
            "physics",
        ]
        return _table(head, rows)

    def cost_markdown(self) -> str:
        """The dollar figure per million tokens, and the token revenue range, per reading."""
        cost = self.cost.cost.set_index(["reading", "basis"])["usd_per_m_tokens"]
        rows = []
        for r in self.cost.revenue.itertuples():
            per_m = cost.loc[r.reading]
            share = r.cached_share_matching
            rows.append(
                [
                    r.reading,
                    f"{r.tok_s_per_gpu:,.0f}",
                    f"{r.mtok_per_gpu_hour:,.1f}",
                    f"${per_m.iloc[0]:,.4f}",
                    f"${per_m.iloc[1]:,.4f}",
                    f"${r.revenue_all_cached:,.2f} to ${r.revenue_all_uncached:,.2f}",
                    f"{share:.1%}" if np.isfinite(share) else "none",
                ]
            )
        head = [
            "throughput reading",
            "tok/s per GPU",
            "M tok per GPU-hour",
            "USD per M tok, as cost",
            "USD per M tok, rental",
            "revenue (USD per GPU-hour)",
            f"cached share for ${self.claim_usd:g}",
        ]
        return _table(head, rows)

    # ----------------------------------------------------------------------------- values

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        nx, top, reg = self.largest, self.top, self.registry
        by = self.throughput.set_index("reading")
        spi = self.speedups.set_index("system")
        rev = self.cost.revenue.set_index("reading")
        cst = self.cost.cost.set_index(["reading", "basis"])["usd_per_m_tokens"]
        tray, hgx = self.params.node_systems[0], self.params.node_systems[-1]
        cap_d, cap_p = self.cap("compute", "decode"), self.cap("compute", "prefill")
        mem = self.ceilings[self.ceilings["ceiling"] == "memory bandwidth"].iloc[0]
        sp = float(top["speedup"])
        change = (
            "is unknown"
            if not np.isfinite(sp)
            else f"grew to {sp:.2f}x"
            if sp > 1.005
            else f"shrank to {sp:.2f}x"
            if sp < 0.995
            else f"stayed at {sp:.2f}x"
        )
        u = self.unit
        out = {
            "claim_tok_s": self.claim_tok_s,
            "claim_speedup": self.claim_speedup,
            "claim_usd": self.claim_usd,
            "rack_gpus": self.rack.gpus,
            "rack_name": self.rack.name,
            "gpu_name": self.gpu.name,
            "tray_gpus": catalogs.system(tray).gpus,
            "hgx_gpus": catalogs.system(hgx).gpus,
            "su_claim": reg.value(SINGLE_USER_CLAIM),
            "su_gpus": reg.get(SINGLE_USER_CLAIM).scope.gpu_count,
            "dp_claim": reg.value(DECODE_PARITY_CLAIM),
            "active_decode_b": float(self.model.active_params("decode")) / 1e9,
            "active_prefill_b": float(self.model.active_params("prefill")) / 1e9,
            "price_uncached": INFERENCEX_USD_PER_M_UNCACHED,
            "price_cached": INFERENCEX_USD_PER_M_CACHED,
            "hardware": self.hardware,
            "trace_kind": self.trace.kind,
            "unit": u,
            "nx_config": str(nx["config"]),
            "nx_units": plural(int(nx["num_gpus"]), u),
            "nx_total": verdicts.text(nx["total_tok_s"], ",.1f"),
            "nx_total_per_gpu": verdicts.text(nx["total_tok_s_per_gpu"], ",.1f"),
            "nx_output": verdicts.text(nx["output_tok_s"], ",.1f"),
            "nx_new_input": verdicts.text(nx["new_input_tok_s"], ",.1f"),
            "nx_cached_input": verdicts.text(nx["cached_input_tok_s"], ",.1f"),
            "nx_computed": verdicts.text(nx["computed_tok_s"], ",.1f"),
            "nx_cached_source": str(nx["cached_source"]),
            "metric": self.params.metric,
            "reference_config": self.params.reference_config,
            "ref_units": plural(int(self.scaling.iloc[0]["num_gpus"]), u),
            "top_units": plural(int(top["num_gpus"]), u),
            "speedup": verdicts.text(sp, ".2f"),
            "scaling_change": change,
            "efficiency_pct": verdicts.text(100 * top["efficiency"], ".1f"),
            "cap_decode": cap_d,
            "cap_prefill": cap_p,
            "cap_memory": float(mem["tok_s_per_gpu"]),
            "ratio_decode": by.loc["per-gpu-decode", "ratio"],
            "ratio_prefill": by.loc["per-gpu-prefill", "ratio"],
            "rack_per_gpu": by.loc["rack-total", "tok_s_per_gpu"],
            "rack_ratio": by.loc["rack-total", "ratio"],
            "rack_ratio_pct": 100 * by.loc["rack-total", "ratio"],
            "v_decode": by.loc["per-gpu-decode", "verdict"],
            "v_prefill": by.loc["per-gpu-prefill", "verdict"],
            "v_cached": by.loc["per-gpu-with-cached", "verdict"],
            "v_rack": by.loc["rack-total", "verdict"],
            "min_cached_pct": 100 * by.loc["per-gpu-with-cached", "min_cached_share"],
            "workload_isl": self.params.workload_isl,
            "workload_osl": self.params.workload_osl,
            "node_hgx_ratio": spi.loc[hgx, "ratio"],
            "node_tray_gpu": str(spi.loc[tray, "gpu"]).upper(),
            "node_hgx_gpu": str(spi.loc[hgx, "gpu"]).upper(),
            "stated_tray_per_gpu": spi.loc[tray, "stated_node_tok_s_per_gpu"],
            "stated_tray_pct": 100 * spi.loc[tray, "stated_min_cached_share"],
            "stated_hgx_pct": 100 * spi.loc[hgx, "stated_min_cached_share"],
            "band_low": self.band.low,
            "band_high": self.band.high,
            "eff_tray_pct": 100 * spi.loc[tray, "efficiency"],
            "eff_hgx_pct": 100 * spi.loc[hgx, "efficiency"],
            "nodes_tray": spi.loc[tray, "nodes"],
            "nodes_hgx": spi.loc[hgx, "nodes"],
            "node_tray_per_gpu": spi.loc[tray, "node_tok_s_per_gpu"],
            "node_hgx_per_gpu": spi.loc[hgx, "node_tok_s_per_gpu"],
            "node_tray_ratio": spi.loc[tray, "ratio"],
            "rental_usd": self.rental.usd_per_gpu_hour,
            "ratio_rental": self.cost.ratio_to_rental,
            "usd_per_m_stated": cst[(STATED, "claim as cost")],
            "usd_per_m_rack": cst[(self.rack_reading, "claim as cost")],
            "rev_share_rack": verdicts.text(
                100 * rev.loc[self.rack_reading, "cached_share_matching"], ".1f"
            ),
            "rev_min_rack": rev.loc[self.rack_reading, "revenue_all_cached"],
            "rev_max_rack": rev.loc[self.rack_reading, "revenue_all_uncached"],
            "rev_min_stated": rev.loc[STATED, "revenue_all_cached"],
            "revenue_run": verdicts.text(self.revenue_run, ",.4f"),
        }
        for r in self.readings:
            out[f"{r.claim_id.split('.')[1]}_{r.reading.replace(' ', '_')}"] = r.verdict
        return out


def analyse(trace: Trace, params: Params = Params(), registry: Registry | None = None) -> Analysis:
    """Token accounting of every point (GPU counts filled from ``params.gpus_per_replica``),
    scaling from ``params.reference_config``, the ceilings and the physics of the published
    throughput, speedup and cost (from the claims registry) on the catalogs' rack, GPU, model
    and rental price, and the three readings of each claim (a trace tests them only when
    recorded on GB300 GPUs, at least the rack's count, serving DeepSeek-V4.1-Flash; it tests
    the cost read as token revenue per GPU-hour at InferenceX's token prices)."""
    trace = validity.valid_trace(trace)[0]  # flagged requests left out (core.validity)
    p = params
    reg = registry or load_claims()
    tok_s, speedup, usd = (
        reg.value(THROUGHPUT_CLAIM),
        reg.value(SPEEDUP_CLAIM),
        reg.value(COST_CLAIM),
    )
    rack, gpu, rental = (
        catalogs.system(p.system_id),
        catalogs.gpu(p.gpu_id),
        catalogs.price(p.price_id),
    )
    model = catalogs.load_model(p.model_id)
    tr = with_gpu_counts(trace, p.gpus_per_replica)
    acc = token_accounting(tr)
    # a reader's partial trace may lack the reference (or hold one configuration): the
    # smallest configuration stands in, and the speedup's this-run reading says so
    ref_cfg = p.reference_config
    if ref_cfg not in set(acc["config"]):
        ref_cfg = str(acc.loc[acc["num_gpus"].astype(float).idxmin(), "config"])
    sc = scaling_vs_reference(acc, ref_cfg, p.metric)
    caps = ceilings(model, gpu, rack.gpus)
    work = dict(isl=p.workload_isl, osl=p.workload_osl)
    thr = throughput_readings(tok_s, rack.gpus, model, gpu, p.cached_share, **work)
    sp = speedup_readings(speedup, tok_s, rack.gpus, model, gpu, tuple(p.node_systems), **work)
    cost = cost_readings(
        usd,
        {STATED: tok_s, f"rack total / {rack.gpus}": tok_s / rack.gpus},
        rental_usd_per_gpu_hour=rental.usd_per_gpu_hour,
        cached_share=p.cached_share,
    )
    cost.cost["basis"] = cost.cost["basis"].replace(
        {"reference (given)": f"{rental.kind} ({p.price_id})"}
    )
    band = check.sensitivity(model=model, gpu=gpu, gpus=rack.gpus, tok_s=tok_s)
    nx = acc.loc[acc["num_gpus"].astype(float).idxmax()]
    top = sc.iloc[-1]
    revenue = token_revenue(nx)
    testable = verdicts.can_test(tr.run) and int(sc["num_gpus"].max()) >= rack.gpus
    needs = f"{rack.gpus} GB300 GPUs of one {rack.name} serving DeepSeek-V4.1-Flash"
    unit = "GPU" if verdicts.gpu_names(tr.run) or p.gpus_per_replica > 1 else "replica"
    n = int(nx["num_gpus"])
    what_tp = (
        f"total {verdicts.text(nx['total_tok_s_per_gpu'], ',.1f')} tok/s per {unit} on "
        f"{plural(n, unit)}, {verdicts.text(nx['total_tok_s'], ',.0f')} tok/s in all"
    )
    what_sp = (
        f"speedup {verdicts.text(top['speedup'], '.2f')}x, efficiency "
        f"{verdicts.text(100 * top['efficiency'], '.1f')} %"
    )
    what_cost = (
        f"token revenue ${verdicts.text(revenue, ',.4g')} per {unit}-hour at InferenceX's "
        f"token prices, config {nx['config']}"
    )
    run = dict(rel_tol=p.rel_tol, testable=testable, run=tr.run, needs=needs)
    readings = [
        throughput_physics(thr, throughput_attainable(thr, model, gpu, rack.gpus)),
        evidence.reading(THROUGHPUT_CLAIM, registry=reg),
        verdicts.run_reading(
            THROUGHPUT_CLAIM, float(nx["total_tok_s_per_gpu"]), tok_s, what=what_tp, **run
        ),
        speedup_physics(sp, speedup_attainable(sp, model)),
        evidence.reading(SPEEDUP_CLAIM, registry=reg),
        verdicts.run_reading(SPEEDUP_CLAIM, float(top["speedup"]), speedup, what=what_sp, **run)
        if len(sc) > 1 and ref_cfg == p.reference_config
        else headline.ClaimReading(
            SPEEDUP_CLAIM,
            "this run",
            "untested",
            "-",
            "one configuration only: no speedup; record the single-node reference and the rack"
            if len(sc) < 2
            else f"no point with config {p.reference_config!r} (the single-node reference): "
            f"record one; {ref_cfg} stands in for the figures",
        ),
        cost_physics(cost, usd),
        evidence.reading(COST_CLAIM, registry=reg),
        verdicts.run_reading(COST_CLAIM, revenue, usd, what=what_cost, **run),
    ]
    return Analysis(
        trace=tr,
        params=p,
        registry=reg,
        claim_tok_s=tok_s,
        claim_speedup=speedup,
        claim_usd=usd,
        rack=rack,
        gpu=gpu,
        model=model,
        rental=rental,
        accounting=acc,
        scaling=sc,
        ceilings=caps,
        throughput=thr,
        speedups=sp,
        cost=cost,
        band=band,
        readings=readings,
        hardware=hardware_label(tr.run),
        testable=testable,
        revenue_run=revenue,
    )


def _run_reading(a: Analysis, claim: str) -> dict[str, Any]:
    r = next(r for r in a.readings if r.claim_id == claim and r.reading == "this run")
    return dict(claim_id=claim, verdict=r.verdict, reason=r.reason)


def _measured(a: Analysis) -> list[headline.Headline]:
    nx, top, p = a.largest, a.top, a.params
    common = dict(kind="measured", hardware=a.hardware, trace_ids=[a.trace.trace_id])
    tp, sp = _run_reading(a, THROUGHPUT_CLAIM), _run_reading(a, SPEEDUP_CLAIM)
    other = dict(claim_id=None, verdict=headline.NOT_COMPARABLE)
    cfg, u = nx["config"], a.unit
    return [
        headline.Headline(
            name="measured_total_tok_s_per_gpu",
            value=verdicts.number(nx["total_tok_s_per_gpu"], 2),
            unit=f"tok/s/{u}",
            definition=f"(input + output tokens) / window / {u}s, config {cfg} "
            f"on {plural(int(nx['num_gpus']), u)}",
            **tp,
            **common,
        ),
        headline.Headline(
            name="measured_output_tok_s",
            value=verdicts.number(nx["output_tok_s"], 2),
            unit="tok/s",
            definition=f"output tokens / window, config {cfg}",
            reason="the write-up does not say which tokens it counts",
            **other,
            **common,
        ),
        headline.Headline(
            name="measured_new_input_tok_s",
            value=verdicts.number(nx["new_input_tok_s"], 2),
            unit="tok/s",
            definition=f"(input - cached input) tokens / window, config {cfg}; "
            "null when the cached count is unknown",
            reason=a.cached_note,
            **other,
            **common,
        ),
        headline.Headline(
            name="measured_cached_input_tok_s",
            value=verdicts.number(nx["cached_input_tok_s"], 2),
            unit="tok/s",
            definition=f"prefix-cache-hit input tokens / window, config {cfg}; null when unknown",
            reason=a.cached_note,
            **other,
            **common,
        ),
        headline.Headline(
            name="measured_speedup",
            value=verdicts.number(top["speedup"], 3),
            unit="x",
            definition=f"{p.metric} tok/s of config {top['config']} / config {p.reference_config}",
            **sp,
            **common,
        ),
        headline.Headline(
            name="measured_scaling_efficiency",
            value=verdicts.number(top["efficiency"], 4),
            unit="1",
            definition=f"(T_n / n {u}s) / (T_1 / n_1 {u}s), the per-{u} ratio",
            **sp,
            **common,
        ),
        headline.Headline(
            name="measured_token_revenue",
            value=verdicts.number(a.revenue_run, 6),
            unit=f"USD/{u}-hour",
            definition=f"(computed tok/s x ${INFERENCEX_USD_PER_M_UNCACHED:g}/M + cached input "
            f"tok/s x ${INFERENCEX_USD_PER_M_CACHED:g}/M) per {u} x 3600, config {cfg}; null "
            "when the cached count is unknown",
            **_run_reading(a, COST_CLAIM),
            **common,
        ),
    ]


def _modelled(a: Analysis) -> list[headline.Headline]:
    p = a.params
    hl = [
        headline.Headline(
            name=f"reading_{r.reading}",
            value=verdicts.number(r.ratio, 4),
            unit="x ceiling",
            definition=f"{r.meaning}: claimed / ceiling on {p.gpu_id} ({r.limit})",
            claim_id=THROUGHPUT_CLAIM,
            kind="modelled",
            verdict=r.verdict,
            reason=r.formula,
        )
        for r in a.throughput.itertuples()
        if r.reading != "per-gpu-with-cached"
    ]
    cached = a.throughput.set_index("reading").loc["per-gpu-with-cached"]
    hl.append(
        headline.Headline(
            name="reading_per-gpu-with-cached_min_cached_share",
            value=verdicts.number(cached["min_cached_share"], 4),
            unit="1",
            definition="least share of the input tokens that must be prefix-cache hits for the "
            f"figure, per GPU on {p.gpu_id}, to fit the whole workload (ISL {p.workload_isl:,} / "
            f"OSL {p.workload_osl:,}, assumed: new-token prefill behind the cached prefix, "
            "attention over it, output decode); sufficient, not only necessary",
            claim_id=THROUGHPUT_CLAIM,
            kind="modelled",
            verdict=cached["verdict"],
            reason=cached["formula"],
        )
    )
    hl += [
        headline.Headline(
            name=f"speedup_efficiency_{r.system}",
            value=verdicts.number(r.efficiency, 4),
            unit="1",
            definition=f"{a.claim_speedup:g} / ({a.rack.gpus} GPUs / {r.gpus_per_node} "
            "per node): per-GPU scaling efficiency",
            claim_id=SPEEDUP_CLAIM,
            kind="modelled",
            verdict=r.stated_verdict,
            reason=f"per GPU as stated: {r.stated_formula}; as the rack total: {r.formula}",
        )
        for r in a.speedups.itertuples()
    ]
    share = a.cost.revenue.set_index("reading").loc[a.rack_reading]
    cost_r = next(r for r in a.readings if r.claim_id == COST_CLAIM and r.reading == "physics")
    hl += [
        headline.Headline(
            name="cost_ratio_to_rental",
            value=verdicts.number(a.cost.ratio_to_rental, 3),
            unit="x",
            definition="$/GPU-hour figure / the catalog's GB300 rental price",
            claim_id=None,
            kind="modelled",
            verdict=headline.NOT_COMPARABLE,
            reason="$/GPU-hour is not a price per answer; what the dollars are is not stated",
        ),
        headline.Headline(
            name="revenue_cached_share_rack_total",
            value=verdicts.number(share["cached_share_matching"], 4),
            unit="1",
            definition="cached share at which token revenue per GPU-hour ($1/M uncached, $0.10/M "
            "cached) equals the figure, rack-total reading; null if none",
            claim_id=COST_CLAIM,
            kind="modelled",
            verdict=cost_r.verdict,
            reason=share["formula"],
        ),
    ]
    return hl


def flips(a: Analysis) -> list[str]:
    """What would turn each reading: the computed thresholds (the verdict rule of
    :func:`rackbook.physics.results_bounds.verdict_rule`) and the sensitivity band. Dollars
    are written USD (the flips are shown as Markdown, where ``$`` opens math)."""
    rule = results_bounds.verdict_rule()
    lo, hi = rule.possible_below, rule.impossible_above
    t, s = a.claim_tok_s, a.claim_speedup
    cap_p = a.cap("compute", "prefill")
    isl, osl = a.params.workload_isl, a.params.workload_osl
    by = a.throughput.set_index("reading")
    need = by.loc["per-gpu-with-cached", "min_cached_share"]
    bound = cached_ceiling(a.model, a.gpu, a.rack.gpus).ceiling_tok_s_per_gpu
    work = f"ISL {isl:,} / OSL {osl:,}, assumed"
    tp = f"throughput, physics (per GPU as stated, cache hits counted, {work}): " + (
        "no cached share fits"
        if not np.isfinite(need)
        else f"possible once a published share of the input tokens cached reaches {need:.1%}, "
        "impossible below it (rackbook check reads the same)"
    )
    tp += (
        f"; as computed tokens possible only up to {lo * cap_p:,.0f} tok/s per GPU (the "
        f"prefill ceiling); impossible above {bound:,.3g} tok/s per GPU on any workload, which "
        f"no cached share reaches; decode ratio {a.band.text}"
    )
    sd = a.speedups
    node_caps = sd["ceiling_tok_s_per_gpu"] * sd["gpus_per_node"]
    sp = (
        f"speedup, physics (on the throughput's basis, {work}): "
        + "; ".join(
            f"{r.gpus_per_node}-GPU {r.gpu.upper()} nodes fit once at least "
            f"{r.stated_min_cached_share:.1%} of their input tokens are cache hits"
            if np.isfinite(r.stated_min_cached_share)
            else f"no cached share fits {r.gpus_per_node}-GPU {r.gpu.upper()} nodes"
            for r in sd.itertuples()
        )
        + f". With the throughput as the rack's total: possible while that total stays below "
        f"{lo * s * node_caps.min():,.0f} tok/s (every node size within its GPU's "
        f"ceiling), impossible above {hi * s * node_caps.max():,.0f} tok/s (every node size "
        f"over it); at {t:,.0f} tok/s, possible for any speedup above "
        f"{t / (lo * node_caps.min()):.3g}x, impossible below {t / (hi * node_caps.max()):.3g}x"
    )
    cost = (
        "cost, physics: nothing turns it; a dollar figure is a price, which no ceiling bounds "
        "(the published reading sets it against rental, list and ownership prices)"
    )
    return [
        tp,
        sp,
        cost,
        "published, every claim: an independent measurement of DeepSeek-V4.1-Flash on a GB300 "
        "NVL72 (none located)",
        f"this run, throughput and speedup: a trace recorded on {a.rack.gpus} GB300 GPUs serving "
        "DeepSeek-V4.1-Flash, with a one-node reference configuration, within "
        f"{a.params.rel_tol:.0%} of {t:,.0f} tok/s per GPU and of {s:g}x",
        f"this run, cost: the same trace's token revenue per GPU-hour at InferenceX's prices "
        f"(it needs the cached count) within {a.params.rel_tol:.0%} of USD {a.claim_usd:g}",
    ]


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, the three readings of each claim and what would flip them."""
    p = a.params
    parameters = {
        "reference_config": p.reference_config,
        "metric": p.metric,
        "gpus_per_replica": p.gpus_per_replica,
        "model_id": p.model_id,
        "gpu_id": p.gpu_id,
        "system_id": p.system_id,
        "node_systems": list(p.node_systems),
        "price_id": p.price_id,
        "cached_share": p.cached_share,
        "rel_tol": p.rel_tol,
        "workload_isl": p.workload_isl,
        "workload_osl": p.workload_osl,
    }
    return headline.Outcome(
        RESULT,
        _measured(a) + _modelled(a),
        a.readings,
        flips(a),
        [a.trace.trace_id],
        parameters,
        a.hardware,
    )
