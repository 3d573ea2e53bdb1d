"""Two engines' parity per batch B per decode rank: decode tok/s = B x sum(output - 1) /
sum(e2el - ttft), prefill tok/s = B x mean(prompt) / mean(ttft), gap = A / B - 1."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import validity
from rackbook.core.provenance import hardware_label
from rackbook.core.traces import Trace, point_decode_ranks, point_rank_batch
from rackbook.core.units import ratio_text
from rackbook.inputs import catalogs
from rackbook.inputs.claims import Registry
from rackbook.physics import check, results_bounds, roofline
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts

RESULT = "decode-parity"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.decode_parity``).
FIGURES: tuple[str, ...] = ("fig_decode", "fig_ratio", "fig_prefill")
CLAIM_ID = "decode-parity.gap"
#: Decode ranks the claim's batch is per (DeepInfer's decode DEP64; the ceilings' deployment).
CLAIM_DECODE_RANKS = 64

DECODE_FORMULA = r"\text{decode tok/s} = B \cdot \frac{\sum_i (n_i - 1)}{\sum_i (e2el_i - ttft_i)}"
PREFILL_FORMULA = r"\text{prefill tok/s} = B \cdot \frac{\overline{p}}{\overline{ttft}}"


_COLUMNS = ["point_id", "engine", "config", "batch", "decode_ranks", "requests", "decode_tok_s"]
_COLUMNS += ["decode_tok_s_total", "prefill_tok_s", "tpot_ms", "ttft_ms"]


def throughput_table(trace: Trace) -> pd.DataFrame:
    """Per point with a batch per rank: decode and prefill tok/s per rank and of all ranks."""
    req = trace.requests[trace.requests["success"]]
    pts = trace.points.assign(
        batch=point_rank_batch(trace.points), ranks=point_decode_ranks(trace.points)
    )
    rows = []
    for _, p in pts.iterrows():
        r = req[req["point_id"] == p["point_id"]]
        if r.empty or pd.isna(p["batch"]):
            continue
        b, ranks = int(p["batch"]), int(p["ranks"])
        dec_time = float((r["e2el_s"] - r["ttft_s"]).sum())
        dec_tokens = int((r["output_tokens"].to_numpy(np.int64) - 1).clip(min=0).sum())
        ttft = float(r["ttft_s"].mean())
        dec = b * dec_tokens / dec_time if dec_time > 0 else np.nan
        total = ranks * b * dec_tokens / dec_time if dec_time > 0 else np.nan
        pre = b * float(r["prompt_tokens"].mean()) / ttft if ttft > 0 else np.nan
        tpot = 1000 * dec_time / dec_tokens if dec_tokens else np.nan
        head = p[["point_id", "engine", "config"]].tolist()
        rows.append([*head, b, ranks, len(r), dec, total, pre, tpot, 1000 * ttft])
    return pd.DataFrame(rows, columns=_COLUMNS).sort_values(
        ["engine", "batch", "decode_ranks"], ignore_index=True, kind="stable"
    )


def parity(
    table: pd.DataFrame,
    engine_a: str,
    engine_b: str,
    metric: str = "decode_tok_s",
    batches: list[int] | None = None,
) -> pd.DataFrame:
    """Per batch both engines measured: throughput of A and B, their decode ranks (the largest),
    ratio A/B and gap (ratio - 1, in %)."""

    def side(engine: str) -> pd.DataFrame:
        t = table[(table["engine"] == engine) & np.isfinite(table[metric].astype(float))]
        t = t.sort_values(["batch", "decode_ranks"], kind="stable")
        return t.drop_duplicates("batch", keep="last").set_index("batch")

    a, b = side(engine_a), side(engine_b)
    both = sorted(set(a.index) & set(b.index))
    if batches is not None:
        both = [x for x in both if x in set(batches)]
    out = pd.DataFrame({"batch": pd.Series(both, dtype="int64")})
    for col, t in (("a", a), ("b", b)):
        out[col] = t[metric].reindex(both).to_numpy(float)
    for col, t in (("ranks_a", a), ("ranks_b", b)):
        out[col] = t["decode_ranks"].reindex(both).to_numpy(np.int64)
    out["ratio"] = out["a"] / out["b"]
    out["gap_pct"] = 100 * (out["ratio"] - 1)
    return out


def largest_gap(par: pd.DataFrame) -> tuple[int, float]:
    """Batch size and signed gap (%) with the largest absolute gap."""
    if par.empty:
        raise ValueError("no batch size measured by both engines")
    i = int(np.argmax(np.abs(par["gap_pct"].to_numpy())))
    return int(par["batch"].iloc[i]), float(par["gap_pct"].iloc[i])


def can_test(run: dict[str, Any], engine_b: str) -> bool:
    """A recorded trace on Blackwell GPUs serving the claim's model, engine B DeepInfer."""
    return engine_b.lower().startswith("deepinfer") and verdicts.can_test(run, verdicts.BLACKWELL)


