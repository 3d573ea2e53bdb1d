"""The allocator tuning of one-shot summaries: applied where the C library is glibc."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_retain_freed_memory_on_glibc():
    # in a child process: the setting is process-wide
    code = "from rackbook.core import alloc; print(alloc.retain_freed_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_small_pages_switches_numpy_off_huge_pages():
    code = (
        "from numpy._core import multiarray as m; from rackbook.core import alloc; "
        "print(alloc.small_pages(), m._set_madvise_hugepage(True))"  # returns the old state
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
