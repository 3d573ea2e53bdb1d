"""Trace folders (:mod:`rackbook.core.traces`): a written trace reads back equal, tables are
coerced to their schema's exact dtypes or refused naming the column, and run.json's kinds."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rackbook import limits, paths
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


# ----------------------------------------------------------------------------- schema's rules
# (issue 39: rackbook.core.schema's value rules at their bounds, the published points' checks
# and the reference page's tables: what each refusal names, and where it starts)

MLPERF = paths.DATA / "published" / "mlperf-v6.1-dsr1"
RUN = {"kind": "published"}


def _refused(rule, values):
    """The rows of ``values`` that ``rule`` refuses (None: not refused here, as check_rules)."""
    bad, _ = rule
    return bad(pd.Series(values, dtype="Float64")).fillna(False).tolist()


def test_within_from_low_to_high_includes_both_ends():
    rule = schema.within(0, 10)
    assert rule[1] == "from 0 to 10"
    assert _refused(rule, [-0.001, 0, 5, 10, 10.001]) == [True, False, False, False, True]


def test_within_above_excludes_its_low_end():
    rule = schema.within(0, above=True)
    assert rule[1] == "> 0"
    assert _refused(rule, [-1, 0, 1e-9, 1e300]) == [True, True, False, False]
    capped = schema.within(0, 1_000_000, True)
    assert capped[1] == "> 0 and at most 1,000,000"
    assert _refused(capped, [0, 1, 1_000_000, 1_000_001]) == [True, False, False, True]


def test_within_without_high_is_at_least_low():
    rule = schema.within(1)
    assert rule[1] == ">= 1"
    assert _refused(rule, [0.999, 1, 1e12]) == [True, False, False]
    assert schema.within(0.25, 1.5)[1] == "from 0.25 to 1.5"


def test_one_of_lists_what_it_allows():
    bad, wanted = schema.one_of(x for x in ("a", "b"))  # any iterable, read once
    assert wanted == "one of a, b"
    assert bad(pd.Series(["a", "b", "c"])).tolist() == [False, False, True]


def _points(**columns):
    """Three points: every column a rule reads, empty where ``columns`` gives none."""
    empty = {c: [None] * 3 for c in schema.RULES["points"]}
    return pd.DataFrame(empty | {"duration_s": [1.0, 2.0, 3.0]} | columns)


def test_check_rules_names_table_column_first_bad_row_and_value():
    with pytest.raises(InputError) as err:
        schema.check_rules(_points(duration_s=[1.0, 0.0, -1.0]), "points", "T")
    assert str(err.value) == "T: points.duration_s: must be > 0, got 0 (row 1)"
    big = limits.BOUNDS["concurrency"] + 1
    with pytest.raises(InputError) as err:
        schema.check_rules(_points(concurrency=[1, None, big]), "points", "T")
    assert err.value.field == "points.concurrency"
    problem = err.value.problem
    assert problem.startswith(f"must be from 0 to {limits.BOUNDS['concurrency']:,}, got ")
    assert problem.endswith(" (row 2)")  # row 1 is missing: never refused
    rules = {"engine": schema.one_of(["vllm"])}
    with pytest.raises(InputError) as err:
        schema.check_rules(pd.DataFrame({"engine": ["vllm", "sglang"]}), "x", "T", rules)
    assert err.value.problem == "must be one of vllm, got 'sglang' (row 1)"


def test_check_rules_passes_missing_values_and_tables_without_rules():
    ok = _points(concurrency=[None, 0, limits.BOUNDS["concurrency"]], num_gpus=[1, None, 2])
    schema.check_rules(ok, "points", "T")  # nothing to refuse: returns
    schema.check_rules(pd.DataFrame({"x": [-1.0]}), "itl", "T")  # no rules for itl
    large = pd.DataFrame({"v": [1.0, 1234567.0]})
    with pytest.raises(InputError, match=r"got 1\.23457e\+06 \(row 1\)$"):
        schema.check_rules(large, "t", "T", {"v": schema.within(0, 10)})


def _published():
    return traces.read_table(MLPERF, "published_points")


def test_published_points_only_in_a_published_trace():
    with pytest.raises(InputError) as err:
        schema.check_points(_published(), {"kind": "recorded"}, "T")
    assert (err.value.file, err.value.field, err.value.problem) == (
        "T",
        "published_points",
        "only a trace of kind published may carry published points (kind is 'recorded')",
    )
    with pytest.raises(InputError, match="kind is None"):
        schema.check_points(_published(), {}, "T")
    schema.check_points(_published(), RUN, "T")  # the shipped trace passes


def test_published_points_refuse_a_duplicate_id():
    df = _published()
    df.loc[3, "point_id"] = df.loc[1, "point_id"]
    with pytest.raises(InputError) as err:
        schema.check_points(df, RUN, "T")
    assert (err.value.file, err.value.field) == ("T", "published_points.point_id")
    assert err.value.problem == f"duplicate id {df.loc[1, 'point_id']!r}"


def test_published_points_refuse_a_rule_breach_by_row():
    df = _published()
    df.loc[4, "tok_s_per_gpu"] = schema.MAX_TOK_S_PER_GPU * 2
    with pytest.raises(InputError) as err:
        schema.check_points(df, RUN, "T")
    assert err.value.field == "published_points.tok_s_per_gpu"
    assert err.value.problem.endswith("got 2e+07 (row 4)")
    df = _published()
    df.loc[2, "url"] = "ftp://example.org/x"
    with pytest.raises(InputError, match=r"published_points.url: must be an http\(s\) link"):
        schema.check_points(df, RUN, "T")


@pytest.mark.parametrize(
    "serving,prefill,decode,gpus,refused",
    [
        ("disaggregated", 2, 6, 8, False),
        ("disaggregated", 2, 5, 8, True),
        ("disaggregated", None, 6, 8, False),  # unknown pool: never refused
        ("aggregated", 2, 5, 8, False),  # pools apply to a disaggregated run only
    ],
)
def test_disaggregated_pools_add_up_to_the_total(serving, prefill, decode, gpus, refused):
    df = _published()
    df["serving"] = df["serving"].astype(object)
    df.loc[1, ["serving", "prefill_gpus", "decode_gpus", "gpus"]] = [serving, prefill, decode, gpus]
    if not refused:
        schema.check_points(df, RUN, "T")
        return
    with pytest.raises(InputError) as err:
        schema.check_points(df, RUN, "T")
    assert (err.value.file, err.value.field) == ("T", "published_points.gpus")
    assert err.value.problem == "row 1: prefill 2.0 + decode 5.0 GPUs != total 8"


@pytest.mark.parametrize(
    "text,ok",
    [
        ("2026-12-07", True),
        ("2024-02-29", True),
        ("2026-02-29", False),
        ("2026-2-7", False),
        ("20261207", False),  # ISO, but not as written
        ("07.12.2026", False),
        ("", False),
    ],
)
def test_is_date(text, ok):
    assert schema.is_date(text) is ok


def test_sections_split_words_and_join_indented_lines():
    got = schema._sections("\n## a\nx int64 - the x\n    and more\ny string? s y\n## b\nz w\n", 4)
    assert got == {"a": [["x", "int64", "-", "the x and more"], ["y", "string?", "s", "y"]]} | {
        "b": [["z", "w"]]
    }
    assert schema.TABLES["published_points"][0] == schema.Column(
        "point_id", "string", False, "-", "unique id of the published point in the trace"
    )
    size = next(c for c in schema.CALIBRATION_KERNELS if c.name == "size")
    assert size.doc.endswith("(indexer), rows in the pool (attention)")
    assert schema.RUN_FIELDS["validity"][0] is False and schema.RUN_FIELDS["trace_id"][0] is True


def test_markdown_reference_tables():
    lines = schema.markdown_reference().splitlines()
    assert lines[0] == schema.__doc__.strip().split("\n\n")[0]
    heads = [i for i, line in enumerate(lines) if line.startswith("#")]
    assert len(heads) == 1 + len(schema.TABLES) + 3  # run.json, the tables, calibration
    for i in heads:  # a heading stands between blank lines, then a table or a paragraph
        assert lines[i - 1] == lines[i + 1] == "", lines[i]
    assert [lines[i] for i in heads[-3:]] == [
        "## Calibration folders",
        "### run.json (calibration)",
        "### kernels.parquet",
    ]
    assert lines[heads[-3] + 2] == schema.CALIBRATION_DOC and lines[heads[-3] + 3] == ""
    assert lines[2:6] == [
        "## run.json",
        "",
        "| field | required | meaning |",
        "|---|---|---|",
    ]
    assert lines[6] == "| `schema_version` | yes | trace format version (currently 1) |"
    assert "| `versions` | no | versions of other software involved |" in lines
    assert "## itl.parquet" in lines and "## server_metrics.parquet (optional)" in lines
    i = lines.index("## requests.parquet")
    assert lines[i + 2 : i + 5] == [
        "| column | type | null | unit | meaning |",
        "|---|---|---|---|---|",
        "| `request_id` | string | no | - | unique id of the request within the trace |",
    ]
    assert (
        "| `batch_size` | int64 | yes | requests | fixed batch size per decode rank (offline) |"
        in (lines)
    )
    assert "| `phase` | string | no | - | before \\| after the point |" in lines  # | escaped
    assert lines[-1].startswith("| `flops` | float64 | yes | FLOP |")
    assert lines.index("### kernels.parquet") > lines.index("### run.json (calibration)")


# ----------------------------------------------------------------------------- issue 39, item 7
# (each check of traces.py by itself: the exact field and problem of each refusal, values at a
# documented limit and one step either side, and folders left as they were)


def _refusal(call, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as exc:
        call(*args, **kwargs)
    return exc.value


def _where(e: InputError) -> tuple[str, str, str]:
    return e.file, e.field, e.problem


def test_trace_id_and_kind_default_to_empty():
    t = traces.Trace({}, pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    assert (t.trace_id, t.kind, t.extra, t.path, t.itl_loaded) == ("", "", {}, None, True)
    t.run = {"trace_id": 12, "kind": "recorded"}
    assert (t.trace_id, t.kind) == ("12", "recorded")


def test_row_names():
    assert traces.RowNames()("ttft_s", 3) == ("requests.ttft_s", " in row 3")
    assert traces.RowNames("itl")("itl_s", 0) == ("itl.itl_s", " in row 0")
    keys = traces.RowNames(keys={"ttft_s": "ttfts"})
    assert keys("ttft_s", 2) == ("ttfts[2]", "") and keys("e2el_s", 1) == ("e2el_s[1]", "")


def test_request_values_are_the_required_numbers():
    assert traces.REQUEST_VALUES == {
        "ttft_s": False, "e2el_s": False, "prompt_tokens": True, "output_tokens": True,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("values", "tokens", "problem"),
    [
        ([0.0, np.nan], False, f"{traces.NON_FINITE} in row 11"),
        ([np.inf, 1.0], False, f"{traces.NON_FINITE} in row 10"),
        ([1.0, -np.inf], False, f"{traces.NON_FINITE} in row 11"),
        ([1.0, -0.5], False, "negative value in row 11"),
        ([-1.0, np.nan], False, f"{traces.NON_FINITE} in row 11"),  # non-finite named first
        ([1.0, 1e10 + 2048], True, "implausibly large token count (over 1e+10) in row 11"),
        ([-1, 1], True, "negative value in row 10"),
    ],
)
def test_check_values_names_the_first_bad_row(values, tokens, problem):
    e = _refusal(traces.check_values, np.array(values), "f.json", "col", offset=10, tokens=tokens)
    assert _where(e) == ("f.json", "requests.col", problem)


def test_check_values_passes_up_to_the_limits():
    traces.check_values(np.array([0.0, 1e300]), "f", "c")
    traces.check_values(np.array([0, 10**10], dtype=np.int64), "f", "c", tokens=True)
    traces.check_values(np.array([0.0, traces.MAX_TOKENS]), "f", "c", tokens=True)
    traces.check_values(np.array([], dtype=np.float64), "f", "c")
    traces.check_values(np.array([1, 2], dtype=np.uint8), "f", "c", tokens=True)
    e = _refusal(traces.check_values, np.array([1e10 + 1.0]), "f", "c", tokens=True)
    assert e.problem == "implausibly large token count (over 1e+10) in row 0"
    e = _refusal(traces.check_values, np.array([0.5, -0.0, -1e-300]), "f", "c")
    assert e.problem == "negative value in row 2"
    keys = traces.RowNames(keys={"c": "ttfts"})
    e = _refusal(traces.check_values, np.array([1.0, np.nan]), "f", "c", keys, offset=5)
    assert _where(e) == ("f", "ttfts[6]", traces.NON_FINITE)


def _cols(**change):
    cols = {
        "start_time_s": np.array([0.0, 1.0]),
        "ttft_s": np.array([0.5, 0.2]),
        "e2el_s": np.array([0.5, 0.1]),
        "prompt_tokens": np.array([1.0, 2.0]),
        "output_tokens": np.array([1.0, 2.0]),
    }
    cols.update({k: np.array(v, dtype=np.float64) for k, v in change.items()})
    return cols


def test_check_request_rows_ttft_within_e2el_for_successes():
    ok = np.array([True, False])
    traces.check_request_rows(_cols(), ok, "f")  # the failed row's ttft past its e2el passes
    traces.check_request_rows(_cols(ttft_s=[0.5 + 0.9e-9, 0.2]), ok, "f")
    traces.check_request_rows(_cols(ttft_s=[0.5 + 1e-9, 0.2]), ok, "f")  # exactly the slack
    e = _refusal(traces.check_request_rows, _cols(ttft_s=[0.5 + 1.1e-9, 0.2]), ok, "f")
    assert _where(e) == (
        "f",
        "requests.ttft_s",
        "larger than the request's end-to-end latency in row 0",
    )
    e = _refusal(traces.check_request_rows, _cols(), np.array([True, True]), "f", offset=7)
    assert (e.field, e.problem) == (
        "requests.ttft_s",
        "larger than the request's end-to-end latency in row 8",
    )
    keys = traces.RowNames(keys={"ttft_s": "ttfts"})
    e = _refusal(traces.check_request_rows, _cols(), np.array([False, True]), "f", keys)
    assert (e.field, e.problem) == ("ttfts[1]", "larger than the request's end-to-end latency")
    e = _refusal(traces.check_request_rows, _cols(output_tokens=[1, 2e10]), ok, "f", offset=3)
    assert (e.field, e.problem) == (
        "requests.output_tokens",
        "implausibly large token count (over 1e+10) in row 4",
    )
    e = _refusal(traces.check_request_rows, _cols(e2el_s=[0.5, -1.0]), ok, "f")
    assert (e.field, e.problem) == ("requests.e2el_s", "negative value in row 1")
    e = _refusal(traces.check_request_rows, _cols(e2el_s=[0.5, -1.0]), ok, "f", keys, offset=2)
    assert (e.field, e.problem) == ("e2el_s[3]", "negative value")
    cols = _cols(e2el_s=[1e20, 1e20])
    traces.check_request_rows(cols, ok, "f")  # a time is not a token count
    del cols["prompt_tokens"]
    traces.check_request_rows(cols, ok, "f")  # a column not given is not checked


def test_check_points_refuses_a_duplicate_id():
    pts = traces.conform(_trace().points, "points", "here")
    traces.check_points(pts, "here")
    e = _refusal(traces.check_points, pts.assign(point_id=["p8", "p8"]), "here")
    assert _where(e) == ("here", "points.point_id", "duplicate point id")
    e = _refusal(traces.check_points, pts.assign(duration_s=[1.0, 0.0]), "here")
    assert e.file == "here" and e.field.startswith("points.duration_s")


def test_check_latency_unit_at_a_day():
    traces.check_latency_unit(np.array([]), "f", "requests.e2el_s")
    traces.check_latency_unit(np.array([1.0, 86_400.0, 1e9]), "f", "requests.e2el_s")
    e = _refusal(traces.check_latency_unit, np.array([1.0, 86_400.5, 1e9]), "f", "e2els")
    assert _where(e) == (
        "f",
        "e2els",
        "median latency over a day: values look like milliseconds, not seconds",
    )


def test_check_required_names_the_field():
    fields = {"a": (True, "doc"), "b": (False, "doc")}
    traces.check_required({"a": None}, fields, "run.json")
    e = _refusal(traces.check_required, {"b": 1}, fields, "r")
    assert _where(e) == ("r", "run.json.a", "missing required field")
    e = _refusal(traces.check_required, [1], fields, "r")
    assert _where(e) == ("r", "run.json", "must be a JSON object, got list")


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda r: r.update(schema_version=1.0), None, None),
        (lambda r: r.update(schema_version="1"), "run.json.schema_version",
         "'1' is not a version this rackbook reads (1)"),
        (lambda r: r.update(kind="simulated"), "run.json.kind",
         "'simulated' is not one of recorded, published, synthetic"),
        (lambda r: r.update(generator="g"), "run.json.generator",
         "a synthetic trace must name its generator and seed"),
        (lambda r: r.update(generator={"seed": 0}), "run.json.generator", "a synthetic"),
        (lambda r: r.update(generator={"name": "g", "seed": 0, "more": 1}), None, None),
        (lambda r: r.update(commands="one"), "run.json.commands",
         "must be a list of command lines"),
        (lambda r: r.update(parameters=None), "run.json.parameters", "must be an object"),
        (lambda r: r.update(hardware=None, server=None), None, None),
        (lambda r: r.update(hardware=[]), "run.json.hardware", "must be an object, got list"),
        (lambda r: r.update(server="s"), "run.json.server", "must be an object, got str"),
        (lambda r: r.update(server={"gpus": None, "hosts": None}), None, None),
        (lambda r: r.update(server={"gpus": {}}), "run.json.server.gpus",
         "must be a list, got dict"),
        (lambda r: r.update(server={"gpus": [{"name": "H200"}, {}, "x"]}),
         "run.json.server.gpus[2]", "must be an object with a text name"),
        (lambda r: r.update(server={"gpus": [{"name": 1}]}), "run.json.server.gpus[0]",
         "must be an object with a text name"),
        (lambda r: r.update(server={"hosts": 0, "cpu_cores": 2, "memory_bytes": 2**40}), None,
         None),
        (lambda r: r.update(server={"cpu_cores": True}), "run.json.server.cpu_cores",
         "must be a whole number >= 0, got True"),
        (lambda r: r.update(server={"memory_bytes": 1.0}), "run.json.server.memory_bytes",
         "must be a whole number >= 0, got 1.0"),
        (lambda r: r.update(hardware={"hosts": -1}), "run.json.hardware.hosts",
         "must be a whole number >= 0, got -1"),
    ],
)  # fmt: skip
def test_check_run_field_by_field(edit, field, problem):
    t = _trace()
    edit(t.run)
    if field is None:
        assert traces.validate(t, "run.json").run is t.run
        return
    e = _refusal(traces.validate, t, "run.json")
    assert (e.file, e.field) == ("run.json", field) and e.problem.startswith(problem)


def test_only_a_synthetic_trace_needs_a_generator():
    t = _trace("recorded")
    t.run.pop("generator", None)
    traces.validate(t)


def _valid(**tables):
    t = _trace()
    for name, edit in tables.items():
        setattr(t, name, edit(getattr(t, name)))
    return t


def test_validate_names_its_source():
    t = _valid(requests=lambda r: r.assign(request_id=["r0", "r1", "r0"]))
    assert _where(_refusal(traces.validate, t)) == (
        "<trace>",
        "requests.request_id",
        "duplicate id 'r0'",
    )
    t.path = Path("/x/t")
    assert _refusal(traces.validate, t).file == "/x/t"
    assert _refusal(traces.validate, t, "in.json").file == "in.json"


@pytest.mark.parametrize(
    ("tables", "field", "problem"),
    [
        ({"requests": lambda r: r.assign(point_id=["p8", "zz", "aa"])}, "requests.point_id",
         "point 'aa' is not in points.parquet"),
        ({"itl": lambda d: d.assign(request_row=[0, 0, 1, 3])}, "itl.request_row",
         "refers to a request row that is absent"),
        ({"itl": lambda d: d.assign(request_row=[-1, 0, 1, 1])}, "itl.request_row",
         "refers to a request row that is absent"),
        ({"itl": lambda d: d.assign(itl_s=[0.2, 0.25, -0.2, 0.29])}, "itl.itl_s",
         "negative value in row 2"),
        ({"requests": lambda r: r.assign(cached_prompt_tokens=[None, -1, None])},
         "requests.cached_prompt_tokens", "negative value in row 0"),
        ({"requests": lambda r: r.assign(cached_prompt_tokens=[None, 2e10, None])},
         "requests.cached_prompt_tokens", "implausibly large token count"),
        ({"requests": lambda r: r.assign(ttft_s=[0.05, 0.6, 0.0])}, "requests.ttft_s",
         "larger than the request's end-to-end latency in row 1"),
        ({"requests": lambda r: r.assign(e2el_s=[1e5, 1e5, 0.0], ttft_s=[0.05, 0.06, 0.0])},
         "requests.e2el_s", "median latency over a day"),
        ({"points": lambda p: p.assign(point_id=["p8", "p8"])}, "points.point_id",
         "duplicate point id"),
    ],
)  # fmt: skip
def test_validate_refusals(tables, field, problem):
    e = _refusal(traces.validate, _valid(**tables), "t")
    assert (e.file, e.field) == ("t", field) and e.problem.startswith(problem)


def test_validate_reads_failed_requests_latency_apart():
    """A failed request's latency counts in no check (its e2el may be anything finite)."""
    t = _valid(requests=lambda r: r.assign(e2el_s=[0.5, 0.55, 1e9], ttft_s=[0.05, 0.06, 2e9]))
    assert traces.validate(t).requests["e2el_s"].iloc[2] == 1e9


