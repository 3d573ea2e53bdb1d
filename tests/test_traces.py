"""Trace folders (:mod:`rackbook.core.traces`): a written trace reads back equal, tables are
coerced to their schema's exact dtypes or refused naming the column, and run.json's kinds."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rackbook.core import schema, traces
from rackbook.core.fsio import MARKER
from rackbook.core.provenance import new_run_info
from rackbook.errors import InputError


def _run(kind: str = "synthetic") -> dict:
    gen = {"name": "test_traces", "seed": 0} if kind == "synthetic" else None
    return new_run_info(kind=kind, commands=["by hand"], parameters={"a": 1}, engine={},
                        generator=gen)  # fmt: skip


def _trace(kind: str = "synthetic") -> traces.Trace:
    """Two points, three requests (one failed), four gaps, and a server-metrics table; the
    request table also carries a column of its own (``scenario``), which must be kept."""
    req = pd.DataFrame(
        {
            "request_id": ["r0", "r1", "r2"],
            "point_id": ["p8", "p8", "p16"],
            "engine": ["vllm-serve"] * 3,
            "config": ["A"] * 3,
            "batch_size": [None, None, None],
            "concurrency": [8, 8, 16],
            "decode_ranks": [None, None, None],
            "context_tokens": [None, None, None],
            "start_time_s": [0.0, 0.25, 1.5],
            "ttft_s": [0.05, 0.06, 0.0],
            "e2el_s": [0.5, 0.55, 0.0],
            "prompt_tokens": [64, 64, 64],
            "cached_prompt_tokens": [None, 32, None],
            "output_tokens": [3, 3, 0],
            "success": [True, True, False],
            "error": ["", "", "timeout"],
            "scenario": ["x", "x", "y"],
        }
    )
    itl = pd.DataFrame({"request_row": [0, 0, 1, 1], "itl_s": [0.2, 0.25, 0.2, 0.29]})
    pts = pd.DataFrame(
        {
            "point_id": ["p8", "p16"],
            "engine": ["vllm-serve"] * 2,
            "config": ["A"] * 2,
            "batch_size": [None, None],
            "concurrency": [8, 16],
            "decode_ranks": [None, None],
            "context_tokens": [None, None],
            "window_start_s": [0.0, 1.5],
            "duration_s": [1.0, 2.0],
            "num_gpus": [None, None],
            "source": ["p8.json", None],
        }
    )
    sm = pd.DataFrame(
        {
            "point_id": ["p8", "p8"],
            "server": ["http://127.0.0.1:1"] * 2,
            "phase": ["before", "after"],
            "metric": ["vllm:generation_tokens_total"] * 2,
            "labels": [None, '{engine="0"}'],
            "value": [10.0, 16.0],
        }
    )
    return traces.Trace(_run(kind), req, itl, pts, {"server_metrics": sm})


# ----------------------------------------------------------------------------- round trip
def test_a_written_trace_reads_back_equal(tmp_path):
    t = _trace()
    out = traces.write_trace(tmp_path / "t", t)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MARKER, "run.json", "requests.parquet", "itl.parquet", "points.parquet",
         "server_metrics.parquet"]
    )  # fmt: skip
    back = traces.read_trace(out)
    assert back.run == json.loads(json.dumps(t.run, default=str))
    assert back.path == out and back.trace_id == t.run["trace_id"] and back.kind == "synthetic"
    want = traces.validate(t)
    for name in ("requests", "itl", "points"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(want, name))
    pd.testing.assert_frame_equal(back.extra["server_metrics"], want.extra["server_metrics"])
    # exact dtypes from the schema: nullable counts as Int64, flags bool, text string
    r = back.requests
    assert (r["concurrency"].dtype, r["cached_prompt_tokens"].dtype) == ("Int64", "Int64")
    assert r["success"].dtype == bool and r["prompt_tokens"].dtype == np.int64
    assert list(r["cached_prompt_tokens"].isna()) == [True, False, True]
    assert list(r["scenario"]) == ["x", "x", "y"]  # a column of its own is kept
    assert traces.table_rows(out, "itl") == 4
    assert len(traces.read_trace(out, itl=False).itl) == 0


def test_a_folder_that_is_not_a_trace_is_never_replaced(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(InputError) as exc:
        traces.write_trace(mine, _trace())
    assert exc.value.field == "output"
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


# ----------------------------------------------------------------------------- conform
def test_conform_coerces_to_the_schemas_exact_dtypes():
    df = pd.DataFrame(
        {
            "request_row": ["0", "1"],  # text of whole numbers
            "itl_s": [1, 2],  # integers where floats are declared
            "extra": ["kept", "kept"],
        }
    )
    out = traces.conform(df, "itl", "here")
    assert out["request_row"].dtype == np.int64 and list(out["request_row"]) == [0, 1]
    assert out["itl_s"].dtype == np.float64 and list(out["itl_s"]) == [1.0, 2.0]
    assert list(out.columns) == ["request_row", "itl_s", "extra"]
    assert df["request_row"].tolist() == ["0", "1"]  # the input is not changed in place


def test_conform_adds_a_missing_nullable_column():
    pts = _trace().points.drop(columns=["num_gpus", "source"])
    out = traces.conform(pts, "points", "here")
    assert out["num_gpus"].isna().all() and out["num_gpus"].dtype == "Int64"


def test_conform_takes_another_tables_columns():
    """The calibration's kernel table goes through the same coercion (its own columns)."""
    df = pd.DataFrame(
        {"family": ["hbm_read"], "dtype": [""], "size": [1024.0], "seconds": ["1e-6"]}
    )
    out = traces.conform(df, "kernels", "here", schema.CALIBRATION_KERNELS)
    assert out["size"].dtype == np.int64 and out["seconds"].iloc[0] == 1e-6
    assert out["bytes"].isna().all() and out["flops"].dtype == np.float64
    with pytest.raises(InputError) as exc:
        traces.conform(df.assign(size=[1.5]), "kernels", "here", schema.CALIBRATION_KERNELS)
    assert (exc.value.field, exc.value.problem) == (
        "kernels.size",
        "expected int64: non-integer value",
    )


