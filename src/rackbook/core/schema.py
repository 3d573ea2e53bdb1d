"""The trace format, in one place.

A folder: ``run.json`` (:data:`RUN_FIELDS`), ``requests``, ``itl``, ``points`` and extra Parquet
tables (:data:`TABLES`); seconds (float64) unless a column says otherwise, tokens as integers."""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rackbook import limits
from rackbook.core import basis
from rackbook.errors import InputError

if TYPE_CHECKING:  # the module stays pure definitions: it never imports pandas itself
    import pandas as pd

SCHEMA_VERSION = 1
KINDS = ("recorded", "published", "synthetic")


@dataclass(frozen=True)
class Column:
    """One column of a trace table: name, Arrow type name, nullability, unit and meaning."""

    name: str
    dtype: str  # "string" | "int64" | "float64" | "bool"
    nullable: bool
    unit: str
    doc: str


REQUESTS: tuple[Column, ...] = (
    Column("request_id", "string", False, "-", "unique id of the request within the trace"),
    Column(
        "point_id", "string", False, "-", "sweep point (measured window) the request belongs to"
    ),
    Column("engine", "string", False, "-", "engine label, e.g. vllm-serve, vllm-offline"),
    Column("config", "string", False, "-", "server configuration label (A, B, baseline, ...)"),
    Column("batch_size", "int64", True, "requests", "fixed batch size per decode rank (offline)"),
    Column("concurrency", "int64", True, "requests", "client max concurrency (online engines)"),
    Column("decode_ranks", "int64", True, "ranks", "decode ranks sharing the batch; empty: 1"),
    Column("context_tokens", "int64", True, "tokens", "context length the scenario targets"),
    Column("start_time_s", "float64", True, "s", "request start on the trace clock"),
    Column("ttft_s", "float64", False, "s", "time to first token; 0 for failed requests"),
    Column("e2el_s", "float64", False, "s", "end-to-end latency; 0 for failed requests"),
    Column("prompt_tokens", "int64", False, "tokens", "prompt length"),
    Column("cached_prompt_tokens", "int64", True, "tokens", "prompt tokens served from cache"),
    Column("output_tokens", "int64", False, "tokens", "generated tokens (0 for failures)"),
    Column("success", "bool", False, "-", "request completed without error"),
    Column("error", "string", False, "-", "error text; empty when successful"),
)

ITL: tuple[Column, ...] = (
    Column("request_row", "int64", False, "-", "row number of the request in requests.parquet"),
    Column("itl_s", "float64", False, "s", "gap between consecutive streamed chunks"),
)

POINTS: tuple[Column, ...] = (
    Column("point_id", "string", False, "-", "sweep point id"),
    Column("engine", "string", False, "-", "engine label"),
    Column("config", "string", False, "-", "configuration label"),
    Column("batch_size", "int64", True, "requests", "fixed batch size per decode rank"),
    Column("concurrency", "int64", True, "requests", "client max concurrency (all ranks)"),
    Column(
        "decode_ranks", "int64", True, "ranks", "decode ranks (DEP size) sharing the load; empty: 1"
    ),
    Column("context_tokens", "int64", True, "tokens", "target context length"),
    Column("window_start_s", "float64", True, "s", "start of the measured window"),
    Column("duration_s", "float64", False, "s", "length of the measured window (vLLM duration)"),
    Column("num_gpus", "int64", True, "GPUs", "accelerators serving this point, if any"),
    Column("source", "string", True, "-", "raw artifact the point was imported from"),
)

