"""`rackbook run` executes a notebook with papermill and leaves a headline JSON; errors are one
line and leave nothing behind."""

from __future__ import annotations

import json

import pytest
from conftest import small_result

from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import concat, write_trace
from rackbook.results.headline import KINDS, VERDICTS


def _decode_trace(tmp_path):
    """Two engines at batch 2 and 4 whose decode throughput differs by a known ratio."""
    parts = []
    for engine, slow in (("vllm-serve", 1.1), ("vllm-offline", 1.0)):
        for b in (2, 4):
            d = small_result(
                errors=["", "", ""],
                completed=3,
                output_lens=[5, 5, 5],
                ttfts=[0.1, 0.1, 0.1],
                latencies=[0.1 + 0.4 * slow] * 3,
                itls=[[0.1 * slow] * 4] * 3,
            )
            parts.append(
                vllm_bench_frames(
                    tmp_path / f"{engine}-{b}.json",
                    {"engine": engine, "batch_size": str(b)},
                    data=d,
                )
            )
    run = new_run_info(
        kind="synthetic",
        commands=["test"],
        parameters={},
        engine={"name": "t"},
        generator={"name": "tests/test_runner.py", "seed": 0},
    )
    return write_trace(tmp_path / "trace", concat(parts, run))


@pytest.mark.slow
def test_run_decode_parity_on_a_trace(tmp_path, run_cli):
    trace = _decode_trace(tmp_path)
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        "run",
        "decode-parity",
        "-p",
        "trace",
        str(trace),
        "-p",
        "batch_sizes",
        "[2, 4]",
        "--out",
        str(out),
    )
    assert code == 0, err
    doc = json.loads((out / "decode-parity.json").read_text())
    assert (out / "decode-parity.ipynb").is_file()
    assert doc["result"] == "decode-parity" and doc["source"] == "trace"
    readings = {r["reading"]: r["verdict"] for r in doc["readings"]}
    # a CPU stand-in, not DeepInfer on Blackwell: physics cannot judge a ratio of two engines
    assert readings == {
        "physics": "undetermined", "published": "none published", "this run": "untested"
    }  # fmt: skip
    assert "physics undetermined" in stdout and "this run untested" in stdout
    h = {x["name"]: x for x in doc["headlines"]}
    # decode: A takes 1.1x as long per token as B -> A/B = 1/1.1 -> -9.09 %
    assert h["max_decode_gap"]["value"] == pytest.approx(-9.09, abs=0.01)
    assert h["batch_sizes_within_band"]["value"] == 0
    for x in doc["headlines"]:
        assert x["kind"] in KINDS and x["verdict"] in VERDICTS and x["unit"]
        assert x["definition"] and "\n" not in x["reason"]
    measured = [x for x in doc["headlines"] if x["kind"] == "measured"]
    assert doc["trace_ids"] and all(x["trace_ids"] == doc["trace_ids"] for x in measured)


def test_unknown_parameter_is_refused(tmp_path, run_cli):
    code, _, err = run_cli(
        "run", "decode-parity", "-p", "no_such", "1", "--out", str(tmp_path / "o")
    )
    assert code == 2 and err.count("\n") == 1
    assert "parameter no_such" in err and "not a parameter" in err
    assert not (tmp_path / "o" / "decode-parity.ipynb").exists()


@pytest.mark.slow
def test_params_file_then_p_overrides(tmp_path, run_cli):
    """A params file sets parameters and the source; -p overrides a file's value."""
    trace = _decode_trace(tmp_path)
    f = tmp_path / "p.yaml"
    f.write_text(f"source: trace\ntrace: {trace}\nbatch_sizes: [2, 4]\nband_pct: 25\n")
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        "run", "decode-parity", "--params-file", str(f), "-p", "band_pct", "50", "--out", str(out)
    )
    assert code == 0, err
    doc = json.loads((out / "decode-parity.json").read_text())
    assert doc["parameters"]["band_pct"] == 50 and doc["parameters"]["batch_sizes"] == [2, 4]


@pytest.mark.parametrize(
    "text,problem",
    [
        ("[1, 2]\n", "-: must be a mapping of parameter names, got list"),
        ("bogus: 1\n", "parameter bogus: not a parameter of this notebook"),
        ("source: cloud\n", "source: 'cloud' is not one of trace, live"),
        ("a: 1\na: 2\n", "duplicate"),
    ],
    ids=["list", "unknown", "bad-source", "duplicate-key"],
)
def test_bad_params_file_gives_one_line(tmp_path, run_cli, text, problem):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    code, _, err = run_cli(
        "run", "decode-parity", "--params-file", str(f), "--out", str(tmp_path / "o")
    )
    assert code == 2 and err.count("\n") == 1 and problem in err, err
    assert not (tmp_path / "o").exists()


def test_bad_trace_parameter_gives_one_line(tmp_path, run_cli):
    code, _, err = run_cli(
        "run", "decode-parity", "-p", "trace", str(tmp_path / "nope"), "--out", str(tmp_path / "o")
    )
    assert code == 2 and err.count("\n") == 1 and "trace folder does not exist" in err
    assert not (tmp_path / "o" / "decode-parity.ipynb").exists()
    assert not (tmp_path / "o" / "decode-parity.json").exists()


