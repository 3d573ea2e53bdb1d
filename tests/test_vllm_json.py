"""vLLM results read in bounded memory (:mod:`rackbook.core.vllm_json` over
:mod:`rackbook.core.jsonstream`) give exactly what Python's ``json`` gives for the whole file,
and the same one-line error, however the file is cut into pieces and buffers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import small_result

from rackbook import limits
from rackbook.core import importers, jsonreader, jsonstream, traces, vllm_json
from rackbook.core.importers import vllm_bench
from rackbook.errors import InputError


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    """Tiny buffers and pieces: every cut and refill happens inside a small file."""
    monkeypatch.setattr(jsonreader, "CHUNK", 7)
    monkeypatch.setattr(jsonstream, "PIECE", 16)
    monkeypatch.setattr(jsonstream, "CUT_SEARCH", 16)


def _result(n: int = 40, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = rng.integers(0, 6, n)
    d = small_result(
        completed=int((out > 0).sum()),
        input_lens=rng.integers(1, 50, n).tolist(),
        output_lens=out.tolist(),
        ttfts=rng.uniform(0.01, 0.2, n).tolist(),
        latencies=rng.uniform(0.3, 1.0, n).tolist(),
        start_times=np.sort(rng.uniform(0, 1.5, n)).tolist(),  # within the 2 s duration
        errors=["" if o > 0 else "boom" for o in out],
        itls=[rng.uniform(1e-6, 0.05, max(int(o) - 1, 0)).tolist() for o in out],
    )
    d["itls"][1] = [1e-05, 2.5e-3, 0.0, 3]  # an exponent, a zero, an integer
    d["output_lens"][1] = 5
    d["errors"][1] = ""
    d["completed"] = sum(1 for e in d["errors"] if e == "")
    d["generated_texts"] = ['say "hi"], [\\n' * (i % 3) for i in range(n)]
    # each latency is its TTFT plus its gaps, as vLLM's client measures them
    d["latencies"] = [t + sum(g) for t, g in zip(d["ttfts"], d["itls"], strict=True)]
    return d


def _whole_error(text: str, path) -> str:
    """The one line the whole-file parser gave (Python's json)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        if cut:
            return str(InputError(path, "end of file", "truncated JSON"))
        return str(InputError(path, f"line {exc.lineno}", f"not valid JSON: {exc.msg}"))
    raise AssertionError("valid JSON")


@pytest.mark.parametrize("indent", [None, 1], ids=["compact", "indented"])
@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")], ids=["tight", "spaced"])
def test_streamed_equals_the_whole_file(tmp_path, indent, separators):
    d = _result()
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d, indent=indent, separators=separators))
    got = vllm_json.load_detailed(src)
    whole = json.loads(src.read_text())
    g = got.pop("itls")
    assert isinstance(g, vllm_json.RaggedGaps)
    assert g.lens.tolist() == [len(x) for x in whole.pop("itls")]
    assert g.values.tolist() == [float(v) for x in d["itls"] for v in x]
    whole.pop("generated_texts")  # checked and dropped
    for k in vllm_json.PER_REQUEST:
        assert got.pop(k).tolist() == [float(v) for v in whole.pop(k)]
    assert got == whole
    assert jsonstream.load(src) == json.loads(src.read_text())


def test_the_imported_trace_is_the_same_either_way(tmp_path):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(_result(seed=3)))
    a = vllm_bench.vllm_bench_frames(src)
    b = vllm_bench.vllm_bench_frames(src, data=json.loads(src.read_text()))
    for x, y in ((a.requests, b.requests), (a.itl, b.itl), (a.points, b.points)):
        assert x.equals(y)
    out = tmp_path / "t"
    w = importers.write("vllm-bench", src, out)
    n, gaps = len(w.requests), len(w.itl)
    t = traces.read_trace(out)
    assert (n, gaps) == (len(t.requests), len(t.itl)) == (len(b.requests), len(b.itl))


def _set(key, i, value, j=None):
    def edit(d):
        if j is None:
            d[key][i] = value
        else:
            d[key][i][j] = value

    return edit


