"""Serving metrics computed from trace rows, defined as ``vllm bench serve`` defines them.

Definitions (vLLM ``vllm/benchmarks/serve.py``, ``calculate_metrics``), over *successful*
requests of a measured window of length ``duration`` (seconds):

- ``completed`` / ``failed``: requests without / with an error.
- ``total_input_tokens``: sum of prompt tokens; ``total_output_tokens``: sum of output tokens.
- ``request_throughput`` = completed / duration (req/s);
  ``output_throughput`` = total_output_tokens / duration (tok/s);
  ``total_token_throughput`` = (total_input_tokens + total_output_tokens) / duration (tok/s).
- ``ttft_ms``: time to first token. ``e2el_ms``: end-to-end latency.
- ``tpot_ms``: per request (e2el - ttft) / (output_tokens - 1), requests with > 1 output token.
- ``itl_ms``: every gap between consecutive streamed chunks, pooled over requests.
- ``mean_``/``median_``/``std_`` (population, ``np.std``)/``pNN_`` (``np.percentile``, linear)
  of each, in milliseconds; an empty set gives 0, as in vLLM.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np
import pandas as pd

from rackbook import traces

PERCENTILES: tuple[float, ...] = (90.0, 99.0)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
SCENARIO_KEYS = ("engine", "config", "batch_size", "concurrency", "context_tokens", "num_gpus")


def _stats(name: str, values_s: np.ndarray, percentiles: tuple[float, ...]) -> dict[str, float]:
    v = values_s if values_s.size else np.zeros(1)
    out = {
        f"mean_{name}_ms": float(np.mean(v) * 1000),
        f"median_{name}_ms": float(np.median(v) * 1000),
        f"std_{name}_ms": float(np.std(v) * 1000),
    }
    for p in percentiles:
        word = str(int(p)) if int(p) == p else str(p)
        out[f"p{word}_{name}_ms"] = float(np.percentile(v, p) * 1000)
    return out


def tpot_s(ttft_s: np.ndarray, e2el_s: np.ndarray, output_tokens: np.ndarray) -> np.ndarray:
    """Per-request TPOT in seconds for requests with more than one output token (vLLM)."""
    m = output_tokens > 1
    return (e2el_s[m] - ttft_s[m]) / (output_tokens[m] - 1)


def vllm_metrics(
    requests: pd.DataFrame,
    itl_s: np.ndarray,
    duration_s: float,
    percentiles: tuple[float, ...] = PERCENTILES,
) -> dict[str, Any]:
    """vLLM's metrics for one window: ``requests`` rows, pooled gaps ``itl_s`` of its successful
    requests (seconds) and the window length ``duration_s`` (seconds)."""
    ok = requests["success"].to_numpy(dtype=bool)
    ttft = requests["ttft_s"].to_numpy(dtype=np.float64)[ok]
    e2el = requests["e2el_s"].to_numpy(dtype=np.float64)[ok]
    out_tok = requests["output_tokens"].to_numpy(dtype=np.int64)[ok]
    in_tok = requests["prompt_tokens"].to_numpy(dtype=np.int64)[ok]
    completed = int(ok.sum())
    total_in, total_out = int(in_tok.sum()), int(out_tok.sum())
    res: dict[str, Any] = {
        "duration": float(duration_s),
        "completed": completed,
        "failed": int((~ok).sum()),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": completed / duration_s,
        "output_throughput": total_out / duration_s,
        "total_token_throughput": (total_in + total_out) / duration_s,
    }
    res |= _stats("ttft", ttft, percentiles)
    res |= _stats("tpot", tpot_s(ttft, e2el, out_tok), percentiles)
    res |= _stats("itl", np.asarray(itl_s, dtype=np.float64), percentiles)
    res |= _stats("e2el", e2el, percentiles)
    return res


def _pooled_itl(trace: traces.Trace, rows_mask: np.ndarray) -> np.ndarray:
    """Gaps (s) of the requests selected by ``rows_mask`` (boolean over request rows)."""
    if trace.itl.empty:
        return np.zeros(0)
    rr = trace.itl["request_row"].to_numpy()
    return trace.itl["itl_s"].to_numpy(dtype=np.float64)[rows_mask[rr]]


def summarize(trace: traces.Trace, percentiles: tuple[float, ...] = PERCENTILES) -> dict[str, Any]:
    """Metrics of a whole trace plus one entry per point.

    The top level treats the measured windows as one: its ``duration`` is the sum of the points'
    durations. For a single-point trace it equals what ``vllm bench serve`` reports.
    """
    req = trace.requests
    ok = req["success"].to_numpy(dtype=bool)
    total = vllm_metrics(
        req, _pooled_itl(trace, ok), float(trace.points["duration_s"].sum()), percentiles
    )
    points = []
    pid = req["point_id"].to_numpy()
    for _, p in trace.points.iterrows():
        mask = pid == p["point_id"]
        m = vllm_metrics(
            req[mask], _pooled_itl(trace, mask & ok), float(p["duration_s"]), percentiles
        )
        keys = {k: (None if pd.isna(p[k]) else p[k]) for k in SCENARIO_KEYS if k in p}
        keys = {k: (int(v) if isinstance(v, (np.integer,)) else v) for k, v in keys.items()}
        points.append({"point_id": p["point_id"], **keys, **m})
    return {"trace_id": trace.trace_id, "kind": trace.kind, **total, "points": points}


def format_summary(s: dict[str, Any]) -> str:
    """Human-readable table of a summary, in vLLM's wording."""
    lines = [f"trace {s['trace_id']} ({s['kind']}), {len(s['points'])} point(s)"]
    rows = [
        ("Successful requests", "completed", "{:d}"),
        ("Failed requests", "failed", "{:d}"),
        ("Benchmark duration (s)", "duration", "{:.2f}"),
        ("Total input tokens", "total_input_tokens", "{:d}"),
        ("Total generated tokens", "total_output_tokens", "{:d}"),
        ("Request throughput (req/s)", "request_throughput", "{:.2f}"),
        ("Output token throughput (tok/s)", "output_throughput", "{:.2f}"),
        ("Total token throughput (tok/s)", "total_token_throughput", "{:.2f}"),
    ]
    for m in LATENCY_METRICS:
        rows += [
            (f"Mean {m.upper()} (ms)", f"mean_{m}_ms", "{:.2f}"),
            (f"P99 {m.upper()} (ms)", f"p99_{m}_ms", "{:.2f}"),
        ]
    lines += [f"  {label:<36} {fmt.format(s[key])}" for label, key, fmt in rows]
    return "\n".join(lines)