#: Optional tables a trace may carry, with their columns (validated when present).
EXTRA_TABLES: dict[str, tuple[Column, ...]] = {
    "server_metrics": (
        Column("point_id", "string", False, "-", "sweep point"),
        Column("server", "string", False, "-", "server URL or replica label"),
        Column("phase", "string", False, "-", "before | after the point"),
        Column("metric", "string", False, "-", "Prometheus metric name"),
        Column("labels", "string", True, "-", "Prometheus labels, as text"),
        Column("value", "float64", False, "-", "counter or gauge value"),
    ),
    "expert_load": (
        Column("window", "int64", False, "-", "load window index"),
        Column("layer", "int64", False, "-", "MoE layer index"),
        Column("expert", "int64", False, "-", "logical expert index"),
        Column("tokens", "float64", False, "tokens", "tokens routed to the expert"),
    ),
    "eplb_log": (
        Column("step", "int64", True, "-", "engine step of the log line"),
        Column("avg_tokens", "float64", False, "tokens", "mean tokens per EP rank"),
        Column("max_tokens", "float64", False, "tokens", "max tokens on one EP rank"),
        Column("balancedness", "float64", False, "-", "vLLM's logged balancedness"),
    ),
    # Published measurements (kind `published` traces only; checks in check_points below).
    "published_points": (
        Column("point_id", "string", False, "-", "unique id of the published point in the trace"),
        Column("source_row", "int64", False, "-", "row index in the source file (0-based)"),
        Column("submitter", "string", True, "-", "who published it (MLPerf Organization, ...)"),
        Column("system", "string", True, "-", "system or configuration name as published"),
        Column("category", "string", True, "-", "MLPerf division and availability"),
        Column("hardware", "string", False, "-", "accelerator, e.g. gb300, NVIDIA B300-SXM-270GB"),
        Column("gpus", "int64", True, "GPUs", "accelerators in total; empty when unknown"),
        Column("prefill_gpus", "int64", True, "GPUs", "prefill pool of a disaggregated run"),
        Column("decode_gpus", "int64", True, "GPUs", "decode pool of a disaggregated run"),
        Column("serving", "string", True, "-", "aggregated | disaggregated; empty if unknown"),
        Column("model", "string", False, "-", "model as the source names it"),
        Column("precision", "string", True, "-", "weight precision as the source names it"),
        Column("engine", "string", True, "-", "serving engine or framework"),
        Column("engine_version", "string", True, "-", "engine version or image"),
        Column("speculative", "string", True, "-", "speculative decoding method; none"),
        Column("scenario", "string", True, "-", "MLPerf scenario or cookbook strategy"),
        Column("isl", "int64", True, "tokens", "input sequence length of the workload"),
        Column("osl", "int64", True, "tokens", "output sequence length of the workload"),
        Column("concurrency", "int64", True, "requests", "client concurrency"),
        Column("tok_s_total", "float64", True, "tok/s", "system total throughput, as published"),
        Column("tok_s_per_gpu", "float64", False, "tok/s/GPU", "throughput per accelerator"),
        Column("per_gpu_basis", "string", False, "-", "as published, or how it was computed"),
        Column("tokens_counted", "string", False, "-", "tokens tok_s_per_gpu counts (core.basis)"),
        Column("gpus_counted", "string", False, "-", "GPUs tok_s_per_gpu is over (core.basis)"),
        Column("speculation_kind", "string", False, "-", "none | real | real or none | simulated"),
        Column("workload", "string", False, "-", "workload kind (core.basis.WORKLOADS)"),
        Column("latency_statistic", "string", True, "-", "mean | median: of tok_s_per_user"),
        Column("input_tok_s_per_gpu", "float64", True, "tok/s/GPU", "input (prefill) part"),
        Column("output_tok_s_per_gpu", "float64", True, "tok/s/GPU", "output (decode) part"),
        Column("tok_s_per_user", "float64", True, "tok/s", "interactivity: 1 / TPOT of a user"),
        Column("ttft_mean_s", "float64", True, "s", "mean time to first token"),
        Column("ttft_median_s", "float64", True, "s", "median time to first token"),
        Column("tpot_mean_s", "float64", True, "s", "mean time per output token"),
        Column("tpot_median_s", "float64", True, "s", "median time per output token"),
        Column("e2el_mean_s", "float64", True, "s", "mean end-to-end latency"),
        Column("date", "string", True, "-", "date of the measurement, YYYY-MM-DD"),
        Column("url", "string", False, "-", "run link, or the source file's URL"),
        Column("notes", "string", True, "-", "what the point can and cannot show"),
    ),
}

TABLES: dict[str, tuple[Column, ...]] = {
    "requests": REQUESTS,
    "itl": ITL,
    "points": POINTS,
    **EXTRA_TABLES,
}

