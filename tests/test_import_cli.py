"""`rackbook import vllm-bench` and `rackbook summarize`: happy path and every bad input."""

from __future__ import annotations

import json

import pytest
from conftest import small_result

from rackbook.core.traces import read_trace


def test_import_then_summarize(tmp_path, write_json, run_cli):
    src = write_json(small_result())
    out = tmp_path / "trace"
    code, stdout, err = run_cli(
        "import",
        "vllm-bench",
        str(src),
        "-o",
        str(out),
        "--label",
        "engine=vllm-serve",
        "--label",
        "batch_size=2",
        "--label",
        "gpu=none",
    )
    assert code == 0, err
    t = read_trace(out)
    assert t.kind == "recorded" and len(t.requests) == 3 and len(t.itl) == 4
    assert set(t.requests["engine"]) == {"vllm-serve"}
    assert t.requests["batch_size"].tolist() == [2, 2, 2]
    assert t.requests["concurrency"].tolist() == [2, 2, 2]  # from max_concurrency
    assert t.requests["gpu"].tolist() == ["none"] * 3
    assert t.requests["start_time_s"].tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert (out / "run.json").is_file() and json.loads((out / "run.json").read_text())["commands"]
    code, stdout, err = run_cli("summarize", str(out), "--json")
    assert code == 0
    s = json.loads(stdout.strip().splitlines()[-1])
    assert s["completed"] == 2 and s["output_throughput"] == pytest.approx(3.0)
    code, stdout, _ = run_cli("summarize", str(out))
    assert "Output token throughput (tok/s)" in stdout and "3.00" in stdout


BAD_JSON = [
    ("missing", None, "does not exist"),
    ("empty", b"", "empty"),
    ("truncated", b'{"duration": 1.0, "ttfts": [0.1,', "truncated"),
    ("binary", b"\x89PNG\x00\xff\xfe", "binary"),
    ("not-json", b"duration = 3", "not valid JSON"),
    ("top-list", b"[1, 2, 3]", "top level must be a JSON object"),
    (
        "nan",
        b'{"duration": NaN, "input_lens": [], "output_lens": [], "ttfts": [], '
        b'"itls": [], "latencies": [], "errors": []}',
        "duration: non-finite value",
    ),
]


@pytest.mark.parametrize("name,content,problem", BAD_JSON, ids=[b[0] for b in BAD_JSON])
def test_bad_files(tmp_path, run_cli, name, content, problem):
    src = tmp_path / f"{name}.json"
    if content is not None:
        src.write_bytes(content)
    out = tmp_path / "trace"
    code, stdout, err = run_cli("import", "vllm-bench", str(src), "-o", str(out))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(src) in lines[0]
    assert problem in lines[0]
    assert not out.exists() and list(tmp_path.glob(".trace*")) == []


BAD_FIELDS = [
    ("not-detailed", {"ttfts": None}, "ttfts", "--save-detailed"),
    ("unequal", {"ttfts": [0.1, 0.2]}, "ttfts", "expected 3"),
    ("negative-time", {"latencies": [0.7, -0.6, 0.0]}, "latencies[1]", "negative"),
    ("nan-time", {"ttfts": [0.1, float("nan"), 0.0]}, "ttfts[1]", "NaN"),
    ("zero-duration", {"duration": 0}, "duration", "> 0"),
    ("negative-duration", {"duration": -3.0}, "duration", "> 0"),
    ("string-duration", {"duration": "2 s"}, "duration", "not a number"),
    (
        "milliseconds",
        {"latencies": [700000.0, 600000.0, 0.0], "ttfts": [100.0, 200.0, 0.0]},
        "latencies",
        "milliseconds",
    ),
    ("ttft-after-end", {"ttfts": [0.9, 0.2, 0.0]}, "ttfts[0]", "larger than"),
    ("wrong-type-itls", {"itls": "0.1"}, "itls", "list"),
    ("bad-itl-entry", {"itls": [[0.1, "x"], [0.4], []]}, "itls", "not a number"),
    ("non-integer-tokens", {"output_lens": [4.5, 2, 0]}, "output_lens[0]", "integer"),
    ("completed-mismatch", {"completed": 3}, "completed", "says 3"),
]


@pytest.mark.parametrize("name,change,field,problem", BAD_FIELDS, ids=[b[0] for b in BAD_FIELDS])
def test_bad_fields(tmp_path, write_json, run_cli, name, change, field, problem):
    d = small_result()
    for k, v in change.items():
        if v is None:
            del d[k]
        else:
            d[k] = v
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    out = tmp_path / "trace"
    code, _, err = run_cli("import", "vllm-bench", str(src), "-o", str(out))
    assert code == 2
    line = err.strip()
    assert "\n" not in line and line.startswith("error: ")
    assert f"{src}: {field}" in line and problem in line
    assert not out.exists()


def test_import_keeps_existing_trace_on_error(tmp_path, write_json, run_cli):
    out = tmp_path / "trace"
    assert run_cli("import", "vllm-bench", str(write_json(small_result())), "-o", str(out))[0] == 0
    before = (out / "run.json").read_text()
    bad = write_json(small_result(duration=-1), "bad.json")
    assert run_cli("import", "vllm-bench", str(bad), "-o", str(out))[0] == 2
    assert (out / "run.json").read_text() == before


def test_bad_label(tmp_path, write_json, run_cli):
    code, _, err = run_cli(
        "import",
        "vllm-bench",
        str(write_json(small_result())),
        "-o",
        str(tmp_path / "t"),
        "--label",
        "noequals",
    )
    assert code == 2 and err.startswith("error: ") and "KEY=VALUE" in err


@pytest.mark.parametrize(
    "setup,problem",
    [
        ("absent", "does not exist"),
        ("file", "not a folder"),
        ("no-run", "missing run.json"),
        ("bad-run", "truncated JSON"),
        ("no-requests", "missing table requests.parquet"),
    ],
)
def test_summarize_bad_trace(tmp_path, write_json, run_cli, setup, problem):
    t = tmp_path / "trace"
    if setup == "file":
        t.write_text("x")
    elif setup != "absent":
        run_cli("import", "vllm-bench", str(write_json(small_result())), "-o", str(t))
        if setup == "no-run":
            (t / "run.json").unlink()
        elif setup == "bad-run":
            (t / "run.json").write_text("{")
        elif setup == "no-requests":
            (t / "requests.parquet").unlink()
    code, _, err = run_cli("summarize", str(t), "--json")
    assert code == 2 and err.count("\n") == 1 and problem in err and err.startswith("error: ")


def test_unknown_verb_and_result(run_cli):
    code, _, err = run_cli("frobnicate")
    assert code == 2 and err.startswith("error: ")
    code, _, err = run_cli("run", "no-such-result")
    assert code == 2 and "unknown result 'no-such-result'" in err and err.count("\n") == 1
