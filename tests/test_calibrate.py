"""``rackbook calibrate``'s pure parts (book env, no torch): the plan of kernels and its rows,
the catalog shapes, matching a GPU to the hardware catalog, the summary, and the comparison
with the reference H200 measurement. The real CPU run is tests/live/test_live_calibrate.py."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys

import pandas as pd
import pytest

from rackbook import paths
from rackbook.core import calibration, schema
from rackbook.inputs import catalogs
from rackbook.live import calibrate

REFERENCE = paths.DATA / "calibration" / "h200-kernels.reference.json"
sys.path.insert(0, str(paths.ROOT / "env" / "calibration"))
compare_script = importlib.import_module("compare")


def _catalog() -> calibrate.Catalog:
    spec = catalogs.load_model("deepseek-v4.1-flash")
    return calibrate.catalog_from_specs(spec, catalogs.load_hardware().gpus, "test")


def _reference() -> pd.DataFrame:
    _run, kernels = calibration.from_reference(json.loads(REFERENCE.read_text()), "x")
    return kernels


def test_cuda_plan_is_the_reference_figure_by_figure() -> None:
    cat = _catalog()
    cases = calibrate.plan("cuda", cat.shapes, fp8=True)
    ref = _reference()
    assert [(c.family, c.dtype, c.size) for c in cases] != []
    assert sorted((c.family, c.dtype, c.size) for c in cases) == sorted(
        zip(ref["family"], ref["dtype"], ref["size"], strict=True)
    )
    # bytes and FLOPs counted as the reference counts them (from_reference's rows)
    rows = pd.DataFrame([calibrate.row(c, 1e-3) for c in cases]).set_index(
        ["family", "dtype", "size"]
    )
    want = ref.set_index(["family", "dtype", "size"]).loc[rows.index]
    pd.testing.assert_series_equal(rows["bytes"], want["bytes"], check_dtype=False)
    pd.testing.assert_series_equal(rows["flops"], want["flops"], check_dtype=False)
    # no FP8 where the device has none; --quick is a subset
    no_fp8 = calibrate.plan("cuda", cat.shapes, fp8=False)
    assert {c.dtype for c in no_fp8} == {"bf16"} and len(no_fp8) == len(cases) - 13
    quick = {(c.family, c.dtype, c.size) for c in calibrate.plan("cuda", cat.shapes, fp8=True,
                                                                  quick=True)}  # fmt: skip
    assert quick < {(c.family, c.dtype, c.size) for c in cases}
    assert {f for f, _, _ in quick} == set(calibration.FAMILIES)


def test_cpu_plan_covers_every_family_small() -> None:
    cases = calibrate.plan("cpu", _catalog().shapes, fp8=False)
    assert {c.family for c in cases} == set(calibration.FAMILIES)
    assert "fp8" not in {c.dtype for c in cases}
    assert {c.dtype for c in cases if c.family != "dense_gemm"} == {"fp32"}
    experts = [c for c in cases if c.family == "expert_gemm"]
    assert max(c.size for c in experts) <= 16
    assert experts[0].bytes == 3 * 5120 * 2304 * 4  # the catalog model's expert, FP32 on CPU
    assert "fp8" in {c.dtype for c in calibrate.plan("cpu", _catalog().shapes, fp8=True)}


def test_shapes_come_from_the_catalog(tmp_path) -> None:
    cat = _catalog()
    assert cat.model == "deepseek-v4.1-flash"
    assert cat.shapes == {"hidden_size": 5120, "moe_intermediate_size": 2304,
                          "num_attention_heads": 64, "head_dim": 512, "index_head_dim": 128,
                          "index_topk": 2048}  # fmt: skip
    # the pydantic-free reader (a bare CUDA image) reads the same files to the same values
    raw = calibrate.catalog_from_yaml("DeepSeek-V4.1-Flash")
    assert (raw.model, raw.shapes, raw.gpus) == (cat.model, cat.shapes, cat.gpus)
    assert "not validated" in raw.source
    # a changed catalog changes what is timed: nothing is hard-coded
    data = tmp_path / "data"
    shutil.copytree(paths.DATA / "models", data / "models")
    shutil.copy(paths.DATA / "hardware.yaml", data / "hardware.yaml")
    f = data / "models" / "deepseek-v4.1-flash.yaml"
    f.write_text(
        f.read_text().replace("moe_intermediate_size: 2304", "moe_intermediate_size: 1536")
    )
    changed = calibrate.catalog_from_yaml("deepseek-v4.1-flash", data)
    assert changed.shapes["moe_intermediate_size"] == 1536
    expert = next(c for c in calibrate.plan("cuda", changed.shapes, fp8=True)
                  if c.family == "expert_gemm")  # fmt: skip
    assert expert.bytes == 3 * 5120 * 1536 * 2  # BF16 first


@pytest.mark.parametrize(
    ("name", "gid"),
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA GB300", "gb300"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GB200", "gb200"),
        ("NVIDIA H200 NVL", None),  # another product than the SXM part
        ("NVIDIA H100 PCIe", None),
        ("NVIDIA A100-SXM4-80GB", None),
        ("AMD EPYC 9654 96-Core Processor", None),
        ("", None),
    ],
)
def test_match_gpu(name, gid) -> None:
    assert calibrate.match_gpu(name, _catalog().gpus) == gid


def test_device_spec_is_the_data_sheet() -> None:
    spec = calibrate.device_spec("NVIDIA H200", _catalog())
    assert spec == {"hbm_TBps": 4.8, "bf16_dense_TFLOPs": 989.0, "fp8_dense_TFLOPs": 1979.0,
                    "catalog": "h200"}  # fmt: skip
    assert calibrate.device_spec("NVIDIA H200 NVL", _catalog()) is None


def test_row_refuses_a_bad_time() -> None:
    case = calibrate.Case("hbm_read", "bf16", 8, 8, None)
    assert calibrate.row(case, 2e-9) == {"family": "hbm_read", "dtype": "bf16", "size": 8,
                                         "seconds": 2e-9, "bytes": 8.0, "flops": None}  # fmt: skip
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="hbm_read bf16 8"):
            calibrate.row(case, bad)


def test_summary_of_the_reference_reads_as_the_issue() -> None:
    cal = calibration.read_calibration()
    text = "\n".join(calibrate.summary(cal.kernels.to_dict("records"), cal.run["spec"]))
    for want in (
        "hbm_read bf16",
        "4.33 TB/s, 90 % of 4.8 TB/s",
        "789 TFLOP/s, 80 % of 989 TFLOP/s",
        "1,451 TFLOP/s, 73 % of 1,979 TFLOP/s",
        "13.9 us, 2.55 TB/s of weights, 53 % of 4.8 TB/s",  # FP8 expert, 1 token
        "1,229 TFLOP/s, 62 % of 1,979 TFLOP/s",  # FP8 expert, its best (2,048 tokens)
        "312 us, 0.72 TB/s of keys, 15 % of 4.8 TB/s",
        "875,520 rows  25.1 us",
    ):
        assert want in text, want
    mib = {"family": "hbm_read", "dtype": "fp32", "size": 1 << 20, "seconds": 1e-3}
    cpu = calibrate.summary([{**mib, "bytes": float(1 << 20), "flops": None}], None)
    assert cpu == ["  hbm_read fp32                   1 MiB  1.05 GB/s, no data sheet"]


def test_compare_with_itself_and_a_doctored_copy() -> None:
    ref = _reference()
    same = calibration.compare(ref, ref)
    assert len(same) == len(ref) == 34
    assert (same["ratio"] == 1.0).all() and not same["flagged"].any()
    doctored = ref.copy()
    doctored.loc[0, "seconds"] *= 1.3  # HBM read 30 % slower
    doctored.loc[5, "seconds"] *= 1.1  # within 15 %
    doctored = doctored.drop(index=33)  # one figure not measured
    out = calibration.compare(doctored, ref)
    assert list(out.index[out["flagged"]]) == [0, 33]
    assert out.loc[0, "ratio"] == pytest.approx(1 / 1.3)
    assert out.loc[0, "measured"] == pytest.approx(4.3336 / 1.3, rel=1e-4)
    assert out.loc[5, "ratio"] == pytest.approx(1 / 1.1) and math.isnan(out.loc[33, "ratio"])
    lines = calibration.compare_lines(out)
    assert "off by > 15%" in lines[1] and "not measured" in lines[-2]
    assert lines[-1] == "32 of 34 figures within 15% of the reference; 2 flagged"


def test_compare_script(tmp_path, capsys) -> None:
    assert compare_script.main([str(calibration.SHIPPED)]) == 0
    assert "34 of 34 figures within 15%" in capsys.readouterr().out
    cal = calibration.read_calibration()
    rows = cal.kernels.copy()
    rows.loc[rows["family"] == "dense_gemm", "seconds"] *= 2.0
    saved = tmp_path / "c.json"
    saved.write_text(json.dumps({"run": cal.run, "kernels": json.loads(rows.to_json(
        orient="records"))}))  # fmt: skip
    assert compare_script.main([str(saved)]) == 1
    assert "30 of 34 figures within 15% of the reference; 4 flagged" in capsys.readouterr().out


no_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None, reason="torch is installed in this env"
)


@no_torch
def test_book_env_says_run_it_from_the_live_env(run_cli, tmp_path) -> None:
    code, out, err = run_cli("calibrate", "--device", "cpu", "-o", str(tmp_path / "c"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "torch: not installed" in err and ".venv-live/bin/rackbook calibrate" in err
    assert not (tmp_path / "c").exists()


def test_from_json_writes_the_folder_without_torch(run_cli, tmp_path) -> None:
    cal = calibration.read_calibration()
    saved = tmp_path / "c.json"
    rows = json.loads(cal.kernels.to_json(orient="records"))
    saved.write_text(json.dumps({"run": {**cal.run, "kind": "recorded"}, "kernels": rows}))
    code, out, err = run_cli("calibrate", "--from-json", str(saved), "-o", str(tmp_path / "c"))
    assert (code, err) == (0, "")
    again = calibration.read_calibration(tmp_path / "c")
    assert again.run["kind"] == "recorded"
    pd.testing.assert_frame_equal(again.kernels, cal.kernels)
    # refusals: one line, exit 2, nothing written
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"run": cal.run, "kernels": [{**rows[0], "family": "warp"}]}))
    notjson = tmp_path / "not.json"
    notjson.write_text("{")
    for argv, problem in (
        (["calibrate", "--device", "cpu"], "-o: give the calibration folder"),
        (["calibrate", "--from-json", str(saved)], "--from-json: takes only -o DIR"),
        (
            ["calibrate", "--from-json", str(tmp_path / "nope.json"), "-o", str(tmp_path / "d")],
            "--from-json: not a file",
        ),  # fmt: skip
        (["calibrate", "-o", str(saved)], "-o: exists and is a file"),
        (["calibrate", "--from-json", str(bad), "-o", str(tmp_path / "d")], "kernels.family"),
        (["calibrate", "--from-json", str(notjson), "-o", str(tmp_path / "d")], "truncated JSON"),
    ):
        code, out, err = run_cli(*argv)
        assert code == 2 and problem in err and err.count("\n") == 1, err
    assert not (tmp_path / "d").exists()


def test_method_matches_the_reference() -> None:
    ref = json.loads(REFERENCE.read_text())["method"]
    for key in ("timing", "graphs", "bandwidth", "dense_gemm"):
        assert calibrate.METHOD[key] == ref[key]
    for key in ("experts", "indexer_scan", "sparse_attention"):
        assert key in calibrate.METHOD
    assert "96 distinct experts cycled in one graph" in calibrate.METHOD["experts"]
    assert set(calibrate.METHOD) == set(calibrate.CPU_METHOD)
    assert [c.name for c in schema.CALIBRATION_KERNELS] == list(calibrate.row(
        calibrate.Case("hbm_read", "bf16", 8, 8, None), 1.0))  # fmt: skip


def test_the_reference_page_has_the_calibration_format() -> None:
    text = schema.markdown_reference()
    assert "## Calibration folders" in text and "### kernels.parquet" in text
    for c in schema.CALIBRATION_KERNELS:
        assert f"| `{c.name}` | {c.dtype} |" in text
    for name in schema.CALIBRATION_RUN_FIELDS:
        assert f"| `{name}` |" in text


def test_every_catalog_gpu_is_matched_by_its_chip_name() -> None:
    gpus = _catalog().gpus
    for gid in gpus:
        assert calibrate.match_gpu(f"NVIDIA {gid.split('-')[0].upper()}", gpus) == gid


def test_a_folder_of_the_users_is_refused_before_any_work(run_cli, tmp_path) -> None:
    """-o naming a folder rackbook did not write: one line before the catalogs or torch are
    touched (with or without torch here), the folder left as it was."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, out, err = run_cli("calibrate", "--device", "cpu", "-o", str(mine))
    assert code == 2 and err.startswith(f"error: {mine}: -o: ") and err.count("\n") == 1, err
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