def test_validate_returns_conformed_tables_and_keeps_others():
    t = _trace()
    t.extra["mine"] = pd.DataFrame({"a": ["1"]})
    t.itl_loaded = False
    t.path = Path("p")
    v = traces.validate(t)
    assert v.extra["mine"] is t.extra["mine"]  # not a schema table: as given
    assert v.extra["server_metrics"]["labels"].dtype == "string"
    assert v.itl["request_row"].dtype == np.int64 and v.points["num_gpus"].dtype == "Int64"
    assert (v.path, v.itl_loaded, v.run) == (Path("p"), False, t.run)


@pytest.mark.parametrize(
    ("table", "edit", "field"),
    [
        ("requests", lambda d: d.drop(columns="e2el_s"), "requests.e2el_s"),
        ("itl", lambda d: d.assign(itl_s="x"), "itl.itl_s"),
        ("points", lambda d: d.drop(columns="duration_s"), "points.duration_s"),
    ],
)
def test_validate_names_the_source_of_a_table_it_cannot_conform(table, edit, field):
    t = _trace()
    setattr(t, table, edit(getattr(t, table)))
    e = _refusal(traces.validate, t, "in.json")
    assert (e.file, e.field) == ("in.json", field)


def test_validate_names_the_source_of_an_extra_table_and_published_points():
    t = _trace()
    t.extra["server_metrics"] = t.extra["server_metrics"].drop(columns="value")
    e = _refusal(traces.validate, t, "in.json")
    assert (e.file, e.field) == ("in.json", "server_metrics.value")
    t = _trace("recorded")
    t.extra = {"published_points": _published()}
    e = _refusal(traces.validate, t, "in.json")
    assert _where(e) == (
        "in.json",
        "published_points",
        "only a trace of kind published may carry published points (kind is 'recorded')",
    )
    t = _trace("published")
    t.extra = {"published_points": _published()}
    assert len(traces.validate(t).extra["published_points"]) == len(_published())


