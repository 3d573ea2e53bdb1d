"""Importers of published measurements into traces of kind ``published``.

Three sources, each kept as a file (``data/published/sources/``) and imported into a trace whose
only data is the optional table ``published_points`` (:mod:`rackbook.core.schema`); its
requests, gaps and points tables are empty:

- **InferenceX** (SemiAnalysis): the row list of the public API ``/api/v1/benchmarks`` (as
  returned, or saved: a JSON list, or an object holding exactly one list). Each row names its
  hardware, framework, model, precision, speculative method, disaggregation, prefill/decode GPU
  pools, ISL/OSL, concurrency, date, run link and ``metrics``; ``metrics.tput_per_gpu`` (total
  tok/s per GPU) is required, the input/output split is optional.
- **MLPerf Inference** ``summary.csv``: one row per (system, model, scenario). Only rows whose
  ``Units`` is ``Tokens/s`` become points; the rest are skipped and counted by unit. ``Result`` is
  the system's rate of *output* tokens (LoadGen's token count of the responses; the prompt is
  not counted); the per-GPU figure is computed on import as ``Result / total_accelerators``.
- **SGLang cookbook** ``deepseek-v4-benchmarks.jsx``: a JavaScript module exporting
  ``benchmarks``, a list of cells (``match``: hardware, variant, quant, strategy, nodes) with
  ``speed`` entries (ISL/OSL, concurrency, TTFT and TPOT in ms, total tok/s per GPU). It is read
  by a small parser of JavaScript literals (objects, lists, strings, numbers, comments).

Every point carries its basis (:mod:`rackbook.core.basis`) from the source's own definitions:
``tokens_counted`` (InferenceX ``tput_per_gpu``: input + output; MLPerf: output; the cookbook:
input + output derived from measured output x (isl + osl) / osl), ``gpus_counted`` (all GPUs
of the deployment, prefill and decode pools together), ``speculation_kind``, ``workload`` and
the ``latency_statistic`` of ``tok_s_per_user``.

Units: throughput in tokens per second (``tok/s``), per GPU where the column says so; times in
seconds (the cookbook's milliseconds are converted). Bad input raises one
:class:`~rackbook.errors.InputError` naming the file, the row and field, and the problem; the
trace is written atomically, so nothing is left half-written.
"""

from __future__ import annotations

import argparse
import codecs
import collections
import csv
import datetime as _dt
import hashlib
import math
import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook import limits
from rackbook.core import basis, jsonstream, provenance, schema, traces
from rackbook.errors import InputError

#: The three published formats ``rackbook import`` reads, and the engine label of their traces.
FORMATS: dict[str, str] = {
    "inferencex": "InferenceX (SemiAnalysis) API rows",
    "mlperf": "MLPerf Inference summary.csv",
    "sglang-cookbook": "SGLang cookbook deepseek-v4-benchmarks.jsx",
}

_URL = re.compile(r"^https?://\S+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GITHUB_BLOB = re.compile(
    r"^https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/(?P<commit>[0-9a-fA-F]{7,40})/(?P<path>.+)$"
)

#: published_points columns that count or rate something: non-null values must be > 0.
POSITIVE = (
    "gpus",
    "prefill_gpus",
    "decode_gpus",
    "isl",
    "osl",
    "concurrency",
    "tok_s_total",
    "tok_s_per_gpu",
    "input_tok_s_per_gpu",
    "output_tok_s_per_gpu",
    "tok_s_per_user",
)
#: published_points latency columns (seconds): non-null values must be >= 0.
LATENCIES = ("ttft_mean_s", "ttft_median_s", "tpot_mean_s", "tpot_median_s", "e2el_mean_s")
SERVING = ("aggregated", "disaggregated")

#: The SGLang cookbook's configuration file, read 2026-12-03: it declares ``latencyPercentile:
#: "Mean"`` and each cell's flags (``--tp``, ``--speculative-*``).
COOKBOOK_CONFIG_URL = (
    "https://github.com/sgl-project/sglang/blob/01c5c03f29584c6e1105b73de25b7e1799043809/"
    "docs_new/src/snippets/configs/deepseek-ai/deepseek-v4.jsx"
)
#: Speculation of a cookbook cell by strategy, as its flags in deepseek-v4.jsx set it (every
#: DeepSeek-V4 cell of that file): low-latency EAGLE/MTP 3-1-4, balanced 1-1-2, high-throughput
#: none. The acceptance is measured by the real draft head (not published in the cells).
COOKBOOK_SPECULATION: dict[str, tuple[str, str | None]] = {
    "low-latency": ("real", "EAGLE/MTP 3-1-4 (steps 3, topk 1, draft tokens 4)"),
    "balanced": ("real", "EAGLE/MTP 1-1-2 (steps 1, topk 1, draft tokens 2)"),
    "high-throughput": ("none", None),
}
#: Every single-node DeepSeek-V4-Flash cell of deepseek-v4.jsx on these GPUs runs ``--tp 4``.
COOKBOOK_FLASH_SINGLE_GPUS = 4
COOKBOOK_FLASH_SINGLE_HW = ("b200", "b300", "gb200", "gb300")
#: Allowed values of the basis columns (rackbook.core.basis; never "unknown" in a point).
BASIS_COLUMNS: dict[str, tuple[str, ...]] = {
    "tokens_counted": basis.TOKENS,
    "gpus_counted": basis.GPUS,
    "speculation_kind": basis.SPECULATION,
    "workload": basis.WORKLOADS,
    "latency_statistic": ("mean", "median", "p90", "p99"),
}


