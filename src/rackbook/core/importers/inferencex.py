"""InferenceX (SemiAnalysis) API rows (``/api/v1/benchmarks``) as a ``published`` trace: total
tok/s per GPU required, latencies in s. AgentX rows (``agentic_traces``) have no ISL/OSL and count
every turn's whole prompt, cached prefix included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rackbook.core import importers, jsonstream, schema
from rackbook.core.importers import points
from rackbook.errors import InputError

FORMAT = "inferencex"

#: The API's ``benchmark_type``s; a row without one (before AgentX) is single-turn.
INFERENCEX_SINGLE_TURN = "single_turn"
INFERENCEX_AGENTIC = "agentic_traces"
INFERENCEX_TYPES = (INFERENCEX_SINGLE_TURN, INFERENCEX_AGENTIC)
#: Speculative methods InferenceX's AgentX recipes run with a synthetic (golden) acceptance
#: length for throughput, real verification only for accuracy (PRs 3036, 3240, 3342-3347:
#: "Throughput uses the golden AL 3.51"): their throughput is of a simulated speculation.
INFERENCEX_AGENTIC_SIMULATED = ("dspark",)
#: Speculative methods a config key names (``dsv41flash-fp4-gb300-vllm-agentic-dspark``).
SPEC_IN_CONFIG_KEY = ("dspark", "mtp", "eagle", "ngram", "medusa")
#: Point columns read as given -> (the API row's key, check), in checking order.
_AS_GIVEN = {
    "hardware": ("hardware", "text"),
    "engine": ("framework", "text"),
    "model": ("model", "text"),
    "precision": ("precision", "text"),
    "concurrency": ("conc", "whole"),
    "date": ("date", "date"),
    "engine_version": ("image", "text?"),
}
#: Point columns -> (the API metric, check): tok/s per GPU, latencies in s.
_METRICS = {
    "tok_s_per_gpu": ("tput_per_gpu", "number"),
    "input_tok_s_per_gpu": ("input_tput_per_gpu", "number?"),
    "output_tok_s_per_gpu": ("output_tput_per_gpu", "number?"),
    "ttft_mean_s": ("mean_ttft", "amount?"),
    "ttft_median_s": ("median_ttft", "amount?"),
    "tpot_mean_s": ("mean_tpot", "amount?"),
    "tpot_median_s": ("median_tpot", "amount?"),
    "e2el_mean_s": ("mean_e2el", "amount?"),
}
_BASIS = {
    False: "as published (metrics.tput_per_gpu: input + output tokens over the prefill and "
    "decode GPUs; in a disaggregated row the split is per prefill and per decode GPU)",
    True: "as published (metrics.tput_per_gpu: every turn's whole prompt, re-read cached prefix "
    "included, plus output, over all the run's GPUs; the input/output split also over all GPUs)",
}
_AGENTIC_NOTE = (
    "AgentX: concurrency {} is the number of simulated users (agent sessions); sub-agent fan-out "
    "may keep more requests than users in flight (InferenceX AgentX recipes allow up to twice "
    "the concurrency in running requests)"
)


def inferencex_speculation(
    spec_method: str | None, config_key: str | None, benchmark_type: str
) -> tuple[str, str | None]:
    """(speculation kind, method) from ``spec_method`` and the config key (ValueError when they
    disagree); AgentX rows of :data:`INFERENCEX_AGENTIC_SIMULATED` are ``simulated``."""
    method = None if spec_method in (None, "", "none") else str(spec_method).lower()
    if config_key:
        named = next((m for m in SPEC_IN_CONFIG_KEY if m in config_key.lower().split("-")), None)
        if method is not None and named is not None and named != method:
            raise ValueError(f"config key {config_key!r} names {named}, spec_method {method}")
        if method is not None and named is None:
            no = f"config key {config_key!r} names no speculative method"
            raise ValueError(f"{no}, spec_method is {method}")
        method = named
    if method is None:
        return "none", None
    if benchmark_type == INFERENCEX_AGENTIC and method in INFERENCEX_AGENTIC_SIMULATED:
        return "simulated", method
    return "real", method


def read_points(path: Path, options: importers.Options) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The API rows' points (a row without ``run_url`` links to ``--source-url``), no skips."""
    return inferencex_points(path, fallback_url=options.source_url), {}


read, summary = points.reader(FORMAT, read_points), points.summary


def inferencex_points(path: str | Path, fallback_url: str | None = None) -> pd.DataFrame:
    """InferenceX API rows (a list, or an object holding one) as a ``published_points`` table."""
    path = Path(path)
    rows = jsonstream.load(path)
    if isinstance(rows, dict):
        lists = [v for v in rows.values() if isinstance(v, list)]
        if len(lists) != 1:
            problem = f"an object must hold exactly one list of rows, found {len(lists)}"
            raise InputError(path, "(top level)", problem)
        rows = lists[0]
    if not isinstance(rows, list):
        problem = f"expected a list of rows, got {type(rows).__name__}"
        raise InputError(path, "(top level)", problem)
    if not rows:
        raise InputError(path, "rows", "no rows")
    return points.frame([_point(path, i, row, fallback_url) for i, row in enumerate(rows)])