#: The calibration folder in a sentence, for the book's reference page.
CALIBRATION_DOC = (
    "A calibration is a folder of its own: `run.json` (provenance: device, GPU, nvidia-smi line, "
    "versions, data sheet, model shapes, timing method, command) and `kernels.parquet`, one row "
    "per timed kernel shape. `rackbook calibrate [--device cuda|cpu] -o DIR` writes one (kind "
    "`recorded`); the shipped default, `data/calibration/h200-reference/`, is a reference H200 "
    "measurement converted (kind `published`). A row's rate is `bytes / seconds` or "
    "`flops / seconds`; its share of the data sheet divides by `spec`."
)

#: Kernel table of a calibration folder (:data:`CALIBRATION_DOC`), read by physics.attainable.
# fmt: off
CALIBRATION_KERNELS: tuple[Column, ...] = (
    Column("family", "string", False, "-",
           "hbm_read | hbm_copy | dense_gemm | expert_gemm | indexer_scan | sparse_attention"),
    Column("dtype", "string", False, "-", "bf16 | fp8 | fp32; empty where no dtype applies"),
    Column("size", "int64", False, "-",
           "the swept size: bytes (hbm), n of n x n x n (dense), tokens routed to the expert "
           "(expert), keys scanned (indexer), rows in the pool (attention)"),
    Column("seconds", "float64", False, "s", "time of one call (best batch / calls)"),
    Column("bytes", "float64", True, "B", "bytes the call must move at least (null: not counted)"),
    Column("flops", "float64", True, "FLOP", "floating-point operations of the call (null: none)"),
)
# fmt: on

#: run.json fields of a calibration folder: name -> (required, meaning)
CALIBRATION_RUN_FIELDS: dict[str, tuple[bool, str]] = {
    "schema_version": (True, f"format version (currently {SCHEMA_VERSION})"),
    "content": (True, "always 'calibration'"),
    "kind": (True, "recorded (rackbook calibrate) | published (someone else's measurement)"),
    "created": (True, "creation time, ISO 8601 UTC"),
    "project_commit": (True, "git commit of this project that wrote the folder"),
    "device": (True, "cuda | cpu"),
    "gpu": (True, "GPU name as the driver reports it (CPU model for --device cpu)"),
    "hardware": (True, "nvidia-smi line: name, driver, SM and memory clocks, power limit, memory"),
    "versions": (True, "torch, CUDA, driver"),
    "spec": (
        False,
        "the data sheet: hbm_TBps, bf16_dense_TFLOPs, fp8_dense_TFLOPs and the hardware "
        "catalog id (catalog) of the GPU matched by name (null: a CPU, or a GPU not in "
        "data/hardware.yaml)",
    ),
    "shapes": (True, "the model shapes timed (hidden size, expert sizes, heads, top-k)"),
    "method": (True, "timing method: warm-ups, batches, CUDA graphs, what bytes/FLOPs count"),
    "commands": (True, "the exact command that wrote the folder"),
    "source": (False, "for kind published: where the measurement comes from"),
    "notes": (False, "free text: what the calibration can and cannot show"),
}

#: run.json fields: name -> (required, meaning)
RUN_FIELDS: dict[str, tuple[bool, str]] = {
    "schema_version": (True, f"trace format version (currently {SCHEMA_VERSION})"),
    "trace_id": (True, "short unique id of the trace"),
    "kind": (True, "recorded | published | synthetic"),
    "created": (True, "creation time, ISO 8601 UTC"),
    "project_commit": (True, "git commit of this project that wrote the trace"),
    "hardware": (True, "inventory: cpu model, cores, memory, GPUs (nvidia-smi), host count"),
    "engine": (True, "engine name and version, e.g. {name: vllm, version: 0.32.0}"),
    "versions": (False, "versions of other software involved"),
    "commands": (True, "exact server and client commands, in order (secrets redacted)"),
    "parameters": (True, "scenario parameters"),
    "environment": (False, "environment variables that change behaviour (secrets redacted)"),
    "generator": (False, "for synthetic traces: generator name and seed (then required)"),
    "clock": (False, "what start_time_s is measured against"),
    "duty_cycle": (False, "time inside measured windows over wall time after server start"),
    "notes": (False, "free text: what the trace can and cannot show"),
    "validity": (
        False,
        "per point: requests, successful, failed, failed_share, valid, flagged, flagged_share, "
        "reason (validity)",
    ),
    "accepted_invalid": (False, "points kept although flagged (record --accept-invalid)"),
    "server": (
        False,
        "recorded against running endpoints: their URLs, served model, context limit, vLLM "
        "version, and the GPUs behind them as declared by RACKBOOK_SERVER_GPUS (not probed)",
    ),
}


