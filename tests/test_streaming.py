"""Inputs bounded by how they are read (:mod:`rackbook.core.jsonstream`, CSV line by line):
each hostile shape, small but of the shape that once took GBs, is one ``error:`` line (exit 2)
or imports; and, property-based, no shape of any file kind rackbook reads is an internal
error. Memory and time of large files are measured in ``benchmarks/`` (README), not here."""

from __future__ import annotations

import gzip
import io
import json
import re
import string
from pathlib import Path

import numpy as np
import pytest
from conftest import small_result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackbook import limits
from rackbook.core import jsonreader, jsonstream, vllm_json
from rackbook.core.traces import read_trace
from rackbook.errors import InputError
from rackbook.paths import RESULTS

MLPERF_HEADER = (
    "Organization,Availability,Division,SystemName,Platform,Model,Scenario,Result,"
    "accelerator_model_name,total_accelerators,Location,framework,version,Units,"
    "weight_data_types\n"
)
MLPERF_ROW = (
    "Acme,available,closed,Rack,rack_1,deepseek-r1,Offline,12000.5,GB300,72,"
    "closed/Acme/results/rack_1,vllm,0.9,Tokens/s,fp4\n"
)


def _one_line(code: int, err: str, *parts: str) -> None:
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for p in parts:
        assert p in err, (p, err)


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def _import(run_cli, tmp_path, src: Path, fmt: str = "vllm-bench", *extra: str):
    return run_cli("import", fmt, str(src), "-o", str(tmp_path / "out"), *extra)


# ------------------------------------------------------------------------ hostile shapes


def test_a_huge_integer_in_a_vllm_json_is_one_line(tmp_path, run_cli):
    text = json.dumps(small_result()).replace('"ttfts": [0.1', '"ttfts": [' + "9" * 5000, 1)
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", text))
    _one_line(code, err, "r.json: ttfts[0]: ", "a number of more than 100 characters")
    assert not (tmp_path / "out").exists()


def test_a_huge_integer_anywhere_is_one_line(tmp_path, run_cli):
    text = json.dumps({**small_result(), "num_prompts": 0}).replace(
        '"num_prompts": 0', '"num_prompts": -' + "1" * 4400
    )
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", text))
    _one_line(code, err, "r.json: num_prompts: ", "more than 100 characters")


def test_a_very_long_string_is_one_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 0.01)
    d = small_result(errors=["", "x" * 20_000, "boom"])
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: errors[1]: ", "a string longer than 0.01 MB")


def test_a_long_generated_text_is_read_and_dropped(tmp_path, run_cli):
    d = small_result(generated_texts=['a "quoted" ], [ text\n' * 5000, "", "x"])
    code, out, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    assert code == 0, err
    assert "3 requests, 4 gaps" in out


@pytest.mark.parametrize("depth", [65, 200_000])
def test_deep_nesting_is_one_line(tmp_path, run_cli, depth):
    text = json.dumps(small_result(note=None)).replace("null", "[" * depth + "]" * depth)
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", text))
    _one_line(code, err, "r.json: note", "nested deeper than 64 levels")


def test_nesting_within_the_limit_reads(tmp_path):
    text = json.dumps({"note": json.loads("[" * 60 + "]" * 60), **small_result()})
    got = vllm_json.load_detailed(_write(tmp_path, "r.json", text))
    assert got["note"] == json.loads("[" * 60 + "]" * 60)


def test_a_per_request_list_longer_than_input_lens_is_refused(tmp_path, run_cli):
    """The 60M-float shape: a per-request list far longer than the requests."""
    d = small_result(ttfts=[0.1] * 100_000)
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: ttfts: has 100000 entries, expected 3 (one per request)")


