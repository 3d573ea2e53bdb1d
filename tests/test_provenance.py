"""A trace's provenance (:mod:`rackbook.core.provenance`): paths under the repository and the
home folder rewritten, the project's commit (``+dirty``), this machine's hardware, the
environment kept with secrets redacted, and the label saying where a trace was measured."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

import pytest

from rackbook.core import provenance, schema
from rackbook.core.provenance import (
    expand_repo,
    hardware_inventory,
    hardware_label,
    new_run_info,
    project_commit,
    repo_relative,
    scrub,
    scrub_files,
)
from rackbook.paths import ROOT

# ------------------------------------------------------------------------ paths


def test_repository_and_home_paths_are_rewritten(monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")
    root = str(ROOT)
    assert repo_relative(f"ran {root}/data/x.json in {root}") == "ran $REPO/data/x.json in $REPO"
    assert repo_relative("/home/alice/models/m and /home/alicex") == "~/models/m and /home/alicex"
    assert expand_repo("$REPO/data/x.json") == f"{root}/data/x.json"
    monkeypatch.setenv("HOME", "/")
    assert repo_relative("/usr//lib") == "/usr//lib"  # a home of "/" is not rewritten


def test_a_repository_reached_by_a_link_is_rewritten_by_both_paths(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setattr(provenance, "ROOT", tmp_path / "link")
    assert repo_relative(f"{real}/x and {tmp_path}/link/y") == "$REPO/x and $REPO/y"


def test_scrub_rewrites_every_string_of_a_copy():
    root = str(ROOT)
    obj = {"a": [f"{root}/x", (f"{root}/y", 3)], "b": None, "c": 1.5, f"{root}/k": True}
    got = scrub(obj)
    assert got == {"a": ["$REPO/x", ["$REPO/y", 3]], "b": None, "c": 1.5, f"{root}/k": True}
    assert obj["a"][0] == f"{root}/x"  # the original is unchanged


def test_scrub_files_rewrites_text_artifacts_only(tmp_path):
    root = str(ROOT).encode()
    files = {
        "a.json": b'{"p": "' + root + b'/x"}',
        "sub/b.log": b"\xff not UTF-8, at " + root + b"\n",
        "c.txt": b"at " + root,
        "e.txt": b"nothing to rewrite",
        "d.csv": root + b"/x",
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert scrub_files(tmp_path) == [
        tmp_path / "a.json",
        tmp_path / "c.txt",
        tmp_path / "sub" / "b.log",
    ]
    assert (tmp_path / "a.json").read_bytes() == b'{"p": "$REPO/x"}'
    assert (tmp_path / "sub" / "b.log").read_bytes() == b"\xff not UTF-8, at $REPO\n"
    assert (tmp_path / "d.csv").read_bytes() == root + b"/x"


# ------------------------------------------------------------------------ the commit


def _git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_and_whether_tracked_files_changed(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "data" / "traces").mkdir(parents=True)
    (repo / "a.txt").write_text("a")
    (repo / "data" / "traces" / "t.txt").write_text("t")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "x")
    sha = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(provenance, "ROOT", repo)
    (repo / "new.txt").write_text("untracked")
    assert project_commit() == sha  # untracked files do not count
    (repo / "data" / "traces" / "t.txt").write_text("a trace recorded")
    assert project_commit() == sha  # nor do the traces
    (repo / "a.txt").write_text("changed")
    assert project_commit() == sha + "+dirty"
    monkeypatch.setattr(provenance, "ROOT", tmp_path / "not-a-repo")
    assert project_commit() == "unknown"
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # git cannot run
    assert project_commit() == "unknown"


# ------------------------------------------------------------------------ the machine


def _fake_nvidia_smi(folder: Path, lines: str) -> None:
    """An ``nvidia-smi`` that answers only rackbook's query."""
    folder.mkdir()
    script = folder / "nvidia-smi"
    query = "--query-gpu=name,memory.total,driver_version"
    script.write_text(
        f'#!/bin/sh\n[ "$1" = "{query}" ] && [ "$2" = "--format=csv,noheader" ] || exit 1\n'
        f"printf '{lines}'\n"
    )
    script.chmod(0o755)


