"""The table of bad inputs: every entry point, every kind of bad input, one test per row.

CLI rows run ``rackbook.cli.main`` in-process and check the project's rule: exit code 2, exactly
one line on stderr that starts ``error: `` and names the file (path) and the field, no
traceback, and nothing (no folder, no temporary file) left where the output would go. Loader
rows call the loader and check the :class:`InputError`'s file, field and problem.

All inputs here are hand-made test data (tests/conftest.py ``small_result``: 3 requests).
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import small_result

from rackbook import paths
from rackbook.cluster import topology
from rackbook.core import expert_load, importers, traces
from rackbook.core.importers import vllm_bench
from rackbook.errors import InputError
from rackbook.inputs import catalogs, claims, scenarios
from rackbook.live.record import parse_metrics

# --------------------------------------------------------------------------------------------
# shared checks


def tree(folder: Path) -> set[str]:
    """Every file and folder under ``folder`` (hidden ones too), relative, as text."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def assert_one_error(code: int, err: str, *names: str) -> str:
    """Exit 2, one ``error:`` line naming every text in ``names``, no traceback."""
    assert code == 2, err
    assert err.startswith("error: "), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for name in names:
        assert name in err, (name, err)
    return err


def cli_error(run_cli, folder: Path, *argv: str, names: tuple[str, ...] = ()) -> str:
    """Run the CLI; assert the one-line error and that ``folder`` is exactly as before."""
    before = tree(folder)
    code, _, err = run_cli(*argv)
    assert_one_error(code, err, *names)
    assert tree(folder) == before, tree(folder) ^ before
    return err


def input_error(fn: Callable[[], Any], file: str | Path | None, field: str, problem: str) -> None:
    """``fn()`` raises InputError with this file (None: any), field and problem text."""
    with pytest.raises(InputError) as exc:
        fn()
    e = exc.value
    if file is not None:
        assert e.file == str(file), e
    assert e.field == field, e
    assert problem in e.problem, e
    assert "\n" not in str(e)


# --------------------------------------------------------------------------------------------
# import vllm-bench (CLI) and the vLLM bench JSON loader

NAN_DUR = (
    b'{"duration": NaN, "input_lens": [], "output_lens": [], "ttfts": [], "itls": [], '
    b'"latencies": [], "errors": []}'
)
IMPORT_FILES = [  # (name, bytes, field, problem)
    ("empty", b"", "-", "file is empty"),
    ("blank", b"  \n\n", "-", "file is empty"),
    ("truncated", json.dumps(small_result()).encode()[:60], "end of file", "truncated JSON"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00", "-", "not text (binary file?)"),
    ("not-json", b"duration = 3\nttfts = []\n", "line 1", "not valid JSON"),
    ("top-list", b"[1, 2, 3]", "-", "top level must be a JSON object, got list"),
    ("top-string", b'"result"', "-", "top level must be a JSON object, got str"),
    ("nan-duration", NAN_DUR, "duration", "non-finite value (NaN or infinite)"),
]


@pytest.mark.parametrize(
    "name,content,field,problem", IMPORT_FILES, ids=[r[0] for r in IMPORT_FILES]
)
def test_import_bad_file(tmp_path, run_cli, name, content, field, problem):
    src = tmp_path / "result.json"
    src.write_bytes(content)
    out = tmp_path / "trace"
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(out), names=(str(src),)
    )
    assert f"{src}: {field}: {problem}" in err


def test_import_missing_file(tmp_path, run_cli):
    src = tmp_path / "absent.json"
    err = cli_error(run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(tmp_path / "t"))
    assert f"{src}: -: file does not exist" in err


def test_import_folder_as_input(tmp_path, run_cli):
    src = tmp_path / "dir.json"
    src.mkdir()
    err = cli_error(run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(tmp_path / "t"))
    assert "is a folder, expected a JSON file" in err


def test_import_corrupt_gzip(tmp_path, run_cli):
    src = tmp_path / "r.json.gz"
    src.write_bytes(gzip.compress(json.dumps(small_result()).encode())[:30])
    err = cli_error(run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(tmp_path / "t"))
    assert f"{src}: -: not a valid gzip file" in err


def _drop(key: str) -> Callable[[dict], None]:
    return lambda d: d.pop(key)


def _put(key: str, value: Any) -> Callable[[dict], None]:
    return lambda d: d.__setitem__(key, value)


IMPORT_FIELDS = [  # (id, change, field, problem)
    ("no-ttfts", _drop("ttfts"), "ttfts", "rerun vllm bench serve with --save-detailed"),
    ("no-itls", _drop("itls"), "itls", "missing per-request array"),
    ("no-duration", _drop("duration"), "duration", "missing"),
    ("ttfts-string", _put("ttfts", "0.1,0.2"), "ttfts", "must be a list, got str"),
    ("input-lens-dict", _put("input_lens", {"a": 1}), "input_lens", "must be a list"),
    ("input-lens-text", _put("input_lens", [10, "x", 30]), "input_lens[1]", "not a number"),
    ("output-lens-float", _put("output_lens", [4, 2.5, 0]), "output_lens[1]", "not an integer"),
    ("duration-text", _put("duration", "2s"), "duration", "not a number ('2s')"),
    ("duration-bool", _put("duration", True), "duration", "not a number (True)"),
    ("duration-zero", _put("duration", 0), "duration", "must be > 0, got 0"),
    ("duration-negative", _put("duration", -2.0), "duration", "must be > 0, got -2.0"),
    ("ttfts-nan", _put("ttfts", [0.1, float("nan"), 0.0]), "ttfts[1]", "NaN or infinite"),
    ("latency-inf", _put("latencies", [0.7, float("inf"), 0.0]), "latencies[1]", "infinite"),
    ("ttft-negative", _put("ttfts", [0.1, -0.2, 0.0]), "ttfts[1]", "negative value"),
    ("itl-negative", _put("itls", [[0.1, -0.2, 0.3], [0.4], []]), "itls[1]", "negative value"),
    ("itl-text", _put("itls", [[0.1, "a", 0.3], [0.4], []]), "itls[1]", "not a number"),
    ("itl-not-list", _put("itls", [[0.1], 0.4, []]), "itls[1]", "must be a list of seconds"),
    ("short-latencies", _put("latencies", [0.7, 0.6]), "latencies", "has 2 entries, expected 3"),
    ("long-ttfts", _put("ttfts", [0.1, 0.2, 0.0, 0.3]), "ttfts", "has 4 entries, expected 3"),
    ("short-errors", _put("errors", ["", ""]), "errors", "must be a list of 3 strings"),
    ("short-itls", _put("itls", [[0.1]]), "itls", "must be a list of 3 lists"),
    (
        # milliseconds where seconds are expected: 90 s and 120 s requests written as ms
        "latencies-ms",
        lambda d: d.update(ttfts=[100.0, 200.0, 0.0], latencies=[90_000.0, 120_000.0, 0.0]),
        "latencies",
        "look like milliseconds",
    ),
    ("ttft-over-latency", _put("ttfts", [0.9, 0.2, 0.0]), "ttfts[0]", "larger than the request"),
    ("completed-wrong", _put("completed", 3), "completed", "says 3 but 2 requests"),
    ("concurrency-zero", _put("max_concurrency", 0), "max_concurrency", "must be > 0, got 0"),
    ("tokens-huge", _put("input_lens", [10, 1e12, 30]), "input_lens[1]", "implausibly large"),
]


