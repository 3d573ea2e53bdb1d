"""The importers' registry (rackbook.core.importers): every format behind one interface, the
option rules, the command line recorded, write() through the registry, and the trace core
reading published traces without the importers."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rackbook import cli, paths
from rackbook.core import importers, traces
from rackbook.errors import InputError

FIX = Path(__file__).parent / "fixtures"
URL = "https://github.com/o/r/blob/0123456789abcdef0123456789abcdef01234567/summary.csv"
#: One good input per format, with the options it needs.
GOOD = {
    "vllm-bench": (FIX / "vllm-bench-serve-b32.json", importers.Options(labels={"k": "v"})),
    "offline-engine": (FIX / "offline-engine" / "example.json", importers.Options()),
    "inferencex": (FIX / "published" / "inferencex-rows.json", importers.Options()),
    "mlperf": (
        FIX / "published" / "mlperf-summary.csv",
        importers.Options(model="deepseek-r1", source_url=URL, source_date="2026-12-03"),
    ),
    "sglang-cookbook": (
        FIX / "published" / "sglang-v4-cells.jsx",
        importers.Options(source_url=URL),
    ),
}


def test_every_format_is_registered_with_a_module_of_the_interface():
    assert list(importers.REGISTRY) == [
        "vllm-bench", "offline-engine", "inferencex", "mlperf", "sglang-cookbook",
    ]  # fmt: skip
    assert set(GOOD) == set(importers.REGISTRY)
    fields = set(importers.FLAGS)
    for name, f in importers.REGISTRY.items():
        mod = f.importer()
        assert mod.__name__ == f"rackbook.core.importers.{f.module}"
        assert mod.FORMAT == name
        assert callable(mod.read) and callable(mod.summary)
        assert set(f.options) <= fields and f.kind in (None, "published")
    # the command line offers exactly the registered formats
    choices = next(
        a.choices
        for a in cli.build_parser()._subparsers._group_actions[0].choices["import"]._actions
        if a.dest == "format"
    )
    assert list(choices) == list(importers.REGISTRY)


def test_the_registry_the_schema_and_the_command_line_load_no_pandas():
    """Parsing a command line, the registry and the trace format (imported by every verb through
    provenance) stay light: loading pandas there cost every ``rackbook run`` seconds."""
    code = (
        "import sys; from rackbook import cli; from rackbook.core import importers, schema; "
        "cli.parse(['import', 'mlperf', 'x.csv', '-o', 'y']); "
        "print([m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy', 'pyarrow')]"
        " + [m for m in sys.modules if m.startswith('rackbook.core.importers.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


FILE_SAYS = "not for offline-engine (the file says it)"
NOT_PUBLISHED = "only for inferencex, mlperf, sglang-cookbook, not vllm-bench"
DAY = "2026-01-01"


@pytest.mark.parametrize(
    ("fmt", "options", "flag", "problem"),
    [
        ("vllm-bench", {"engine": "e"}, "--engine", "only for offline-engine, not vllm-bench"),
        ("mlperf", {"engine": "e"}, "--engine", "only for offline-engine, not mlperf"),
        ("offline-engine", {"labels": {"a": "b"}}, "--label", FILE_SAYS),
        ("offline-engine", {"kind": "recorded"}, "--kind", FILE_SAYS),
        ("offline-engine", {"model": "m"}, "--model", FILE_SAYS),
        ("offline-engine", {"source_url": URL}, "--source-url", FILE_SAYS),
        ("offline-engine", {"source_date": DAY}, "--source-date", FILE_SAYS),
        ("vllm-bench", {"model": "m"}, "--model", "only for mlperf, not vllm-bench"),
        ("vllm-bench", {"source_url": URL}, "--source-url", NOT_PUBLISHED),
        ("vllm-bench", {"source_date": DAY}, "--source-date", NOT_PUBLISHED),
        ("inferencex", {"labels": {"a": "b"}}, "--label", "only for vllm-bench, not inferencex"),
        ("sglang-cookbook", {"kind": "recorded"}, "--kind",
         "only for vllm-bench, not sglang-cookbook"),
        ("inferencex", {"model": "m"}, "--model", "only for mlperf, not inferencex"),
        ("sglang-cookbook", {"model": "m"}, "--model", "only for mlperf, not sglang-cookbook"),
        ("mlperf", {"hardware": importers.DeclaredGpus("b300", "B300", "B300", 4, "h.yaml")},
         "--gpu", "only for vllm-bench, not mlperf"),
        ("offline-engine", {"hardware": importers.DeclaredGpus("b300", "B", "B", 4, "h.yaml")},
         "--gpu", "not for offline-engine (the file says it)"),
        ("nope", {}, "format", "unknown 'nope'; expected one of vllm-bench, offline-engine, "
         "inferencex, mlperf, sglang-cookbook"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit_the_format_are_refused(fmt, options, flag, problem):
    with pytest.raises(InputError) as exc:
        importers.check_options(fmt, "IN", importers.Options(**options))
    assert str(exc.value) == f"IN: {flag}: {problem}"


@pytest.mark.parametrize("fmt", list(importers.REGISTRY))
def test_every_option_a_format_lists_is_accepted(fmt):
    given = {"labels": {"a": "b"}, "kind": "published", "engine": "e", "model": "m",
             "source_url": URL, "source_date": "2026-01-01",
             "hardware": importers.DeclaredGpus("b300", "B300", "B300", 4, "hw.yaml")}  # fmt: skip
    f = importers.REGISTRY[fmt]
    importers.check_options(fmt, "IN", importers.Options(**{o: given[o] for o in f.options}))


@pytest.mark.parametrize("fmt", list(importers.REGISTRY))
def test_write_through_the_registry_is_the_trace_read_back(fmt, tmp_path):
    src, options = GOOD[fmt]
    out = tmp_path / "t"
    t = importers.write(fmt, src, out, options)
    back = traces.read_trace(out)
    assert t.trace_id == back.trace_id and t.trace_id
    assert t.kind == back.kind == (importers.REGISTRY[fmt].kind or t.run["kind"])
    for a, b in [(t.requests, back.requests), (t.points, back.points)] + [
        (t.extra[k], back.extra[k]) for k in t.extra
    ]:
        assert len(a) == len(b) and set(a.columns) <= set(b.columns)
    # the line rackbook import prints is built from the written trace
    line = importers.summary(fmt, t)
    assert line == importers.summary(fmt, back) and f"trace_id {t.trace_id}" in line
    if importers.REGISTRY[fmt].kind == "published":
        assert back.run["engine"]["what"] == importers.REGISTRY[fmt].what


def test_the_command_line_recorded(tmp_path):
    src, options = GOOD["mlperf"]
    out = tmp_path / "ml"
    t = importers.write("mlperf", src, out, options)
    want = [  # the checkout's path is recorded as $REPO
        "rackbook", "import", "mlperf", "$REPO/tests/fixtures/published/mlperf-summary.csv",
        "-o", str(out), "--model", "deepseek-r1", "--source-url", URL,
        "--source-date", "2026-12-03",
    ]  # fmt: skip
    assert shlex.split(t.run["commands"][0]) == want
    assert t.run["parameters"]["model"] == "deepseek-r1"
    src, _ = GOOD["offline-engine"]
    t = importers.write("offline-engine", src, tmp_path / "b", importers.Options(engine="x"))
    assert shlex.split(t.run["commands"][0])[-2:] == ["--engine", "x"]
    assert set(t.points["engine"]) == {"x"}
    t = importers.write("inferencex", GOOD["inferencex"][0], tmp_path / "i",
                        importers.Options(command="as given"))  # fmt: skip
    assert t.run["commands"] == ["as given"]


def test_the_cli_import_goes_through_the_registry(tmp_path, run_cli, monkeypatch):
    seen = []
    real = importers.write

    def spy(fmt, path, output, options=None):
        seen.append((fmt, Path(path).name, options))
        return real(fmt, path, output, options)

    monkeypatch.setattr(importers, "write", spy)
    src = GOOD["sglang-cookbook"][0]
    code, out, err = run_cli("import", "sglang-cookbook", str(src), "-o", str(tmp_path / "s"),
                             "--source-url", URL)  # fmt: skip
    assert code == 0, err
    assert seen == [("sglang-cookbook", src.name, importers.Options(source_url=URL))]
    assert out.startswith(f"wrote {tmp_path / 's'}: 4 published points, trace_id ")


def test_reading_a_published_trace_needs_no_importer():
    """check_points lives in core.schema: validating a published trace loads no importer (it
    imported rackbook.core.published from inside traces.validate before)."""
    code = (
        "import sys; from rackbook.core import traces; "
        f"t = traces.read_trace({str(paths.DATA / 'published' / 'mlperf-v6.1-dsr1')!r}); "
        "print(len(t.extra['published_points']), json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('rackbook.core.importers', 'rackbook.core.published')))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    )
    n, loaded = out.stdout.split(" ", 1)
    assert int(n) > 0 and json.loads(loaded) == []


def test_check_points_refuses_a_bad_published_table():
    from rackbook.core import schema

    t = traces.read_trace(paths.DATA / "published" / "mlperf-v6.1-dsr1")
    pts = t.extra["published_points"]
    schema.check_points(pts, t.run, "T")  # the shipped table passes
    bad = pts.copy()
    bad.loc[0, "tok_s_per_gpu"] = -1.0
    with pytest.raises(
        InputError, match=r"^T: published_points.tok_s_per_gpu: must be > 0 .*, got -1 \(row 0\)"
    ):
        schema.check_points(bad, t.run, "T")
    with pytest.raises(InputError, match="only a trace of kind published"):
        schema.check_points(pts, {**t.run, "kind": "recorded"}, "T")
    assert isinstance(pts, pd.DataFrame)


def _refused(fn, text):
    """``fn()`` raises one InputError whose whole line is ``text``."""
    with pytest.raises(InputError) as exc:
        fn()
    assert str(exc.value) == text


def test_a_source_date_is_refused_from_the_second_day_after_today():
    import datetime as dt

    day = dt.timedelta(days=1)
    before = dt.datetime.now(dt.UTC).date()
    for ahead in (-400, 0, 1):  # a past date, today and tomorrow (UTC + 1 day) pass
        date = (before + ahead * day).isoformat()
        importers.check_options("inferencex", "IN", importers.Options(source_date=date))
    late = (before + 2 * day).isoformat()
    with pytest.raises(InputError) as exc:
        importers.check_options("inferencex", "IN", importers.Options(source_date=late))
    if dt.datetime.now(dt.UTC).date() == before:  # midnight not passed while checking
        assert str(exc.value) == (
            f"IN: --source-date: {late} is in the future (today is {before.isoformat()})"
        )
    _refused(
        lambda: importers.check_options("mlperf", "IN", importers.Options(source_date="2026-1-1")),
        "IN: --source-date: '2026-1-1' is not a date YYYY-MM-DD",
    )


def test_a_label_naming_a_measured_column_is_refused_whatever_the_format():
    scenario = "batch_size, concurrency, config, context_tokens, decode_ranks, engine, num_gpus, "
    for labels, first in (({"ttft_s": "1"}, "ttft_s"), ({"source": "a", "itl_s": "b"}, "itl_s")):
        _refused(
            lambda labels=labels: importers.check_options(
                "vllm-bench", "IN", importers.Options(labels=labels)
            ),
            f"IN: --label {first}: is a measured field, never a label (labels name the "
            f"scenario: {scenario}point_id)",
        )
    # every scenario label and a free one pass
    labels = {k: "1" for k in importers.SCENARIO_LABELS} | {"gpu": "x"}
    importers.check_options("vllm-bench", "IN", importers.Options(labels=labels))
    # a published format's own kind is no option given
    importers.check_options("mlperf", "IN", importers.Options(kind="published"))
    _refused(
        lambda: importers.check_options("mlperf", "IN", importers.Options(kind="recorded")),
        "IN: --kind: only for vllm-bench, not mlperf",
    )


def test_the_command_line_of_each_option_in_order():
    hw = importers.DeclaredGpus("b300", "B300", "NVIDIA B300", 4, "data/hardware.yaml")
    every = importers.Options(
        labels={"a": "b"}, kind="synthetic", engine="e x", model="m", source_url=URL,
        source_date=DAY, command="ignored", hardware=hw,
    )  # fmt: skip
    assert importers.command_line("vllm-bench", "in put.json", "out", every) == (
        f"rackbook import vllm-bench 'in put.json' -o out --model m --source-url {URL} "
        f"--source-date {DAY} --engine 'e x' --gpu b300 --gpus 4"
    )
    assert importers.command_line("mlperf", Path("a.csv"), Path("o"), importers.Options()) == (
        "rackbook import mlperf a.csv -o o"
    )


def test_an_unknown_format_names_the_file_and_the_known_ones():
    known = "vllm-bench, offline-engine, inferencex, mlperf, sglang-cookbook"
    _refused(
        lambda: importers.get("csv", "r.csv"),
        f"r.csv: format: unknown 'csv'; expected one of {known}",
    )
    _refused(lambda: importers.get("csv"), f"-: format: unknown 'csv'; expected one of {known}")
    _refused(
        lambda: importers.read("csv", "r.csv", "o", importers.Options()),
        f"r.csv: format: unknown 'csv'; expected one of {known}",
    )
    assert importers.get("mlperf").module == "mlperf"


def test_read_records_the_import_command_unless_one_is_given(tmp_path):
    src = tmp_path / "rows.json"  # outside the checkout: no $REPO in the line
    src.write_bytes(GOOD["inferencex"][0].read_bytes())
    t = importers.read("inferencex", src, tmp_path / "o", importers.Options())
    assert t.run["commands"] == [f"rackbook import inferencex {src} -o {tmp_path / 'o'}"]
    t = importers.read("inferencex", str(src), "o", importers.Options(command="given"))
    assert t.run["commands"] == ["given"] and not (tmp_path / "o").exists()
    assert t.run["source"]["file"] == src.name


CELLS = [  # (value, check, the value returned or the problem refusing it)
    (1, "whole", 1), (2.0, "whole", 2), (1.5, "whole", "not an integer (1.5)"),
    (0, "whole", "must be > 0, got 0"), (-1, "whole", "must be > 0, got -1"),
    (0, "amount", 0.0), (0.25, "amount", 0.25), (-0.5, "amount", "must be >= 0, got -0.5"),
    (1e-300, "number", 1e-300), (0.0, "number", "must be > 0, got 0.0"),
    (True, "number", "not a number (True)"), ("3", "whole", "not a number ('3')"),
    (float("nan"), "amount", "non-finite value (NaN or infinite)"),
    (float("-inf"), "number", "non-finite value (NaN or infinite)"),
    (None, "number", "missing"), (None, "text", "missing"), (None, "whole?", None),
    (None, "url?", None), (3, "whole?", 3),
    (" a ", "text", " a "), ("", "text", "must be a non-empty string, got ''"),
    ("  ", "text?", "must be a non-empty string, got ' '"),  # spaces run together
    (5, "text", "must be a non-empty string, got 5"),
    ("2026-02-28", "date", "2026-02-28"),
    ("28.2.2026", "date", "'28.2.2026' is not a date YYYY-MM-DD"),
    ("https://a.org/x", "url", "https://a.org/x"),
    ("ftp://a.org", "url?", "'ftp://a.org' is not an http(s) link"),
    ("", "url", "must be a non-empty string, got ''"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "check", "want"), CELLS)
def test_a_cell_is_its_value_or_one_problem_naming_file_and_field(value, check, want):
    from rackbook.core.importers import points

    if isinstance(want, str) and want != value:
        _refused(
            lambda: points.cell(Path("f.json"), "rows[0].x", value, check),
            f"f.json: rows[0].x: {want}",
        )
    else:
        got = points.cell(Path("f.json"), "rows[0].x", value, check)
        assert got == want and type(got) is type(want)


def test_mapping_and_cells_name_the_field():
    from rackbook.core.importers import points

    p = Path("f.json")
    _refused(lambda: points.mapping(p, "rows[1].metrics", None), "f.json: rows[1].metrics: missing")
    _refused(lambda: points.mapping(p, "m", [1]), "f.json: m: must be an object")
    obj = {"a": 1}
    assert points.mapping(p, "m", obj) is obj
    table = {"x": ("a", "whole"), "y": ("b", "text?")}
    assert points.cells(p, "rows[2]", obj, table) == {"x": 1, "y": None}
    _refused(lambda: points.cells(p, "rows[2]", {}, table), "f.json: rows[2].a: missing")


def test_source_info_reads_a_github_blob_and_hashes_the_file(tmp_path):
    import hashlib

    from rackbook.core.importers import points

    src = tmp_path / "s.csv"
    src.write_bytes(b"a,b\n1,2\n")
    sha = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    blob = "https://github.com/mlc/inf-6.1/blob/abcdef1/closed/summary.csv"
    assert points.source_info(src, blob, "2026-01-02") == {
        "file": "s.csv", "sha256": sha, "url": blob, "repo": "mlc/inf-6.1",
        "path": "closed/summary.csv", "commit": "abcdef1", "date": "2026-01-02",
    }  # fmt: skip
    for url in (None, "https://github.com/mlc/inf/blob/abcdef/x.csv", "https://a.org/x"):
        info = points.source_info(src, url)
        assert (info["url"], info["repo"], info["path"], info["commit"], info["date"]) == (
            url,
            None,
            None,
            None,
            None,
        )
    _refused(
        lambda: points.source_info(src, "file:///x"),
        f"{src}: --source-url: 'file:///x' is not an http(s) link",
    )


def test_text_files_refused_by_field_and_problem(tmp_path):
    from rackbook.core.importers import points

    f = tmp_path / "f.txt"
    for data, field, problem in (
        (b" \n\t", "-", "file is empty"),
        (b"ab\x00c", "-", "not text (binary file?)"),
        (b" " * 70_000, "-", "file is empty"),
    ):
        f.write_bytes(data)
        _refused(lambda: points.check_text(f), f"{f}: {field}: {problem}")
    f.write_bytes(b" " * 70_000 + b"x")  # text after the first 64 KiB of blanks
    points.check_text(f)
    f.write_bytes(b"\xef\xbb\xbfname,\xc3\xa9\n")
    assert points.read_text(f) == "name,\u00e9\n"  # the BOM dropped
    f.write_bytes(b"\n \n")
    _refused(lambda: points.read_text(f), f"{f}: -: file is empty")
    f.write_bytes(b"a\nb\n\xff\n")
    _refused(
        lambda: list(points.csv_lines(f)),
        f"{f}: -: not UTF-8 text: byte 0xff on line 3 (save the file as UTF-8)",
    )
    f.write_bytes(b"a\nb\xc3")
    _refused(
        lambda: list(points.csv_lines(f)),
        f"{f}: end of file: not UTF-8 text: cut inside a character",
    )


def test_csv_lines_one_at_a_time_within_their_bounds(tmp_path, monkeypatch):
    from rackbook import limits
    from rackbook.core.importers import points

    f = tmp_path / "f.csv"
    f.write_bytes(b"\xef\xbb\xbfa,b\n\xef\xbb\xbf1,2\r\n3")
    assert list(points.csv_lines(f)) == ["a,b\n", "\ufeff1,2\r\n", "3"]  # a BOM only at the start
    monkeypatch.setitem(limits.BOUNDS, "csv_lines", 3)
    assert len(list(points.csv_lines(f))) == 3  # exactly at the bound
    f.write_bytes(b"a\n1\n2\n3\n")
    _refused(
        lambda: list(points.csv_lines(f)),
        f"{f}: rows: more than 3 lines (rackbook's bound on csv lines)",
    )
    monkeypatch.setattr(limits, "CSV_LINE_MB", 1e-5)  # 10 bytes
    f.write_bytes(b"a\n" + b"x" * 9 + b"\n")  # 10 bytes with its newline
    assert list(points.csv_lines(f)) == ["a\n", "x" * 9 + "\n"]
    f.write_bytes(b"a\n" + b"x" * 10 + b"\n")
    _refused(lambda: list(points.csv_lines(f)), f"{f}: line 2: longer than 1e-05 MB (refused)")


def test_a_published_summary_names_each_skip():
    from rackbook.core.importers import points

    class T:
        extra = {"published_points": pd.DataFrame({"a": [1, 2]})}
        trace_id = "abc"
        run = {"parameters": {"skipped": {"units": {"Queries/s": 3, "(empty)": 1}, "models": {},
                                          "stub_cells": 2, "none": 0}}}  # fmt: skip

    assert points.summary(T()) == (
        "2 published points, trace_id abc (skipped units: 3 Queries/s, 1 (empty); "
        "skipped stub_cells: 2)"
    )
    T.run = {"parameters": {}}
    assert points.summary(T()) == "2 published points, trace_id abc"


def test_a_bad_byte_past_the_first_mebibytes_is_named_by_its_line(tmp_path):
    """The check reads 1 MiB at a time: lines are counted across the reads, and a character cut
    by a read's end is named by the byte that breaks it."""
    from rackbook.core.importers import points

    f = tmp_path / "big.csv"
    head = b"a\n" * ((1 << 20) - 1) + b"a"  # 2 MiB - 1 bytes on 1,048,576 lines
    f.write_bytes(head + b"\xc3(\n")  # a lead byte ends the second read, "(" starts the third
    _refused(
        lambda: list(points.csv_lines(f)),
        f"{f}: -: not UTF-8 text: byte 0x28 on line 1048576 (save the file as UTF-8)",
    )
    f.write_bytes(head + b"\n\n\xff")
    _refused(
        lambda: list(points.csv_lines(f)),
        f"{f}: -: not UTF-8 text: byte 0xff on line 1048578 (save the file as UTF-8)",
    )


