"""The C allocator's handling of large temporaries, for one-shot command-line processes.

glibc's ``malloc`` serves a block above its mmap threshold (128 kB at start, raised up to 32 MB
as such blocks are freed) with a fresh ``mmap`` and gives it back at ``free``; and it trims
the heap when more than twice that lies free at its top. A streamed summary allocates and frees
temporaries of a few MB per chunk (numpy arrays of one chunk's rows): each time the kernel maps
and zeroes new pages. On the 2-core project machine that was 0.5 to 2 s of system time in a
10M-request summary (``benchmarks/README.md``). :func:`retain_freed_memory` raises both
thresholds so that freed temporaries are reused instead; blocks above 64 MB (the summary's
arrays of values) are still mapped and unmapped. Peak memory does not grow: the memory kept is
what the chunk's temporaries used at their peak.

:func:`small_pages` stops numpy from asking for transparent huge pages for its large arrays
(``madvise``): on the project's virtual machine the first touch of 240 MB of huge pages took
0.03 to 1.2 s of system time from run to run, of 4 kB pages a steady 0.1 s (measured with
``NUMPY_MADVISE_HUGEPAGE``, numpy's switch for the same thing; a 10M-request summary's
system time: median 0.79 s with huge pages, 0.46 s without, five runs each).

Only for a process that ends after its task (``rackbook summarize``): a long-lived process
(a notebook kernel) would keep up to 256 MB of freed memory.
"""

from __future__ import annotations

import ctypes

#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 64 << 20
TRIM_THRESHOLD_BYTES = 256 << 20


def retain_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (module docstring); False where the C library
    has no ``mallopt`` (not glibc) or refuses."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    return mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok


def small_pages() -> bool:
    """numpy's large arrays from now on without the transparent-huge-page hint (module
    docstring); False where this numpy has no such switch."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        return False
    switch = getattr(multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True