@pytest.mark.parametrize(
    "change,field,problem", [r[1:] for r in IMPORT_FIELDS], ids=[r[0] for r in IMPORT_FIELDS]
)
def test_import_bad_field(tmp_path, run_cli, change, field, problem):
    d = small_result()
    change(d)
    src = tmp_path / "result.json"
    src.write_text(json.dumps(d))  # NaN/Infinity literals as Python's json writes them
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(tmp_path / "trace")
    )
    assert f"{src}: {field}: " in err and problem in err


@pytest.mark.parametrize(
    "change,field,problem", [r[1:] for r in IMPORT_FIELDS], ids=[r[0] for r in IMPORT_FIELDS]
)
def test_vllm_bench_loader_bad_field(tmp_path, change, field, problem):
    d = small_result()
    change(d)
    src = tmp_path / "result.json"
    input_error(lambda: vllm_bench.vllm_bench_frames(src, data=d), src, field, problem)


def test_import_bad_label_value(tmp_path, run_cli):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    err = cli_error(
        run_cli,
        tmp_path,
        "import",
        "vllm-bench",
        str(src),
        "-o",
        str(tmp_path / "t"),
        "--label",
        "batch_size=eight",
    )
    assert "--label: label batch_size: expected an integer from 1 to 65,536" in err


def test_import_label_not_key_value(tmp_path, run_cli):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    err = cli_error(
        run_cli,
        tmp_path,
        "import",
        "vllm-bench",
        str(src),
        "-o",
        str(tmp_path / "t"),
        "--label",
        "x",
    )
    assert "--label" in err and "is not KEY=VALUE" in err


def test_import_unknown_format(tmp_path, run_cli):
    err = cli_error(run_cli, tmp_path, "import", "aiperf", "x.json", "-o", str(tmp_path / "t"))
    assert "format" in err and "invalid choice: 'aiperf'" in err


def test_import_output_is_an_existing_file(tmp_path, run_cli):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(out), names=(str(out),)
    )
    assert "output" in err and "is a file" in err
    assert out.read_text() == "mine\n"


def test_import_output_parent_is_a_file(tmp_path, run_cli):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    (tmp_path / "notes.txt").write_text("mine\n")
    out = tmp_path / "notes.txt" / "trace"
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(out), names=(str(out),)
    )
    assert "output" in err and f"{tmp_path / 'notes.txt'} is a file" in err


def test_import_output_is_a_folder_that_is_not_a_trace(tmp_path, run_cli):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    out = tmp_path / "documents"
    out.mkdir()
    (out / "thesis.tex").write_text("mine\n")
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(out), names=(str(out),)
    )
    assert "-o" in err and "'thesis.tex'" in err and "not written by rackbook" in err
    assert (out / "thesis.tex").read_text() == "mine\n"