#: Valid JSON, unusual values (each entry replaced, so the lists keep their lengths).
VALUES = {
    "nan-gap": _set("itls", 1, float("nan"), 0),
    "string-gap": _set("itls", 1, "x", 0),
    "string-list": _set("itls", 1, ["x"]),
    "nested-gap": _set("itls", 1, [0.1], 0),
    "not-a-list": _set("itls", 1, 0.5),
    "text-in-ttfts": _set("ttfts", 0, "a"),
    "list-in-ttfts": _set("ttfts", 0, [1]),
    "null-in-lens": _set("input_lens", 3, None),
    "infinity": _set("ttfts", 0, float("-inf")),
    "ttfts-object": lambda d: d.update(ttfts={"a": d["ttfts"]}),
    "itls-null": lambda d: d.update(itls=None),
    "long-ttfts": lambda d: d["ttfts"].append(0.1),
    "long-itls": lambda d: d["itls"].append([0.1]),
    "big-integer": _set("input_lens", 0, 10**30),
}
#: Edits of the text (duplicate keys; not valid JSON).
TEXT = {
    "duplicate-key": lambda s: s.replace('"itls":', '"itls": null, "itls":', 1),
    "dot": lambda s: s.replace('"itls": [[', '"itls": [[.5, ', 1),
    "leading-zero": lambda s: s.replace('"itls": [[', '"itls": [[01, ', 1),
    "missing-comma": lambda s: s.replace("], [", "] [", 1),
    "trailing-comma": lambda s: s.replace("]], ", "],], ", 1),
    "control-char": lambda s: s.replace('"boom"', '"bo\tom"', 1),
    "bad-escape": lambda s: s.replace('"boom"', '"bo\\qom"', 1),
    "extra-data": lambda s: s + " 1",
    "truncated": lambda s: s[:-2],
    "truncated-in-string": lambda s: s[: s.index('"boom"') + 3],
}


def _dumped(edit):
    return lambda _text: json.dumps(_edited(edit), separators=(", ", ": "))


EDITS = {**{k: _dumped(e) for k, e in VALUES.items()}, **TEXT}


def _edited(edit):
    d = _result()
    edit(d)
    return d


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_unusual_input_reads_as_the_whole_file(tmp_path, edit):
    """Whatever the edit, the streamed reader's outcome is the whole-file parser's: the same
    trace, or the same one-line error."""
    text = json.dumps(_result(), separators=(", ", ": "))
    bad = edit(text)
    assert bad != text
    src = tmp_path / "r.json"
    src.write_text(bad)
    try:
        whole = json.loads(bad)
    except json.JSONDecodeError:
        with pytest.raises(InputError) as got:
            vllm_json.load_detailed(src)
        assert str(got.value) == _whole_error(bad, src)
        return
    try:
        b = vllm_bench.vllm_bench_frames(src, data=whole)
    except InputError as exc:
        with pytest.raises(InputError) as got:
            vllm_bench.vllm_bench_frames(src)
        if "NaN or infinite" in exc.problem and got.value.problem == "not a number":
            assert got.value.field == exc.field  # null: numpy read it as NaN
        else:
            assert str(got.value) == str(exc)
        return
    a = vllm_bench.vllm_bench_frames(src)
    for x, y in ((a.requests, b.requests), (a.itl, b.itl)):
        assert x.equals(y)


def test_itls_named_inside_a_string_is_not_the_key(tmp_path):
    d = _result()
    d = {"note": 'see "itls": [[1]] below', **d}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    got = vllm_json.load_detailed(src)
    assert got["note"] == d["note"]
    assert got["itls"].lens.tolist() == [len(x) for x in d["itls"]]


def test_errors_name_the_same_entry_either_way(tmp_path):
    d = _result()
    d["itls"][2] = [0.1, -0.5]
    d["output_lens"][2] = 3
    d["errors"][2] = ""
    d["completed"] = sum(1 for e in d["errors"] if e == "")
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    with pytest.raises(InputError) as lean:
        vllm_bench.vllm_bench_frames(src)
    with pytest.raises(InputError) as whole:
        vllm_bench.vllm_bench_frames(src, data=json.loads(src.read_text()))
    assert str(lean.value) == str(whole.value) and "itls" in str(lean.value)


