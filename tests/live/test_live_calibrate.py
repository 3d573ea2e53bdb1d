"""``rackbook calibrate --device cpu`` for real, with the live env's CPU torch (no vLLM server).

Marked ``live`` (it needs .venv-live's torch; skipped, with the reason, without it). The run
takes about 20 s on two idle cores (torch's import included); the interrupt test and the
device script's CPU run (``DEVICE=cpu QUICK=1 bash env/calibration/h200.sh``) about 10 s each.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time

import pytest

from rackbook.core import calibration
from rackbook.live.envfile import LIVE_VENV, live_python
from rackbook.paths import ROOT

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not live_python().is_file(),
        reason=f"live venv {LIVE_VENV} absent: run `make live-setup` to enable",
    ),
]


def _calibrate(*argv: str, **kw) -> subprocess.Popen:
    """``python -m rackbook.cli calibrate ARGV`` in the live env, on this checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [str(live_python()), "-m", "rackbook.cli", "calibrate", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw,
    )  # fmt: skip


def test_calibrate_cpu_writes_every_family(tmp_path) -> None:
    out = tmp_path / "cpu-calibration"
    proc = _calibrate("--device", "cpu", "-o", str(out))
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    assert stdout.strip().splitlines()[-1] == str(out)
    assert "expert_gemm fp32" in stdout and "no data sheet" in stdout  # the summary
    assert "\r" not in stderr and "calibrate: 1/" in stderr  # on a pipe: a line per kernel
    cal = calibration.read_calibration(out)
    k = cal.kernels
    assert set(k["family"]) == set(calibration.FAMILIES)
    assert all(math.isfinite(s) and s > 0 for s in k["seconds"])
    for col in ("bytes", "flops"):
        known = k[col].dropna()
        assert all(math.isfinite(v) and v > 0 for v in known)
    run = cal.run
    assert (run["kind"], run["device"], run["spec"]) == ("recorded", "cpu", None)
    assert run["shapes"]["hidden_size"] == 5120 and run["shapes"]["moe_intermediate_size"] == 2304
    assert run["versions"]["torch"].startswith("2.") and run["method"]["timing"].startswith("wall")
    assert run["commands"] == [f"rackbook calibrate --device cpu -o {out}"]
    assert "CPU calibration" in run["notes"]
    assert (k[k["family"] == "expert_gemm"]["bytes"] == 3 * 5120 * 2304 * 4).all()
    # FP8: timed where this CPU torch has _scaled_mm, else skipped and said so
    assert ("fp8" in set(k["dtype"])) != ("FP8 skipped" in run["notes"])


def test_cuda_where_there_is_none_is_one_line(tmp_path) -> None:
    proc = _calibrate("--device", "cuda", "-o", str(tmp_path / "c"))
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err.startswith("error: --device: cuda: torch ") and "sees no CUDA device" in err
    assert err.count("\n") == 1 and not (tmp_path / "c").exists()


def test_interrupted_leaves_nothing(tmp_path) -> None:
    """SIGINT while measuring (SIGTERM takes the same path: the CLI's handler, then the
    atomic write that never started). On a pipe the progress is a line per kernel: the first
    one is the event that says measuring has begun."""
    sig = signal.SIGINT
    out = tmp_path / "c"
    proc = _calibrate("--device", "cpu", "-o", str(out))
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + 300
    while "calibrate: 1/" not in seen and time.monotonic() < deadline:  # measuring begun
        chunk = os.read(proc.stderr.fileno(), 4096).decode(errors="replace")
        if not chunk:
            break
        seen += chunk
    assert "calibrate: 1/" in seen, seen[-1000:]
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err[-1000:]
    assert "nothing half-written" in err.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []  # no folder, no temporary


def test_device_script_runs_and_compares(tmp_path) -> None:
    """env/calibration/h200.sh's plumbing on CPU: calibrate, the folder and its JSON, then the
    figure-by-figure comparison (every H200 figure flagged: a CPU measures none of them)."""
    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu", "QUICK": "1",
           "PYTHON": str(live_python())}  # fmt: skip
    proc = subprocess.run(["bash", str(ROOT / "env/calibration/h200.sh")], env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "torch yes" in proc.stdout and "h200.sh: calibrate exit 0" in proc.stdout
    assert "0 of 34 figures within 15% of the reference; 34 flagged" in proc.stdout
    assert "h200.sh: compare exit 1" in proc.stdout
    cal = calibration.read_calibration(tmp_path / "h200-calibrate")
    assert cal.run["commands"][0].endswith(f"--save-json {tmp_path / 'h200-calibrate.json'}")
    assert (tmp_path / "calibrate.log").is_file()
