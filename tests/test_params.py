"""The params schema (:mod:`rackbook.params`): it declares every notebook parameter and every
numeric flag, every bad value is one line (exit 2) before any work, and property tests
(Hypothesis) throw generated values at every flag and parameter through the validation entry
point (:func:`rackbook.cli.parse`), in-process; a few cases run the installed command."""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import papermill
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackbook import cli, params, paths
from rackbook.book import runner
from rackbook.errors import InputError

RESULTS = list(paths.RESULTS)
RACKBOOK = str(Path(sys.executable).with_name("rackbook"))


def _declared(result: str) -> dict[str, Any]:
    return papermill.inspect_notebook(str(paths.NOTEBOOKS / f"{result}.ipynb"))


@pytest.mark.parametrize("result", RESULTS)
def test_schema_declares_every_notebook_parameter(result: str) -> None:
    """Each parameter's kind is papermill's type comment, one of the schema's kinds; every
    default passes its declaration."""
    declared = _declared(result)
    specs = params.declared(result)
    assert list(specs) == list(declared)
    for name, d in declared.items():
        assert params.kind_spec(d["inferred_type_name"]) == specs[name], name
        if name != "trace":
            default = ast.literal_eval(str(d["default"]))
            params.check_given(result, {name: default}, f"{result}.ipynb")


def test_kind_suffixes_make_lists_and_null() -> None:
    """``?`` allows None, ``+`` a list of one or more, ``*`` a list that may be empty; an
    unknown kind is refused by name."""
    assert params.kind_spec("gpus?").nullable and not params.kind_spec("gpus").nullable
    one, any_ = params.kind_spec("url+"), params.kind_spec("url*")
    assert (one.kind, one.min_items, one.item) == ("list", 1, params.KINDS["url"])
    assert (any_.kind, any_.min_items) == ("list", 0)
    with pytest.raises(ValueError, match="'gpu_count' is not one of"):
        params.kind_spec("gpu_count")
    with pytest.raises(InputError, match=r"parameter replicas\[1\]: must be an integer from 1"):
        params.check_given("rack-scaling", {"replicas": [1, 0]}, "nb")
    with pytest.raises(InputError, match="parameter lo: expected an integer from 1 to"):
        params.check_given("context-latency", {"lo": "64"}, "nb")  # text is never a number


@pytest.mark.parametrize("result", RESULTS)
def test_cell_defaults_read_what_papermill_reads(result: str) -> None:
    """The runner and the results' ``Params`` read names and defaults with
    :func:`params.cell_defaults` (no papermill import): papermill's reading, in cell order."""
    declared = _declared(result)
    want = {n: ast.literal_eval(str(d["default"])) for n, d in declared.items()}
    got = params.cell_defaults(result)
    assert list(got) == list(want) and got == want
    assert got["trace"] == f"data/traces/{result}"