def test_validate_checks_published_points_in_a_published_trace_only():
    t = _trace("published")
    t.extra = {"published_points": pd.DataFrame({"point_id": ["a"]})}
    e = _refusal(traces.validate, t, "t")
    assert e.field.startswith("published_points.")


def test_validate_skips_gap_sums_of_a_trace_read_without_gaps():
    t = _valid(itl=lambda d: d.assign(itl_s=[9.0, 9.0, 9.0, 9.0]))
    e = _refusal(traces.validate, t, "in.json")
    assert (e.file, e.field) == ("in.json", "itl.itl_s (request row 0)")
    t.itl, t.itl_loaded = traces._EMPTY_GAPS.copy(), False
    traces.validate(t)


def _consistency(req=None, itl=None, pts=None, **change):
    """One point of 10 s; two requests: one with 2 gaps (0.2 + 0.25 s over a 0.45 s window)
    and 3 tokens, one failed."""
    req = pd.DataFrame(
        {
            "point_id": ["p", "p"],
            "success": [True, False],
            "output_tokens": [3.0, 0.0],
            "start_time_s": [0.0, 1.0],
            "ttft_s": [0.05, 0.0],
            "e2el_s": [0.5, 0.0],
        }
    ) if req is None else req  # fmt: skip
    req = req.assign(**change)
    itl = pd.DataFrame({"request_row": [0, 0], "itl_s": [0.2, 0.25]}) if itl is None else itl
    pts = pd.DataFrame({"point_id": ["p"], "duration_s": [10.0]}) if pts is None else pts
    traces.check_consistency(req, itl, pts, "w")