class _Bench:
    """calibrate.Bench without torch: every kernel takes 1 ms."""

    def __init__(self, *_a) -> None:
        self.cache: dict = {}

    def time(self, case) -> float:
        return 1e-3


def test_progress_is_a_plain_line_per_kernel(monkeypatch, capsys) -> None:
    """A line per kernel on stderr (a log file, a pipe or a terminal alike), never a carriage
    return; the rows are the kernels' in plan order."""
    monkeypatch.setattr(calibrate, "Bench", _Bench)
    hbm = calibrate.Case("hbm_read", "fp32", 1 << 20, 1 << 20, None)
    cases = [hbm, calibrate.Case("dense_gemm", "fp32", 256, None, 2.0 * 256**3)]
    rows = calibrate.measure(cases, None, "cpu", {})
    assert [r["family"] for r in rows] == ["hbm_read", "dense_gemm"]
    assert [r["seconds"] for r in rows] == [1e-3, 1e-3]
    err = capsys.readouterr().err
    assert err == "calibrate: 1/2 hbm_read fp32 1,048,576\ncalibrate: 2/2 dense_gemm fp32 256\n"


def test_a_calibration_without_a_data_sheet_says_why_in_a_whole_sentence(tmp_path) -> None:
    """Calibrate's line for a device without a data sheet (a CPU) and check's reason are whole
    sentences saying there is no attainable estimate and why, not a cut "needs a GPU's"."""
    line = calibrate.NO_ATTAINABLE
    assert line[0].isupper() and line.endswith(".") and "no attainable estimate" in line
    assert "data/hardware.yaml" in line and "a CPU" in line
    cpu = calibration.read_calibration()
    cpu.run = {**cpu.run, "spec": None}
    from rackbook.errors import InputError
    from rackbook.physics import attainable

    with pytest.raises(InputError) as exc:
        attainable.efficiencies(cpu)
    assert exc.value.problem.endswith("the share of a GPU's data sheet that its kernels reach")


