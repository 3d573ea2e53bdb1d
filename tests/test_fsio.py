"""Atomic writes: all or nothing, with ordinary permissions."""

from __future__ import annotations

import os
import stat

import pytest

from rackbook.core.fsio import atomic_dir, atomic_write_text


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