def test_import_point_id_is_data_not_a_path(tmp_path, run_cli):
    """``--label point_id=../../evil`` names the point; nothing is written outside ``-o``."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    src = work / "r.json"
    src.write_text(json.dumps(small_result()))
    out = work / "trace"
    code, _, err = run_cli(
        "import", "vllm-bench", str(src), "-o", str(out), "--label", "point_id=../../evil"
    )
    assert code == 0, err
    outside = tree(tmp_path) - {f"a/b/{p}" for p in tree(work)} - {"a", "a/b"}
    assert outside == set()
    assert {"r.json", "trace"} == {p.name for p in work.iterdir()}
    assert sorted(p.name for p in out.iterdir()) == [
        ".rackbook-output",
        "itl.parquet",
        "points.parquet",
        "requests.parquet",
        "run.json",
    ]
    t = traces.read_trace(out)
    assert t.points["point_id"].tolist() == ["../../evil"]
    assert t.requests["request_id"].tolist() == ["../../evil/0", "../../evil/1", "../../evil/2"]


def test_import_error_keeps_the_old_trace(tmp_path, run_cli):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    out = tmp_path / "trace"
    assert run_cli("import", "vllm-bench", str(src), "-o", str(out))[0] == 0
    old = (out / "run.json").read_text()
    src.write_text(json.dumps(small_result(duration=-1)))
    cli_error(run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(out))
    assert (out / "run.json").read_text() == old


# --------------------------------------------------------------------------------------------
# summarize (and the trace loader behind it)


@pytest.fixture
def trace_dir(tmp_path) -> Path:
    """A valid 3-request trace folder made from ``small_result`` (hand-made)."""
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    out = tmp_path / "trace"
    importers.write("vllm-bench", src, out)
    src.unlink()
    return out


def _edit_table(name: str, edit: Callable[[pd.DataFrame], None]) -> Callable[[Path], None]:
    def apply(t: Path) -> None:
        df = pq.read_table(t / f"{name}.parquet").to_pandas()
        edit(df)
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), t / f"{name}.parquet")

    return apply


def _run_json(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(t: Path) -> None:
        run = json.loads((t / "run.json").read_text())
        edit(run)
        (t / "run.json").write_text(json.dumps(run))

    return apply


def _set_row(col: str, row: int, value: Any) -> Callable[[pd.DataFrame], None]:
    def edit(df: pd.DataFrame) -> None:
        df[col] = df[col].astype(object)
        df.loc[row, col] = value
        if isinstance(value, float):
            df[col] = df[col].astype("float64")
        elif isinstance(value, str):
            df[col] = df[col].astype("string")

    return edit


def _ms(df: pd.DataFrame) -> None:
    """Milliseconds written where seconds belong: 90 s and 120 s requests read as 25 and 33 h."""
    df["ttft_s"] = [100.0, 200.0, 0.0]
    df["e2el_s"] = [90_000.0, 120_000.0, 0.0]


SUMMARIZE = [  # (id, setup, file suffix, field, problem)
    (
        "run-not-json",
        lambda t: (t / "run.json").write_text("{"),
        "run.json",
        "end of file",
        "truncated",
    ),
    (
        "run-binary",
        lambda t: (t / "run.json").write_bytes(b"\xff\xfe\x00"),
        "run.json",
        "-",
        "binary",
    ),
    (
        "run-list",
        lambda t: (t / "run.json").write_text("[]"),
        "run.json",
        "run.json",
        "must be a JSON object, got list",
    ),
    (
        "run-empty",
        lambda t: (t / "run.json").write_text(""),
        "run.json",
        "-",
        "file is empty",
    ),
    (
        "run-kind",
        _run_json(lambda r: r.__setitem__("kind", "guessed")),
        "run.json",
        "run.json.kind",
        "'guessed' is not one of",
    ),
    (
        "run-no-commands",
        _run_json(lambda r: r.pop("commands")),
        "run.json",
        "run.json.commands",
        "missing required field",
    ),
    (
        "run-commands-text",
        _run_json(lambda r: r.__setitem__("commands", "vllm bench serve")),
        "run.json",
        "run.json.commands",
        "must be a list",
    ),
    (
        "synthetic-no-seed",
        _run_json(lambda r: r.__setitem__("kind", "synthetic")),
        "run.json",
        "run.json.generator",
        "generator and seed",
    ),
    (
        "no-requests",
        lambda t: (t / "requests.parquet").unlink(),
        "requests.parquet",
        "-",
        "missing table",
    ),
    (
        "requests-garbage",
        lambda t: (t / "requests.parquet").write_bytes(b"PAR1 not really"),
        "requests.parquet",
        "-",
        "unreadable Parquet",
    ),
    (
        "requests-empty-file",
        lambda t: (t / "requests.parquet").write_bytes(b""),
        "requests.parquet",
        "-",
        "unreadable Parquet",
    ),
    ("no-points", lambda t: (t / "points.parquet").unlink(), "points.parquet", "-", "missing"),
    (
        "duplicate-request-id",
        _edit_table("requests", _set_row("request_id", 1, "r/0")),
        "",
        "requests.request_id",
        "duplicate id 'r/0'",
    ),
    (
        "negative-ttft",
        _edit_table("requests", _set_row("ttft_s", 1, -0.2)),
        "",
        "requests.ttft_s",
        "negative value in row 1",
    ),
    (
        "nan-latency",
        _edit_table("requests", _set_row("e2el_s", 0, float("nan"))),
        "",
        "requests.e2el_s",
        "row 0",
    ),
    (
        "unknown-point",
        _edit_table("requests", _set_row("point_id", 2, "elsewhere")),
        "",
        "requests.point_id",
        "'elsewhere' is not in points.parquet",
    ),
    (
        "missing-column",
        _edit_table("requests", lambda df: df.pop("e2el_s")),
        "",
        "requests.e2el_s",
        "missing column",
    ),
    (
        "text-in-number-column",
        _edit_table("requests", lambda df: df.__setitem__("output_tokens", ["4", "two", "0"])),
        "",
        "requests.output_tokens",
        "expected int64",
    ),
    (
        "latencies-in-milliseconds",
        _edit_table("requests", _ms),
        "",
        "requests.e2el_s",
        "look like milliseconds",
    ),
    (
        "zero-duration",
        _edit_table("points", _set_row("duration_s", 0, 0.0)),
        "",
        "points.duration_s",
        "must be > 0",
    ),
    (
        "negative-duration",
        _edit_table("points", _set_row("duration_s", 0, -2.0)),
        "",
        "points.duration_s",
        "must be > 0",
    ),
    (
        "negative-gap",
        _edit_table("itl", _set_row("itl_s", 2, -0.3)),
        "",
        "itl.itl_s",
        "negative value in row 2",
    ),
    (
        "gap-of-absent-request",
        _edit_table("itl", _set_row("request_row", 3, 7)),
        "",
        "itl.request_row",
        "absent",
    ),
]


@pytest.mark.parametrize(
    "setup,suffix,field,problem", [r[1:] for r in SUMMARIZE], ids=[r[0] for r in SUMMARIZE]
)
def test_summarize_bad_trace(trace_dir, run_cli, setup, suffix, field, problem):
    # request ids of the fixture are "r/0", "r/1", "r/2" (point id from the file name r.json)
    setup(trace_dir)
    f = trace_dir / suffix if suffix else trace_dir
    err = cli_error(run_cli, trace_dir.parent, "summarize", str(trace_dir), "--json")
    assert f"error: {f}: {field}: " in err and problem in err


def test_summarize_dup_point(trace_dir, run_cli):
    pts = pq.read_table(trace_dir / "points.parquet").to_pandas()
    pq.write_table(
        pa.Table.from_pandas(pd.concat([pts, pts], ignore_index=True), preserve_index=False),
        trace_dir / "points.parquet",
    )
    err = cli_error(run_cli, trace_dir.parent, "summarize", str(trace_dir))
    assert f"error: {trace_dir}: points.point_id: duplicate point id" in err


@pytest.mark.parametrize(
    "kind,problem",
    [
        ("absent", "trace folder does not exist"),
        ("file", "not a folder"),
        ("no-run", "missing run.json"),
    ],
)
def test_summarize_not_a_trace(tmp_path, run_cli, kind, problem):
    t = tmp_path / "trace"
    if kind == "file":
        t.write_text("x")
    elif kind == "no-run":
        t.mkdir()
    err = cli_error(run_cli, tmp_path, "summarize", str(t))
    assert str(t) in err and problem in err


def test_summarize_streamed_path_checks_the_same(trace_dir):
    """The streamed reader (large traces) refuses the same bad rows as the full reader."""
    from rackbook.core.summary import summarize_path

    _edit_table("requests", _set_row("point_id", 2, "elsewhere"))(trace_dir)
    with pytest.raises(InputError) as exc:
        summarize_path(trace_dir, stream=True, chunk_rows=2)
    assert exc.value.field == "requests.point_id" and "elsewhere" in exc.value.problem
    _edit_table("requests", _set_row("point_id", 2, "r"))(trace_dir)
    _edit_table("requests", _set_row("e2el_s", 1, float("inf")))(trace_dir)
    with pytest.raises(InputError) as exc:
        summarize_path(trace_dir, stream=True, chunk_rows=2)
    assert exc.value.field == "requests.e2el_s" and "row 1" in exc.value.problem


# --------------------------------------------------------------------------------------------
# run (papermill parameters), list, book


@pytest.mark.parametrize("name", ["nope", "../x", "decode-parity/../../x", "/tmp/x", ""])
def test_run_unknown_result(tmp_path, run_cli, name):
    err = cli_error(run_cli, tmp_path, "run", name, "--out", str(tmp_path / "o"))
    assert "error: -: result: unknown result" in err and "decode-parity" in err
    assert not (tmp_path / "o").exists()


def test_run_unknown_parameter(tmp_path, run_cli):
    err = cli_error(
        run_cli,
        tmp_path,
        "run",
        "decode-parity",
        "-p",
        "no_such",
        "1",
        "--out",
        str(tmp_path / "o"),
    )
    assert "notebooks/decode-parity.ipynb: parameter no_such: not a parameter" in err


def test_run_parameters_with_all(tmp_path, run_cli):
    err = cli_error(
        run_cli, tmp_path, "run", "all", "-p", "seed", "1", "--out", str(tmp_path / "o")
    )
    assert "error: -: -p: parameters apply to one result" in err


def test_run_trace_parameter_points_nowhere(tmp_path, run_cli):
    nowhere = tmp_path / "nope"
    err = cli_error(
        run_cli,
        tmp_path,
        "run",
        "decode-parity",
        "-p",
        "trace",
        str(nowhere),
        "--out",
        str(tmp_path / "o"),
    )
    assert f"error: {nowhere}: parameter trace: trace folder does not exist" in err


def test_run_trace_parameter_is_a_file(tmp_path, run_cli):
    f = tmp_path / "trace.json"
    f.write_text("{}")
    err = cli_error(
        run_cli,
        tmp_path,
        "run",
        "decode-parity",
        "-p",
        "trace",
        str(f),
        "--out",
        str(tmp_path / "o"),
    )
    assert f"error: {f}: parameter trace: not a folder" in err


@pytest.mark.parametrize(
    "name,value,problem",
    [
        ("band_pct", "wide", "expected a number over 0 and at most 1,000 (%), got 'wide'"),
        ("input_len", "[64]", "expected an integer from 1 to 100,000,000 (tokens), got [64]"),
        ("batch_sizes", "8", "expected a list, got 8"),
        ("band_pct", ".nan", "must be a finite number, got nan"),
        ("trace", "5", "expected a path to a trace folder, got 5"),
    ],
)
def test_run_parameter_wrong_type(tmp_path, run_cli, name, value, problem):
    err = cli_error(
        run_cli, tmp_path, "run", "decode-parity", "-p", name, value, "--out", str(tmp_path / "o")
    )
    assert f"notebooks/decode-parity.ipynb: parameter {name}: {problem}" in err


def test_run_out_is_an_existing_file(tmp_path, run_cli):
    out = tmp_path / "o"
    out.write_text("mine\n")
    err = cli_error(run_cli, tmp_path, "run", "decode-parity", "--out", str(out))
    assert f"error: {out}: --out: exists and is a file" in err
    assert out.read_text() == "mine\n"


def test_run_out_parent_is_a_file(tmp_path, run_cli):
    (tmp_path / "f").write_text("mine\n")
    out = tmp_path / "f" / "o"
    err = cli_error(run_cli, tmp_path, "run", "decode-parity", "--out", str(out))
    assert f"error: {out}: --out: {tmp_path / 'f'} is a file" in err


def test_run_bad_source(tmp_path, run_cli):
    err = cli_error(run_cli, tmp_path, "run", "decode-parity", "--source", "cloud")
    assert "--source" in err and "invalid choice" in err


@pytest.mark.parametrize(
    "content,problem",
    [
        (b"{", "end of file: truncated JSON"),
        (b"\xff\xfe\x00", "not text (binary file?)"),
        (b"{}", "missing"),
        (b"[]", "-: must be a JSON object, got list"),
        (b'{"headlines": []}', "readings: missing"),
        (b'{"headlines": [], "readings": {}}', "readings: must be a list, got dict"),
        (b'{"headlines": [], "readings": [{"claim_id": "x"}]}', "readings[0]: needs claim_id"),
        (b'{"headlines": {}, "readings": []}', "headlines: must be a list"),
    ],
    ids=[
        "truncated",
        "binary",
        "no-headlines",
        "top-list",
        "no-readings",
        "readings-dict",
        "reading-fields",
        "hl-dict",
    ],  # fmt: skip
)
def test_list_corrupt_headline(tmp_path, run_cli, content, problem):
    (tmp_path / "decode-parity.json").write_bytes(content)
    err = cli_error(run_cli, tmp_path, "list", "--out", str(tmp_path))
    assert str(tmp_path / "decode-parity.json") in err and problem in err


def test_book_without_executed_notebooks(tmp_path, run_cli):
    site = paths.BUILD / "site"
    before = site.stat().st_mtime_ns if site.exists() else None
    err = cli_error(run_cli, tmp_path, "book", "--out", str(tmp_path))
    assert f"error: {tmp_path}: decode-parity.ipynb: not executed yet" in err
    assert (site.stat().st_mtime_ns if site.exists() else None) == before


def test_book_traces_folder_missing(tmp_path, run_cli):
    err = cli_error(
        run_cli, tmp_path, "book", "--traces", str(tmp_path / "nope"), "--out", str(tmp_path / "o")
    )
    assert f"{tmp_path / 'nope'}: --traces: not a folder" in err


def test_book_traces_folder_without_traces(tmp_path, run_cli):
    (tmp_path / "mine").mkdir()
    err = cli_error(
        run_cli, tmp_path, "book", "--traces", str(tmp_path / "mine"), "--out", str(tmp_path / "o")
    )
    assert "--traces: holds no trace folder named after a result" in err


# --------------------------------------------------------------------------------------------
# kv-bytes and the model / hardware / claims YAML loaders

MODEL = paths.DATA / "models" / "deepseek-v4.1-flash.yaml"


def test_kv_bytes_unknown_model(tmp_path, run_cli):
    err = cli_error(run_cli, tmp_path, "kv-bytes", "gpt-7")
    known = "known: deepseek-r1, deepseek-v3"
    assert f"error: data/models: model: unknown model 'gpt-7'; {known}" in err


@pytest.mark.parametrize(
    "name,expect",
    [
        ("..", lambda here: "error: data/models: model: unknown model '..'"),
        ("../hardware", lambda here: f"error: {here.parent / 'hardware'}: -: file not found"),
        ("deepseek-v4.1-flash/../x", lambda here: f"error: {here / 'x'}: -: file not found"),
    ],
)
def test_kv_bytes_model_name_is_an_id_or_a_yaml_path(tmp_path, run_cli, monkeypatch, name, expect):
    """A name with a slash is a path to a model YAML, relative to the working directory (the
    one rule for paths on the command line); nothing else is looked up outside data/models."""
    monkeypatch.chdir(tmp_path)
    err = cli_error(run_cli, tmp_path, "kv-bytes", name)
    assert err.startswith(expect(tmp_path)), err


def test_kv_bytes_bad_kv_dtype(tmp_path, run_cli):
    err = cli_error(run_cli, tmp_path, "kv-bytes", "deepseek-v4.1-flash", "--kv-dtype", "int3")
    assert "--kv-dtype" in err and "invalid choice: 'int3'" in err


@pytest.mark.parametrize("value", ["0", "-8"])
def test_kv_bytes_bad_context(tmp_path, run_cli, value):
    err = cli_error(run_cli, tmp_path, "kv-bytes", "deepseek-v4.1-flash", "--context", value)
    assert "error: -: --context: must be an integer from 1 to 100,000,000 (tokens)" in err


def test_kv_bytes_context_not_a_number(tmp_path, run_cli):
    err = cli_error(run_cli, tmp_path, "kv-bytes", "deepseek-v4.1-flash", "--context", "1M")
    assert (
        "--context" in err and "expected an integer from 1 to 100,000,000 (tokens), got '1M'" in err
    )


def _yaml_variant(src: Path, dst: Path, edit: Callable[[dict], None]) -> Path:
    data = yaml.safe_load(src.read_text())
    edit(data)
    dst.write_text(yaml.safe_dump(data, sort_keys=False))
    return dst


def _nested(keys: str, value: Any = None, delete: bool = False) -> Callable[[dict], None]:
    def edit(d: dict) -> None:
        *head, last = keys.split(".")
        for k in head:
            d = d[k]
        if delete:
            del d[last]
        else:
            d[last] = value

    return edit


RAW_YAML = [  # (id, bytes, field, problem)
    ("empty", b"", "(top level)", "expected a mapping, got empty file"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "-", "not text"),
    ("top-list", b"- a\n- b\n", "(top level)", "expected a mapping, got list"),
    ("truncated", b"id: x\narchitecture: {num_layers: 4,\n", "line 3, column 1", "YAML syntax"),
]


@pytest.mark.parametrize(
    "content,field,problem", [r[1:] for r in RAW_YAML], ids=[r[0] for r in RAW_YAML]
)
def test_model_yaml_bad_file(tmp_path, run_cli, content, field, problem):
    p = tmp_path / "m.yaml"
    p.write_bytes(content)
    input_error(lambda: catalogs.load_model(p), p, field, problem)
    err = cli_error(run_cli, tmp_path, "kv-bytes", str(p))
    assert f"error: {p}: {field}: " in err


@pytest.mark.parametrize(
    "content,field,problem", [r[1:] for r in RAW_YAML], ids=[r[0] for r in RAW_YAML]
)
def test_hardware_yaml_bad_file(tmp_path, content, field, problem):
    p = tmp_path / "hw.yaml"
    p.write_bytes(content)
    input_error(lambda: catalogs.load_hardware(p), p, field, problem)


CLAIMS_RAW = [
    ("empty", b"", "(top level)", "got empty file"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "-", "not text (binary file?)"),
    ("top-list", b"- a\n- b\n", "(top level)", "got list"),
    ("truncated", b"sources:\n  - {id: a,\n", "line 3, column 1", "YAML syntax"),
]


@pytest.mark.parametrize(
    "content,field,problem", [r[1:] for r in CLAIMS_RAW], ids=[r[0] for r in CLAIMS_RAW]
)
def test_claims_yaml_bad_file(tmp_path, content, field, problem):
    p = tmp_path / "claims.yaml"
    p.write_bytes(content)
    input_error(lambda: claims.load_claims(p), p, field, problem)


@pytest.mark.parametrize(
    "edit,field,problem",
    [
        (
            _nested("architecture.num_layers", delete=True),
            "architecture.num_layers",
            "field required",
        ),
        (_nested("architecture.num_layers", "forty"), "architecture.num_layers", "integer"),
        (
            _nested("architecture.num_layers", -4),
            "architecture.num_layers",
            "-4 is outside the physical range",
        ),
        (_nested("architecture.colour", "red"), "architecture.colour", "unknown field"),
        (_nested("moe", [1, 2]), "moe", "dictionary"),
    ],
    ids=["missing", "wrong-type", "negative", "unknown-field", "section-list"],
)
def test_model_yaml_bad_field(tmp_path, run_cli, edit, field, problem):
    p = _yaml_variant(MODEL, tmp_path / "m.yaml", edit)
    input_error(lambda: catalogs.load_model(p), p, field, problem)
    err = cli_error(run_cli, tmp_path, "kv-bytes", str(p))
    assert f"error: {p}: {field}: " in err


def test_model_yaml_id_differs_from_file_name(tmp_path, monkeypatch):
    d = tmp_path / "data" / "models"
    d.mkdir(parents=True)
    shutil.copy(MODEL, d / "other.yaml")
    monkeypatch.setattr(paths, "DATA", tmp_path / "data")
    input_error(
        lambda: catalogs.load_model("other"),
        Path(d / "other.yaml"),
        "id",
        "'deepseek-v4.1-flash' differs from the file name 'other'",
    )


HARDWARE = paths.DATA / "hardware.yaml"


def _first(section: str) -> str:
    return next(iter(yaml.safe_load(HARDWARE.read_text())[section]))


@pytest.mark.parametrize(
    "section,field_name,value,problem",
    [
        ("gpus", None, None, "field required"),
        ("systems", "gpu", "h900", "unknown GPU 'h900'"),
        ("gpus", "colour", "green", "unknown field"),
    ],
    ids=["missing-section", "unknown-gpu", "unknown-field"],
)
def test_hardware_yaml_bad_field(tmp_path, section, field_name, value, problem):
    def edit(d: dict) -> None:
        if field_name is None:
            del d[section]
        else:
            d[section][_first(section)][field_name] = value

    p = _yaml_variant(HARDWARE, tmp_path / "hw.yaml", edit)
    with pytest.raises(InputError) as exc:
        catalogs.load_hardware(p)
    e = exc.value
    assert e.file == str(p) and e.field.startswith(section) and problem in e.problem


@pytest.mark.parametrize("fn", [catalogs.gpu, catalogs.system, catalogs.price])
def test_hardware_unknown_name(fn):
    with pytest.raises(InputError) as exc:
        fn("nope-9000")
    assert exc.value.file == "data/hardware.yaml"
    assert exc.value.field.endswith(".nope-9000") and "unknown" in exc.value.problem


CLAIMS = paths.DATA / "claims.yaml"


@pytest.mark.parametrize(
    "edit,problem",
    [
        (lambda d: d.pop("claims"), "claims: field required"),
        (lambda d: d["claims"][0].pop("id"), "claims[0].id: field required"),
        (lambda d: d["claims"][0].__setitem__("result", "moon-landing"), "moon-landing"),
        (lambda d: d["claims"][0].__setitem__("colour", "red"), "colour"),
        (lambda d: d.__setitem__("claims", {"a": 1}), "list"),
    ],
    ids=["no-claims", "no-id", "unknown-result", "unknown-field", "claims-mapping"],
)
def test_claims_yaml_bad_field(tmp_path, edit, problem):
    p = _yaml_variant(CLAIMS, tmp_path / "claims.yaml", edit)
    with pytest.raises(InputError) as exc:
        claims.load_claims(p)
    e = exc.value
    assert e.file == str(p) and e.field != "-" and problem in str(e)


def test_claims_unknown_names():
    reg = claims.load_claims()
    input_error(lambda: reg.get("no-such-claim"), None, "claims", "no claim with id")
    input_error(lambda: reg.source("no-such-source"), None, "sources", "no source with id")
    with pytest.raises(InputError):
        reg.for_result("moon-landing")


# --------------------------------------------------------------------------------------------
# eplb (CLI) and the expert-load loader

GOOD_LOADS = {"loads": [[10, 20, 30, 40], [5, 5, 5, 5]]}
EPLB_FILES = [  # (id, bytes, field, problem)
    ("empty", b"", "-", "file is empty"),
    ("not-json", b"loads: [[1, 2]]", "line 1", "not valid JSON: Expecting value"),
    ("binary", b"\x00\xff\xfe\x01", "-", "not text"),
    ("truncated", b'{"loads": [[1, 2], [3', "end of file", "truncated JSON"),
    ("top-list", b"[[1, 2], [3, 4]]", "loads", "missing"),
    ("no-loads", b'{"load": [[1, 2]]}', "loads", "missing"),
    ("loads-flat", b'{"loads": [1, 2, 3, 4]}', "loads[0]", "list of per-layer lists"),
    ("ragged", b'{"loads": [[1, 2, 3, 4], [1, 2, 3]]}', "loads[1]", "ragged rows"),
    ("negative", b'{"loads": [[1, -2, 3, 4]]}', "loads[0][1]", "negative token count -2"),
    ("nan", b'{"loads": [[1, NaN, 3, 4]]}', "loads[0][1]", "not finite (nan)"),
    ("infinite", b'{"loads": [[1, Infinity, 3, 4]]}', "loads[0][1]", "not finite (inf)"),
    ("text", b'{"loads": [[1, "2", 3, 4]]}', "loads[0][1]", "not a number"),
    ("zeros", b'{"loads": [[0, 0, 0, 0]]}', "loads", "all token counts are zero"),
    ("empty-loads", b'{"loads": []}', "loads", "expected a non-empty list"),
]


@pytest.mark.parametrize(
    "content,field,problem", [r[1:] for r in EPLB_FILES], ids=[r[0] for r in EPLB_FILES]
)
def test_eplb_bad_file(tmp_path, run_cli, content, field, problem):
    p = tmp_path / "loads.json"
    p.write_bytes(content)
    err = cli_error(run_cli, tmp_path, "eplb", str(p), "--ep-size", "2")
    assert f"error: {p}: {field}: " in err and problem in err


def test_eplb_missing_file(tmp_path, run_cli):
    p = tmp_path / "absent.json"
    err = cli_error(run_cli, tmp_path, "eplb", str(p), "--ep-size", "2")
    assert f"error: {p}: -: file not found" in err


def test_eplb_bad_parquet(tmp_path, run_cli):
    p = tmp_path / "loads.parquet"
    pq.write_table(pa.table({"layer": [0, 0], "expert": [0, 1]}), p)
    err = cli_error(run_cli, tmp_path, "eplb", str(p), "--ep-size", "2")
    assert f"error: {p}: tokens: missing column" in err


@pytest.mark.parametrize(
    "flags,field,problem",
    [
        (
            ["--ep-size", "3"],
            "ep_size",
            "4 experts + 0 redundant = 4 physical experts do not divide",
        ),
        (["--ep-size", "0"], "--ep-size", "must be an integer from 1 to 100,000 (ranks), got '0'"),
        (["--ep-size", "-2"], "--ep-size", "must be an integer from 1 to 100,000 (ranks)"),
        (["--ep-size", "2", "--redundant", "-1"], "--redundant", "from 0 to 65,536 (experts)"),
        (["--ep-size", "2", "--groups", "0"], "--groups", "from 1 to 65,536 (groups), got '0'"),
        (["--ep-size", "2", "--nodes", "0"], "--nodes", "from 1 to 100,000 (nodes), got '0'"),
        (["--ep-size", "2", "--nodes", "4"], "--nodes", "4 nodes cannot share 2 ranks"),
        (["--ep-size", "2", "--redundant", "1"], "ep_size", "4 experts + 1 redundant = 5 physical"),
    ],
    ids=[
        "not-divisible",
        "ep-zero",
        "ep-negative",
        "redundant-negative",
        "groups-zero",
        "nodes-zero",
        "nodes-over-ranks",
        "physical-not-divisible",
    ],
)
def test_eplb_bad_sizes(tmp_path, run_cli, flags, field, problem):
    p = tmp_path / "loads.json"
    p.write_text(json.dumps(GOOD_LOADS))
    err = cli_error(run_cli, tmp_path, "eplb", str(p), *flags)
    if field.startswith("--"):  # refused by the flag's declaration, before the file is read
        assert field in err and problem in err, err
    else:
        assert f"error: {p}: {field}: {problem}" in err


def test_eplb_ep_size_not_a_number(tmp_path, run_cli):
    p = tmp_path / "loads.json"
    p.write_text(json.dumps(GOOD_LOADS))
    err = cli_error(run_cli, tmp_path, "eplb", str(p), "--ep-size", "two")
    assert "--ep-size" in err and "expected an integer from 1 to 100,000 (ranks), got 'two'" in err


# --------------------------------------------------------------------------------------------
# recipes (topology YAML): a few rows; tests/test_topology.py has the field-by-field table

TOPOLOGY = paths.ROOT / "env" / "cluster" / "topology.yaml"


@pytest.mark.parametrize(
    "content,field,problem", [r[1:] for r in RAW_YAML], ids=[r[0] for r in RAW_YAML]
)
def test_recipes_bad_topology_file(tmp_path, run_cli, content, field, problem):
    p = tmp_path / "topology.yaml"
    p.write_bytes(content)
    out = tmp_path / "generated"
    err = cli_error(run_cli, tmp_path, "recipes", "--topology", str(p), "-o", str(out))
    assert f"error: {p}: {field}: " in err and problem in err


def test_recipes_unknown_system(tmp_path, run_cli):
    p = _yaml_variant(TOPOLOGY, tmp_path / "t.yaml", _nested("system.catalog_id", "nope"))
    err = cli_error(run_cli, tmp_path, "recipes", "--topology", str(p), "-o", str(tmp_path / "g"))
    assert (
        f"error: {p}: system.catalog_id: data/hardware.yaml: unknown system; "
        "known: gb200-nvl72, gb300-nvl72"
    ) in err
    assert "or describe the nodes without the catalog: system.gpu" in err


def test_recipes_output_is_a_file(tmp_path, run_cli):
    out = tmp_path / "generated"
    out.write_text("mine\n")
    err = cli_error(run_cli, tmp_path, "recipes", "--topology", str(TOPOLOGY), "-o", str(out))
    assert f"error: {out}: output: exists and is a file" in err
    assert out.read_text() == "mine\n"


def test_recipes_output_folder_of_someone_else(tmp_path, run_cli):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("mine\n")
    err = cli_error(run_cli, tmp_path, "recipes", "--topology", str(TOPOLOGY), "-o", str(out))
    assert f"error: {out}: output: holds 'thesis.tex' and was not written by rackbook" in err
    assert (out / "thesis.tex").read_text() == "mine\n"


def test_topology_loader_missing_field(tmp_path):
    p = _yaml_variant(TOPOLOGY, tmp_path / "t.yaml", lambda d: d.pop("workers"))
    input_error(lambda: topology.load_topology(p), p, "workers", "field required")


# --------------------------------------------------------------------------------------------
# record: parameters are checked before anything starts (no vLLM needed)


@pytest.fixture
def record_in_process(monkeypatch):
    """``rackbook record`` runs the recorder in this process (as it does where vLLM is
    installed) instead of re-executing itself in .venv-live; env/live/vllm.env is not applied."""
    import importlib.util

    import rackbook.live.record as rec

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "vllm" else real(n, *a)
    )
    monkeypatch.setattr(rec, "vllm_environ", lambda: {})
    monkeypatch.setattr(rec, "api_key", lambda: None)


@pytest.mark.parametrize(
    "argv,expect",
    [
        (["no-such-scenario"], "error: -: scenario: invalid choice: 'no-such-scenario'"),
        (["../decode-parity"], "error: -: scenario: invalid choice: '../decode-parity'"),
        (["decode-parity", "-p", "colour", "red"], "error: -p: colour: unknown parameter"),
        (["decode-parity", "-p", "seed", "zero"], "error: -p: seed: 'zero' is not an integer"),
        (["decode-parity", "-p", "seed", "-1"], "error: -p: seed: must be positive, got -1"),
        (["decode-parity", "-p", "warmup", "maybe"], "error: -p: warmup: 'maybe' is not a boolean"),
        (["decode-parity", "-p", "batch_sizes", "8,x"], "error: -p: batch_sizes: '8,x' is not"),
        (["decode-parity", "-p", "batch_sizes", "0"], "error: -p: batch_sizes: needs at least one"),
        (
            ["decode-parity", "--endpoint", "file:///etc"],
            "error: --endpoint: file:///etc: expected",
        ),
    ],
    ids=[
        "unknown",
        "path",
        "unknown-param",
        "not-int",
        "negative",
        "not-bool",
        "list-text",
        "list-zero",
        "endpoint-scheme",
    ],
)
def test_record_bad_parameters(tmp_path, run_cli, record_in_process, argv, expect):
    out = tmp_path / "trace"
    err = cli_error(run_cli, tmp_path, "record", *argv, "-o", str(out))
    assert err.startswith(expect), err


def test_scenario_parser_rows():
    input_error(lambda: scenarios.scenario("nope", {}), "-", "scenario", "is not one of")
    input_error(
        lambda: scenarios.scenario("decode-parity", {"max_model_len": "8"}),
        "-p",
        "max_model_len",
        "input_len + output_len",
    )


# --------------------------------------------------------------------------------------------
# Prometheus text and vLLM EPLB log lines


def test_prom_malformed_lines_are_skipped():
    """Documented: lines that are not samples, and values that are not numbers, are skipped."""
    text = "\n".join(
        [
            "# HELP vllm:prompt_tokens_total Prompt tokens",
            'vllm:prompt_tokens_total{model_name="m"} 128.0',
            "vllm:generation_tokens_total",  # no value
            'vllm:generation_tokens_total{model_name="m" 5',  # unclosed labels
            "vllm:num_preemptions_total abc",  # not a number
            "vllm:num_requests_running NaN",
            "\x00\xff garbage \x01",
            "{} 1",
            'vllm:prompt_tokens_total{model_name="n"} 2 1700000000000',  # with a timestamp
            "vllm:num_requests_waiting 3",
        ]
    )
    got = [(s["metric"], s["labels"], s["value"]) for s in parse_metrics(text)]
    assert got == [
        ("vllm:prompt_tokens_total", '{model_name="m"}', 128.0),
        ("vllm:prompt_tokens_total", '{model_name="n"}', 2.0),
        ("vllm:num_requests_waiting", "", 3.0),
    ]
    assert parse_metrics("") == [] and parse_metrics("\x00\x01\x02") == []


@pytest.mark.parametrize(
    "line,problem",
    [
        ("EPLB step: x for model m: avg_tokens=1, max_tokens=2, balancedness=0.5", "malformed"),
        ("EPLB step: 3: nothing here", "malformed"),
        ("EPLB step: 3 for model m: avg_tokens=1, max_tokens=2", "lacks balancedness"),
        ("EPLB step: 3 for model m: avg_tokens=1, max_tokens=2, balancedness=high", "not a number"),
        (
            "EPLB step: 3: avg_tokens=1, max_tokens=2, balancedness=0.5, "
            "steps until the next rearrangement: soon",
            "not an int",
        ),
    ],
    ids=["step-text", "no-pairs", "missing-key", "value-text", "until-text"],
)
def test_eplb_log_malformed_line(line, problem):
    good = "EPLB step: 1 for model m: avg_tokens=1.00, max_tokens=2, balancedness=0.5000"
    lines = ["INFO starting", good, line]
    input_error(
        lambda: expert_load.parse_eplb_log_lines(lines, source="server.log"),
        "server.log",
        "line 3",
        problem,
    )


def test_eplb_log_binary_file(tmp_path):
    p = tmp_path / "server.log"
    p.write_bytes(b"\x00\xff\xfe EPLB step: \xff\n")
    input_error(lambda: expert_load.parse_eplb_log(p), p, "line 1", "malformed")


def test_read_yaml_parses_an_unchanged_file_once_and_sees_a_change(tmp_path, monkeypatch):
    import os

    from rackbook.inputs import loader

    p = tmp_path / "c.yaml"
    p.write_text("a: [1, 2]\n")
    parses = []
    real = loader._parse_yaml
    monkeypatch.setattr(loader, "_parse_yaml", lambda *a: parses.append(1) or real(*a))
    first = loader.read_yaml(p)
    first["a"].append(3)  # the caller's own copy
    assert loader.read_yaml(p) == {"a": [1, 2]} and len(parses) == 1
    p.write_text("a: [1, 2, 9]\n")
    assert loader.read_yaml(p) == {"a": [1, 2, 9]} and len(parses) == 2
    st = p.stat()
    p.write_text("a: [1, 2, 8]\n")  # same size, same time stamps: still seen
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert loader.read_yaml(p) == {"a": [1, 2, 8]} and len(parses) == 3
    p.unlink()
    with pytest.raises(InputError, match="file not found"):
        loader.read_yaml(p)


#: Issue 38: values each plausible alone that the request rows contradict together.
CONSISTENCY = [  # (id, change, field, problem)
    ("gaps-100x", _put("itls", [[10.0, 20.0, 30.0], [0.4], []]), "itl.itl_s (request row 0)",
     "add up to 60 s"),
    ("gaps-tenth", _put("itls", [[0.01, 0.02, 0.03], [0.4], []]), "itl.itl_s (request row 0)",
     "add up to 0.06 s"),
    ("output-1000-for-3-gaps", _put("output_lens", [1000, 2, 0]),
     "requests.output_tokens (row 0)", "over 24 times its 4 chunks"),
    ("output-below-gaps", _put("output_lens", [2, 2, 0]), "requests.output_tokens (row 0)",
     "fewer than its 4 chunks"),
    ("start-8-years-later", _put("start_times", [100.0, 100.0 + 8 * 365 * 86400.0, 101.0]),
     "requests.start_time_s (row 1)", "past its point's duration"),
    ("all-failed", _put("errors", ["a", "b", "c"]), "requests.success", "no request succeeded"),
    ("zero-output", _put("output_lens", [0, 0, 0]), "requests.output_tokens",
     "no successful request generated a token"),
]  # fmt: skip


@pytest.mark.parametrize(
    "change,field,problem", [r[1:] for r in CONSISTENCY], ids=[r[0] for r in CONSISTENCY]
)
def test_import_refuses_rows_that_contradict_one_another(tmp_path, run_cli, change, field, problem):
    d = small_result()
    if change is not None:
        change(d)
    if d["errors"] == ["a", "b", "c"]:
        d.update(completed=0, failed=3)
    if d["output_lens"] == [0, 0, 0]:
        d.update(itls=[[], [], []], latencies=[0.1, 0.2, 0.0])
    src = tmp_path / "result.json"
    src.write_text(json.dumps(d))
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(tmp_path / "trace")
    )
    assert f"{src}: {field}: " in err and problem in err, err


def test_the_consistency_rules_read_every_shipped_trace():
    """The tolerances leave every recording in git readable (they sit at 0 % of the gap sum
    and at most 16 tokens per chunk)."""
    from rackbook.core import traces

    folders = [p for p in paths.TRACES.iterdir() if (p / "itl.parquet").is_file()]
    shipped = [p for p in folders if traces.table_rows(p, "itl")]
    assert len(shipped) >= 5
    for folder in shipped:
        t = traces.read_trace(folder)
        assert t.requests["success"].any() and len(t.itl), folder


@pytest.mark.parametrize("label", ["ttft_s=0", "e2el_s=99", "output_tokens=0", "success=no"])
def test_a_label_never_replaces_a_measured_field(tmp_path, run_cli, label):
    """Issue 38: `--label ttft_s=0` silently replaced every request's measured TTFT."""
    src = tmp_path / "r.json"
    src.write_text(json.dumps(small_result()))
    err = cli_error(
        run_cli, tmp_path, "import", "vllm-bench", str(src), "-o", str(tmp_path / "t"),
        "--label", label,
    )  # fmt: skip
    assert f"--label {label.split('=')[0]}: is a measured field" in err, err