# ----------------------------------------------------------------------------- value rules

#: An http(s) link, as a published point's ``url`` must be.
URL = re.compile(r"^https?://\S+$")
SERVING = ("aggregated", "disaggregated")
#: Most tok/s one GPU can be said to serve: 100x InferenceX's best rows (10^4-10^5); past it
#: is a unit or a typo.
MAX_TOK_S_PER_GPU = 1e7
PER_GPU_RATES = ("tok_s_per_gpu", "input_tok_s_per_gpu", "output_tok_s_per_gpu", "tok_s_per_user")
LATENCIES = ("ttft_mean_s", "ttft_median_s", "tpot_mean_s", "tpot_median_s", "e2el_mean_s")

#: A rule: (the given values it refuses, what they must be).
Rule = tuple["Callable[[pd.Series], pd.Series]", str]


def within(low: float, high: float = math.inf, above: bool = False) -> Rule:
    """Numbers from ``low`` (``above``: more than it) to ``high``, in the column's unit."""
    if above:
        wanted = f"> {low:,.12g}" + ("" if high == math.inf else f" and at most {high:,.12g}")
    else:
        wanted = f">= {low:,.12g}" if high == math.inf else f"from {low:,.12g} to {high:,.12g}"

    def bad(v: pd.Series) -> pd.Series:
        x = v.astype("Float64")
        return ((x <= low) if above else (x < low)) | (x > high)

    return bad, wanted


def one_of(allowed: Iterable[str]) -> Rule:
    """Texts from ``allowed``."""
    listed = tuple(allowed)
    return (lambda v: ~v.isin(listed)), "one of " + ", ".join(listed)


#: Per table, the rules of its given values (checked by :func:`check_rules`); counts of one
#: deployment by :data:`rackbook.limits.BOUNDS`, rates by :data:`MAX_TOK_S_PER_GPU`, latencies
#: (s) by a day; a published point states its basis (never ``unknown``).
RULES: dict[str, dict[str, Rule]] = {
    "points": {
        "duration_s": within(0, above=True),
        **{c: within(0, limits.BOUNDS[c]) for c in ("batch_size", "concurrency")},
        "decode_ranks": within(1, limits.BOUNDS["decode_ranks"]),
        "num_gpus": within(1, limits.BOUNDS["gpus"]),
        "context_tokens": within(0, limits.BOUNDS["context"]),
    },
    "published_points": {
        **{
            c: within(0, limits.BOUNDS["gpus"], True)
            for c in ("gpus", "prefill_gpus", "decode_gpus")
        },
        **{c: within(0, limits.BOUNDS["context"], True) for c in ("isl", "osl")},
        "concurrency": within(0, limits.BOUNDS["concurrency"], True),
        "tok_s_total": within(0, MAX_TOK_S_PER_GPU * limits.BOUNDS["gpus"], True),
        **{c: within(0, MAX_TOK_S_PER_GPU, True) for c in PER_GPU_RATES},
        **{c: within(0, 86_400.0) for c in LATENCIES},
        "date": ((lambda v: ~v.map(lambda d: is_date(str(d)))), "a date YYYY-MM-DD"),
        "url": ((lambda v: ~v.map(lambda u: bool(URL.match(str(u))))), "an http(s) link"),
        "serving": one_of(SERVING),
        "tokens_counted": one_of(t for t in basis.TOKENS if t != basis.UNKNOWN),
        "gpus_counted": one_of(g for g in basis.GPUS if g != basis.UNKNOWN),
        "speculation_kind": one_of(s for s in basis.SPECULATION if s != basis.UNKNOWN),
        "workload": one_of(w for w in basis.WORKLOADS if w != basis.UNKNOWN),
        "latency_statistic": one_of(("mean", "median", "p90", "p99")),
    },
}


