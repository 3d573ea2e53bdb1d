"""Importer round trip: each format's trace is written, read back from disk, and every scenario
column compared with the source file's own fields, so swapping two columns fails."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from rackbook.core import importers, jsliteral, traces
from rackbook.errors import InputError

FIX = Path(__file__).parent / "fixtures"
URL = "https://github.com/o/r/blob/0123456789abcdef0123456789abcdef01234567/summary.csv"
#: published_points column -> InferenceX metric it is read from.
METRICS = {
    "input_tok_s_per_gpu": "input_tput_per_gpu",
    "output_tok_s_per_gpu": "output_tput_per_gpu",
    "tok_s_per_user": "median_intvty",
    "ttft_mean_s": "mean_ttft",
    "ttft_median_s": "median_ttft",
    "tpot_mean_s": "mean_tpot",
    "tpot_median_s": "median_tpot",
    "e2el_mean_s": "mean_e2el",
}


def _back(fmt, src, tmp_path, options):
    importers.write(fmt, src, tmp_path / "t", options)
    return traces.read_trace(tmp_path / "t")


def test_vllm_bench_round_trip(tmp_path):
    src = FIX / "vllm-bench-serve-b32.json"
    d = json.loads(src.read_text())
    labels = {"batch_size": "7", "decode_ranks": "3", "context_tokens": "5", "num_gpus": "2"}
    t = _back("vllm-bench", src, tmp_path, importers.Options(labels=labels))
    req, pt = t.requests, t.points.iloc[0]
    assert set(req["concurrency"]) == {d["max_concurrency"]} == {32}
    for k, v in labels.items():
        assert pt[k] == int(v)
        if k in req:
            assert set(req[k]) == {int(v)}
    assert req["prompt_tokens"].tolist() == d["input_lens"]
    assert req["output_tokens"].tolist() == d["output_lens"]
    assert req["ttft_s"].tolist() == d["ttfts"]
    assert req["e2el_s"].tolist() == d["latencies"]
    t0 = min(d["start_times"])
    assert req["start_time_s"].tolist() == pytest.approx([s - t0 for s in d["start_times"]])
    assert t.itl["itl_s"].tolist() == [g for gaps in d["itls"] for g in gaps]
    assert t.itl["request_row"].tolist() == [i for i, g in enumerate(d["itls"]) for _ in g]
    assert pt["duration_s"] == d["duration"] and pt["engine"] == d["backend"]


def test_offline_engine_round_trip(tmp_path):
    src = FIX / "offline-engine" / "example.json"
    d = json.loads(src.read_text())
    t = _back("offline-engine", src, tmp_path, importers.Options())
    pts = t.points
    rows = d["rows"]
    assert pts["batch_size"].tolist() == [r["batch_size"] for r in rows]
    assert pts["decode_ranks"].tolist() == [r["decode_ranks"] for r in rows]
    assert pts["concurrency"].isna().all()
    assert set(pts["num_gpus"]) == {d["hardware"]["gpu_count"]}
    for r, (_, g) in zip(rows, t.requests.groupby("point_id", sort=False), strict=True):
        assert len(g) == r["batch_size"] * r["decode_ranks"]
        assert set(g["prompt_tokens"]) == {r["input_tokens"]}
        assert set(g["output_tokens"]) == {r["output_tokens"]}
        ttft = r.get("prefill_s", r["total_s"] - r["decode_s"] if "total_s" in r else 0.0)
        assert g["ttft_s"].tolist() == pytest.approx([ttft] * len(g))
        assert g["e2el_s"].tolist() == pytest.approx([ttft + r["decode_s"]] * len(g))


def test_inferencex_round_trip(tmp_path):
    src = FIX / "published" / "inferencex-rows.json"
    rows = json.loads(src.read_text())
    pts = _back("inferencex", src, tmp_path, importers.Options()).extra["published_points"]
    assert len(pts) == len(rows)
    for r, (_, p) in zip(rows, pts.iterrows(), strict=True):
        m = r["metrics"]
        assert (p["isl"], p["osl"], p["concurrency"]) == (r["isl"], r["osl"], r["conc"])
        assert (p["hardware"], p["engine"]) == (r["hardware"], r["framework"])
        assert p["model"] == r["model"]
        assert p["precision"] == r["precision"]
        assert (None if pd.isna(p["engine_version"]) else p["engine_version"]) == r.get("image")
        assert (p["date"], p["url"]) == (r["date"], r["run_url"])
        assert p["tok_s_per_gpu"] == m["tput_per_gpu"]
        for col, key in METRICS.items():
            assert (None if pd.isna(p[col]) else p[col]) == m.get(key), col


def test_mlperf_round_trip(tmp_path):
    src = FIX / "published" / "mlperf-summary.csv"
    rows = [r for r in csv.DictReader(src.open()) if r["Units"] == "Tokens/s"]
    options = importers.Options(source_url=URL)
    pts = _back("mlperf", src, tmp_path, options).extra["published_points"]
    assert len(pts) == len(rows)
    for r, (_, p) in zip(rows, pts.iterrows(), strict=True):
        n = int(r["total_accelerators"])
        assert (p["gpus"], p["tok_s_total"]) == (n, float(r["Result"]))
        assert p["tok_s_per_gpu"] == float(r["Result"]) / n
        assert (p["submitter"], p["system"]) == (r["Organization"], r["SystemName"])
        assert (p["model"], p["scenario"]) == (r["Model"], r["Scenario"])
        assert p["hardware"] == r["accelerator_model_name"]
        assert p["precision"] == r["weight_data_types"]
        assert (p["engine"], p["engine_version"]) == (r["framework"], r["version"])
        assert p["category"] == f"{r['Division']}, {r['Availability']}"


def test_sglang_cookbook_round_trip(tmp_path):
    src = FIX / "published" / "sglang-v4-cells.jsx"
    cells = jsliteral.parse_js_export(src.read_text(), "benchmarks", src)
    speeds = [(c, s) for c in cells for s in c.get("speed") or []]
    pts = _back("sglang-cookbook", src, tmp_path, importers.Options(source_url=URL))
    pts = pts.extra["published_points"]
    assert len(pts) == len(speeds) > 0
    for (c, s), (_, p) in zip(speeds, pts.iterrows(), strict=True):
        wl = s["workload"]
        assert (p["isl"], p["osl"]) == (wl["isl"], wl["osl"])
        assert p["concurrency"] == wl["max_concurrency"]
        assert (p["hardware"], p["precision"]) == (c["match"]["hw"], c["match"]["quant"])
        assert p["tok_s_per_gpu"] == s["tokens_per_sec_per_gpu"]
        assert p["ttft_mean_s"] == pytest.approx(s["ttft_ms"] / 1000)
        assert p["tpot_mean_s"] == pytest.approx(s["tpot_ms"] / 1000)
        assert p["tok_s_per_user"] == pytest.approx(1000 / s["tpot_ms"])
        assert re.fullmatch(rf".*/c{wl['max_concurrency']}", p["point_id"])


def _na(values):
    return [None if pd.isna(v) else v for v in values]


def test_vllm_bench_every_column_written_is_read_back(tmp_path):
    """A hand result (3 requests, the last failed) written and read back, column by column."""
    from conftest import small_result

    d = small_result(backend="sglang", command="vllm bench serve --x", date="d1", num_prompts=3)
    d |= {"vllm_version": "0.9", "other": 1}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(d))
    labels = {"batch_size": "7", "context_tokens": "9", "gpu": "x"}
    t = _back("vllm-bench", src, tmp_path, importers.Options(labels=labels))
    req = t.requests
    assert list(req.columns) == [
        "request_id", "point_id", "engine", "config", "batch_size", "concurrency",
        "decode_ranks", "context_tokens", "start_time_s", "ttft_s", "e2el_s", "prompt_tokens",
        "cached_prompt_tokens", "output_tokens", "success", "error", "gpu",
    ]  # fmt: skip
    assert req["request_id"].tolist() == ["r/0", "r/1", "r/2"]
    assert set(req["point_id"]) == {"r"} and set(req["engine"]) == {"sglang"}
    assert set(req["config"]) == {"default"} and set(req["gpu"]) == {"x"}
    assert req["batch_size"].tolist() == [7, 7, 7]
    assert req["concurrency"].tolist() == [2, 2, 2]
    assert req["context_tokens"].tolist() == [9, 9, 9]
    assert _na(req["decode_ranks"]) == _na(req["cached_prompt_tokens"]) == [None] * 3
    assert req["start_time_s"].tolist() == [0.0, 0.5, 1.0]
    assert req["ttft_s"].tolist() == [0.1, 0.2, 0.0]
    assert req["e2el_s"].tolist() == [0.7, 0.6, 0.0]
    assert req["prompt_tokens"].tolist() == [10, 20, 30]
    assert req["output_tokens"].tolist() == [4, 2, 0]
    assert req["success"].tolist() == [True, True, False]
    assert req["error"].tolist() == ["", "", "boom"]
    assert t.itl.to_dict("list") == {"request_row": [0, 0, 0, 1], "itl_s": [0.1, 0.2, 0.3, 0.4]}
    pts = t.points.to_dict("list")
    assert {k: _na(v) for k, v in pts.items()} == {
        "point_id": ["r"], "engine": ["sglang"], "config": ["default"], "batch_size": [7],
        "concurrency": [2], "decode_ranks": [None], "context_tokens": [9],
        "window_start_s": [0.0], "duration_s": [2.0], "num_gpus": [None], "source": ["r.json"],
    }  # fmt: skip
    run = t.run
    assert (run["kind"], run["commands"], run["engine"]) == (
        "recorded",
        ["vllm bench serve --x"],
        {"name": "vllm", "version": "0.9"},
    )
    assert run["parameters"] == {
        "date": "d1", "backend": "sglang", "num_prompts": 3, "max_concurrency": 2
    }  # fmt: skip
    assert run["notes"] == "imported from r.json by `rackbook import vllm-bench`"
    assert run["hardware_note"] == (
        "hardware of the importing machine; the benchmark may have run elsewhere"
    )
    assert "generator" not in run and "declared" not in run["hardware"]


def _vllm_file(tmp_path, name="r.json", **overrides):
    import gzip

    from conftest import small_result

    src = tmp_path / name
    data = json.dumps(small_result(**overrides)).encode()
    src.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return src


def test_vllm_bench_defaults_when_the_result_names_no_backend_command_or_version(tmp_path):
    src = _vllm_file(tmp_path, "r.json.gz", version="0.8", max_concurrency=None, completed=None)
    t = importers.read("vllm-bench", src, "o", importers.Options(kind="synthetic"))
    assert t.run["commands"] == ["vllm bench serve (result file r.json.gz)"]
    assert t.run["engine"] == {"name": "vllm", "version": "0.8"}
    assert t.run["generator"] == {"name": "unknown (imported)", "seed": None}
    assert t.run["parameters"] == {"max_concurrency": None} and t.run["kind"] == "synthetic"
    assert set(t.requests["point_id"]) == {"r"} and t.requests["request_id"].tolist()[0] == "r/0"
    assert set(t.requests["engine"]) == {"vllm"} and t.points["source"].tolist() == ["r.json.gz"]
    assert t.requests["concurrency"].isna().all()
    assert importers.summary("vllm-bench", t) == f"3 requests, 4 gaps, trace_id {t.trace_id}"
    t = importers.read("vllm-bench", src, "o", importers.Options(kind="published"))
    assert "generator" not in t.run and t.run["kind"] == "published"


def test_vllm_bench_point_id_from_the_argument_else_the_label_else_the_file(tmp_path):
    from rackbook.core.importers.vllm_bench import vllm_bench_frames

    src = _vllm_file(tmp_path, "a.b.json")
    assert set(vllm_bench_frames(src).requests["point_id"]) == {"a.b"}
    t = vllm_bench_frames(src, {"point_id": "lab", "config": "c2", "engine": "e2"})
    assert t.points[["point_id", "engine", "config"]].values.tolist() == [["lab", "e2", "c2"]]
    t = vllm_bench_frames(src, {"point_id": "lab", "k": "v"}, point_id="arg")
    assert t.requests["request_id"].tolist() == ["arg/0", "arg/1", "arg/2"]
    assert "point_id" not in t.requests.columns[4:] and set(t.requests["k"]) == {"v"}
    assert list(t.requests.columns).count("point_id") == 1


def test_vllm_bench_a_failed_requests_gaps_and_its_success(tmp_path):
    from rackbook.core.importers.vllm_bench import vllm_bench_frames

    d = json.loads(_vllm_file(tmp_path).read_text())
    d.update(itls=[[0.1, 0.2, 0.3], [0.4], [0.05]], errors=["", None, "boom"])
    t = vllm_bench_frames(tmp_path / "r.json", data=d)
    assert t.itl.to_dict("list") == {"request_row": [0, 0, 0, 1], "itl_s": [0.1, 0.2, 0.3, 0.4]}
    assert t.requests["success"].tolist() == [True, True, False]
    assert t.requests["error"].tolist() == ["", "", "boom"]
    # no error text, yet no time and no token: not a success (vLLM's own rule)
    d.update(itls=[[0.1, 0.2, 0.3], [], []], errors=["", "", ""], completed=1)
    d.update(latencies=[0.7, 0.0, 0.0], output_lens=[4, 0, 0], ttfts=[0.1, 0.0, 0.0])
    t = vllm_bench_frames(tmp_path / "r.json", data=d)
    assert t.requests["success"].tolist() == [True, False, False]
    d.update(latencies=[0.7, 0.0, 0.5], output_lens=[4, 1, 0], completed=3)
    t = vllm_bench_frames(tmp_path / "r.json", data=d)
    assert t.requests["success"].tolist() == [True, True, True]
    # no start times: starts unknown (NaN), none shifted
    d.pop("start_times")
    assert vllm_bench_frames(tmp_path / "r.json", data=d).requests["start_time_s"].isna().all()


def test_vllm_bench_declared_gpus_are_the_points_gpus(tmp_path):
    src = _vllm_file(tmp_path)
    hw = importers.DeclaredGpus("b300", "B300", "NVIDIA B300", 4, "data/hardware.yaml")
    t = importers.read("vllm-bench", src, "o", importers.Options(hardware=hw))
    machine = t.run["hardware"]["importing_machine"]
    assert t.run["hardware"] == {
        "gpus": [{"name": "B300", "catalog_id": "b300"}] * 4,
        "hosts": None,
        "declared": {
            "gpu": "b300", "name": "NVIDIA B300", "count": 4, "catalog": "data/hardware.yaml",
            "by": "the user, at import (rackbook import --gpu ID --gpus N); not probed",
        },
        "importing_machine": machine,
        "note": "the GPUs the benchmark ran on as the user declared them; the machine that "
        "imported it is hardware.importing_machine",
    }  # fmt: skip
    assert "cpu_cores" in machine and "hardware_note" not in t.run
    assert t.points["num_gpus"].tolist() == [4]
    assert importers.summary("vllm-bench", t) == (
        f"3 requests, 4 gaps, trace_id {t.trace_id}, on 4 x B300 (declared at import)"
    )
    same = importers.Options(hardware=hw, labels={"num_gpus": "4"})
    assert importers.read("vllm-bench", src, "o", same).points["num_gpus"].tolist() == [4]
    with pytest.raises(InputError) as exc:
        importers.read(
            "vllm-bench", src, "o", importers.Options(hardware=hw, labels={"num_gpus": "2"})
        )
    assert str(exc.value) == f"{src}: --gpus: 4 differs from --label num_gpus=2"


@pytest.mark.parametrize(
    ("labels", "field", "problem"),
    [
        ({"batch_size": "x"}, "label batch_size", "must be an integer"),
        ({"num_gpus": "1.5"}, "label num_gpus", "must be an integer"),
        ({"decode_ranks": "0"}, "label decode_ranks", "must be a positive integer"),
        ({"ttft_s": "1"}, "label ttft_s", "is a measured field: a label never replaces it"),
        ({"request_id": "1"}, "label request_id", "is a measured field: a label never replaces it"),
    ],
)
def test_vllm_bench_a_bad_label_is_one_line(tmp_path, labels, field, problem):
    from rackbook.core.importers.vllm_bench import vllm_bench_frames

    src = _vllm_file(tmp_path)
    with pytest.raises(InputError) as exc:
        vllm_bench_frames(src, labels)
    assert str(exc.value) == f"{src}: {field}: {problem}"


def test_vllm_bench_one_decode_rank_and_the_concurrency_bound(tmp_path, monkeypatch):
    from rackbook import limits
    from rackbook.core.importers.vllm_bench import vllm_bench_frames

    src = _vllm_file(tmp_path, max_concurrency=5)
    t = vllm_bench_frames(src, {"decode_ranks": "1", "concurrency": "3"})
    assert t.points[["decode_ranks", "concurrency"]].values.tolist() == [[1, 3]]
    monkeypatch.setitem(limits.BOUNDS, "concurrency", 5)
    assert vllm_bench_frames(src).points["concurrency"].tolist() == [5]
    monkeypatch.setitem(limits.BOUNDS, "concurrency", 4)
    with pytest.raises(InputError) as exc:
        vllm_bench_frames(src)
    assert str(exc.value) == (
        f"{src}: max_concurrency: 5 is too large: at most 4 (rackbook's concurrency bound)"
    )


VLLM_REFUSED = [  # (change to the hand result, field, problem): each one full line
    ({"itls": [[0.1], 0.4, []]}, "itls[1]", "must be a list of seconds"),
    ({"itls": [[0.1, "a"], [0.4], []]}, "itls[1]", "not a number"),
    ({"itls": [[0.1], [-0.4], []]}, "itls[1]", "negative value"),
    ({"itls": "x"}, "itls", "must be a list of 3 lists (one per request)"),
    ({"itls": [[0.1], [0.4]]}, "itls", "must be a list of 3 lists (one per request)"),
    ({"errors": "x"}, "errors", "must be a list of 3 strings"),
    ({"errors": ["", ""]}, "errors", "must be a list of 3 strings"),
    ({"input_lens": "x"}, "input_lens", "must be a list"),
    ({"input_lens": []}, "input_lens", "no requests: every per-request list is empty"),
    ({"ttfts": {"a": 1}}, "ttfts", "must be a list, got dict"),
    ({"ttfts": [0.1, 0.2]}, "ttfts", "has 2 entries, expected 3 (one per request)"),
    ({"output_lens": [4, None, 0]}, "output_lens[1]", "non-finite value (NaN or infinite)"),
    ({"output_lens": [4, "two", 0]}, "output_lens[1]", "not a number"),
    ({"output_lens": [[4], [2], [0]]}, "output_lens", "must be a flat list of numbers"),
    ({"output_lens": [4, 2.5, 0]}, "output_lens[1]", "not an integer"),
    ({"output_lens": [4, 2, 0.5]}, "output_lens[2]", "not an integer"),
    ({"start_times": [1.0, "x", 2.0]}, "start_times[1]", "not a number"),
    ({"start_times": [1.0, 2.0]}, "start_times", "has 2 entries, expected 3 (one per request)"),
    ({"completed": 3}, "completed", "says 3 but 2 requests have no error"),
    ({"input_lens": [10, 1e12, 30]}, "input_lens[1]", "implausibly large token count (over 1e+10)"),
    ({"ttfts": [0.1, 1e12, 0.0]}, "ttfts[1]", "larger than the request's end-to-end latency"),
    ({"latencies": [0.7, float("inf"), 0.0]}, "latencies[1]", "non-finite value (NaN or infinite)"),
    ({"duration": None}, "duration", "missing"),
    ({"max_concurrency": 1.5}, "max_concurrency", "not an integer (1.5)"),
]


@pytest.mark.parametrize(("change", "field", "problem"), VLLM_REFUSED)
def test_vllm_bench_each_refusal_is_one_full_line(tmp_path, change, field, problem):
    from conftest import small_result

    from rackbook.core.importers.vllm_bench import vllm_bench_frames

    with pytest.raises(InputError) as exc:
        vllm_bench_frames(tmp_path / "r.json", data=small_result(**change))
    assert str(exc.value) == f"{tmp_path / 'r.json'}: {field}: {problem}"


def test_vllm_bench_a_missing_array_and_a_top_level_that_is_no_object(tmp_path):
    from conftest import small_result

    from rackbook.core.importers.vllm_bench import vllm_bench_frames

    src = tmp_path / "r.json"
    d = small_result()
    del d["errors"], d["itls"]
    with pytest.raises(InputError) as exc:
        vllm_bench_frames(src, data=d)
    assert str(exc.value) == f"{src}: itls: missing per-request array"
    del d["ttfts"]
    with pytest.raises(InputError) as exc:
        vllm_bench_frames(src, data=d)
    assert str(exc.value) == (
        f"{src}: ttfts: missing per-request array (rerun vllm bench serve with --save-detailed)"
    )
    with pytest.raises(InputError) as exc:
        vllm_bench_frames(src, data=[1])
    assert str(exc.value) == f"{src}: -: top level must be a JSON object, got list"