def test_one_request_with_too_many_gaps_is_refused(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(limits.BOUNDS, "context", 1_000)
    d = small_result(itls=[[0.001] * 5_000, [0.4], []])
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: itls[0]: more than 1,000 entries")


def test_too_many_gaps_in_all_are_refused(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(limits.BOUNDS, "gaps", 100)
    d = small_result(itls=[[0.001] * 60, [0.4] * 60, []])
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: itls: more than 100 numbers in all")


def test_too_many_requests_before_input_lens_are_refused(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(limits.BOUNDS, "requests", 10)
    rest = small_result()
    del rest["ttfts"]
    d = {"ttfts": [0.1] * 50, **rest}  # before input_lens: only the bound is known
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: ttfts: more than 10 entries", "bound on requests")


def test_an_object_with_too_many_keys_is_refused(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(jsonreader, "MAX_KEYS", 100)
    d = small_result(extra={str(i): i for i in range(500)})
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: extra: an object with more than 100 keys")


def test_many_empty_objects_in_inferencex_are_refused_within_the_budget(
    tmp_path, run_cli, monkeypatch
):
    """The 180 MB InferenceX JSON of empty objects: its values pass the budget, one line."""
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 1.0)
    src = _write(tmp_path, "x.json", b"[" + b"{}," * 200_000 + b"{}]")
    code, _, err = _import(run_cli, tmp_path, src, "inferencex", "--source-url", "https://x.org")
    _one_line(code, err, "x.json: -: ", "values need more than 1 MB of memory")


def test_many_empty_objects_within_the_budget_are_named_as_rows(tmp_path, run_cli):
    src = _write(tmp_path, "x.json", b"[" + b"{}," * 20_000 + b"{}]")
    code, _, err = _import(run_cli, tmp_path, src, "inferencex", "--source-url", "https://x.org")
    _one_line(code, err, "x.json: rows[0].hardware: missing")


def test_a_huge_headline_json_for_list_is_one_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 1.0)
    reading = {"claim_id": "c", "reading": "physics", "verdict": "possible", "reason": "r"}
    doc = {"result": RESULTS[0], "headlines": [], "readings": [reading] * 20_000}
    _write(tmp_path, f"{RESULTS[0]}.json", json.dumps(doc))
    code, _, err = run_cli("list", "--out", str(tmp_path))
    _one_line(code, err, f"{RESULTS[0]}.json: -: ", "values need more than 1 MB")


def test_eplb_cells_past_the_bound_are_refused_as_read(tmp_path, run_cli, monkeypatch):
    """The 30M-cell EPLB JSON: cells counted as they are read."""
    monkeypatch.setitem(limits.BOUNDS, "expert_cells", 1_000)
    src = _write(tmp_path, "l.json", json.dumps({"loads": [[1] * 64] * 64}))
    code, _, err = run_cli("eplb", str(src), "--ep-size", "8")
    _one_line(code, err, "l.json: loads: more than 1,000 numbers in all")


@pytest.mark.parametrize(
    ("piece", "text", "field"),
    [
        (2, '{"loads": [[0,[1],[2],3]]}', "loads[0][1]"),
        (6, '{"loads": [[0, 1, [2], [3], 4, 5]]}', "loads[0][2]"),
        (4, '{"loads": [[0.0, [0.0], 1.0, 2.0]]}', "loads[0][1]"),
    ],
)
def test_a_list_among_the_numbers_is_one_line(tmp_path, monkeypatch, piece, text, field):
    """Found by the shape property test after the merge: a run of numbers whose fast parse
    (cut at a comma past the piece) held a nested list made numpy raise (an internal error)."""
    from rackbook.core.expert_load import read_loads

    monkeypatch.setattr(jsonstream, "PIECE", piece)
    monkeypatch.setattr(jsonstream, "CUT_SEARCH", 8)
    with pytest.raises(InputError, match=re.escape(f"l.json: {field}: not a number")):
        read_loads(_write(tmp_path, "l.json", text))


def test_eplb_loads_read_into_an_array(tmp_path):
    from rackbook.core.expert_load import read_loads

    loads = [[float(i * 10 + j) for j in range(8)] for i in range(5)]
    src = _write(tmp_path, "l.json", json.dumps({"loads": loads, "note": "x"}))
    assert read_loads(src).tolist() == loads


def test_a_long_csv_line_is_one_line(tmp_path, run_cli):
    """The 200 MB CSV field: a line past 1 MB is refused as it is read."""
    row = MLPERF_ROW.replace("Rack,", "R" * 1_100_000 + ",", 1)
    src = _write(tmp_path, "s.csv", MLPERF_HEADER + row)
    code, _, err = _import(run_cli, tmp_path, src, "mlperf", "--source-url", "https://x.org")
    _one_line(code, err, "s.csv: line 2: longer than 1 MB")


def test_a_long_quoted_csv_field_is_one_line(tmp_path, run_cli):
    row = MLPERF_ROW.replace("Rack,", '"' + "R\n" * 100_000 + '",', 1)
    src = _write(tmp_path, "s.csv", MLPERF_HEADER + row)
    code, _, err = _import(run_cli, tmp_path, src, "mlperf", "--source-url", "https://x.org")
    _one_line(code, err, "s.csv: line ", "field larger than field limit")


def test_too_many_csv_lines_are_refused(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(limits.BOUNDS, "csv_lines", 100)
    src = _write(tmp_path, "s.csv", MLPERF_HEADER + MLPERF_ROW * 200)
    code, _, err = _import(run_cli, tmp_path, src, "mlperf", "--source-url", "https://x.org")
    _one_line(code, err, "s.csv: rows: more than 100 lines")


def test_a_csv_read_line_by_line_imports(tmp_path, run_cli):
    rows = "".join(MLPERF_ROW.replace("rack_1", f"rack_{i}") for i in range(3))
    src = _write(tmp_path, "s.csv", "\ufeff" + MLPERF_HEADER + rows)
    code, out, err = _import(run_cli, tmp_path, src, "mlperf", "--source-url", "https://x.org")
    assert code == 0, err
    assert "3 published points" in out


def test_a_file_over_256_mb_is_not_refused_for_its_size(tmp_path, run_cli):
    """The 283 MB vLLM result: streamed files are limited by shape, not by the old 256 MB."""
    src = tmp_path / "big.json"
    with open(src, "wb") as fh:
        fh.truncate(300_000_000)  # sparse: NUL bytes
    code, _, err = _import(run_cli, tmp_path, src)
    _one_line(code, err, "big.json: -: not text (binary file?)")
    code, _, err = _import(run_cli, tmp_path, src, "vllm-bench", "--max-input-mb", "100")
    _one_line(code, err, "over the input size limit 100 MB")


def test_gzip_is_read_as_a_stream(tmp_path, run_cli):
    src = tmp_path / "r.json.gz"
    src.write_bytes(gzip.compress(json.dumps(small_result()).encode()))
    code, out, err = _import(run_cli, tmp_path, src)
    assert code == 0, err
    assert read_trace(tmp_path / "out").itl["itl_s"].tolist() == [0.1, 0.2, 0.3, 0.4]


def test_a_gzip_file_inflating_past_the_limit_is_refused(tmp_path, run_cli):
    src = tmp_path / "r.json.gz"
    src.write_bytes(gzip.compress(b"[" + b"1," * 3_000_000 + b"1]"))
    code, _, err = _import(run_cli, tmp_path, src, "vllm-bench", "--max-input-mb", "1")
    _one_line(code, err, "r.json.gz: -: decompresses to over 1 MB")


def test_numbers_are_not_strings_or_booleans(tmp_path, run_cli):
    d = small_result(input_lens=[10, True, 30])
    code, _, err = _import(run_cli, tmp_path, _write(tmp_path, "r.json", json.dumps(d)))
    _one_line(code, err, "r.json: input_lens[1]: not a number")


# ------------------------------------------------------------------------ property test

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
_NUMS = st.lists(st.one_of(st.floats(0, 5), st.integers(0, 50)), min_size=0, max_size=6)


@st.composite
def _vllm(draw) -> bytes:
    d = dict(small_result())
    for key in draw(st.lists(st.sampled_from([*d, "generated_texts", "x"]), max_size=3)):
        d[key] = draw(st.one_of(_JSON, _NUMS, st.lists(_NUMS, max_size=4), st.just([[0.1]] * 3)))
    return json.dumps(d).encode()


@st.composite
def _inferencex(draw) -> bytes:
    row = json.loads(Path("tests/fixtures/published/inferencex-benchmarks.json").read_text())[0]
    rows = [dict(row) for _ in range(draw(st.integers(0, 3)))]
    for r in rows:
        for key in draw(st.lists(st.sampled_from(sorted(r)), max_size=2)):
            r[key] = draw(_JSON)
    return json.dumps(draw(st.one_of(st.just(rows), st.just({"rows": rows}), _JSON))).encode()


@st.composite
def _mlperf(draw) -> bytes:
    cells = st.text(alphabet=string.printable, max_size=6)
    rows = [
        ",".join(draw(st.lists(cells, min_size=10, max_size=16)))
        for _ in range(draw(st.integers(0, 3)))
    ]
    return (MLPERF_HEADER + MLPERF_ROW + "\n".join(rows)).encode()


@st.composite
def _eplb(draw) -> bytes:
    loads = draw(st.one_of(st.lists(_NUMS, max_size=4), _JSON, st.just([[1, 2], [3, 4]])))
    return json.dumps({"loads": loads}).encode()


def _mutate(data: bytes, draw) -> bytes:
    how = draw(st.sampled_from(["keep", "cut", "insert", "flip"]))
    i = draw(st.integers(0, max(len(data) - 1, 0)))
    if how == "cut":
        return data[:i]
    if how == "insert":
        return (
            data[:i]
            + draw(st.sampled_from([b"[", b"{", b'"', b",", b"\\", b"\x00", b"\xff", b"NaN"]))
            + data[i:]
        )
    if how == "flip" and data:
        return data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :]
    return data


KINDS = {
    "vllm-bench": (_vllm, "r.json", ()),
    "inferencex": (_inferencex, "x.json", ("--source-url", "https://x.org")),
    "mlperf": (_mlperf, "s.csv", ("--source-url", "https://x.org")),
    "eplb": (_eplb, "l.json", ()),
    "headline": (lambda: _JSON.map(lambda v: json.dumps(v).encode()), f"{RESULTS[0]}.json", ()),
}


@pytest.mark.parametrize("kind", KINDS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_shape_is_a_result_or_one_line(tmp_path_factory, run_cli, monkeypatch, kind, data):
    monkeypatch.setattr(jsonstream, "PIECE", 8)  # cut small files into many pieces
    monkeypatch.setattr(jsonstream, "CUT_SEARCH", 8)
    monkeypatch.setattr(jsonreader, "CHUNK", 5)
    make, name, extra = KINDS[kind]
    content = _mutate(data.draw(make()), data.draw)
    work = tmp_path_factory.mktemp(kind)
    src = work / name
    src.write_bytes(content)
    if kind == "eplb":
        code, _, err = run_cli("eplb", str(src), "--ep-size", "2", "--redundant", "0")
    elif kind == "headline":
        code, _, err = run_cli("list", "--out", str(work))
    else:
        code, _, err = run_cli("import", kind, str(src), "-o", str(work / "out"), *extra)
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert not (work / "out").exists()


def test_load_json_matches_python_json_on_valid_files(tmp_path, monkeypatch):
    """Plain values read in pieces are exactly what Python's json reads."""
    monkeypatch.setattr(jsonstream, "PIECE", 8)
    monkeypatch.setattr(jsonstream, "CUT_SEARCH", 8)
    monkeypatch.setattr(jsonreader, "CHUNK", 3)
    docs = [
        [{"a": [1, 2, {"b": "c,},{"}]}, {"a": []}] * 7,
        {"rows": [[1, "x"], [2, "y]"], []] * 5, "n": None},
        ['a\\"b', "é", "\u2028", 1e308, -0.0, 12345678901234567890] * 4,
    ]
    for i, doc in enumerate(docs):
        p = _write(tmp_path, f"{i}.json", json.dumps(doc))
        assert jsonstream.load(p) == json.loads(p.read_text())


def test_errors_are_input_errors(tmp_path):
    with pytest.raises(InputError) as e:
        jsonstream.load(_write(tmp_path, "a.json", '{"a": [1, 2,, 3]}'))
    assert (e.value.field, e.value.problem) == ("line 1", "not valid JSON: Expecting value")


def test_no_parse_holds_more_than_a_piece(tmp_path, monkeypatch):
    """Every C-level parse is of one piece (so SIGINT/SIGTERM, turned into exceptions by the
    CLI, stop a long read between pieces): a 12 MB result is parsed in pieces of at most
    PIECE + CUT_SEARCH bytes, and reads as the whole file does."""
    import numpy as np
    import orjson

    sizes: list[int] = []
    real = orjson.loads

    def loads(data):
        sizes.append(len(data))
        return real(data)

    rng = np.random.default_rng(1)
    n = 20_000
    d = small_result(
        input_lens=[10] * n,
        output_lens=[30] * n,
        ttfts=rng.uniform(0.1, 0.2, n).tolist(),
        itls=rng.uniform(0.01, 0.02, (n, 29)).tolist(),
        latencies=[1.0] * n,
        start_times=np.arange(n, dtype=float).tolist(),
        errors=[""] * n,
        completed=n,
        generated_texts=['some text, [quoted] "here"\n' * 3] * n,
    )
    src = _write(tmp_path, "r.json", json.dumps(d))
    assert src.stat().st_size > 12e6
    monkeypatch.setattr(jsonstream.orjson, "loads", loads)
    got = vllm_json.load_detailed(src)
    assert max(sizes) <= jsonstream.PIECE + jsonstream.CUT_SEARCH + 2
    assert len(sizes) > 6
    assert got["itls"].values.tolist() == [v for row in d["itls"] for v in row]
    assert got["ttfts"].tolist() == d["ttfts"]


# ------------------------------------------------------------------------ limits at their bounds


def _load(tmp_path: Path, data: str | bytes, name: str = "x.json", **kw):
    return jsonstream.load(_write(tmp_path, name, data), **kw)


def _refused(tmp_path: Path, data: str | bytes, field: str, problem: str, name: str = "x.json"):
    with pytest.raises(InputError) as err:
        _load(tmp_path, data, name)
    assert str(err.value) == f"{tmp_path / name}: {field}: {problem}"


def test_integers_at_the_number_limit_and_one_past(tmp_path):
    assert _load(tmp_path, "[" + "1" * 100 + "]") == [int("1" * 100)]
    assert _load(tmp_path, "-" + "9" * 99) == -int("9" * 99)  # the sign counts
    for text in ("[" + "1" * 101 + "]", "-" + "9" * 100):
        _refused(tmp_path, text, "-", "a number of more than 100 characters")


def test_nesting_at_the_depth_limit_and_one_past(tmp_path):
    assert _load(tmp_path, "[" * 64 + "]" * 64) is not None
    deep = "[0]" * 64  # the path of the list nested too deep
    _refused(tmp_path, "[" * 65 + "]" * 65, deep, "nested deeper than 64 levels (refused)")
    # 64 levels counted through objects too: {"a": [{"b": [...]}]}
    text = '{"a": [{"b": ' + "[" * 61 + "]" * 61 + "}]}"
    assert _load(tmp_path, text) == json.loads(text)
    text = '{"a": [{"b": ' + "[" * 62 + "]" * 62 + "}]}"
    _refused(tmp_path, text, "a[0].b" + "[0]" * 61, "nested deeper than 64 levels (refused)")


def test_strings_at_the_length_limit_and_one_past(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 1e-5)  # 10 characters
    assert _load(tmp_path, '["' + "é" * 10 + '"]') == ["é" * 10]  # characters, not bytes
    problem = "a string longer than 1e-05 MB (refused)"
    _refused(tmp_path, '["' + "x" * 11 + '"]', "[0]", problem)
    _refused(tmp_path, '"' + "x" * 11 + '"', "-", problem)
    _refused(tmp_path, '{"a": [1, {"b": "' + "x" * 11 + '"}]}', "a[1].b", problem)


def test_objects_at_the_key_limit_and_one_past(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonreader, "MAX_KEYS", 3)
    assert _load(tmp_path, '{"a": 1, "b": 2, "c": {"d": 3}}') == {"a": 1, "b": 2, "c": {"d": 3}}
    problem = "an object with more than 3 keys (refused)"
    _refused(tmp_path, '{"a": 1, "b": 2, "c": 3, "d": 4}', "-", problem)
    _refused(tmp_path, '[{"o": {"a": 1, "b": 2, "c": 3, "d": 4}}]', "[0].o", problem)


def test_the_estimate_of_the_values_memory():
    # bytes + 40 per item (commas + colons + 1) + 64 per list or object
    assert jsonreader._estimate(b"[1,2,3]") == 7 + 40 * 3 + 64
    assert jsonreader._estimate(b'{"a": [1, 2]}') == 13 + 40 * 3 + 64 * 2
    assert jsonreader._estimate(b"7") == 1 + 40


def test_values_at_the_memory_budget_and_one_byte_past(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 191e-6)  # [1,2,3]: 191 bytes estimated
    assert _load(tmp_path, "[1,2,3]") == [1, 2, 3]
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 190e-6)
    problem = "the file's values need more than 0.00019 MB of memory (refused)"
    _refused(tmp_path, "[1,2,3]", "-", problem)


def test_values_charged_to_the_budget_one_after_another(tmp_path, monkeypatch):
    """A typed file's plain values are charged as read: the key "g" (3 bytes + 40), its skipped
    value 7 nothing, the key "a" (43), its 602-byte string (+ 40), the key "b" (43), then the
    window holding the last string and the closing brace (603 + 40) must fit what is left:
    1,414 bytes in all."""
    text = '{"g":7,"a":"' + "x" * 600 + '","b":"' + "y" * 600 + '"}'
    top = {"g": jsonstream.SKIP, "x": jsonstream.NUMBERS}
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 1414e-6)
    assert _load(tmp_path, text, top=top) == {"a": "x" * 600, "b": "y" * 600}
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 1413e-6)
    with pytest.raises(InputError) as err:
        _load(tmp_path, text, top=top)
    problem = "the file's values need more than 0.001413 MB of memory (refused)"
    assert (err.value.field, err.value.problem) == ("b", problem)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 4 << 20])