def run_reading(
    par: pd.DataFrame,
    band_pct: float,
    testable: bool,
    run: dict[str, Any],
    missing: str,
    batches: list[int] | None = None,
) -> headline.ClaimReading:
    """Consistent when every gap of ``batches`` is within ``band_pct`` %, inconsistent when one
    is outside, else untested."""
    needs = "vLLM against DeepInfer's offline benchmark on Blackwell GPUs, DeepSeek-V4.1-Flash"
    if par.empty:
        return headline.ClaimReading(CLAIM_ID, "this run", "untested", "-", missing)
    b, g = largest_gap(par)
    inside = int((par["gap_pct"].abs() <= band_pct).sum())
    what = f"largest gap {g:+.1f} % at batch {b}; {inside}/{len(par)} batch sizes within the band"
    if not testable:
        return verdicts.untested(CLAIM_ID, run, what, needs)
    gaps = sorted(int(x) for x in (batches or []) if x not in set(par["batch"].tolist()))
    v = "consistent" if inside == len(par) else "inconsistent"
    if gaps and inside == len(par):
        v, what = "untested", f"{what}; the claim's batch sizes {', '.join(map(str, gaps))} not "
        what += "measured by both engines: the claim's range is not covered"
    return headline.ClaimReading(CLAIM_ID, "this run", v, f"{g:+.1f} %", what)


def _ceiling_span(lo: Any, hi: Any) -> str:
    a, b = lo["ceiling_tok_s_per_gpu"], hi["ceiling_tok_s_per_gpu"]
    if round(a) == round(b):
        return (
            f"a {lo['limit']} ceiling of {a:,.0f} tok/s per GPU at every batch from "
            f"{lo['batch']} to {hi['batch']} per rank, since from batch {lo['batch']} compute, "
            "not the weight read, binds"
        )
    return (
        f"ceilings {a:,.0f} tok/s per GPU at batch {lo['batch']} per rank to {b:,.0f} at "
        f"{hi['batch']}"
    )


def physics_reading(
    ceilings: pd.DataFrame, par: pd.DataFrame, testable: bool, params: Any
) -> headline.ClaimReading:
    """Each engine against its decode bound per GPU; undetermined without a testable trace."""
    lo, hi = ceilings.iloc[0], ceilings.iloc[-1]
    span = _ceiling_span(lo, hi)
    att = decode_attainable(params, int(lo["batch"]), int(hi["batch"]))
    if not testable or par.empty:
        why = (
            f"a ratio of two engines on the same GPUs: physics bounds each ({span}), not the ratio"
        )
        return headline.ClaimReading(CLAIM_ID, "physics", "undetermined", "-", why, attainable=att)
    worst = 0.0
    for r in par.itertuples():
        for rate, ranks in ((r.a, int(r.ranks_a)), (r.b, int(r.ranks_b))):
            worst = max(worst, rate / decode_bound(params, ranks, int(r.batch)).tok_s_per_gpu)
    why = f"the faster engine reaches {ratio_text(worst)} its decode bound ({span})"
    margin = headline.ceiling_margin(worst)
    v = check.physics_verdict(worst)
    return headline.ClaimReading(CLAIM_ID, "physics", v, margin, why, attainable=att, ratio=worst)


#: The notebook's ``parameters`` (``band_pct`` None: the registry's band in %).
Params = headline.params(RESULT)
#: The parameters the headline JSON reports.
REPORTED = "engine_a engine_b batch_sizes decode_ranks band_pct model_id gpu_id"


