"""Published evidence: the three importers on slices of the real files (tests/fixtures/published,
URLs in SOURCES.txt there), their bad inputs, the published_points table checks, the figure
registry, the shipped traces' rebuild, and the published-evidence readings of every claim."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rackbook import paths
from rackbook.core import importers, jsliteral, traces
from rackbook.core.importers import inferencex, mlperf, points
from rackbook.errors import InputError
from rackbook.inputs import claims, loader
from rackbook.inputs import claims as figures
from rackbook.results import evidence, published_rows

FIX = Path(__file__).parent / "fixtures" / "published"
SOURCES = paths.DATA / "published" / "sources"
IX_URL = (
    "https://github.com/SemiAnalysisAI/InferenceX-app/blob/"
    "3a600f1d9ce155536d52e2f58f744f27a301aac9/packages/app/cypress/fixtures/api/benchmarks.json"
)
ML_URL = (
    "https://github.com/mlcommons/inference_results_v6.1/blob/"
    "7bf15fd8089655a71fb75c81a744d7ba5a632424/summary.csv"
)
SG_URL = (
    "https://github.com/sgl-project/sglang/blob/08587007c81585756076d965a3af856ac620f1b9/"
    "docs_new/src/snippets/configs/deepseek-ai/deepseek-v4-benchmarks.jsx"
)


def _points(out: Path) -> pd.DataFrame:
    return traces.read_trace(out).extra["published_points"].set_index("point_id")


# ----------------------------------------------------------------------------- InferenceX


def test_inferencex_rows_become_points(tmp_path, run_cli):
    out = tmp_path / "ix"
    src = FIX / "inferencex-rows.json"
    code, stdout, err = run_cli("import", "inferencex", str(src), "-o", str(out))
    assert code == 0, err
    assert "3 published points" in stdout
    t = traces.read_trace(out)
    assert t.kind == "published" and t.requests.empty and t.itl.empty and t.points.empty
    p = t.extra["published_points"]
    # as stored: tput_per_gpu, run links, dates
    assert p["tok_s_per_gpu"].tolist() == pytest.approx(
        [180.65719659379948, 60.45934990269039, 1544.4732259993664]
    )
    assert p["per_gpu_basis"].str.startswith("as published").all()
    assert (
        p["url"][2]
        == "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/23438524239/attempts/5"
    )
    assert p["date"].tolist() == ["2026-02-27", "2025-10-06", "2026-03-23"]
    # aggregated row: one pool of 4 GPUs; disaggregated: 4 prefill + 32 decode
    assert p["gpus"].tolist() == [4, 4, 36]
    assert p["serving"].tolist() == ["aggregated", "aggregated", "disaggregated"]
    assert pd.isna(p["prefill_gpus"][0]) and (p["prefill_gpus"][2], p["decode_gpus"][2]) == (4, 32)
    # the input/output split is optional (row 1 has none)
    assert p["input_tok_s_per_gpu"][0] == pytest.approx(90.76813862503164)
    assert pd.isna(p["input_tok_s_per_gpu"][1]) and pd.isna(p["output_tok_s_per_gpu"][1])
    assert p["tok_s_per_user"][2] == pytest.approx(102.14746593842521)  # median_intvty
    assert p["tpot_median_s"][2] == pytest.approx(0.009789768065345868)
    # provenance: the exact command, the source file's hash
    assert t.run["commands"][0].startswith("rackbook import inferencex ")
    assert t.run["source"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert [r["url"] for r in t.run["rows"]] == p["url"].tolist()


def test_inferencex_tput_is_the_gpu_weighted_split():
    """On every fixture row with the split, tput_per_gpu is (input x prefill GPUs + output x
    decode GPUs) / all GPUs: in a disaggregated row each part is per GPU of its own pool."""
    p = inferencex.inferencex_points(FIX / "inferencex-benchmarks.json")
    split = p[p["input_tok_s_per_gpu"].notna()]
    assert len(split) == 6
    for _, r in split.iterrows():
        if r["serving"] == "disaggregated":
            n_in, n_out = r["prefill_gpus"], r["decode_gpus"]
        else:
            n_in = n_out = r["gpus"]
        total = (r["input_tok_s_per_gpu"] * n_in + r["output_tok_s_per_gpu"] * n_out) / r["gpus"]
        assert total == pytest.approx(r["tok_s_per_gpu"], rel=1e-3)


def test_inferencex_object_holding_one_list_and_the_gpu_quirk(tmp_path):
    rows = json.loads((FIX / "inferencex-rows.json").read_text())
    odd = dict(rows[0], num_prefill_gpu=64, num_decode_gpu=64, decode_tp=8)
    f = tmp_path / "api.json"
    f.write_text(json.dumps({"data": [odd, rows[2]]}))
    p = inferencex.inferencex_points(f)
    assert len(p) == 2
    assert pd.isna(p["gpus"][0]) and "prefill 64, decode 64" in p["notes"][0]
    assert p["gpus"][1] == 36
    f.write_text(json.dumps({"a": [], "b": []}))
    with pytest.raises(InputError, match="exactly one list of rows, found 2"):
        inferencex.inferencex_points(f)


def _ix_rows() -> list[dict]:
    return json.loads((FIX / "inferencex-rows.json").read_text())


def _without(row: dict, *keys: str) -> dict:
    row = json.loads(json.dumps(row))
    d = row
    for k in keys[:-1]:
        d = d[k]
    del d[keys[-1]]
    return row


def _with(row: dict, value, *keys: str) -> dict:
    row = json.loads(json.dumps(row))
    d = row
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value
    return row


BAD_INFERENCEX = [
    (
        "no-tput",
        lambda r: [r[0], _without(r[1], "metrics", "tput_per_gpu")],
        "rows[1].metrics.tput_per_gpu: missing",
    ),
    (
        "zero-tput",
        lambda r: [_with(r[0], 0, "metrics", "tput_per_gpu")],
        "rows[0].metrics.tput_per_gpu: must be > 0",
    ),
    (
        "negative-tput",
        lambda r: [r[0], r[1], _with(r[2], -5.0, "metrics", "tput_per_gpu")],
        "rows[2].metrics.tput_per_gpu: must be > 0",
    ),
    (
        "text-tput",
        lambda r: [_with(r[0], "fast", "metrics", "tput_per_gpu")],
        "rows[0].metrics.tput_per_gpu: not a number",
    ),
    ("no-metrics", lambda r: [_without(r[0], "metrics")], "rows[0].metrics: missing"),
    ("bad-date", lambda r: [_with(r[0], "27/02/2026", "date")], "rows[0].date: '27/02/2026'"),
    ("bad-link", lambda r: [_with(r[0], "ftp://x", "run_url")], "rows[0].run_url: 'ftp://x'"),
    (
        "negative-latency",
        lambda r: [_with(r[0], -1, "metrics", "mean_ttft")],
        "rows[0].metrics.mean_ttft: must be >= 0",
    ),
    ("no-rows", lambda r: [], "rows: no rows"),
    ("row-not-object", lambda r: [1], "rows[0]: must be an object"),
]


@pytest.mark.parametrize("name,make,message", BAD_INFERENCEX, ids=[b[0] for b in BAD_INFERENCEX])
def test_inferencex_bad_rows(tmp_path, run_cli, name, make, message):
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(make(_ix_rows())))
    out = tmp_path / "out"
    code, stdout, err = run_cli("import", "inferencex", str(src), "-o", str(out))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert not out.exists() and not list(tmp_path.glob(".out*"))


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "file is empty"),
        (b"\x89PNG\x00\xff\xfe", "binary"),
        (b'[{"hardware": "gb300",', "truncated JSON"),
        (b'{"rows": 3}', "exactly one list of rows, found 0"),
        (b'"text"', "expected a list of rows"),
    ],
)
def test_inferencex_bad_files(tmp_path, run_cli, content, message):
    src = tmp_path / "bad.json"
    src.write_bytes(content)
    code, _, err = run_cli("import", "inferencex", str(src), "-o", str(tmp_path / "o"))
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- MLPerf


def test_mlperf_token_rows_become_points(tmp_path, run_cli):
    out = tmp_path / "ml"
    code, stdout, err = run_cli(
        "import", "mlperf", str(FIX / "mlperf-summary.csv"), "-o", str(out),
        "--model", "deepseek-r1", "--source-url", ML_URL,
    )  # fmt: skip
    assert code == 0, err
    assert "2 published points" in stdout and "1 Samples/s" in stdout and "1 Latency (s)" in stdout
    t = traces.read_trace(out)
    p = t.extra["published_points"].set_index("gpus")
    assert p.loc[72, "tok_s_total"] == 679740.0 and p.loc[8, "tok_s_total"] == 75918.2
    assert p.loc[72, "tok_s_per_gpu"] == pytest.approx(679740.0 / 72)
    assert p.loc[8, "tok_s_per_gpu"] == pytest.approx(75918.2 / 8)
    assert (p["per_gpu_basis"] == "computed on import: Result / total_accelerators").all()
    # MLPerf's Result counts output tokens only (LoadGen), over all accelerators of the system
    assert (p["tokens_counted"] == "output").all() and (p["gpus_counted"] == "deployment").all()
    assert set(p["scenario"]) == {"Offline"} and set(p["hardware"]) == {"NVIDIA GB300"}
    assert p.loc[72, "category"] == "closed, available"
    assert p.loc[72, "url"] == (
        "https://github.com/mlcommons/inference_results_v6.1/tree/"
        "7bf15fd8089655a71fb75c81a744d7ba5a632424/closed/NVIDIA/results/"
        "GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Offline/performance/run_1"
    )
    assert t.run["parameters"]["skipped"] == {
        "units": {"Latency (s)": 1, "Samples/s": 1},
        "models": {"gpt-oss-120b": 1},
    }
    src = t.run["source"]
    assert (src["repo"], src["path"], src["commit"]) == (
        "mlcommons/inference_results_v6.1",
        "summary.csv",
        "7bf15fd8089655a71fb75c81a744d7ba5a632424",
    )
    # without --model every token-rate row is kept (the gpt-oss row too)
    all_rows, skipped = mlperf.mlperf_points(FIX / "mlperf-summary.csv", None, ML_URL)
    assert len(all_rows) == 3 and skipped["models"] == {}


def _ml_lines() -> list[str]:
    return (FIX / "mlperf-summary.csv").read_text().splitlines()


def test_mlperf_bad_inputs(tmp_path, run_cli):
    lines = _ml_lines()
    cases = [
        (  # a Tokens/s row whose Result is not a number: named by row, field and line
            [lines[0], lines[1], lines[2].replace('"75918.2"', '"n/a"')],
            "rows[1].Result: not a number ('n/a') in a Tokens/s row (line 3)",
        ),
        (
            [lines[0], lines[1].replace('"679740.0"', '"-3"')],
            "rows[0].Result: must be > 0, got -3.0 in a Tokens/s row (line 2)",
        ),
        (
            [lines[0], lines[1].replace('"NVIDIA GB300","4","72"', '"NVIDIA GB300","4","0"')],
            "rows[0].total_accelerators: must be > 0, got 0.0",
        ),
        ([lines[0].replace("Units", "Unit"), lines[1]], "Units: missing column in the header"),
        ([lines[0]], "rows: no rows under the header"),
        ([lines[0], lines[4]], "rows: no Tokens/s rows"),
    ]  # fmt: skip
    for rows, message in cases:
        src = tmp_path / "summary.csv"
        src.write_text("\n".join(rows) + "\n")
        out = tmp_path / "out"
        code, _, err = run_cli("import", "mlperf", str(src), "-o", str(out), "--source-url", ML_URL)
        assert code == 2 and message in err and err.count("\n") == 1, (message, err)
        assert not out.exists()
    # a non-token row may hold anything in Result: it is skipped, not read
    latency = lines[5].replace('"5.807651162902777"', '"x"')
    src.write_text("\n".join([lines[0], lines[1], latency]))
    p, skipped = mlperf.mlperf_points(src, None, ML_URL)
    assert len(p) == 1 and skipped["units"] == {"Latency (s)": 1}
    code, _, err = run_cli("import", "mlperf", str(FIX / "mlperf-summary.csv"), "-o", str(out))
    assert code == 2 and "--source-url: required" in err


# ----------------------------------------------------------------------------- SGLang cookbook


def test_cookbook_cells_become_points(tmp_path, run_cli):
    out = tmp_path / "sg"
    code, stdout, err = run_cli(
        "import", "sglang-cookbook", str(FIX / "sglang-v4-cells.jsx"), "-o", str(out),
        "--source-url", SG_URL, "--source-date", "2026-12-03",
    )  # fmt: skip
    assert code == 0, err
    assert "4 published points" in stdout and "stub_cells: 1" in stdout
    p = _points(out)
    fp4 = p.loc["b300/flash/fp4/low-latency/c1"]
    assert fp4["tok_s_per_gpu"] == 592  # total tok/s/GPU as published
    assert fp4["output_tok_s_per_gpu"] == pytest.approx(592 * 1024 / (8192 + 1024))
    assert fp4["tok_s_per_user"] == pytest.approx(1000 / 2.85)
    # the cookbook's config declares latencyPercentile "Mean": means, not medians
    assert (fp4["tpot_mean_s"], fp4["ttft_mean_s"]) == pytest.approx((0.00285, 0.191))
    assert pd.isna(fp4["tpot_median_s"]) and fp4["latency_statistic"] == "mean"
    # basis from the source's definitions: derived input + output over the cell's 4 GPUs,
    # EAGLE/MTP 3-1-4 (deepseek-v4.jsx, low-latency)
    assert (fp4["tokens_counted"], fp4["gpus_counted"], fp4["gpus"]) == (
        "input+output",
        "deployment",
        4,
    )
    assert fp4["speculation_kind"] == "real" and "3-1-4" in fp4["speculative"]
    assert (fp4["model"], fp4["precision"], fp4["engine_version"]) == (
        "DeepSeek-V4-Flash", "fp4", "0.5.15.post1",
    )  # fmt: skip
    assert fp4["date"] == "2026-12-03" and fp4["url"] == SG_URL
    nv = p.loc["b300/flash/nvfp4/low-latency/c16"]
    assert nv["tok_s_per_gpu"] == 5173 and pd.isna(nv["output_tok_s_per_gpu"])
    assert "measured as a total" in nv["per_gpu_basis"]


def test_js_literal_parser():
    text = """
    // comment
    export const benchmarks = [
      { a: 1, 'b': "two // not a comment", c: [1.5, -2e3, true, null,], /* block */ },
    ];
    const other = 3;
    """
    assert jsliteral.parse_js_export(text, "benchmarks") == [
        {"a": 1, "b": "two // not a comment", "c": [1.5, -2000.0, True, None]}
    ]
    with pytest.raises(InputError, match=r"line 2: string left open"):
        jsliteral.parse_js_export('const x = [\n "open\n];', "x")
    with pytest.raises(InputError, match=r"line 1: expected ',' or '\}' in an object"):
        jsliteral.parse_js_export("const x = {a: 1 b: 2}", "x")
    with pytest.raises(InputError, match="duplicate key 'a'"):
        jsliteral.parse_js_export("const x = {a: 1, a: 2}", "x")
    with pytest.raises(InputError, match="no `export const x = ...`"):
        jsliteral.parse_js_export("const y = 1", "x")


def test_cookbook_bad_inputs(tmp_path, run_cli):
    good = (FIX / "sglang-v4-cells.jsx").read_text()
    cases = [
        (good.replace("tpot_ms: 2.85, ", ""), "benchmarks[0].speed[0].tpot_ms: missing"),
        (good.replace("tpot_ms: 2.83", "tpot_ms: 0"),
         "benchmarks[1].speed[0].tpot_ms: must be > 0"),
        (good.replace("max_concurrency: 16 }", "max_concurrency: 1.5 }", 1),
         "benchmarks[0].speed[1].workload.max_concurrency: not an integer"),
        (good.replace("export const benchmarks", "export const cells"), "benchmarks: no `export"),
        (good.replace('quant: "fp4", strategy', 'strategy', 1),
         "benchmarks[0].match.quant: missing"),
        (good.replace("  },\n  {\n", "  }\n  {\n", 1), "expected ',' or ']' in a list"),
    ]  # fmt: skip
    for text, message in cases:
        src = tmp_path / "b.jsx"
        src.write_text(text)
        out = tmp_path / "out"
        code, _, err = run_cli(
            "import", "sglang-cookbook", str(src), "-o", str(out), "--source-url", SG_URL
        )
        assert code == 2 and message in err and err.count("\n") == 1, (message, err)
        assert not out.exists()


def test_cli_options_must_fit_the_format(tmp_path, run_cli):
    ix = str(FIX / "inferencex-rows.json")
    for argv, message in [
        (["inferencex", ix, "--label", "a=b"], "--label: only for vllm-bench"),
        (["inferencex", ix, "--kind", "recorded"], "--kind: only for vllm-bench, not inferencex"),
        (["inferencex", ix, "--model", "x"], "--model: only for mlperf"),
        (["vllm-bench", ix, "--model", "x"], "--model: only for mlperf, not vllm-bench"),
        (["inferencex", ix, "--source-date", "yesterday"], "--source-date: 'yesterday'"),
    ]:
        code, _, err = run_cli("import", *argv, "-o", str(tmp_path / "o"))
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
        assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- table checks


def _published_trace() -> traces.Trace:
    options = importers.Options(source_url=IX_URL)
    return points.read_published(
        "inferencex", FIX / "inferencex-rows.json", options, "x", inferencex.read_points
    )


def test_published_points_checks(tmp_path):
    t = _published_trace()
    traces.validate(t)
    assert t.run["source"]["commit"] == "3a600f1d9ce155536d52e2f58f744f27a301aac9"

    def bad(change, message):
        u = _published_trace()
        change(u)
        with pytest.raises(InputError, match=message):
            traces.write_trace(tmp_path / "t", u)
        assert not (tmp_path / "t").exists()

    def col(name, i, v):
        def _c(u):
            u.extra["published_points"].loc[i, name] = v

        return _c

    bad(lambda u: u.run.update(kind="recorded"), "only a trace of kind published")
    bad(
        col("ttft_mean_s", 1, -0.5),
        r"published_points.ttft_mean_s: must be from 0 to 86,400, got -0.5 \(row 1\)",
    )
    bad(
        col("tok_s_per_gpu", 2, 0.0),
        r"published_points.tok_s_per_gpu: must be > 0 and at most 10,000,000, got 0 \(row 2\)",
    )
    bad(col("concurrency", 0, 0), r"published_points.concurrency: must be > 0")
    bad(
        col("date", 0, "2026-02-30"),
        r"published_points.date: must be a date YYYY-MM-DD, got '2026-02-30' \(row 0\)",
    )
    bad(
        col("url", 1, "www.example.com"),
        r"published_points.url: must be an http\(s\) link, got 'www.example.com' \(row 1\)",
    )
    bad(
        col("serving", 0, "pooled"),
        r"published_points.serving: must be one of aggregated, disaggregated, got 'pooled'",
    )
    # a published point states its basis: never unknown
    bad(
        col("tokens_counted", 1, "unknown"),
        r"published_points.tokens_counted: must be one of .*, got 'unknown' \(row 1\)",
    )
    bad(
        col("gpus_counted", 0, "unknown"),
        r"published_points.gpus_counted: must be one of .*, got 'unknown' \(row 0\)",
    )
    bad(
        col("speculation_kind", 2, "unknown"),
        r"published_points.speculation_kind: must be one of .*, got 'unknown'",
    )
    bad(col("tokens_counted", 0, None), r"published_points.tokens_counted: missing value")
    bad(col("gpus", 2, 40), r"row 2: prefill 4 \+ decode 32 GPUs != total 40")
    bad(col("point_id", 1, t.extra["published_points"]["point_id"][0]), "duplicate id")
    bad(col("url", 0, None), r"published_points.url: missing value in row 0")


# ----------------------------------------------------------------------------- shipped traces


def test_shipped_traces_rebuild_from_the_saved_sources(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(paths.ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    subprocess.run(
        ["bash", str(paths.ROOT / "env" / "published" / "derive.sh"), str(tmp_path)],
        check=True,
        env=env,
        capture_output=True,
        cwd=paths.ROOT,
    )
    for name in published_rows.SHIPPED:
        new = traces.read_trace(tmp_path / name)
        old = traces.read_trace(paths.DATA / "published" / name)
        pd.testing.assert_frame_equal(new.extra["published_points"], old.extra["published_points"])
        assert new.run["source"] == old.run["source"] and old.run["kind"] == "published"
        assert old.run["commands"][0].startswith("rackbook import ")
    size = sum(f.stat().st_size for f in (paths.DATA / "published").rglob("*") if f.is_file())
    assert size < 400_000  # small: only the rows the chapters use


#: Path parts that mark a test input or mock, never a publication.
FIXTURE_PARTS = ("fixture", "__fixtures__", "cypress", "mock")


def test_no_published_row_rests_on_a_test_fixture():
    """Every shipped published trace, every saved source slice and every source the validation
    mapping names is read from a publication: none is a UI test fixture (the InferenceX rows
    were, until 2026-12-06: InferenceX-app's Cypress fixture). The fixture stays an importer
    test input, and figures.yaml's rejected list says why it is not evidence."""
    shipped = sorted(p.parent.name for p in (paths.DATA / "published").glob("*/run.json"))
    assert shipped == sorted(published_rows.SHIPPED) and "inferencex-dsr1" not in shipped
    for name in shipped:
        src = traces.read_trace(paths.DATA / "published" / name).run["source"]
        where = f"{src['url']} {src.get('path') or ''}".lower()
        assert not any(part in where for part in FIXTURE_PARTS), (name, where)
    for f in (paths.DATA / "published" / "sources").glob("*-SOURCE.txt"):
        head = f.read_text().split("what:")[0].lower()  # file, source, repo, path, commit
        assert not any(part in head for part in FIXTURE_PARTS), f.name
    mapped = loader.read_yaml(paths.DATA / "published" / "validation.yaml")["sources"]
    assert "inferencex-dsr1" not in mapped
    assert set(mapped) - {"figures"} <= set(shipped) | {
        f.id.split(".")[0] for f in figures.load_figures().figures
    }
    rejected = [r for r in figures.load_figures().rejected if "cypress/fixtures" in r.url]
    assert len(rejected) == 1 and "not a publication" in rejected[0].why


# ----------------------------------------------------------------------------- registry


def test_figure_registry_loads():
    reg = figures.load_figures()
    ids = claims.load_claims().ids
    assert len(reg.figures) >= 20 and all(f.claim in ids for f in reg.figures)
    pr = reg.get("sglang-pr33082.v4flash-gb300-c1-tpot")
    assert (pr.value, pr.unit, pr.gpus, pr.concurrency, pr.verified) == (1.31, "ms", 4, 1, True)
    assert reg.get("inferencex-blog.dsv4pro-gb300-peak").value == 11055.6
    assert reg.get("inferencex-tco.gb300-rental-3yr").value == 3.96
    # every second-hand figure says so in its notes
    for f in reg.figures:
        assert f.verified or "NOT VERIFIED" in (f.notes or ""), f.id


def _registry_with(tmp_path: Path, change) -> Path:
    raw = yaml.safe_load((paths.DATA / "published" / "figures.yaml").read_text())
    change(raw["figures"])
    p = tmp_path / "figures.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False))
    return p


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda f: f[0].update(claim="rack-scaling.nope"),
         "figures[inferencex-blog.dsv4pro-gb300-peak].claim: unknown claim id"),
        (lambda f: f[1].pop("url"),
         "figures[inferencex-blog.dsv4pro-gb300-72gpu].url: field required"),
        (lambda f: f[2].update(url="inferencex.semianalysis.com"),
         "figures[inferencex-blog.dsv4pro-gb200-peak].url"),
        (lambda f: f[0].update(date="26 May 2026"), "is not a date YYYY-MM-DD"),
        (lambda f: f[0].update(gpus=0), "gpus: must be > 0"),
        (lambda f: f[0].update(role="guess"), "figures[inferencex-blog.dsv4pro-gb300-peak].role"),
        (lambda f: f[0].update(extra="x"), "extra: unknown field"),
        (lambda f: f.append(dict(f[0])), "duplicate id"),
    ],
)  # fmt: skip
def test_figure_registry_bad_entries(tmp_path, change, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        figures.load_figures(_registry_with(tmp_path, change))


def test_figure_registry_is_read_by_the_strict_loader(tmp_path):
    p = tmp_path / "figures.yaml"
    p.write_text("figures:\n  - id: a\n    id: b\n")
    with pytest.raises(InputError, match="duplicate key 'id'"):
        figures.load_figures(p)
    assert loader.read_yaml(paths.DATA / "published" / "figures.yaml")["figures"]


# ----------------------------------------------------------------------------- readings


def _pts(*values, verified=None):
    df = pd.DataFrame({"value": values, "url": [f"https://x/{i}" for i in range(len(values))]})
    df["unit"] = "x"
    if verified is not None:
        df["verified"] = verified
    return df


def test_published_reading_each_way():
    pts = _pts(8.61, 8.95)
    assert evidence.published_reading("c", 8.8, pts).verdict == "within"
    r = evidence.published_reading("c", 7.9, pts)
    assert (r.verdict, r.margin) == ("below", "0.918x the lowest published (8.61x)")
    r = evidence.published_reading("c", 9.75, pts)
    assert (r.verdict, r.margin) == ("above", "1.09x the highest published (8.95x)")
    assert r.sources == ("https://x/0", "https://x/1")
    assert evidence.published_reading("c", 8.6, pts, tolerance=0.05).verdict == "within"
    none = evidence.published_reading("c", 8.8, pts.iloc[0:0])
    assert (none.verdict, none.margin, none.sources) == ("none published", "-", ())
    assert evidence.published_reading("c", float("nan"), pts).verdict == "none published"
    # second-hand figures never decide alone, and are named when left out
    only = evidence.published_reading("c", 8.8, _pts(8.61, 8.95, verified=[False, False]))
    assert only.verdict == "none published" and "2 second-hand" in only.reason
    mixed = evidence.published_reading("c", 8.8, _pts(8.61, 9.5, verified=[True, False]))
    assert mixed.verdict == "above" and "1 second-hand figure NOT VERIFIED" in mixed.reason


#: The book's verdict for each claim on the shipped evidence. Only rack-scaling.cost has
#: published points of its basis (InferenceX's rental and ownership prices); every other
#: claim has none of its own basis, and names its closest point instead.
EXPECTED = {
    "decode-parity.gap": "none published",
    "rack-scaling.throughput": "none published",
    "rack-scaling.speedup": "none published",
    "rack-scaling.cost": "above",
    "prefill-gain.gain": "none published",
    "eplb-balance.before": "none published",
    "eplb-balance.after": "none published",
    "eplb-balance.recovered": "none published",
    "context-latency.kv-bytes": "none published",
    "context-latency.delta": "none published",
    "context-latency.delta-pct": "none published",
    "single-user.throughput": "none published",
}


def test_claim_readings_on_the_shipped_evidence():
    reg = claims.load_claims()
    assert set(EXPECTED) == set(reg.ids)
    got = {c: evidence.claim_evidence(c) for c in reg.ids}
    assert {c: r.verdict for c, r in got.items()} == EXPECTED
    for r in got.values():
        assert r.verdict in evidence.VERDICTS and "\n" not in r.reason + r.margin
        assert all(u.startswith("https://") for u in r.sources)
        assert bool(r.sources) == (r.verdict not in ("none published",))
    # single user: the closest like-for-like point is vLLM itself on V4.1-Flash, 4 x GB300,
    # mean TPOT 2.19 ms (456.6 tok/s): the claim is 1.81x it; it differs in GPU (GB300, not
    # B300) and in its simulated acceptance, so it does not decide
    su = got["single-user.throughput"]
    assert su.closest.id == "figures:inferencex-pr3176.vllm-gb300-c1-tpot"
    assert su.closest.ratio == pytest.approx(826 / (1000 / 2.19))
    assert su.closest.url == "https://github.com/SemiAnalysisAI/InferenceX/pull/3176"
    assert "the claim 1.81x it" in su.margin
    by = {b.name: b for b in su.bases}
    assert set(by) == {"mean TPOT", "median (P50) TPOT"}
    # the P50 reading's closest is SGLang PR 39068 on V4.1-Flash (one stream, 4 GB300, a
    # median; near: GB300, SGLang, simulated acceptance), ahead of PR 33082's V4-Flash-0731
    p50 = by["median (P50) TPOT"].closest
    assert p50.id == "figures:sglang-pr39068.v41flash-gb300-bs1" and p50.kind == "near"
    assert p50.ratio == pytest.approx(826 / 853.49) and p50.verified
    # rack throughput: one reading per token basis, per GPU or as the rack's total, and the
    # node's per-GPU throughput when 7.9x is a per-GPU ratio
    th = {b.name: b for b in got["rack-scaling.throughput"].bases}
    assert len(th) == 7
    cached = th["per GPU, input + output counting each turn's re-read cached prefix"].closest
    assert cached.id == "figures:inferencex-pr3176.vllm-gb300-c128-total"
    assert cached.ratio == pytest.approx(954000 / 104429.47)
    out = th["per GPU, output tokens"].closest
    assert out.ratio == pytest.approx(954000 / 904.78)
    total = th[
        "a rack total over 72 GPUs, input + output counting each turn's re-read cached prefix"
    ]
    assert total.closest.ratio == pytest.approx(954000 / 72 / 104429.47)
    # speedup: a node of 4 (GB300 tray) and of 8 GPUs, both named; MLPerf's 72-over-8 ratios
    # are of another model (DeepSeek-R1) and may count replicas
    sp = {b.name: b for b in got["rack-scaling.speedup"].bases}
    assert any("4-GPU GB300 compute tray" in n and "18x" in n for n in sp)
    assert any("8-GPU" in n and "9x" in n for n in sp)
    for b in sp.values():
        assert b.closest.id.startswith("mlperf-v6.1-dsr1:") and b.closest.kind == "analogue"
    # cost: rental, list and ownership prices, each with its source
    co = {b.name: b for b in got["rack-scaling.cost"].bases}
    assert co["a rental price"].verdict == "above" and co["an ownership cost"].verdict == "above"
    assert co["a rental price"].closest.value == 3.96
    # the two ownership costs are equally close: shown as a spread, not narrowed to the one
    # nearest the claim's figure (main picked $3.30, 11.8x, and hid $2.652, 14.7x)
    own = co["an ownership cost"].closest
    assert (own.low, own.high) == (2.652, 3.3) and own.tied
    assert (own.ratio_low, own.ratio_high) == (
        pytest.approx(38.96 / 3.3),
        pytest.approx(38.96 / 2.652),
    )
    assert co["an ownership cost"].modelled and "modelled" in co["an ownership cost"].margin
    assert co["a list (on-demand) price"].verdict == "none published"  # second-hand only
    assert co["a list (on-demand) price"].closest.value == 18.0
    assert "callgideon" in co["a list (on-demand) price"].closest.url
    # EPLB: vLLM PR 50647 is an analogue (another metric, another model)
    for c in ("eplb-balance.before", "eplb-balance.after"):
        assert got[c].closest.kind == "analogue" and "pull/50647" in got[c].closest.url
        assert "per-rank totals over all layers" in got[c].reason
    # decode parity: no DeepInfer figure; DeepSeek's own production profile (day-6 post, read
    # first-hand) is named as the closest analogue
    assert "DeepSeek" in got["decode-parity.gap"].reason
    assert got["decode-parity.gap"].closest.kind == "analogue"


def test_claim_reading_reaches_every_verdict_on_real_points():
    assert evidence.claim_evidence("rack-scaling.cost", 2.0).verdict == "below"
    assert evidence.claim_evidence("rack-scaling.cost", 50.0).verdict == "above"
    # $3.00: within the ownership costs ($2.65-$3.30), below the rental price ($3.96): the
    # bases disagree, and the reading says so rather than pooling the prices in one range
    e = evidence.claim_evidence("rack-scaling.cost", 3.0)
    assert e.verdict == evidence.DEPENDS
    assert {b.name: b.verdict for b in e.bases} == {
        "a rental price": "below",
        "a list (on-demand) price": "none published",
        "a list price per 4-GPU instance-hour": "none published",
        "an ownership cost": "within",
        "a token value at the model vendor's API prices": "none published",  # a cross-check
    }
    assert evidence.claim_evidence("context-latency.delta", 0.6).verdict == "none published"


def test_published_points_table():
    p = evidence.published_points()
    assert list(p.columns) == published_rows.POINT_COLUMNS
    assert (p["kind"] == "published").all() and p["id"].is_unique
    reg = claims.load_claims()
    assert set(p["claim_id"]) <= set(reg.ids)
    assert all(reg.get(c).result == r for c, r in zip(p["claim_id"], p["result"], strict=True))
    assert p["url"].str.match(r"^https?://").all() and p["comparable"].str.len().gt(0).all()
    # MLPerf rack/node ratios are computed from the shipped trace, not typed
    ratios = p[p["claim_id"] == "rack-scaling.speedup"].set_index("id")["value"]
    assert ratios["mlperf-v6.1-dsr1:NVIDIA/Offline/72v8"] == pytest.approx(679740.0 / 75918.2)
    assert ratios["mlperf-v6.1-dsr1:Oracle/Server/72v8"] == pytest.approx(586852.0 / 68138.0)
    assert len(ratios) == 4
    # results filter; a mismatch is named
    su = evidence.published_points("single-user")
    assert set(su["result"]) == {"single-user"}
    row = su[su["id"] == "figures:sglang-pr33082.v4flash-gb300-c1-tpot"].iloc[0]
    assert row["value"] == pytest.approx(1000 / 1.31) and row["as_published"] == "1.31 ms"
    assert "hardware: GB300 (claim: B300)" in row["comparable"]
    assert "model: DeepSeek-V4-Flash-0731 (claim: DeepSeek-V4.1-Flash)" in row["comparable"]
    with pytest.raises(InputError, match="unknown result"):
        evidence.published_points("no-such-result")


def test_evidence_tables_of_the_chapters():
    with_points = 0
    for result in paths.RESULTS:
        t = evidence.evidence_table(result)
        assert list(t.columns) == evidence.TABLE_COLUMNS
        claim_rows = t[t["kind"] == "claim"]
        assert set(claim_rows["verdict"]) <= set(evidence.VERDICTS)
        pub_rows = t[t["kind"] == "published"]
        assert pub_rows["url"].str.startswith("https://").all()
        with_points += bool(len(pub_rows))
        assert t["kind"].iloc[0] == "claim"
    assert with_points >= 5
    rack = evidence.evidence_table("rack-scaling")
    # one reading row per named basis: 7 for throughput, 2 for the speedup, 5 for the cost
    assert rack["kind"].eq("reading").sum() == 14
    # only the InferenceX GB300 prices have the basis of a reading (rental, ownership)
    used = rack[rack["kind"].eq("published") & rack["used"]]
    assert sorted(used["value"]) == [2.652, 3.3, 3.96]


def test_published_sources_are_described():
    for f in SOURCES.iterdir():
        if f.name.endswith("-SOURCE.txt"):
            continue
        desc = SOURCES / (f.name.rsplit(".", 1)[0] + "-SOURCE.txt")
        text = desc.read_text()
        assert "commit:" in text and "https://github.com/" in text, f.name
    assert shutil.which("bash")


def test_prefill_gain_reads_vllms_own_prefill_table():
    """The stored excerpt of vLLM's prefill-TTFT page, re-read from the source file: TP4 at
    128K, 2,267 ms replay off and 1,392 ms with replay and decoder CUDA graphs, a +62.9 %
    gain on the same new tokens; across TP4 and DEP2, 1K to 128K, +43.2 % to +64.8 %. It is
    the chapter's closest point (near: no cached prefix, the claim's is 128,000 tokens);
    Mooncake's 3.8x stays an analogue."""
    cells = published_rows.load_prefill_table()
    assert len(cells) == 10 and {c.cfg for c in cells} == {"TP4", "DEP2"}
    tp4 = next(c for c in cells if c.cfg == "TP4" and c.prompt == "128K")
    assert (tp4.gpus, tp4.off_ms, tp4.graph_ms) == (4, 2267.0, 1392.0)
    assert tp4.gain_pct == pytest.approx((2267 / 1392 - 1) * 100)
    text = (SOURCES / "vllm-dsv41-prefill-ttft.js").read_text()
    assert '{ p: "128K", off: 2267,  eager: 1522,  graph: 1392  }' in text
    e = evidence.claim_evidence("prefill-gain.gain")
    assert e.closest is not None and e.closest.id.startswith("vllm-dsv41-prefill-ttft:")
    assert e.closest.kind == "near" and len(e.closest.tied) == 9
    assert (e.closest.low, e.closest.high) == (
        pytest.approx(43.172, abs=1e-3),
        pytest.approx(64.765, abs=1e-3),
    )
    assert "context: 0 (claim: 128000)" in [d.text for d in e.closest.differences]
    pts = evidence.published_points("prefill-gain")
    moon = pts[pts["id"] == "figures:vllm-mooncake.agentic-throughput"].iloc[0]
    assert moon["role"] == "analogue"
    assert "vllm-project.github.io/blob/17d8f0c9" in e.closest.url


def test_bad_prefill_table_is_one_error_line(tmp_path):
    bad = tmp_path / "t.js"
    bad.write_text('const DATA = [{ cfg: "TP4", rows: [{ p: "1K", off: 1, eager: 1, graph: 0 }]}];')
    with pytest.raises(InputError, match=r"t.js: DATA\[0\]\.rows\[0\]\.graph: must be > 0"):
        published_rows.load_prefill_table(bad)


def test_each_registry_figure_re_reads_from_its_stored_source():
    """A figure whose source is stored here is re-read from it: the post's 890 B/token is the
    quote's number, PR 39068's 853.49 its quote's, PR 18298's per-GPU value its lane's GPUs."""
    reg = figures.load_figures()
    for f in reg.figures:
        if f.id.startswith(("vllm-dsv41-post.", "sglang-pr39068.", "vllm-agentx-post.")):
            shown = {f"{f.value:g}", f"{f.value / 1000:g}K"}
            assert any(x in f.quote.replace(",", "") for x in shown), f.id
    trt = reg.get("trtllm-pr18298.dsv4pro-gb300-agentx")
    ctx, dep = re.search(r"ctx(\d+)_dep(\d+)", trt.quote).groups()
    gen, gdep = re.search(r"gen(\d+)_dep(\d+)", trt.quote).groups()
    assert int(ctx) * int(dep) + int(gen) * int(gdep) == trt.gpus == 24
    assert trt.value == pytest.approx(847671.13 / 24, abs=0.01) and trt.role == "analogue"


def test_cost_has_a_token_value_basis_and_names_the_highest_list_price():
    """954,000 tok/s/GPU at DeepSeek's off-peak V4.1-Flash API prices ($0.003 / $0.15 / $0.60
    per M: hit / miss / output) and AgentX's mix (444 of 142,444 tokens output; 95 % or 96 %
    of input cached) is worth $41.86 or $36.83 per GPU-hour: the claim's $38.96 is 0.931x to
    1.06x (a cross-check, never a verdict). The highest list price ($18, OCI, second-hand) is
    named; one name per price kind."""
    out = 444 / (142000 + 444)
    want = [
        954000 * 3600 / 1e6 * (out * 0.6 + (1 - out) * (h * 0.003 + (1 - h) * 0.15))
        for h in (0.95, 0.96)
    ]
    assert want[0] == pytest.approx(41.86, abs=0.01) and want[1] == pytest.approx(36.83, abs=0.01)
    got = published_rows.token_value_per_gpu_hour(954000, out, 0.95, (0.003, 0.15, 0.6))
    assert got == pytest.approx(want[0])
    e = evidence.claim_evidence("rack-scaling.cost")
    tv = next(b for b in e.bases if b.name.startswith("a token value"))
    assert tv.verdict == "none published" and not tv.decided_on  # a cross-check
    assert sorted(tv.near.points) == [
        "token-value:rack-scaling.throughput/hit95",
        "token-value:rack-scaling.throughput/hit96",
    ]
    assert (tv.near.low, tv.near.high) == (pytest.approx(want[1]), pytest.approx(want[0]))
    assert e.near["basis"] == tv.name  # verified and inside: the plausible bracket
    assert "highest list price: $18.00/GPU-hour (Oracle Cloud" in e.margin
    assert "NOT VERIFIED), the claim 2.16x it" in e.margin
    assert e.list_price is not None and e.list_price["value"] == 18.0
    assert e.list_price["ratio"] == pytest.approx(38.96 / 18) and not e.list_price["verified"]
    # the price figures re-read from their quotes
    reg = figures.load_figures()
    for fid, v in (
        ("deepseek-api.v41flash-cache-hit-offpeak", "$0.003"),
        ("deepseek-api.v41flash-cache-miss-offpeak", "$0.15"),
        ("deepseek-api.v41flash-output-offpeak", "$0.6"),
    ):
        f = reg.get(fid)
        assert f.price_kind == "list price" and v in f.quote.split("| PEAK")[0], fid
    kinds = {f.price_kind for f in reg.figures if f.unit == "$/GPU-hour"}
    assert kinds == {"list price", "ownership-cost model", "modelled rental"}


def _same(a: object, b: object) -> bool:
    return bool(pd.isna(a) and pd.isna(b)) if not isinstance(a, str) and pd.isna(a) else a == b


def test_evidence_table_rows_are_the_claim_its_readings_and_its_points():
    """A chapter's table: per claim one ``claim`` row (the registry's figure, scope and basis,
    the reading's verdict, margin and reason, the closest point's URL), one ``reading`` row per
    named basis (its verdict, margin or physics' refusal, conversion, evidence, basis, whether
    a point decided it) and one row per published point of the claim, copied as it is."""
    reg = claims.load_claims()
    t = evidence.evidence_table("rack-scaling")
    assert str(t["gpus"].dtype) == "Int64"
    pts = evidence.published_points("rack-scaling")
    names = claims_catalog_names()
    for cid in ("rack-scaling.throughput", "rack-scaling.speedup", "rack-scaling.cost"):
        c, e = reg.get(cid), evidence.claim_evidence(cid)
        rows = t[t["claim_id"] == cid].to_dict("records")
        mine = pts[pts["claim_id"] == cid].to_dict("records")
        assert [r["kind"] for r in rows] == ["claim"] + ["reading"] * len(e.bases) + [
            "published"
        ] * len(mine)
        claim = {k: v for k, v in rows[0].items() if k != "date"}
        assert claim == {
            "claim_id": cid,
            "kind": "claim",
            "who": "claim (data/claims.yaml)",
            "hardware": "GB300 NVL72",
            "gpus": 72,
            "model": "DeepSeek-V4.1-Flash",
            "engine": "vLLM",
            "value": c.value,
            "unit": c.unit,
            "as_published": c.value_text,
            "used": False,
            "role": "claim",
            "verified": False,
            "comparable": e.reason,
            "basis": c.figure_basis.short(),
            "verdict": e.verdict,
            "margin": e.margin,
            "url": e.closest.url,
        }
        for br, r in zip(e.bases, rows[1 : 1 + len(e.bases)], strict=True):
            assert (r["who"], r["role"], r["verified"]) == (br.name, "reading", True)
            assert (r["verdict"], r["basis"], r["comparable"]) == (
                br.verdict,
                br.basis,
                br.evidence,
            )
            assert r["used"] == bool(br.decided_on) and r["url"] == br.closest.url
            assert _same(r["as_published"], br.conversion or None)
            want = f"ruled out by physics: {br.ruled_out}" if br.ruled_out else br.margin
            assert r["margin"] == want
            assert all(pd.isna(r[k]) for k in ("hardware", "model", "engine", "value", "unit"))
        for p, r in zip(mine, rows[1 + len(e.bases) :], strict=True):
            for k in ("hardware", "gpus", "model", "engine", "value", "unit", "as_published"):
                assert _same(r[k], p[k]), (p["id"], k)
            for k in ("role", "comparable", "url", "date"):
                assert _same(r[k], p[k]), (p["id"], k)
            assert (r["used"], r["verified"]) == (bool(p["used"]), bool(p["verified"]))
            assert r["basis"] == p["basis"].short(names)
    cost = t[(t["claim_id"] == "rack-scaling.cost") & (t["kind"] == "reading")]
    assert cost["used"].tolist() == [True, False, False, True, False]
    assert cost["as_published"].iloc[2] == (
        "the figure read as one 4-GPU instance's (a GB300 tray's) hourly price, divided by its "
        "4 GPUs"
    )
    th = t[(t["claim_id"] == "rack-scaling.throughput") & (t["kind"] == "reading")]
    assert th["margin"].iloc[0] == (
        "ruled out by physics: 954,000 computed decode tok/s per GPU is 3.94x the compute "
        "ceiling of 241,834 on GB300"
    )
    assert th["margin"].iloc[2] == "-"
    # who: the submitter, then the system with the catalog's GPU name where one is stated
    who = dict(zip(t["kind"] + "|" + t["who"], t["kind"], strict=True))
    assert "published|SGLang cookbook · B300 low-latency (single)" in who
    assert "published|Oracle · NVIDIA DGX B300 (8x B300-SXM-270GB, TensorRT)" in who
    su = evidence.evidence_table("single-user")
    first = su[su["kind"] == "published"].iloc[0]
    assert (first["who"], first["hardware"]) == (
        "SGLang cookbook · B200 low-latency (single)",
        "b200",
    )
    figs = su[su["kind"].eq("published") & su["who"].str.startswith("SGLang (pull request)")]
    assert len(figs) == 3 and set(figs["who"]) == {"SGLang (pull request)"}  # no system stated
    # a claim without a closest point nor a primary source has no URL
    cl = evidence.evidence_table("context-latency")
    delta = cl[(cl["claim_id"] == "context-latency.delta") & (cl["kind"] == "claim")].iloc[0]
    assert pd.isna(delta["url"]) and delta["verdict"] == "none published"


def claims_catalog_names() -> dict[str, str]:
    from rackbook.inputs import catalogs

    return catalogs.display_names()


# ----------------------------------------------------------------------------- row texts


def test_number_and_value_texts_at_their_thresholds():
    """number_text: 4 significant digits under 1,000, one decimal (dropped when .0) from 1,000,
    none from 10,000, the sign kept; value_text by unit."""
    nt = published_rows.number_text
    assert [nt(v) for v in (0.123456, 999.5, -999.5, 1000, 1234.56, 9999.94)] == [
        "0.1235",
        "999.5",
        "-999.5",
        "1,000",
        "1,234.6",
        "9,999.9",
    ]
    assert nt(10000.5) == "10,000" and nt(9999.5) == "9,999.5"  # from 10,000: no decimal
    assert [nt(v) for v in (-1500, -1234.56, 10000, 12345.6, -12345.6)] == [
        "-1,500",
        "-1,234.6",
        "10,000",
        "12,346",
        "-12,346",
    ]
    vt = published_rows.value_text
    assert vt(8.95, "x") == "8.95x"
    assert vt(3.964, "$/GPU-hour") == "$3.96/GPU-hour"
    assert vt(1234.5, "$/GPU-hour") == "$1,234.50/GPU-hour"
    assert vt(0.99191, "1") == "0.9919"
    assert vt(62.87, "%") == "62.9 %"
    assert vt(11056.2, "tok/s/GPU") == "11,056 tok/s/GPU"
    assert vt(853.49, "tok/s per user") == "853.5 tok/s per user"
    assert published_rows.span_text(2, 2, "x") == "2x"
    assert published_rows.span_text(2, 3, "x") == "2x to 3x"
    assert published_rows.claim_over(0.883, 0.917) == "the claim 0.883x to 0.917x them"
    assert published_rows.claim_over(1.81, 1.81, "it") == "the claim 1.81x it"
    assert published_rows.claim_over(1.81, 1.81) == "the claim 1.81x them"


def test_point_value_and_ratio_texts():
    """A tied closest point reads as the spread and the count of points (itself included); a
    tie at one value, or none, as its own value; the claim over it, or over the spread."""
    pv, pr_ = published_rows.point_value, published_rows.point_ratio
    tied = dict(tied=("a", "b", "c"), low=8.6127, high=8.9536, unit="x", value=8.6127)
    assert pv(tied) == "8.61x to 8.95x (4 points equally close)"
    assert pv(tied | dict(low=None)) == "8.61x"
    assert pv(tied | dict(high=None)) == "8.61x"
    assert pv(tied | dict(high=8.6127)) == "8.61x"
    assert pv(tied | dict(tied=())) == "8.61x"
    assert pv(dict(value=3, unit="tok/s/GPU")) == "3 tok/s/GPU"
    assert pv(dict(value="n", unit="x")) == "" and pv({}) == ""
    ratios = dict(ratio=0.9, tied=("a",), ratio_low=0.883, ratio_high=0.917)
    assert pr_(ratios) == ", the claim 0.883x to 0.917x them"
    assert pr_(ratios | dict(tied=())) == ", the claim 0.9x it"
    assert pr_(ratios | dict(ratio_low=None)) == ", the claim 0.9x it"
    assert pr_(ratios | dict(ratio_high=None)) == ", the claim 0.9x it"
    assert pr_(ratios | dict(ratio_high=0.883)) == ", the claim 0.9x it"
    assert pr_(ratios | dict(ratio=2)) == ", the claim 0.883x to 0.917x them"
    assert pr_(ratios | dict(ratio=None)) == "" and pr_(ratios | dict(ratio="0.9")) == ""


def test_units_sides_and_none_casts():
    assert [
        published_rows.per_gpu_unit(t)
        for t in ("output", "new input", "input incl. cached", "input+output", "")
    ] == ["output tok/s/GPU", "input tok/s/GPU", "input tok/s/GPU", "tok/s/GPU", "tok/s/GPU"]
    assert published_rows.unit_family("output tok/s/GPU") == "tok/s/GPU"
    assert published_rows.unit_family("tok/s per user") == "tok/s per user"
    side = published_rows.side
    assert [side(None, 1.0), side(1.0, None), side("1", 2.0)] == ["-", "-", "-"]
    # inside: points on both sides, or at the figure (a ratio of exactly 1)
    assert [side(1.0, 2.0), side(1.01, 2.0), side(0.5, 0.99), side(0.5, 1.0)] == [
        "inside",
        "above",
        "below",
        "inside",
    ]
    assert published_rows.as_basis("as stated") == "as stated"
    assert published_rows.as_basis("mean TPOT") == "as mean TPOT"
    assert published_rows.as_basis("ask") == "as ask"
    assert published_rows.or_none(None, str) is None
    assert published_rows.int_or_none(pd.NA) is None
    assert published_rows.float_or_none(float("nan")) is None
    assert published_rows.int_or_none(3.0) == 3 and published_rows.text_or_none(5) == "5"
    assert published_rows.float_or_none("2.5") == 2.5


def test_setup_text_states_what_the_source_states():
    st = published_rows.setup_text
    full = dict(concurrency=1234, isl=4096, osl=1024, speculative="DSpark", date="2026-09-11")
    assert (
        st(pd.Series(full))
        == "concurrency 1,234, 4,096 in / 1,024 out, speculation DSpark, 2026-09-11"
    )
    assert (
        st(pd.Series(full | dict(osl=None))) == "concurrency 1,234, speculation DSpark, 2026-09-11"
    )
    assert st(pd.Series(full | dict(isl=0))) == "concurrency 1,234, speculation DSpark, 2026-09-11"
    assert st(pd.Series(full | dict(concurrency=pd.NA, speculative="not stated"))) == (
        "4,096 in / 1,024 out, 2026-09-11"
    )
    assert st(pd.Series(full | dict(speculative=None, date=float("nan")))) == (
        "concurrency 1,234, 4,096 in / 1,024 out"
    )
    assert st(pd.Series({})) == ""


def test_near_text_counts_flags_spreads_and_names_the_basis():
    near = dict(points=["a", "b"], unverified=["b"], superseded=["a", "b"], low=104429.47)
    near |= dict(high=142565.09, unit="tok/s/GPU", ratio_low=0.847, ratio_high=1.156)
    near |= dict(differences=["model", "engine"], bases=["x", "y"], basis="per GPU")
    assert published_rows.near_text(near) == (
        published_rows.NEAR_LEAD + "2 near points, 1 of them NOT VERIFIED, 2 superseded by a "
        "later source, 104,429 tok/s/GPU to 142,565 tok/s/GPU; the claim 0.847x to 1.16x them "
        "(differing in: model, engine) as per GPU (one of 2 bases with near points)"
    )
    one = dict(points=["a"], low=5.0, high=5.0, unit="x", ratio_low=2.0, ratio_high=2.0)
    assert published_rows.near_text(one, "L: ") == "L: 1 near point, 5x; the claim 2x it"
    two = one | dict(points=["a", "b"], high=6.0, bases=["only"], basis="only")
    assert published_rows.near_text(two, "L: ") == "L: 2 near points, 5x to 6x; the claim 2x it"
    apart = two | dict(ratio_high=2.5)
    assert published_rows.near_text(apart, "L: ").endswith("; the claim 2x to 2.5x them")
    none_ratio = two | dict(ratio_low=None, basis="as stated", bases=["as stated", "b"])
    assert published_rows.near_text(none_ratio, "L: ") == (
        "L: 2 near points, 5x to 6x as stated (one of 2 bases with near points)"
    )
    assert (
        published_rows.near_text(two | dict(ratio_high=None), "L: ") == "L: 2 near points, 5x to 6x"
    )
    assert published_rows.near_text(None) == "" and published_rows.near_text({"points": []}) == ""


def _row(df: pd.DataFrame, pid: str) -> dict:
    return {
        k: v for k, v in df.loc[pid].to_dict().items() if not (v is None or v is pd.NA or v != v)
    }


def test_load_rows_reads_each_source_in_its_claims_unit():
    """Every published point, re-read (not the cached table): a trace row per GPU or, at
    concurrency 1 of the cookbook, per user (1000 / TPOT); the cookbook's total undone to
    output tokens (x osl / (isl + osl)); MLPerf's 72-over-8 ratio; vLLM's prefill table as a
    gain; the token value at list prices; figures.yaml's rows in their claim's unit."""
    df = published_rows.load_rows(str(paths.DATA)).set_index("id")
    assert list(df.columns) == published_rows.POINT_COLUMNS[1:]  # the id is the index here
    for c in ("gpus", "isl", "osl", "concurrency"):
        assert str(df[c].dtype) == "Int64", c
    ml = _row(df, "mlperf-v6.1-dsr1:Oracle/B300-SXM-270GBx8_TRT/deepseek-r1/Offline")
    assert ml["value"] == ml["tok_s_per_gpu"] == 70354 / 8
    assert (ml["unit"], ml["as_published"]) == ("output tok/s/GPU", "70,354 tok/s on 8 GPUs")
    assert (ml["claim_id"], ml["result"], ml["kind"]) == (
        "rack-scaling.throughput",
        "rack-scaling",
        "published",
    )
    assert (ml["role"], ml["verified"], ml["gpus"], ml["scenario"]) == (
        "measurement",
        True,
        8,
        "Offline",
    )
    assert (ml["submitter"], ml["source"]) == ("Oracle", "mlperf-v6.1-dsr1")
    b = ml["basis"]
    assert (b.metric, b.tokens, b.per, b.statistic, b.gpu_count) == (
        "throughput",
        "output",
        "GPU",
        "rate",
        8,
    )
    assert (b.serving, b.engine_version, b.spec_method) == ("unknown", "v6.1", None)
    c1 = _row(df, "sglang-cookbook-v4:b300/flash/fp4/low-latency/c1")
    assert c1["value"] == c1["tok_s_per_user"] == pytest.approx(1000 / 2.85)
    assert (c1["unit"], c1["as_published"], c1["claim_id"]) == (
        "tok/s per user",
        "mean TPOT 2.85 ms",
        "single-user.throughput",
    )
    assert c1["tok_s_per_gpu"] == 592.0 and (c1["isl"], c1["osl"], c1["concurrency"]) == (
        8192,
        1024,
        1,
    )
    b = c1["basis"]
    assert (b.metric, b.tokens, b.per, b.statistic) == (
        "per-user decode speed",
        "output",
        "user",
        "mean",
    )
    assert b.spec_method == "EAGLE/MTP 3-1-4 (steps 3, topk 1, draft tokens 4)"
    assert "sglang-cookbook-v4:b300/flash/fp4/low-latency/c1#output" not in df.index
    tot = _row(df, "sglang-cookbook-v4:b300/flash/fp4/balanced/c64")
    assert (tot["value"], tot["unit"], tot["as_published"]) == (
        3812.0,
        "tok/s/GPU",
        "3,812 tok/s/GPU",
    )
    assert tot["basis"].tokens == "input+output" and tot["claim_id"] == "rack-scaling.throughput"
    out = _row(df, "sglang-cookbook-v4:b300/flash/fp4/balanced/c64#output")
    assert out["value"] == pytest.approx(3812 * 1024 / (8192 + 1024))
    assert (out["unit"], out["as_published"]) == (
        "output tok/s/GPU",
        "3,812 total tok/s/GPU, converted",
    )
    assert (
        out["conversion"] == "output = total x osl / (isl + osl) (the cookbook's derivation undone)"
    )
    assert out["basis"].tokens == "output" and out["basis"].concurrency == 64
    assert out["tok_s_per_gpu"] == 3812.0
    ratio = _row(df, "mlperf-v6.1-dsr1:NVIDIA/Offline/72v8")
    assert ratio["value"] == pytest.approx(679740.0 / 75918.2)
    assert (ratio["unit"], ratio["as_published"], ratio["gpus"]) == (
        "x",
        "679,740 / 75,918 tok/s",
        72,
    )
    assert ratio["claim_id"] == "rack-scaling.speedup" and ratio["notes"] == published_rows._RATIO
    assert (ratio["submitter"], ratio["hardware"], ratio["model"], ratio["scenario"]) == (
        "NVIDIA",
        "NVIDIA GB300",
        "deepseek-r1",
        "Offline",
    )
    assert (ratio["precision"], ratio["engine_version"], ratio["source"]) == (
        "fp4",
        "v6.1",
        "mlperf-v6.1-dsr1",
    )
    assert ratio["url"].endswith(
        "/closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/"
        "deepseek-r1/Offline/performance/run_1"
    )
    assert ratio["system"] == (
        "NVIDIA GB300 NVL72 (72x GB300-288GB_aarch64, TensorRT) vs NVIDIA GB300 NVL72 (8x "
        "GB300-288GB_aarch64, TensorRT)"
    )
    b = ratio["basis"]
    assert (b.metric, b.per, b.counting) == (
        "rack/node throughput ratio",
        "deployment",
        "72 GPUs over 8",
    )
    assert b.statistic == "rate" and b.tokens == "output"
    pf = _row(df, "vllm-dsv41-prefill-ttft:TP4/128K")
    assert pf["value"] == pytest.approx((2267 / 1392 - 1) * 100)
    assert (pf["as_published"], pf["system"], pf["gpus"]) == (
        "TTFT 2,267 ms off, 1,392 ms graphs",
        "TP4, 128K prompt",
        4,
    )
    assert pf["quote"] == '{ p: "128K", off: 2267, eager: 1522, graph: 1392 }'
    assert pf["notes"] == (
        "TP4: single request, prefix caching off, median of 3 runs on GB200; replay on with an "
        "eager decoder: +48.9 %"
    )
    assert (pf["unit"], pf["concurrency"], pf["date"], pf["claim_id"]) == (
        "%",
        1,
        "2026-10-07",
        "prefill-gain.gain",
    )
    assert (pf["model"], pf["hardware"], pf["engine"]) == ("DeepSeek-V4.1-Flash", "GB200", "vLLM")
    assert pf["submitter"] == "vLLM (Inferact and the vLLM team)"
    assert (
        pf["source"] == "vllm-dsv41-prefill-ttft.js"
        and pf["conversion"] == published_rows._PREFILL_RULE
    )
    assert pf["url"].endswith("/assets/interactive_pages/dsv41-prefill-ttft.html")
    b = pf["basis"]
    assert (b.metric, b.tokens, b.context, b.gpu_count, b.statistic, b.serving) == (
        "relative prefill throughput gain",
        "new input",
        0,
        4,
        "median",
        "aggregated",
    )
    assert (b.workload, b.per, b.gpus, b.speculation) == ("fixed lengths", "-", "deployment", "-")
    assert _row(df, "vllm-dsv41-prefill-ttft:DEP2/1K")["gpus"] == 2
    tv = _row(df, "token-value:rack-scaling.throughput/hit95")
    assert (
        tv["as_published"]
        == "954,000 tok/s/GPU at $0.003 / $0.15 / $0.6 per M (hit / miss / output)"
    )
    assert tv["notes"] == (
        "output share 444 / (142000 + 444); cache hits 95 % of input "
        "(https://vllm.ai/blog/2026-09-08-vllm-agentx); off-peak prices (peak: twice)"
    )
    assert (tv["unit"], tv["price_kind"], tv["verified"], tv["claim_id"]) == (
        "$/GPU-hour",
        "list price",
        True,
        "rack-scaling.cost",
    )
    assert (tv["url"], tv["date"], tv["model"]) == (
        "https://api-docs.deepseek.com/quick_start/pricing",
        "2026-09-10",
        "DeepSeek-V4.1-Flash",
    )
    assert tv["submitter"] == "DeepSeek API list prices x AgentX mix (computed here)"
    assert tv["conversion"] == published_rows._TOKEN_VALUE_RULE and tv["source"] == "figures.yaml"
    out_share = 444 / (142000 + 444)
    per_m = out_share * 0.6 + (1 - out_share) * (0.95 * 0.003 + 0.05 * 0.15)
    assert tv["value"] == pytest.approx(954000 * 3600 / 1e6 * per_m, rel=1e-12)
    assert tv["basis"].model == "DeepSeek-V4.1-Flash" and tv["basis"].per == "GPU"
    miss = claims.load_figures().get("deepseek-api.v41flash-cache-miss-offpeak")
    assert (tv["quote"], tv["url"], tv["date"]) == (miss.quote, miss.url, miss.date)
    b = tv["basis"]
    assert (b.metric, b.tokens, b.workload, b.statistic, b.hardware, b.engine) == (
        "token value per GPU-hour",
        "input incl. cached+output",
        "agentic trace",
        "value",
        "-",
        "-",
    )
    # figures.yaml: per GPU by the tokens its basis counts; a TPOT in ms as 1000 / TPOT
    fo = _row(df, "figures:inferencex-pr3176.vllm-gb300-c128-output")
    assert (fo["unit"], fo["as_published"], fo["tok_s_per_gpu"]) == (
        "output tok/s/GPU",
        "904.8 output tok/s/GPU",
        904.78,
    )
    assert fo["superseded"].startswith("2026-10-07:") and fo["source"] == "figures.yaml"
    ft = _row(df, "figures:inferencex-pr3176.vllm-gb300-c128-total")
    assert (ft["unit"], ft["value"], ft["concurrency"], ft["gpus"]) == (
        "tok/s/GPU",
        104429.47,
        128,
        4,
    )
    oci = _row(df, "figures:oci-list.gb300")
    assert (oci["value"], oci["as_published"], oci["verified"], oci["price_kind"]) == (
        18.0,
        "$18.00/GPU-hour",
        False,
        "list price",
    )
    assert "tok_s_per_gpu" not in oci
    tp = _row(df, "figures:inferencex-pr3176.vllm-gb300-c1-tpot")
    assert (tp["value"], tp["unit"], tp["as_published"]) == (
        pytest.approx(1000 / 2.19),
        "tok/s per user",
        "2.19 ms",
    )


def test_converted_rows_follow_each_sources_output_rule():
    """A trace row re-read as output tokens per GPU: InferenceX's as published (AgentX over all
    the run's GPUs), a disaggregated deployment's per decode GPU x decode / all GPUs, none
    without an output rate or a decode GPU count, none for the cookbook's single-user cells."""
    tp = published_rows.trace_points(str(paths.DATA / "published"))
    cell = tp[tp["point_id"] == "b300/flash/fp4/balanced/c64"].iloc[0].copy()
    ix = cell.copy()
    ix["source"], ix["workload"], ix["output_tok_s_per_gpu"] = "inferencex", "fixed lengths", 500.0
    ix["serving"] = "aggregated"
    (row,) = published_rows.converted_rows(ix)
    assert (row["value"], row["unit"]) == (500.0, "output tok/s/GPU")
    assert row["conversion"] == "output per GPU as published (metrics.output_tput_per_gpu)"
    assert row["id"] == "inferencex:b300/flash/fp4/balanced/c64#output"
    ax = ix.copy()
    ax["workload"] = "agentic trace"
    (row,) = published_rows.converted_rows(ax)
    assert row["conversion"] == "output per GPU as published (AgentX: over all the run's GPUs)"
    assert row["value"] == 500.0
    dis = ix.copy()
    dis["serving"], dis["decode_gpus"], dis["gpus"] = "disaggregated", 6, 8
    (row,) = published_rows.converted_rows(dis)
    assert row["basis"].serving == "disaggregated" and row["basis"].tokens == "output"
    assert row["value"] == 500.0 * 6 / 8 and row["gpus"] == 8
    assert row["conversion"] == (
        "output per GPU of the deployment = output per decode GPU x 6 decode / 8 GPUs"
    )
    dis["decode_gpus"] = None
    assert published_rows.converted_rows(dis) == []
    ix["output_tok_s_per_gpu"] = float("nan")
    assert published_rows.converted_rows(ix) == []
    single = cell.copy()
    single["concurrency"] = 1
    assert published_rows.converted_rows(single) == []
    (row,) = published_rows.converted_rows(cell)
    assert row["value"] == pytest.approx(423.5556, abs=1e-4)


def test_evidence_table_shows_a_ruled_out_readings_margin_and_a_point_without_basis(monkeypatch):
    """A reading physics rules out keeps its own margin after the refusal ("" and "-" shown as
    nothing); a published point without a basis has no basis cell."""
    import dataclasses

    real_evidence, real_points = evidence.claim_evidence, evidence.published_points

    def claim_evidence(cid, value=None):  # type: ignore[no-untyped-def]
        e = real_evidence(cid, value)
        if cid != "single-user.throughput":
            return e
        ruled = evidence.RuledOut(900.0, "decode", 2.0, "compute", 450.0, "B300")
        a = dataclasses.replace(e.bases[0], ruled_by=ruled, margin="1.2x the highest")
        b = dataclasses.replace(e.bases[1], ruled_by=ruled, margin="")
        return dataclasses.replace(e, bases=(a, b))

    def published_points(result=None):  # type: ignore[no-untyped-def]
        df = real_points(result)
        if result is None:
            return df
        extra = df.iloc[[0]].copy()
        extra["id"], extra["basis"] = "no-basis", None
        return pd.concat([df, extra], ignore_index=True)

    monkeypatch.setattr(evidence, "claim_evidence", claim_evidence)
    monkeypatch.setattr(evidence, "published_points", published_points)
    t = evidence.evidence_table("single-user")
    reads = t[t["kind"] == "reading"]["margin"].tolist()
    why = "ruled out by physics: 900 computed decode tok/s per GPU is 2x the compute ceiling of "
    why += "450 on B300"
    assert reads == [f"{why}; 1.2x the highest", why]
    last = t.iloc[-1]
    assert last["kind"] == "published" and pd.isna(last["basis"])
    assert last["value"] == t.iloc[3]["value"] and isinstance(t.iloc[3]["basis"], str)


def test_every_row_keeps_its_sources_stated_fields():
    """Each figures.yaml figure and each trace row becomes a row with its stated fields as they
    are (submitter, system, hardware, GPUs, lengths, engine, quote, role, price kind...)."""
    df = published_rows.load_rows(str(paths.DATA)).set_index("id")
    figs = claims.load_figures().figures
    same = "submitter hardware model precision engine engine_version speculative url date gpus isl"
    same += " osl concurrency quote notes role verified price_kind superseded tok_s_per_user"
    for f in figs:
        row = df.loc[f"figures:{f.id}"]
        for k in same.split():
            assert _same(row[k], getattr(f, k)), (f.id, k)
        assert (row["claim_id"], row["source"], row["kind"]) == (
            f.claim,
            "figures.yaml",
            "published",
        )
        assert row["basis"] == f.figure_basis
    raw = published_rows.trace_points(str(paths.DATA / "published"))
    for r in raw.to_dict("records"):
        row = df.loc[f"{r['source']}:{r['point_id']}"]
        for k in (*published_rows._AS_STATED, "scenario", "notes", "source"):
            assert _same(row[k], r[k]), (r["point_id"], k)
        for k in ("gpus", "isl", "osl", "concurrency"):
            assert _same(row[k], published_rows.int_or_none(r[k])), (r["point_id"], k)
        assert row["tok_s_per_gpu"] == r["tok_s_per_gpu"]
        assert _same(row["tok_s_per_user"], r["tok_s_per_user"])
        assert (row["kind"], row["role"], row["verified"]) == ("published", "measurement", True)
    assert len(df) == len(set(df.index)) == 117


def test_prefill_rows_read_the_table_and_its_source_under_the_data_folder(tmp_path):
    """prefill_rows reads the table and its SOURCE.txt under the data folder it is given: a
    panel's GPUs from its name (TP8: 8), the source URL, no date where the file states none."""
    src = tmp_path / "published" / "sources"
    src.mkdir(parents=True)
    (src / "vllm-dsv41-prefill-ttft-SOURCE.txt").write_text(
        "file: vllm-dsv41-prefill-ttft.js\nsource: https://example.org/t\n"
    )
    (src / "vllm-dsv41-prefill-ttft.js").write_text(
        'const DATA = [{ cfg: "TP8", rows: [{ p: "2K", off: 300, eager: 250, graph: 200 }]}];'
    )
    (row,) = published_rows.prefill_rows(str(tmp_path))
    assert (row["id"], row["gpus"], row["value"]) == ("vllm-dsv41-prefill-ttft:TP8/2K", 8, 50.0)
    assert (row["url"], row["date"], row["system"]) == (
        "https://example.org/t",
        None,
        "TP8, 2K prompt",
    )
    assert row["as_published"] == "TTFT 300 ms off, 200 ms graphs"
    assert row["notes"].endswith("replay on with an eager decoder: +20.0 %")
    assert row["basis"].gpu_count == 8


def test_token_value_is_verified_only_where_every_figure_it_reads_is(tmp_path):
    """The token value rests on the three prices, the AgentX mix and the hit share: one
    second-hand figure among them makes both rows second-hand."""
    shutil.copy(paths.DATA / "claims.yaml", tmp_path / "claims.yaml")
    shutil.copytree(paths.DATA / "published", tmp_path / "published")
    f = tmp_path / "published" / "figures.yaml"
    text = f.read_text()
    at = text.index("id: deepseek-api.v41flash-cache-hit-offpeak")
    end = text.index("verified: true", at)
    f.write_text(text[:end] + "verified: false" + text[end + len("verified: true") :])
    rows = published_rows.token_value_rows(str(tmp_path))
    assert [r["verified"] for r in rows] == [False, False]
    assert [r["id"] for r in rows] == [
        "token-value:rack-scaling.throughput/hit95",
        "token-value:rack-scaling.throughput/hit96",
    ]
    shipped = published_rows.token_value_rows(str(paths.DATA))
    assert [r["verified"] for r in shipped] == [True, True]
    assert [r["value"] for r in rows] == [r["value"] for r in shipped]


def test_a_single_user_cell_without_a_statistic_reads_its_median_tpot():
    """A cookbook cell at concurrency 1 naming no latency statistic: shown as its median TPOT
    (3 significant digits), its basis's statistic left open ("-")."""
    tp = published_rows.trace_points(str(paths.DATA / "published"))
    r = tp[tp["point_id"] == "b300/flash/fp4/low-latency/c1"].iloc[0].copy()
    r["latency_statistic"], r["tpot_median_s"] = None, 0.0012345
    row = published_rows._from_trace_row(r)
    assert row["as_published"] == "median TPOT 1.23 ms"
    assert row["claim_id"] == "single-user.throughput" and row["unit"] == "tok/s per user"
    b = row["basis"]
    assert (b.statistic, b.metric, b.per) == ("-", "per-user decode speed", "user")
    assert published_rows.trace_row_basis(r).statistic == "rate"  # per GPU unless per_user
    # the speculative method is named only where speculation ran (really or simulated)
    r["speculative"] = "X"
    for kind, method in (("real", "X"), ("simulated", "X"), ("none", None), ("real or none", None)):
        r["speculation_kind"] = kind
        assert published_rows.trace_row_basis(r).spec_method == method, kind


def test_a_prefill_table_without_its_export_names_the_file(tmp_path):
    bad = tmp_path / "t.js"
    bad.write_text("const X = 1;")
    with pytest.raises(
        InputError, match=r"t\.js: DATA: no `export const DATA = \.\.\.` in the file"
    ):
        published_rows.load_prefill_table(bad)


# ----------------------------------------------------------------------------- importers, exactly


def _refused_as(fn, line):
    """``fn()`` raises one InputError whose whole text is ``line``."""
    with pytest.raises(InputError) as exc:
        fn()
    assert str(exc.value) == line


def _ml_csv(path: Path, *changes: dict[str, str]) -> Path:
    """The fixture's header and one row per change (the first Tokens/s row, edited)."""
    import csv

    with (FIX / "mlperf-summary.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for change in changes:
            w.writerow(rows[0] | change)
    return path


def test_mlperf_a_row_is_read_column_by_column(tmp_path):
    src = _ml_csv(
        tmp_path / "s.csv",
        {"Location": "./closed/Org/run_X/", "Result": "100", "total_accelerators": "8.0",
         "weight_data_types": "", "framework": "", "version": ""},
        {"Location": "", "Organization": "B", "Platform": "p", "Model": "m2", "Scenario": "Server"},
    )  # fmt: skip
    pts, skipped = mlperf.mlperf_points(src, None, ML_URL)
    assert skipped == {"units": {}, "models": {}}
    tree = "https://github.com/mlcommons/inference_results_v6.1/tree/"
    first, second = (dict(zip(pts.columns, r, strict=True)) for r in pts.itertuples(index=False))
    assert {k: v for k, v in first.items() if not pd.isna(v)} == {
        "point_id": "NVIDIA/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Offline",
        "submitter": "NVIDIA", "system": "NVIDIA GB300 NVL72 (72x GB300-288GB_aarch64, TensorRT)",
        "hardware": "NVIDIA GB300", "model": "deepseek-r1", "scenario": "Offline",
        "category": "closed, available", "gpus": 8, "tok_s_total": 100.0, "tok_s_per_gpu": 12.5,
        "per_gpu_basis": "computed on import: Result / total_accelerators",
        "tokens_counted": "output", "gpus_counted": "deployment",
        "speculation_kind": "real or none", "workload": "benchmark dataset",
        "url": tree + "7bf15fd8089655a71fb75c81a744d7ba5a632424/closed/Org/run_X", "source_row": 0,
    }  # fmt: skip
    assert (
        pd.isna(first["precision"])
        and pd.isna(first["engine"])
        and pd.isna(first["engine_version"])
    )
    assert second["point_id"] == "B/p/m2/Server" and second["source_row"] == 1
    assert second["url"] == ML_URL  # no Location: the source itself
    assert (second["precision"], second["engine_version"]) == ("fp4", "v6.1")
    # a source that is not a GitHub blob: every row links to it
    pts, _ = mlperf.mlperf_points(src, None, "https://mlcommons.org/r.csv")
    assert pts["url"].tolist() == ["https://mlcommons.org/r.csv"] * 2


def test_mlperf_refusals_name_file_field_line_and_problem(tmp_path):
    s = tmp_path / "s.csv"
    row = " in a Tokens/s row (line 3)"  # the second row, on CSV line 3
    cases = [
        ({"Result": "n/a"}, "Result: not a number ('n/a')"),
        ({"Result": "0"}, "Result: must be > 0, got 0.0"),
        ({"Result": "nan"}, "Result: non-finite value (NaN or infinite)"),
        ({"total_accelerators": "1.5"}, "total_accelerators: not an integer (1.5)"),
        ({"total_accelerators": "x"}, "total_accelerators: not a number ('x')"),
    ]
    for change, problem in cases:
        _ml_csv(s, {}, change)
        line = f"{s}: rows[1].{problem}{row}"
        _refused_as(lambda: mlperf.mlperf_points(s, None, ML_URL), line)
    _ml_csv(s, {"Units": "Samples/s"}, {"Units": ""}, {"Model": "other"}, {"Units": "Samples/s"})
    pts, skipped = mlperf.mlperf_points(s, "other", ML_URL)
    assert len(pts) == 1 and skipped == {"units": {"(empty)": 1, "Samples/s": 2}, "models": {}}
    _ml_csv(s, {"Model": "a"}, {}, {"Model": "a"})
    assert mlperf.mlperf_points(s, "deepseek-r1", ML_URL)[1]["models"] == {"a": 2}
    _refused_as(
        lambda: mlperf.mlperf_points(s, "gone", ML_URL),
        f"{s}: rows: no Tokens/s rows of model 'gone'",
    )
    _ml_csv(s, {"Units": "Samples/s"})
    _refused_as(lambda: mlperf.mlperf_points(s, None, ML_URL), f"{s}: rows: no Tokens/s rows")
    _refused_as(
        lambda: mlperf.mlperf_points(s),
        f"{s}: --source-url: required: summary.csv rows carry no link",
    )
    header = (FIX / "mlperf-summary.csv").read_text().splitlines()[0]
    s.write_text(header + "\n")
    _refused_as(
        lambda: mlperf.mlperf_points(s, None, ML_URL), f"{s}: rows: no rows under the header"
    )
    s.write_text(header.replace("Location,", "").replace("Units,", "") + "\n")
    _refused_as(
        lambda: mlperf.mlperf_points(s, None, ML_URL),
        f"{s}: Location: missing column in the header",
    )
    s.write_text(header + '\n"a\nb",c\n')
    _refused_as(
        lambda: mlperf.mlperf_points(s, None, ML_URL),
        f"{s}: line 3: field 'Organization' runs over several lines: a quote left open? "
        "(no line breaks)",
    )
    s.write_text(header + '\n"a"b,c\n')
    _refused_as(
        lambda: mlperf.mlperf_points(s, None, ML_URL),
        f"{s}: line 2: not valid CSV: ',' expected after '\"'",
    )  # the line read when the reader failed (the row before it was named until 2026-12-07)
    s.write_text('"a"b,c\n' + header + "\n")
    _refused_as(
        lambda: mlperf.mlperf_points(s, None, ML_URL),
        f"{s}: line 1: not valid CSV: ',' expected after '\"'",
    )


def test_mlperf_read_points_records_the_model_and_the_skips(tmp_path):
    src = _ml_csv(tmp_path / "s.csv", {}, {"Units": "Samples/s"})
    opts = importers.Options(model="deepseek-r1", source_url=ML_URL)
    pts, parameters = mlperf.read_points(src, opts)
    assert len(pts) == 1
    assert parameters == {
        "model": "deepseek-r1",
        "skipped": {"units": {"Samples/s": 1}, "models": {}},
    }


IX_ROW = {
    "hardware": "gb300", "framework": "vllm", "model": "dsv4", "precision": "fp4", "conc": 8,
    "isl": 1024, "osl": 256, "date": "2026-01-02", "run_url": "https://x.org/r/1",
    "image": "vllm:1", "spec_method": "mtp", "config_key": "dsv4-fp4-gb300-vllm-mtp",
    "disagg": True, "num_prefill_gpu": 4, "num_decode_gpu": 8,
    "metrics": {
        "tput_per_gpu": 100.0, "input_tput_per_gpu": 40.0, "output_tput_per_gpu": 60.0,
        "mean_ttft": 0.5, "median_ttft": 0.25, "mean_tpot": 0.02, "median_tpot": 0.0125,
        "mean_e2el": 4.0, "median_intvty": 50.0, "p90_intvty": 7.0,
    },
}  # fmt: skip


def _ix(tmp_path: Path, *rows: dict, url: str | None = None) -> list[dict]:
    src = tmp_path / "ix.json"
    src.write_text(json.dumps(list(rows)))
    pts = inferencex.inferencex_points(src, url)
    return [{k: None if pd.isna(v) else v for k, v in r.items()} for r in pts.to_dict("records")]


def test_inferencex_a_disaggregated_row_column_by_column(tmp_path):
    (p,) = _ix(tmp_path, IX_ROW)
    assert p == {
        "point_id": "0000-gb300-vllm-dsv4-fp4-1024-256-c8", "source_row": 0,
        "submitter": "SemiAnalysis InferenceX", "system": "gb300 vllm", "category": None,
        "hardware": "gb300", "gpus": 12, "prefill_gpus": 4, "decode_gpus": 8,
        "serving": "disaggregated", "model": "dsv4", "precision": "fp4", "engine": "vllm",
        "engine_version": "vllm:1", "speculative": "mtp", "scenario": None, "isl": 1024,
        "osl": 256, "concurrency": 8, "tok_s_total": None, "tok_s_per_gpu": 100.0,
        "per_gpu_basis": "as published (metrics.tput_per_gpu: input + output tokens over the "
        "prefill and decode GPUs; in a disaggregated row the split is per prefill and per decode "
        "GPU)",
        "tokens_counted": "input+output", "gpus_counted": "deployment",
        "speculation_kind": "real", "workload": "fixed lengths", "latency_statistic": "median",
        "input_tok_s_per_gpu": 40.0, "output_tok_s_per_gpu": 60.0, "tok_s_per_user": 50.0,
        "ttft_mean_s": 0.5, "ttft_median_s": 0.25, "tpot_mean_s": 0.02, "tpot_median_s": 0.0125,
        "e2el_mean_s": 4.0, "date": "2026-01-02", "url": "https://x.org/r/1", "notes": None,
    }  # fmt: skip


def test_inferencex_an_agentic_row_and_its_simulated_speculation(tmp_path):
    metrics = {"tput_per_gpu": 10.0, "p90_intvty": 7.0, "median_intvty": None}
    row = IX_ROW | {"benchmark_type": "agentic_traces", "isl": None, "osl": None, "conc": 16}
    row |= {"spec_method": "dspark", "config_key": "k-dspark", "metrics": metrics}
    row |= {"disagg": None, "num_prefill_gpu": 8, "num_decode_gpu": 8, "decode_tp": 8}
    (p,) = _ix(tmp_path, row, IX_ROW | {"config_key": None, "spec_method": "none"})[:1]
    assert (p["point_id"], p["isl"], p["osl"]) == (
        "0000-gb300-vllm-dsv4-fp4-agentic-c16",
        None,
        None,
    )
    assert (p["speculative"], p["speculation_kind"]) == ("dspark", "simulated")
    assert (p["latency_statistic"], p["tok_s_per_user"]) == ("p90", 7.0)
    assert (p["gpus"], p["prefill_gpus"], p["decode_gpus"], p["serving"]) == (8, None, None, None)
    assert (p["tokens_counted"], p["workload"]) == ("input incl. cached+output", "agentic trace")
    assert p["per_gpu_basis"] == (
        "as published (metrics.tput_per_gpu: every turn's whole prompt, re-read cached prefix "
        "included, plus output, over all the run's GPUs; the input/output split also over all GPUs)"
    )
    assert p["notes"] == (
        "AgentX: concurrency 16 is the number of simulated users (agent sessions); sub-agent "
        "fan-out may keep more requests than users in flight (InferenceX AgentX recipes allow up "
        "to twice the concurrency in running requests)"
    )
    # the same method in a single-turn row is real; no method at all is none
    (_, q) = _ix(tmp_path, row, IX_ROW | {"spec_method": "none", "config_key": None})
    assert (q["speculative"], q["speculation_kind"], q["latency_statistic"]) == (
        None,
        "none",
        "median",
    )
    single = row | {"benchmark_type": "single_turn", "isl": 1, "osl": 2}
    assert _ix(tmp_path, single)[0]["speculation_kind"] == "real"


def test_inferencex_gpu_counts_of_each_serving(tmp_path):
    def counts(**kw):
        (p,) = _ix(tmp_path, IX_ROW | kw)
        return p["gpus"], p["prefill_gpus"], p["decode_gpus"], p["serving"], p["notes"]

    assert counts(num_decode_gpu=None) == (None, 4, None, "disaggregated", None)
    assert counts(num_prefill_gpu=None) == (None, None, 8, "disaggregated", None)
    agg = {"disagg": False, "num_prefill_gpu": 4, "num_decode_gpu": 4}
    assert counts(**agg) == (4, None, None, "aggregated", None)
    assert counts(**agg, decode_tp=4) == (4, None, None, "aggregated", None)
    note = "recorded GPU counts (prefill 4, decode 4) disagree with an aggregated run of TP "
    note += "8: total left empty"
    assert counts(**agg, decode_tp=8) == (None, None, None, "aggregated", note)
    note = "recorded GPU counts (prefill 4, decode 8) disagree with an aggregated run of TP "
    note += "None: total left empty"
    assert counts(**agg | {"num_decode_gpu": 8}) == (None, None, None, "aggregated", note)
    none = {"disagg": False, "num_prefill_gpu": None, "num_decode_gpu": None}
    assert counts(**none) == (None, None, None, "aggregated", None)
    assert counts(**none | {"num_decode_gpu": 2})[4].startswith(
        "recorded GPU counts (prefill None, decode 2)"
    )
    # two notes, joined; a row without any per-user rate has none
    row = IX_ROW | {
        "benchmark_type": "agentic_traces",
        "isl": None,
        "osl": None,
        "spec_method": None,
    }
    row |= {
        "config_key": None,
        "disagg": False,
        "num_decode_gpu": 8,
        "metrics": {"tput_per_gpu": 1.0},
    }
    (p,) = _ix(tmp_path, row)
    assert p["notes"].startswith("recorded GPU counts (prefill 4, decode 8) disagree")
    assert "total left empty; AgentX: concurrency 8 is the number" in p["notes"]
    assert (p["tok_s_per_user"], p["latency_statistic"]) == (None, "median")


def test_inferencex_speculation_from_method_and_config_key():
    spec = inferencex.inferencex_speculation
    assert spec(None, None, "single_turn") == ("none", None)
    assert spec("", "a-b", "single_turn") == ("none", None)
    assert spec("MTP", None, "single_turn") == ("real", "mtp")
    assert spec(None, "x-EAGLE-fp4", "single_turn") == ("real", "eagle")
    assert spec("dspark", "k-dspark", "agentic_traces") == ("simulated", "dspark")
    assert spec("mtp", "k-mtp", "agentic_traces") == ("real", "mtp")
    assert spec(None, "k-mtpx", "single_turn") == ("none", None)  # whole parts of the key only
    with pytest.raises(ValueError) as exc:
        spec("eagle", "k-mtp", "single_turn")
    assert str(exc.value) == "config key 'k-mtp' names mtp, spec_method eagle"
    with pytest.raises(ValueError) as exc:
        spec("eagle", "k-fp4", "single_turn")
    assert str(exc.value) == "config key 'k-fp4' names no speculative method, spec_method is eagle"


def test_inferencex_refusals_are_one_line_naming_row_and_field(tmp_path):
    src = tmp_path / "ix.json"
    cases = [
        (IX_ROW | {"benchmark_type": "multi"},
         "rows[0].benchmark_type: 'multi': expected single_turn or agentic_traces"),
        (IX_ROW | {"disagg": 1}, "rows[0].disagg: must be true or false, got 1"),
        (IX_ROW | {"run_url": None},
         "rows[0].run_url: missing (and no --source-url to fall back on)"),
        (IX_ROW | {"config_key": "k-fp4"},
         "rows[0].spec_method: config key 'k-fp4' names no speculative method, spec_method is mtp"),
        (IX_ROW | {"isl": None}, "rows[0].isl: missing"),
        (IX_ROW | {"conc": 0}, "rows[0].conc: must be > 0, got 0"),
        (IX_ROW | {"decode_tp": 1.5}, "rows[0].decode_tp: not an integer (1.5)"),
        (IX_ROW | {"metrics": {"tput_per_gpu": 1.0, "median_intvty": -1}},
         "rows[0].metrics.median_intvty: must be > 0, got -1"),
        (IX_ROW | {"metrics": {"tput_per_gpu": 1.0, "mean_ttft": -1}},
         "rows[0].metrics.mean_ttft: must be >= 0, got -1"),
        (IX_ROW | {"metrics": [1]}, "rows[0].metrics: must be an object"),
        (IX_ROW | {"spec_method": 5}, "rows[0].spec_method: must be a non-empty string, got 5"),
        (IX_ROW | {"run_url": "ftp://x"}, "rows[0].run_url: 'ftp://x' is not an http(s) link"),
        (IX_ROW | {"benchmark_type": "agentic_traces", "isl": 1.5},
         "rows[0].isl: not an integer (1.5)"),
    ]  # fmt: skip
    for row, line in cases:
        src.write_text(json.dumps([IX_ROW, row]))
        with pytest.raises(InputError) as exc:
            inferencex.inferencex_points(src)
        assert str(exc.value) == f"{src}: {line.replace('rows[0]', 'rows[1]')}"
    for top, line in (
        ({"a": [IX_ROW], "b": 1}, None),
        ({"a": [], "b": []}, "(top level): an object must hold exactly one list of rows, found 2"),
        (3, "(top level): expected a list of rows, got int"),
        ([], "rows: no rows"),
        ([IX_ROW, "x"], "rows[1]: must be an object, got str"),
    ):
        src.write_text(json.dumps(top))
        if line is None:
            assert len(inferencex.inferencex_points(src)) == 1
            continue
        with pytest.raises(InputError) as exc:
            inferencex.inferencex_points(src)
        assert str(exc.value) == f"{src}: {line}"
    # a row without run_url links to --source-url
    src.write_text(json.dumps([IX_ROW | {"run_url": None}]))
    pts, skipped = inferencex.read_points(src, importers.Options(source_url=IX_URL))
    assert pts["url"].tolist() == [IX_URL] and skipped == {}


def _cells(tmp_path: Path, *cells: str) -> Path:
    src = tmp_path / "c.jsx"
    src.write_text("export const benchmarks = [\n" + ",\n".join(cells) + "\n];\n")
    return src


SG_SPEED = "{ workload: WL, ttft_ms: 0, tpot_ms: 8, tokens_per_sec_per_gpu: 45 }"
SG_CELL = (
    '{ match: { hw: "h200", variant: "pro", quant: "bf16", strategy: "balanced", '
    '"nodes": "multi" }, sglang_version: 5, speed: [SPEED] }'
)


def _sg_cell(wl="{ isl: 300, osl: 100, max_concurrency: 2, range_ratio: 1 }", **match) -> str:
    cell = SG_CELL.replace("SPEED", SG_SPEED.replace("WL", wl))
    for k, v in match.items():
        old = re.search(rf'"?{k}"?: [^,}}]+', cell)[0]
        cell = cell.replace(old, f"{k}: {v}")
    return cell


def test_cookbook_a_cell_column_by_column(tmp_path):
    from rackbook.core.importers import sglang_cookbook as sg

    url = "https://a.org/x"
    stub = '{ match: { hw: "b200", variant: "flash", quant: "fp4" } }'
    pts, skipped = sg.cookbook_points(_cells(tmp_path, _sg_cell(), stub), url)
    assert skipped == {"stub_cells": 1}
    (p,) = [{k: None if pd.isna(v) else v for k, v in r.items()} for r in pts.to_dict("records")]
    assert p == {
        "point_id": "h200/pro/bf16/balanced/c2", "source_row": 0, "submitter": "SGLang cookbook",
        "system": "h200 balanced (multi)", "category": None, "hardware": "h200", "gpus": None,
        "prefill_gpus": None, "decode_gpus": None, "serving": None, "model": "DeepSeek-V4-Pro",
        "precision": "bf16", "engine": "sglang", "engine_version": "5",
        "speculative": "EAGLE/MTP 1-1-2 (steps 1, topk 1, draft tokens 2)",
        "scenario": "balanced", "isl": 300, "osl": 100, "concurrency": 2, "tok_s_total": None,
        "tok_s_per_gpu": 45.0,
        "per_gpu_basis": "as published: total tok/s/GPU, measured as a total",
        "tokens_counted": "input+output", "gpus_counted": "deployment",
        "speculation_kind": "real", "workload": "fixed lengths", "latency_statistic": "mean",
        "input_tok_s_per_gpu": None, "output_tok_s_per_gpu": None, "tok_s_per_user": 125.0,
        "ttft_mean_s": 0.0, "ttft_median_s": None, "tpot_mean_s": 0.008, "tpot_median_s": None,
        "e2el_mean_s": None, "date": None, "url": url,
        "notes": "nodes: multi; GPU count and speculative method from the cookbook's "
        f"deepseek-v4.jsx ({sg.COOKBOOK_CONFIG_URL}); latencies are means (latencyPercentile Mean)",
    }  # fmt: skip


def test_cookbook_gpus_speculation_workload_and_derived_output(tmp_path):
    from rackbook.core.importers import sglang_cookbook as sg

    def point(**kw):
        pts, _ = sg.cookbook_points(_cells(tmp_path, _sg_cell(**kw)), "https://a.org/x")
        return {k: None if pd.isna(v) else v for k, v in pts.iloc[0].to_dict().items()}

    flash = {"variant": '"flash"', "nodes": '"single"'}
    for hw in ("b200", "b300", "gb200", "gb300"):
        assert point(hw=f'"{hw}"', **flash)["gpus"] == 4
    assert point(hw='"h200"', **flash)["gpus"] is None
    assert point(hw='"b300"', variant='"flash"', nodes='"multi"')["gpus"] is None
    assert point(hw='"b300"', variant='"pro"', nodes='"single"')["gpus"] is None
    p = point(strategy='"low-latency"', quant='"fp8"', nodes="null")
    assert (p["speculation_kind"], p["speculative"]) == (
        "real",
        "EAGLE/MTP 3-1-4 (steps 3, topk 1, draft tokens 4)",
    )
    assert p["system"] == "h200 low-latency (nodes not stated)"
    assert p["output_tok_s_per_gpu"] == 45 * 100 / 400 and p["per_gpu_basis"] == (
        "as published: total tok/s/GPU, derived by the cookbook from measured output/GPU x "
        "(isl+osl)/osl"
    )
    assert point(quant='"fp4"')["output_tok_s_per_gpu"] == 11.25
    p = point(strategy='"high-throughput"')
    assert (p["speculation_kind"], p["speculative"]) == ("none", None)
    p = point(strategy="null")
    assert (p["speculation_kind"], p["speculative"], p["scenario"]) == ("real or none", None, None)
    assert p["point_id"] == "h200/pro/bf16/None/c2" and p["system"] == "h200 - (multi)"
    wl = {
        "{ isl: 3, osl: 1, max_concurrency: 2 }": "random lengths",
        "{ isl: 3, osl: 1, max_concurrency: 2, range_ratio: 0.999 }": "random lengths",
        "{ isl: 3, osl: 1, max_concurrency: 2, random_range_ratio: 1 }": "fixed lengths",
        "{ isl: 3, osl: 1, max_concurrency: 2, range_ratio: 1.5, random_range_ratio: 0 }":
            "fixed lengths",
        '{ dataset: "sharegpt", isl: 3, osl: 1, max_concurrency: 2, range_ratio: -1 }':
            "benchmark dataset",
    }  # fmt: skip
    for text, workload in wl.items():
        assert point(wl=text)["workload"] == workload, text
    assert sg.SGLANG_RANDOM_RANGE_RATIO == 0.0


def test_cookbook_refusals_name_cell_entry_and_field(tmp_path):
    from rackbook.core.importers import sglang_cookbook as sg

    url = "https://a.org/x"
    cases = [
        (_sg_cell(wl="{ isl: 3, osl: 1, max_concurrency: 2, range_ratio: -0.5 }"),
         "benchmarks[1].speed[0].workload.range_ratio: must be >= 0, got -0.5"),
        (_sg_cell(wl="{ isl: 3, osl: 1, max_concurrency: 2, range_ratio: \"x\" }"),
         "benchmarks[1].speed[0].workload.range_ratio: not a number ('x')"),
        (_sg_cell(wl="{ isl: 0, osl: 1, max_concurrency: 2 }"),
         "benchmarks[1].speed[0].workload.isl: must be > 0, got 0"),
        (_sg_cell(wl="3"), "benchmarks[1].speed[0].workload: must be an object"),
        (_sg_cell().replace("speed: [", "speed: [3, "),
         "benchmarks[1].speed[0]: must be an object"),
        (_sg_cell().replace("speed: [", "speed: 3, x: ["), "benchmarks[1].speed: must be a list"),
        (_sg_cell().replace("ttft_ms: 0", "ttft_ms: -1"),
         "benchmarks[1].speed[0].ttft_ms: must be >= 0, got -1"),
        (_sg_cell().replace("tokens_per_sec_per_gpu: 45", "tokens_per_sec_per_gpu: 0"),
         "benchmarks[1].speed[0].tokens_per_sec_per_gpu: must be > 0, got 0"),
        (_sg_cell(nodes="3"), "benchmarks[1].match.nodes: must be a non-empty string, got 3"),
        ("3", "benchmarks[1]: must be an object"),
        ("{ speed: [] }", "benchmarks[1].match: missing"),
    ]  # fmt: skip
    for cell, line in cases:
        src = _cells(tmp_path, _sg_cell(), cell)
        with pytest.raises(InputError) as exc:
            sg.cookbook_points(src, url)
        assert str(exc.value) == f"{src}: {line}"
    src = _cells(tmp_path, '{ match: { hw: "a", variant: "b", quant: "c" } }')
    with pytest.raises(InputError) as exc:
        sg.cookbook_points(src, url)
    assert str(exc.value) == f"{src}: benchmarks: no cell with speed numbers"
    with pytest.raises(InputError) as exc:
        sg.cookbook_points(src)
    assert str(exc.value) == f"{src}: --source-url: required: the cookbook cells carry no link"
    src.write_text("export const benchmarks = {};\n")
    with pytest.raises(InputError) as exc:
        sg.cookbook_points(src, url)
    assert str(exc.value) == f"{src}: benchmarks: must be a list, got dict"
    src = _cells(tmp_path, _sg_cell(), '{ match: { hw: "a", variant: "b", quant: "c" } }')
    pts, parameters = sg.read_points(src, importers.Options(source_url=url))
    assert len(pts) == 1 and parameters == {"skipped": {"stub_cells": 1}}


def test_cookbook_stubs_counted_around_cells_and_the_file_checks(tmp_path):
    from rackbook.core.importers import sglang_cookbook as sg

    url = "https://a.org/x"
    stub = '{ match: { hw: "b200", variant: "flash", quant: "fp4" } }'
    no_version = _sg_cell().replace("sglang_version: 5, ", "")
    pts, skipped = sg.cookbook_points(_cells(tmp_path, stub, no_version, stub, _sg_cell()), url)
    assert skipped == {"stub_cells": 2} and pts["source_row"].tolist() == [1, 3]
    assert pts["engine_version"].isna().tolist() == [True, False]
    src = tmp_path / "c.jsx"
    src.write_text("export const benchmarks = [\n  { match: { hw: 1 }\n  { x: 2 } ];\n")
    with pytest.raises(InputError) as exc:
        sg.cookbook_points(src, url)
    assert str(exc.value).startswith(f"{src}: line 3")
    with src.open("wb") as fh:  # one byte over the 16 MB the cookbook file may hold
        fh.truncate(16_000_001)
    with pytest.raises(InputError) as exc:
        sg.cookbook_points(src, url)
    assert str(exc.value) == (
        f"{src}: -: 16.0 MB is over the input size limit 16 MB (see --max-input-mb)"
    )