def test_errors_name_the_line_however_the_file_is_read(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonreader, "CHUNK", chunk)
    _refused(
        tmp_path, '{\n"a": 1,\n"b": [1,\n2,,\n3]}', "line 4", "not valid JSON: Expecting value"
    )
    _refused(tmp_path, "\n\n[1 2]", "line 3", "not valid JSON: Expecting ',' delimiter")
    _refused(tmp_path, '{\n"a": 1,\n"b": [1,\n2,\n3]', "end of file", "truncated JSON")
    problem = "not UTF-8 text: byte 0xff (save the file as UTF-8)"
    _refused(tmp_path, '[1,\n"\xff"]'.encode("latin-1"), "line 2", problem)
    assert _load(tmp_path, '{\n"a": 1,\n"b": [1,\n2]}') == {"a": 1, "b": [1, 2]}


def test_a_gzip_stream_at_its_cap_and_one_byte_past():
    data = b"[1, 2]"
    r = jsonreader.Reader(io.BytesIO(data), Path("x.json.gz"), len(data))
    assert r.want(100) == len(data) and r.eof
    r = jsonreader.Reader(io.BytesIO(data), Path("x.json.gz"), len(data) - 1)
    with pytest.raises(InputError) as err:
        r.want(1)
    limit = "the limit for a gzip file; raise it with --max-input-mb"
    assert str(err.value) == f"x.json.gz: -: decompresses to over 5e-06 MB ({limit})"


