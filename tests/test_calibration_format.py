"""The calibration folder format: the shipped reference, round trips, one-line refusals."""

from __future__ import annotations

import json

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
