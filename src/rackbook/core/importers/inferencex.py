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
#: Point columns -> the API metric each is read from (tok/s per GPU; latencies in s, >= 0).
_RATES = {
    "input_tok_s_per_gpu": "input_tput_per_gpu",
    "output_tok_s_per_gpu": "output_tput_per_gpu",
}
_LATENCY = {
    "ttft_mean_s": "mean_ttft",
    "ttft_median_s": "median_ttft",
    "tpot_mean_s": "mean_tpot",
    "tpot_median_s": "median_tpot",
    "e2el_mean_s": "mean_e2el",
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
            raise ValueError(
                f"config key {config_key!r} names no speculative method, spec_method is {method}"
            )
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


def inferencex_points(
    path: str | Path, data: Any = None, fallback_url: str | None = None
) -> pd.DataFrame:
    """InferenceX API rows (a list, or an object holding one) as a ``published_points`` table."""
    path = Path(path)
    rows = jsonstream.load(path) if data is None else data
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
    named = ("hardware", "framework", "model", "precision", "spec_method", "benchmark_type")
    hardware, framework, model, precision, spec, kind = (
        points.text(path, f"{f}.{k}", row.get(k), optional=k in named[4:]) for k in named
    )
    kind = kind or INFERENCEX_SINGLE_TURN
    if kind not in INFERENCEX_TYPES:
        raise InputError(
            path, f"{f}.benchmark_type", f"{kind!r}: expected {' or '.join(INFERENCEX_TYPES)}"
        )
    agentic = kind == INFERENCEX_AGENTIC
    key = points.text(path, f"{f}.config_key", row.get("config_key"), optional=True)
    try:
        spec_kind, spec = inferencex_speculation(spec, key, kind)
    except ValueError as exc:
        raise InputError(path, f"{f}.spec_method", str(exc)) from None
    # AgentX rows replay traces: no ISL/OSL (null in the API)
    isl, osl = (
        points.optional_int(path, f"{f}.{k}", row.get(k), required=not agentic)
        for k in ("isl", "osl")
    )
    conc = points.whole(path, f"{f}.conc", row.get("conc"))
    date = points.text(path, f"{f}.date", row.get("date"), shape="date")
    url = points.text(path, f"{f}.run_url", row.get("run_url"), optional=True, shape="url")
    url = url or fallback_url
    if url is None:
        raise InputError(path, f"{f}.run_url", "missing (and no --source-url to fall back on)")
    disagg = row.get("disagg")
    if disagg is not None and not isinstance(disagg, bool):
        raise InputError(path, f"{f}.disagg", f"must be true or false, got {disagg!r}")
    gpus, prefill, decode, notes = _gpu_counts(path, f, row, bool(disagg))
    if agentic:
        notes.append(_AGENTIC_NOTE.format(conc))
    lengths = "agentic" if agentic else f"{isl}-{osl}"
    return {
        "point_id": f"{i:04d}-{hardware}-{framework}-{model}-{precision}-{lengths}-c{conc}",
        "source_row": i,
        "submitter": "SemiAnalysis InferenceX",
        "system": f"{hardware} {framework}",
        "hardware": hardware,
        "gpus": gpus,
        "prefill_gpus": prefill,
        "decode_gpus": decode,
        "serving": None if disagg is None else schema.SERVING[int(disagg)],
        "model": model,
        "precision": precision,
        "engine": framework,
        "engine_version": points.text(path, f"{f}.image", row.get("image"), optional=True),
        "speculative": spec,
        "isl": isl,
        "osl": osl,
        "concurrency": conc,
        "per_gpu_basis": _BASIS[agentic],
        "tokens_counted": "input incl. cached+output" if agentic else "input+output",
        "gpus_counted": "deployment",
        "speculation_kind": spec_kind,
        "workload": "agentic trace" if agentic else "fixed lengths",
        **_metric_columns(path, f, row),
        "date": date,
        "url": url,
        "notes": "; ".join(notes) or None,
    }


def _gpu_counts(
    path: Path, f: str, row: dict[str, Any], disagg: bool
) -> tuple[int | None, int | None, int | None, list[str]]:
    """(total, prefill, decode GPUs, notes); an aggregated row whose counts disagree: a note."""
    p, d, tp = (
        points.optional_int(path, f"{f}.{k}", row.get(k), required=False)
        for k in ("num_prefill_gpu", "num_decode_gpu", "decode_tp")
    )
    if disagg:
        return (p + d if p is not None and d is not None else None), p, d, []
    if p is not None and p == d and (tp is None or tp == p):
        return p, None, None, []
    if p is None and d is None:
        return None, None, None, []
    note = (
        f"recorded GPU counts (prefill {p}, decode {d}) disagree with an aggregated run "
        f"of TP {tp}: total left empty"
    )
    return None, None, None, [note]


def _metric_columns(path: Path, f: str, row: dict[str, Any]) -> dict[str, Any]:
    """Row ``f``'s rates (per user: median, else AgentX's P90) and latencies (s)."""
    m = f"{f}.metrics"
    metrics = points.mapping(path, m, row.get("metrics"))
    stat = "median"
    if metrics.get("median_intvty") is None and metrics.get("p90_intvty") is not None:
        stat = "p90"
    return {
        "tok_s_per_gpu": points.number(path, f"{m}.tput_per_gpu", metrics.get("tput_per_gpu")),
        "latency_statistic": stat,
        **{c: points.optional_number(path, m, metrics, k) for c, k in _RATES.items()},
        "tok_s_per_user": points.optional_number(path, m, metrics, f"{stat}_intvty"),
        **{
            c: points.optional_number(path, m, metrics, k, positive=False)
            for c, k in _LATENCY.items()
        },
    }