class Analysis(common.Chapter):
    """Throughput, parity, ceilings and readings; engine B's points from ``trace_b`` if given."""

    PARAMS = Params

    def analyse(self, p: Any, reg: Registry, trace_b: Trace | None = None) -> None:
        trace = self.trace
        self.claim = reg.get(CLAIM_ID)
        self.band_pct = band = p.band_pct if p.band_pct is not None else reg.value(CLAIM_ID)
        table = throughput_table(trace)
        testable = can_test(trace.run, p.engine_b)
        self.trace_b = trace_b = validity.valid_trace(trace_b)[0] if trace_b is not None else None
        if trace_b is not None:
            tb = throughput_table(trace_b)
            frames = [table[table["engine"] != p.engine_b], tb[tb["engine"] == p.engine_b]]
            table = pd.concat([t for t in frames if len(t)] or [table], ignore_index=True)
            self.hardware += f"; engine B: {hardware_label(trace_b.run)}"
            testable = testable and can_test(trace_b.run, p.engine_b)
        self.table = table
        batches = list(p.batch_sizes)
        self.decode = dec = parity(table, p.engine_a, p.engine_b, batches=batches)
        self.prefill = parity(table, p.engine_a, p.engine_b, "prefill_tok_s", batches)
        # (batch, signed gap %) of the largest decode and prefill gaps, None if none measured
        self.worst, self.prefill_worst = (
            largest_gap(x) if len(x) else None for x in (dec, self.prefill)
        )
        self.inside = int((dec["gap_pct"].abs() <= band).sum())  # batch sizes within the band
        self.missing = missing_piece(set(table["engine"]), p, dec)
        self.ceilings = ceil = ceilings(p)
        phys = physics_reading(ceil, dec, testable, p)
        run = run_reading(dec, band, testable, trace.run, self.missing, batches)
        self.readings = common.readings(reg, (phys, run))

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        span = self.claim.scope.batch_sizes
        worst, pre = self.worst, self.prefill_worst
        c = self.ceilings.set_index("batch")["ceiling_tok_s_per_gpu"]
        return {
            "hardware": self.hardware,
            "trace_kind": self.trace.kind,
            "max_gap_pct": worst[1] if worst else float("nan"),
            "worst_batch": worst[0] if worst else 0,
            "inside": self.inside,
            "n_batches": len(self.decode),
            "prefill_gap_pct": pre[1] if pre else float("nan"),
            "claim_batch_low": span.low if span else None,
            "claim_batch_high": span.high if span else None,
            "ceiling_ranks": CLAIM_DECODE_RANKS,
            "ceiling_low_batch": float(c.iloc[0]),
            "ceiling_high_batch": float(c.iloc[-1]),
            "ceiling_limit": " and ".join(dict.fromkeys(self.ceilings["limit"])),
        }


def decode_bound(params: Any, ranks: int, batch: int) -> check.PerGpuCeiling:
    """The decode bound (tok/s per GPU, no context) of ``batch`` sequences per rank on ``ranks``
    GPUs: the lower of the compute and the memory ceiling."""
    m, g = catalogs.as_model(params.model_id), catalogs.as_gpu(params.gpu_id)
    comp = roofline.compute_ceiling_tokens_per_s(m, g, "decode")
    mem = check.memory_ceiling(m, g, ranks, batch * ranks)
    if comp.tokens_per_s < mem.tok_s_per_gpu:
        return check.PerGpuCeiling("compute", comp.tokens_per_s, comp.formula, "decode")
    return mem


def decode_attainable(params: Any, low: int, high: int) -> dict[str, Any]:
    """What measured kernels reach per GPU at ``low`` and ``high`` sequences per rank."""
    ranks = CLAIM_DECODE_RANKS
    a_lo, a_hi = (
        verdicts.attainable(check.check_claim(params.model_id, params.gpu_id, ranks, 1.0, batch=b))
        for b in (low * ranks, high * ranks)
    )
    text = (
        f"measured kernels reach {a_lo['tok_s_per_gpu']:,.0f} tok/s per GPU at batch {low} per "
        f"rank and {a_hi['tok_s_per_gpu']:,.0f} at {high} on {ranks} ranks ({a_hi['deployment']}; "
        f"{a_hi['calibration']}); the claim is a ratio of two engines, which this does not bound"
    )
    return {**a_hi, "ratio": None, "text": text}


