"""``rackbook import vllm-bench FILE -o T --gpu ID --gpus N``: the GPUs a user's benchmark ran on,
declared and recorded beside the importing machine, reach a this-run verdict in ``check``.

The fixture (``tests/fixtures/vllm-bench-v41-flash/synthetic-c8.json``) is synthetic: made-up
timings naming DeepSeek-V4.1-Flash, derived from no claim (its generator says how)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackbook.core import provenance
from rackbook.core.traces import read_trace
from rackbook.results import verdicts

FIXTURE = Path(__file__).parent / "fixtures" / "vllm-bench-v41-flash" / "synthetic-c8.json"
MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"


@pytest.fixture(scope="module")
def fixture_output_tok_s() -> float:
    """The fixture's output tokens per second over its duration (tokens/s, all GPUs)."""
    d = json.loads(FIXTURE.read_text())
    return sum(d["output_lens"]) / d["duration"]


def _check(run_cli, trace: Path, tok_s: float, gpu: str = "b300") -> tuple[int, str, str]:
    argv = ["--model", MODEL, "--gpu", gpu, "--gpus", "4", "--tok-s", f"{tok_s}", "--per", "gpu"]
    return run_cli("check", *argv, "--trace", str(trace))


def test_declared_gpus_are_recorded_beside_the_importing_machine(tmp_path, run_cli):
    out = tmp_path / "t"
    code, stdout, err = run_cli(
        "import", "vllm-bench", str(FIXTURE), "-o", str(out), "--gpu", "B300", "--gpus", "4"
    )
    assert code == 0, err
    assert stdout.strip().endswith(", on 4 x B300 (declared at import)"), stdout
    run = json.loads((out / "run.json").read_text())
    hw = run["hardware"]
    assert hw["declared"]["gpu"] == "b300" and hw["declared"]["count"] == 4
    assert hw["declared"]["catalog"] == "data/hardware.yaml"
    assert "declared" in hw["declared"]["by"] or "user" in hw["declared"]["by"]
    assert [g["name"] for g in hw["gpus"]] == ["B300"] * 4
    assert hw["importing_machine"]["cpu_cores"] >= 1  # this machine, kept apart
    assert provenance.hardware_label(run) == "4 x B300 (declared at import)"
    t = read_trace(out)
    assert t.points["num_gpus"].tolist() == [4]
    assert verdicts.can_test(t.run)  # recorded, Blackwell Ultra, the claims' model


def test_check_reads_this_run_on_the_declared_hardware(tmp_path, run_cli, fixture_output_tok_s):
    out = tmp_path / "t"
    assert run_cli("import", "vllm-bench", str(FIXTURE), "-o", str(out), "--gpu", "b300",
                   "--gpus", "4")[0] == 0  # fmt: skip
    per_gpu = fixture_output_tok_s / 4
    code, stdout, err = _check(run_cli, out, round(per_gpu, 1))
    assert code == 0, err
    line = stdout.splitlines()[-1]
    assert line.startswith("this run: consistent"), line
    assert f"{per_gpu:,.1f} tok/s per GPU" in line and "from the figure's " in line
    code, stdout, _ = _check(run_cli, out, per_gpu * 3)
    assert stdout.splitlines()[-1].startswith("this run: inconsistent")
    # another GPU than the one declared: untested, naming the declared hardware
    code, stdout, _ = _check(run_cli, out, per_gpu, gpu="h200")
    last = stdout.splitlines()[-1]
    assert last.startswith("this run: untested") and "4 x B300 (declared at import)" in last


def test_without_gpu_the_importing_machine_is_what_run_json_says(tmp_path, run_cli):
    out = tmp_path / "t"
    assert run_cli("import", "vllm-bench", str(FIXTURE), "-o", str(out))[0] == 0
    run = json.loads((out / "run.json").read_text())
    assert "declared" not in run["hardware"] and "importing machine" in run["hardware_note"]
    if run["hardware"]["gpus"]:
        pytest.skip("this machine has GPUs: the importing machine's may match")
    code, stdout, _ = _check(run_cli, out, 100.0)
    last = stdout.splitlines()[-1]
    assert code == 0 and last.startswith("this run: untested"), last
    assert "no point with a GPU count" in last and "--gpu ID --gpus N" in last, last


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--gpu", "b301", "--gpus", "4"], "data/hardware.yaml: gpus.b301: unknown GPU"),
        (["--gpu", "b300"], "--gpu: needs --gpus N too"),
        (["--gpus", "4"], "--gpus: needs --gpu ID too"),
        (["--gpus", "0", "--gpu", "b300"], "--gpus"),
        (["--gpu", "b300", "--gpus", "4", "--label", "num_gpus=2"], "--gpus: 4 differs"),
    ],
)
def test_bad_declarations_are_one_line_and_write_nothing(tmp_path, run_cli, extra, needle):
    out = tmp_path / "t"
    code, _, err = run_cli("import", "vllm-bench", str(FIXTURE), "-o", str(out), *extra)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert needle in err, err
    assert not out.exists()


def test_published_formats_refuse_a_declared_gpu(tmp_path, run_cli):
    src = Path(__file__).parent / "fixtures" / "published" / "inferencex-rows.json"
    code, _, err = run_cli(
        "import", "inferencex", str(src), "-o", str(tmp_path / "p"), "--gpu", "b300", "--gpus", "4"
    )
    assert code == 2 and "--gpu: only for vllm-bench" in err, err