def test_a_file_that_is_empty_binary_or_not_gzip(tmp_path):
    assert _load(tmp_path, "\ufeff[1]") == [1]  # a byte-order mark
    _refused(tmp_path, "", "-", "file is empty")
    _refused(tmp_path, " \n\t\r ", "-", "file is empty")
    _refused(tmp_path, "[1, 2]\0", "-", "not text (binary file?)")
    _refused(tmp_path, "[1] 2", "line 1", "not valid JSON: Extra data")
    _refused(tmp_path, b"\x1f\x8b not gzip", "-", "not a valid gzip file", "x.json.gz")
    assert _load(tmp_path, gzip.compress(b'{"a": [1]}'), "x.json.gz") == {"a": [1]}


def test_values_cut_at_every_place_by_the_parse_window(tmp_path):
    """A plain value is parsed from a window of 512 bytes, then 1,024, ...: wherever its end
    falls (in a string, after a comma, inside a number), it reads as Python's json reads it."""
    shapes = (
        '{"k": "%s", "b": [1, 2.5e3, {"c": null}], "d": 1.0e5, "e": "tail"}',
        '["%s", 1.0e5, 12345, true, false, null, "t"]',
    )
    for n in range(470, 540):
        for shape in shapes:
            text = shape % ("x" * n)
            assert _load(tmp_path, text) == json.loads(text), (n, shape)
    # a number longer than the first window: 1.000...0e5, not the 1.0 of its first 512 bytes
    assert _load(tmp_path, "[1." + "0" * 600 + "e5]") == [100000.0]


