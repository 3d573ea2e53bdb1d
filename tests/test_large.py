"""Gzip-compressed vLLM results and the vectorised import/summary paths (small inputs, fast)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pytest
from conftest import small_result

from rackbook.core import metrics, summary
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.core.jsonstream import load as load_json
from rackbook.core.metrics import vllm_metrics
from rackbook.core.provenance import new_run_info
from rackbook.core.summary import format_summary, summarize, summarize_path
from rackbook.core.traces import concat, read_trace, validate, write_trace
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


# ----------------------------------------------------------------------------- summary's edges
# (issue 39: the text table a caller reads, when a folder is streamed or summarised by
# histogram, the gap histogram's bins, and what the streamed reader refuses; numbers by hand)


def _small_trace(tmp_path, d=None):
    """The hand-made vLLM result (``small_result``) as a validated trace of one point."""
    data = d or small_result()
    t = vllm_bench_frames(tmp_path / "r.json", {"engine": "e"}, data=data)
    t.run = new_run_info(kind="recorded", commands=["x"], parameters={}, engine={"name": "t"})
    return validate(t)


def _folder(tmp_path, d=None):
    """``_small_trace`` written as a trace folder."""
    out = tmp_path / "trace"
    write_trace(out, _small_trace(tmp_path, d=d or small_result()))
    return out


# ----------------------------------------------------------------------------- the text table

SMALL_TABLE = [  # small_result: 2 successful requests, 1 failed, 2 s
    ("Successful requests", "2"),
    ("Failed requests", "1"),
    ("Benchmark duration (s)", "2.00"),
    ("Total input tokens", "30"),
    ("Total generated tokens", "6"),
    ("Request throughput (req/s)", "1.00"),
    ("Output token throughput (tok/s)", "3.00"),
    ("Total token throughput (tok/s)", "18.00"),
    ("Mean TTFT (ms)", "150.00"),
    ("P99 TTFT (ms)", "199.00"),  # 100 + 100 x 0.99
    ("Mean TPOT (ms)", "300.00"),  # 0.6/3 and 0.4/1 s
    ("P99 TPOT (ms)", "398.00"),
    ("Mean ITL (ms)", "250.00"),  # 0.1, 0.2, 0.3, 0.4 s
    ("P99 ITL (ms)", "397.00"),  # 300 + 100 x 0.97
    ("Mean E2EL (ms)", "650.00"),
    ("P99 E2EL (ms)", "699.00"),
]


def _rows(text):
    """The table's rows as (label, value): a label is padded to 36 characters."""
    return [(line[2:38].rstrip(), line[39:]) for line in text.splitlines()[1:]]


def test_format_summary_prints_vllm_rows_counts_whole_and_the_rest_to_two_decimals(tmp_path):
    t = _small_trace(tmp_path)
    text = format_summary(summarize(t))
    assert text.splitlines()[0] == f"trace {t.trace_id} (recorded), 1 point"
    assert _rows(text) == [*SMALL_TABLE, ("Valid requests", "2"), ("Flagged share", "0.0%")]
    assert all(line.startswith("  ") and line[38] == " " for line in text.splitlines()[1:])


def test_format_summary_of_a_streamed_folder_says_validity_was_not_checked(tmp_path):
    s = summarize_path(_folder(tmp_path), stream=True)
    assert s.valid_requests is None and s.flagged_share is None
    assert s.points[0].valid_requests is None
    rows = _rows(format_summary(s))
    assert rows == [*SMALL_TABLE, ("Valid requests", "not checked (trace streamed)")]


def test_format_summary_names_each_point_with_flagged_requests(tmp_path):
    """Point ``slow`` has 1 of its 2 successful requests flagged (10 tokens, 95 % of its life
    waiting for the first: a burst); ``ok`` none: only ``slow`` gets a line."""
    ok = vllm_bench_frames(tmp_path / "ok.json", {"batch_size": "1"}, data=small_result())
    d = small_result(output_lens=[10, 2, 0], ttfts=[0.95, 0.2, 0.0], latencies=[1.0, 0.6, 0.0]) | {
        "itls": [[0.005] * 9, [0.4], []]
    }
    slow = vllm_bench_frames(tmp_path / "slow.json", {"batch_size": "2"}, data=d)
    run = new_run_info(kind="recorded", commands=[], parameters={}, engine={})
    s = summarize(validate(concat([ok, slow], run)))
    shares = {p.point_id: (p.valid_requests, p.flagged_share) for p in s.points}
    assert shares == {"ok": (2, 0.0), "slow": (1, 0.5)}
    assert (s.valid_requests, s.flagged_share) == (3, 0.25)
    lines = format_summary(s).splitlines()
    assert [(r[0], r[1]) for r in _rows("\n".join(lines[:-1]))][-2:] == [
        ("Valid requests", "3"),
        ("Flagged share", "25.0%"),
    ]
    assert lines[-1] == "    point slow: 1 valid, 50.0% flagged"