#: (table, edit of a good table, field named, start of the problem)
REFUSALS = [
    ("itl", lambda d: d.drop(columns="itl_s"), "itl.itl_s", "missing column"),
    ("itl", lambda d: d.assign(request_row=[0, None]), "itl.request_row", "missing value in row 1"),
    ("itl", lambda d: d.assign(request_row=[0, 1.5]), "itl.request_row", "expected int64: non-"),
    ("itl", lambda d: d.assign(itl_s=[0.1, np.inf]), "itl.itl_s", f"{traces.NON_FINITE} in row"),
    ("itl", lambda d: d.assign(itl_s=["0.1", "fast"]), "itl.itl_s", "expected float64"),
    ("itl", lambda d: d.assign(request_row=[0, 2**70]), "itl.request_row", "expected int64"),
    ("requests", lambda d: d.assign(success=[True, "yes", False]), "requests.success",
     "expected bool: not a boolean"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "edit", "field", "problem"), REFUSALS)
def test_conform_refuses_naming_the_column(table, edit, field, problem):
    base = {"itl": pd.DataFrame({"request_row": [0, 1], "itl_s": [0.1, 0.2]}),
            "requests": _trace().requests}[table]  # fmt: skip
    with pytest.raises(InputError) as exc:
        traces.conform(edit(base), table, "here")
    assert exc.value.field == field and exc.value.problem.startswith(problem)


# ----------------------------------------------------------------------------- run.json kinds
@pytest.mark.parametrize("kind", schema.KINDS)
def test_every_kind_reads(tmp_path, kind):
    t = _trace(kind)
    if kind == "published":
        t.extra = {}
    out = traces.write_trace(tmp_path / kind, t)
    assert traces.read_run(out)["kind"] == kind


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda r: r.update(kind="simulated"), "run.json.kind", "'simulated' is not one of"),
        (lambda r: r.pop("generator"), "run.json.generator", "a synthetic trace must name"),
        (lambda r: r.update(generator={"name": "g"}), "run.json.generator", "a synthetic"),
        (lambda r: r.update(schema_version=2), "run.json.schema_version", "2 is not a version"),
        (lambda r: r.update(schema_version=True), "run.json.schema_version", "True is not"),
        (lambda r: r.pop("commands"), "run.json.commands", "missing required field"),
        (lambda r: r.update(parameters=[]), "run.json.parameters", "must be an object"),
        (lambda r: r.update(hardware={"hosts": -1}), "run.json.hardware.hosts", "must be a whole"),
    ],
)
def test_run_json_refusals(tmp_path, edit, field, problem):
    out = traces.write_trace(tmp_path / "t", _trace())
    run = json.loads((out / "run.json").read_text())
    edit(run)
    (out / "run.json").write_text(json.dumps(run))
    with pytest.raises(InputError) as exc:
        traces.read_trace(out)
    assert exc.value.field == field and exc.value.problem.startswith(problem)


def test_a_missing_or_unreadable_part_is_named(tmp_path):
    with pytest.raises(InputError, match="trace folder does not exist"):
        traces.read_run(tmp_path / "absent")
    out = traces.write_trace(tmp_path / "t", _trace())
    (out / "itl.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError) as exc:
        traces.read_trace(out)
    assert exc.value.file.endswith("itl.parquet") and "unreadable Parquet" in exc.value.problem
    (out / "points.parquet").unlink()
    with pytest.raises(InputError, match="missing table points.parquet"):
        traces.read_trace(out, itl=False)