def test_errors_past_the_first_window_name_their_line(tmp_path):
    for n in range(160, 180):  # "1,\n" is 3 bytes: the error near byte 512 of the window
        _refused(
            tmp_path, "[" + "1,\n" * n + ",]", f"line {n + 1}", "not valid JSON: Expecting value"
        )
        _refused(tmp_path, "[" + "1,\n" * n + '"a', "end of file", "truncated JSON")


def test_strings_and_budget_at_a_megabyte(tmp_path, monkeypatch):
    """The limits in MB are 10^6: a string of 1,000,000 characters passes 1 MB, one more does
    not; a value estimated at 1,000,000 bytes passes a 1 MB budget, 1,000,001 does not."""
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 1.0)
    assert len(_load(tmp_path, '"' + "x" * 1_000_000 + '"')) == 1_000_000
    problem = "a string longer than 1 MB (refused)"
    _refused(tmp_path, '"' + "x" * 1_000_001 + '"', "-", problem)
    _refused(tmp_path, '[1, "' + "x" * 1_000_001 + '"]', "[1]", problem)
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 16.0)
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 1.0)
    text = '"' + "x" * (1_000_000 - 42) + '"'  # its bytes + 40
    assert len(_load(tmp_path, text)) == 1_000_000 - 42
    problem = "the file's values need more than 1 MB of memory (refused)"
    _refused(tmp_path, '"' + "x" * (1_000_001 - 42) + '"', "-", problem)


