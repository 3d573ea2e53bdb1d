"""Gzip-compressed vLLM results and the vectorised import/summary paths (small inputs, fast)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from conftest import small_result

from rackbook.core import metrics, summary
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.jsonstream import load as load_json
from rackbook.core.metrics import vllm_metrics
from rackbook.core.provenance import new_run_info
from rackbook.core.summary import summarize, summarize_path
from rackbook.core.traces import concat, read_trace, write_trace
from rackbook.errors import InputError


def _gz(tmp_path, obj, name="result.json.gz"):
    p = tmp_path / name
    p.write_bytes(gzip.compress(json.dumps(obj).encode()))
    return p


def test_load_json_reads_gzip(tmp_path):
    d = small_result()
    assert load_json(_gz(tmp_path, d)) == d


def test_import_gzip_equals_plain(tmp_path, write_json, run_cli):
    plain, gz = tmp_path / "plain", tmp_path / "gz"
    assert (
        run_cli("import", "vllm-bench", str(write_json(small_result())), "-o", str(plain))[0] == 0
    )
    code, stdout, err = run_cli(
        "import", "vllm-bench", str(_gz(tmp_path, small_result())), "-o", str(gz)
    )
    assert code == 0, err
    assert "3 requests, 4 gaps" in stdout
    a, b = read_trace(plain), read_trace(gz)
    assert b.requests["point_id"].tolist() == ["result"] * 3  # result.json.gz -> point "result"
    assert b.points["source"].tolist() == ["result.json.gz"]
    cols = ["ttft_s", "e2el_s", "output_tokens", "success"]
    assert a.requests[cols].equals(b.requests[cols])
    assert b.itl["itl_s"].tolist() == [0.1, 0.2, 0.3, 0.4]
    assert b.itl["request_row"].tolist() == [0, 0, 0, 1]


BAD_GZ = [
    ("not-gzip", b'{"duration": 1.0}', "-", "not a valid gzip file"),
    ("garbage", b"\x1f\x8b\x08\x00garbage-after-magic", "-", "not a valid gzip file"),
    ("truncated", gzip.compress(json.dumps(small_result()).encode())[:30], "-", "not a valid gzip"),
    ("empty-inside", gzip.compress(b"  \n"), "-", "file is empty"),
    ("bad-json-inside", gzip.compress(b"duration = 3"), "line 1", "not valid JSON"),
]


@pytest.mark.parametrize("name,content,field,problem", BAD_GZ, ids=[b[0] for b in BAD_GZ])
def test_bad_gzip(tmp_path, run_cli, name, content, field, problem):
    src = tmp_path / f"{name}.json.gz"
    src.write_bytes(content)
    out = tmp_path / "trace"
    code, _, err = run_cli("import", "vllm-bench", str(src), "-o", str(out))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {src}: {field}: {problem}")
    assert not out.exists()


# ----------------------------------------------------------------------------- summaries


def _multi_point_trace(tmp_path):
    """Seeded synthetic trace: 3 points of 40 requests, some failed, ragged gaps."""
    rng = np.random.default_rng(7)
    parts = []
    for k, dur in enumerate((2.0, 3.0, 5.0)):
        n = 40
        out = rng.integers(0, 6, n)
        fail = rng.random(n) < 0.15
        itls = [
            [] if f else rng.uniform(0.01, 0.05, max(int(o) - 1, 0)).tolist()
            for f, o in zip(fail, out, strict=True)
        ]
        ttft = np.where(fail, 0.0, rng.uniform(0.05, 0.2, n))
        lat = ttft + np.array([sum(g) for g in itls])
        d = {
            "duration": dur,
            "input_lens": rng.integers(1, 50, n).tolist(),
            "output_lens": np.where(fail, 0, out).tolist(),
            "ttfts": ttft.tolist(),
            "itls": itls,
            "latencies": np.where(fail, 0.0, lat).tolist(),
            "errors": ["x" if f else "" for f in fail],
        }
        parts.append(vllm_bench_frames(tmp_path / f"p{k}.json", {"batch_size": str(k)}, data=d))
    run = new_run_info(
        kind="synthetic",
        commands=[],
        parameters={},
        engine={},
        generator={"name": "tests/test_large.py", "seed": 7},
    )
    out = tmp_path / "trace"
    write_trace(out, concat(parts, run))
    return out


def _reference(t):
    """The pre-streaming definition: vllm_metrics per window on boolean masks."""
    req, ok = t.requests, t.requests["success"].to_numpy()
    rr = t.itl["request_row"].to_numpy()
    itl = t.itl["itl_s"].to_numpy()
    total = vllm_metrics(req, itl[ok[rr]], float(t.points["duration_s"].sum())).to_dict()
    pts = []
    for _, p in t.points.iterrows():
        mask = (req["point_id"] == p["point_id"]).to_numpy()
        pts.append(vllm_metrics(req[mask], itl[(mask & ok)[rr]], float(p["duration_s"])).to_dict())
    return total, pts


def _assert_same(got, want, rel=1e-12):
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=rel, abs=1e-12), k


def test_summaries_agree_with_reference(tmp_path):
    path = _multi_point_trace(tmp_path)
    t = read_trace(path)
    total, pts = _reference(t)
    assert total["completed"] > 0 and total["failed"] > 0 and len(t.itl) > 100
    for s in (
        summarize(t).to_dict(),
        summarize_path(path).to_dict(),  # small: read whole and validated
        summarize_path(path, stream=True, chunk_rows=7).to_dict(),  # chunks straddle the points
    ):
        _assert_same(s, total)
        assert [p["batch_size"] for p in s["points"]] == [0, 1, 2]
        for got, want in zip(s["points"], pts, strict=True):
            _assert_same(got, want)


def test_itl_histogram_within_stated_bound(tmp_path, monkeypatch):
    path = _multi_point_trace(tmp_path)
    exact = summarize_path(path, stream=True, chunk_rows=7).to_dict()
    monkeypatch.setattr(summary, "EXACT_ITL_MAX", 0)
    approx = summarize_path(path, stream=True, chunk_rows=7).to_dict()
    bound = summary.HIST_RATIO**0.5 - 1  # 0.05 %
    for a, e in zip([approx, *approx["points"]], [exact, *exact["points"]], strict=True):
        for k in e:
            if "itl" in k and k.startswith(("median", "p")):
                assert abs(a[k] / e[k] - 1) <= bound, k
            elif "itl" in k:  # count, mean and std: exact up to rounding
                assert a[k] == pytest.approx(e[k], rel=1e-9), k
            elif k != "points":
                assert a[k] == e[k], k


def test_histogram_percentile_by_hand():
    # 4 gaps of 10 ms and one of 30 ms: p50 is a 10 ms gap, its bin's centre is within 0.05 %;
    # the largest is clamped to the observed maximum exactly.
    hist = summary.GapHistogram(1)
    hist.add(np.zeros(5, np.int64), np.array([0.01, 0.01, 0.01, 0.01, 0.03]))
    total, (pt,) = hist.stats((100.0,), 1)
    assert total["mean_itl_ms"] == pytest.approx(14.0)
    assert total["std_itl_ms"] == pytest.approx(8.0)  # sqrt(mean of (4,4,4,4,16)^2) ms
    assert total["median_itl_ms"] == pytest.approx(10.0, rel=5e-4)
    assert total["p100_itl_ms"] == 30.0 and pt == total


def _write_raw(path, requests=None, itl=None):
    """Trace folder written with pyarrow directly (no validation), to test streamed checks."""
    import json as _json

    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir()
    run = new_run_info(
        kind="synthetic", commands=[], parameters={}, engine={}, generator={"name": "t", "seed": 0}
    )
    (path / "run.json").write_text(_json.dumps(run))
    req = {
        "point_id": ["a", "a", "a"],
        "success": [True, True, False],
        "ttft_s": [0.1, 0.2, 0.0],
        "e2el_s": [0.5, 0.6, 0.0],
        "prompt_tokens": [5, 5, 5],
        "output_tokens": [3, 2, 0],
    }
    req.update(requests or {})
    gaps = {"request_row": [0, 0, 1], "itl_s": [0.1, 0.2, 0.3]}
    gaps.update(itl or {})
    pq.write_table(pa.table(req), path / "requests.parquet")
    pq.write_table(pa.table(gaps), path / "itl.parquet")
    pts = {"point_id": ["a"], "engine": ["e"], "config": ["c"], "duration_s": [1.0]}
    pq.write_table(pa.table(pts), path / "points.parquet")
    return path


def test_streamed_summary_by_hand(tmp_path):
    s = summarize_path(_write_raw(tmp_path / "t"), stream=True, chunk_rows=2).to_dict()
    assert s["completed"] == 2 and s["failed"] == 1 and s["total_output_tokens"] == 5
    assert s["mean_tpot_ms"] == pytest.approx(300.0)  # (0.4/2 + 0.4/1) / 2 s
    assert s["mean_itl_ms"] == pytest.approx(200.0) and s["points"][0]["completed"] == 2


STREAM_BAD = [
    ({"ttft_s": [0.1, -0.2, 0.0]}, None, "requests.ttft_s: negative value in row 1"),
    (
        {"ttft_s": [0.1, 0.9, 0.0]},
        None,
        "requests.ttft_s: larger than the request's end-to-end latency in row 1",
    ),
    (
        {"e2el_s": [0.5, 0.6, float("nan")]},
        None,
        "requests.e2el_s: non-finite value (NaN or infinite) in row 2",
    ),
    ({"point_id": ["a", "a", "zz"]}, None, "point 'zz' is not in points.parquet"),
    ({"point_id": ["a", None, "a"]}, None, "requests.point_id: missing value in row 1"),
    ({"success": ["y", "n", "n"]}, None, "requests.success: expected bool"),
    ({"ttft_s": [100.0, 200.0, 0.0], "e2el_s": [2e5, 3e5, 0.0]}, None, "milliseconds"),
    (None, {"request_row": [0, 0, 3]}, "itl.request_row: refers to a request row that is absent"),
    (None, {"itl_s": [0.1, 0.2, -0.3]}, "itl.itl_s: negative value in row 2"),
]


@pytest.mark.parametrize("req,itl,problem", STREAM_BAD)
def test_streamed_checks(tmp_path, req, itl, problem):
    path = _write_raw(tmp_path / "t", req, itl)
    with pytest.raises(InputError) as err:
        summarize_path(path, stream=True, chunk_rows=2).to_dict()
    assert str(err.value).startswith(str(path)) and problem in str(err.value)


def test_streamed_missing_column_and_table(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _write_raw(tmp_path / "t")
    pq.write_table(pa.table({"point_id": ["a"]}), path / "requests.parquet")
    with pytest.raises(InputError, match="requests.success: missing column"):
        summarize_path(path, stream=True).to_dict()
    (path / "itl.parquet").unlink()
    with pytest.raises(InputError, match="missing table itl.parquet"):
        summarize_path(path, stream=True).to_dict()


ITLS_BAD = [
    ([[0.1, 0.2, 0.3], 0.4, []], "itls[1]", "must be a list of seconds"),
    ([[0.1, 0.2, 0.3], [-0.4], []], "itls[3]", "negative value"),  # index into all gaps
    ([[0.1, 0.2, 0.3], [None], []], "itls[3]", "non-finite value (NaN or infinite)"),
    ([[0.1, [0.2], 0.3], [0.4], []], "itls[1]", "not a number"),
]


@pytest.mark.parametrize("itls,field,problem", ITLS_BAD)
def test_flattened_itl_errors(tmp_path, itls, field, problem):
    with pytest.raises(InputError) as err:
        vllm_bench_frames(tmp_path / "r.json", data=small_result(itls=itls))
    assert f": {field}: {problem}" in str(err.value)


def test_flattened_itl_rows(tmp_path):
    t = vllm_bench_frames(tmp_path / "r.json", data=small_result(itls=[[], [0.5], []]))
    assert t.itl["request_row"].tolist() == [1] and t.itl["itl_s"].tolist() == [0.5]
    assert t.requests["request_id"].tolist() == ["r/0", "r/1", "r/2"]
    assert t.requests["batch_size"].isna().all() and t.requests["concurrency"].tolist() == [2] * 3


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_one_window_stats_equal_numpy(n):
    """One window of up to one block: every statistic numpy's, bit for bit."""
    v = np.random.default_rng(n).lognormal(-3, 1, n)
    qs = (0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0)
    total, (one,) = metrics.grouped_stats("x", v.copy(), np.zeros(n, np.int8), 1, qs)
    assert total == one == metrics.latency_stats("x", v, qs)  # bit for bit