def ceilings(params: Any, ranks: int = CLAIM_DECODE_RANKS) -> pd.DataFrame:
    """Per batch size per rank: the :func:`decode_bound` (tok/s per GPU) and what binds."""
    bounds = {b: decode_bound(params, ranks, b) for b in sorted(params.batch_sizes)}
    cols = ("batch", "ceiling_tok_s_per_gpu", "limit", "formula")
    rows = [(b, r.tok_s_per_gpu, r.name, r.formula) for b, r in bounds.items()]
    return pd.DataFrame(rows, columns=list(cols))


def missing_piece(engines: set[str], params: Any, decode: pd.DataFrame) -> str:
    """What keeps the "this run" reading from a verdict (else ``""``)."""
    sides = (
        ("A", params.engine_a, "vLLM's sweep (`--source live`)", "vllm-bench"),
        ("B", params.engine_b, "an offline engine", "offline-engine"),
    )
    out = [
        f"no engine-{k} points ({name}): record {how} or import its results with "
        f"`rackbook import {fmt}`"
        for k, name, how, fmt in sides
        if name not in engines
    ]
    if not out and decode.empty:
        out.append("no batch size per rank measured by both engines")
    return "; ".join(out)


analyse = Analysis


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, readings and what would flip them (the headline JSON)."""
    tid = [a.trace.trace_id, *([a.trace_b.trace_id] if a.trace_b is not None else [])]
    run = headline.by_claim(a.readings, "this run")[CLAIM_ID]
    measured = common.where(a) | {"trace_ids": tid}
    rows: list[tuple[Any, ...]] = []
    signed = "largest |A/B - 1| of {} throughput over the batch sizes, signed"
    if a.worst:
        within = f"batch sizes whose decode gap is within +/-{a.band_pct:g} %, of {len(a.decode)}"
        gap = round(a.worst[1], 2)
        rows += [
            (run, "max_decode_gap", gap, "%", signed.format("decode")),
            (run, "batch_sizes_within_band", a.inside, "batch sizes", within),
        ]
    if a.prefill_worst:
        no = "the write-up gives no number for prefill, only that it follows a curve"
        rows.append(
            (no, "max_prefill_gap", round(a.prefill_worst[1], 2), "%", signed.format("prefill"))
        )
    on, each = f"{CLAIM_DECODE_RANKS} x {a.params.gpu_id}", "bounds each engine, not their ratio"
    ceilings = []
    for r in a.ceilings.itertuples():
        what = f"decode bound per GPU ({r.limit}) at batch {r.batch} per rank on {on}"
        cap = round(r.ceiling_tok_s_per_gpu)
        ceilings.append((each, f"ceiling_batch_{r.batch}", cap, "tok/s/GPU", what))
    headlines = common.headlines(rows, **measured) + common.headlines(ceilings)
    lo, hi = a.ceilings.iloc[0], a.ceilings.iloc[-1]
    hi_x = results_bounds.verdict_rule().impossible_above  # above the bound: impossible
    span = a.claim.scope.batch_sizes
    same = round(hi["ceiling_tok_s_per_gpu"]) == round(lo["ceiling_tok_s_per_gpu"])
    beyond = f" or any larger batch (the {lo['limit']} ceiling does not grow with it)"
    if not same:
        beyond = f" (or {hi_x * hi['ceiling_tok_s_per_gpu']:,.0f} at {hi['batch']})"
    flips = [
        f"this run: a trace of vLLM and DeepInfer on Blackwell GPUs serving DeepSeek-V4.1-Flash "
        f"at per-rank batches {span.low if span else 8} to {span.high if span else 256} turns it "
        f"consistent if every gap is within {a.band_pct:g} %, inconsistent otherwise",
        f"physics: an engine above {hi_x * lo['ceiling_tok_s_per_gpu']:,.0f} tok/s per GPU at "
        f"batch {lo['batch']} per rank{beyond} would mean the batch is not per rank on "
        f"{CLAIM_DECODE_RANKS} ranks",
        "published: any DeepInfer throughput measurement at these batch sizes",
    ]
    return common.outcome(RESULT, a, headlines, flips, REPORTED, tid, band_pct=a.band_pct)


# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {"decode-parity.gap": ("metric", "model")}
READING_NOTES = {"decode-parity.gap": "no DeepInfer throughput is published"}
RERUN_NEEDS = {
    "decode-parity": "Engine B must be an offline engine at the same per-rank batches: DeepInfer's "
    "own benchmark output, imported with `rackbook import offline-engine` and given as `trace_b`; "
    "without it the reading stays untested and says so."
}