@pytest.mark.slow
def test_figures_are_drawn_even_with_a_non_interactive_backend(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out = tmp_path / "out"
    code, _, err = run_cli("run", "single-user", "--out", str(out))
    assert code == 0, err
    nb = json.loads((out / "single-user.ipynb").read_text())
    pngs = [  # shown, or glued for a captioned figure (myst-nb stores it under papermill.record)
        o
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if any(k.endswith("image/png") for k in o.get("data", {}))
    ]
    assert pngs, "no figure in the executed notebook"
    import os

    assert os.environ["MPLBACKEND"] == "Agg"  # restored for the caller


@pytest.mark.slow
def test_api_key_canary_reaches_no_output(tmp_path, run_cli, monkeypatch):
    """An API key in the environment never lands in provenance, executed notebooks or JSON."""
    from rackbook.core.provenance import new_run_info

    canary = "rk-canary-7f3a9c1e5b"
    monkeypatch.setenv("RACKBOOK_API_KEY", canary)
    monkeypatch.setenv("VLLM_API_KEY", canary)
    run = new_run_info(kind="recorded", commands=[], parameters={}, engine={})
    assert run["environment"]["RACKBOOK_API_KEY"] == "<redacted>"
    assert canary not in json.dumps(run)
    out = tmp_path / "out"
    assert run_cli("run", "single-user", "--out", str(out))[0] == 0
    files = [f for f in out.rglob("*") if f.is_file()]
    assert files and all(canary.encode() not in f.read_bytes() for f in files)


@pytest.mark.slow
def test_a_failing_notebook_leaves_nothing_behind(tmp_path, run_cli):
    """A corrupt Parquet table fails the notebook: one error line naming the file, exit 2, and
    the output folders the run created are gone (not left empty)."""
    import shutil

    from rackbook import paths

    trace = tmp_path / "t"
    shutil.copytree(paths.TRACES / "single-user", trace)
    (trace / "requests.parquet").write_bytes(b"not parquet")
    out = tmp_path / "new" / "out"
    code, _, err = run_cli("run", "single-user", "-p", "trace", str(trace), "--out", str(out))
    assert code == 2 and err.count("\n") == 1
    assert "requests.parquet" in err and "unreadable Parquet" in err
    assert not (tmp_path / "new").exists()


def test_figures_get_alt_text_from_their_captions():
    """A figure's alt text says what it shows (its caption, glued values filled in), never the
    image's file path; an alt text already given is kept."""
    src = (
        "Text.\n\n```{glue:figure} fig_x\n:name: fig-x\n\nThroughput per {glue:text}`unit:s` "
        "of each *configuration*. Look at the bars. CPU stand-in.\n```\n\n"
        "```{glue:figure} fig_y\n:alt: given\n\nOther.\n```\n"
    )
    from rackbook.book import build

    out = build.add_alt_text(src, {"unit": "replica"})

    assert ":alt: Throughput per replica of each configuration. Look at the bars.\n" in out
    assert out.count(":alt:") == 2 and ":alt: given\n" in out
    assert "Look at the bars. CPU stand-in.\n```" in out  # the caption itself is unchanged


def test_list_json_never_prints_nan(tmp_path, run_cli, monkeypatch) -> None:
    """Issue 38: `list --json` printed NaN (not JSON) for a reading without a value."""
    from rackbook.results import headline

    out = tmp_path / "o"
    out.mkdir()
    (out / "single-user.json").write_text("{}")
    doc = {"readings": [{"value": float("nan"), "verdict": "untested", "x": [float("inf")]}]}
    monkeypatch.setattr(headline, "read_result", lambda _f: doc)
    code, printed, err = run_cli("list", "--json", "--out", str(out))
    assert code == 0, err
    got = json.loads(printed, parse_constant=lambda c: pytest.fail(f"{c} printed"))
    (su,) = [r for r in got["results"] if r["result"] == "single-user"]
    assert su["readings"] == [{"value": None, "verdict": "untested", "x": [None]}]


@pytest.mark.parametrize(
    ("given", "field", "problem"),
    [
        ({"ep_size": 5}, "parameter ep_size", "448 physical experts do not divide evenly over 5"),
        ({"groups": 5}, "parameter groups", "5 groups do not divide 384 experts"),
    ],
)
def test_an_ep_layout_the_trace_cannot_hold_is_refused_before_the_kernel(
    tmp_path, given, field, problem
):
    """eplb-balance's layout is checked against the experts its trace holds (384, with the
    notebook's 64 redundant), naming the parameter; nothing is written."""
    from rackbook.book import runner
    from rackbook.errors import InputError

    with pytest.raises(InputError) as exc:
        runner.prepare_run("eplb-balance", parameters=given, out=tmp_path / "o")
    assert exc.value.file == "notebooks/eplb-balance.ipynb" and exc.value.field == field
    assert problem in exc.value.problem
    assert not (tmp_path / "o").exists()


def test_an_input_error_in_a_cell_is_rebuilt_from_its_fields(tmp_path):
    """An InputError a cell raises reaches the runner as the same error, rebuilt from the file,
    field and problem the kernel wrote (a file name holding ": " included), not from its text;
    another error names the notebook, the cell, the exception and the traceback's log."""
    import nbformat

    from rackbook.book.runner import execute_notebook
    from rackbook.errors import InputError

    def notebook(code: str):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python"}
        src = tmp_path / "nb.ipynb"
        nbformat.write(nb, src)
        return src

    raising = "from rackbook.errors import InputError\nraise InputError('a: b.json', 'x', 'bad: 1')"
    with pytest.raises(InputError) as exc:
        execute_notebook(notebook(raising), tmp_path / "out.ipynb", {}, tmp_path, False, "t")
    assert (exc.value.file, exc.value.field, exc.value.problem) == ("a: b.json", "x", "bad: 1")
    with pytest.raises(InputError) as other:
        execute_notebook(notebook("1 / 0"), tmp_path / "out.ipynb", {}, tmp_path, False, "t")
    assert other.value.field == "cell 1" and other.value.file.endswith("nb.ipynb")
    assert other.value.problem.startswith("ZeroDivisionError: division by zero (the notebook's")