# ----------------------------------------------------------------------------- the JSON


def test_point_scenario_keys_are_plain_python_and_missing_ones_none(tmp_path):
    d = summarize(_small_trace(tmp_path)).to_dict()
    p = d["points"][0]
    assert {k: p[k] for k in summary.SCENARIO_KEYS} == {
        "engine": "e",
        "config": "default",
        "batch_size": None,  # an online run: no fixed batch
        "concurrency": 2,
        "context_tokens": None,
        "num_gpus": None,
    }
    assert type(p["concurrency"]) is int
    assert json.loads(json.dumps(d)) == d  # no numpy scalar, no NaN


# ----------------------------------------------------------------------------- stream or not


@pytest.mark.parametrize("limit,streamed", [(3, False), (2, True)])
def test_a_folder_is_streamed_past_full_read_max_requests(tmp_path, monkeypatch, limit, streamed):
    """3 requests: read whole (and checked) at a limit of 3, streamed at 2."""
    path = _folder(tmp_path)
    monkeypatch.setattr(summary, "FULL_READ_MAX_REQUESTS", limit)
    s = summarize_path(path)
    assert (s.valid_requests is None) is streamed
    assert s.metrics.latency["p90_itl_ms"] == pytest.approx(370.0, rel=1e-12)  # exact both ways


def test_gaps_past_exact_itl_max_are_read_from_a_histogram(tmp_path, monkeypatch):
    """4 gaps (0.1 to 0.4 s): exact at a limit of 4; at 3 the folder is streamed and ITL's
    percentiles come from bin centres (within 0.05 %, no longer numpy's bit for bit)."""
    path = _folder(tmp_path)
    monkeypatch.setattr(summary, "EXACT_ITL_MAX", 4)
    exact = summarize_path(path)
    assert exact.valid_requests == 2 and exact.metrics.latency["p90_itl_ms"] == 370.00000000000006
    monkeypatch.setattr(summary, "EXACT_ITL_MAX", 3)
    approx = summarize_path(path)
    p90 = approx.metrics.latency["p90_itl_ms"]
    assert approx.valid_requests is None and p90 != exact.metrics.latency["p90_itl_ms"]
    assert p90 == pytest.approx(370.0, rel=summary.HIST_RATIO**0.5 - 1)
    assert approx.metrics.latency["mean_itl_ms"] == pytest.approx(250.0, rel=1e-12)
    assert approx.metrics.latency["p99_tpot_ms"] == pytest.approx(398.0, rel=1e-12)


def test_exactly_exact_itl_max_gaps_are_summarised_exactly(tmp_path, monkeypatch):
    """20 gaps of 10 ms on 3 requests (more gaps than request values to reuse the room of), the
    limit set to exactly 21 gaps: read whole, exact; 20 of them in the first request."""
    d = small_result(
        output_lens=[21, 2, 0], itls=[[0.01] * 20, [0.4], []], latencies=[0.3, 0.6, 0.0]
    )
    path = _folder(tmp_path, d)
    monkeypatch.setattr(summary, "EXACT_ITL_MAX", 21)
    for stream in (False, True):
        lat = summarize_path(path, stream=stream).metrics.latency
        assert lat["median_itl_ms"] == 10.0  # rank 10 of 21
        assert lat["p99_itl_ms"] == pytest.approx(10 + 390 * 0.8)  # rank 19.8: 0.8 to 400 ms
        assert lat["mean_itl_ms"] == pytest.approx((0.2 + 0.4) / 21 * 1000)


def test_in_memory_summary_by_histogram_keeps_points_apart(tmp_path, monkeypatch):
    """Two points, gaps (0.1, 0.2, 0.3 | 0.4 s) each: summarised from a histogram in memory too,
    each point its own gaps (the failed request's none)."""
    a = vllm_bench_frames(tmp_path / "a.json", {"batch_size": "1"}, data=small_result())
    d = small_result(itls=[[0.5, 0.5, 0.5], [0.9], []], latencies=[1.6, 1.1, 0.0])
    b = vllm_bench_frames(tmp_path / "b.json", {"batch_size": "2"}, data=d)
    t = validate(
        concat([a, b], new_run_info(kind="recorded", commands=[], parameters={}, engine={}))
    )
    monkeypatch.setattr(summary, "EXACT_ITL_MAX", 0)
    s = summarize(t)
    means = [p.metrics.latency["mean_itl_ms"] for p in s.points]
    assert means == pytest.approx([250.0, 600.0], rel=1e-12)
    assert s.metrics.latency["mean_itl_ms"] == pytest.approx(425.0, rel=1e-12)
    assert [p.metrics.latency["p99_itl_ms"] for p in s.points] == pytest.approx([397, 888], 5e-4)


