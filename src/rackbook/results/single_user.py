"""Single-user decode speed: one stream's tok/s = sum(output_tokens - 1) / sum(e2el - ttft), its
token gaps (ms), tokens per chunk, acceptance length, and the batch-1 floor (a step reads the
active weights once: tok/s <= acceptance length / step) it is measured against."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.server_metrics import counter_deltas
from rackbook.core.traces import Trace, read_table
from rackbook.core.units import percent, plural
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Claim, Registry
from rackbook.physics import check, results_bounds, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts

RESULT = "single-user"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.single_user``).
FIGURES: tuple[str, ...] = ("fig_gaps", "fig_ceiling", "fig_budget")
CLAIM_ID = "single-user.throughput"
#: The rack figure this one must not be set against as "per GPU".
RACK_CLAIM_ID = "rack-scaling.throughput"

#: Tokens per step with speculation when the trace has none: InferenceX's golden acceptance
#: length of DeepSeek-V4.1-Flash with DSpark (5 drafts, SPEED-Bench coding; not the claim's).
INFERENCEX_ACCEPTANCE_LENGTH = 3.51
INFERENCEX_ACCEPTANCE_URL = "https://github.com/SemiAnalysisAI/InferenceX/pull/2964"
INFERENCEX_ACCEPTANCE_SOURCE = (
    "InferenceX golden acceptance length, golden_al_distribution/dsv41flash_dspark.yaml "
    f"({INFERENCEX_ACCEPTANCE_URL}, 2026-09-10)"
)

#: vLLM's ``bench serve`` key, and the counters (``_total`` optional) it computes it from.
ACCEPTANCE_KEY = "spec_decode_acceptance_length"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
GAP_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0)
#: The values the prose quotes that are attributes of the analysis (chapter_common.glue).
GLUE = (
    "claim_tok_s floor_gpus moe_layers rack_tok_s rack_gpus acc_floor=acceptance "
    "claim_gpus=claim.scope.gpu_count tok_s=stats.tokens_per_s su_per_gpu=per_gpu_single_user "
    "acceptance_source=stats.acceptance_source rack_per_gpu=per_gpu_rack"
)

STREAM_FORMULA = r"\text{tok/s} = \frac{\sum_i (n_i - 1)}{\sum_i (\text{e2el}_i - \text{ttft}_i)}"
FLOOR_FORMULA = (
    r"\text{step} \ge \frac{\text{active weight bytes}}{n_\text{GPU} \times "
    r"\text{HBM bytes/s}},\quad \text{tok/s} \le \frac{\text{acceptance length}}{\text{step}}"
)


def acceptance_length(trace: Trace, point_id: str | None = None) -> tuple[float | None, str]:
    """Acceptance length (tokens per step) and its source: run.json, else 1 + accepted / drafts
    of the ``server_metrics`` counters; ``(None, reason)`` if absent."""
    run = trace.run
    places = [("run.json parameters", run.get("parameters")), ("run.json", run)]
    for where, d in [*places, ("run.json metrics", run.get("metrics"))]:
        if isinstance(d, dict) and d.get(ACCEPTANCE_KEY) is not None:
            v = d[ACCEPTANCE_KEY]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 1:
                raise InputError(
                    trace.path or "run.json", f"{ACCEPTANCE_KEY}", f"must be a number >= 1: {v!r}"
                )
            return float(v), f"{where}.{ACCEPTANCE_KEY}"
    sm = trace.extra.get("server_metrics")
    if sm is not None:
        pids = [point_id] if point_id is not None else list(trace.points["point_id"])
        deltas = [counter_deltas(sm, pid) for pid in pids]
        both = [d for d in deltas if SPEC_ACCEPTED in d and SPEC_DRAFTS in d]
        acc, drafts = (sum(d[k] for d in both) for k in (SPEC_ACCEPTED, SPEC_DRAFTS))
        if np.isfinite(acc) and np.isfinite(drafts) and drafts > 0:
            return 1 + acc / drafts, f"server_metrics: 1 + {SPEC_ACCEPTED} / {SPEC_DRAFTS}"
    return None, "no speculative decoding: no spec-decode statistics in run.json or server_metrics"


@dataclass(frozen=True)
class StreamStats:
    """Single-stream decode speed; ``gaps_ms``: percentile -> gap (ms, NaN without gaps)."""

    per_request: pd.DataFrame
    tokens_per_s: float
    gaps_ms: dict[float, float]
    tokens_per_chunk: float
    acceptance_length: float | None
    acceptance_source: str
    gaps: np.ndarray  # pooled gaps between streamed chunks (ms), in trace order


def stream_stats(trace: Trace, point_id: str | None = None) -> StreamStats:
    """:class:`StreamStats` of the successful requests (of ``point_id`` only, if given)."""
    req = trace.requests
    mask = req["success"].to_numpy(dtype=bool)
    if point_id is not None:
        if point_id not in set(trace.points["point_id"]):
            raise InputError(trace.path or "<trace>", "point_id", f"no point {point_id!r}")
        mask = mask & (req["point_id"] == point_id).to_numpy()
    rows = np.flatnonzero(mask)
    r = req.iloc[rows]
    n = r["output_tokens"].to_numpy(np.int64)
    dec = (r["e2el_s"] - r["ttft_s"]).to_numpy(np.float64)
    steps = (n - 1).clip(min=0)
    rr = trace.itl["request_row"].to_numpy()
    gaps = trace.itl["itl_s"].to_numpy(np.float64)
    sel = mask[rr] if rr.size else np.zeros(0, bool)
    n_gaps = np.bincount(rr[sel], minlength=len(req))[rows] if rr.size else np.zeros(len(rows))
    with np.errstate(divide="ignore", invalid="ignore"):
        tok_s = np.where((steps > 0) & (dec > 0), steps / dec, np.nan)
    per = pd.DataFrame({"request_id": r["request_id"].to_numpy(), "output_tokens": n})
    per = per.assign(decode_s=dec, tok_s=tok_s, tpot_ms=1000 / tok_s, gaps=n_gaps.astype(np.int64))
    use = steps > 0
    total_steps, total_dec = int(steps[use].sum()), float(dec[use].sum())
    overall = total_steps / total_dec if total_dec > 0 else np.nan
    g = gaps[sel]
    pct = (
        dict(zip(GAP_PERCENTILES, (1000 * np.percentile(g, GAP_PERCENTILES)).tolist(), strict=True))
        if g.size
        else dict.fromkeys(GAP_PERCENTILES, np.nan)
    )
    has_gaps = n_gaps > 0
    per_chunk = float(steps[has_gaps].sum() / n_gaps[has_gaps].sum()) if has_gaps.any() else np.nan
    acc, src = acceptance_length(trace, point_id)
    return StreamStats(per, float(overall), pct, per_chunk, acc, src, 1000 * g)


#: How much two requests may overlap (s) and still count as one after the other (clock skew).
OVERLAP_TOLERANCE_S = 1e-3


def stream_problem(requests: pd.DataFrame, point_id: str | None = None) -> str | None:
    """Why the requests (of ``point_id``, else all) are not one measurable stream, else None."""
    req = requests
    where = ""
    if point_id is not None:
        req = req[(req["point_id"] == point_id).to_numpy()]
        where = f" at point {point_id}"
    if len(req) == 0:
        return f"no request{where}"
    conc = pd.to_numeric(req["concurrency"], errors="coerce") if "concurrency" in req else None
    if conc is not None and (conc > 1).any():
        top = req.loc[conc.idxmax()]
        return (
            f"not one stream: recorded at concurrency {int(conc.max())} (point "
            f"{top['point_id']}); the single-user chapter reads one stream (concurrency 1): "
            "give -p point_id of a concurrency-1 point, or record one stream"
        )
    ok = req["success"].to_numpy(dtype=bool)
    if not ok.any():
        return f"no successful request{where}: every request failed (see requests.error)"
    start = req["start_time_s"].to_numpy(np.float64)
    end = start + req["e2el_s"].to_numpy(np.float64) - OVERLAP_TOLERANCE_S
    known = np.isfinite(start) & np.isfinite(end)
    if known.sum() > 1:
        events = np.concatenate([start[known], end[known]])
        steps = np.concatenate([np.ones(known.sum()), -np.ones(known.sum())])
        order = np.lexsort((steps, events))  # at a tie an end comes before a start
        in_flight = int(np.cumsum(steps[order]).max())
        if in_flight > 1:
            return (
                f"not one stream: up to {in_flight} requests in flight at once{where} "
                "(start_time_s + e2el_s); the single-user chapter reads one stream "
                "(one request after another)"
            )
    n = req["output_tokens"].to_numpy(np.int64)
    dec = (req["e2el_s"] - req["ttft_s"]).to_numpy(np.float64)
    if not (ok & (n >= 2) & (dec > 0)).any():
        return (
            f"no successful request with a decode step{where} (output_tokens >= 2 after the "
            "first token's time): one stream's speed is unknown"
        )
    return None


def check_one_stream(path: str | Path, point_id: str | None, field: str = "trace") -> None:
    """InputError (naming the folder and ``field``) unless the requests are one stream."""
    cols = ["point_id", "concurrency", "success", "start_time_s", "e2el_s", "ttft_s"]
    req = read_table(path, "requests", columns=[*cols, "output_tokens"])
    if point_id is not None and not (req["point_id"] == point_id).any():
        return  # the point's own check names it
    problem = stream_problem(req, point_id)
    if problem:
        raise InputError(path, field, problem)


def claim_vs_floor(
    claim_tokens_per_s: float,
    model: ModelSpec | str,
    hw: GpuSpec | str,
    n_gpus: int,
    acceptance_length: float = INFERENCEX_ACCEPTANCE_LENGTH,
    *,
    context_tokens: int = 0,
    kv_dtype: str = "fp4",
) -> pd.DataFrame:
    """The claim's time per token (ms) against the batch-1 floor step, without and with
    speculation (``acceptance_length``); ceiling_tok_s = acceptance / floor step."""
    claim_ms = 1000 / claim_tokens_per_s
    kw: dict[str, Any] = dict(context_tokens=context_tokens, kv_dtype=kv_dtype)
    m = catalogs.as_model(model)
    floor = functools.partial(roofline.batch1_decode_ceiling_tokens_per_s, m, hw, n_gpus, **kw)
    rows = []
    for name, acc in (("no speculation", 1.0), ("speculation", float(acceptance_length))):
        f, u = floor(acceptance_length=acc), floor(acceptance_length=acc, routing="uniform")
        row: dict[str, Any] = dict(reading=name, acceptance_length=acc)
        row |= dict(claim_ms_per_token=claim_ms, claim_step_ms=acc * claim_ms)
        row |= dict(floor_step_ms=1000 * f.step_s, ceiling_tok_s=f.tokens_per_s)
        row |= dict(claim_share_of_ceiling=claim_tokens_per_s / f.tokens_per_s)
        row |= dict(verify_tokens=f.verify_tokens, weight_gb=f.weight_bytes / 1e9)
        row |= dict(draft_mb=f.draft_bytes / 1e6, uniform_tok_s=u.tokens_per_s)
        rows.append(row | dict(uniform_weight_gb=u.weight_bytes / 1e9))
    return pd.DataFrame(rows)


def physics_reading(
    floor: pd.DataFrame,
    claim_tok_s: float,
    gpus: int,
    gpu: str,
    acceptance_from: str = "",
    attainable: dict[str, Any] | None = None,
) -> headline.ClaimReading:
    """The claim over the higher of the two batch-1 ceilings (with and without speculation)."""
    by = floor.set_index("reading")
    best_name = str(by["ceiling_tok_s"].idxmax())
    acceptance = float(by.loc["speculation", "acceptance_length"])
    best = by.loc[best_name]
    other = by.loc["no speculation" if best_name == "speculation" else "speculation"]
    ratio = claim_tok_s / best["ceiling_tok_s"]
    clauses = [
        f"{claim_tok_s:,.0f} tok/s is {percent(ratio, 0)} of the {best['ceiling_tok_s']:,.0f} "
        f"tok/s bandwidth bound at {best['acceptance_length']:g} tokens per step and "
        f"{percent(claim_tok_s / other['ceiling_tok_s'], 0)} of {other['ceiling_tok_s']:,.0f} at "
        f"{other['acceptance_length']:g} per step on {plural(gpus, str(gpu).upper())}, each step "
        "streaming the fewest bytes it can (the dense weights once, the top-k experts per layer "
        "however many tokens it verifies, the drafter); per-layer dispatch and combine across "
        "the GPUs are not counted",
        f"{acceptance:g} tokens per step is {acceptance_from}, not the claim's (the write-up "
        "names no acceptance length)"
        if acceptance_from
        else "",
    ]
    v, margin = check.physics_verdict(ratio), f"{percent(ratio, 0)} of the ceiling"
    return common.reading(CLAIM_ID, "physics", v, margin, clauses, attainable=attainable)


def run_reading(
    tok_s: float, n_gpus: int, claim: Claim, claim_tok_s: float, rel_tol: float, run: dict[str, Any]
) -> headline.ClaimReading:
    """This run's reading; testable on the claim's count of B300-class GPUs serving its model."""
    gpus = claim.scope.gpu_count
    testable = verdicts.can_test(run) and n_gpus == gpus
    what = f"one stream at {tok_s:,.1f} tok/s on {plural(n_gpus, 'accelerator')}"
    needs = f"one stream of DeepSeek-V4.1-Flash on {gpus} B300 GPUs"
    kw: dict[str, Any] = dict(testable=testable, what=what, run=run, needs=needs)
    return verdicts.run_reading(CLAIM_ID, tok_s, claim_tok_s, rel_tol, **kw)


#: The notebook's ``parameters`` (None: the registry's GPUs, InferenceX's acceptance).
Params = headline.params(RESULT)


class Analysis(common.Chapter):
    """A one-stream trace's statistics, the floor, readings and per-GPU figures."""

    PARAMS = Params

    def __init__(self, trace: Trace, params: Any = None, registry: Registry | None = None) -> None:
        problem = stream_problem(trace.requests, (params or Params.from_mapping({})).point_id)
        if problem:
            raise InputError(trace.path or "<trace>", "requests", problem)
        super().__init__(trace, params, registry)

    def analyse(self, p: Any, reg: Registry) -> None:
        trace = self.trace
        self.claim = claim = reg.get(CLAIM_ID)
        self.claim_tok_s = claim_tok_s = reg.value(CLAIM_ID)
        floor_gpus = p.floor_gpus if p.floor_gpus is not None else claim.scope.gpu_count
        if floor_gpus is None:
            raise InputError("claims", f"claims[{CLAIM_ID}].scope.gpu_count", "required")
        self.floor_gpus = floor_gpus
        given = p.acceptance_length is not None
        self.acceptance = acc = float(p.acceptance_length or INFERENCEX_ACCEPTANCE_LENGTH)
        self.acceptance_from = "parameter" if given else INFERENCEX_ACCEPTANCE_SOURCE
        self.stats = st = stream_stats(trace, p.point_id)
        self.gaps_ms = st.gaps
        on = (p.model_id, p.gpu_id, floor_gpus, acc)
        kw: dict[str, Any] = dict(context_tokens=p.context_tokens, kv_dtype=p.kv_dtype)
        self.floor = floor = claim_vs_floor(claim_tok_s, *on, **kw)
        self.rack_tok_s = reg.value(RACK_CLAIM_ID)
        self.rack_gpus = catalogs.system(p.rack_system_id).gpus
        self.per_gpu_single_user = claim_tok_s / floor_gpus  # tok/s per GPU, one stream
        self.per_gpu_rack = self.rack_tok_s / self.rack_gpus  # tok/s per GPU, many streams
        # MoE layers of the model (each needs a dispatch and a combine across the GPUs)
        self.moe_layers = roofline.moe_layers(catalogs.as_model(p.model_id))
        best_acc = float(floor.loc[floor["ceiling_tok_s"].idxmax(), "acceptance_length"])
        step: dict[str, Any] = dict(per="total", batch=1, tokens_per_step=best_acc)
        c = check.check_claim(p.model_id, p.gpu_id, floor_gpus, claim_tok_s, **step)
        attainable = verdicts.attainable(c, f"one stream at {best_acc:g} tokens per step")
        acc_from = "" if given else "InferenceX's measured acceptance length"
        known = trace.points["num_gpus"].dropna()  # the stream's GPUs, else the parameter's
        n_gpus = int(known.max()) if len(known) else p.gpus
        phys = physics_reading(floor, claim_tok_s, floor_gpus, p.gpu_id, acc_from, attainable)
        run = run_reading(st.tokens_per_s, n_gpus, claim, claim_tok_s, p.rel_tol, trace.run)
        self.readings = common.readings(reg, (phys, run))

    def reading(self, name: str) -> pd.Series:
        """One row of :attr:`floor` (``no speculation`` or ``speculation``)."""
        return self.floor.set_index("reading").loc[name]

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        st, f0, f1 = self.stats, self.reading("no speculation"), self.reading("speculation")
        g, nan = self.gaps_ms, float("nan")
        return common.glue(self, GLUE) | {
            "ms_per_token": 1000 / st.tokens_per_s,
            **{f"p{q:g}": verdicts.text(st.gaps_ms[q], ".3g") for q in GAP_PERCENTILES},
            **{f"gap_{k}_ms": float(getattr(g, k)()) if g.size else nan for k in ("min", "max")},
            "per_chunk": verdicts.text(st.tokens_per_chunk, ".2f"),
            "acceptance": verdicts.text(st.acceptance_length, ".2f"),
            "n_requests": len(st.per_request),
            "claim_ms": f0["claim_ms_per_token"],
            "floor_ms": f0["floor_step_ms"],
            "ceiling_1": f0["ceiling_tok_s"],
            "share_1_pct": 100 * f0["claim_share_of_ceiling"],
            "ceiling_s": f1["ceiling_tok_s"],
            "share_s_pct": 100 * f1["claim_share_of_ceiling"],
            "verify_tokens": int(f1["verify_tokens"]),
            "weights_1_gb": float(f0["weight_gb"]),
            "weights_s_gb": float(f1["weight_gb"]),
            "uniform_s_gb": float(f1["uniform_weight_gb"]),
            "uniform_s_tok_s": float(f1["uniform_tok_s"]),
            "draft_mb": float(f1["draft_mb"]),
            "floor_s_ms": float(f1["floor_step_ms"]),
            **{
                f"budget_{k}_us": results_bounds.collective_budget_us(
                    f["claim_step_ms"] / 1e3, f["floor_step_ms"] / 1e3, self.moe_layers
                )
                for k, f in (("1", f0), ("s", f1))
            },
        }


