"""Calibration folders (kernels timed on a device: ``run.json`` and ``kernels.parquet``, format in
:mod:`rackbook.core.schema`), read, validated and written; ``rackbook calibrate`` writes kind
``recorded``, the shipped H200 one is kind ``published`` (:func:`from_reference`)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from rackbook import paths
from rackbook.core import jsonstream, schema
from rackbook.core.fsio import atomic_dir, atomic_write_json, check_output_folder
from rackbook.core.provenance import project_commit
from rackbook.core.traces import check_required, conform, read_table, to_arrow
from rackbook.errors import InputError

#: The kernel families a calibration may hold, and the unit of each family's ``size``.
FAMILIES: dict[str, str] = {
    "hbm_read": "bytes read",
    "hbm_copy": "bytes copied (read + written counted in bytes)",
    "dense_gemm": "n of an n x n x n GEMM",
    "expert_gemm": "tokens routed to one expert",
    "indexer_scan": "index keys scanned",
    "sparse_attention": "rows in the KV pool",
}
#: The kernel table's value rules (:func:`rackbook.core.schema.check_rules`).
RULES: dict[str, schema.Rule] = {
    "family": schema.one_of(FAMILIES),
    "dtype": schema.one_of(("bf16", "fp8", "fp32", "")),
    **{c: schema.within(0, above=True) for c in ("size", "seconds")},
    **{c: schema.within(0) for c in ("bytes", "flops")},
}
#: The shipped default: one H200, converted from a reference measurement (not rackbook's run).
SHIPPED = paths.DATA / "calibration" / "h200-reference"
CONTENT = "calibration"
KINDS = ("recorded", "published")
#: DeepSeek-V4.1-Flash shapes the reference and ``rackbook calibrate`` time.
REF_SHAPES = {
    "hidden_size": 5120,
    "moe_intermediate_size": 2304,
    "num_attention_heads": 64,
    "head_dim": 512,
    "index_head_dim": 128,
    "index_topk": 2048,
}


@dataclass
class Calibration:
    """A calibration as read: provenance and one row per timed kernel shape."""

    run: dict[str, Any]
    kernels: pd.DataFrame
    path: Path | None = None

    @property
    def label(self) -> str:
        """Short description, e.g. ``NVIDIA H200 (published reference measurement)``."""
        how = "rackbook calibrate" if self.run["kind"] == "recorded" else "published measurement"
        return f"{self.run['gpu']} ({how}, {str(self.run['created'])[:10]})"

    def family(self, name: str, dtype: str | None = None) -> pd.DataFrame:
        """Rows of one family (and dtype), sorted by size."""
        k = self.kernels
        sel = (k["family"] == name) & (True if dtype is None else k["dtype"] == dtype)
        return k[sel].sort_values("size", kind="stable").reset_index(drop=True)


def _conform(df: pd.DataFrame, where: Path | str) -> pd.DataFrame:
    """``df`` with only the kernel table's columns in exact dtypes, checked (:data:`RULES`, no
    shape twice)."""
    cols = schema.CALIBRATION_KERNELS
    out = conform(df, "kernels", where, cols)[[c.name for c in cols]]
    schema.check_rules(out, "kernels", where, RULES)
    dup = out.duplicated(["family", "dtype", "size"])
    if dup.any():
        row = int(dup.to_numpy().argmax())
        raise InputError(where, "kernels", f"row {row} repeats a family, dtype and size")
    return out


#: The data-sheet figures a calibration may name (key -> (least, most), their units): no
#: accelerator's HBM reads under 0.1 TB/s or over 1,000 TB/s per chip, nor does dense math
#: under 1 TFLOP/s or over 1,000,000 (an H200: 4.8 TB/s, 989 BF16 TFLOP/s; a data sheet of
#: 1e-300 TB/s made the attainable estimate 28x too high).
SPEC_RANGES: dict[str, tuple[float, float]] = {
    "hbm_TBps": (0.1, 1_000.0),
    "bf16_dense_TFLOPs": (1.0, 1e6),
    "fp8_dense_TFLOPs": (1.0, 1e6),
}


def _check_run(run: Any, where: Path | str) -> None:
    check_required(run, schema.CALIBRATION_RUN_FIELDS, where)
    for name, allowed in (("content", (CONTENT,)), ("kind", KINDS), ("device", ("cuda", "cpu"))):
        if run[name] not in allowed:
            problem = f"{run[name]!r} is not one of {', '.join(allowed)}"
            raise InputError(where, f"run.json.{name}", problem)
    spec = run.get("spec")
    if spec is not None:
        if not isinstance(spec, dict):
            raise InputError(where, "run.json.spec", "expected an object or null")
        for key, (least, most) in SPEC_RANGES.items():
            v = spec.get(key)  # NaN and infinities fail the range
            if v is not None and not (type(v) in (int, float) and least <= v <= most):
                problem = f"must be a number from {least:g} to {most:g} or null, got {v!r}"
                raise InputError(where, f"run.json.spec.{key}", problem)


def validate(run: dict[str, Any], kernels: pd.DataFrame, where: Path | str) -> pd.DataFrame:
    """Check a calibration's provenance and table; return the table conformed."""
    _check_run(run, where)
    return _conform(kernels, where)


