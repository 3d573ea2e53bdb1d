"""Which successful requests measure the engine and which a CPU-starved client (tokens in one burst
at the end): flagged by (a) burst delivery, (b) tiny gaps, (c) a token mismatch with the servers'
counters. ``flagged_share`` is flagged / successful; the recorder refuses a point over the limit."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import server_metrics, traces
from rackbook.core.units import percent

#: (a) Burst delivery is checked only past this many output tokens (prefill-gain asks for 4).
BURST_MIN_TOKENS = 8

#: (a) Burst: decode window (e2el - ttft) under this share of e2el. Shipped CPU recordings: an
#: honest stream decodes 40-99 % of its life, a burst 0.1-1 % (TTFT 1.625 s of 1.628 s).
BURST_DECODE_SHARE = 0.10

#: (b) Gaps below this (s) are two chunks read from one buffer: no engine steps in under 1 us.
CLOCK_RESOLUTION_S = 1e-6

#: (b) Tiny gaps: median gap under this share of the engine's per-token time on the point
#: (:data:`ENGINE_STEP_COUNTERS`, else the median TPOT of non-burst requests). Honest streams
#: sit within 2x of it, the shipped bursts at 1/1000 (0.003 ms against 3.0 ms).
MIN_GAP_SHARE = 0.10

#: (b) Fewest gaps for a request's median gap to say anything.
MIN_GAPS = 2

#: (b) Server histograms (sum, count; s) of the engine's per-token time, tried in order.
ENGINE_STEP_COUNTERS: tuple[tuple[str, str], ...] = (
    ("vllm:inter_token_latency_seconds_sum", "vllm:inter_token_latency_seconds_count"),
    ("vllm:time_per_output_token_seconds_sum", "vllm:time_per_output_token_seconds_count"),
)

#: (c) (server counter, request column) compared over a point's successful requests.
TOKEN_COUNTERS: tuple[tuple[str, str], ...] = (
    ("vllm:generation_tokens", "output_tokens"),
    ("vllm:prompt_tokens", "prompt_tokens"),
)

#: (c) Largest relative client/server token difference over a point (exact on every shipped
#: recording; 0.5 % admits a stray token, never a lost stream). With failed requests only a
#: client count over the servers' flags; a flagged point flags all its successful requests.
TOKEN_MISMATCH_REL = 0.005

#: Fewest valid requests for a point to be a measurement (else "too few valid requests").
MIN_VALID_PER_POINT = 3

#: Largest flagged share of a point's successful requests before the recorder refuses it.
MAX_FLAGGED_SHARE = 0.02

CHECKS = ("burst", "tiny_gaps", "token_mismatch")
#: Columns of :func:`point_validity`.
POINT_COLUMNS = (
    *("point_id", "requests", "successful", "valid", "flagged", *CHECKS),
    *("flagged_share", "enough", "acceptable", "reason"),
)


def _engine_step_s(d: dict[str, float]) -> float:
    """The servers' mean time per output token over a point (s; NaN when absent), from its
    counter increases ``d``."""
    for s, c in ENGINE_STEP_COUNTERS:
        if s in d and c in d and np.isfinite(d[s]) and d[c] > 0:
            return float(d[s] / d[c])
    return float("nan")


def _token_mismatch(d: dict[str, float], requests: pd.DataFrame) -> str:
    """Why the client's token counts over a point's rows ``requests`` disagree with the servers'
    counter increases ``d`` ("" when they agree)."""
    ok = requests[requests["success"].astype(bool)]
    for counter, col in (pair for pair in TOKEN_COUNTERS if pair[0] in d):
        server, client = d[counter], float(ok[col].sum())
        if not np.isfinite(server):
            return f"{counter} went down during the point (server restart?)"
        diff = client - server  # with failed requests (the servers counted their tokens too)
        diff = max(diff, 0.0) if len(ok) < len(requests) else diff  # only a client excess
        if abs(diff) > TOKEN_MISMATCH_REL * max(server, client, 1.0):
            return f"client counted {client:.0f} {col}, servers' {counter} {server:.0f}"
    return ""


def _per_point(
    trace: traces.Trace, pid: np.ndarray, ok: np.ndarray, burst: np.ndarray, tpot: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request row, from its point: the engine step (s: the servers' per-token time, else the
    median TPOT of non-burst successes) and whether, and why, the tokens mismatch the counters."""
    req, sm = trace.requests, trace.extra.get("server_metrics")
    ref, mismatch = np.full(len(req), np.nan), np.zeros(len(req), bool)
    why_mismatch = np.full(len(req), "", object)
    for p in pd.unique(pid):
        rows = np.flatnonzero(pid == p)
        d = {} if sm is None or sm.empty else server_metrics.counter_deltas(sm, p)
        step = _engine_step_s(d)
        if not np.isfinite(step):
            cand = rows[ok[rows] & ~burst[rows] & np.isfinite(tpot[rows])]
            if not cand.size:
                cand = rows[ok[rows] & np.isfinite(tpot[rows])]
            step = float(np.median(tpot[cand])) if cand.size else np.nan
        ref[rows] = step
        why = _token_mismatch(d, req.iloc[rows])
        if why:
            mismatch[rows], why_mismatch[rows] = ok[rows], why
    return ref, mismatch, why_mismatch