def test_run_refuses_an_unknown_point_or_a_trace_b_that_is_not_one(tmp_path, run_cli):
    """Issue 38: both were refused from inside the notebook after 11-16 s; now before any
    kernel starts (nothing is written)."""
    (tmp_path / "notes").mkdir()
    err = cli_error(run_cli, tmp_path, "run", "single-user", "-p", "point_id", "nope",
                    "--out", str(tmp_path / "o"))  # fmt: skip
    assert "parameter point_id: 'nope' is not a point of data/traces/single-user" in err, err
    err = cli_error(run_cli, tmp_path, "run", "decode-parity", "-p", "trace_b",
                    str(paths.TRACES / "single-user"), "--out", str(tmp_path / "o"))  # fmt: skip
    assert "parameter trace_b: a trace of scenario single-user, not decode-parity" in err, err
    err = cli_error(run_cli, tmp_path, "run", "decode-parity", "-p", "trace_b",
                    str(tmp_path / "notes"), "--out", str(tmp_path / "o"))  # fmt: skip
    assert "missing run.json" in err, err
    assert not (tmp_path / "o").exists()


def test_more_gaps_than_tokens_are_refused_from_the_parquet_footer(tmp_path, run_cli):
    """An itl.parquet holding more rows than its requests generated tokens (the issue's: 300M
    rows in 2.7 MB) is refused from its row count, before the table is read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = tmp_path / "t"
    shutil.copytree(paths.TRACES / "single-user", t)
    tokens = int(traces.read_table(t, "requests", ["output_tokens"])["output_tokens"].sum())
    n = tokens + 1
    pq.write_table(
        pa.table({"request_row": pa.array(np.zeros(n, np.int64)),
                  "itl_s": pa.array(np.full(n, 1e-3))}), t / "itl.parquet"
    )  # fmt: skip
    for argv in (["summarize", str(t)], ["run", "single-user", "-p", "trace", str(t),
                                         "--out", str(tmp_path / "o")]):  # fmt: skip
        err = cli_error(run_cli, tmp_path, *argv)
        assert f"{t / 'itl.parquet'}: -: {n:,} gap rows for 32 requests" in err, err
    assert not (tmp_path / "o").exists()


def test_published_imports_refuse_impossible_values(tmp_path, run_cli):
    """Issue 38: InferenceX tput_per_gpu 1e15, --source-date 9999-12-31 and an MLPerf CSV
    whose unclosed quote swallowed a row were all accepted."""
    sources = paths.DATA / "published" / "sources"
    fixture = Path(__file__).parent / "fixtures" / "published" / "inferencex-benchmarks.json"
    rows = json.loads(fixture.read_text())
    rows[0]["metrics"]["tput_per_gpu"] = 1e15
    ix = tmp_path / "ix.json"
    ix.write_text(json.dumps(rows))
    err = cli_error(run_cli, tmp_path, "import", "inferencex", str(ix), "-o", str(tmp_path / "a"))
    assert "published_points.tok_s_per_gpu: must be > 0 and at most 10,000,000, got 1e+15" in err
    err = cli_error(run_cli, tmp_path, "import", "inferencex", str(fixture), "-o",
                    str(tmp_path / "a"), "--source-date", "9999-12-31")  # fmt: skip
    assert "--source-date: 9999-12-31 is in the future" in err, err
    lines = (sources / "mlperf-v6.1-summary.csv").read_text().splitlines()
    lines[3] = '"' + lines[3]  # a quote opened and never closed
    csv_file = tmp_path / "summary.csv"
    csv_file.write_text("\n".join(lines) + "\n")
    err = cli_error(run_cli, tmp_path, "import", "mlperf", str(csv_file), "-o", str(tmp_path /
                    "a"), "--source-url", "https://example.org/summary.csv")  # fmt: skip
    assert f"{csv_file}: line " in err and ("CSV" in err or "quote" in err), err
    assert not (tmp_path / "a").exists()


def test_too_few_open_files_is_named_before_any_work(tmp_path):
    """Issue 38: with 24 open files a verb failed after 62 s with an unnamed error. The soft
    limit is raised where the hard one allows; otherwise one line names the limit."""
    import resource
    import subprocess
    import sys

    rackbook = str(Path(sys.executable).with_name("rackbook"))

    def limited(soft: int, hard: int):
        return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    proc = subprocess.run([rackbook, "list"], cwd=tmp_path, capture_output=True, text=True,
                          preexec_fn=limited(24, 24))  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "open files: 24 is under the 256 rackbook needs: run ulimit -n 256" in proc.stderr
    if hard == resource.RLIM_INFINITY or hard >= 256:
        proc = subprocess.run([rackbook, "catalog"], cwd=tmp_path, capture_output=True,
                              text=True, preexec_fn=limited(24, hard))  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv,flag",
    [(["import", "vllm-bench", "r.json", "-o", ""], "-o"), (["run", "single-user", "--out", ""],
      "--out"), (["recipes", "-o", ""], "-o"), (["book", "--html", ""], "--html")],
)  # fmt: skip
def test_an_empty_path_is_refused_by_its_flag(tmp_path, run_cli, monkeypatch, argv, flag):
    """Issue 38: `-o ''` was read as the working folder, or named rackbook's own temporary
    folder in its message."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(*argv)
    assert code == 2 and err == f"error: '': {flag}: an empty path: name a file or folder\n"
    assert list(tmp_path.iterdir()) == []