def _point(path: Path, i: int, row: Any, fallback_url: str | None) -> dict[str, Any]:
    f = f"rows[{i}]"
    if not isinstance(row, dict):
        raise InputError(path, f, f"must be an object, got {type(row).__name__}")
    p = points.cells(path, f, row, _AS_GIVEN)
    named = {"spec_method": "text?", "benchmark_type": "text?", "config_key": "text?"}
    spec, kind, key = (points.cell(path, f"{f}.{k}", row.get(k), c) for k, c in named.items())
    kind = kind or INFERENCEX_SINGLE_TURN
    if kind not in INFERENCEX_TYPES:
        problem = f"{kind!r}: expected {' or '.join(INFERENCEX_TYPES)}"
        raise InputError(path, f"{f}.benchmark_type", problem)
    agentic = kind == INFERENCEX_AGENTIC
    try:
        spec_kind, spec = inferencex_speculation(spec, key, kind)
    except ValueError as exc:
        raise InputError(path, f"{f}.spec_method", str(exc)) from None
    # AgentX rows replay traces: no ISL/OSL (null in the API)
    sized = {k: (k, "whole?" if agentic else "whole") for k in ("isl", "osl")}
    p |= points.cells(path, f, row, sized)
    url = points.cell(path, f"{f}.run_url", row.get("run_url"), "url?") or fallback_url
    if url is None:
        raise InputError(path, f"{f}.run_url", "missing (and no --source-url to fall back on)")
    disagg = row.get("disagg")
    if disagg is not None and not isinstance(disagg, bool):
        raise InputError(path, f"{f}.disagg", f"must be true or false, got {disagg!r}")
    gpus, prefill, decode, notes = _gpu_counts(path, f, row, bool(disagg))
    if agentic:
        notes.append(_AGENTIC_NOTE.format(p["concurrency"]))
    lengths = "agentic" if agentic else f"{p['isl']}-{p['osl']}"
    named_by = "-".join(p[k] for k in ("hardware", "engine", "model", "precision"))
    return {
        **p,
        "point_id": f"{i:04d}-{named_by}-{lengths}-c{p['concurrency']}",
        "source_row": i,
        "submitter": "SemiAnalysis InferenceX",
        "system": f"{p['hardware']} {p['engine']}",
        "gpus": gpus,
        "prefill_gpus": prefill,
        "decode_gpus": decode,
        "serving": None if disagg is None else schema.SERVING[int(disagg)],
        "speculative": spec,
        "per_gpu_basis": _BASIS[agentic],
        "tokens_counted": "input incl. cached+output" if agentic else "input+output",
        "gpus_counted": "deployment",
        "speculation_kind": spec_kind,
        "workload": "agentic trace" if agentic else "fixed lengths",
        **_metric_columns(path, f, row),
        "url": url,
        "notes": "; ".join(notes) or None,
    }


def _gpu_counts(
    path: Path, f: str, row: dict[str, Any], disagg: bool
) -> tuple[int | None, int | None, int | None, list[str]]:
    """(total, prefill, decode GPUs, notes); an aggregated row whose counts disagree: a note."""
    p, d, tp = (
        points.cell(path, f"{f}.{k}", row.get(k), "whole?")
        for k in ("num_prefill_gpu", "num_decode_gpu", "decode_tp")
    )
    if disagg:
        return (p + d if p is not None and d is not None else None), p, d, []
    if p is not None and p == d and (tp is None or tp == p):
        return p, None, None, []
    if p is None and d is None:
        return None, None, None, []
    note = f"recorded GPU counts (prefill {p}, decode {d}) disagree with an aggregated run of TP "
    return None, None, None, [f"{note}{tp}: total left empty"]


def _metric_columns(path: Path, f: str, row: dict[str, Any]) -> dict[str, Any]:
    """Row ``f``'s rates (per user: median, else AgentX's P90) and latencies (s)."""
    m = f"{f}.metrics"
    metrics = points.mapping(path, m, row.get("metrics"))
    stat = "median"
    if metrics.get("median_intvty") is None and metrics.get("p90_intvty") is not None:
        stat = "p90"
    per_user = points.cell(path, f"{m}.{stat}_intvty", metrics.get(f"{stat}_intvty"), "number?")
    stated = {"latency_statistic": stat, "tok_s_per_user": per_user}
    return points.cells(path, m, metrics, _METRICS) | stated