def test_a_file_vllm_wrote_reads_as_the_whole_file():
    """``vllm bench serve --save-detailed`` output (generated texts included), cut small."""
    src = Path(__file__).parent / "fixtures" / "vllm-bench-serve-b32.json"
    a = vllm_bench.vllm_bench_frames(src)
    b = vllm_bench.vllm_bench_frames(src, data=json.loads(src.read_text()))
    assert a.requests.equals(b.requests) and a.itl.equals(b.itl) and len(a.itl) > 1000


def test_a_failed_requests_partial_gaps_are_dropped_and_extra_gaps_refused(tmp_path):
    # vLLM keeps a failed request's partial gaps with output_lens 0; no metric reads them
    d = small_result(
        completed=2,
        input_lens=[10, 20, 30],
        output_lens=[4, 2, 0],
        ttfts=[0.1, 0.2, 0.0],
        itls=[[0.1, 0.2, 0.3], [0.4], [0.0, 0.0, 0.0]],
        latencies=[0.7, 0.6, 0.0],
        start_times=[100.0, 100.5, 101.0],
        errors=["", "", "boom"],
    )
    src, out = tmp_path / "r.json", tmp_path / "t"
    src.write_text(json.dumps(d))
    importers.write("vllm-bench", src, out)
    assert traces.read_trace(out).itl["request_row"].tolist() == [0, 0, 0, 1]
    d["output_lens"], d["itls"][1] = [1, 1, 0], [0.2, 0.2]  # 5 gaps for 2 tokens
    src.write_text(json.dumps(d))
    with pytest.raises(InputError) as err:
        importers.write("vllm-bench", src, tmp_path / "t2")
    # gaps per token: one rule, in traces.check_consistency (request 0: 1 token, 3 gaps)
    assert (err.value.file, err.value.field) == (str(src), "requests.output_tokens (row 0)")
    assert "1 tokens is fewer than its 4 chunks (gaps + 1)" in str(err.value)
    assert not (tmp_path / "t2").exists()


# ------------------------------------------------------------------------ typed lists by hand

TOP = {"a": jsonstream.NUMBERS, "r": jsonstream.RAGGED, "g": jsonstream.SKIP}
#: At most 3 entries (or lists), 2 numbers in one list, 4 numbers in all.
SMALL = jsonstream.Counts(3, 2, 4)


def _typed(tmp_path, text: str, counts: jsonstream.Counts = SMALL):
    src = tmp_path / "y.json"
    src.write_text(text)
    out = jsonstream.load(src, TOP, counts)
    if not isinstance(out, dict):
        return out
    ragged = {k: v for k, v in out.items() if isinstance(v, jsonstream.Ragged)}
    plain = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in out.items()}
    return {**plain, **{k: (v.lens.tolist(), v.values.tolist()) for k, v in ragged.items()}}


PIECES = pytest.mark.parametrize("piece", [2, 16, 2 << 20], ids=["tiny", "small", "default"])


@PIECES
def test_typed_lists_at_their_bounds(tmp_path, monkeypatch, piece):
    monkeypatch.setattr(jsonstream, "PIECE", piece)
    got = _typed(tmp_path, '{"a": [1, 2, 3], "r": [[1, 2], [3, 4]], "g": ["x", "y"], "k": 1}')
    assert got == {"a": [1.0, 2.0, 3.0], "r": ([2, 2], [1.0, 2.0, 3.0, 4.0]), "k": 1}
    src = tmp_path / "y.json"  # numbers as float64, whole or not
    assert jsonstream.load(src, TOP, SMALL)["a"].dtype == np.float64
    assert _typed(tmp_path, '{"r": [[], [1]], "a": []}') == {"r": ([0, 1], [1.0]), "a": []}
    assert _typed(tmp_path, '{"a": 5, "r": null, "g": 5}') == {"a": 5, "r": None}  # as parsed
    assert _typed(tmp_path, "{}") == {} and _typed(tmp_path, "[1, 2]") == [1, 2]
    assert _typed(tmp_path, '{"r": []}') == {"r": ([], [])}