# ----------------------------------------------------------------------------- table checks


def check_points(df: pd.DataFrame, run: Mapping[str, Any], where: Path | str) -> None:
    """Value checks of a ``published_points`` table (already conformed to the schema).

    Only a trace of kind ``published`` may carry it; point ids are unique; counts and rates are
    > 0; latencies are >= 0; dates are ``YYYY-MM-DD``; links are http(s); ``serving`` is
    aggregated or disaggregated; a disaggregated row's prefill + decode GPUs equal its total.
    """
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
    for col in POSITIVE:
        vals = df[col].astype("Float64")
        bad = vals.notna() & (vals <= 0)
        if bad.any():
            i = int(np.argmax(bad.to_numpy(bool)))
            raise InputError(
                where, f"published_points.{col}", f"must be > 0 (row {i}: {vals.iloc[i]})"
            )
    for col in LATENCIES:
        vals = df[col]
        bad = vals.notna() & (vals < 0)
        if bad.any():
            i = int(np.argmax(bad.to_numpy(bool)))
            raise InputError(where, f"published_points.{col}", f"negative value in row {i}")
    for i, d in enumerate(df["date"]):
        if not pd.isna(d) and not _is_date(str(d)):
            raise InputError(where, "published_points.date", f"{d!r} in row {i} is not YYYY-MM-DD")
    for i, u in enumerate(df["url"]):
        if not _URL.match(str(u)):
            raise InputError(
                where, "published_points.url", f"{u!r} in row {i} is not an http(s) link"
            )
    for i, s in enumerate(df["serving"]):
        if not pd.isna(s) and s not in SERVING:
            raise InputError(
                where,
                "published_points.serving",
                f"{s!r} in row {i}: expected {' or '.join(SERVING)}",
            )
    for col, allowed in BASIS_COLUMNS.items():
        for i, v in enumerate(df[col]):
            if pd.isna(v):
                continue
            if v == basis.UNKNOWN or v not in allowed:
                raise InputError(
                    where,
                    f"published_points.{col}",
                    f"{v!r} in row {i}: a published point states its basis, one of "
                    f"{', '.join(a for a in allowed if a != basis.UNKNOWN)}",
                )
    dis = df["serving"].eq("disaggregated").fillna(False).to_numpy(bool)
    parts = df["prefill_gpus"].astype("Float64") + df["decode_gpus"].astype("Float64")
    total = df["gpus"].astype("Float64")
    both = parts.notna() & total.notna()
    bad = dis & both.to_numpy(bool) & (parts != total).fillna(False).to_numpy(bool)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(
            where,
            "published_points.gpus",
            f"row {i}: prefill {df['prefill_gpus'].iloc[i]} + decode {df['decode_gpus'].iloc[i]} "
            f"GPUs != total {df['gpus'].iloc[i]}",
        )


def _is_date(text: str) -> bool:
    if not _DATE.match(text):
        return False
    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- reading helpers