def test_a_string_at_the_top_at_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 1e-5)
    assert _load(tmp_path, '"' + "x" * 10 + '"') == "x" * 10


def test_a_bare_number_longer_than_the_first_window(tmp_path, monkeypatch):
    assert _load(tmp_path, "1." + "0" * 600 + "e5") == 100000.0
    monkeypatch.setattr(jsonreader, "CHUNK", 1)  # the window filled exactly, not at the end
    assert _load(tmp_path, "[1." + "0" * 600 + "e5]") == [100000.0]
    assert _load(tmp_path, "1." + "0" * 600 + "e5") == 100000.0


def test_reads_are_of_at_most_a_chunk(monkeypatch):
    sizes: list[int] = []

    class Recorded(io.BytesIO):
        def read(self, n=-1):
            sizes.append(n)
            return super().read(n)

    monkeypatch.setattr(jsonreader, "CHUNK", 4)
    r = jsonreader.Reader(Recorded(b"[1, 2, 3, 4]"), Path("x.json"), None)
    assert r.want(10) == 12 and r.buf == b"[1, 2, 3, 4]" and not r.eof
    assert sizes == [4, 4, 4]


def test_only_the_first_64_kib_are_searched_for_a_nul_byte(tmp_path):
    _refused(tmp_path, b'["' + b"x" * 65533 + b'\0"]', "-", "not text (binary file?)")
    with pytest.raises(InputError) as err:  # byte 65,536: a JSON error
        _load(tmp_path, b'["' + b"x" * 65534 + b'\0"]')
    assert err.value.field == "line 1"
    assert err.value.problem.startswith("not valid JSON: Invalid control character")
    # past the first 64 KiB a NUL byte is an unexpected character like any other
    _refused(tmp_path, b" " * 65536 + b"\0", "line 1", "not valid JSON: Expecting value")
    _refused(tmp_path, b'["' + b"x" * 70000 + b'"]\0', "line 1", "not valid JSON: Extra data")


def test_utf8_errors_named_by_line_and_byte(tmp_path):
    problem = "not UTF-8 text: byte 0x{:02x} (save the file as UTF-8)"
    _refused(tmp_path, b'[1,\n2,\n"\xff"]', "line 3", problem.format(0xFF))
    _refused(tmp_path, b'["a\xc3', "line 1", problem.format(0xC3))  # cut in a character


def test_a_folder_is_not_a_json_file(tmp_path):
    with pytest.raises(InputError) as err:
        jsonstream.load(tmp_path)
    assert str(err.value) == f"{tmp_path}: -: is a folder, expected a JSON file"


def test_lines_counted_across_refills_of_a_typed_file(tmp_path, monkeypatch):
    """A file over 64 KiB read 1,000 bytes at a time: the lines of the values already read
    are counted as the buffer moves on."""
    monkeypatch.setattr(jsonreader, "CHUNK", 1000)
    text = "{\n" + "".join(f'"k{i}": {i},\n' for i in range(8000)) + '"bad": [1,,2]}'
    with pytest.raises(InputError) as err:
        _load(tmp_path, text, top={"x": jsonstream.NUMBERS})
    assert (err.value.field, err.value.problem) == ("line 8002", "not valid JSON: Expecting value")


