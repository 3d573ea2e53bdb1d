"""`rackbook import offline-engine`: an offline engine's fixed-batch results as engine B of the
decode-parity chapter. The mapping onto the chapter's throughput definitions is checked by hand,
every bad input is one line and writes nothing, and a trace of engine A alone or of both
engines from two traces builds the chapter."""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import re
from pathlib import Path

import pytest
from conftest import synthetic_trace

from rackbook import paths
from rackbook.core import importers, traces
from rackbook.core.importers.vllm_bench import vllm_bench_frames
from rackbook.errors import InputError
from rackbook.results import decode_parity


def _imported(src: Path, out: Path, engine: str | None = None) -> traces.Trace:
    """``rackbook import offline-engine SRC -o OUT [--engine ENGINE]``, the trace read back."""
    importers.write("offline-engine", src, out, importers.Options(engine=engine))
    return traces.read_trace(out)


FIXTURE = Path(__file__).parent / "fixtures" / "offline-engine" / "example.json"


def _example() -> dict:
    return json.loads(FIXTURE.read_text())


def test_the_example_is_what_its_generator_writes():
    """The fixture is synthetic and reproducible: its generator and seed are stated in it."""
    spec = importlib.util.spec_from_file_location(
        "make_example", FIXTURE.with_name("make_example.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.example() == _example()
    assert _example()["generator"] == {
        "name": "tests/fixtures/offline-engine/make_example.py",
        "seed": 7,
    }


def test_import_maps_rows_onto_the_chapters_definitions(tmp_path, run_cli):
    out = tmp_path / "b"
    code, stdout, err = run_cli("import", "offline-engine", str(FIXTURE), "-o", str(out))
    assert code == 0, err
    assert "3 points, 112 requests (synthetic)" in stdout  # 2 ranks x (8 + 16 + 32) requests
    t = traces.read_trace(out)
    assert t.kind == "synthetic" and t.run["generator"]["seed"] == 7
    pts = t.points.set_index("point_id")
    assert pts.loc["example-offline-b16", ["batch_size", "decode_ranks"]].tolist() == [16, 2]
    assert pts["duration_s"].tolist() == pytest.approx([0.256 + 0.4092, 1.028, 0.6971])
    table = decode_parity.throughput_table(t).set_index("batch")
    # per rank: batch x (output_tokens - 1) / decode_s; prefill: batch x input / prefill_s
    assert table.loc[8, "decode_tok_s"] == pytest.approx(8 * 31 / 0.4092)
    assert table.loc[32, "decode_tok_s"] == pytest.approx(32 * 31 / 0.6971)
    assert table.loc[32, "decode_tok_s_total"] == pytest.approx(2 * 32 * 31 / 0.6971)
    assert table.loc[8, "prefill_tok_s"] == pytest.approx(8 * 64 / 0.256)
    assert table.loc[16, "prefill_tok_s"] == pytest.approx(16 * 64 / (1.028 - 0.516))
    assert table.loc[32, "prefill_tok_s"] != table.loc[32, "prefill_tok_s"]  # not reported: NaN
    assert table.loc[8, "tpot_ms"] == pytest.approx(1000 * 0.4092 / 31)


def test_provenance_records_the_origin(tmp_path):
    """A file without a generator is a real run: kind recorded, the import command, the file's
    SHA-256 and its own command, and the hardware the file states (not this machine's)."""
    d = _example()
    del d["generator"]
    d.update(
        engine="deepinfer",
        model="deepseek-ai/DeepSeek-V4.1-Flash",
        hardware={"gpu_id": "gb300", "gpu_count": 64},
        command="deepinfer-bench --batch 8 --dep 64",
    )
    for r in d["rows"]:
        r["decode_ranks"] = 64
    src = tmp_path / "deepinfer.json"
    src.write_text(json.dumps(d))
    t = _imported(src, tmp_path / "b")
    assert t.kind == "recorded"
    assert t.run["commands"] == [
        f"rackbook import offline-engine {src} -o {tmp_path / 'b'}",
        "deepinfer-bench --batch 8 --dep 64",
    ]
    assert t.run["source_file"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert t.run["source_file"]["format"] == "rackbook-offline-engine/1"
    assert t.run["engine"] == {"name": "deepinfer", "version": "0.0-synthetic"}
    assert [g["name"] for g in t.run["hardware"]["gpus"]] == ["gb300"] * 64
    assert t.run["parameters"]["batch_sizes"] == [8, 16, 32]
    assert decode_parity.can_test(t.run, "deepinfer")


def _edit(path: str, value: object) -> dict:
    """The example with ``path`` (``a.b[1].c``) set to ``value`` (``...``: deleted)."""
    d = copy.deepcopy(_example())
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    obj = d
    for k in keys[:-1]:
        obj = obj[k]
    if value is ...:
        del obj[keys[-1]]
    else:
        obj[keys[-1]] = value
    return d


BAD = [
    ("rows[1].decode_s", -1.5, "rows[1].decode_s: must be > 0, got -1.5"),
    ("rows[1].decode_s", "fast", "rows[1].decode_s: not a number ('fast')"),
    ("rows[0].decode_s", float("inf"), "rows[0].decode_s: non-finite value"),
    ("rows[2].batch_size", 8.5, "rows[2].batch_size: not an integer (8.5)"),
    ("rows[0].decode_ranks", 0, "rows[0].decode_ranks: must be > 0, got 0"),
    ("rows[0].output_tokens", ..., "rows[0].output_tokens: missing"),
    ("rows[0].output_tokens", 1, "rows[0].output_tokens: must be >= 2"),
    ("rows[1].total_s", 0.2, "rows[1].total_s: smaller than decode_s"),
    ("rows[0].total_s", 0.5, "rows[0].total_s: smaller than prefill_s + decode_s"),
    ("rows[0].decode_sec", 1.0, "rows[0].decode_sec: unknown key"),
    ("rows[2].batch_size", 8, "rows[2]: a second row for batch_size 8 on 2 decode ranks"),
    ("rows", [], "rows: must be a non-empty list"),
    ("schema_version", 2, "schema_version: 2 is not one of 1"),
    ("format", "csv", "format: must be 'rackbook-offline-engine'"),
    ("engine", "", "engine: must be a non-empty string"),
    ("hardware.gpu_count", 0, "hardware.gpu_count: must be > 0, got 0"),
    ("generator", {"name": "x"}, "run.json.generator: a synthetic trace must name its generator"),
    ("gpu", "gb300", "gpu: unknown key"),
]


@pytest.mark.parametrize("path,value,problem", BAD, ids=[f"{p}={v!r}" for p, v, _ in BAD])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, run_cli, path, value, problem):
    src = tmp_path / "in.json"
    src.write_text(json.dumps(_edit(path, value)))
    out = tmp_path / "out"
    code, stdout, err = run_cli("import", "offline-engine", str(src), "-o", str(out))
    assert code == 2 and stdout == ""
    assert err.startswith(f"error: {src}: {problem}") and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv,problem",
    [
        (["offline-engine", "IN", "--label", "a=b"], "--label: not for offline-engine"),
        (["offline-engine", "IN", "--kind", "recorded"], "--kind: not for offline-engine"),
        (["vllm-bench", "IN", "--engine", "deepinfer"], "--engine: only for offline-engine"),
    ],
)
def test_options_that_do_not_fit_the_format(tmp_path, run_cli, argv, problem):
    argv = [str(FIXTURE) if a == "IN" else a for a in argv]
    code, _, err = run_cli("import", *argv, "-o", str(tmp_path / "out"))
    assert code == 2 and problem in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_the_format_documented_in_the_book_is_the_one_read(tmp_path):
    """Every example file in book/rerun.md imports."""
    text = (paths.ROOT / "book" / "rerun.md").read_text()
    blocks = [b for b in re.findall(r"```json\n(.*?)```", text, re.S) if FORMAT_KEY in b]
    assert blocks
    for i, b in enumerate(blocks):
        src = tmp_path / f"doc{i}.json"
        src.write_text(b)
        t = _imported(src, tmp_path / f"t{i}", engine="deepinfer")
        assert set(t.points["engine"]) == {"deepinfer"}


FORMAT_KEY = '"format": "rackbook-offline-engine"'


# ----------------------------------------------------------------------------- in the chapter


def _engine_a(tmp_path, ranks: int, batches: dict[int, float]):
    """Engine A on ``ranks`` decode ranks: per batch b per rank, 2 requests of 11 output tokens,
    TTFT 0.1 s, latency ``batches[b]``; client concurrency b x ranks."""
    frames = []
    for b, lat in batches.items():
        d = {
            "duration": 10.0,
            "max_concurrency": b * ranks,
            "input_lens": [100, 100],
            "output_lens": [11, 11],
            "ttfts": [0.1, 0.1],
            "latencies": [lat, lat],
            "itls": [[(lat - 0.1) / 10] * 10] * 2,
            "start_times": [0.0, 0.0],
            "errors": ["", ""],
        }
        labels = {"engine": "vllm-serve", "decode_ranks": str(ranks)}
        frames.append(vllm_bench_frames(tmp_path / f"a{b}.json", labels, f"a-b{b}", data=d))
    return synthetic_trace(frames)


def test_engine_b_from_its_own_trace_at_equal_batch_per_rank(tmp_path):
    """A on 64 ranks at concurrency 512 is batch 8 per rank: 8 x 20 / 2.0 = 80 tok/s per rank.
    B (imported, 2 ranks) at batch 8 per rank: 8 x 31 / 0.4092 = 606.06 tok/s per rank."""
    a = _engine_a(tmp_path, 64, {8: 1.1, 64: 1.1})
    b = _imported(FIXTURE, tmp_path / "b")
    assert a.points["concurrency"].tolist() == [512, 4096]
    params = decode_parity.Params(engine_b="example-offline", batch_sizes=[8, 16, 32, 64])
    an = decode_parity.analyse(a, params, trace_b=b)
    dec = an.decode
    assert dec["batch"].tolist() == [8]  # the only batch per rank both measured
    assert dec[["ranks_a", "ranks_b"]].iloc[0].tolist() == [64, 2]
    assert dec["a"].iloc[0] == pytest.approx(80.0)
    assert dec["b"].iloc[0] == pytest.approx(8 * 31 / 0.4092)
    assert dec["gap_pct"].iloc[0] == pytest.approx(100 * (80 / (8 * 31 / 0.4092) - 1))
    out = decode_parity.outcome(an)
    assert out.trace_ids == [a.trace_id, b.trace_id]
    assert "engine B: 2 x example-gpu" in an.hardware
    run = out.reading("decode-parity.gap", "this run")
    assert run.verdict == "untested"  # synthetic, not Blackwell: a stand-in


def test_engine_a_alone_names_the_missing_engine_b(tmp_path):
    an = decode_parity.analyse(_engine_a(tmp_path, 1, {8: 1.1}))
    assert an.decode.empty and len(an.table) == 1
    run = decode_parity.outcome(an).reading("decode-parity.gap", "this run")
    assert run.verdict == "untested"
    assert run.reason == (
        "no engine-B points (vllm-offline): record an offline engine or import its results "
        "with `rackbook import offline-engine`"
    )


def test_an_older_trace_reads_as_one_rank(tmp_path):
    """A trace written before decode_ranks existed: its points are on one rank, and the batch of
    an online point is its concurrency."""
    t = _engine_a(tmp_path, 1, {8: 1.1})
    old = t.points.drop(columns=["decode_ranks"])
    assert traces.point_decode_ranks(old).tolist() == [1]
    assert traces.point_rank_batch(old).tolist() == [8]


def test_import_rejects_a_decode_ranks_label_below_one(tmp_path):
    d = {"duration": 1.0, "input_lens": [8], "output_lens": [2], "ttfts": [0.1], "itls": [[0.1]],
         "latencies": [0.2], "errors": [""]}  # fmt: skip
    with pytest.raises(InputError, match="label decode_ranks: must be a positive integer"):
        vllm_bench_frames(tmp_path / "r.json", {"decode_ranks": "0"}, data=d)


def _hand_file(tmp_path: Path, **top) -> Path:
    """Three rows: batch 2 on one and on two ranks (prefill_s, total_s), batch 3 (neither)."""
    d = {
        "format": "rackbook-offline-engine", "schema_version": 1, "engine": " eng ",
        "engine_version": "1.0 ", "model": " m/x ", "hardware": {"gpu_id": " g1 ", "gpu_count": 2},
        "notes": "n1", "date": "2026-01-01", "source": "s",
        "rows": [
            {"batch_size": 2, "decode_ranks": 1, "input_tokens": 10, "output_tokens": 5,
             "decode_s": 0.5, "prefill_s": 0.25},
            {"batch_size": 2, "decode_ranks": 2, "input_tokens": 10, "output_tokens": 5,
             "decode_s": 0.75, "total_s": 1.0},
            {"batch_size": 3, "input_tokens": 20, "output_tokens": 2, "decode_s": 0.125},
        ],
    } | top  # fmt: skip
    src = tmp_path / "e.json"
    src.write_text(json.dumps(d))
    return src


def test_every_column_of_a_hand_file_by_the_formulas(tmp_path):
    """ttft = prefill_s, else total_s - decode_s, else 0; e2el = ttft + decode_s; duration =
    total_s, else ttft + decode_s; batch x ranks identical requests per row."""
    src = _hand_file(tmp_path)
    t = importers.read("offline-engine", src, tmp_path / "o", importers.Options(command="C"))
    req = t.requests.to_dict("list")
    ids = ["eng-b2-r1"] * 2 + ["eng-b2-r2"] * 4 + ["eng-b3"] * 3
    assert req.pop("request_id") == [
        f"{p}/{i}" for p, i in zip(ids, [0, 1, 0, 1, 2, 3, 0, 1, 2], strict=True)
    ]
    assert req.pop("concurrency") == [None] * 9
    assert req == {
        "point_id": ids, "engine": ["eng"] * 9, "config": ["m/x"] * 9,
        "batch_size": [2] * 6 + [3] * 3, "decode_ranks": [1, 1, 2, 2, 2, 2, 1, 1, 1],
        "start_time_s": [0.0] * 9, "ttft_s": [0.25] * 6 + [0.0] * 3,
        "e2el_s": [0.75] * 2 + [1.0] * 4 + [0.125] * 3, "prompt_tokens": [10] * 6 + [20] * 3,
        "output_tokens": [5] * 6 + [2] * 3, "success": [True] * 9, "error": [""] * 9,
    }  # fmt: skip
    pts = t.points.to_dict("list")
    assert pts.pop("concurrency") == [None] * 3
    assert pts == {
        "point_id": ["eng-b2-r1", "eng-b2-r2", "eng-b3"], "engine": ["eng"] * 3,
        "config": ["m/x"] * 3, "batch_size": [2, 2, 3], "decode_ranks": [1, 2, 1],
        "window_start_s": [0.0] * 3, "duration_s": [0.75, 1.0, 0.125], "num_gpus": [2] * 3,
        "source": ["e.json"] * 3,
    }  # fmt: skip
    assert t.itl.empty and list(t.itl.columns) == ["request_row", "itl_s"]
    raw = src.read_bytes()
    run = t.run
    assert (run["kind"], run["commands"], run["recorded_by"] is not None) == (
        "recorded",
        ["C"],
        True,
    )
    assert run["engine"] == {"name": "eng", "version": "1.0"}
    assert run["parameters"] == {
        "model": "m/x", "batch_sizes": [2, 2, 3], "decode_ranks": [1, 2, 1], "source": "s",
        "date": "2026-01-01",
    }  # fmt: skip
    assert run["notes"] == "imported from e.json by `rackbook import offline-engine`; n1"
    assert run["source_file"] == {
        "name": "e.json", "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest(),
        "format": "rackbook-offline-engine/1",
    }  # fmt: skip
    assert run["hardware"] == {
        "gpus": [{"name": "g1"}, {"name": "g1"}], "hosts": None,
        "note": "as stated in e.json; not measured by the importing machine",
    }  # fmt: skip
    assert "generator" not in run
    assert importers.summary("offline-engine", t) == (
        f"3 points, 9 requests (recorded), trace_id {t.trace_id}"
    )
    # --engine names the points; no notes: the import's own note alone
    src = _hand_file(tmp_path, notes=None, command="bench --x")
    t = importers.read("offline-engine", src, "o", importers.Options(engine=" b ", command="C"))
    assert set(t.points["engine"]) == {"b"} and t.points["point_id"][0] == "b-b2-r1"
    assert t.run["engine"]["name"] == "eng" and t.run["commands"] == ["C", "bench --x"]
    assert t.run["notes"] == "imported from e.json by `rackbook import offline-engine`"


@pytest.mark.parametrize(
    ("top", "line"),
    [
        ({"rows": "x"}, "rows: must be a non-empty list of objects"),
        ({"rows": [1]}, "rows[0]: must be an object"),
        ({"format": None}, "format: must be 'rackbook-offline-engine', got None"),
        ({"format": "csv"}, "format: must be 'rackbook-offline-engine', got 'csv'"),
        ({"schema_version": None}, "schema_version: None is not one of 1"),
        ({"hardware": None}, "hardware: missing"),
        ({"hardware": {"gpu_count": 2}}, "hardware.gpu_id: missing"),
        ({"hardware": {"gpu_id": "g", "gpu_count": 2.5}},
         "hardware.gpu_count: not an integer (2.5)"),
        ({"notes": ""}, "notes: must be a non-empty string, got ''"),
        ({"model": None}, "model: missing"),
        ({"extra": 1, "zz": 2},
         "extra: unknown key; known: engine, engine_version, model, command, "
         "source, date, notes, format, schema_version, hardware, generator, rows"),
    ],
)  # fmt: skip
def test_a_bad_header_is_one_line_naming_its_field(tmp_path, top, line):
    src = _hand_file(tmp_path, **top)
    with pytest.raises(InputError) as exc:
        importers.read("offline-engine", src, "o", importers.Options())
    assert str(exc.value) == f"{src}: {line}"


def test_rows_within_their_bounds_and_times_that_add_up(tmp_path, monkeypatch):
    from rackbook import limits

    ok = {"batch_size": 4, "input_tokens": 8, "output_tokens": 2, "decode_s": 1.0}
    within = [
        ok | {"prefill_s": 0.5, "total_s": 1.5 - 1e-9},
        ok | {"batch_size": 2, "total_s": 1.0},
    ]
    src = _hand_file(tmp_path, rows=within)
    t = importers.read("offline-engine", src, "o", importers.Options())
    assert t.points["duration_s"].tolist() == [1.5 - 1e-9, 1.0]
    assert t.points["point_id"].tolist() == ["eng-b4", "eng-b2"]  # one rank each: no -r
    cases = [
        ([ok | {"prefill_s": 0.5, "total_s": 1.5 - 2e-9}],
         "rows[0].total_s: smaller than prefill_s + decode_s"),
        ([ok | {"total_s": 1.0 - 2e-9}], "rows[0].total_s: smaller than decode_s"),
        ([ok, ok | {"decode_ranks": 1}],
         "rows[1]: a second row for batch_size 4 on 1 decode ranks"),
        ([ok | {"prefill_s": 0}], "rows[0].prefill_s: must be > 0, got 0"),
        ([ok | {"input_tokens": 0}], "rows[0].input_tokens: must be > 0, got 0"),
    ]  # fmt: skip
    for rows, line in cases:
        src = _hand_file(tmp_path, rows=rows)
        with pytest.raises(InputError) as exc:
            importers.read("offline-engine", src, "o", importers.Options())
        assert str(exc.value) == f"{src}: {line}"
    monkeypatch.setitem(limits.BOUNDS, "requests", 8)
    src = _hand_file(tmp_path, rows=[ok | {"decode_ranks": 2}])  # 4 x 2 = 8 requests: at the bound
    assert len(importers.read("offline-engine", src, "o", importers.Options()).requests) == 8
    src = _hand_file(tmp_path, rows=[ok | {"decode_ranks": 2}, ok | {"batch_size": 1}])
    with pytest.raises(InputError) as exc:
        importers.read("offline-engine", src, "o", importers.Options())
    assert str(exc.value) == (
        f"{src}: rows (batch_size x decode_ranks, summed): 9 is too large: at most 8 "
        "(rackbook's requests bound)"
    )
    for key, bound in (("batch_size", "batch_size"), ("decode_ranks", "decode_ranks"),
                       ("output_tokens", "context"), ("input_tokens", "context")):  # fmt: skip
        monkeypatch.setitem(limits.BOUNDS, bound, 3)
        src = _hand_file(tmp_path, rows=[ok | {"input_tokens": 2, "decode_ranks": 1, key: 4}])
        with pytest.raises(InputError) as exc:
            importers.read("offline-engine", src, "o", importers.Options())
        assert str(exc.value) == (
            f"{src}: rows[0].{key}: 4 is too large: at most 3 (rackbook's {bound} bound)"
        )
        monkeypatch.undo()
    monkeypatch.setitem(limits.BOUNDS, "gpus", 1)
    src = _hand_file(tmp_path)
    with pytest.raises(InputError) as exc:
        importers.read("offline-engine", src, "o", importers.Options())
    assert str(exc.value) == (
        f"{src}: hardware.gpu_count: 2 is too large: at most 1 (rackbook's gpus bound)"
    )


def test_a_top_level_that_is_no_object_is_named(tmp_path):
    src = tmp_path / "e.json"
    src.write_text("[1, 2]")
    with pytest.raises(InputError) as exc:
        importers.read("offline-engine", src, "o", importers.Options())
    assert str(exc.value) == f"{src}: -: top level must be a JSON object, got list"


def test_a_blank_engine_label_is_refused_by_its_flag(tmp_path):
    src = _hand_file(tmp_path)
    with pytest.raises(InputError) as exc:
        importers.read("offline-engine", src, "o", importers.Options(engine=" "))
    assert str(exc.value) == f"{src}: --engine: must be a non-empty string, got ' '"