def test_an_internal_error_is_one_line_naming_its_traceback_log(run_cli, monkeypatch, tmp_path):
    """A bug (any exception that is not bad input) exits 1 with one line; the traceback goes
    to the log file the line names, in the temporary folder, never into an output."""
    import tempfile

    from rackbook.inputs import catalogs

    def boom(args):
        raise RuntimeError("boom \x1b[31mred")

    monkeypatch.setattr(catalogs, "cli_catalog", boom)  # the handler `catalog` imports and runs
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, _, err = run_cli("catalog")
    assert code == 1 and err.count("\n") == 1, err
    assert "internal error RuntimeError: boom" in err and "(a bug; traceback in " in err
    log = Path(err.rsplit("traceback in ", 1)[1].rstrip(")\n"))
    assert log.parent.parent == tmp_path and log.name.startswith("error-")
    text = log.read_text(encoding="utf-8")
    assert "Traceback" in text and "boom red" in text  # ANSI colours removed


def test_read_yaml_takes_the_c_parser_for_a_shallow_file(tmp_path, monkeypatch):
    """A shallow document (every shipped catalog) is parsed by libyaml's loader, which still
    refuses a duplicate key; the pure-Python loader is left for deep documents (issue 35
    item 7: ``check`` parsed hardware.yaml, a model and the fit in Python, ~0.1 s CPU)."""
    from rackbook.inputs import loader

    made = []
    real = loader._FastUniqueKeyLoader
    monkeypatch.setattr(loader, "_FastUniqueKeyLoader", lambda t: made.append(1) or real(t))
    p = tmp_path / "s.yaml"
    p.write_text("gpus:\n  a: {hbm: 1}\n")
    assert loader.read_yaml(p) == {"gpus": {"a": {"hbm": 1}}} and made == [1]
    p.write_text("a: 1\na: 2\n")
    with pytest.raises(InputError, match="duplicate key 'a'"):
        loader.read_yaml(p)
    assert made == [1, 1]
