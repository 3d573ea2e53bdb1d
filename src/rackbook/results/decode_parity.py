"""Decode and prefill throughput per batch size, and the parity of two engines.

Definitions (per sweep point with batch size, or client concurrency, ``B``; successful requests):

- decode throughput (tok/s) = B x sum(output_tokens - 1) / sum(e2el - ttft): the rate at which
  B concurrent sequences produce tokens after their first one, i.e. B / token-weighted TPOT.
  Prefill (the first token) is excluded.
- prefill throughput (tok/s) = B x mean(prompt_tokens) / mean(ttft): prompt tokens processed per
  second while B requests start together (for an online server, TTFT also holds queueing).
- parity ratio = throughput(A) / throughput(B engine) at the same batch size; gap = ratio - 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.provenance import hardware_label
from rackbook.core.traces import Trace, point_batch
from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.results import headline
from rackbook.results.verdicts import BLACKWELL, on_gpus

RESULT = "decode-parity"
#: The claim this chapter tests (data/claims.yaml).
CLAIM_ID = "decode-parity.gap"

DECODE_FORMULA = r"\text{decode tok/s} = B \cdot \frac{\sum_i (n_i - 1)}{\sum_i (e2el_i - ttft_i)}"
PREFILL_FORMULA = r"\text{prefill tok/s} = B \cdot \frac{\overline{p}}{\overline{ttft}}"


def throughput_table(trace: Trace) -> pd.DataFrame:
    """One row per point: engine, batch, requests, decode and prefill throughput (tok/s),
    mean TPOT (ms) and mean TTFT (ms)."""
    req = trace.requests[trace.requests["success"]]
    pts = trace.points.assign(batch=point_batch(trace.points))
    rows = []
    for _, p in pts.iterrows():
        r = req[req["point_id"] == p["point_id"]]
        if r.empty or pd.isna(p["batch"]):
            continue
        b = int(p["batch"])
        n = r["output_tokens"].to_numpy(np.int64)
        dec_time = float((r["e2el_s"] - r["ttft_s"]).sum())
        dec_tokens = int((n - 1).clip(min=0).sum())
        ttft = float(r["ttft_s"].mean())
        rows.append(
            {
                "point_id": p["point_id"],
                "engine": p["engine"],
                "config": p["config"],
                "batch": b,
                "requests": len(r),
                "decode_tok_s": b * dec_tokens / dec_time if dec_time > 0 else np.nan,
                "prefill_tok_s": b * float(r["prompt_tokens"].mean()) / ttft
                if ttft > 0
                else np.nan,
                "tpot_ms": 1000 * dec_time / dec_tokens if dec_tokens else np.nan,
                "ttft_ms": 1000 * ttft,
            }
        )
    return pd.DataFrame(rows).sort_values(["engine", "batch"], ignore_index=True)


def parity(
    table: pd.DataFrame,
    engine_a: str,
    engine_b: str,
    metric: str = "decode_tok_s",
    batches: list[int] | None = None,
) -> pd.DataFrame:
    """Per batch size: throughput of A and B, ratio A/B and gap (ratio - 1, in %).

    Only batch sizes both engines measured are kept (optionally restricted to ``batches``).
    """
    a = table[table["engine"] == engine_a].set_index("batch")[metric]
    b = table[table["engine"] == engine_b].set_index("batch")[metric]
    common = sorted(set(a.index) & set(b.index))
    if batches is not None:
        common = [x for x in common if x in set(batches)]
    out = pd.DataFrame(
        {"batch": common, "a": a.loc[common].to_numpy(), "b": b.loc[common].to_numpy()}
    )
    out["ratio"] = out["a"] / out["b"]
    out["gap_pct"] = 100 * (out["ratio"] - 1)
    return out


def largest_gap(par: pd.DataFrame) -> tuple[int, float]:
    """Batch size and signed gap (%) with the largest absolute gap."""
    if par.empty:
        raise ValueError("no batch size measured by both engines")
    i = int(np.argmax(np.abs(par["gap_pct"].to_numpy())))
    return int(par["batch"].iloc[i]), float(par["gap_pct"].iloc[i])


def comparable_to_claim(run: dict, engine_b: str) -> bool:
    """True when a trace can speak to the published claim itself: engine B is DeepInfer and the
    GPUs are Blackwell (B300/GB300/B200). Otherwise it is a stand-in measurement."""
    return engine_b.lower().startswith("deepinfer") and on_gpus(run, BLACKWELL)


def verdict(par: pd.DataFrame, band_pct: float, comparable: bool) -> tuple[str, str]:
    """Verdict and one-line reason on "within ``band_pct`` % over the batch sizes"."""
    b, g = largest_gap(par)
    inside = int((par["gap_pct"].abs() <= band_pct).sum())
    what = (
        f"largest gap {g:+.1f} % at batch {b}; "
        f"{inside}/{len(par)} batch sizes within +/-{band_pct:g} %"
    )
    if not comparable:
        return (
            "not reproduced",
            f"stand-in engines on this hardware, not vLLM vs DeepInfer on GB300: {what}",
        )
    return ("consistent" if inside == len(par) else "inconsistent"), what


# --------------------------------------------------------------------------------------------
# The chapter


@dataclass(frozen=True)
class Params(headline.Params):
    """The chapter's analysis parameters (the notebook's ``parameters`` cell): engine labels of
    A (the online server) and B (the offline engine in DeepInfer's role), the batch sizes
    (requests) to compare, and the claim's band in % (``None``: the registry's figure)."""

    engine_a: str = "vllm-serve"
    engine_b: str = "vllm-offline"
    batch_sizes: tuple[int, ...] | list[int] = (8, 16, 32, 64, 128, 256)
    band_pct: float | None = None


@dataclass
class Analysis:
    """Everything the chapter shows: the throughput table, decode and prefill parity per batch
    size, the largest gaps, the verdict, and the values its prose quotes."""

    trace: Trace
    params: Params
    claim: Claim
    band_pct: float
    table: pd.DataFrame
    decode: pd.DataFrame
    prefill: pd.DataFrame
    worst_batch: int
    worst_gap: float
    prefill_batch: int
    prefill_gap: float
    inside: int
    verdict: str
    reason: str
    hardware: str

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        return {
            "hardware": self.hardware,
            "trace_kind": self.trace.kind,
            "max_gap_pct": self.worst_gap,
            "worst_batch": self.worst_batch,
            "inside": self.inside,
            "n_batches": len(self.decode),
            "prefill_gap_pct": self.prefill_gap,
            "verdict": self.verdict,
            "claim_band_pct": self.claim.value,
            "claim_batch_low": self.claim.scope.batch_sizes.low
            if self.claim.scope.batch_sizes
            else None,
            "claim_batch_high": self.claim.scope.batch_sizes.high
            if self.claim.scope.batch_sizes
            else None,
        }


def analyse(trace: Trace, params: Params = Params(), registry: Registry | None = None) -> Analysis:
    """Throughput per batch size of both engines, their decode and prefill parity over
    ``params.batch_sizes``, and the verdict on the claim's band (from the claims registry
    unless ``params.band_pct`` is set)."""
    reg = registry or load_claims()
    band = params.band_pct if params.band_pct is not None else reg.value(CLAIM_ID)
    table = throughput_table(trace)
    batches = list(params.batch_sizes)
    dec = parity(table, params.engine_a, params.engine_b, batches=batches)
    pre = parity(table, params.engine_a, params.engine_b, metric="prefill_tok_s", batches=batches)
    worst_batch, worst_gap = largest_gap(dec)
    pre_batch, pre_gap = largest_gap(pre)
    comparable = comparable_to_claim(trace.run, params.engine_b)
    v, why = verdict(dec, band, comparable)
    return Analysis(
        trace,
        params,
        reg.get(CLAIM_ID),
        band,
        table,
        dec,
        pre,
        worst_batch,
        worst_gap,
        pre_batch,
        pre_gap,
        int((dec["gap_pct"].abs() <= band).sum()),
        v,
        why,
        hardware_label(trace.run),
    )


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines and verdict (the headline JSON)."""
    tid = [a.trace.trace_id]
    common = dict(kind="measured", hardware=a.hardware, trace_ids=tid)
    headlines = [
        headline.Headline(
            name="max_decode_gap",
            value=round(a.worst_gap, 2),
            unit="%",
            definition="largest |A/B - 1| of decode throughput over the batch sizes, signed",
            claim_id=CLAIM_ID,
            verdict=a.verdict,
            reason=a.reason,
            **common,
        ),
        headline.Headline(
            name="batch_sizes_within_band",
            value=a.inside,
            unit="batch sizes",
            definition=f"batch sizes whose decode gap is within +/-{a.band_pct:g} %, "
            f"of {len(a.decode)}",
            claim_id=CLAIM_ID,
            verdict=a.verdict,
            reason=a.reason,
            **common,
        ),
        headline.Headline(
            name="max_prefill_gap",
            value=round(a.prefill_gap, 2),
            unit="%",
            definition="largest |A/B - 1| of prefill throughput over the batch sizes, signed",
            claim_id=None,
            verdict="not comparable",
            reason="the write-up gives no number for prefill, only that it follows a curve",
            **common,
        ),
    ]
    p = a.params
    parameters = {
        "engine_a": p.engine_a,
        "engine_b": p.engine_b,
        "batch_sizes": list(p.batch_sizes),
        "band_pct": a.band_pct,
    }
    return headline.Outcome(RESULT, headlines, a.verdict, a.reason, tid, parameters)