@PIECES
@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        (
            '{"a": [1, 2, 3, 4]}',
            "a",
            "more than 3 entries: must be at most 3 (rackbook's bound on requests)",
        ),
        (
            '{"r": [[1, 2, 3]]}',
            "r[0]",
            "more than 2 entries: must be at most 2 (numbers of one list)",
        ),
        (
            '{"r": [[1, 2], [3, 4, 5]]}',
            "r[1]",
            "more than 2 entries: must be at most 2 (numbers of one list)",
        ),
        (
            '{"r": [[1, 2], [3, 4], [5]]}',
            "r",
            "more than 4 numbers in all: must be at most 4 (rackbook's bound)",
        ),
        (
            '{"r": [[1], [2], [3], [4]]}',
            "r",
            "more than 3 lists: must be at most 3 (rackbook's bound on requests)",
        ),
        ('{"r": [[1, 2], [3, "x"]]}', "r[3]", "not a number"),  # counted over all values
        ('{"r": [[1, 2], [3, [4]]]}', "r[3]", "not a number"),
        ('{"r": [[1], 2]}', "r[1]", "must be a list of seconds"),
        ('{"a": [1, "x"]}', "a[1]", "not a number"),
        ('{"a": [1, true]}', "a[1]", "not a number"),
        ('{"r": [[1],]}', "line 1", "not valid JSON: Expecting value"),
        ("{1: 2}", "line 1", "not valid JSON: Expecting property name enclosed in double quotes"),
        ('{"a" 1}', "line 1", "not valid JSON: Expecting ':' delimiter"),
        ('{"a": 1 "b": 2}', "line 1", "not valid JSON: Expecting ',' delimiter"),
    ],
)
def test_typed_lists_refused_by_field_and_problem(
    tmp_path, monkeypatch, piece, text, field, problem
):
    monkeypatch.setattr(jsonstream, "PIECE", piece)
    with pytest.raises(InputError) as err:
        _typed(tmp_path, text)
    assert (err.value.field, err.value.problem) == (field, problem)


def test_lists_named_by_row_and_entry_without_a_flat_index(tmp_path):
    counts = jsonstream.Counts(3, 2, 4, "layers", False, "not a row")
    for text, field, problem in (
        ('{"r": [[1, 2], [3, "x"]]}', "r[1][1]", "not a number"),
        ('{"r": [[1], 2]}', "r[1]", "not a row"),
        (
            '{"a": [1, 2, 3, 4]}',
            "a",
            "more than 3 entries: must be at most 3 (rackbook's bound on layers)",
        ),
    ):
        with pytest.raises(InputError) as err:
            _typed(tmp_path, text, counts)
        assert (err.value.field, err.value.problem) == (field, problem)


@PIECES
def test_a_dense_ragged_list_fills_the_room_the_file_allows(tmp_path, monkeypatch, piece):
    """Two bytes a number ("1,"): the room for values is about half the file's bytes."""
    monkeypatch.setattr(jsonstream, "PIECE", piece)
    rows = [[1] * 9] * 40
    counts = jsonstream.Counts(100, 9, 10_000)  # the file, not the bound, sets the room
    text = json.dumps({"r": rows}, separators=(",", ":"))
    assert _typed(tmp_path, text, counts) == {"r": ([9] * 40, [1.0] * 360)}
    # a gzip file: the room is what it may inflate to, not its (much smaller) size
    src = tmp_path / "y.json.gz"
    src.write_bytes(gzip.compress(text.encode()))
    got = jsonstream.load(src, TOP, counts)["r"]
    assert (got.lens.tolist(), got.values.tolist()) == ([9] * 40, [1.0] * 360)