def write_calibration(path: str | Path, run: dict[str, Any], kernels: pd.DataFrame) -> Path:
    """Validate and write a calibration folder atomically; returns ``path``."""
    path = check_output_folder(path)
    arrow = to_arrow(validate(run, kernels, path), schema.CALIBRATION_KERNELS)
    with atomic_dir(path, kind="calibration") as tmp:
        atomic_write_json(tmp / "run.json", run)
        pq.write_table(arrow, tmp / "kernels.parquet", compression="zstd")
    return path


def read_calibration(path: str | Path | None = None) -> Calibration:
    """The calibration folder at ``path`` (default: the shipped H200 reference), validated."""
    path = SHIPPED if path is None else Path(path)
    if not path.is_dir():
        problem = "does not exist" if not path.exists() else "is not a folder"
        what = "a calibration folder from rackbook calibrate: run.json and kernels.parquet"
        raise InputError(path, "calibration", f"{problem} ({what})")
    f = path / "run.json"
    if not f.is_file():
        raise InputError(f, "-", "missing run.json (not a calibration folder)")
    run = jsonstream.load(f)
    _check_run(run, f)
    kernels = read_table(path, "kernels")  # a missing or unreadable file named
    return Calibration(run, _conform(kernels, path / "kernels.parquet"), path)