# ----------------------------------------------------------------------------- the histogram


def test_histogram_of_a_point_without_gaps_is_zeros():
    hist = summary.GapHistogram(2)
    hist.add(np.zeros(2, np.int64), np.array([0.02, 0.04]))
    total, (one, none) = hist.stats((90.0,), 2)
    assert one == total and total["mean_itl_ms"] == pytest.approx(30.0)
    assert none == {k: 0.0 for k in total}


def test_histogram_reads_zero_gaps_within_half_a_microsecond_and_huge_ones_as_the_maximum():
    hist = summary.GapHistogram(2)
    hist.add(np.array([0, 0, 0, 1, 1]), np.array([0.0, 0.0, 0.01, 2e5, 3e5]))
    _, (small, huge) = hist.stats((100.0,), 2)
    assert small["median_itl_ms"] == pytest.approx(summary.HIST_LO_S / 2 * 1000)  # bin 0's
    assert small["p100_itl_ms"] == pytest.approx(10.0, rel=summary.HIST_RATIO**0.5 - 1)
    assert huge["median_itl_ms"] == huge["p100_itl_ms"] == 3e8  # past 1e5 s: the largest gap


def test_histogram_clamps_bin_centres_to_the_observed_gaps():
    """Equal gaps: every order statistic is the gap itself, not its bin's centre."""
    hist = summary.GapHistogram(1)
    hist.add(np.zeros(3, np.int64), np.full(3, 0.0123))
    hist.add(np.zeros(2, np.int64), np.full(2, 0.0123))
    total, _ = hist.stats((1.0, 99.0), 1)
    assert total["median_itl_ms"] == total["p1_itl_ms"] == total["p99_itl_ms"] == 12.3
    assert total["std_itl_ms"] == pytest.approx(0.0, abs=1e-12)


def test_histogram_bins_at_one_microsecond_and_at_1e5_seconds_have_centres():
    """1 us opens bin 1 and 1e5 s lies in the last closed bin: both read at their bin's centre
    (within 0.05 %), not at the clamp below or the largest gap above."""
    hist = summary.GapHistogram(2)
    hist.add(np.array([0, 0, 0, 1, 1, 1]), np.array([1e-6, 1e-6, 1e-3, 0.9992e5, 1e5, 2e5]))
    _, (low, high) = hist.stats((), 2)
    centre = summary.HIST_LO_S * summary.HIST_RATIO**0.5 * 1000  # bin 1's, in ms
    assert low["median_itl_ms"] == pytest.approx(centre, rel=1e-9) and centre > 1e-3
    assert high["median_itl_ms"] == pytest.approx(1e8, rel=summary.HIST_RATIO**0.5 - 1)
    assert 0.9993e8 < high["median_itl_ms"] < 2e8


def test_histogram_of_one_gap_is_that_gap():
    """One gap in all: mean and every order statistic that gap, std 0; ``stats`` reports only
    the first ``npoints`` points (the last, requests of no point, left out)."""
    hist = summary.GapHistogram(3)
    hist.add(np.array([1]), np.array([0.025]))
    total, per = hist.stats((99.0,), 2)
    assert len(per) == 2 and per[1] == total
    assert total["mean_itl_ms"] == total["median_itl_ms"] == total["p99_itl_ms"] == 25.0
    assert total["std_itl_ms"] == 0.0


def test_histogram_keeps_each_points_extremes_when_a_chunk_starts_and_ends_on_one_point():
    hist = summary.GapHistogram(2)
    hist.add(np.array([0, 1, 1, 0]), np.array([0.02, 0.001, 0.9, 0.02]))
    _, (a, b) = hist.stats((0.0, 100.0), 2)
    assert a["p0_itl_ms"] == a["p100_itl_ms"] == 20.0
    assert b["p0_itl_ms"] == pytest.approx(1.0, rel=summary.HIST_RATIO**0.5 - 1)
    assert b["p100_itl_ms"] == pytest.approx(900.0, rel=summary.HIST_RATIO**0.5 - 1)
    assert a["mean_itl_ms"] == pytest.approx(20.0) and b["mean_itl_ms"] == pytest.approx(450.5)


