"""Single-user decode speed: one stream's tokens per second, its token gaps, and the batch-1
bandwidth floor it is measured against.

Definitions (successful requests):

- decode time of a request = e2el - ttft (s); its decode tokens = output_tokens - 1 (the first
  token belongs to prefill);
- stream tok/s per request = (output_tokens - 1) / (e2el - ttft) = 1000 / TPOT_ms; overall =
  sum(output_tokens - 1) / sum(e2el - ttft) (token-weighted);
- gap percentiles: p50/p90/p99 (``np.percentile``, linear) of the pooled ITL gaps, in ms;
- tokens per chunk = sum(output_tokens - 1) / number of gaps, over requests that have gaps:
  above 1 when chunks carry several tokens (speculative decoding, or a stream interval);
- acceptance length (tokens per verification step, speculative decoding): vLLM's
  ``spec_decode_acceptance_length`` = 1 + accepted / drafts, from run.json or from the
  ``vllm:spec_decode_num_accepted_tokens`` / ``vllm:spec_decode_num_drafts`` counters in the
  ``server_metrics`` table; None when neither is present.

Floor: one batch-1 decode step streams the active weights from HBM at least once, so
step >= active weight bytes / (n_gpus x HBM bytes/s) and tokens/s <= acceptance length / step
(:func:`rackbook.physics.roofline.batch1_decode_ceiling_tokens_per_s`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.server_metrics import counter_deltas
from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import roofline

#: The published figure (data/claims.yaml: single-user.throughput) and its GPU count.
CLAIM_TOKENS_PER_S = 826.0
CLAIM_GPUS = 4

#: Acceptance length InferenceX used for vLLM V4.1-Flash on GB300 with DSpark (synthetic).
INFERENCEX_ACCEPTANCE_LENGTH = 3.51
INFERENCEX_ACCEPTANCE_SOURCE = (
    'claims-context.md section "Mechanisms in vLLM" (InferenceX PR #3036, 2026-09-12: '
    "synthetic acceptance length 3.51)"
)

#: Key vLLM's ``bench serve`` result uses (vllm/benchmarks/serve.py).
ACCEPTANCE_KEY = "spec_decode_acceptance_length"
#: Counters (``_total`` suffix optional) vLLM computes the acceptance length from.
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
GAP_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0)

STREAM_FORMULA = r"\text{tok/s} = \frac{\sum_i (n_i - 1)}{\sum_i (e2el_i - ttft_i)}"


def acceptance_length(trace: Trace, point_id: str | None = None) -> tuple[float | None, str]:
    """Speculative-decoding acceptance length (tokens per step) and where it came from.

    Looked up, in order: run.json ``parameters``, run.json top level, run.json ``metrics``
    (each under :data:`ACCEPTANCE_KEY`), then the spec-decode counters of ``server_metrics``
    summed over the selected point(s): 1 + sum(delta accepted) / sum(delta drafts) (vLLM's
    formula). ``(None, reason)`` when absent.
    """
    run = trace.run
    places: list[tuple[str, Any]] = [
        ("run.json parameters", run.get("parameters")),
        ("run.json", run),
        ("run.json metrics", run.get("metrics")),
    ]
    for where, d in places:
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
        acc = drafts = 0.0
        for pid in pids:
            d = counter_deltas(sm, pid)
            if SPEC_ACCEPTED in d and SPEC_DRAFTS in d:
                acc += d[SPEC_ACCEPTED]
                drafts += d[SPEC_DRAFTS]
        if np.isfinite(acc) and np.isfinite(drafts) and drafts > 0:
            return 1 + acc / drafts, f"server_metrics: 1 + {SPEC_ACCEPTED} / {SPEC_DRAFTS}"
    return None, "no spec-decode statistics in run.json or server_metrics"


@dataclass(frozen=True)
class StreamStats:
    """Single-stream decode speed (see the module docstring for definitions).

    ``per_request``: request_id, output_tokens, decode_s (s), tok_s, tpot_ms, gaps (number of
    ITL gaps). ``gaps_ms``: percentile (50, 90, 99) -> gap in ms (NaN without gaps).
    """

    per_request: pd.DataFrame
    tokens_per_s: float
    gaps_ms: dict[float, float]
    tokens_per_chunk: float
    acceptance_length: float | None
    acceptance_source: str
    formula: str


def stream_stats(trace: Trace, point_id: str | None = None) -> StreamStats:
    """Tokens per second of decode per request and overall (tokens/s), gap percentiles (ms),
    tokens per streamed chunk and the acceptance length, over successful requests (of
    ``point_id`` only, if given)."""
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
    per = pd.DataFrame(
        {
            "request_id": r["request_id"].to_numpy(),
            "output_tokens": n,
            "decode_s": dec,
            "tok_s": tok_s,
            "tpot_ms": 1000 / tok_s,
            "gaps": n_gaps.astype(np.int64),
        }
    )
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
    formula = (
        f"sum(output - 1) / sum(e2el - ttft) = {total_steps} / {total_dec:.4g} s = "
        f"{overall:,.1f} tok/s ({1000 / overall if overall else np.nan:.4g} ms/token); "
        f"{per_chunk:.3g} tokens per chunk"
    )
    return StreamStats(per, float(overall), pct, per_chunk, acc, src, formula)


def batch1_floor(
    model: ModelSpec | str = "deepseek-v4.1-flash",
    hw: GpuSpec | str = "b300",
    n_gpus: int = CLAIM_GPUS,
    acceptance_length: float = 1.0,
    *,
    context_tokens: int = 0,
    kv_dtype: str = "fp4",
    moe_layers: int | None = None,
) -> roofline.Batch1Decode:
    """Batch-1 decode floor: step >= (active weight bytes + KV of ``context_tokens``) /
    (n_gpus x HBM bytes/s) seconds; ceiling tokens/s = acceptance_length / step
    (:func:`rackbook.physics.roofline.batch1_decode_ceiling_tokens_per_s`). DeepSeek-V4.1-Flash on
    4 x B300: 12 GB / 32 TB/s = 0.375 ms/step, 2,667 tokens/s at acceptance 1."""
    return roofline.batch1_decode_ceiling_tokens_per_s(
        catalogs.as_model(model),
        hw,
        n_gpus,
        acceptance_length,
        context_tokens=context_tokens,
        kv_dtype=kv_dtype,
        moe_layers=moe_layers,
    )


def claim_vs_floor(
    claim_tokens_per_s: float = CLAIM_TOKENS_PER_S,
    model: ModelSpec | str = "deepseek-v4.1-flash",
    hw: GpuSpec | str = "b300",
    n_gpus: int = CLAIM_GPUS,
    acceptance_length: float = INFERENCEX_ACCEPTANCE_LENGTH,
    *,
    context_tokens: int = 0,
    kv_dtype: str = "fp4",
) -> pd.DataFrame:
    """The claim's time per token against the batch-1 floor, without and with speculation.

    Rows ``no speculation`` (acceptance 1) and ``speculation`` (``acceptance_length``, default
    InferenceX's 3.51, :data:`INFERENCEX_ACCEPTANCE_SOURCE`). Columns: acceptance_length,
    claim_ms_per_token = 1000 / claim; claim_step_ms = acceptance x claim ms/token (the step
    time the claim implies); floor_step_ms (bandwidth floor of one step); floor_ms_per_token =
    floor step / acceptance; ceiling_tok_s = acceptance / floor step; claim_share_of_ceiling =
    claim / ceiling; step_headroom = claim_step_ms / floor_step_ms (how many floor steps fit in
    the step the claim implies); fits = claim <= ceiling; formula.

    826 tok/s = 1.211 ms/token; floor 0.375 ms/step: 31 % of the 2,667 tok/s ceiling without
    speculation; with 3.51 tokens/step the claim implies 4.249 ms steps (11.3x the floor).
    """
    if not claim_tokens_per_s > 0:
        raise InputError("-", "claim_tokens_per_s", f"must be > 0, got {claim_tokens_per_s}")
    claim_ms = 1000 / claim_tokens_per_s
    rows = []
    for name, acc in (("no speculation", 1.0), ("speculation", float(acceptance_length))):
        f = batch1_floor(model, hw, n_gpus, acc, context_tokens=context_tokens, kv_dtype=kv_dtype)
        step_ms = 1000 * f.step_s
        rows.append(
            {
                "reading": name,
                "acceptance_length": acc,
                "claim_ms_per_token": claim_ms,
                "claim_step_ms": acc * claim_ms,
                "floor_step_ms": step_ms,
                "floor_ms_per_token": step_ms / acc,
                "ceiling_tok_s": f.tokens_per_s,
                "claim_share_of_ceiling": claim_tokens_per_s / f.tokens_per_s,
                "step_headroom": acc * claim_ms / step_ms,
                "fits": claim_tokens_per_s <= f.tokens_per_s,
                "formula": f"claim 1000 / {claim_tokens_per_s:g} = {claim_ms:.4g} ms/token x "
                f"{acc:g} = {acc * claim_ms:.4g} ms/step vs floor {f.formula}",
            }
        )
    return pd.DataFrame(rows)
