"""Packaging: the version is written once, the extras cover what the book and the tests need,
test tools stay out of the runtime lock, and an installed (non-editable) copy either works with
a checkout or stops with one clear ``error:`` line."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import rackbook
from rackbook import paths

PYPROJECT = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())
TEST_TOOLS = ("pytest", "pytest-xdist", "hypothesis", "ruff", "mypy", "pre-commit", "nbmake")


def _names(lock: str) -> set[str]:
    lines = (paths.ROOT / "env" / lock).read_text().splitlines()
    # names as PEP 503 compares them: pip freeze writes pre_commit for pre-commit
    return {
        re.sub(r"[-_.]+", "-", re.split(r"[=<>!~ ]", ln)[0]).lower()
        for ln in lines
        if ln and ln[0] != "#"
    }


def test_version_is_written_once():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "rackbook.__version__"
    assert importlib.metadata.version("rackbook") == rackbook.__version__


def test_book_extra_installs_what_config_needs():
    config = yaml.safe_load((paths.ROOT / "_config.yml").read_text())
    book = {
        re.split(r"[=<>!~ ]", d)[0] for d in PYPROJECT["project"]["optional-dependencies"]["book"]
    }
    # rackbook's own extensions ship with the package: what each imports must be in the extra
    own = {"rackbook.book.sphinx_figures": ["plotly", "jupyter-book"]}
    for ext in config["sphinx"].get("extra_extensions", []):
        for need in own[ext] if ext.startswith("rackbook.") else [ext.replace("_", "-")]:
            assert need in book, f"_config.yml needs {need} ({ext}): not in the book extra"
    assert {"jupyter-book", "papermill", "ipykernel"} <= book


def test_test_tools_are_outside_the_runtime_lock():
    extra = PYPROJECT["project"]["optional-dependencies"]["test"]
    assert {re.split(r"[=<>!~ ]", d)[0] for d in extra} == set(TEST_TOOLS)
    runtime, tests = _names("requirements-book.lock"), _names("requirements-test.lock")
    assert not runtime & set(TEST_TOOLS)
    assert set(TEST_TOOLS) <= tests and not runtime & tests


def test_cli_outside_a_checkout_says_so_in_one_line(tmp_path):
    env = {"RACKBOOK_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "rackbook.cli", "list"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert "no rackbook checkout here" in proc.stderr


@pytest.mark.slow
def test_non_editable_install_works_with_a_checkout(tmp_path):
    """pip installs a copy (not editable); without RACKBOOK_ROOT it stops with one line, with
    it pointing at the checkout it runs."""
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site)]
    subprocess.run([*pip, str(paths.ROOT)], check=True, capture_output=True, timeout=600)
    assert (site / "rackbook" / "paths.py").is_file()
    run = [sys.executable, "-m", "rackbook.cli", "list"]
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    bare = subprocess.run(run, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert bare.returncode == 2 and bare.stderr.count("\n") == 1
    ok = subprocess.run(
        run, capture_output=True, text=True, env={**env, "RACKBOOK_ROOT": str(paths.ROOT)}
    )
    assert ok.returncode == 0, ok.stderr
    assert "decode-parity.gap" in ok.stdout


def test_workflows_run_make_targets_that_exist():
    """The publishing and link-check workflows parse and call only targets the Makefile has."""
    import re

    import yaml

    from rackbook import paths

    targets = set(re.findall(r"^([a-z][\w-]*):", (paths.ROOT / "Makefile").read_text(), re.M))
    flows = sorted((paths.ROOT / ".github" / "workflows").glob("*.yml"))
    assert {f.stem for f in flows} >= {"book", "linkcheck"}
    for f in flows:
        doc = yaml.safe_load(f.read_text())
        runs = [s["run"] for job in doc["jobs"].values() for s in job["steps"] if "run" in s]
        called = {t for r in runs for t in re.findall(r"\bmake ([a-z][\w-]*)", r)}
        assert called and called <= targets, (f.name, called - targets)


# The live venv installs rackbook with --no-deps from its own pin list: a runtime dependency
# missing there fails only when a live recording first imports it (orjson did, in CI).
# matplotlib is the one runtime dependency the live harness never imports (figures only).
LIVE_NOT_NEEDED = {"matplotlib"}


def test_live_pins_cover_rackbooks_runtime_dependencies():
    live = _names("live/requirements-live.txt")
    runtime = {re.split(r"[=<>!~ \[]", d)[0].lower() for d in PYPROJECT["project"]["dependencies"]}
    missing = sorted(runtime - LIVE_NOT_NEEDED - live)
    assert not missing, f"env/live/requirements-live.txt lacks {missing}"


def test_the_live_harness_never_imports_what_the_live_env_lacks():
    """The exception holds: no module under rackbook.live or rackbook.core imports matplotlib."""
    for sub in ("live", "core"):
        for path in sorted((paths.ROOT / "src" / "rackbook" / sub).rglob("*.py")):
            text = path.read_text()
            assert "import matplotlib" not in text and "from matplotlib" not in text, path


def test_each_xdist_worker_builds_into_its_own_folder(tmp_path):
    """Two pytest-xdist workers never share a build folder (book, executed set, cache)."""
    code = "import conftest; from rackbook import paths; print(paths.BUILD)"
    seen = {}
    for worker in ("gw0", "gw1", None):
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
        env["RACKBOOK_BUILD"] = str(tmp_path / "_build")
        if worker:
            env["PYTEST_XDIST_WORKER"] = worker
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=Path(__file__).parent, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        seen[worker] = proc.stdout.strip()
    assert seen == {
        "gw0": str(tmp_path / "workers" / "gw0" / "_build"),
        "gw1": str(tmp_path / "workers" / "gw1" / "_build"),
        None: str(tmp_path / "_build"),
    }


def test_make_runs_the_serverless_tests_on_xdist_workers():
    """`make test-unit` and `make check` spread the tests that start no server over workers,
    keeping the tests that share one built book together (loadgroup)."""
    make = subprocess.run(
        ["make", "-n", "test-unit", "check", "TEST_WORKERS=2"],
        cwd=paths.ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = [x for x in make.stdout.splitlines() if "-m pytest" in x and " tests" in x]
    assert len(lines) == 2 and all("-n 2 --dist loadgroup" in x for x in lines), lines