def test_calibrate_never_replaces_or_deletes_a_file_of_the_users(run_cli, tmp_path) -> None:
    """`--save-json FILE` over an existing file, and `--from-json cal/rows.json -o cal` (the
    folder replaced whole would delete its own input), are refused before any timing."""
    mine = tmp_path / "mine.json"
    mine.write_text('{"mine": 1}\n')
    cal = tmp_path / "cal"
    cal.mkdir()
    (cal / "rows.json").write_text("{}\n")
    for argv, problem in (
        (["--device", "cpu", "-o", str(tmp_path / "c"), "--save-json", str(mine)], "exists"),
        (
            [
                "--device",
                "cpu",
                "-o",
                str(tmp_path / "c"),
                "--save-json",
                str(tmp_path / "c" / "s.json"),
            ],
            "inside",
        ),  # fmt: skip
        (["--from-json", str(cal / "rows.json"), "-o", str(cal)], "inside"),
    ):
        code, out, err = run_cli("calibrate", *argv)
        assert code == 2 and problem in err and err.count("\n") == 1, err
    assert mine.read_text() == '{"mine": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal", "mine.json"]
    assert [p.name for p in cal.iterdir()] == ["rows.json"]


def test_an_interrupted_calibrate_leaves_no_save_json_file(monkeypatch, tmp_path) -> None:
    """A signal (here: KeyboardInterrupt) after --save-json's file is written and before the
    folder is: the file goes too (was: left, while the one line said nothing was left)."""
    import argparse

    cal = calibration.read_calibration()
    rows = json.loads(cal.kernels.to_json(orient="records"))
    monkeypatch.setattr(calibrate, "calibrate", lambda *a, **k: (dict(cal.run), rows))

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibration, "write_calibration", interrupted)
    saved = tmp_path / "s.json"
    args = argparse.Namespace(device="cpu", quick=True, output=tmp_path / "c", save_json=saved,
                              argv=["calibrate", "--device", "cpu"])  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        calibrate._measure_and_write(args, None, tmp_path / "c", saved)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key,value", [("hbm_TBps", 1e-300), ("hbm_TBps", 5e6),
                                       ("bf16_dense_TFLOPs", 1e-3)])  # fmt: skip
def test_a_data_sheet_out_of_physical_range_is_refused(run_cli, tmp_path, key, value) -> None:
    """Issue 38: a data sheet of 1e-300 TB/s made the attainable estimate 57,084 (not 2,026)."""
    cal = calibration.read_calibration()
    rows = json.loads(cal.kernels.to_json(orient="records"))
    run = {**cal.run, "spec": {**cal.run["spec"], key: value}}
    saved = tmp_path / "c.json"
    saved.write_text(json.dumps({"run": run, "kernels": rows}))
    code, _, err = run_cli("calibrate", "--from-json", str(saved), "-o", str(tmp_path / "c"))
    assert code == 2 and f"run.json.spec.{key}: must be a number from" in err, err
    assert not (tmp_path / "c").exists()