def read_text(path: Path, cap_mb: float | None = None) -> str:
    """A source file's text, read whole (at most ``cap_mb`` MB unless ``--max-input-mb`` is
    given); a missing, empty, binary or unreadable file is an InputError."""
    limits.input_file(path, cap_mb=cap_mb)
    data = path.read_bytes()
    if not data.strip():
        raise InputError(path, "-", "file is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, "-", limits.decode_problem(data, exc)) from None


#: Bytes of the start of a file checked for NUL (binary) bytes.
_HEAD = 1 << 16


def check_text(path: Path) -> None:
    """A source file checked as :func:`read_text` checks it, reading only its start (and, for
    a file of blanks, its blanks a chunk at a time): missing, empty or binary is an
    InputError."""
    limits.input_file(path, streamed=True)
    with path.open("rb") as fh:
        head = fh.read(_HEAD)
        if b"\0" in head:
            raise InputError(path, "-", "not text (binary file?)")
        chunk = head
        while not chunk.strip():
            if not chunk:
                raise InputError(path, "-", "file is empty")
            chunk = fh.read(1 << 20)


def _check_utf8(path: Path) -> None:
    """The whole file is UTF-8, checked a chunk at a time before any line is read (so a bad
    byte is named first, as when the file was decoded whole)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                start = max(exc.start - len(decoder.getstate()[0]), 0)
                line = lines + chunk.count(b"\n", 0, start) + 1
                raise InputError(
                    path,
                    "-",
                    f"not UTF-8 text: byte 0x{chunk[start]:02x} on line {line} "
                    "(save the file as UTF-8)",
                ) from None
            lines += chunk.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            problem = "not UTF-8 text: cut inside a character"
            raise InputError(path, "end of file", problem) from None


def csv_lines(path: Path) -> Iterator[str]:
    """The lines of a CSV file (UTF-8, a byte-order mark dropped), read one at a time: at most
    :data:`rackbook.limits.CSV_LINE_MB` MB each and ``BOUNDS["csv_lines"]`` in all, a line
    that is not UTF-8 named. Fields are bounded by the csv module's own field size limit."""
    check_text(path)
    _check_utf8(path)
    longest = int(limits.CSV_LINE_MB * 1e6)
    bound = limits.BOUNDS["csv_lines"]
    with path.open("rb") as fh:
        for n, raw in enumerate(iter(lambda: fh.readline(longest + 1), b""), 1):
            if len(raw) > longest:
                raise InputError(
                    path, f"line {n}", f"longer than {limits.CSV_LINE_MB:g} MB (refused)"
                )
            if n > bound:
                raise InputError(
                    path, "rows", f"more than {bound:,} lines (rackbook's bound on csv lines)"
                )
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                start = exc.start + (3 if n == 1 and raw.startswith(b"\xef\xbb\xbf") else 0)
                raise InputError(
                    path,
                    "-",
                    f"not UTF-8 text: byte 0x{raw[start]:02x} on line {n} (save the file as UTF-8)",
                ) from None
            yield line


def _number(
    path: Path, field: str, value: Any, *, integer: bool = False, positive: bool = True
) -> float:
    """``value`` as a finite number (> 0 when ``positive``, else >= 0; whole when ``integer``)."""
    if value is None:
        raise InputError(path, field, "missing")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(path, field, f"not a number ({value!r})")
    if not math.isfinite(value):
        raise InputError(path, field, "non-finite value (NaN or infinite)")
    if integer and float(value) % 1 != 0:
        raise InputError(path, field, f"not an integer ({value!r})")
    if positive and value <= 0:
        raise InputError(path, field, f"must be > 0, got {value!r}")
    if not positive and value < 0:
        raise InputError(path, field, f"must be >= 0, got {value!r}")
    return float(value)


def _optional_number(
    path: Path, field: str, obj: Mapping[str, Any], key: str, *, positive: bool = True
) -> float | None:
    return None if obj.get(key) is None else _number(path, field, obj[key], positive=positive)


def _text(path: Path, field: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if value is None:
        raise InputError(path, field, "missing")
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, field, f"must be a non-empty string, got {value!r}")
    return value


def _date(path: Path, field: str, value: Any, *, optional: bool = False) -> str | None:
    text = _text(path, field, value, optional=optional)
    if text is not None and not _is_date(text):
        raise InputError(path, field, f"{text!r} is not a date YYYY-MM-DD")
    return text


def _url(path: Path, field: str, value: Any, *, optional: bool = False) -> str | None:
    text = _text(path, field, value, optional=optional)
    if text is not None and not _URL.match(text):
        raise InputError(path, field, f"{text!r} is not an http(s) link")
    return text


def _sha256(path: Path) -> str:
    """The file's SHA-256, read a chunk at a time."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def source_info(path: Path, url: str | None = None, date: str | None = None) -> dict[str, Any]:
    """Provenance of a source file: name, sha256, URL, and (from a GitHub blob URL) repository,
    path and commit; ``date`` when given. A bad URL or date is an InputError naming the option."""
    if url is not None and not _URL.match(url):
        raise InputError(path, "--source-url", f"{url!r} is not an http(s) link")
    if date is not None and not _is_date(date):
        raise InputError(path, "--source-date", f"{date!r} is not a date YYYY-MM-DD")
    info: dict[str, Any] = {
        "file": path.name,
        "sha256": _sha256(path),
        "url": url,
        "repo": None,
        "path": None,
        "commit": None,
        "date": date,
    }
    m = _GITHUB_BLOB.match(url or "")
    if m:
        info.update(repo=m["repo"], path=m["path"], commit=m["commit"])
    return info


# ----------------------------------------------------------------------------- InferenceX


def _inferencex_rows(path: Path, data: Any) -> list[Any]:
    """The API's row list: the top-level list, or the one list an object holds."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        lists = [k for k, v in data.items() if isinstance(v, list)]
        if len(lists) == 1:
            return data[lists[0]]
        raise InputError(
            path,
            "(top level)",
            f"an object must hold exactly one list of rows, found {len(lists)}",
        )
    raise InputError(path, "(top level)", f"expected a list of rows, got {type(data).__name__}")


def inferencex_points(
    path: str | Path, data: Any = None, fallback_url: str | None = None
) -> pd.DataFrame:
    """InferenceX API rows as a ``published_points`` table (one row per API row).

    ``tok_s_per_gpu`` is ``metrics.tput_per_gpu`` as stored (total tok/s per GPU over all the
    run's GPUs); ``input_tok_s_per_gpu`` / ``output_tok_s_per_gpu`` are the optional split (in a
    disaggregated row, per prefill GPU and per decode GPU). ``tok_s_per_user`` is
    ``metrics.median_intvty`` (interactivity, tok/s per user). Total GPUs: prefill + decode pools
    of a disaggregated row; the common pool of an aggregated one. An aggregated row whose two
    pools or tensor-parallel size disagree keeps its recorded counts in ``notes`` and leaves
    ``gpus`` empty.
    """
    path = Path(path)
    if data is None:
        data = traces_json(path)
    rows = _inferencex_rows(path, data)
    if not rows:
        raise InputError(path, "rows", "no rows")
    out = []
    for i, row in enumerate(rows):
        f = f"rows[{i}]"
        if not isinstance(row, dict):
            raise InputError(path, f, f"must be an object, got {type(row).__name__}")
        hardware = _text(path, f"{f}.hardware", row.get("hardware"))
        framework = _text(path, f"{f}.framework", row.get("framework"))
        model = _text(path, f"{f}.model", row.get("model"))
        precision = _text(path, f"{f}.precision", row.get("precision"))
        spec = _text(path, f"{f}.spec_method", row.get("spec_method"), optional=True)
        isl = int(_number(path, f"{f}.isl", row.get("isl"), integer=True))
        osl = int(_number(path, f"{f}.osl", row.get("osl"), integer=True))
        conc = int(_number(path, f"{f}.conc", row.get("conc"), integer=True))
        date = _date(path, f"{f}.date", row.get("date"))
        url = _url(path, f"{f}.run_url", row.get("run_url"), optional=True) or fallback_url
        if url is None:
            raise InputError(path, f"{f}.run_url", "missing (and no --source-url to fall back on)")
        disagg = row.get("disagg")
        if disagg is not None and not isinstance(disagg, bool):
            raise InputError(path, f"{f}.disagg", f"must be true or false, got {disagg!r}")
        pools = {}
        for key in ("num_prefill_gpu", "num_decode_gpu", "decode_tp"):
            v = row.get(key)
            pools[key] = None if v is None else int(_number(path, f"{f}.{key}", v, integer=True))
        metrics = row.get("metrics")
        if not isinstance(metrics, dict):
            raise InputError(
                path, f"{f}.metrics", "missing" if metrics is None else "must be an object"
            )
        m = f"{f}.metrics"
        per_gpu = _number(path, f"{m}.tput_per_gpu", metrics.get("tput_per_gpu"))
        p, d, tp = pools["num_prefill_gpu"], pools["num_decode_gpu"], pools["decode_tp"]
        notes: list[str] = []
        gpus = prefill = decode = None
        if disagg:
            prefill, decode = p, d
            gpus = p + d if p is not None and d is not None else None
        elif p is not None and p == d and (tp is None or tp == p):
            gpus = p
        elif p is not None or d is not None:
            notes.append(
                f"recorded GPU counts (prefill {p}, decode {d}) disagree with an aggregated run "
                f"of TP {tp}: total left empty"
            )
        lat = {
            "ttft_mean_s": "mean_ttft",
            "ttft_median_s": "median_ttft",
            "tpot_mean_s": "mean_tpot",
            "tpot_median_s": "median_tpot",
            "e2el_mean_s": "mean_e2el",
        }
        out.append(
            {
                "point_id": f"{i:04d}-{hardware}-{framework}-{model}-{precision}-{isl}-{osl}"
                f"-c{conc}",
                "source_row": i,
                "submitter": "SemiAnalysis InferenceX",
                "system": f"{hardware} {framework}",
                "category": None,
                "hardware": hardware,
                "gpus": gpus,
                "prefill_gpus": prefill,
                "decode_gpus": decode,
                "serving": None if disagg is None else SERVING[int(disagg)],
                "model": model,
                "precision": precision,
                "engine": framework,
                "engine_version": _text(path, f"{f}.image", row.get("image"), optional=True),
                "speculative": spec,
                "scenario": None,
                "isl": isl,
                "osl": osl,
                "concurrency": conc,
                "tok_s_total": None,
                "tok_s_per_gpu": per_gpu,
                "per_gpu_basis": "as published (metrics.tput_per_gpu: input + output tokens over "
                "the prefill and decode GPUs)",
                "tokens_counted": "input+output",
                "gpus_counted": "deployment",
                "speculation_kind": "none" if spec in (None, "none") else "real",
                "workload": "fixed lengths",
                "latency_statistic": "median",
                "input_tok_s_per_gpu": _optional_number(
                    path, f"{m}.input_tput_per_gpu", metrics, "input_tput_per_gpu"
                ),
                "output_tok_s_per_gpu": _optional_number(
                    path, f"{m}.output_tput_per_gpu", metrics, "output_tput_per_gpu"
                ),
                "tok_s_per_user": _optional_number(
                    path, f"{m}.median_intvty", metrics, "median_intvty"
                ),
                **{
                    col: _optional_number(path, f"{m}.{key}", metrics, key, positive=False)
                    for col, key in lat.items()
                },
                "date": date,
                "url": url,
                "notes": "; ".join(notes) or None,
            }
        )
    return _frame(out)


def traces_json(path: Path) -> Any:
    """Parse a JSON source file in bounded memory (:func:`rackbook.core.jsonstream.load`:
    errors as :func:`rackbook.core.importers.load_json`)."""
    return jsonstream.load(path)


# ----------------------------------------------------------------------------- MLPerf

#: summary.csv columns the importer reads.
MLPERF_COLUMNS = (
    "Organization",
    "Availability",
    "Division",
    "SystemName",
    "Platform",
    "Model",
    "Scenario",
    "Result",
    "accelerator_model_name",
    "total_accelerators",
    "Location",
    "framework",
    "version",
    "Units",
    "weight_data_types",
)
MLPERF_TOKEN_UNIT = "Tokens/s"


def mlperf_points(
    path: str | Path, model: str | None = None, source_url: str | None = None
) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
    """MLPerf ``summary.csv`` token-rate rows as a ``published_points`` table, plus what was
    skipped: ``{"units": {unit: rows}, "models": {model: rows}}``.

    ``tok_s_total`` is ``Result``, the system's rate of *output* tokens (LoadGen counts the
    tokens of the responses, not the prompt); ``tok_s_per_gpu`` is computed on import as
    ``Result / total_accelerators``, output tokens per GPU of the submitted system. Whether a
    system of many GPUs serves as one deployment or as several replicas is not in the file.
    With ``model``, token rows of other models are
    skipped and counted. A row's link is the results folder (``Location``) at the source
    commit when ``source_url`` is a GitHub blob URL, else ``source_url`` itself.
    """
    path = Path(path)
    reader = csv.DictReader(csv_lines(path))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(path, "line 1", f"not valid CSV: {exc}") from None
    missing = [c for c in MLPERF_COLUMNS if c not in header]
    if missing:
        raise InputError(path, missing[0], "missing column in the header")
    if source_url is None:
        raise InputError(path, "--source-url", "required: summary.csv rows carry no link")
    gh = _GITHUB_BLOB.match(source_url)
    skipped: dict[str, collections.Counter[str]] = {
        "units": collections.Counter(),
        "models": collections.Counter(),
    }
    out = []
    i = -1
    try:
        for i, row in enumerate(reader):
            line = reader.line_num
            unit = row.get("Units") or ""
            if unit != MLPERF_TOKEN_UNIT:
                skipped["units"][unit or "(empty)"] += 1
                continue
            if model is not None and row["Model"] != model:
                skipped["models"][row["Model"]] += 1
                continue
            f = f"rows[{i}]"
            result = _csv_number(path, f"{f}.Result", row["Result"], line)
            n = _csv_number(path, f"{f}.total_accelerators", row["total_accelerators"], line)
            if n % 1 != 0:
                raise InputError(
                    path, f"{f}.total_accelerators", f"not an integer ({n!r}) (line {line})"
                )
            loc = (row["Location"] or "").removeprefix("./").strip("/")
            url = (
                f"https://github.com/{gh['repo']}/tree/{gh['commit']}/{loc}"
                if gh and loc
                else source_url
            )
            out.append(
                {
                    "point_id": f"{row['Organization']}/{row['Platform']}/{row['Model']}/"
                    f"{row['Scenario']}",
                    "source_row": i,
                    "submitter": row["Organization"],
                    "system": row["SystemName"],
                    "category": f"{row['Division']}, {row['Availability']}",
                    "hardware": row["accelerator_model_name"],
                    "gpus": int(n),
                    "prefill_gpus": None,
                    "decode_gpus": None,
                    "serving": None,
                    "model": row["Model"],
                    "precision": row["weight_data_types"] or None,
                    "engine": row["framework"] or None,
                    "engine_version": row["version"] or None,
                    "speculative": None,
                    "scenario": row["Scenario"],
                    "isl": None,
                    "osl": None,
                    "concurrency": None,
                    "tok_s_total": result,
                    "tok_s_per_gpu": result / n,
                    "per_gpu_basis": "computed on import: Result / total_accelerators",
                    "tokens_counted": "output",
                    "gpus_counted": "deployment",
                    "speculation_kind": "real or none",
                    "workload": "benchmark dataset",
                    "latency_statistic": None,
                    "input_tok_s_per_gpu": None,
                    "output_tok_s_per_gpu": None,
                    "tok_s_per_user": None,
                    **{c: None for c in LATENCIES},
                    "date": None,
                    "url": url,
                    "notes": None,
                }
            )
    except csv.Error as exc:
        raise InputError(path, f"line {reader.line_num}", f"not valid CSV: {exc}") from None
    if i < 0:
        raise InputError(path, "rows", "no rows under the header")
    if not out:
        want = f" of model {model!r}" if model else ""
        raise InputError(path, "rows", f"no {MLPERF_TOKEN_UNIT} rows{want}")
    return _frame(out), {k: dict(sorted(v.items())) for k, v in skipped.items()}


def _csv_number(path: Path, field: str, text: str | None, line: int) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise InputError(
            path, field, f"not a number ({text!r}) in a {MLPERF_TOKEN_UNIT} row (line {line})"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(path, field, f"must be a number > 0, got {text!r} (line {line})")
    return value


# ----------------------------------------------------------------------------- JavaScript literals


class _JsParser:
    """A minimal parser of JavaScript literals: objects (bare or quoted keys), arrays, strings,
    numbers, true/false/null, ``//`` and ``/* */`` comments, trailing commas."""

    _NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    _NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")

    def __init__(self, text: str, path: Path) -> None:
        self.text, self.path, self.pos = text, path, 0

    def fail(self, problem: str) -> InputError:
        line = self.text.count("\n", 0, self.pos) + 1
        return InputError(self.path, f"line {line}", problem)

    def skip(self) -> None:
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c.isspace():
                self.pos += 1
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = len(t) if end < 0 else end + 1
            elif t.startswith("/*", self.pos):
                end = t.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("comment left open to the end of the file")
                self.pos = end + 2
            else:
                return

    def value(self) -> Any:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of file")
        c = self.text[self.pos]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c in "\"'":
            return self.string()
        m = self._NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return float(m.group()) if any(x in m.group() for x in ".eE") else int(m.group())
        m = self._NAME.match(self.text, self.pos)
        if m and m.group() in ("true", "false", "null", "undefined"):
            self.pos = m.end()
            return {"true": True, "false": False}.get(m.group())
        raise self.fail(f"unexpected {self.text[self.pos : self.pos + 12]!r}")

    def string(self) -> str:
        quote, self.pos = self.text[self.pos], self.pos + 1
        out = []
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == quote:
                self.pos += 1
                return "".join(out)
            if c == "\n":
                break
            if c == "\\" and self.pos + 1 < len(self.text):
                nxt = self.text[self.pos + 1]
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
                self.pos += 2
                continue
            out.append(c)
            self.pos += 1
        raise self.fail("string left open")

    def expect(self, char: str) -> None:
        self.skip()
        if not self.text.startswith(char, self.pos):
            found = self.text[self.pos : self.pos + 12] or "end of file"
            raise self.fail(f"expected {char!r}, found {found!r}")
        self.pos += 1

    def arr(self) -> list[Any]:
        self.expect("[")
        out: list[Any] = []
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return out
            out.append(self.value())
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']' in a list")

    def obj(self) -> dict[str, Any]:
        self.expect("{")
        out: dict[str, Any] = {}
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return out
            if self.pos < len(self.text) and self.text[self.pos] in "\"'":
                key = self.string()
            else:
                m = self._NAME.match(self.text, self.pos)
                if not m:
                    raise self.fail("expected a key")
                key, self.pos = m.group(), m.end()
            if key in out:
                raise self.fail(f"duplicate key {key!r}")
            self.expect(":")
            out[key] = self.value()
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}' in an object")


def parse_js_export(text: str, name: str, path: str | Path = "<text>") -> Any:
    """The literal value assigned to ``name`` (``export const NAME = ...``) in JavaScript
    source ``text``; errors name the line."""
    path = Path(path)
    m = re.search(rf"(?:export\s+)?(?:const|let|var)\s+{re.escape(name)}\s*=", text)
    if not m:
        raise InputError(path, name, f"no `export const {name} = ...` in the file")
    p = _JsParser(text, path)
    p.pos = m.end()
    return p.value()


# ----------------------------------------------------------------------------- SGLang cookbook


def cookbook_points(
    path: str | Path, source_url: str | None = None
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The SGLang cookbook's DeepSeek-V4 cells as a ``published_points`` table, plus the count
    of stub cells (no ``speed`` numbers) skipped: ``{"stub_cells": n}``.

    The file says its ``tokens_per_sec_per_gpu`` is total (input + output) tok/s per GPU: for
    fp4/fp8 cells derived as measured output/GPU x (isl + osl) / osl, for nvfp4 measured as a
    total. ``tok_s_per_gpu`` keeps it as published; for fp4/fp8 the measured output per GPU is
    recovered as ``value x osl / (isl + osl)``. ``tok_s_per_user`` is 1000 / ``tpot_ms``; TTFT
    and TPOT (ms) are stored in seconds as means: the cookbook's configuration
    (``deepseek-v4.jsx``, :data:`COOKBOOK_CONFIG_URL`) declares ``latencyPercentile: "Mean"``.
    The GPU count and speculative method of a cell are in that configuration, not in this
    file: :data:`COOKBOOK_SPECULATION` (by strategy) and :data:`COOKBOOK_FLASH_SINGLE_GPUS`.
    """
    path = Path(path)
    if source_url is None:
        raise InputError(path, "--source-url", "required: the cookbook cells carry no link")
    cells = parse_js_export(read_text(path, limits.JS_MAX_MB), "benchmarks", path)
    if not isinstance(cells, list):
        raise InputError(path, "benchmarks", f"must be a list, got {type(cells).__name__}")
    out = []
    stubs = 0
    for i, cell in enumerate(cells):
        f = f"benchmarks[{i}]"
        if not isinstance(cell, dict):
            raise InputError(path, f, "must be an object")
        match = cell.get("match")
        if not isinstance(match, dict):
            raise InputError(
                path, f"{f}.match", "missing" if match is None else "must be an object"
            )
        keys = {k: _text(path, f"{f}.match.{k}", match.get(k)) for k in ("hw", "variant", "quant")}
        strategy = _text(path, f"{f}.match.strategy", match.get("strategy"), optional=True)
        nodes = _text(path, f"{f}.match.nodes", match.get("nodes"), optional=True)
        speed = cell.get("speed")
        if speed is None:
            stubs += 1
            continue
        if not isinstance(speed, list):
            raise InputError(path, f"{f}.speed", "must be a list")
        version = cell.get("sglang_version")
        for j, s in enumerate(speed):
            g = f"{f}.speed[{j}]"
            if not isinstance(s, dict):
                raise InputError(path, g, "must be an object")
            wl = s.get("workload")
            if not isinstance(wl, dict):
                raise InputError(
                    path, f"{g}.workload", "missing" if wl is None else "must be an object"
                )
            isl = int(_number(path, f"{g}.workload.isl", wl.get("isl"), integer=True))
            osl = int(_number(path, f"{g}.workload.osl", wl.get("osl"), integer=True))
            conc = int(
                _number(
                    path, f"{g}.workload.max_concurrency", wl.get("max_concurrency"), integer=True
                )
            )
            total = _number(path, f"{g}.tokens_per_sec_per_gpu", s.get("tokens_per_sec_per_gpu"))
            tpot_ms = _number(path, f"{g}.tpot_ms", s.get("tpot_ms"))
            ttft_ms = _number(path, f"{g}.ttft_ms", s.get("ttft_ms"), positive=False)
            derived = keys["quant"] in ("fp4", "fp8")
            spec_kind, spec_method = COOKBOOK_SPECULATION.get(
                strategy or "", ("real or none", None)
            )
            gpus = (
                COOKBOOK_FLASH_SINGLE_GPUS
                if keys["variant"] == "flash"
                and nodes == "single"
                and keys["hw"] in COOKBOOK_FLASH_SINGLE_HW
                else None
            )
            basis = (
                "as published: total tok/s/GPU, derived by the cookbook from measured output/GPU "
                "x (isl+osl)/osl"
                if derived
                else "as published: total tok/s/GPU, measured as a total"
            )
            out.append(
                {
                    "point_id": f"{keys['hw']}/{keys['variant']}/{keys['quant']}/{strategy}"
                    f"/c{conc}",
                    "source_row": i,
                    "submitter": "SGLang cookbook",
                    "system": f"{keys['hw']} {strategy or '-'} ({nodes or 'nodes not stated'})",
                    "category": None,
                    "hardware": keys["hw"],
                    "gpus": gpus,
                    "prefill_gpus": None,
                    "decode_gpus": None,
                    "serving": None,
                    "model": f"DeepSeek-V4-{keys['variant'].capitalize()}",
                    "precision": keys["quant"],
                    "engine": "sglang",
                    "engine_version": None if version is None else str(version),
                    "speculative": spec_method,
                    "scenario": strategy,
                    "isl": isl,
                    "osl": osl,
                    "concurrency": conc,
                    "tok_s_total": None,
                    "tok_s_per_gpu": total,
                    "per_gpu_basis": basis,
                    "tokens_counted": "input+output",
                    "gpus_counted": "deployment",
                    "speculation_kind": spec_kind,
                    "workload": "fixed lengths",
                    "latency_statistic": "mean",
                    "input_tok_s_per_gpu": None,
                    "output_tok_s_per_gpu": total * osl / (isl + osl) if derived else None,
                    "tok_s_per_user": 1000.0 / tpot_ms,
                    "ttft_mean_s": ttft_ms / 1000.0,
                    "ttft_median_s": None,
                    "tpot_mean_s": tpot_ms / 1000.0,
                    "tpot_median_s": None,
                    "e2el_mean_s": None,
                    "date": None,
                    "url": source_url,
                    "notes": f"nodes: {nodes}; GPU count and speculative method from the "
                    f"cookbook's deepseek-v4.jsx ({COOKBOOK_CONFIG_URL}); latencies are means "
                    "(latencyPercentile Mean)",
                }
            )
    if not out:
        raise InputError(path, "benchmarks", "no cell with speed numbers")
    return _frame(out), {"stub_cells": stubs}


# ----------------------------------------------------------------------------- traces


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    cols = schema.EXTRA_TABLES["published_points"]
    df = pd.DataFrame(rows, columns=[c.name for c in cols])
    for c in cols:
        if c.dtype == "int64":
            df[c.name] = pd.array(df[c.name].tolist(), dtype="Int64")
        elif c.dtype == "float64":
            df[c.name] = pd.to_numeric(df[c.name], errors="raise").astype("float64")
        else:
            df[c.name] = df[c.name].astype("string")
    return df


def empty_table(table: str) -> pd.DataFrame:
    """An empty table with the schema's columns and types."""
    dtypes = {"string": "string", "int64": "Int64", "float64": "float64", "bool": "bool"}
    return pd.DataFrame(
        {c.name: pd.Series([], dtype=dtypes[c.dtype]) for c in schema.TABLES[table]}
    )


def published_trace(
    points: pd.DataFrame,
    fmt: str,
    source: dict[str, Any],
    command: str,
    parameters: dict[str, Any] | None = None,
    notes: str = "",
) -> traces.Trace:
    """A kind ``published`` trace holding ``points`` (its other tables empty)."""
    run = provenance.new_run_info(
        kind="published",
        commands=[command],
        parameters={"format": fmt, **(parameters or {})},
        engine={"name": fmt, "version": None, "what": FORMATS[fmt]},
        notes=notes
        or f"published measurements imported from {source['file']} by `rackbook import {fmt}`; "
        "hardware, GPUs and engine are per row in published_points",
        source=source,
        rows=[
            {"point_id": p, "url": u, "date": None if pd.isna(d) else d}
            for p, u, d in zip(points["point_id"], points["url"], points["date"], strict=True)
        ],
    )
    run["hardware"] = {"gpus": [], "hosts": None, "note": "not measured here: see published_points"}
    run["recorded_by"] = None
    return traces.Trace(
        run,
        empty_table("requests"),
        empty_table("itl"),
        empty_table("points"),
        {"published_points": points},
    )


def _command(fmt: str, path: Path, output: Path, extra: list[str]) -> str:
    return shlex.join(["rackbook", "import", fmt, str(path), "-o", str(output), *extra])


def _options(model: str | None, url: str | None, date: str | None) -> list[str]:
    out: list[str] = []
    for flag, v in (("--model", model), ("--source-url", url), ("--source-date", date)):
        if v is not None:
            out += [flag, v]
    return out


def import_published(
    fmt: str,
    path: str | Path,
    output: str | Path,
    *,
    model: str | None = None,
    source_url: str | None = None,
    source_date: str | None = None,
    command: str | None = None,
) -> traces.Trace:
    """Import a published source file of format ``fmt`` (:data:`FORMATS`) into a trace folder at
    ``output`` (written atomically; nothing is written when the input is bad)."""
    path, output = Path(path), Path(output)
    if fmt not in FORMATS:
        raise InputError(path, "format", f"unknown {fmt!r}; expected one of {', '.join(FORMATS)}")
    if model is not None and fmt != "mlperf":
        raise InputError(path, "--model", f"only for mlperf, not {fmt}")
    check_text(path)  # missing, empty or binary input: one line before anything else
    src = source_info(path, source_url, source_date)
    params: dict[str, Any] = {}
    if fmt == "inferencex":
        pts = inferencex_points(path, fallback_url=source_url)
    elif fmt == "mlperf":
        pts, skipped = mlperf_points(path, model, source_url)
        params = {"model": model, "skipped": skipped}
    else:
        pts, skipped = cookbook_points(path, source_url)
        params = {"skipped": skipped}
    if source_date is not None:
        pts["date"] = pts["date"].fillna(source_date)
    cmd = command or _command(fmt, path, output, _options(model, source_url, source_date))
    t = published_trace(pts, fmt, src, cmd, params)
    traces.write_trace(output, t)
    return traces.read_trace(output)


def cli_import(args: argparse.Namespace) -> int:
    """``rackbook import inferencex|mlperf|sglang-cookbook FILE -o TRACE [--model NAME]
    [--source-url URL] [--source-date YYYY-MM-DD]``."""
    fmt = args.format
    extra = _options(getattr(args, "model", None), args.source_url, args.source_date)
    t = import_published(
        fmt,
        args.input,
        args.output,
        model=getattr(args, "model", None),
        source_url=args.source_url,
        source_date=args.source_date,
        command=_command(fmt, Path(args.input), Path(args.output), extra),
    )
    pts = t.extra["published_points"]
    skipped = t.run["parameters"].get("skipped") or {}
    told = "; ".join(
        f"skipped {k}: " + ", ".join(f"{n} {u}" for u, n in v.items())
        if isinstance(v, dict)
        else f"skipped {k}: {v}"
        for k, v in skipped.items()
        if v
    )
    print(
        f"wrote {args.output}: {len(pts)} published points, trace_id {t.trace_id}"
        + (f" ({told})" if told else "")
    )
    return 0