def test_a_csv_line_of_one_megabyte_is_read_and_one_byte_more_refused(tmp_path):
    from rackbook.core.importers import points

    f = tmp_path / "f.csv"
    f.write_bytes(b"a\n" + b"x" * 999_999 + b"\n")  # 1,000,000 bytes with its newline
    assert [len(line) for line in points.csv_lines(f)] == [2, 1_000_000]
    f.write_bytes(b"a\n" + b"x" * 1_000_000 + b"\n")
    _refused(lambda: list(points.csv_lines(f)), f"{f}: line 2: longer than 1 MB (refused)")


def test_a_published_trace_holds_its_points_and_the_sources_provenance(tmp_path):
    """points.read_published: run.json in full; undated points take --source-date, dated ones
    keep theirs; the measured tables stay empty."""
    import hashlib

    src = tmp_path / "s.csv"
    src.write_bytes(GOOD["mlperf"][0].read_bytes())
    opts = importers.Options(model="deepseek-r1", source_url=URL, source_date=DAY, command="C")
    t = importers.read("mlperf", src, "o", opts)
    pts = t.extra["published_points"]
    assert pts["date"].tolist() == [DAY, DAY]
    run = {k: v for k, v in t.run.items() if k not in ("environment", "created", "trace_id")}
    run.pop("project_commit")
    assert run == {
        "schema_version": 1, "kind": "published",
        "hardware": {"gpus": [], "hosts": None, "note": "not measured here: see published_points"},
        "engine": {"name": "mlperf", "version": None, "what": "MLPerf Inference summary.csv"},
        "commands": ["C"],
        "parameters": {
            "format": "mlperf", "model": "deepseek-r1",
            "skipped": {"units": {"Latency (s)": 1, "Samples/s": 1}, "models": {"gpt-oss-120b": 1}},
        },
        "notes": "published measurements imported from s.csv by `rackbook import mlperf`; "
        "hardware, GPUs and engine are per row in published_points",
        "recorded_by": None,
        "source": {
            "file": "s.csv", "sha256": hashlib.sha256(src.read_bytes()).hexdigest(), "url": URL,
            "repo": "o/r", "path": "summary.csv",
            "commit": "0123456789abcdef0123456789abcdef01234567", "date": DAY,
        },
        "rows": [{"point_id": p, "url": u, "date": DAY}
                 for p, u in zip(pts["point_id"], pts["url"], strict=True)],
    }  # fmt: skip
    assert t.requests.empty and t.itl.empty and t.points.empty
    assert list(t.points.columns)[:2] == ["point_id", "engine"]
    # no --source-date: the undated rows stay undated; dated rows keep their own date
    t = importers.read("mlperf", src, "o", importers.Options(source_url=URL))
    assert t.run["source"]["date"] is None and {r["date"] for r in t.run["rows"]} == {None}
    assert t.extra["published_points"]["date"].isna().all()
    ix = importers.read(
        "inferencex", GOOD["inferencex"][0], "o", importers.Options(source_date=DAY)
    )
    assert [r["date"] for r in ix.run["rows"]] == ["2026-02-27", "2025-10-06", "2026-03-23"]


def test_check_text_reads_the_first_64_kib_and_streams_past_the_whole_file_limit(tmp_path):
    from rackbook.core.importers import points

    f = tmp_path / "f.csv"
    f.write_bytes(b"a" * 65_535 + b"\x00")  # a NUL inside the first 64 KiB
    _refused(lambda: points.check_text(f), f"{f}: -: not text (binary file?)")
    f.write_bytes(b"a" * 65_536 + b"\x00")  # just past them: not looked at (the CSV read names it)
    points.check_text(f)
    with f.open("wb") as fh:  # 256 MB + 1 byte: over a whole read's limit, not a streamed one's
        fh.truncate(256_000_001)
    _refused(lambda: points.check_text(f), f"{f}: -: not text (binary file?)")
    _refused(
        lambda: points.read_text(f),
        f"{f}: -: 256.0 MB is over the input size limit 256 MB (see --max-input-mb)",
    )
    f.write_bytes(b"a\n\xff\n")
    _refused(
        lambda: points.read_text(f),
        f"{f}: -: not UTF-8 text: byte 0xff on line 2 (save the file as UTF-8)",
    )