def test_a_number_cut_by_a_full_window_past_64_kib(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonreader, "CHUNK", 4096)  # the window of 65,536 bytes filled exactly
    assert _load(tmp_path, "1." + "0" * 70000 + "e5") == 100000.0


def test_a_long_key_and_a_deep_list_in_a_typed_file(tmp_path, monkeypatch):
    top = {"a": jsonstream.NUMBERS}
    deep = "[" * 100_000 + "]" * 100_000  # past the parser's recursion: read one by one
    with pytest.raises(InputError) as err:
        _load(tmp_path, '{"a": [1, ' + deep + "]}", top=top, counts=jsonstream.Counts(3, 2, 4))
    assert (err.value.field, err.value.problem) == (
        "a[1]",
        "nested deeper than 64 levels (refused)",
    )
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 1e-5)
    assert _load(tmp_path, '{"' + "k" * 10 + '": 1}', top=top) == {"k" * 10: 1}
    with pytest.raises(InputError) as err:
        _load(tmp_path, '{"' + "k" * 11 + '": 1}', top=top)
    assert (err.value.field, err.value.problem) == ("-", "a string longer than 1e-05 MB (refused)")


def _recorded_pieces(tmp_path, monkeypatch, doc: dict, top: dict) -> tuple[dict, list, int, int]:
    """``doc`` loaded with ``top`` at PIECE 64, CUT_SEARCH 32 and reads of 16 bytes: what it
    reads, every ``(kind, piece)`` parsed, how many list elements were read one by one, and
    how many pieces Python's json parsed (orjson reads all but NaN and Infinity)."""
    monkeypatch.setattr(jsonstream, "PIECE", 64)
    monkeypatch.setattr(jsonstream, "CUT_SEARCH", 32)
    monkeypatch.setattr(jsonreader, "CHUNK", 16)
    pieces: list[tuple[str, bytes]] = []
    one_by_one, python_json = [0], [0]
    real_parse, real_value = jsonstream._parse, jsonstream._Lists.value
    real_decoder = jsonstream.DECODER

    class Decoder:
        def decode(self, text):
            python_json[0] += 1
            return real_decoder.decode(text)

    def parse(text, kind):
        out = real_parse(text, kind)
        if out is not None:
            pieces.append((kind, bytes(text)))
        return out

    def value(self, path, depth, *args):
        one_by_one[0] += depth == 2  # an element of a typed list (a key is read at depth 1)
        return real_value(self, path, depth, *args)

    monkeypatch.setattr(jsonstream, "DECODER", Decoder())
    monkeypatch.setattr(jsonstream, "_parse", parse)
    monkeypatch.setattr(jsonstream._Lists, "value", value)
    p = _write(tmp_path, "pieces.json", json.dumps(doc))
    counts = jsonstream.Counts(10_000, 10_000, 100_000)
    got = jsonstream.load(p, top=top, counts=counts)
    return got, pieces, one_by_one[0], python_json[0]


def test_typed_lists_are_parsed_in_pieces_of_the_documented_size(tmp_path, monkeypatch):
    """Numbers, lists of numbers and skipped strings, each list about 1 KB: every piece but a
    list's last is at least PIECE (64) and at most PIECE + CUT_SEARCH (96) bytes, the pieces of a
    list joined with the separators they were cut at are the list's text, and no element is
    read one by one (the fast path, not the per-element fallback, reads a well-formed list)."""
    doc = {
        "n": [1.25 + i for i in range(150)],
        "r": [[0.5, 1.5, float(i)] for i in range(60)],
        "s": [f"text, [{i}] here" for i in range(60)],
        "k": 7,
    }
    top = {"n": jsonstream.NUMBERS, "r": jsonstream.RAGGED, "s": jsonstream.SKIP}
    got, pieces, one_by_one, python_json = _recorded_pieces(tmp_path, monkeypatch, doc, top)
    assert got["n"].tolist() == doc["n"] and got["k"] == 7 and "s" not in got
    assert python_json == 0
    assert got["r"].lens.tolist() == [3] * 60
    assert got["r"].values.tolist() == [v for row in doc["r"] for v in row]
    assert one_by_one == 0
    for kind, key in ((jsonstream.NUMBERS, "n"), (jsonstream.RAGGED, "r"), (jsonstream.SKIP, "s")):
        texts = [t for k, t in pieces if k == kind]
        assert len(texts) > 5, kind
        assert all(64 <= len(t) <= 96 for t in texts[:-1]), (kind, [len(t) for t in texts])
        assert len(texts[-1]) <= 96
        # each piece ends at the first separator at or past PIECE bytes, never a later one
        sep = {"n": b",", "r": b", [", "s": b'", "'}[key]
        assert not any(sep in t[64:] for t in texts), kind
        whole = json.dumps(doc[key])[1:-1].encode()
        assert b", ".join(texts) == whole, kind