def cli_summarize(args: argparse.Namespace) -> int:
    """``rackbook summarize TRACE_DIR [--json]``: the JSON object is the last thing printed."""
    s = summarize(traces.read_trace(args.trace))
    if args.json:
        print(json.dumps(s, allow_nan=False, default=str))
    else:
        print(format_summary(s))
    return 0


#: The same trace under other tools' names and definitions (reference sheet, "Metric definitions
#: that differ between tools"): (quantity, tool, the tool's name, unit, definition).
CROSS_TOOL: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "time per output token",
        "vLLM",
        "mean_tpot_ms",
        "ms",
        "mean over requests of (e2el - ttft) / (output tokens - 1)",
    ),
    (
        "time per output token",
        "AIPerf",
        "inter_token_latency",
        "ms",
        "same as vLLM's TPOT: (e2el - ttft) / (output tokens - 1) per request",
    ),
    ("time per output token", "guidellm", "inter_token_latency", "ms", "same as vLLM's TPOT"),
    (
        "time per output token",
        "guidellm",
        "time_per_output_token",
        "ms",
        "includes the first token: e2el / output tokens per request",
    ),
    (
        "gap between chunks",
        "vLLM",
        "mean_itl_ms",
        "ms",
        "every gap between streamed chunks, pooled over requests",
    ),
    (
        "gap between chunks",
        "AIPerf",
        "inter_chunk_latency",
        "ms",
        "gaps between streamed chunks (vLLM's ITL)",
    ),
    (
        "throughput per GPU",
        "InferenceX",
        "tput_per_gpu",
        "tok/s/GPU",
        "total_token_throughput (input + output) / GPUs",
    ),
    (
        "throughput per GPU",
        "vLLM",
        "output_throughput / GPUs",
        "tok/s/GPU",
        "output tokens only / duration / GPUs",
    ),
    (
        "interactivity",
        "InferenceX",
        "interactivity",
        "tok/s/user",
        "1000 / TPOT_ms: tokens per second one user sees",
    ),
)


def translate(trace: traces.Trace, gpus: int = 1, point_id: str | None = None) -> pd.DataFrame:
    """One window of a trace (``point_id``, default: the first point) under vLLM's, AIPerf's,
    guidellm's and InferenceX's definitions, side by side. ``gpus`` divides per-GPU figures."""
    pid = point_id or str(trace.points["point_id"].iloc[0])
    mask = (trace.requests["point_id"] == pid).to_numpy()
    req = trace.requests[mask]
    dur = float(trace.points.loc[trace.points["point_id"] == pid, "duration_s"].iloc[0])
    ok_mask = mask & trace.requests["success"].to_numpy(dtype=bool)
    m = vllm_metrics(req, _pooled_itl(trace, ok_mask), dur)
    ok = req[req["success"]]
    e2el = ok["e2el_s"].to_numpy(np.float64)
    n = ok["output_tokens"].to_numpy(np.int64)
    gdl_tpot_ms = float(np.mean(e2el[n > 0] / n[n > 0]) * 1000) if (n > 0).any() else 0.0
    values = {
        ("vLLM", "mean_tpot_ms"): m["mean_tpot_ms"],
        ("AIPerf", "inter_token_latency"): m["mean_tpot_ms"],
        ("guidellm", "inter_token_latency"): m["mean_tpot_ms"],
        ("guidellm", "time_per_output_token"): gdl_tpot_ms,
        ("vLLM", "mean_itl_ms"): m["mean_itl_ms"],
        ("AIPerf", "inter_chunk_latency"): m["mean_itl_ms"],
        ("InferenceX", "tput_per_gpu"): m["total_token_throughput"] / gpus,
        ("vLLM", "output_throughput / GPUs"): m["output_throughput"] / gpus,
        ("InferenceX", "interactivity"): (
            1000 / m["mean_tpot_ms"] if m["mean_tpot_ms"] > 0 else float("nan")
        ),
    }
    rows = [
        {
            "quantity": q,
            "tool": tool,
            "name": name,
            "value": values[(tool, name)],
            "unit": unit,
            "definition": doc,
        }
        for q, tool, name, unit, doc in CROSS_TOOL
    ]
    return pd.DataFrame(rows)