def check_rules(
    df: pd.DataFrame, table: str, where: Path | str, rules: Mapping[str, Rule] | None = None
) -> None:
    """InputError at the first given value that breaks its column's rule (default:
    ``RULES[table]``), naming the column, the row and what the values must be."""
    for col, (refuses, wanted) in (RULES.get(table, {}) if rules is None else rules).items():
        v = df[col]
        rows = (v.notna() & refuses(v)).fillna(False).to_numpy(bool)
        if rows.any():
            i = int(rows.argmax())
            x = v.iloc[i]
            shown = repr(x) if isinstance(x, str) else f"{x:,.6g}"
            raise InputError(where, f"{table}.{col}", f"must be {wanted}, got {shown} (row {i})")


def check_points(df: pd.DataFrame, run: Mapping[str, Any], where: Path | str) -> None:
    """Value checks of a conformed ``published_points`` table (only in a ``published`` trace)."""
    if run.get("kind") != "published":
        raise InputError(
            where,
            "published_points",
            f"only a trace of kind published may carry published points (kind is "
            f"{run.get('kind')!r})",
        )
    dup = df["point_id"].duplicated()
    if dup.any():
        bad = df["point_id"][dup].iloc[0]
        raise InputError(where, "published_points.point_id", f"duplicate id {bad!r}")
    check_rules(df, "published_points", where)
    dis = df["serving"].eq("disaggregated").fillna(False).to_numpy(bool)
    parts = df["prefill_gpus"].astype("Float64") + df["decode_gpus"].astype("Float64")
    total = df["gpus"].astype("Float64")
    both = parts.notna() & total.notna()
    bad = dis & both.to_numpy(bool) & (parts != total).fillna(False).to_numpy(bool)
    if bad.any():
        i = int(bad.argmax())
        raise InputError(
            where,
            "published_points.gpus",
            f"row {i}: prefill {df['prefill_gpus'].iloc[i]} + decode {df['decode_gpus'].iloc[i]} "
            f"GPUs != total {df['gpus'].iloc[i]}",
        )


def is_date(text: str) -> bool:
    """``text`` is a calendar date written ``YYYY-MM-DD``."""
    try:
        return _dt.date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def _md(header: str, rows: Iterable[tuple[object, ...]]) -> list[str]:
    """A Markdown table: ``header`` (words) over ``rows``; a ``|`` in a cell is a character."""
    head = header.split()
    body = (" | ".join(str(x).replace("|", "\\|") for x in r) for r in rows)
    return [f"| {' | '.join(head)} |", "|---" * len(head) + "|", *(f"| {b} |" for b in body)]


def _fields_md(fields: Mapping[str, tuple[bool, str]]) -> list[str]:
    rows = ((f"`{k}`", "yes" if r else "no", d) for k, (r, d) in fields.items())
    return _md("field required meaning", rows)


def _columns_md(cols: tuple[Column, ...]) -> list[str]:
    rows = ((f"`{c.name}`", c.dtype, "yes" if c.nullable else "no", c.unit, c.doc) for c in cols)
    return _md("column type null unit meaning", rows)


def markdown_reference() -> str:
    """The trace format as Markdown tables (for the book's reference page)."""
    out = [__doc__.strip().split("\n\n")[0], "", "## run.json", "", *_fields_md(RUN_FIELDS)]
    for table, cols in TABLES.items():
        opt = " (optional)" if table in EXTRA_TABLES else ""
        out += ["", f"## {table}.parquet{opt}", "", *_columns_md(cols)]
    out += ["", "## Calibration folders", "", CALIBRATION_DOC, "", "### run.json (calibration)", ""]
    out += [*_fields_md(CALIBRATION_RUN_FIELDS), "", "### kernels.parquet", ""]
    return "\n".join(out + _columns_md(CALIBRATION_KERNELS)) + "\n"