def test_a_row_without_a_cut_is_read_as_numbers_in_its_own_pieces(tmp_path, monkeypatch):
    """A ragged list whose first row (200 numbers, about 1.2 KB) has no cut within
    PIECE + CUT_SEARCH bytes: that row is read as numbers, in its own pieces (the last one cut
    past the row's end fails and is retried to the row's end); the rows after it in pieces."""
    doc = {"r": [[float(i) for i in range(200)], *([[0.5, 1.5]] * 80)]}
    got, pieces, one_by_one, _ = _recorded_pieces(tmp_path, monkeypatch, doc, {"r": "ragged"})
    assert got["r"].lens.tolist() == [200] + [2] * 80
    assert got["r"].values.tolist() == [v for row in doc["r"] for v in row]
    assert one_by_one == 0  # the long row's numbers were read in pieces, not one by one
    ragged = [t for k, t in pieces if k == jsonstream.RAGGED]
    numbers = [t for k, t in pieces if k == jsonstream.NUMBERS]
    assert b", ".join(numbers) == json.dumps(doc["r"][0])[1:-1].encode()
    assert b", ".join(ragged) == json.dumps(doc["r"][1:])[1:-1].encode()
    assert all(64 <= len(t) <= 96 for t in ragged[:-1])


def test_after_a_failed_piece_the_next_piece_bytes_are_read_one_by_one(tmp_path, monkeypatch):
    """20 short rows, one of 200 numbers, 40 short rows: the ragged piece tried at the 19th row
    (byte 223) finds no cut in the long row and fails; the rows within the next PIECE (64)
    bytes are read one by one (the 19th, the 20th, then the long row, as numbers), and the
    ragged fast path is tried again only at the first row past the long one (byte 1,539), where
    it reads the rest in pieces."""
    calls: list[tuple[str, int, bool]] = []
    real = jsonstream._Lists.piece

    def piece(self, kind):
        at = self.pos
        out = real(self, kind)
        calls.append((kind, at, out is None))
        return out

    monkeypatch.setattr(jsonstream._Lists, "piece", piece)
    doc = {"r": [*([[0.5, 1.5]] * 20), [float(i) for i in range(200)], *([[0.5, 1.5]] * 40)]}
    got, _, one_by_one, _ = _recorded_pieces(tmp_path, monkeypatch, doc, {"r": "ragged"})
    assert got["r"].lens.tolist() == [2] * 20 + [200] + [2] * 40 and one_by_one == 0
    ragged = [(at, failed) for kind, at, failed in calls if kind == jsonstream.RAGGED]
    assert ragged == [
        (7, False), (79, False), (151, False), (223, True),
        (1539, False), (1611, False), (1683, False), (1755, False), (1827, False),
        (1899, False), (1971, False),
    ]  # fmt: skip
    numbers = [at for kind, at, _ in calls if kind == jsonstream.NUMBERS]
    # the 19th and 20th rows one by one, then the long row in 19 pieces of about 64 bytes
    assert numbers[:3] == [224, 236, 248] and len(numbers) == 21


def test_nan_and_infinity_are_read_in_pieces_by_pythons_json(tmp_path, monkeypatch):
    """orjson refuses NaN and Infinity: such a piece is parsed by Python's json, still as one
    piece (never element by element), and reads what Python's json reads."""
    doc = {"n": [1.5, float("nan"), float("inf"), -float("inf")] * 40}
    got, pieces, one_by_one, python_json = _recorded_pieces(
        tmp_path, monkeypatch, doc, {"n": "numbers"}
    )
    assert one_by_one == 0 and python_json == len(pieces) > 5
    assert b", ".join(t for _, t in pieces) == json.dumps(doc["n"])[1:-1].encode()
    want = np.array(json.loads(json.dumps(doc["n"])), dtype=np.float64)
    np.testing.assert_array_equal(got["n"], want)  # NaN where NaN
    assert int(np.isnan(got["n"]).sum()) == 40


def test_elements_read_one_by_one_keep_their_types_and_bounds(tmp_path, monkeypatch):
    """With pieces of 4 bytes a 12-digit number has no cut and is read on its own: still
    float64; an empty ragged list has int64 lengths; the first row of a ragged list read on its
    own is bounded by numbers of one list (5), not by the entries of the list (2)."""
    monkeypatch.setattr(jsonstream, "PIECE", 4)
    monkeypatch.setattr(jsonstream, "CUT_SEARCH", 4)
    p = _write(
        tmp_path,
        "one.json",
        json.dumps({"n": [123456789012], "e": [], "r": [[1.0, 2.0, 3.0], [4.0]]}),
    )
    top = {"n": "numbers", "e": "ragged", "r": "ragged"}
    got = jsonstream.load(p, top=top, counts=jsonstream.Counts(2, 5, 100))
    assert got["n"].dtype == np.float64 and got["n"].tolist() == [123456789012.0]
    assert got["e"].lens.dtype == np.int64 and len(got["e"]) == 0
    assert got["r"].lens.tolist() == [3, 1] and got["r"].values.tolist() == [1, 2, 3, 4]
