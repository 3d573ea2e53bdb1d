"""One window of a trace under other tools' names and definitions (vLLM, AIPerf, guidellm,
InferenceX), side by side: the book's published-metrics page prints it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rackbook.core import traces
from rackbook.core.metrics import vllm_metrics

#: The same trace under other tools' names and definitions (each tool's own documentation:
#: vLLM's benchmarks/serve.py, AIPerf, guidellm, InferenceX): (quantity, tool, the tool's name,
#: unit, which figure of :func:`translate` it is, definition).
# fmt: off
CROSS_TOOL: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("time per output token", "vLLM", "mean_tpot_ms", "ms", "tpot",
     "mean over requests of (e2el - ttft) / (output tokens - 1)"),
    ("time per output token", "AIPerf", "inter_token_latency", "ms", "tpot",
     "same as vLLM's TPOT: (e2el - ttft) / (output tokens - 1) per request"),
    ("time per output token", "guidellm", "inter_token_latency", "ms", "tpot",
     "same as vLLM's TPOT"),
    ("time per output token", "guidellm", "time_per_output_token", "ms", "e2el/token",
     "includes the first token: e2el / output tokens per request"),
    ("gap between chunks", "vLLM", "mean_itl_ms", "ms", "itl",
     "every gap between streamed chunks, pooled over requests"),
    ("gap between chunks", "AIPerf", "inter_chunk_latency", "ms", "itl",
     "gaps between streamed chunks (vLLM's ITL)"),
    ("throughput per GPU", "InferenceX", "tput_per_gpu", "tok/s/GPU", "total/GPU",
     "total_token_throughput (input + output) / GPUs"),
    ("throughput per GPU", "vLLM", "output_throughput / GPUs", "tok/s/GPU", "output/GPU",
     "output tokens only / duration / GPUs"),
    ("interactivity", "InferenceX", "interactivity", "tok/s/user", "1000/tpot",
     "1000 / TPOT_ms: tokens per second one user sees"),
)
# fmt: on


def translate(trace: traces.Trace, gpus: int = 1, point_id: str | None = None) -> pd.DataFrame:
    """One window of a trace (``point_id``, default: the first point) under vLLM's, AIPerf's,
    guidellm's and InferenceX's definitions, side by side. ``gpus`` divides per-GPU figures."""
    pid = point_id or str(trace.points["point_id"].iloc[0])
    mask = (trace.requests["point_id"] == pid).to_numpy()
    req = trace.requests[mask]
    dur = float(trace.points.loc[trace.points["point_id"] == pid, "duration_s"].iloc[0])
    ok_mask = mask & trace.requests["success"].to_numpy(dtype=bool)
    gaps_s = trace.itl["itl_s"].to_numpy(np.float64)[ok_mask[trace.itl["request_row"].to_numpy()]]
    m = vllm_metrics(req, gaps_s, dur).to_dict()
    ok = req[req["success"] & (req["output_tokens"] > 0)]
    per_token = ok["e2el_s"].to_numpy(np.float64) / ok["output_tokens"].to_numpy(np.int64)
    gdl_tpot_ms = float(np.mean(per_token) * 1000) if len(ok) else 0.0
    tpot = m["mean_tpot_ms"]
    figures = {
        "tpot": tpot,
        "e2el/token": gdl_tpot_ms,
        "itl": m["mean_itl_ms"],
        "total/GPU": m["total_token_throughput"] / gpus,
        "output/GPU": m["output_throughput"] / gpus,
        "1000/tpot": 1000 / tpot if tpot > 0 else float("nan"),
    }
    rows = [(*r[:3], figures[r[4]], r[3], r[5]) for r in CROSS_TOOL]
    return pd.DataFrame(rows, columns=["quantity", "tool", "name", "value", "unit", "definition"])
