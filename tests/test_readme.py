"""Every command of the README's "Using it" block runs as written on a fresh clone.

The clone is the checkout's tracked files copied into a temporary folder (what `git clone`
gives: no ``_build``, no ``.venv``, no generated files), used as ``RACKBOOK_ROOT`` and as the
working directory. The block's placeholders stand for the user's own files and are replaced by
real ones (:data:`PLACEHOLDERS`); the live commands (a vLLM server, the live env) are left to
the live tests and named in :data:`LIVE`. The commands run in order (``book`` reads what
``run all`` wrote) and each must exit 0 with nothing on stderr but progress.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rackbook import paths

RACKBOOK = str(Path(sys.executable).with_name("rackbook"))
FIXTURES = Path(__file__).parent / "fixtures"
SOURCES = "data/published/sources"

#: placeholder -> what it stands for here (relative to the clone, or a value)
PLACEHOLDERS = {
    "RESULT.json": str(FIXTURES / "vllm-bench-serve-b32.json"),
    "ROWS.json": str(FIXTURES / "published" / "inferencex-benchmarks.json"),
    "summary.csv": f"{SOURCES}/mlperf-v6.1-summary.csv",
    "deepseek-v4-benchmarks.jsx": f"{SOURCES}/sglang-deepseek-v4-benchmarks.jsx",
    "URL": "https://example.org/source",
    "TRACE": "mine/trace",
    "PUBLISHED": "mine/published",
    "MLPERF": "mine/mlperf",
    "SGLANG": "mine/sglang",
    "DIR": "mine/traces",
    "RESULTS": "mine/results",
    "HTML": "mine/html",
}
#: Commands that need a live vLLM server or the live env (covered by tests/live).
LIVE = ("--source live", "rackbook record", "rackbook calibrate")


def readme_commands(readme: Path) -> list[str]:
    """The commands of the README's "Using it" code block, comments removed."""
    text = readme.read_text(encoding="utf-8")
    block = re.search(r"## Using it\s+```bash\n(.*?)```", text, re.S)
    assert block, "README has no 'Using it' bash block"
    cmds = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [c for c in cmds if c and not c.startswith("#")]


def fresh_clone(dst: Path) -> Path:
    """The checkout's tracked files copied to ``dst`` (a clone without build outputs)."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=paths.ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = paths.ROOT / os.fsdecode(name)
        if src.is_file():
            (dst / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / os.fsdecode(name))
    return dst


def as_run(cmd: str) -> list[str]:
    argv = shlex.split(cmd)
    assert argv[0] == ".venv/bin/rackbook", cmd
    return [RACKBOOK, *(PLACEHOLDERS.get(a, a) for a in argv[1:])]


def test_readme_block_is_what_this_test_runs():
    cmds = readme_commands(paths.ROOT / "README.md")
    assert len(cmds) >= 15
    verbs = {shlex.split(c)[1] for c in cmds}
    assert {"list", "catalog", "run", "import", "summarize", "check", "eplb", "book"} <= verbs
    unknown = {
        a for c in cmds for a in shlex.split(c)[1:] if re.fullmatch(r"[A-Z][A-Z_.]*[A-Z]", a)
    } - set(PLACEHOLDERS)
    assert not unknown, f"README placeholders this test does not know: {unknown}"


@pytest.mark.slow
def test_every_readme_command_runs_on_a_fresh_clone(tmp_path):
    clone = fresh_clone(tmp_path / "clone")
    (clone / "mine" / "traces").mkdir(parents=True)
    shutil.copytree(clone / "data/traces/single-user", clone / "mine/traces/single-user")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACKBOOK_")}
    env |= {"RACKBOOK_ROOT": str(clone), "RACKBOOK_BUILD": str(clone / "_build")}
    ran = []
    for cmd in readme_commands(clone / "README.md"):
        if any(live in cmd for live in LIVE):
            continue
        proc = subprocess.run(
            as_run(cmd), cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, (cmd, proc.stderr[-2000:])
        assert "error:" not in proc.stderr and "Traceback" not in proc.stderr, (cmd, proc.stderr)
        ran.append(cmd)
    assert len(ran) >= 15
    assert (clone / "mine/html/index.html").is_file()
    assert (clone / "mine/results/single-user.json").is_file()
    # the landing table reads the reused shipped results, not the (absent) build's
    glance = (clone / "mine/html/book/intro.html").read_text(encoding="utf-8")
    assert "shipped recordings" in glance and "not run" not in glance


def test_every_option_of_every_verb_is_documented():
    """``--help`` of each verb says what every argument is (choices are listed by argparse)."""
    from rackbook.cli import build_parser

    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        f"{verb} {a.option_strings or a.dest}"
        for verb, sub in verbs.choices.items()
        for a in sub._actions
        if a.dest != "help" and not a.help
    ]
    assert not missing
    record = verbs.choices["record"].format_help()
    for text in ("decode-parity", "single-user", "--parameter", "--resume", "--endpoint"):
        assert text in record
