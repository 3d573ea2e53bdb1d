"""Trace folders (:mod:`rackbook.core.traces`): a written trace reads back equal, tables are
coerced to their schema's exact dtypes or refused naming the column, and run.json's kinds."""

from __future__ import annotations

import json

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
