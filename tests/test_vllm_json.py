"""The lean reader of vLLM results (``itls`` parsed piece by piece into arrays) gives exactly
what parsing the whole file gives, and hands anything unusual back to the whole-file parser
(whose error messages are the ones the user sees)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import small_result

from rackbook.core import importers, traces, vllm_json
from rackbook.errors import InputError


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    """Take the lean path on small files, cut into many pieces."""
    monkeypatch.setattr(vllm_json, "MIN_BYTES", 0)
    monkeypatch.setattr(vllm_json, "PIECE_BYTES", 16)


def _result(n: int = 40, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = rng.integers(0, 6, n)
    d = small_result(
        completed=int((out > 0).sum()),
        input_lens=rng.integers(1, 50, n).tolist(),
        output_lens=out.tolist(),
        ttfts=rng.uniform(0.01, 0.2, n).tolist(),
        latencies=rng.uniform(0.3, 1.0, n).tolist(),
        start_times=np.sort(rng.uniform(0, 5, n)).tolist(),
        errors=["" if o > 0 else "boom" for o in out],
        itls=[rng.uniform(1e-6, 0.05, max(int(o) - 1, 0)).tolist() for o in out],
    )
    d["itls"][1] = [1e-05, 2.5e-3, 0.0, 3]  # an exponent, a zero, an integer
    d["output_lens"][1] = 5
    d["errors"][1] = ""
    d["completed"] = sum(1 for e in d["errors"] if e == "")
    return d


@pytest.mark.parametrize("indent", [None, 1], ids=["compact", "indented"])
@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")], ids=["tight", "spaced"])
def test_lean_path_equals_the_whole_file(tmp_path, indent, separators):
    d = _result()
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d, indent=indent, separators=separators))
    lean = vllm_json.load_detailed(src)
    assert lean is not None
    whole = importers.load_json(src)
    g = lean.pop("itls")
    assert isinstance(g, vllm_json.RaggedGaps)
    assert g.lens.tolist() == [len(x) for x in whole.pop("itls")] == [len(x) for x in d["itls"]]
    assert g.values.tolist() == [float(v) for x in d["itls"] for v in x]
    assert lean == whole


def test_the_imported_trace_is_the_same_either_way(tmp_path, monkeypatch):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(_result(seed=3)))
    a = importers.vllm_bench_frames(src)
    monkeypatch.setattr(vllm_json, "MIN_BYTES", 1 << 40)  # whole-file path
    b = importers.vllm_bench_frames(src)
    for x, y in ((a.requests, b.requests), (a.itl, b.itl), (a.points, b.points)):
        assert x.equals(y)
    out = tmp_path / "t"
    n, gaps, _ = importers.write_vllm_bench(src, out, None, "recorded")
    t = traces.read_trace(out)
    assert (n, gaps) == (len(t.requests), len(t.itl)) == (len(b.requests), len(b.itl))


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace("[1e-05, ", "[NaN, ", 1),
        lambda s: s.replace('"itls":', '"itls": [["x"]], "itls2":', 1),
        lambda s: s.replace('"itls":', '"itls": null, "itls":', 1),
        lambda s: s.replace('"itls": [[', '"itls": [[[0.1]], [', 1),
        lambda s: s.replace('"itls": [[', '"itls": [[.5, ', 1),
        lambda s: s.replace('"itls": [[', '"itls": [[01, ', 1),
        lambda s: s[:-2],
    ],
    ids=["nan", "strings", "duplicate-key", "nested", "dot", "leading-zero", "truncated"],
)
def test_unusual_input_goes_to_the_whole_file_parser(tmp_path, edit):
    d = _result()
    src = tmp_path / "r.json"
    text = json.dumps(d, separators=(", ", ": "))
    bad = edit(text)
    assert bad != text
    src.write_text(bad)
    assert vllm_json.load_detailed(src) is None


def test_itls_named_inside_a_string_is_not_the_key(tmp_path):
    d = _result()
    d = {"note": 'see "itls": [[1]] below', **d}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    lean = vllm_json.load_detailed(src)
    assert lean is not None and lean["note"] == d["note"]
    assert lean["itls"].lens.tolist() == [len(x) for x in d["itls"]]


def test_errors_name_the_same_entry_either_way(tmp_path):
    d = _result()
    d["itls"][2] = [0.1, -0.5]
    d["output_lens"][2] = 3
    d["errors"][2] = ""
    d["completed"] = sum(1 for e in d["errors"] if e == "")
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    assert vllm_json.load_detailed(src) is not None
    with pytest.raises(InputError) as lean:
        importers.vllm_bench_frames(src)
    with pytest.raises(InputError) as whole:
        importers.vllm_bench_frames(src, data=json.loads(src.read_text()))
    assert str(lean.value) == str(whole.value) and "itls" in str(lean.value)
