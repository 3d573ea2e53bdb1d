"""The cache of executed chapters never serves a stale one: each input that decides a chapter's
output, changed in turn, executes it again; nothing changed serves it from the runner.

Papermill is replaced by a fake that copies the notebook and writes the headline JSON, on a
small copy of the repository's inputs, so these tests execute no kernel."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from rackbook import paths
from rackbook.book import build, runner
from rackbook.errors import InputError

RESULT = "decode-parity"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository root with the notebook, the shared inputs, a tiny trace and a package."""
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy2(paths.NOTEBOOKS / f"{RESULT}.ipynb", root / "notebooks")
    data = root / "data"
    data.mkdir()
    for name in ("claims.yaml", "hardware.yaml"):
        shutil.copy2(paths.DATA / name, data / name)
    shutil.copytree(paths.DATA / "models", data / "models")
    (data / "published").mkdir()
    shutil.copy2(paths.DATA / "published" / "figures.yaml", data / "published" / "figures.yaml")
    trace = data / "traces" / RESULT
    trace.mkdir(parents=True)
    (trace / "run.json").write_text('{"a": 1}\n')
    (trace / "requests.parquet").write_bytes(b"rows-v1")
    (root / "env").mkdir()
    (root / "env" / "requirements-book.lock").write_text("numpy==1\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "metrics.py").write_text("X = 1\n")
    for name, value in (
        ("ROOT", root),
        ("DATA", data),
        ("TRACES", data / "traces"),
        ("NOTEBOOKS", root / "notebooks"),
        ("EXECUTED", root / "_build" / "executed"),
    ):
        monkeypatch.setattr(paths, name, value)
    monkeypatch.setattr(runner, "PACKAGE_SOURCE", pkg)
    return root


@pytest.fixture
def executions(monkeypatch):
    """Replace the notebook's execution (papermill, in its child process); the list grows by
    one entry per notebook executed."""
    calls: list[dict] = []

    def fake(inp, out, parameters, *a, **kw):
        calls.append(dict(parameters))
        shutil.copyfile(inp, out)
        out_dir = Path(kw.get("stage") or parameters["out_dir"])  # the run's staging folder
        name = Path(inp).stem
        doc = {"result": name, "n": len(calls), "t": time.time_ns()}
        (out_dir / f"{name}.json").write_text(json.dumps(doc))

    monkeypatch.setattr(runner, "execute_notebook", fake)
    return calls


def _run(**kw) -> bool:
    """Run the chapter; True when it was executed, False when served from the runner."""
    kw.setdefault("parameters", {})
    return not runner.execute_result(RESULT, "trace", **kw)[1]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _edit(path: Path, text: str = "\n# changed\n") -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text)


CHANGES = {
    "notebook": lambda r: _edit(r / "notebooks" / f"{RESULT}.ipynb", " "),
    "trace file": lambda r: (r / "data/traces" / RESULT / "requests.parquet").write_bytes(b"v2"),
    "trace gains a file": lambda r: (r / "data/traces" / RESULT / "extra.parquet").write_bytes(b""),
    "trace file renamed": lambda r: (r / "data/traces" / RESULT / "run.json").rename(
        r / "data/traces" / RESULT / "run2.json"
    ),
    "claims registry": lambda r: _edit(r / "data" / "claims.yaml"),
    "hardware catalog": lambda r: _edit(r / "data" / "hardware.yaml"),
    "model catalog": lambda r: _edit(next((r / "data" / "models").glob("*.yaml"))),
    "published data": lambda r: _edit(r / "data" / "published" / "figures.yaml"),
    "published data gains a trace": lambda r: (r / "data/published/new").mkdir(),
    "book template": lambda r: _write(r / "book" / "_template" / "card.md.j2", "x"),
    "lock file": lambda r: _edit(r / "env" / "requirements-book.lock", "pandas==3\n"),
    "package source": lambda r: _edit(runner.PACKAGE_SOURCE / "metrics.py", "Y = 2\n"),
    "package gains a module": lambda r: (runner.PACKAGE_SOURCE / "new.py").write_text(""),
}


def test_nothing_changed_is_served_from_the_cache(repo, executions):
    assert _run() is True
    headline = (paths.EXECUTED / f"{RESULT}.json").read_bytes()
    assert _run() is False and _run() is False
    assert len(executions) == 1
    assert (paths.EXECUTED / f"{RESULT}.json").read_bytes() == headline


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_input_changed_executes_the_chapter_again(repo, executions, change):
    assert _run() is True
    assert _run() is False
    CHANGES[change](repo)
    assert _run() is True, f"{change}: stale chapter served from the cache"
    assert _run() is False
    assert len(executions) == 2


def test_a_parameter_changed_executes_again(repo, executions):
    assert _run() is True
    assert _run(parameters={"band_pct": 5}) is True
    assert _run(parameters={"band_pct": 5}) is False
    assert _run(parameters={"band_pct": 7}) is True
    assert _run() is True  # back to the default: the outputs now hold band_pct 7


def test_another_trace_folder_is_hashed_by_content(repo, executions, monkeypatch):
    from rackbook.results import registry

    # the stand-in traces of this repository are not readable traces: hashing is the point
    monkeypatch.setattr(registry, "check_trace", lambda *a, **k: {})
    other = repo / "mine"
    shutil.copytree(repo / "data/traces" / RESULT, other)
    assert _run(parameters={"trace": str(other)}) is True
    assert _run(parameters={"trace": str(other)}) is False
    run = json.loads((other / "run.json").read_text())  # a valid trace, changed
    (other / "run.json").write_text(json.dumps({**run, "notes": "changed"}))
    assert _run(parameters={"trace": str(other)}) is True
    # the shipped trace changing does not concern a run on another trace
    (repo / "data/traces" / RESULT / "run.json").write_text('{"a": 3}\n')
    assert _run(parameters={"trace": str(other)}) is False


