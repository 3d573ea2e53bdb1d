"""``rackbook.core.schema``'s value rules at their bounds, the published points' checks and the
reference page's tables (issue 39: what each refusal names, and where it starts)."""

from __future__ import annotations

import pandas as pd
import pytest

from rackbook import limits, paths
from rackbook.core import schema, traces
from rackbook.errors import InputError

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
    assert (err.value.field, err.value.problem) == (
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
    assert err.value.field == "published_points.point_id"
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
    assert err.value.field == "published_points.gpus"
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