def test_histogram_merges_chunks_as_one():
    """Gaps added in three chunks, points interleaved: count, mean, std, min and max as if all
    at once (Chan et al.'s merge)."""
    rng = np.random.default_rng(3)
    vals, codes = rng.lognormal(-4, 1, 300), rng.integers(0, 3, 300)
    whole, parts = summary.GapHistogram(3), summary.GapHistogram(3)
    whole.add(codes, vals)
    for s in (slice(0, 50), slice(50, 51), slice(51, None)):
        parts.add(codes[s], vals[s])
    w, p = whole.stats((50.0, 100.0), 3), parts.stats((50.0, 100.0), 3)
    for a, b in zip([w[0], *w[1]], [p[0], *p[1]], strict=True):
        assert a == pytest.approx(b, rel=1e-12)
    for i, st in enumerate(w[1]):
        v = vals[codes == i] * 1000
        assert st["mean_itl_ms"] == pytest.approx(v.mean(), rel=1e-12)
        assert st["std_itl_ms"] == pytest.approx(v.std(), rel=1e-9)
        assert st["p100_itl_ms"] == pytest.approx(v.max(), rel=summary.HIST_RATIO**0.5 - 1)
        assert st["median_itl_ms"] == pytest.approx(np.median(v), rel=summary.HIST_RATIO - 1)


# ----------------------------------------------------------------------------- streamed checks


def test_streamed_tpot_skips_single_token_requests(tmp_path):
    """A successful request of 1 output token has no TPOT (vLLM's): TPOT of the other one."""
    d = small_result(output_lens=[4, 1, 0], itls=[[0.1, 0.2, 0.3], [], []])
    for s in (
        summarize(_small_trace(tmp_path, d=d)),
        summarize_path(_folder(tmp_path, d), stream=True),
    ):
        assert s.metrics.latency["mean_tpot_ms"] == pytest.approx(200.0)  # 0.6 s / 3
        assert s.metrics.latency["p99_tpot_ms"] == pytest.approx(200.0)
        assert s.metrics.completed == 2 and s.metrics.total_output == 5


def test_streamed_reader_names_the_first_unknown_point_in_order(tmp_path):
    path = _write_raw(tmp_path / "t", {"point_id": ["zz", "a", "yy"]})
    with pytest.raises(InputError) as err:
        summarize_path(path, stream=True)
    assert (err.value.field, err.value.problem) == (
        "requests.point_id",
        "point 'yy' is not in points.parquet",
    )


@pytest.mark.parametrize("row", [-1, 3])
def test_streamed_reader_refuses_a_gap_of_an_absent_request(tmp_path, row):
    path = _write_raw(tmp_path / "t", itl={"request_row": [0, row, 1]})
    with pytest.raises(InputError) as err:
        summarize_path(path, stream=True)
    assert (err.value.field, err.value.problem) == (
        "itl.request_row",
        "refers to a request row that is absent",
    )


def test_streamed_reader_takes_the_last_request_row_and_no_gaps(tmp_path):
    s = summarize_path(_write_raw(tmp_path / "t", itl={"request_row": [0, 1, 2]}), stream=True)
    assert s.metrics.latency["mean_itl_ms"] == pytest.approx(150.0)  # the failed one's dropped
    empty = {"request_row": pa.array([], pa.int64()), "itl_s": pa.array([], pa.float64())}
    s = summarize_path(_write_raw(tmp_path / "u", itl=empty), stream=True, chunk_rows=2)
    assert s.metrics.latency["mean_itl_ms"] == 0.0 and s.metrics.completed == 2
    assert s.metrics.latency["mean_tpot_ms"] == pytest.approx(300.0)  # (0.4/2 + 0.4/1) / 2 s


def test_a_trace_without_requests_summarises_to_zeros(tmp_path):
    """Every request left out (as ``traces.keep_rows`` may leave a trace): no division by zero,
    nothing valid, nothing flagged, the point still listed."""
    t = _small_trace(tmp_path)
    t.requests, t.itl = t.requests.iloc[:0], t.itl.iloc[:0]
    s = summarize(t)
    assert (s.valid_requests, s.flagged_share, s.metrics.completed) == (0, 0.0, 0)
    assert [(p.point_id, p.valid_requests, p.flagged_share) for p in s.points] == [("r", 0, 0.0)]