@pytest.mark.parametrize("result", RESULTS)
def test_each_parameter_is_declared_once_with_its_meaning(result: str) -> None:
    """The parameters cell is the one place a parameter is named, given its default and its
    meaning: each name is assigned once there, with a comment (papermill's help), and has
    a kind (its type comment) for what the cell cannot say."""
    nb = json.loads((paths.NOTEBOOKS / f"{result}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    assigned = [t.id for node in tree.body for t in node.targets]  # type: ignore[attr-defined]
    assert len(assigned) == len(set(assigned)), assigned
    assert set(assigned) == set(params.declared(result))
    for name, d in _declared(result).items():
        assert d["help"].strip(), f"{result}: parameter {name} has no comment in its cell"


def _flag_specs() -> dict[str, dict[str, params.Spec]]:
    """verb -> dest -> the schema's Spec of each numeric flag, read off the parser."""
    parser = cli.build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {
        verb: {a.dest: a.type for a in sub._actions if isinstance(a.type, params.Spec)}
        for verb, sub in verbs.items()
    }


FLAGS = _flag_specs()


def test_schema_drives_every_numeric_flag() -> None:
    """Every numeric flag is read by the schema's rule (a value outside the range is a usage
    error), and no flag is read by a bare int/float."""
    verbs = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices
    for verb, sub in verbs.items():
        for action in sub._actions:
            if action.type in (int, float):
                pytest.fail(f"{verb} {action.option_strings}: read by {action.type.__name__}")
        assert "max_input_mb" in FLAGS[verb], verb
    numeric = "gpus tok_s isl osl context cached_share concurrency batch tokens_per_step tpot_ms"
    assert set(FLAGS["check"]) == {*numeric.split(), "ttft_s", "max_input_mb"}
    assert set(FLAGS["eplb"]) == {"ep_size", "redundant", "groups", "nodes", "max_input_mb"}
    assert {"jobs"} <= set(FLAGS["run"]) & set(FLAGS["book"]) and "context" in FLAGS["kv-bytes"]
    assert FLAGS["import"]["gpus"] == FLAGS["check"]["gpus"]
    assert FLAGS["check"]["gpus"].kind == "int" and FLAGS["check"]["tok_s"].kind == "number"


def test_to_number_one_rule() -> None:
    spec = FLAGS["check"]["tok_s"]
    assert params.to_number("3000", spec) == 3000.0
    assert params.to_number(" 1e3 ", spec) == 1000.0
    for bad, problem in [
        ("nan", "finite"),
        ("-inf", "finite"),
        ("1e400", "finite"),
        ("5e-324", "subnormal"),
        ("1e-300", "from 1e-06"),
        ("9" * 41, "41 characters"),
        ("ten", "expected a number"),
        (True, "expected a number"),
    ]:
        with pytest.raises(ValueError, match=problem):
            params.to_number(bad, spec)
    gpus = FLAGS["check"]["gpus"]
    with pytest.raises(ValueError, match="expected an integer"):
        params.to_number("8.0", gpus)
    for text in ("010", "1:00", "0x8", "1_000", "+0o10", "٨"):  # never 8, 60, 8, 1000, 8, 8
        with pytest.raises(ValueError, match="expected an integer"):
            params.to_number(text, gpus)
    pairs = [("a", "010"), ("b", "1:00"), ("c", "8"), ("d", "1e3"), ("e", "yes"), ("f", "0x8")]
    assert params.read_pairs(pairs) == {  # YAML 1.2: only c and d are numbers
        "a": "010", "b": "1:00", "c": 8, "d": 1000.0, "e": "yes", "f": "0x8"}  # fmt: skip
    with pytest.raises(ValueError, match="out of range"):
        params.to_number(10**5000 if sys.get_int_max_str_digits() == 0 else 2**600, gpus)


#: The issue's cases: each refused in one line (exit 2) before any notebook or reading.
REFUSED = [
    (["run", "eplb-balance", "-p", "show_layer", "4000"], "parameter show_layer"),
    (["run", "decode-parity", "-p", "batch_sizes", "[]"], "parameter batch_sizes"),
    (["run", "single-user", "-p", "gpus", "0"], "parameter gpus"),
    (["run", "prefill-gain", "-p", "kv_dtype", "int3"], "parameter kv_dtype"),
    (["run", "context-latency", "-p", "lo", "4096", "-p", "hi", "1024"], "parameter hi"),
    (["run", "eplb-balance", "-p", "nodes", "3"], "parameter nodes"),
    (["run", "all", "-j", "0"], "-j/--jobs"),
    (["check", "--model", "m", "--gpu", "g", "--gpus", "8", "--tok-s", "1",
      "--concurrency", "1e-300"], "--concurrency"),
    (["check", "--model", "m", "--gpu", "g", "--gpus", "8", "--tok-s", "5e-324"], "--tok-s"),
    (["check", "--model", "m", "--gpu", "g", "--gpus", "8", "--tok-s", "1",
      "--max-input-mb", "1e308"], "--max-input-mb"),
    (["eplb", "x.json", "--ep-size", "8", "--nodes", "1000"], "--nodes"),
    (["import", "vllm-bench", "r.json", "-o", "t", "--label", "concurrency=-5"], "concurrency"),
    (["import", "vllm-bench", "r.json", "-o", "t", "--label", "num_gpus=-8"], "num_gpus"),
    # issue 38: YAML 1.1's octal, base 60, hex and digit separators are not numbers
    (["run", "single-user", "-p", "gpus", "010"], "leading zero"),
    (["run", "single-user", "-p", "gpus", "1:00"], "base 60"),
    (["run", "single-user", "-p", "gpus", "0x8"], "hexadecimal"),
    (["run", "decode-parity", "-p", "batch_sizes", "[8, 010]"], "leading zero"),
    (["import", "vllm-bench", "r.json", "-o", "t", "--label", "num_gpus=1_000"], "separators"),
    (["check", "--model", "m", "--gpu", "g", "--gpus", "010", "--tok-s", "1"], "leading zero"),
]  # fmt: skip


@pytest.mark.parametrize("argv,name", REFUSED, ids=[" ".join(a[:3]) for a, _ in REFUSED])
def test_refused_before_any_work(argv, name, run_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(*argv, *(["--out", "o"] if argv[0] == "run" else []))
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert name in err
    assert out == "" and list(tmp_path.iterdir()) == []


def test_show_layer_past_the_traces_layers(run_cli, tmp_path) -> None:
    """In range for the schema, past the shipped trace's 40 layers: refused by the runner,
    before a kernel starts."""
    code, _, err = run_cli("run", "eplb-balance", "-p", "show_layer", "40", "--out", str(tmp_path))
    assert code == 2 and "parameter show_layer: must be a layer from 0 to 39, got 40" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("result", RESULTS)
def test_example_params_file_per_chapter(result: str, tmp_path: Path) -> None:
    """env/params/RESULT.yaml exists for every chapter and passes every check that
    ``rackbook run RESULT --params-file`` makes before executing."""
    f = paths.ROOT / "env" / "params" / f"{result}.yaml"
    values = runner.read_params_file(f)
    assert values.pop("source") == "trace"
    values = runner.cwd_paths(values)
    prep = runner.prepare_run(result, "trace", values, tmp_path / "o")
    assert prep[2]["source"] == "trace"
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- properties

#: The smallest argv of each verb with numeric flags, the flag's value appended.
BASE = {
    "check": ["check", "--model", "m", "--gpu", "g", "--gpus", "8", "--tok-s", "1"],
    "kv-bytes": ["kv-bytes", "m"],
    "eplb": ["eplb", "x.json", "--ep-size", "8"],
    "run": ["run", "single-user"],
    "book": ["book"],
}
FLAG_CASES = [(verb, dest) for verb, flags in FLAGS.items() if verb in BASE for dest in flags]
NUMBER_TEXT = st.one_of(
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(allow_subnormal=True, min_value=-1e-300, max_value=1e-300).map(repr),
    st.sampled_from(["", " ", "1e-320", "0x10", "1_000", "٣", "9" * 5000, "-0", "+8", "1e4000"]),
    st.text(max_size=8),
)


def _flag(verb: str, dest: str) -> str:
    if verb in ("run", "book") and dest == "jobs":
        return "--jobs"
    return "--" + dest.replace("_", "-")


PARSER = cli.build_parser()


def _parse(argv: list[str], capsys) -> tuple[int, argparse.Namespace | None, str]:
    """The validation entry point in-process: (exit code, args, stderr)."""
    try:
        args = cli.parse(argv, PARSER)
    except SystemExit as exc:
        return int(exc.code or 0), None, capsys.readouterr().err
    except InputError as exc:
        return 2, None, f"error: {exc}\n"
    return 0, args, ""


def _assert_within(value: Any, spec: params.Spec) -> None:
    assert not isinstance(value, bool)
    assert isinstance(value, int) if spec.kind == "int" else isinstance(value, (int, float))
    assert math.isfinite(value) and (value == 0 or abs(value) >= sys.float_info.min)
    if spec.lo is not None:
        assert value > spec.lo if spec.lo_open else value >= spec.lo
    if spec.hi is not None:
        assert value < spec.hi if spec.hi_open else value <= spec.hi


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=st.sampled_from(FLAG_CASES), text=NUMBER_TEXT)
def test_every_numeric_flag_is_refused_in_one_line_or_within_its_range(case, text, capsys):
    verb, dest = case
    code, args, err = _parse([*BASE[verb], _flag(verb, dest), text], capsys)
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert "Traceback" not in err
    else:
        _assert_within(getattr(args, dest), FLAGS[verb][dest])


PARAM_CASES = [(r, n) for r in RESULTS for n in params.declared(r) if n != "trace"]
YAML_TEXT = st.one_of(
    NUMBER_TEXT,
    st.lists(st.integers(-5, 10**6), max_size=4).map(str),
    st.lists(st.floats(allow_nan=True), max_size=3).map(str),
    st.sampled_from(["null", "[]", "{}", "true", "fp4", "int3", "[[1]]", "http://h:1", "a: b"]),
    st.sampled_from(["{a: [1, 2]}", "!!binary aGk=", "&a [*a]", "? [1]\n: 2", "'" * 3]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=st.sampled_from(PARAM_CASES), text=YAML_TEXT)
def test_every_notebook_parameter_is_refused_in_one_line_or_declared(case, text, capsys):
    """``-p NAME VALUE`` of every parameter: a usage error of one line, or a value its
    declaration accepts (no notebook runs here: the entry point only reads and checks)."""
    result, name = case
    code, args, err = _parse(["run", result, "-p", name, text], capsys)
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
        return
    value = params.read_pairs([(name, text)])[name]
    spec = params.declared(result)[name]
    if spec.kind in ("int", "number") and value is not None:
        _assert_within(value, spec)
    if spec.kind == "list":
        assert isinstance(value, list) and len(value) >= spec.min_items
        if spec.item is not None and spec.item.kind in ("int", "number"):
            for v in value:
                _assert_within(v, spec.item)
    if spec.kind == "choice":
        assert value in spec.choices


def _installed(*argv: str, cwd: Path, signal_after: float | None = None) -> tuple[int, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACKBOOK_")}
    env["RACKBOOK_BUILD"] = str(cwd / "_build")
    t0 = time.monotonic()
    proc = subprocess.run(
        [RACKBOOK, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    return proc.returncode, proc.stderr, time.monotonic() - t0


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "single-user", "-p", "gpus", "0", "--out", "o"],
        ["run", "decode-parity", "-p", "batch_sizes", "[8, 1e400]", "--out", "o"],
        ["check", "--model", "deepseek-v4.1-flash", "--gpu", "h200", "--gpus", "8",
         "--tok-s", "1e-320"],
        ["eplb", "x.json", "--ep-size", "8", "--nodes", "1000"],
    ],
    ids=["gpus-0", "list-1e400", "tok-s-denormal", "nodes-1000"],
)  # fmt: skip
def test_installed_command_refuses_before_any_work(argv, tmp_path) -> None:
    code, err, took = _installed(*argv, cwd=tmp_path)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_check_records_engine_and_speculation(run_cli) -> None:
    """``check --engine`` and ``--speculation`` are parts of the workload's basis, printed and
    in the JSON; without them both are unknown."""
    base = ["check", "--model", "deepseek-v4.1-flash", "--gpu", "h200", "--gpus", "8",
            "--tok-s", "3000", "--json"]  # fmt: skip
    code, out, err = run_cli(*base, "--engine", "sglang", "--speculation", "mtp")
    assert code == 0, err
    basis = json.loads(out.strip().splitlines()[-1])["published"]["basis"]
    assert "speculation real (mtp)" in basis and basis.endswith("; sglang")
    assert f"basis: {basis}" in out
    code, out, err = run_cli(*base, "--speculation", "none")
    basis = json.loads(out.strip().splitlines()[-1])["published"]["basis"]
    assert "speculation none" in basis and basis.endswith("; engine not stated")
    code, out, err = run_cli(*base)
    assert "speculation unknown" in json.loads(out.strip().splitlines()[-1])["published"]["basis"]
