"""Expert loads read and checked (:mod:`rackbook.core.expert_load`): nested lists, arrays, JSON
and Parquet files, ``EPLB step:`` log lines; every refusal names file, field and problem."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rackbook import limits
from rackbook.core.expert_load import (
    MAX_TOKENS,
    as_loads,
    parse_eplb_log,
    parse_eplb_log_lines,
    read_loads,
)
from rackbook.errors import InputError


def _refused(call, where, field: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        call()
    assert str(err.value) == f"{where}: {field}: {problem}"


# ------------------------------------------------------------------------ lists and arrays


def test_lists_become_a_layers_by_experts_array():
    got = as_loads([[1, 2.5], (3, 4)])
    assert got.dtype == np.float64 and got.tolist() == [[1.0, 2.5], [3.0, 4.0]]
    assert as_loads([1, 2]).tolist() == [[1.0, 2.0]]  # a flat list: one layer
    assert as_loads((0, 0)).tolist() == [[0.0, 0.0]]  # zero tokens are counts too
    ints = as_loads(np.array([3, 4], dtype=np.int32))
    assert ints.dtype == np.float64 and ints.tolist() == [[3.0, 4.0]]


@pytest.mark.parametrize(
    ("loads", "field", "problem"),
    [
        ("x", "w", "expected a non-empty list of per-layer lists"),
        ([], "w", "expected a non-empty list of per-layer lists"),
        ([[1, 2], 3], "w[1]", "expected a list of token counts"),
        ([[1, 2], [3]], "w[1]", "ragged rows: 1 experts, row 0 has 2"),
        ([[1, 2], [3, True]], "w[1][1]", "non-numeric value True"),
        ([["2", 1]], "w[0][0]", "non-numeric value '2'"),
        ([[1, None]], "w[0][1]", "non-numeric value None"),
    ],
)
def test_lists_refused_by_entry(loads, field, problem):
    _refused(lambda: as_loads(loads, "f.json", "w"), "f.json", field, problem)


@pytest.mark.parametrize(
    ("arr", "problem"),
    [
        (np.array([[True, False]]), "non-numeric entries (dtype bool)"),
        (np.array([["a"]]), "non-numeric entries (dtype <U1)"),
        (np.zeros((1, 1, 1)), "expected shape (layers, experts), got (1, 1, 1)"),
        (np.zeros((0, 3)), "expected shape (layers, experts), got (0, 3)"),
        (np.zeros((2, 0)), "expected shape (layers, experts), got (2, 0)"),
        (np.zeros(0), "expected shape (layers, experts), got (1, 0)"),
    ],
)
def test_arrays_refused_by_type_and_shape(arr, problem):
    _refused(lambda: as_loads(arr, "a.parquet", "tokens"), "a.parquet", "tokens", problem)


@pytest.mark.parametrize(
    ("loads", "field", "problem"),
    [
        ([[1.0, np.nan, -1.0]], "loads[0][1]", "not finite (nan)"),  # the first check first
        ([[0.0, 1.0], [np.inf, 0.0]], "loads[1][0]", "not finite (inf)"),
        ([[0.0, 2e15], [0.0, -0.5]], "loads[1][1]", "negative token count -0.5"),
        ([[0.0, 0.0], [2e15, 1e16]], "loads[1][0]", "implausibly large token count 2e+15"),
        (
            [[np.nextafter(MAX_TOKENS, np.inf)]],
            "loads[0][0]",
            "implausibly large token count 1e+15",
        ),
    ],
)
def test_values_checked_in_order_first_bad_cell_named(loads, field, problem):
    _refused(lambda: as_loads(np.array(loads)), "-", field, problem)


def test_the_largest_plausible_count_is_accepted():
    assert as_loads([[MAX_TOKENS, 0.0]]).tolist() == [[1e15, 0.0]]


# ------------------------------------------------------------------------ files


def _json(tmp_path: Path, obj, name: str = "l.json") -> Path:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def test_a_json_file_read_into_layers(tmp_path):
    p = _json(tmp_path, {"note": 1, "loads": [[1, 2, 3], [4, 5, 6]]})
    assert read_loads(p).tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


@pytest.mark.parametrize(
    ("obj", "field", "problem"),
    [
        ([[1, 2]], "loads", 'missing; expected {"loads": [[...], ...]}'),
        ({"load": [[1, 2]]}, "loads", 'missing; expected {"loads": [[...], ...]}'),
        ({"loads": [[1, 2], [3]]}, "loads[1]", "ragged rows: 1 experts, row 0 has 2"),
        ({"loads": [[1], [2], [3, 4]]}, "loads[2]", "ragged rows: 2 experts, row 0 has 1"),
        ({"loads": []}, "loads", "expected a non-empty list of per-layer lists"),
        ({"loads": 5}, "loads", "expected a non-empty list of per-layer lists"),
        ({"loads": [[]]}, "loads", "expected shape (layers, experts), got (1, 0)"),
        ({"loads": [1, 2]}, "loads[0]", "expected a list of per-layer lists"),
        ({"loads": [[1, 2], [3, -4]]}, "loads[1][1]", "negative token count -4"),
        ({"loads": [[1, 2], [3, "x"]]}, "loads[1][1]", "not a number"),  # by row and entry
    ],
)
def test_json_files_refused_by_file_field_and_problem(tmp_path, obj, field, problem):
    p = _json(tmp_path, obj)
    _refused(lambda: read_loads(p), p, field, problem)


def test_a_missing_file_is_named(tmp_path):
    p = tmp_path / "none.json"
    _refused(lambda: read_loads(p), p, "-", "file not found")
    _refused(
        lambda: read_loads(tmp_path), tmp_path, "-", "is a folder, expected a JSON or Parquet file"
    )


def test_json_layers_bounded(tmp_path, monkeypatch):
    monkeypatch.setitem(limits.BOUNDS, "layers", 2)
    assert read_loads(_json(tmp_path, {"loads": [[1], [2]]})).shape == (2, 1)
    p = _json(tmp_path, {"loads": [[1], [2], [3]]})
    problem = "more than 2 lists: must be at most 2 (rackbook's bound on layers)"
    _refused(lambda: read_loads(p), p, "loads", problem)


def _parquet(tmp_path: Path, df: pd.DataFrame, name: str = "l.parquet") -> Path:
    p = tmp_path / name
    df.to_parquet(p)
    return p


def test_a_parquet_table_read_in_any_row_order(tmp_path):
    df = pd.DataFrame({"layer": [1, 0, 1, 0], "expert": [1, 1, 0, 0], "tokens": [4, 2, 3, 1]})
    p = _parquet(tmp_path, df, "l.bin")  # found by its magic bytes, not its name
    assert read_loads(p).tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_trace_table_sums_its_windows(tmp_path):
    df = pd.DataFrame(
        {
            "window": [0, 0, 1, 1],
            "layer": [0, 0, 0, 0],
            "expert": [0, 1, 0, 1],
            "tokens": [1.0, 2.0, 10.0, 20.0],
        }
    )
    assert read_loads(_parquet(tmp_path, df)).tolist() == [[11.0, 22.0]]


def _table(**cols):
    base = {"layer": [0, 0, 1, 1], "expert": [0, 1, 0, 1], "tokens": [1.0, 2.0, 3.0, 4.0]}
    return pd.DataFrame({**base, **cols})


@pytest.mark.parametrize(
    ("df", "field", "problem"),
    [
        (
            _table().drop(columns="tokens"),
            "tokens",
            "missing column(s); need layer, expert, tokens",
        ),
        (
            _table().drop(columns=["layer", "tokens"]),
            "layer,tokens",
            "missing column(s); need layer, expert, tokens",
        ),
        (_table().iloc[:0], "tokens", "no rows"),
        (_table(layer=[0.0, 0.0, 1.0, 1.0]), "layer", "must be non-negative integers"),
        (_table(expert=[0, 1, 0, -1]), "expert", "must be non-negative integers"),
        (_table(tokens=[True, False, True, True]), "tokens", "non-numeric column (dtype bool)"),
        (_table(tokens=["1", "2", "3", "4"]), "tokens", "non-numeric column (dtype str)"),
        (
            _table(window=[0, 0, 0, 0], layer=[0, 0, 0, 0], expert=[0, 1, 1, 2]),
            "window,layer,expert",
            "duplicate (window, layer, expert) rows",
        ),
        (_table(expert=[0, 1, 0, 0]), "layer,expert", "duplicate (layer, expert) rows"),
        (
            _table().iloc[:3],
            "layer,expert",
            "ragged table: 3 rows, expected 2 layers x 2 experts",
        ),
        (_table(tokens=[1.0, 2.0, -3.0, 4.0]), "tokens[1][0]", "negative token count -3"),
    ],
)
def test_parquet_tables_refused_by_file_field_and_problem(tmp_path, df, field, problem):
    p = _parquet(tmp_path, df)
    _refused(lambda: read_loads(p), p, field, problem)


def test_parquet_layers_and_experts_bounded(tmp_path, monkeypatch):
    monkeypatch.setitem(limits.BOUNDS, "layers", 2)
    monkeypatch.setitem(limits.BOUNDS, "experts", 2)
    assert read_loads(_parquet(tmp_path, _table())).shape == (2, 2)  # at both bounds
    deep = _table(layer=[0, 0, 2, 2])
    p = _parquet(tmp_path, deep)
    _refused(
        lambda: read_loads(p), p, "layer", "3 is too large: at most 2 (rackbook's layers bound)"
    )
    wide = _table(expert=[0, 2, 0, 2])
    p = _parquet(tmp_path, wide)
    problem = "3 is too large: at most 2 (rackbook's experts bound)"
    _refused(lambda: read_loads(p), p, "expert", problem)


def test_a_file_that_is_not_parquet(tmp_path):
    p = tmp_path / "l.PARQUET"  # the name says Parquet
    p.write_text('{"loads": [[1]]}')
    with pytest.raises(InputError) as err:
        read_loads(p)
    assert (err.value.field, err.value.problem[:29]) == ("-", "not a readable Parquet file: ")
    magic = tmp_path / "l.json"
    magic.write_bytes(b"PAR1 and not Parquet")
    with pytest.raises(InputError, match=re.escape(f"{magic}: -: not a readable Parquet file")):
        read_loads(magic)


# ------------------------------------------------------------------------ EPLB log lines

STEP = "INFO [eplb_state.py:635] EPLB step: "


def test_log_lines_read_into_a_table():
    lines = [
        "INFO start\r\n",
        STEP + "7 for model org/m v2: avg_tokens=1.5, max_tokens=3, balancedness=0.5, tag=x\r\n",
        STEP + "8: avg_tokens=2, max_tokens=2, balancedness=1.0, steps until the next "
        "rearrangement: 12\n",
    ]
    df = parse_eplb_log_lines(lines)
    assert list(df.columns) == [
        "line",
        "step",
        "avg_tokens",
        "max_tokens",
        "balancedness",
        "model",
        "tag",
        "steps_until_rearrangement",
    ]
    assert df["line"].tolist() == [2, 3] and df["step"].tolist() == [7, 8]
    assert df["avg_tokens"].tolist() == [1.5, 2.0] and df["balancedness"].tolist() == [0.5, 1.0]
    assert df["model"].tolist()[0] == "org/m v2" and df["tag"].tolist()[0] == "x"
    assert df["steps_until_rearrangement"].tolist()[1] == 12


def test_no_step_lines_give_an_empty_table_with_the_columns():
    df = parse_eplb_log_lines(["INFO nothing", "EPLB stepping"])
    assert list(df.columns) == ["line", "step", "avg_tokens", "max_tokens", "balancedness"]
    assert len(df) == 0


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "EPLB step: 5: avg_tokens=1, max_tokens=2",
            "EPLB step line lacks balancedness",
        ),
        ("EPLB step: 5: avg_tokens=1, x=2", "EPLB step line lacks max_tokens, balancedness"),
        (
            "EPLB step: 5: avg_tokens=1, max_tokens=two, balancedness=1",
            "max_tokens='two' is not a number",
        ),
        (
            "EPLB step: 5: avg_tokens=1, max_tokens=2, balancedness=1, steps until the next "
            "rearrangement: soon",
            "steps until rearrangement is not an int",
        ),
        ("EPLB step: -5: avg_tokens=1", "malformed EPLB step line: 'EPLB step: -5: avg_tokens=1'"),
        (
            "  EPLB step: " + "x" * 200 + "  ",
            "malformed EPLB step line: " + repr(("EPLB step: " + "x" * 200)[:120]),  # cut
        ),
    ],
)
def test_log_lines_refused_by_line_and_problem(line, problem):
    call = lambda: parse_eplb_log_lines(["ok", line], source="server.log")  # noqa: E731
    _refused(call, "server.log", "line 2", problem)


def test_a_log_file_read_with_bad_bytes_replaced(tmp_path):
    p = tmp_path / "server.log"
    p.write_bytes(b"\xff\n" + (STEP + "3: avg_tokens=1, max_tokens=1, balancedness=1\n").encode())
    assert parse_eplb_log(p)["line"].tolist() == [2]
    missing = tmp_path / "none.log"
    _refused(
        lambda: parse_eplb_log(missing), missing, "-", "cannot read: No such file or directory"
    )