def read_saved(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """Validated (run, kernels) of a ``rackbook calibrate --save-json`` file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "--from-json", "not a file (a --save-json file of calibrate)")
    obj = jsonstream.load(path)
    parts = (obj.get("run"), obj.get("kernels")) if isinstance(obj, dict) else None
    if not (parts and isinstance(parts[0], dict) and isinstance(parts[1], list)):
        raise InputError(path, "-", 'expected {"run": {...}, "kernels": [rows]}')
    cols = [c.name for c in schema.CALIBRATION_KERNELS]
    try:
        kernels = pd.DataFrame(obj["kernels"], columns=cols)
    except (TypeError, ValueError) as exc:
        raise InputError(path, "kernels", f"not a list of rows: {exc}") from None
    return obj["run"], validate(obj["run"], kernels, path)


# ----------------------------------------------------------------------------- the reference


def from_reference(ref: dict[str, Any], source: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """A calibration (run, kernels) from the reference H200 JSON: seconds from the published rates
    (bytes / TB/s, FLOPs / TFLOP/s) or times (us); the method text kept in ``run.method``."""
    bw, n = ref["bandwidth"], float(ref["bandwidth"]["bytes"])
    rows: list[tuple[Any, ...]] = [  # (family, dtype, size, seconds, bytes, FLOPs)
        ("hbm_read", "bf16", int(n), n / (bw["read_TBps"] * 1e12), n, None),
        ("hbm_copy", "bf16", int(n), 2 * n / (bw["copy_rw_TBps"] * 1e12), 2 * n, None),
    ]
    for key, rate in ref["dense_gemm"].items():
        dtype, size, _unit = key.split("_")
        flops = 2.0 * int(size) ** 3
        rows.append(("dense_gemm", dtype, int(size), flops / (rate * 1e12), None, flops))
    per_expert = 3 * REF_SHAPES["hidden_size"] * REF_SHAPES["moe_intermediate_size"]
    for e in ref["experts"]:
        size, width = e["M"], {"fp8": 1, "bf16": 2}[e["dtype"]]
        seconds, flops = e["us_per_expert"] * 1e-6, 2.0 * size * per_expert
        rows.append(("expert_gemm", e["dtype"], size, seconds, per_expert * width, flops))
    for s in ref["indexer_scan"]:
        rows.append(("indexer_scan", "bf16", s["keys"], s["us"] * 1e-6, s["key_bytes"], None))
    for a in ref["sparse_attention"]:
        rows.append(("sparse_attention", "bf16", a["pool_rows"], a["us"] * 1e-6, None, None))
    smi, what = ref.get("nvidia_smi", ""), str(ref.get("what", ""))
    driver = smi.split(",")[1].strip() if smi.count(",") >= 1 else None
    tv = [w.rstrip(",") for w in what.replace(")", "").split() if w[:2] == "2." and "+" in w]
    run = {
        "schema_version": schema.SCHEMA_VERSION,
        "content": CONTENT,
        "kind": "published",
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "project_commit": project_commit(),
        "device": "cuda",
        "gpu": ref["gpu"],
        "hardware": smi,
        "versions": {"torch": tv[-1] if tv else None, "driver": driver, "cuda": None},
        "spec": {k: ref["spec_H200"][k] for k in SPEC_RANGES},
        "shapes": dict(REF_SHAPES),
        "method": ref["method"],
        "commands": [f"rackbook.core.calibration.from_reference({source!r})"],
        "source": source,
        "notes": "Converted from a reference kernel measurement on one H200 SXM (700 W), not a "
        f"run of rackbook calibrate: {what} {ref.get('repeatability', '')}",
    }
    kernels = pd.DataFrame(rows, columns=[c.name for c in schema.CALIBRATION_KERNELS])
    return run, kernels.astype({"size": "int64", "seconds": float, "bytes": float, "flops": float})


# ----------------------------------------------------------------------------- comparing


#: Largest relative difference per figure that :func:`compare` lets pass (the issue's 15 %).
TOLERANCE = 0.15


def compare(
    measured: pd.DataFrame, reference: pd.DataFrame, tolerance: float = TOLERANCE
) -> pd.DataFrame:
    """Each ``reference`` row beside ``measured``'s: unit, both figures (TB/s for HBM, TFLOP/s for
    dense GEMMs, else us), ratio (reference s / measured s) and flagged (off by over
    ``tolerance``, or not measured)."""
    key = ["family", "dtype", "size"]
    t = reference.merge(measured[[*key, "seconds"]], on=key, how="left", suffixes=("", "_got"))
    hbm, dense = t["family"].isin(("hbm_read", "hbm_copy")), t["family"].eq("dense_gemm")

    def figure(seconds: pd.Series) -> np.ndarray:
        rates = [t["bytes"] / seconds / 1e12, t["flops"] / seconds / 1e12]
        return np.select([hbm, dense], rates, seconds * 1e6)

    ratio = t["seconds"] / t["seconds_got"]
    return pd.DataFrame(
        {
            **{k: t[k].astype(object) for k in ("family", "dtype")},
            "size": t["size"].astype(int),
            "unit": np.select([hbm, dense], ["TB/s", "TFLOP/s"], "us"),
            "reference": figure(t["seconds"]),
            "measured": figure(t["seconds_got"]),
            "ratio": ratio,
            "flagged": ~((ratio - 1).abs() <= tolerance),
        }
    )


def compare_lines(table: pd.DataFrame, tolerance: float = TOLERANCE) -> list[str]:
    """:func:`compare`'s table as text: one line per figure, then a verdict line."""
    out = [f"{'figure':<34} {'reference':>12} {'measured':>12} {'ratio':>7}"]
    for r in table.itertuples(index=False):
        name = f"{r.family} {r.dtype} {r.size:,}"
        got = "not measured" if r.measured != r.measured else f"{r.measured:,.4g}"
        ratio = "-" if r.ratio != r.ratio else f"{r.ratio:.3f}"
        off = "not measured" if r.ratio != r.ratio else f"off by > {tolerance:.0%}"
        flag = f"  <-- {off}" if r.flagged else ""
        out.append(f"{name:<34} {r.reference:>12,.4g} {got:>12} {ratio:>7} {r.unit}{flag}")
    bad = int(table["flagged"].sum())
    out.append(
        f"{len(table) - bad} of {len(table)} figures within {tolerance:.0%} of the reference"
        + (f"; {bad} flagged" if bad else "")
    )
    return out
