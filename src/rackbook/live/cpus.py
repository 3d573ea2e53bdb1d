"""CPU cores of the vLLM engine and of the API server + bench client (``front``): on vLLM's CPU
backend the engine busy-polls and starves whatever shares its cores. ``RACKBOOK_LIVE_CPUS``:
``auto`` (CPU build, >= 2 cores: the last ``max(1, n // 4)`` front), ``off``, or ``0-11/12-15``."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackbook.errors import InputError

ENV = "RACKBOOK_LIVE_CPUS"


def parse_cpu_list(text: str) -> frozenset[int]:
    """``"0,2-4"`` -> {0, 2, 3, 4}; raises ValueError on anything else."""
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a < 0 or b < a:
            raise ValueError(part)
        out.update(range(a, b + 1))
    if not out:
        raise ValueError(text)
    return frozenset(out)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """{0, 2, 3, 4} -> ``"0,2-4"``."""
    runs = [list(g) for _, g in itertools.groupby(enumerate(sorted(cpus)), lambda p: p[1] - p[0])]
    return ",".join(f"{r[0][1]}" if len(r) == 1 else f"{r[0][1]}-{r[-1][1]}" for r in runs)


@dataclass(frozen=True)
class CpuLayout:
    """Engine and front (API server + client) cores; both None when nothing is pinned."""

    mode: str  # auto | off | explicit
    engine: frozenset[int] | None
    front: frozenset[int] | None
    reason: str
    setting: str  # the RACKBOOK_LIVE_CPUS value it came from

    def describe(self) -> dict[str, Any]:
        """run.json's record.cpu_layout."""
        return {
            "setting": f"{ENV}={self.setting}",
            "mode": self.mode,
            "pinned": self.engine is not None,
            "engine_cpus": format_cpu_list(self.engine) if self.engine else None,
            "api_server_and_client_cpus": format_cpu_list(self.front) if self.front else None,
            "reason": self.reason,
        }

    def label(self) -> str:
        if self.engine is None or self.front is None:  # both or neither
            return "unpinned"
        eng, front = format_cpu_list(self.engine), format_cpu_list(self.front)
        return f"engine cpus {eng}; api server + client cpus {front}"


def resolve(on_cpu: bool, attached: bool = False) -> CpuLayout:
    """The layout ``$RACKBOOK_LIVE_CPUS`` asks for; ``attached``: --endpoint servers (never
    pinned). Raises :class:`InputError` on a bad setting."""
    raw = os.environ.get(ENV, "auto")
    text, avail = raw.strip().lower() or "auto", frozenset(os.sched_getaffinity(0))
    auto = text == "auto"
    for mode, unpinned, why in (  # the first that holds: nothing pinned
        ("off", text in ("off", "none", "0", "no", "false"), f"{ENV}={raw}"),
        ("off", attached, "servers given with --endpoint: not started here"),
        ("auto", auto and not on_cpu, "not a CPU build of vLLM"),
        ("auto", auto and len(avail) < 2, f"only {len(avail)} usable core"),
    ):
        if unpinned:
            return CpuLayout(mode, None, None, f"{why}: nothing pinned", raw)
    if auto:
        s = sorted(avail)
        k = max(1, len(s) // 4)
        why = (
            "CPU build: the engine core and worker busy-poll (sched_yield) and starve anything "
            "sharing their cores; API server and bench client get their own"
        )
        return CpuLayout("auto", frozenset(s[:-k]), frozenset(s[-k:]), why, raw)
    engine_text, sep, front_text = raw.partition("/")
    try:
        engine, front = parse_cpu_list(engine_text), parse_cpu_list(front_text if sep else "")
    except ValueError:
        why = "expected auto, off or ENGINE/FRONT cpu lists (e.g. 0/1 or 0-11/12-15)"
        raise InputError(ENV, raw, why) from None
    if engine & front:
        raise InputError(ENV, raw, "engine and front cpu lists overlap")
    if missing := (engine | front) - avail:
        why = f"cpus {format_cpu_list(missing)} not usable here ({format_cpu_list(avail)})"
        raise InputError(ENV, raw, why)
    return CpuLayout("explicit", engine, front, f"{ENV}={raw}", raw)


def set_process_affinity(pid: int, cpus: Iterable[int]) -> None:
    """Pin every current thread of ``pid`` (threads it creates later inherit)."""
    with contextlib.suppress(OSError):  # the process is gone
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that just exited
                os.sched_setaffinity(int(task.name), set(cpus))


def process_affinity(pid: int) -> str | None:
    """``Cpus_allowed_list`` of ``pid``'s main thread, or None."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return None


@contextlib.contextmanager
def pinned_self(cpus: frozenset[int] | None) -> Iterator[None]:
    """The block with this process on ``cpus`` (None: unchanged), restored afterwards."""
    old = os.sched_getaffinity(0)
    set_process_affinity(os.getpid(), old if cpus is None else cpus)
    try:
        yield
    finally:
        set_process_affinity(os.getpid(), old)
