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


def _sections(text: str, words: int) -> dict[str, list[list[str]]]:
    """``## name`` sections of lines cut into ``words`` words, the last one the rest of the line
    (an indented line continues it)."""
    out: dict[str, list[list[str]]] = {}
    for line in text.strip().splitlines():
        if line.startswith("## "):
            rows = out.setdefault(line[3:], [])
        elif line.startswith(" "):
            rows[-1][-1] += " " + line.strip()
        else:
            rows.append(line.split(maxsplit=words - 1))
    return out


#: Every table: ``column type unit meaning``, the type ending in ``?`` where the column is
#: nullable. ``kernels`` is a calibration folder's (:data:`CALIBRATION_DOC`).
_TABLES = _sections(
    """
## requests
request_id string - unique id of the request within the trace
point_id string - sweep point (measured window) the request belongs to
engine string - engine label, e.g. vllm-serve, vllm-offline
config string - server configuration label (A, B, baseline, ...)
batch_size int64? requests fixed batch size per decode rank (offline)
concurrency int64? requests client max concurrency (online engines)
decode_ranks int64? ranks decode ranks sharing the batch; empty: 1
context_tokens int64? tokens context length the scenario targets
start_time_s float64? s request start on the trace clock
ttft_s float64 s time to first token; 0 for failed requests
e2el_s float64 s end-to-end latency; 0 for failed requests
prompt_tokens int64 tokens prompt length
cached_prompt_tokens int64? tokens prompt tokens served from cache
output_tokens int64 tokens generated tokens (0 for failures)
success bool - request completed without error
error string - error text; empty when successful
## itl
request_row int64 - row number of the request in requests.parquet
itl_s float64 s gap between consecutive streamed chunks
## points
point_id string - sweep point id
engine string - engine label
config string - configuration label
batch_size int64? requests fixed batch size per decode rank
concurrency int64? requests client max concurrency (all ranks)
decode_ranks int64? ranks decode ranks (DEP size) sharing the load; empty: 1
context_tokens int64? tokens target context length
window_start_s float64? s start of the measured window
duration_s float64 s length of the measured window (vLLM duration)
num_gpus int64? GPUs accelerators serving this point, if any
source string? - raw artifact the point was imported from
## server_metrics
point_id string - sweep point
server string - server URL or replica label
phase string - before | after the point
metric string - Prometheus metric name
labels string? - Prometheus labels, as text
value float64 - counter or gauge value
## expert_load
window int64 - load window index
layer int64 - MoE layer index
expert int64 - logical expert index
tokens float64 tokens tokens routed to the expert
## eplb_log
step int64? - engine step of the log line
avg_tokens float64 tokens mean tokens per EP rank
max_tokens float64 tokens max tokens on one EP rank
balancedness float64 - vLLM's logged balancedness
## published_points
point_id string - unique id of the published point in the trace
source_row int64 - row index in the source file (0-based)
submitter string? - who published it (MLPerf Organization, ...)
system string? - system or configuration name as published
category string? - MLPerf division and availability
hardware string - accelerator, e.g. gb300, NVIDIA B300-SXM-270GB
gpus int64? GPUs accelerators in total; empty when unknown
prefill_gpus int64? GPUs prefill pool of a disaggregated run
decode_gpus int64? GPUs decode pool of a disaggregated run
serving string? - aggregated | disaggregated; empty if unknown
model string - model as the source names it
precision string? - weight precision as the source names it
engine string? - serving engine or framework
engine_version string? - engine version or image
speculative string? - speculative decoding method; none
scenario string? - MLPerf scenario or cookbook strategy
isl int64? tokens input sequence length of the workload
osl int64? tokens output sequence length of the workload
concurrency int64? requests client concurrency
tok_s_total float64? tok/s system total throughput, as published
tok_s_per_gpu float64 tok/s/GPU throughput per accelerator
per_gpu_basis string - as published, or how it was computed
tokens_counted string - tokens tok_s_per_gpu counts (core.basis)
gpus_counted string - GPUs tok_s_per_gpu is over (core.basis)
speculation_kind string - none | real | real or none | simulated
workload string - workload kind (core.basis.WORKLOADS)
latency_statistic string? - mean | median: of tok_s_per_user
input_tok_s_per_gpu float64? tok/s/GPU input (prefill) part
output_tok_s_per_gpu float64? tok/s/GPU output (decode) part
tok_s_per_user float64? tok/s interactivity: 1 / TPOT of a user
ttft_mean_s float64? s mean time to first token
ttft_median_s float64? s median time to first token
tpot_mean_s float64? s mean time per output token
tpot_median_s float64? s median time per output token
e2el_mean_s float64? s mean end-to-end latency
date string? - date of the measurement, YYYY-MM-DD
url string - run link, or the source file's URL
notes string? - what the point can and cannot show
## kernels
family string - hbm_read | hbm_copy | dense_gemm | expert_gemm | indexer_scan | sparse_attention
dtype string - bf16 | fp8 | fp32; empty where no dtype applies
size int64 - the swept size: bytes (hbm), n of n x n x n (dense), tokens routed to the expert
    (expert), keys scanned (indexer), rows in the pool (attention)
seconds float64 s time of one call (best batch / calls)
bytes float64? B bytes the call must move at least (null: not counted)
flops float64? FLOP floating-point operations of the call (null: none)
""",
    4,
)
TABLES: dict[str, tuple[Column, ...]] = {
    k: tuple(Column(n, t.rstrip("?"), t.endswith("?"), u, d) for n, t, u, d in rows)
    for k, rows in _TABLES.items()
}
#: Kernel table of a calibration folder (:data:`CALIBRATION_DOC`), read by physics.attainable.
CALIBRATION_KERNELS = TABLES.pop("kernels")
REQUESTS, ITL, POINTS = TABLES["requests"], TABLES["itl"], TABLES["points"]
#: Optional tables a trace may carry, with their columns (validated when present).
EXTRA_TABLES = {k: v for k, v in TABLES.items() if k not in ("requests", "itl", "points")}