def test_check_consistency_passes_a_consistent_trace():
    _consistency()
    _consistency(itl=pd.DataFrame({"request_row": [], "itl_s": []}))
    traces.check_consistency(pd.DataFrame({"success": []}), None, pd.DataFrame(), "w")


def test_check_consistency_needs_a_success_with_output():
    e = _refusal(_consistency, success=[False, False])
    assert _where(e) == ("w", "requests.success", "no request succeeded: nothing to measure")
    e = _refusal(_consistency, output_tokens=[0.0, 5.0])
    assert _where(e) == (
        "w",
        "requests.output_tokens",
        "no successful request generated a token",
    )
    e = _refusal(_consistency, output_tokens=[np.nan, 5.0])
    assert e.field == "requests.output_tokens"
    one_token = pd.DataFrame({"request_row": [], "itl_s": []})
    _consistency(itl=one_token, output_tokens=[1.0, 0.0])  # a single token is enough


def test_check_consistency_start_within_the_points_duration():
    """Limit: 10 s x 1.01 + 1 s = 11.1 s."""
    _consistency(start_time_s=[11.1, np.nan])
    e = _refusal(_consistency, start_time_s=[0.0, 11.1 + 1e-9])
    assert _where(e) == (
        "w",
        "requests.start_time_s (row 1)",
        "11.1 s is past its point's duration (10 s)",
    )
    pts = pd.DataFrame({"point_id": ["p"], "duration_s": [1234.5]})
    e = _refusal(_consistency, pts=pts, start_time_s=[1e4, 0.0])
    assert e.problem == "10,000 s is past its point's duration (1,234.5 s)"