def test_hardware_inventory_of_this_machine_and_its_gpus(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path / "bin", "NVIDIA H200, 143771 MiB, 570.1\\n B200 , 1 MiB ,  9 \\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    hw = hardware_inventory()
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln[:10] == "model name"]
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert hw == {
        "cpu_model": names[0] if names else platform.processor(),
        "cpu_cores": os.cpu_count(),
        "memory_bytes": mem,
        "host": platform.node(),
        "hosts": 1,
        "gpus": [
            {"name": "NVIDIA H200", "memory": "143771 MiB", "driver": "570.1"},
            {"name": "B200", "memory": "1 MiB", "driver": "9"},
        ],
        "machine": platform.machine(),
    }


def test_a_gpu_line_not_of_three_fields_ends_the_list(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path / "bin", "H200, 1 MiB, 5\\nbroken line\\nH100, 2 MiB, 6\\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    assert hardware_inventory()["gpus"] == [{"name": "H200", "memory": "1 MiB", "driver": "5"}]


def test_no_nvidia_smi_no_gpus(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert hardware_inventory()["gpus"] == []


# ------------------------------------------------------------------------ run.json


def test_a_new_run_info_keeps_behaviour_changing_variables_redacted(monkeypatch):
    for k in [k for k in os.environ if k.startswith(provenance.ENV_PREFIXES)]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("VLLM_API_KEY", "s3cret")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("RACKBOOK_ROOT", str(ROOT))
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    monkeypatch.setenv("MY_PASSWORD", "x")  # not a kept prefix
    monkeypatch.setenv("XVLLM_", "x")
    root = str(ROOT)
    run = new_run_info(
        kind="recorded",
        commands=[f"{root}/env/run.sh"],
        parameters={"n": 3},
        engine={"name": "vllm"},
        extra_field=f"{root}/x",
    )
    assert run["environment"] == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "DO_NOT_TRACK": "1",
        "HF_TOKEN": "<redacted>",
        "RACKBOOK_ROOT": "$REPO",
        "VLLM_API_KEY": "<redacted>",
    }
    assert list(run["environment"]) == sorted(run["environment"])
    assert run["schema_version"] == schema.SCHEMA_VERSION and run["kind"] == "recorded"
    assert re.fullmatch(r"[0-9a-f]{12}", run["trace_id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", run["created"])
    assert run["commands"] == ["$REPO/env/run.sh"] and run["extra_field"] == "$REPO/x"
    assert (run["parameters"], run["engine"], run["notes"]) == ({"n": 3}, {"name": "vllm"}, "")
    assert run["project_commit"] == project_commit()
    assert run["hardware"]["hosts"] == 1 and run["recorded_by"]
    assert "generator" not in run
    other = new_run_info(
        kind="synthetic", commands=[], parameters={}, engine={}, generator={"seed": 0}, notes="n"
    )
    assert other["recorded_by"] is None and other["generator"] == {"seed": 0}
    assert other["notes"] == "n" and other["trace_id"] != run["trace_id"]


# ------------------------------------------------------------------------ the label


@pytest.mark.parametrize(
    ("run", "label"),
    [
        (
            {"hardware": {"declared": {}, "gpus": [{"name": "B"}, {"name": "A"}, {"name": "B"}]}},
            "3 x A, B (declared at import)",
        ),
        ({"hardware": {"declared": {}, "gpus": [{}]}}, "1 x GPU (declared at import)"),
        (
            {"hardware": {"declared": {"gpu": "x"}, "gpus": [], "cpu_cores": 8, "cpu_model": "C"}},
            "8-core C, no GPU",
        ),
        (
            {"hardware": {"declared": "x", "gpus": [{"name": "H200"}]}},
            "1 x H200",
        ),
        (
            {"server": {"same_host": False, "gpus": []}},
            "an endpoint whose GPUs were not declared (RACKBOOK_SERVER_GPUS)",
        ),
        (
            {"server": {"gpus": [{"name": "H200"}] * 2}, "hardware": {"gpus": [{"name": "X"}]}},
            "2 x H200 (declared for the endpoint)",
        ),
        (
            {"server": {"same_host": True, "gpus": []}, "hardware": {"gpus": [{"name": "X"}]}},
            "1 x X",
        ),
        ({"server": "remote", "hardware": None}, "?-core unknown CPU, no GPU"),
        (
            {"hardware": {"cpu_cores": 4, "cpu_model": "", "hosts": None}},
            "4-core unknown CPU, no GPU",
        ),
        ({"hardware": {"gpus": [{"name": "H200"}] * 8, "hosts": 2}}, "8 x H200, 2 hosts"),
        ({"hardware": {"cpu_cores": 2, "cpu_model": "C", "hosts": 1}}, "2-core C, no GPU"),
    ],
)
def test_hardware_label(run, label):
    assert hardware_label(run) == label