def test_load_detailed_at_the_bounds_and_one_past(tmp_path, monkeypatch):
    for key, value in (("requests", 3), ("context", 2), ("gaps", 3)):
        monkeypatch.setitem(limits.BOUNDS, key, value)
    d = {"input_lens": [1, 2, 3], "itls": [[0.5, 0.25], [1], []], "generated_texts": ["a"] * 3}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    got = vllm_json.load_detailed(src)
    assert got["input_lens"].tolist() == [1.0, 2.0, 3.0] and "generated_texts" not in got
    assert (got["itls"].lens.tolist(), got["itls"].values.tolist()) == ([2, 1, 0], [0.5, 0.25, 1.0])
    for edit, field, problem in (
        ({"input_lens": [1, 2, 3, 4]}, "input_lens", "more than 3 entries"),
        ({"itls": [[0.5, 0.25, 1]]}, "itls[0]", "more than 2 entries"),
        ({"itls": [[0.5, 0.25], [1, 1]]}, "itls", "more than 3 numbers in all"),
    ):
        src.write_text(json.dumps({**d, **edit}))
        with pytest.raises(InputError) as err:
            vllm_json.load_detailed(src)
        assert (err.value.field, err.value.problem.split(":")[0]) == (field, problem)


@PIECES
@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ('{"r": [[1], ', "end of file", "truncated JSON"),
        ('{"r": [[1], ]}', "line 1", "not valid JSON: Expecting value"),
        # read list by list (a string in it): the first list's bound is its own
        (
            '{"r": [[1, 2, 3], ["x"]]}',
            "r[0]",
            "more than 2 entries: must be at most 2 (numbers of one list)",
        ),
        ('{"a": 1,\n"k": {"x":\n,}}', "line 3", "not valid JSON: Expecting value"),
    ],
)
def test_typed_lists_cut_or_read_one_by_one(tmp_path, monkeypatch, piece, text, field, problem):
    monkeypatch.setattr(jsonstream, "PIECE", piece)
    with pytest.raises(InputError) as err:
        _typed(tmp_path, text)
    assert (err.value.field, err.value.problem) == (field, problem)


def test_nesting_in_typed_files_at_the_limit(tmp_path):
    """A top-level key's value is at depth 1, an entry of a typed list at depth 2: 64 levels
    in all, counted the same for kept, typed and skipped values."""
    nest = lambda n: "[" * n + "]" * n  # noqa: E731
    assert _typed(tmp_path, '{"k": ' + nest(63) + "}") == {"k": json.loads(nest(63))}
    assert _typed(tmp_path, '{"g": [1, ' + nest(62) + "], " + '"k": 1}') == {"k": 1}
    assert _typed(tmp_path, '{"g": {"x": ' + nest(62) + "}, " + '"k": 1}') == {"k": 1}
    deep = "nested deeper than 64 levels (refused)"
    for text, field in (
        ('{"k": ' + nest(64) + "}", "k" + "[0]" * 63),
        ('{"g": [1, ' + nest(63) + "]}", "g" + "[0]" * 62),
        ('{"g": {"x": ' + nest(63) + "}}", "g.x" + "[0]" * 62),
        ('{"a": [1, ' + nest(63) + "]}", "a[1]" + "[0]" * 62),
    ):
        with pytest.raises(InputError) as err:
            _typed(tmp_path, text)
        assert (err.value.field, err.value.problem) == (field, deep), text[:12]
    with pytest.raises(InputError) as err:  # a list 62 deep in a list of numbers
        _typed(tmp_path, '{"a": [1, ' + nest(62) + "]}")
    assert (err.value.field, err.value.problem) == ("a[1]", "not a number")


def test_skipped_values_are_read_uncharged_but_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonreader, "VALUE_BUDGET_MB", 0.001)  # 1,000 bytes
    big = '"' + "x" * 3000 + '"'
    for text in ('{"g": [1, ' + big + ', 2], "k": 1}', '{"g": ' + big + ', "k": 1}'):
        assert _typed(tmp_path, text) == {"k": 1}
    monkeypatch.setattr(jsonreader, "MAX_STRING_MB", 1e-3)  # 1,000 characters
    with pytest.raises(InputError) as err:  # read one by one: not a list of strings only
        _typed(tmp_path, '{"g": [1, ' + big + ", 2]}")
    assert (err.value.field, err.value.problem) == ("g", "a string longer than 0.001 MB (refused)")