def _interleaved(tmp_path, t):
    """``t`` with its request rows dealt out so that the points alternate row by row (the gaps
    follow their requests), written to a new folder."""
    import dataclasses

    order = np.argsort(np.arange(len(t.requests)) % 40, kind="stable")  # 0, 40, 80, 1, 41
    new_row = np.empty(len(order), np.int64)
    new_row[order] = np.arange(len(order))
    req = t.requests.iloc[order].reset_index(drop=True)
    itl = t.itl.assign(request_row=new_row[t.itl["request_row"].to_numpy()])
    itl = itl.iloc[np.argsort(itl["request_row"].to_numpy(), kind="stable")]
    out = tmp_path / "interleaved"
    write_trace(out, dataclasses.replace(t, requests=req, itl=itl.reset_index(drop=True)))
    return out


def test_interleaved_points_summarise_as_reference(tmp_path):
    """Points whose rows alternate give the reference's counts, medians and percentiles,
    streamed or not."""
    path = _interleaved(tmp_path, read_trace(_multi_point_trace(tmp_path)))
    t = read_trace(path)
    assert t.requests["point_id"].iloc[:3].nunique() > 1  # really interleaved
    total, pts = _reference(t)
    for s in (summarize(t).to_dict(), summarize_path(path, stream=True, chunk_rows=5).to_dict()):
        _assert_same(s, total)
        for got, want in zip(s["points"], pts, strict=True):
            _assert_same(got, want)
            for k in want:
                if k.startswith(("median_", "p9")):
                    assert got[k] == want[k], k  # exact, bit for bit


def test_read_ahead_keeps_order_and_raises_in_place():
    from rackbook.core import traces

    def batches():
        yield from (1, 2, 3)
        raise ValueError("broken page")

    got = []
    with pytest.raises(ValueError, match="broken page"):
        for b in traces._read_ahead(batches(), depth=1):
            got.append(b)
    assert got == [1, 2, 3]


def test_read_ahead_thread_stops_with_its_caller():
    import itertools
    import threading

    from rackbook.core import traces

    before = set(threading.enumerate())
    it = traces._read_ahead(itertools.count(), depth=2)
    assert [next(it), next(it)] == [0, 1]
    (reader,) = set(threading.enumerate()) - before
    assert reader.name.startswith("rackbook-read-ahead") and reader.is_alive()
    it.close()
    reader.join()  # no time limit: a reader that never stops hangs the test
    assert not reader.is_alive()
