"""`rackbook book --traces DIR`: a reader's own traces build a book of their own, with their
numbers beside the published claims and the shipped recordings."""

from __future__ import annotations

import json
import shutil

import pytest

from rackbook import paths


@pytest.mark.slow
def test_own_traces_build_an_own_book(tmp_path, run_cli, executed, monkeypatch):
    monkeypatch.setattr(paths, "BUILD", tmp_path / "_build")  # not the shared book's build
    mine = tmp_path / "traces"
    shutil.copytree(paths.TRACES / "single-user", mine / "single-user")
    run = json.loads((mine / "single-user" / "run.json").read_text())
    run["trace_id"] = "mine-0001"
    (mine / "single-user" / "run.json").write_text(json.dumps(run))
    out = tmp_path / "yours"
    # the results without a trace of the reader's come from the suite's one executed set
    code, stdout, err = run_cli(
        "book", "--traces", str(mine), "--out", str(out), "--reuse", str(executed)
    )
    assert code == 0, err
    assert "your traces: single-user" in stdout
    assert "decode-parity: executed on the shipped trace already" in stdout
    doc = json.loads((out / "single-user.json").read_text())
    assert doc["trace_ids"] == ["mine-0001"]
    other = json.loads((out / "decode-parity.json").read_text())
    assert other["trace_ids"] != ["mine-0001"]  # ran on the shipped trace
    glance = (paths.BUILD / "site" / "book" / "generated" / "at-a-glance.md").read_text()
    assert glance.splitlines()[0].endswith(
        "| this run, your traces | this run, shipped recordings |"
    )
    reused = json.loads((executed / "decode-parity.json").read_text())
    dp = next(r for r in glance.splitlines() if "</notebooks/decode-parity>" in r)
    shipped_dp = next(r for r in reused["readings"] if r["reading"] == "this run")["verdict"]
    assert dp.endswith(f"| - | {shipped_dp} |")  # not the reader's: the shipped column has it
    su = next(r for r in glance.splitlines() if "</notebooks/single-user>" in r)
    yours = next(r for r in doc["readings"] if r["reading"] == "this run")["verdict"]
    assert su.split("|")[-3].strip() == yours
    assert (paths.BUILD / "html" / "notebooks" / "single-user.html").is_file()


def test_traces_folder_without_results_is_refused(tmp_path, run_cli):
    (tmp_path / "t" / "unrelated").mkdir(parents=True)
    code, _, err = run_cli("book", "--traces", str(tmp_path / "t"), "--out", str(tmp_path / "o"))
    assert code == 2 and err.count("\n") == 1 and "no trace folder named after a result" in err
