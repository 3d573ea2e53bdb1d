"""The commit-msg hook (``env/hooks/commit_msg.py``, run by pre-commit): a subject of at most 72
characters passes, 73 is refused in one line, git's comment lines are not the subject."""

from __future__ import annotations

import importlib.util

import pytest

from rackbook import paths

_spec = importlib.util.spec_from_file_location(
    "commit_msg", paths.ROOT / "env" / "hooks" / "commit_msg.py"
)
assert _spec is not None and _spec.loader is not None
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("x" * 72 + "\n\nbody " + "y" * 200, None),
        ("x" * 73, "the commit subject is 73 characters: at most 72"),
        ("# " + "c" * 80 + "\n" + "x" * 72, None),  # a long comment line is git's
        ("x" * 72 + "   \n", None),  # trailing blanks are not counted
        ("\n\nbody", "the commit subject (first line) is empty"),
        ("", "the commit subject (first line) is empty"),
    ],
)
def test_subject_length(message, problem):
    assert hook.problem(message) == problem


def test_main_exits_1_with_one_line(tmp_path, capsys):
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text("s" * 100 + "\n")
    assert hook.main(["commit_msg.py", str(msg)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {msg}: subject: the commit subject is 100 characters: at most 72\n"
    msg.write_text("A short subject\n")
    assert hook.main(["commit_msg.py", str(msg)]) == 0