def _reason(c: dict[str, Any], i: int, why_mismatch: str) -> str:
    """Why request row ``i`` of the check columns ``c`` is not valid ("" when it is)."""
    if not c["success"][i]:
        return "failed request"
    parts = []
    if c["burst"][i]:
        parts.append(
            f"burst: decode window {percent(c['decode_share'][i])} of e2el for "
            f"{c['output_tokens'][i]} tokens (< {percent(BURST_DECODE_SHARE, 0)})"
        )
    if c["tiny_gaps"][i]:
        med, ref = c["median_gap_s"][i], c["reference_step_s"][i]
        tiny = f"median {med * 1e3:.4g} ms vs engine step {ref * 1e3:.4g} ms"
        if c["below_clock"][i]:
            tiny = f"median {med * 1e6:.3g} µs below the clock's resolution"
        parts.append(f"tiny gaps: {tiny}")
    if c["token_mismatch"][i]:
        parts.append(f"token mismatch: {why_mismatch}")
    return "; ".join(parts)


def check_requests(trace: traces.Trace) -> pd.DataFrame:
    """Per request row (same index): the inputs and outcome of each check, ``flagged``, ``valid``
    and ``reason``."""
    req = trace.requests
    n = len(req)
    ok = req["success"].to_numpy(dtype=bool)
    ttft = req["ttft_s"].to_numpy(dtype=np.float64)
    e2el = req["e2el_s"].to_numpy(dtype=np.float64)
    out_tok = req["output_tokens"].to_numpy(dtype=np.int64)
    pid = req["point_id"].astype(str).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(e2el > 0, (e2el - ttft) / e2el, np.nan)
        tpot = np.where(out_tok > 1, (e2el - ttft) / (out_tok - 1), np.nan)
    burst = ok & (out_tok > BURST_MIN_TOKENS) & (share < BURST_DECODE_SHARE)
    gaps = trace.itl
    if not trace.itl_loaded and trace.path is not None:
        gaps = traces.read_table(trace.path, "itl")
    g, rows = gaps.groupby("request_row"), pd.RangeIndex(n)  # per row: median gap (s), count
    med = g["itl_s"].median().reindex(rows).to_numpy(np.float64)  # NaN without gaps
    ngap = g.size().reindex(rows, fill_value=0).to_numpy()
    ref, mismatch, why_mismatch = _per_point(trace, pid, ok, burst, tpot)
    with np.errstate(invalid="ignore"):
        below_clock = med < CLOCK_RESOLUTION_S
        below_step = np.isfinite(ref) & (med < MIN_GAP_SHARE * ref)
    tiny = ok & (ngap >= MIN_GAPS) & (below_clock | below_step)
    flagged = burst | tiny | mismatch
    c = {
        "point_id": pid,
        "request": np.arange(n),
        "success": ok,
        "decode_share": share,
        "median_gap_s": med,
        "reference_step_s": ref,
        "burst": burst,
        "tiny_gaps": tiny,
        "token_mismatch": mismatch,
        "flagged": flagged,
        "valid": ok & ~flagged,
    }
    notes = {**c, "output_tokens": out_tok, "below_clock": below_clock}
    reasons = [_reason(notes, i, why_mismatch[i]) for i in range(n)]
    return pd.DataFrame({**c, "reason": reasons}, index=req.index)


