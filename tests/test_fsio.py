"""Atomic writes: all or nothing, with ordinary permissions."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest

from rackbook.core.fsio import MARKER, atomic_dir, atomic_write_text


def test_atomic_write_text_permissions_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        f = atomic_write_text(tmp_path / "a.txt", "x")
        d_path = tmp_path / "d"
        with atomic_dir(d_path) as d:
            (d / "f").write_text("y")
    finally:
        os.umask(old)
    assert stat.S_IMODE(f.stat().st_mode) == 0o644
    assert stat.S_IMODE(d_path.stat().st_mode) == 0o755


def test_atomic_dir_leaves_nothing_on_error_and_keeps_old(tmp_path):
    target = tmp_path / "t"
    with atomic_dir(target) as d:
        (d / "v").write_text("1")
    with pytest.raises(RuntimeError), atomic_dir(target) as d:
        (d / "v").write_text("2")
        raise RuntimeError("boom")
    assert (target / "v").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


class Stopped(BaseException):
    """What the test's SIGTERM handler raises (as the CLI's raises ``Terminated``)."""


@pytest.fixture
def sigterm_raises():
    """SIGTERM raises :class:`Stopped` in this process for the test's duration."""

    def handler(_sig, _frame):
        raise Stopped

    old = signal.signal(signal.SIGTERM, handler)
    yield
    signal.signal(signal.SIGTERM, old)


def _then_sigterm(real):
    """``real`` (an os function) that sends this process SIGTERM once it has made a temporary
    (a path ending in ``.tmp``): the signal lands in the instant between one step of a write
    and the next."""

    def wrapped(path, *args, **kwargs):
        out = real(path, *args, **kwargs)
        if str(path).endswith(".tmp"):
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    return wrapped


def test_a_signal_just_after_the_temporary_folder_is_made_leaves_nothing(
    tmp_path, monkeypatch, sigterm_raises
):
    """A signal delivered as the temporary folder is made (before the cleanup's try) used to
    leave the empty temporary sibling behind (seen once in CI: test_hostile's import-sigterm)."""
    monkeypatch.setattr(os, "mkdir", _then_sigterm(os.mkdir))
    with pytest.raises(Stopped), atomic_dir(tmp_path / "t") as d:
        (d / "v").write_text("1")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_just_after_the_temporary_file_is_made_leaves_nothing(
    tmp_path, monkeypatch, sigterm_raises
):
    monkeypatch.setattr(os, "open", _then_sigterm(os.open))
    with pytest.raises(Stopped):
        atomic_write_text(tmp_path / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_between_the_two_renames_of_a_swap_leaves_the_new_folder_only(
    tmp_path, monkeypatch, sigterm_raises
):
    """Replacing a folder moves the old one aside, then the new one in: a signal between the
    two renames is held until both are done, and the old folder is removed."""
    target = tmp_path / "t"
    with atomic_dir(target) as d:
        (d / "v").write_text("old")
    calls = []
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        if Path(dst).name == MARKER:  # the new folder's marker, written before the swap
            return
        calls.append(dst)
        if len(calls) == 1:  # the old folder is aside, the new one not yet in
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Stopped), atomic_dir(target) as d:
        (d / "v").write_text("new")
    assert len(calls) == 2  # both renames ran before the signal was acted on
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]
    assert (target / "v").read_text() == "new"