analyse = Analysis


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, readings and what would flip them (the headline JSON)."""
    st, p = a.stats, a.params
    run = headline.by_claim(a.readings, "this run")[CLAIM_ID]
    measured = common.where(a)
    num, src = verdicts.number, st.acceptance_source
    speed = "sum(output tokens - 1) / sum(e2el - ttft) over one-at-a-time requests"
    gap = "gap between streamed chunks; null without gaps"
    no_gap = "the write-up gives no gap figure"
    chunk = "sum(output tokens - 1) / number of gaps"
    several = "above 1 when chunks carry several tokens"
    acc = "speculative-decoding acceptance length; null when the trace has none"
    gaps = ((50.0, "median"), (99.0, "99th percentile"))
    rows = [
        (run, "stream_tok_s", num(st.tokens_per_s, 2), "tok/s", speed),
        *((no_gap, f"gap_p{q:g}_ms", num(st.gaps_ms[q], 3), "ms", f"{w} {gap}") for q, w in gaps),
        (several, "tokens_per_chunk", num(st.tokens_per_chunk, 3), "tokens", chunk),
        (src, "acceptance_length", num(st.acceptance_length, 3), "tokens/step", acc),
    ]
    headlines = common.headlines(rows, **measured)
    for r in a.floor.itertuples():
        name = "claim_share_of_floor_ceiling_" + r.reading.replace(" ", "_")
        share = num(100 * r.claim_share_of_ceiling, 4)
        what = f"claim / batch-1 bandwidth bound (fewest bytes per step) on {a.floor_gpus} x "
        what += f"{p.gpu_id.upper()}, {r.acceptance_length:g} tokens per step"
        verdict = check.physics_verdict(r.claim_share_of_ceiling)
        why = f"floor {r.floor_step_ms:.4g} ms/step vs {r.claim_step_ms:.4g} ms implied"
        headlines.append(common.modelled(CLAIM_ID, name, share, "% of ceiling", what, verdict, why))
    v = a.values()
    best = a.floor.loc[a.floor["ceiling_tok_s"].idxmax()]
    rule = results_bounds.verdict_rule()
    flips = [
        f"physics: impossible above {rule.impossible_above * best['ceiling_tok_s']:,.0f} "
        f"tok/s, possible at or below (the higher bound, {best['acceptance_length']:g} tokens "
        f"per step on {plural(a.floor_gpus, 'GPU')}, {p.gpu_id.upper()}, fewest bytes per step); "
        f"at one token per step the claim leaves {v['budget_1_us']:.3g} µs per MoE layer for the "
        f"dispatch and combine across the GPUs ({v['budget_s_us']:.3g} µs with speculation)",
        f"this run: one stream of DeepSeek-V4.1-Flash on {a.claim.scope.gpu_count} B300 GPUs "
        f"within {percent(p.rel_tol, 0)} of {a.claim_tok_s:,.0f} tok/s reads consistent, outside "
        "it inconsistent",
    ]
    names = "point_id gpus model_id gpu_id floor_gpus acceptance_length context_tokens kv_dtype"
    resolved: dict[str, Any] = dict(floor_gpus=a.floor_gpus, acceptance_length=a.acceptance)
    return common.outcome(RESULT, a, headlines, flips, names, **resolved)


# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {
    "single-user.throughput": tuple(
        "metric per model hardware gpu_count concurrency speculation statistic".split()
    )
}
READING_NOTES = {
    "single-user.throughput": "the write-up names neither the statistic of its speed nor "
    "whether its speculation ran for real; InferenceX's concurrency-1 AgentX point is one "
    "agent session (its sub-agents may run at once), not one stream"
}