#: The calibration folder in a sentence, for the book's reference page.
CALIBRATION_DOC = (
    "A calibration is a folder of its own: `run.json` (provenance: device, GPU, nvidia-smi line, "
    "versions, data sheet, model shapes, timing method, command) and `kernels.parquet`, one row "
    "per timed kernel shape. `rackbook calibrate [--device cuda|cpu] -o DIR` writes one (kind "
    "`recorded`); the shipped default, `data/calibration/h200-reference/`, is a reference H200 "
    "measurement converted (kind `published`). A row's rate is `bytes / seconds` or "
    "`flops / seconds`; its share of the data sheet divides by `spec`."
)

#: run.json fields of a trace (``run``) and of a calibration folder: ``name required meaning``.
_FIELDS = _sections(
    f"""
## run
schema_version yes trace format version (currently {SCHEMA_VERSION})
trace_id yes short unique id of the trace
kind yes recorded | published | synthetic
created yes creation time, ISO 8601 UTC
project_commit yes git commit of this project that wrote the trace
hardware yes inventory: cpu model, cores, memory, GPUs (nvidia-smi), host count
engine yes engine name and version, e.g. {{name: vllm, version: 0.32.0}}
versions no versions of other software involved
commands yes exact server and client commands, in order (secrets redacted)
parameters yes scenario parameters
environment no environment variables that change behaviour (secrets redacted)
generator no for synthetic traces: generator name and seed (then required)
clock no what start_time_s is measured against
duty_cycle no time inside measured windows over wall time after server start
notes no free text: what the trace can and cannot show
validity no per point: requests, successful, failed, failed_share, valid, flagged, flagged_share,
    reason (validity)
accepted_invalid no points kept although flagged (record --accept-invalid)
server no recorded against running endpoints: their URLs, served model, context limit, vLLM
    version, and the GPUs behind them as declared by RACKBOOK_SERVER_GPUS (not probed)
## calibration
schema_version yes format version (currently {SCHEMA_VERSION})
content yes always 'calibration'
kind yes recorded (rackbook calibrate) | published (someone else's measurement)
created yes creation time, ISO 8601 UTC
project_commit yes git commit of this project that wrote the folder
device yes cuda | cpu
gpu yes GPU name as the driver reports it (CPU model for --device cpu)
hardware yes nvidia-smi line: name, driver, SM and memory clocks, power limit, memory
versions yes torch, CUDA, driver
spec no the data sheet: hbm_TBps, bf16_dense_TFLOPs, fp8_dense_TFLOPs and the hardware catalog
    id (catalog) of the GPU matched by name (null: a CPU, or a GPU not in data/hardware.yaml)
shapes yes the model shapes timed (hidden size, expert sizes, heads, top-k)
method yes timing method: warm-ups, batches, CUDA graphs, what bytes/FLOPs count
commands yes the exact command that wrote the folder
source no for kind published: where the measurement comes from
notes no free text: what the calibration can and cannot show
""",
    3,
)
#: run.json fields: name -> (required, meaning)
RUN_FIELDS: dict[str, tuple[bool, str]] = {n: (r == "yes", d) for n, r, d in _FIELDS["run"]}
CALIBRATION_RUN_FIELDS = {n: (r == "yes", d) for n, r, d in _FIELDS["calibration"]}

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
        kind = run.get("kind")
        problem = f"only a trace of kind published may carry published points (kind is {kind!r})"
        raise InputError(where, "published_points", problem)
    dup = df["point_id"].duplicated()
    if dup.any():
        bad = df["point_id"][dup].iloc[0]
        raise InputError(where, "published_points.point_id", f"duplicate id {bad!r}")
    check_rules(df, "published_points", where)
    parts = df["prefill_gpus"].astype("Float64") + df["decode_gpus"].astype("Float64")
    split = df["serving"].eq("disaggregated") & (parts != df["gpus"].astype("Float64"))
    bad = split.fillna(False).to_numpy(bool)  # unknown where a count is: never refused
    if bad.any():
        i = int(bad.argmax())
        p, d, g = (df[c].iloc[i] for c in ("prefill_gpus", "decode_gpus", "gpus"))
        problem = f"row {i}: prefill {p} + decode {d} GPUs != total {g}"
        raise InputError(where, "published_points.gpus", problem)


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