def test_check_consistency_gaps_add_up_to_the_decode_window():
    """Window 0.45 s: the gaps may be 5 % + 0.01 s = 0.0325 s off, no more."""
    _consistency(itl=pd.DataFrame({"request_row": [0, 0], "itl_s": [0.2, 0.2825 - 1e-9]}))
    _consistency(itl=pd.DataFrame({"request_row": [0, 0], "itl_s": [0.2, 0.2175 + 1e-9]}))
    e = _refusal(_consistency, itl=pd.DataFrame({"request_row": [0, 0], "itl_s": [0.2, 0.2826]}))
    assert _where(e) == (
        "w",
        "itl.itl_s (request row 0)",
        "the request's gaps add up to 0.4826 s, its e2el_s - ttft_s is 0.45 s "
        "(more than 5% + 0.01 s apart)",
    )
    e = _refusal(_consistency, itl=pd.DataFrame({"request_row": [0, 0], "itl_s": [0.2, 0.2174]}))
    assert e.problem.startswith("the request's gaps add up to 0.4174 s")
    # a failed request's gaps are not summed
    _consistency(
        itl=pd.DataFrame({"request_row": [0, 0, 1], "itl_s": [0.2, 0.25, 5.0]}),
        output_tokens=[3, 9],
    )


def test_check_consistency_tokens_per_chunk():
    """Two gaps: 3 chunks, so 3 to 72 tokens."""
    _consistency(output_tokens=[72.0, 0.0])
    e = _refusal(_consistency, output_tokens=[73.0, 0.0])
    assert _where(e) == (
        "w",
        "requests.output_tokens (row 0)",
        "73 tokens is over 24 times its 3 chunks (gaps + 1)",
    )
    e = _refusal(_consistency, output_tokens=[2.0, 0.0])
    assert _where(e) == (
        "w",
        "requests.output_tokens (row 0)",
        "2 tokens is fewer than its 3 chunks (gaps + 1)",
    )
    e = _refusal(_consistency, output_tokens=[2000.0, 0.0],
                 itl=pd.DataFrame({"request_row": [0] * 2, "itl_s": [0.2, 0.25]}))  # fmt: skip
    assert e.problem == "2,000 tokens is over 24 times its 3 chunks (gaps + 1)"
    # without gaps a request's tokens are not counted in chunks
    _consistency(itl=pd.DataFrame({"request_row": [], "itl_s": []}), output_tokens=[500.0, 0.0])


def test_check_consistency_names_the_first_bad_request():
    req = pd.DataFrame(
        {
            "point_id": ["p"] * 3,
            "success": [True] * 3,
            "output_tokens": [2.0, 5.0, 1.0],
            "start_time_s": [0.0, 20.0, 30.0],
            "ttft_s": [0.0] * 3,
            "e2el_s": [0.1, 0.2, 0.3],
        }
    )
    itl = pd.DataFrame({"request_row": [0, 1, 1, 2, 2], "itl_s": [0.1, 0.1, 0.1, 0.1, 0.2]})
    pts = pd.DataFrame({"point_id": ["p"], "duration_s": [10.0]})
    e = _refusal(traces.check_consistency, req, itl, pts, "w")
    assert e.field == "requests.start_time_s (row 1)"
    req["start_time_s"] = 0.0
    e = _refusal(traces.check_consistency, req, itl, pts, "w")
    assert e.field == "requests.output_tokens (row 2)"
    req["output_tokens"] = [2.0, 5.0, 3.0]
    itl.loc[4, "itl_s"] = 0.5
    e = _refusal(traces.check_consistency, req, itl, pts, "w")
    assert e.field == "itl.itl_s (request row 2)"


def test_check_consistency_counts_gaps_in_blocks():
    """Gap rows are counted 2**20 at a time: a request's gaps split over two blocks add up."""
    n = (1 << 20) + 2
    req = pd.DataFrame(
        {"point_id": ["p"] * 2, "success": [True, True], "output_tokens": [2.0, float(n)],
         "start_time_s": [0.0, 0.0], "ttft_s": [0.0, 0.0], "e2el_s": [1.0, (n - 1) * 1e-6]}
    )  # fmt: skip
    rows = np.ones(n, dtype=np.int64)
    rows[0] = 0
    gaps = np.full(n, 1e-6)
    gaps[0] = 1.0
    pts = pd.DataFrame({"point_id": ["p"], "duration_s": [10.0]})
    traces.check_consistency(req, pd.DataFrame({"request_row": rows, "itl_s": gaps}), pts, "w")
    req.loc[1, "output_tokens"] = float(n - 1)  # fewer than its n chunks
    e = _refusal(
        traces.check_consistency, req, pd.DataFrame({"request_row": rows, "itl_s": gaps}), pts, "w"
    )
    assert e.problem == f"{n - 1:,} tokens is fewer than its {n:,} chunks (gaps + 1)"


def test_conform_refusals_and_coercions_one_by_one():
    req = _trace().requests
    e = _refusal(traces.conform, req.drop(columns="ttft_s"), "requests", "f")
    assert _where(e) == ("f", "requests.ttft_s", "missing column")
    e = _refusal(traces.conform, req.assign(ttft_s=[0.1, None, np.nan]), "requests", "f")
    assert _where(e) == ("f", "requests.ttft_s", "missing value in row 1")
    e = _refusal(traces.conform, req.assign(ttft_s=[0.1, -np.inf, 0.0]), "requests", "f")
    assert _where(e) == ("f", "requests.ttft_s", f"{traces.NON_FINITE} in row 1")
    e = _refusal(traces.conform, req.assign(start_time_s=[0.0, 1.0, np.inf]), "requests", "f")
    assert _where(e) == ("f", "requests.start_time_s", f"{traces.NON_FINITE} in row 2")
    out = traces.conform(req.assign(start_time_s=[0.0, None, 2]), "requests", "f")
    assert out["start_time_s"].dtype == np.float64 and np.isnan(out["start_time_s"].iloc[1])
    e = _refusal(traces.conform, req.assign(concurrency=[8, 1.5, None]), "requests", "f")
    assert _where(e) == ("f", "requests.concurrency", "expected int64: non-integer value")
    out = traces.conform(req.assign(concurrency=[8.0, 2.0, None]), "requests", "f")
    assert out["concurrency"].dtype == "Int64" and out["concurrency"].tolist()[:2] == [8, 2]
    out = traces.conform(req.assign(concurrency=np.array([1, 2, 3])), "requests", "f")
    assert out["concurrency"].dtype == "Int64"  # int64 made nullable
    out = traces.conform(req.assign(success=[1, 0, 1]), "requests", "f")
    assert out["success"].dtype == bool and out["success"].tolist() == [True, False, True]
    e = _refusal(traces.conform, req.assign(success=[1, 2, 0]), "requests", "f")
    assert e.problem == "expected bool: not a boolean"
    out = traces.conform(req.assign(success=[True, False, None]).iloc[:2], "requests", "f")
    assert out["success"].tolist() == [True, False]
    out = traces.conform(req.assign(prompt_tokens=[True, False, True]), "requests", "f")
    assert out["prompt_tokens"].dtype == np.int64 and out["prompt_tokens"].tolist() == [1, 0, 1]
    out = traces.conform(req.assign(error=[1, "y", "x"]), "requests", "f")
    assert out["error"].dtype == "string" and out["error"].tolist()[0] == "1"
    e = _refusal(traces.conform, req.assign(prompt_tokens=["1", "x", "2"]), "requests", "f")
    assert e.field == "requests.prompt_tokens" and e.problem.startswith("expected int64: ")