def test_another_chapters_trace_does_not_execute_this_one(repo, executions):
    other = repo / "data" / "traces" / "single-user"
    other.mkdir()
    assert _run() is True
    (other / "run.json").write_text("{}")
    assert _run() is False


@pytest.mark.parametrize("output", ["ipynb", "json"])
def test_outputs_changed_or_removed_execute_again(repo, executions, output):
    assert _run() is True
    f = paths.EXECUTED / f"{RESULT}.{output}"
    _edit(f, " ")
    assert _run() is True
    f.unlink()
    assert _run() is True
    assert _run() is False


def test_force_and_a_lost_stamp_execute_again(repo, executions):
    assert _run() is True
    assert _run(force=True) is True
    runner.stamp_path(paths.EXECUTED, RESULT).write_text("not json")
    assert _run() is True
    assert _run() is False


def test_another_output_folder_has_its_own_outputs(repo, executions):
    assert _run() is True
    assert _run(out=repo / "elsewhere") is True
    assert _run(out=repo / "elsewhere") is False


def test_live_runs_are_never_cached(repo, executions):
    for _ in range(2):
        runner.execute_result(RESULT, "live", {}, None, False)
    assert len(executions) == 2
    assert not runner.stamp_path(paths.EXECUTED, RESULT).exists()


def test_a_failed_execution_leaves_no_stamp(repo, executions, monkeypatch):
    assert _run() is True

    def broken(inp, out, parameters, *a, **kw):
        raise KeyboardInterrupt

    _edit(repo / "data" / "claims.yaml")
    monkeypatch.setattr(runner, "execute_notebook", broken)
    with pytest.raises(KeyboardInterrupt):
        _run()
    assert not runner.stamp_path(paths.EXECUTED, RESULT).exists()


def test_pool_reports_in_the_given_order_and_raises_the_first_failure(monkeypatch):
    finished = []

    def fake(result, source, params, out, progress, force):
        time.sleep(0.3 if result == "a" else 0.0)
        if result in ("c", "d"):
            raise InputError(result, "f", "broken")
        return Path(f"/x/{result}.json"), result == "b"

    monkeypatch.setattr(runner, "execute_result", fake)
    monkeypatch.setattr(runner, "cached_headline", lambda *a: None)
    with pytest.raises(InputError, match="^c: f: broken$"):
        runner.run_chapters(["a", "b", "c", "d"], "trace", {}, None, jobs=1, report=finished.append)
    assert [d.result for d in finished] == ["a", "b", "c", "d"]
    assert [d.cached for d in finished] == [False, True, False, False]
    assert finished[2].error == ("c", "f", "broken") and finished[0].headline == Path("/x/a.json")


@pytest.mark.skipif(os.name != "posix", reason="forked workers carry the fake")
def test_pool_in_processes_keeps_the_order(monkeypatch):
    import multiprocessing

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("a spawned worker cannot unpickle a local fake executor")
    finished = []

    def fake(result, source, params, out, progress, force):
        time.sleep(0.5 if result == "a" else 0.0)
        return Path(f"/x/{result}.json"), False

    def cached(r, *a):
        return Path(f"/c/{r}.json") if r == "b" else None

    monkeypatch.setattr(runner, "execute_result", fake)
    monkeypatch.setattr(runner, "cached_headline", cached)
    runner.run_chapters(["a", "b", "c"], "trace", {}, None, jobs=2, report=finished.append)
    assert [d.result for d in finished] == ["a", "b", "c"]
    assert [d.cached for d in finished] == [False, True, False]
    assert finished[1].headline == Path("/c/b.json")


def test_sync_rewrites_only_changed_files(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    for d in (src, dst):
        (d / "book").mkdir(parents=True)
        (d / "book" / "same.md").write_text("same")
        (d / "book" / "edit.md").write_text("old")
    (dst / "gone").mkdir()
    (dst / "gone" / "old.md").write_text("x")
    (src / "book" / "edit.md").write_text("new")
    (src / "new.md").write_text("n")
    past = time.time() - 1000
    for f in ("book/same.md", "book/edit.md"):
        os.utime(dst / f, (past, past))
    changed = build.sync_tree(src, dst)
    assert changed == ["book/edit.md", "gone/old.md", "new.md"]
    assert (dst / "book" / "same.md").stat().st_mtime == past
    assert (dst / "book" / "edit.md").read_text() == "new"
    assert (dst / "book" / "edit.md").stat().st_mtime > past
    assert not (dst / "gone").exists() and (dst / "new.md").read_text() == "n"
    assert build.tree_digest(src) == build.tree_digest(dst)
    (dst / "new.md").write_text("m")
    assert build.tree_digest(src) != build.tree_digest(dst)


def test_pool_serves_the_cache_in_the_parent(repo, executions):
    done = runner.run_chapters([RESULT], "trace", {}, None, jobs=2)
    assert [d.cached for d in done] == [False] and len(executions) == 1
    done = runner.run_chapters([RESULT], "trace", {}, None, jobs=2)
    assert [d.cached for d in done] == [True] and len(executions) == 1
    done = runner.run_chapters([RESULT], "trace", {}, None, force=True, jobs=2)
    assert [d.cached for d in done] == [False] and len(executions) == 2
