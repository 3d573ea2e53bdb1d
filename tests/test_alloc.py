"""The allocator tuning of one-shot summaries: applied where the C library is glibc."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_retain_freed_memory_on_glibc():
    # in a child process: the setting is process-wide
    code = "from rackbook.core import alloc; print(alloc.retain_freed_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


#: In a child process: allocate 64 MiB with numpy (after ``alloc.small_pages()`` when argv[1]
#: is ``small``) and print whether the kernel marks the array's middle as advised for
#: transparent huge pages (``hg`` in its mapping's VmFlags, /proc/self/smaps: what numpy's
#: ``madvise(MADV_HUGEPAGE)`` sets), then what ``small_pages`` returned.
_ADVISED = """
import sys
import numpy as np
from rackbook.core import alloc
switched = alloc.small_pages() if sys.argv[1] == "small" else None
a = np.ones(8 << 20)  # 64 MiB, above numpy's 4 MiB threshold for the hint
addr = a.ctypes.data + a.nbytes // 2  # madvise starts at the first whole page
inside = False
for line in open("/proc/self/smaps"):
    head = line.split()[0]
    if "-" in head and not head.endswith(":"):
        lo, hi = (int(x, 16) for x in head.split("-"))
        inside = lo <= addr < hi
    elif inside and line.startswith("VmFlags:"):
        print("hg" in line.split()[1:], switched)
        break
"""


def _advised(mode: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _ADVISED, mode], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc smaps")
def test_small_pages_stops_numpy_advising_huge_pages():
    """Observed in the kernel's view of the memory, not in numpy's private switch: without
    the call numpy advises huge pages for a large array; after it, it does not."""
    before = _advised("big")
    if before != ["True", "None"]:
        pytest.skip(f"this numpy/kernel does not advise huge pages at all ({before})")
    assert _advised("small") == ["False", "True"]