def point_validity(trace: traces.Trace, checks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per point: :data:`POINT_COLUMNS` (counts, ``flagged_share``, ``enough``, ``acceptable``,
    ``reason``)."""
    c = check_requests(trace) if checks is None else checks
    points = trace.points["point_id"].astype(str)
    rows = [_point_row(p, c[c["point_id"] == p]) for p in points]
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def _point_row(point_id: str, g: pd.DataFrame) -> dict[str, Any]:
    """A :func:`point_validity` row, plus ``flagged_text`` (counts and first reason)."""
    succ, flagged, valid = (int(g[k].sum()) for k in ("success", "flagged", "valid"))
    share = flagged / succ if succ else 0.0
    enough, acceptable = valid >= MIN_VALID_PER_POINT, share <= MAX_FLAGGED_SHARE
    counts = ", ".join(f"{int(g[k].sum())} {k}" for k in CHECKS if g[k].any())
    text = f"{flagged} of {succ} requests flagged ({percent(share)}, at most "
    text += f"{percent(MAX_FLAGGED_SHARE, 0)} allowed: {counts}); first: "
    text += g.loc[g["flagged"], "reason"].iloc[0] if flagged else ""
    why = [text] if flagged else []
    if not enough:
        why.append(f"{valid} valid requests (< {MIN_VALID_PER_POINT})")
    return {
        "point_id": point_id,
        "requests": len(g),
        "successful": succ,
        "valid": valid,
        "flagged": flagged,
        **{k: int(g[k].sum()) for k in CHECKS},
        "flagged_share": share,
        "enough": enough,
        "acceptable": acceptable,
        "reason": "; ".join(why) if not (enough and acceptable) else "",
        "flagged_text": text,
    }


def valid_requests(trace: traces.Trace) -> pd.DataFrame:
    """The trace's request rows that are valid (successful, no check flagged), index kept."""
    return trace.requests[check_requests(trace)["valid"].to_numpy()]


def refusal(trace: traces.Trace, point_id: str) -> str | None:
    """Why the recorder refuses ``point_id`` (over :data:`MAX_FLAGGED_SHARE` flagged), or None."""
    c = check_requests(trace)
    row = _point_row(point_id, c[c["point_id"] == point_id])
    return None if row["acceptable"] else str(row["flagged_text"])


@dataclass(frozen=True)
class Screening:
    """What :func:`valid_trace` left out (flagged requests, dropped points) or kept as accepted."""

    successful: int
    flagged: int
    by_check: dict[str, int]
    dropped_points: tuple[str, ...]
    kept_flagged: int = 0
    accepted_points: tuple[str, ...] = ()

    def text(self) -> str:
        """One sentence for the chapter: what was left out and why (empty when nothing was)."""
        if not self.flagged:
            return ""
        counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in self.by_check.items() if n)
        share = percent(self.flagged / self.successful)  # flagged: some were successful
        out = f"{self.flagged} of {self.successful} successful requests ({share})"
        out += f" were flagged ({counts})"
        if self.kept_flagged:
            out += (
                f"; {self.kept_flagged} of them are KEPT in the figures, fit and headline: their "
                f"points ({', '.join(self.accepted_points)}) were accepted although flagged "
                "(record --accept-invalid), so they time the client as much as the engine"
            )
        if left := self.flagged - self.kept_flagged:
            out += f"; {left} are left out of every figure, fit and headline"
        if self.dropped_points:
            out += (
                f"; {', '.join(self.dropped_points)} kept fewer than {MIN_VALID_PER_POINT} valid "
                "requests: reported, not fitted"
            )
        return out + "."


def valid_trace(trace: traces.Trace) -> tuple[traces.Trace, Screening]:
    """The trace without flagged requests (but in ``accepted_invalid`` points) and points left under
    :data:`MIN_VALID_PER_POINT` valid, and what was left out."""
    c = check_requests(trace)
    pv = point_validity(trace, c)
    accepted = {str(p) for p in (trace.run.get("accepted_invalid") or [])}
    pv = pv[~pv["point_id"].astype(str).isin(accepted)]
    dropped = tuple(str(p) for p in pv.loc[(pv["flagged"] > 0) & ~pv["enough"], "point_id"])
    point = trace.requests["point_id"].astype(str)
    flagged = c["success"].to_numpy(bool) & c["flagged"].to_numpy(bool)
    kept = flagged & point.isin(accepted).to_numpy()
    keep = ~flagged | kept
    keep &= ~point.isin(dropped).to_numpy()
    screening = Screening(
        int(c["success"].sum()),
        int(flagged.sum()),
        {k: int((c["success"] & c[k]).sum()) for k in CHECKS},
        dropped,
        int(kept.sum()),
        tuple(dict.fromkeys(str(p) for p in point[kept])),
    )
    if not keep.all():
        trace = traces.keep_rows(trace, keep, ~trace.points["point_id"].astype(str).isin(dropped))
    return dataclasses.replace(trace, screening=screening), screening
