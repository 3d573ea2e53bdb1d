"""The calibration folder format: the shipped reference, round trips, one-line refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from rackbook import paths
from rackbook.core import calibration
from rackbook.errors import InputError

REFERENCE = paths.DATA / "calibration" / "h200-kernels.reference.json"


def test_shipped_is_the_reference_converted() -> None:
    shipped = calibration.read_calibration()
    assert shipped.run["kind"] == "published" and shipped.run["gpu"] == "NVIDIA H200"
    assert "not a run of rackbook calibrate" in shipped.run["notes"]
    _run, kernels = calibration.from_reference(json.loads(REFERENCE.read_text()), "x")
    pd.testing.assert_frame_equal(
        shipped.kernels, calibration.validate(_run, kernels, "x"), check_exact=False, rtol=1e-12
    )


def test_reference_rates_recovered() -> None:
    cal = calibration.read_calibration()
    read = cal.family("hbm_read").iloc[0]
    assert read["bytes"] / read["seconds"] / 1e12 == pytest.approx(4.3336, rel=1e-4)
    fp8 = cal.family("dense_gemm", "fp8")
    assert list(fp8["size"]) == [8192, 16384]
    assert fp8["flops"].iloc[0] / fp8["seconds"].iloc[0] / 1e12 == pytest.approx(1450.53, rel=1e-4)
    experts = cal.family("expert_gemm", "fp8")
    assert experts["seconds"].iloc[0] == pytest.approx(13.867e-6)
    assert experts["bytes"].iloc[0] == 3 * 5120 * 2304  # one byte per FP8 weight


def test_round_trip(tmp_path) -> None:
    cal = calibration.read_calibration()
    out = calibration.write_calibration(tmp_path / "c", cal.run, cal.kernels)
    again = calibration.read_calibration(out)
    pd.testing.assert_frame_equal(again.kernels, cal.kernels)
    assert again.run == cal.run


@pytest.mark.parametrize(
    ("column", "value", "field"),
    [
        ("family", "warp_drive", "kernels.family"),
        ("seconds", 0.0, "kernels.seconds"),
        ("seconds", np.inf, "kernels.seconds"),
        ("bytes", -1.0, "kernels.bytes"),
        ("dtype", "int3", "kernels.dtype"),
    ],
)
def test_bad_rows_refused(tmp_path, column, value, field) -> None:
    cal = calibration.read_calibration()
    bad = cal.kernels.copy()
    bad.loc[3, column] = value
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        calibration.write_calibration(tmp_path / "c", cal.run, bad)
    assert not (tmp_path / "c").exists()


def test_not_a_calibration(tmp_path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        calibration.read_calibration(tmp_path / "nope")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "run.json").write_text(json.dumps({"content": "trace"}))
    with pytest.raises(InputError, match=r"run\.json\.schema_version: missing required field"):
        calibration.read_calibration(tmp_path / "t")


# ------------------------------------------------------------------------ by hand

_COLS = ["family", "dtype", "size", "seconds", "bytes", "flops"]


def _kernels(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=_COLS)


def test_label_and_family_rows_sorted_by_size() -> None:
    rows = [
        ("expert_gemm", "fp8", 4, 1.0, None, None),
        ("expert_gemm", "bf16", 1, 2.0, None, None),
        ("expert_gemm", "fp8", 1, 3.0, None, None),
        ("hbm_read", "bf16", 8, 4.0, 8.0, None),
    ]
    run = {"kind": "recorded", "gpu": "G", "created": "2026-12-07T10:00:00+00:00"}
    cal = calibration.Calibration(run, _kernels(rows))
    assert cal.label == "G (rackbook calibrate, 2026-12-07)"
    cal.run["kind"] = "published"
    assert cal.label == "G (published measurement, 2026-12-07)"
    fp8 = cal.family("expert_gemm", "fp8")
    assert (fp8["size"].tolist(), fp8["seconds"].tolist(), fp8.index.tolist()) == (
        [1, 4],
        [3.0, 1.0],
        [0, 1],
    )
    assert cal.family("expert_gemm")["seconds"].tolist() == [2.0, 3.0, 1.0]  # stable on ties
    assert list(fp8.columns) == _COLS  # the index dropped, not kept as a column
    assert cal.family("dense_gemm").empty


def test_a_shape_timed_twice_is_refused_by_its_row() -> None:
    rows = [
        ("hbm_read", "bf16", 8, 1.0, 8.0, None),
        ("hbm_read", "fp8", 8, 1.0, 8.0, None),
        ("hbm_read", "bf16", 8, 2.0, 8.0, None),  # the first shape again, another time
    ]
    with pytest.raises(InputError) as err:
        calibration._conform(_kernels(rows), "c")
    assert str(err.value) == "c: kernels: row 2 repeats a family, dtype and size"


def _run(**change):
    run = dict(calibration.read_calibration().run)
    return {**run, **change}


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"content": "trace"}, "run.json.content", "'trace' is not one of calibration"),
        ({"kind": "synthetic"}, "run.json.kind", "'synthetic' is not one of recorded, published"),
        ({"device": "tpu"}, "run.json.device", "'tpu' is not one of cuda, cpu"),
        ({"spec": [4.8]}, "run.json.spec", "expected an object or null"),
        (
            {"spec": {"hbm_TBps": 0.0999}},
            "run.json.spec.hbm_TBps",
            "must be a number from 0.1 to 1000 or null, got 0.0999",
        ),
        (
            {"spec": {"hbm_TBps": 1000.001}},
            "run.json.spec.hbm_TBps",
            "must be a number from 0.1 to 1000 or null, got 1000.001",
        ),
        (
            {"spec": {"hbm_TBps": True}},
            "run.json.spec.hbm_TBps",
            "must be a number from 0.1 to 1000 or null, got True",
        ),
        (
            {"spec": {"bf16_dense_TFLOPs": 0.999}},
            "run.json.spec.bf16_dense_TFLOPs",
            "must be a number from 1 to 1e+06 or null, got 0.999",
        ),
        (
            {"spec": {"fp8_dense_TFLOPs": "1979"}},
            "run.json.spec.fp8_dense_TFLOPs",
            "must be a number from 1 to 1e+06 or null, got '1979'",
        ),
        (
            {"spec": {"fp8_dense_TFLOPs": 1_000_001}},
            "run.json.spec.fp8_dense_TFLOPs",
            "must be a number from 1 to 1e+06 or null, got 1000001",
        ),
    ],
)
def test_run_refused_by_field_and_problem(change, field, problem) -> None:
    with pytest.raises(InputError) as err:
        calibration.validate(_run(**change), calibration.read_calibration().kernels, "w")
    assert str(err.value) == f"w: {field}: {problem}"


def test_the_data_sheet_accepted_at_both_ends_of_each_range() -> None:
    kernels = calibration.read_calibration().kernels
    for spec in (
        None,
        {},
        {"hbm_TBps": 0.1, "bf16_dense_TFLOPs": 1, "fp8_dense_TFLOPs": 1.0},
        {"hbm_TBps": 1000, "bf16_dense_TFLOPs": 1e6, "fp8_dense_TFLOPs": None},
    ):
        assert len(calibration.validate(_run(spec=spec), kernels, "w")) == len(kernels)


def test_a_calibration_folder_that_is_a_file_or_lacks_run_json(tmp_path) -> None:
    what = "a calibration folder from rackbook calibrate: run.json and kernels.parquet"
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(InputError) as err:
        calibration.read_calibration(f)
    assert str(err.value) == f"{f}: calibration: is not a folder ({what})"
    with pytest.raises(InputError) as err:
        calibration.read_calibration(tmp_path / "nope")
    assert str(err.value) == f"{tmp_path / 'nope'}: calibration: does not exist ({what})"
    with pytest.raises(InputError) as err:
        calibration.read_calibration(tmp_path)
    run_json = tmp_path / "run.json"
    assert str(err.value) == f"{run_json}: -: missing run.json (not a calibration folder)"
    assert calibration.read_calibration().path == calibration.SHIPPED


def test_a_saved_json_refused_by_shape(tmp_path) -> None:
    cal = calibration.read_calibration()
    rows = json.loads(cal.kernels.to_json(orient="records"))
    p = tmp_path / "s.json"
    with pytest.raises(InputError) as err:
        calibration.read_saved(p)
    assert str(err.value) == f"{p}: --from-json: not a file (a --save-json file of calibrate)"
    shape = 'expected {"run": {...}, "kernels": [rows]}'
    for obj in (
        [],
        {"run": cal.run},
        {"run": [], "kernels": rows},
        {"run": cal.run, "kernels": {}},
    ):
        p.write_text(json.dumps(obj))
        with pytest.raises(InputError) as err:
            calibration.read_saved(p)
        assert str(err.value) == f"{p}: -: {shape}"
    p.write_text(json.dumps({"run": cal.run, "kernels": [[1, 2]]}))
    with pytest.raises(InputError) as err:
        calibration.read_saved(p)
    assert (err.value.field, err.value.problem[:18]) == ("kernels", "not a list of rows")
    p.write_text(json.dumps({"run": cal.run, "kernels": rows}))
    run, kernels = calibration.read_saved(p)
    assert run == cal.run
    pd.testing.assert_frame_equal(kernels, cal.kernels)


_REF = {
    "bandwidth": {"bytes": 1000, "read_TBps": 2.0, "copy_rw_TBps": 4.0},
    "dense_gemm": {"bf16_10_TFLOPs": 1.0},
    "experts": [
        {"dtype": "fp8", "M": 2, "us_per_expert": 5.0},
        {"dtype": "bf16", "M": 1, "us_per_expert": 10.0},
    ],
    "indexer_scan": [{"keys": 100, "us": 3.0, "key_bytes": 400}],
    "sparse_attention": [{"pool_rows": 50, "us": 2.0}],
    "gpu": "G",
    "nvidia_smi": "G, 580.1, 1980 MHz",
    "what": "One G (torch 2.1.0+a; torch 2.11.0+cu130, nccl 3+x, 2.5 GHz), at",
    "spec_H200": {"hbm_TBps": 4.8, "bf16_dense_TFLOPs": 989, "fp8_dense_TFLOPs": 1979, "x": 1},
    "method": {"timing": "t"},
    "repeatability": "Agreed.",
}


def test_from_reference_by_hand() -> None:
    run, k = calibration.from_reference(_REF, "ref.json")
    per_expert = 3 * 5120 * 2304  # weights of one expert
    nan = float("nan")
    want = [
        ("hbm_read", "bf16", 1000, 1000 / 2e12, 1000.0, nan),
        ("hbm_copy", "bf16", 1000, 2000 / 4e12, 2000.0, nan),
        ("dense_gemm", "bf16", 10, 2000 / 1e12, nan, 2000.0),  # 2 n^3 FLOP
        ("expert_gemm", "fp8", 2, 5.0 * 1e-6, per_expert * 1.0, 2.0 * 2 * per_expert),
        ("expert_gemm", "bf16", 1, 10.0 * 1e-6, per_expert * 2.0, 2.0 * per_expert),
        ("indexer_scan", "bf16", 100, 3.0 * 1e-6, 400.0, nan),
        ("sparse_attention", "bf16", 50, 2.0 * 1e-6, nan, nan),
    ]
    want_k = _kernels(want).astype({"size": "int64"})
    pd.testing.assert_frame_equal(k, want_k, check_exact=True)
    assert run["versions"] == {"torch": "2.11.0+cu130", "driver": "580.1", "cuda": None}
    assert run["spec"] == {"hbm_TBps": 4.8, "bf16_dense_TFLOPs": 989, "fp8_dense_TFLOPs": 1979}
    assert (run["content"], run["kind"], run["device"]) == ("calibration", "published", "cuda")
    assert (run["gpu"], run["hardware"], run["source"]) == ("G", "G, 580.1, 1980 MHz", "ref.json")
    assert run["shapes"] == calibration.REF_SHAPES and run["method"] == {"timing": "t"}
    assert run["commands"] == ["rackbook.core.calibration.from_reference('ref.json')"]
    assert run["notes"] == (
        "Converted from a reference kernel measurement on one H200 SXM (700 W), not a run of "
        f"rackbook calibrate: {_REF['what']} Agreed."
    )
    assert run["created"][:2] == "20" and run["created"].endswith("+00:00")
    calibration.validate(run, k, "ref.json")  # a valid calibration
    bare = {**_REF, "nvidia_smi": "G, 570.9", "what": "no versions"}
    del bare["repeatability"]
    run, _ = calibration.from_reference(bare, "b")
    assert run["versions"] == {"torch": None, "driver": "570.9", "cuda": None}
    assert run["notes"].endswith("rackbook calibrate: no versions ")
    del bare["nvidia_smi"], bare["what"]
    run, _ = calibration.from_reference(bare, "b")
    assert run["versions"]["driver"] is None and run["hardware"] == ""
    assert run["notes"].endswith("not a run of rackbook calibrate:  ")


def _compared(tolerance: float = calibration.TOLERANCE) -> pd.DataFrame:
    ref = _kernels(
        [
            ("hbm_read", "bf16", 1000, 1.0, 4e12, None),  # 4 TB/s
            ("hbm_copy", "bf16", 1000, 2.0, 4e12, None),  # 2 TB/s, not measured
            ("dense_gemm", "bf16", 10, 2.0, None, 2e12),  # 1 TFLOP/s
            ("expert_gemm", "fp8", 2, 3.0, 10.0, 20.0),  # 3,000,000 us
            ("indexer_scan", "bf16", 100, 1e-6, 400.0, None),  # 1 us, not measured
        ]
    )
    measured = _kernels(
        [
            ("hbm_read", "bf16", 1000, 2.0, 4e12, None),
            ("dense_gemm", "bf16", 10, 2.0, None, 2e12),
            ("expert_gemm", "fp8", 2, 2.0, 10.0, 20.0),
            ("expert_gemm", "fp8", 4, 2.0, 10.0, 20.0),  # not in the reference
        ]
    )
    return calibration.compare(measured, ref, tolerance)


def test_compare_by_hand() -> None:
    t = _compared()
    assert t["unit"].tolist() == ["TB/s", "TB/s", "TFLOP/s", "us", "us"]
    assert t["reference"].tolist() == [4.0, 2.0, 1.0, 3e6, 1.0]
    nan = [math.isnan(x) for x in t["measured"]]
    assert nan == [False, True, False, False, True] == [math.isnan(x) for x in t["ratio"]]
    assert t["measured"][[0, 2, 3]].tolist() == [2.0, 1.0, 2e6]
    assert t["ratio"][[0, 2, 3]].tolist() == [0.5, 1.0, 1.5]
    assert t["flagged"].tolist() == [True, True, False, True, True]
    assert t["size"].tolist() == [1000, 1000, 10, 2, 100] and t["family"][1] == "hbm_copy"
    # exactly at the tolerance: not flagged
    assert _compared(0.5)["flagged"].tolist() == [False, True, False, False, True]


def test_compare_lines_by_hand() -> None:
    assert calibration.compare_lines(_compared()) == [
        "figure                                reference     measured   ratio",
        "hbm_read bf16 1,000                           4            2   0.500 TB/s"
        "  <-- off by > 15%",
        "hbm_copy bf16 1,000                           2 not measured       - TB/s"
        "  <-- not measured",
        "dense_gemm bf16 10                            1            1   1.000 TFLOP/s",
        "expert_gemm fp8 2                         3e+06        2e+06   1.500 us  <-- off by > 15%",
        "indexer_scan bf16 100                         1 not measured       - us  <-- not measured",
        "1 of 5 figures within 15% of the reference; 4 flagged",
    ]
    lines = calibration.compare_lines(_compared(0.5), 0.5)
    assert lines[1].endswith("0.500 TB/s") and lines[-1] == (
        "3 of 5 figures within 50% of the reference; 2 flagged"
    )
    assert calibration.compare_lines(_compared(0.5).iloc[[0, 2, 3]], 0.5)[-1] == (
        "3 of 3 figures within 50% of the reference"
    )


def _refused(call) -> InputError:
    with pytest.raises(InputError) as err:
        call()
    return err.value


def test_every_refusal_names_the_file_it_read(tmp_path) -> None:
    cal = calibration.read_calibration()
    bad = cal.kernels.copy()
    bad.loc[3, "family"] = "warp"
    rule = "kernels.family"
    assert _refused(lambda: calibration.validate(cal.run, bad, "w")).file == "w"
    err = _refused(lambda: calibration.validate(cal.run, cal.kernels.drop(columns="seconds"), "w"))
    assert str(err) == "w: kernels.seconds: missing column"
    out = tmp_path / "out"
    err = _refused(lambda: calibration.write_calibration(out, cal.run, bad))
    assert (err.file, err.field) == (str(out), rule) and not out.exists()
    # a folder: run.json's problems name run.json, the table's name kernels.parquet
    folder = tmp_path / "c"
    calibration.write_calibration(folder, cal.run, cal.kernels)
    bad.to_parquet(folder / "kernels.parquet")
    err = _refused(lambda: calibration.read_calibration(folder))
    assert (err.file, err.field) == (str(folder / "kernels.parquet"), rule)
    run_json = folder / "run.json"
    run_json.write_text(json.dumps({**cal.run, "device": "tpu"}))
    err = _refused(lambda: calibration.read_calibration(folder))
    assert str(err) == f"{run_json}: run.json.device: 'tpu' is not one of cuda, cpu"
    run_json.write_text(json.dumps({k: v for k, v in cal.run.items() if k != "gpu"}))
    err = _refused(lambda: calibration.read_calibration(folder))
    assert str(err) == f"{run_json}: run.json.gpu: missing required field"
    # a --save-json file
    saved = tmp_path / "s.json"
    rows = json.loads(bad.to_json(orient="records"))
    saved.write_text(json.dumps({"run": cal.run, "kernels": rows}))
    err = _refused(lambda: calibration.read_saved(saved))
    assert (err.file, err.field) == (str(saved), rule)
    saved.write_text(json.dumps({"run": cal.run, "kernels": [[1, 2]]}))
    assert _refused(lambda: calibration.read_saved(saved)).file == str(saved)


def test_a_written_calibration_is_marked_and_zstd_compressed(tmp_path) -> None:
    import pyarrow.parquet as pq

    cal = calibration.read_calibration()
    out = calibration.write_calibration(tmp_path / "c", cal.run, cal.kernels)
    marker = (out / ".rackbook-output").read_text().splitlines()
    head = "Written by rackbook calibrate. rackbook replaces or deletes only the"
    assert marker[:2] == ["rackbook output: calibration", head]
    meta = pq.ParquetFile(out / "kernels.parquet").metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    calibration.write_calibration(out, cal.run, cal.kernels)  # its own folder: replaced