def test_conform_keeps_an_exact_column_without_a_copy():
    itl = pd.DataFrame({"request_row": np.array([0, 1]), "itl_s": np.array([0.1, 0.2])})
    out = traces.conform(itl, "itl", "f")
    assert np.shares_memory(out["itl_s"].to_numpy(), itl["itl_s"].to_numpy())
    assert np.shares_memory(out["request_row"].to_numpy(), itl["request_row"].to_numpy())


def test_to_arrow_declared_types_and_others_inferred():
    df = pd.DataFrame({"request_row": [0, 1], "itl_s": [1, 2], "mine": ["a", None]})
    arrow = traces.to_arrow(df, schema.ITL)
    assert arrow.schema.names == ["request_row", "itl_s", "mine"]
    assert [str(t) for t in arrow.schema.types] == ["int64", "double", "large_string"]
    assert arrow.column("mine").null_count == 1
    b = traces.to_arrow(pd.DataFrame({"success": [1, 0]}), schema.REQUESTS)
    assert str(b.schema.types[0]) == "bool"
    nan = traces.to_arrow(pd.DataFrame({"start_time_s": [0.0, np.nan]}), schema.REQUESTS)
    assert nan.column("start_time_s").null_count == 1  # NaN stored as null, as pandas means it


def test_write_trace_refuses_without_writing(tmp_path):
    t = _trace()
    t.requests = t.requests.assign(ttft_s=[0.05, -1.0, 0.0])
    e = _refusal(traces.write_trace, tmp_path / "t", t, source="in.json")
    assert _where(e) == ("in.json", "requests.ttft_s", "negative value in row 1")
    e = _refusal(traces.write_trace, tmp_path / "u", t)
    assert e.file == str(tmp_path / "u")
    assert list(tmp_path.iterdir()) == []  # nothing half-written
    good = traces.write_trace(tmp_path / "t", _trace())
    files = sorted(p.name for p in good.iterdir())
    e = _refusal(traces.write_trace, good, _trace(), overwrite=False)
    assert _where(e) == (str(good), "output", "a trace exists there: refusing to replace it")
    assert sorted(p.name for p in good.iterdir()) == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]
    again = _trace()
    again.requests = again.requests.assign(scenario=["z", "z", "z"])
    assert traces.write_trace(good, again) == good  # replaced: overwrite is the default
    assert traces.read_table(good, "requests")["scenario"].tolist() == ["z", "z", "z"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("")
    e = _refusal(traces.write_trace, mine, t)  # the folder is refused before the values
    assert (e.field, e.problem[:20]) == ("output", "holds 'notes.txt' an")
    (tmp_path / "res").mkdir()
    from rackbook.core import fsio

    fsio.write_marker(tmp_path / "res", "results")
    e = _refusal(traces.write_trace, tmp_path / "res", _trace())
    assert e.problem.startswith("holds a rackbook results output, not trace")
    assert json.loads((good / "run.json").read_text()) == json.loads(json.dumps(_run() | {
        "trace_id": json.loads((good / "run.json").read_text())["trace_id"],
        "created": json.loads((good / "run.json").read_text())["created"],
    }))  # fmt: skip


def test_write_trace_stores_declared_types_and_zstd(tmp_path):
    import pyarrow.parquet as pq

    out = traces.write_trace(tmp_path / "t", _trace())
    req = pq.ParquetFile(out / "requests.parquet")
    assert req.metadata.row_group(0).column(0).compression == "ZSTD"
    types = dict(zip(req.schema_arrow.names, map(str, req.schema_arrow.types), strict=True))
    assert types["concurrency"] == "int64" and types["success"] == "bool"
    assert types["ttft_s"] == "double" and types["request_id"] == "string"
    assert types["batch_size"] == "int64"  # all null, still the declared type
    assert types["scenario"] == "large_string"  # not declared: as pandas gives it
    sm = pq.ParquetFile(out / "server_metrics.parquet").schema_arrow
    assert str(sm.field("value").type) == "double"


def test_read_run_refusals(tmp_path):
    e = _refusal(traces.read_run, tmp_path / "absent")
    assert _where(e) == (str(tmp_path / "absent"), "-", "trace folder does not exist")
    (tmp_path / "f").write_text("")
    e = _refusal(traces.read_run, tmp_path / "f")
    assert _where(e) == (
        str(tmp_path / "f"),
        "-",
        "not a folder (a trace is a folder with run.json and Parquet tables)",
    )
    e = _refusal(traces.read_run, tmp_path)
    assert _where(e) == (str(tmp_path / "run.json"), "-", "missing run.json")
    (tmp_path / "run.json").write_text("[]")
    e = _refusal(traces.read_run, str(tmp_path))
    assert _where(e) == (str(tmp_path / "run.json"), "run.json", "must be a JSON object, got list")


def test_table_rows_and_read_table(tmp_path):
    out = traces.write_trace(tmp_path / "t", _trace())
    assert [traces.table_rows(str(out), n) for n in ("requests", "itl", "points")] == [3, 4, 2]
    got = traces.read_table(out, "requests", ["ttft_s", "success"])
    assert list(got.columns) == ["ttft_s", "success"] and got["ttft_s"].tolist() == [0.05, 0.06, 0]
    e = _refusal(traces.table_rows, out, "absent")
    assert _where(e) == (str(out / "absent.parquet"), "-", "missing table absent.parquet")
    (out / "dir.parquet").mkdir()
    assert _refusal(traces.read_table, out, "dir").problem == "missing table dir.parquet"
    (out / "bad.parquet").write_bytes(b"PAR1")
    e = _refusal(traces.read_table, out, "bad")
    assert (e.file, e.field) == (str(out / "bad.parquet"), "-")
    assert e.problem.startswith("unreadable Parquet: ")


def test_read_trace_reads_extra_tables_by_name(tmp_path):
    t = _trace()
    t.extra["zeta"] = pd.DataFrame({"a": [1]})
    out = traces.write_trace(tmp_path / "t", t)
    back = traces.read_trace(out)
    assert list(back.extra) == ["server_metrics", "zeta"] and back.itl_loaded
    no_gaps = traces.read_trace(out, itl=False)
    assert not no_gaps.itl_loaded and list(no_gaps.itl.columns) == ["request_row", "itl_s"]
    assert no_gaps.itl["itl_s"].dtype == np.float64
    assert len(traces._EMPTY_GAPS) == 0  # the shared empty table is copied, never filled


def test_check_row_counts_at_the_bounds(tmp_path, monkeypatch):
    out = traces.write_trace(tmp_path / "t", _trace())  # 3 requests, 6 tokens, 4 gaps
    assert traces.check_row_counts(str(out)) == (3, 4)
    monkeypatch.setitem(limits.BOUNDS, "requests", 3)
    assert traces.check_row_counts(out) == (3, 4)
    traces.read_trace(out, itl=False)
    monkeypatch.setitem(limits.BOUNDS, "requests", 2)
    e = _refusal(traces.check_row_counts, out)
    assert (e.file, e.field) == (str(out / "requests.parquet"), "-")
    assert e.problem == "3 is too large: at most 2 (rackbook's requests bound)"
    assert _refusal(traces.read_trace, out, itl=False).problem == e.problem  # counted first


def test_a_read_without_gaps_at_the_bound_does_not_count_them(tmp_path, monkeypatch):
    """At the requests bound a read with ``itl=False`` leaves the gap table unread: its row
    count (here one more than the 6 tokens) is only compared on a read with gaps or past it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = traces.write_trace(tmp_path / "t", _trace())
    table = pa.table({"request_row": [0] * 7, "itl_s": [0.1] * 7})
    pq.write_table(table, out / "itl.parquet")
    monkeypatch.setitem(limits.BOUNDS, "requests", 3)
    assert len(traces.read_trace(out, itl=False).requests) == 3
    e = _refusal(traces.read_trace, out)
    assert e.problem.startswith("7 gap rows for 3 requests that generated 6 tokens")
    monkeypatch.setitem(limits.BOUNDS, "requests", 2)
    assert _refusal(traces.read_trace, out, itl=False).field == "-"


def _with_tokens(tmp_path, outputs, gaps):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "t"
    out.mkdir(exist_ok=True)
    pq.write_table(pa.table({"output_tokens": outputs}), out / "requests.parquet")
    pq.write_table(pa.table({"itl_s": [0.1] * gaps}), out / "itl.parquet")
    return out


def test_check_row_counts_gaps_at_most_one_per_token(tmp_path):
    assert traces.check_row_counts(_with_tokens(tmp_path, [2, 3], 5)) == (2, 5)
    e = _refusal(traces.check_row_counts, _with_tokens(tmp_path, [2, 3], 6))
    assert _where(e) == (
        str(tmp_path / "t" / "itl.parquet"),
        "-",
        "6 gap rows for 2 requests that generated 5 tokens: a request has at most one gap "
        "per token",
    )
    e = _refusal(traces.check_row_counts, _with_tokens(tmp_path, [4, -3, None], 5))
    assert e.problem.startswith("5 gap rows for 3 requests that generated 4 tokens")
    e = _refusal(traces.check_row_counts, _with_tokens(tmp_path, ["2", "x"], 3))
    assert e.problem.startswith("3 gap rows for 2 requests that generated 2 tokens")
    assert traces.check_row_counts(_with_tokens(tmp_path, [0, 0, 0], 3)) == (3, 3)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"other": [1]}), tmp_path / "t" / "requests.parquet")
    assert traces.check_row_counts(tmp_path / "t") == (1, 3)  # no token column: not compared


def _table(tmp_path, name, **cols):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp_path.mkdir(exist_ok=True)
    pq.write_table(pa.table(cols), tmp_path / f"{name}.parquet")
    return tmp_path


def test_iter_table_in_chunks_with_offsets(tmp_path):
    folder = _table(tmp_path, "itl", request_row=[0, 0, 1, 2, 2], itl_s=[0.1, 0.2, 0.3, 0.4, 0.5])
    got = list(traces.iter_table(str(folder), "itl", ["itl_s", "request_row"], chunk_rows=2))
    assert [o for o, _ in got] == [0, 2, 4]
    assert [c["itl_s"].tolist() for _, c in got] == [[0.1, 0.2], [0.3, 0.4], [0.5]]
    assert [c["request_row"].tolist() for _, c in got] == [[0, 0], [1, 2], [2]]
    assert got[0][1]["request_row"].dtype == np.int64
    (whole,) = traces.iter_table(folder, "itl", ["itl_s"])
    assert whole[0] == 0 and whole[1]["itl_s"].tolist() == [0.1, 0.2, 0.3, 0.4, 0.5]


def test_iter_table_strings_as_codes_and_values(tmp_path):
    folder = _table(tmp_path, "requests", point_id=["b", "a", "b", "c"], e2el_s=[1, 2, 3, 4])
    (c0, c1) = traces.iter_table(folder, "requests", ["point_id", "e2el_s"], chunk_rows=3)
    codes, values = c0[1]["point_id"]
    assert codes.dtype == np.int32 and [values[i] for i in codes] == ["b", "a", "b"]
    codes, values = c1[1]["point_id"]
    assert [values[i] for i in codes] == ["c"]
    assert c0[1]["e2el_s"].dtype == np.float64 and c0[1]["e2el_s"].tolist() == [1.0, 2.0, 3.0]


def test_iter_table_refuses_by_column_and_row(tmp_path):
    folder = _table(tmp_path, "itl", request_row=[0, 1, 2], itl_s=[0.1, 0.2, np.inf])
    e = _refusal(lambda: list(traces.iter_table(folder, "itl", ["itl_s"], chunk_rows=2)))
    assert _where(e) == (str(folder), "itl.itl_s", f"{traces.NON_FINITE} in row 2")
    folder = _table(tmp_path, "itl", request_row=[0, None, 2], itl_s=[0.1, 0.2, 0.3])
    e = _refusal(lambda: list(traces.iter_table(folder, "itl", ["itl_s", "request_row"], 2)))
    assert _where(e) == (str(folder), "itl.request_row", "missing value in row 1")
    folder = _table(tmp_path, "itl", request_row=[0, 1, 2], itl_s=[0.1, 0.2, 0.3])
    e = _refusal(lambda: list(traces.iter_table(folder, "requests", ["ttft_s"])))
    assert _where(e) == (str(folder / "requests.parquet"), "-", "missing table requests.parquet")
    _table(tmp_path, "requests", ttft_s=["0.5", "soon"])
    e = _refusal(lambda: list(traces.iter_table(folder, "requests", ["ttft_s"])))
    assert (e.file, e.field) == (str(folder), "requests.ttft_s")
    assert e.problem.startswith("expected float64: ")
    e = _refusal(lambda: list(traces.iter_table(folder, "requests", ["e2el_s"])))
    assert _where(e) == (str(folder), "requests.e2el_s", "missing column")
    (folder / "itl.parquet").write_bytes(b"PAR1 and not more")
    e = _refusal(lambda: list(traces.iter_table(folder, "itl", ["itl_s"])))
    assert e.file == str(folder / "itl.parquet") and e.problem.startswith("unreadable Parquet")


def test_iter_table_names_a_page_it_cannot_read(tmp_path):
    """The footer reads, a data page does not: the error comes while the rows are read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "itl.parquet"
    rows = np.arange(1000)
    pq.write_table(pa.table({"request_row": rows, "itl_s": rows / 1e3}), f, compression="none")
    at = pq.ParquetFile(f).metadata.row_group(0).column(1).dictionary_page_offset
    data = bytearray(f.read_bytes())
    data[at : at + 16] = b"\xff" * 16
    f.write_bytes(bytes(data))
    assert traces.table_rows(tmp_path, "itl") == 1000
    e = _refusal(lambda: list(traces.iter_table(tmp_path, "itl", ["itl_s"])))
    assert (e.file, e.field) == (str(f), "-") and e.problem.startswith("unreadable Parquet: ")


def test_iter_table_encodes_a_text_column_stored_as_numbers(tmp_path):
    folder = _table(tmp_path, "points", point_id=[8, 16, 8])
    ((_, cols),) = traces.iter_table(folder, "points", ["point_id"])
    codes, values = cols["point_id"]
    assert codes.tolist() == [0, 1, 0] and values == ["8", "16"] and codes.dtype == np.int32


def test_iter_table_nullable_floats_keep_nan(tmp_path):
    folder = _table(tmp_path, "requests", start_time_s=[0.0, None, 2.0], ttft_s=[1, 2, 3])
    ((_, cols),) = traces.iter_table(folder, "requests", ["start_time_s", "ttft_s"])
    assert np.isnan(cols["start_time_s"][1]) and cols["ttft_s"].dtype == np.float64
    e = _refusal(lambda: list(traces.iter_table(
        _table(tmp_path, "requests", ttft_s=[np.nan, 1.0]), "requests", ["ttft_s"])))  # fmt: skip
    assert e.problem == f"{traces.NON_FINITE} in row 0"
    e = _refusal(lambda: list(traces.iter_table(
        _table(tmp_path, "requests", ttft_s=[1.0, -np.inf]), "requests", ["ttft_s"])))  # fmt: skip
    assert e.problem == f"{traces.NON_FINITE} in row 1"


def test_read_ahead_keeps_order_and_raises_in_place():
    assert list(traces._read_ahead(iter(range(7)), depth=3)) == list(range(7))
    assert list(traces._read_ahead(iter([]))) == []
    assert list(traces._read_ahead(iter([1, None, 0, 2]))) == [1, None, 0, 2]  # no end marker
    names = []

    def named():
        names.append(threading.current_thread().name)
        yield 1

    assert list(traces._read_ahead(named())) == [1]
    assert names[0].startswith("rackbook-read-ahead")

    def failing():
        yield 1
        yield 2
        raise ValueError("bad batch")

    got = []
    with pytest.raises(ValueError, match="bad batch"):
        for x in traces._read_ahead(failing()):
            got.append(x)
    assert got == [1, 2]


def test_keep_rows_renumbers_gaps():
    t = traces.validate(_trace())
    kept = traces.keep_rows(t, np.array([False, True, True]))
    assert kept.requests["request_id"].tolist() == ["r1", "r2"]
    assert kept.requests.index.tolist() == [0, 1]
    assert kept.itl["request_row"].tolist() == [0, 0] and kept.itl["itl_s"].tolist() == [0.2, 0.29]
    assert kept.itl.index.tolist() == [0, 1] and kept.itl["request_row"].dtype == np.int64
    assert kept.points is t.points and kept.run is t.run
    assert list(kept.itl.columns) == ["request_row", "itl_s"]
    assert list(kept.requests.columns) == list(t.requests.columns)
    kept = traces.keep_rows(t, np.array([True, False, True]), pd.Series([True, False]))
    assert kept.itl["request_row"].tolist() == [0, 0] and kept.itl["itl_s"].tolist() == [0.2, 0.25]
    assert kept.points["point_id"].tolist() == ["p8"] and kept.points.index.tolist() == [0]
    assert list(kept.points.columns) == list(t.points.columns)
    t.itl = t.itl.iloc[:0]
    assert len(traces.keep_rows(t, np.array([True, True, False])).itl) == 0


def test_concat_moves_gap_rows_and_merges_extra_tables():
    a, b = traces.validate(_trace()), traces.validate(_trace())
    b.extra["other"] = pd.DataFrame({"x": [1]})
    t = traces.concat([a, b], {"kind": "merged"})
    assert t.run == {"kind": "merged"} and len(t.requests) == 6 and len(t.points) == 4
    assert t.requests.index.tolist() == list(range(6))
    assert t.itl["request_row"].tolist() == [0, 0, 1, 1, 3, 3, 4, 4]
    assert list(t.extra) == ["server_metrics", "other"]
    assert t.extra["server_metrics"].index.tolist() == [0, 1, 2, 3]
    assert t.itl.index.tolist() == list(range(8))


def test_point_batch_and_ranks():
    pts = pd.DataFrame(
        {
            "batch_size": pd.array([4, None, None, None], dtype="Int64"),
            "concurrency": pd.array([64, 16, 10, None], dtype="Int64"),
            "decode_ranks": pd.array([None, 4, 4, 2], dtype="Int64"),
        }
    )
    assert traces.point_batch(pts).tolist() == [4, 16, 10, pd.NA]
    assert traces.point_batch(pts).dtype == "Int64"
    assert traces.point_decode_ranks(pts).tolist() == [1, 4, 4, 2]
    assert traces.point_decode_ranks(pts).dtype == "Int64"
    assert traces.point_rank_batch(pts).tolist() == [4, 4, pd.NA, pd.NA]
    assert traces.point_rank_batch(pts).dtype == "Int64"
    no_ranks = pts.drop(columns="decode_ranks")
    assert traces.point_decode_ranks(no_ranks).tolist() == [1, 1, 1, 1]
    assert traces.point_decode_ranks(no_ranks).dtype == "Int64"
    assert traces.point_rank_batch(no_ranks).tolist() == [4, 16, 10, pd.NA]


def test_check_consistency_sums_one_gap_and_skips_none():
    """Row 0: one gap over a 0.125 s window, exactly 5 % + 0.01 s = 0.01625 s short (in
    floating point too); row 1 succeeded without gaps (a one-token request): not summed."""
    req = pd.DataFrame(
        {"point_id": ["p", "p"], "success": [True, True], "output_tokens": [2.0, 1.0],
         "start_time_s": [0.0, 0.0], "ttft_s": [0.0, 0.0], "e2el_s": [0.125, 1.0]}
    )  # fmt: skip
    pts = pd.DataFrame({"point_id": ["p"], "duration_s": [10.0]})
    at_limit = pd.DataFrame({"request_row": [0], "itl_s": [0.10875]})
    traces.check_consistency(req, at_limit, pts, "w")
    past = pd.DataFrame({"request_row": [0], "itl_s": [0.10874]})
    e = _refusal(traces.check_consistency, req, past, pts, "w")
    assert e.field == "itl.itl_s (request row 0)"
    assert e.problem.startswith("the request's gaps add up to 0.10874 s, its e2el_s - ttft_s")
