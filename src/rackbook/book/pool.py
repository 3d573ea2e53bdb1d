"""Execute chapters in a process pool sized to the cores, reported in the book's order; a
failure stops no other chapter and the first is raised once all have ended."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackbook import STOP_SIGNALS
from rackbook.errors import InputError, Terminated

#: ``(result, source, params, out, progress, force)`` -> (headline JSON, from the cache).
Execute = Callable[[str, str, dict[str, Any], str | Path | None, bool, bool], tuple[Path, bool]]
#: ``(result, source, params, out)`` -> the cache's headline JSON, or None.
Cached = Callable[[str, str, dict[str, Any], str | Path | None], Path | None]

#: Seconds the workers get to stop their chapters after a signal, before they are killed.
WORKER_GRACE_S = 1.5
#: A worker's state: ``idle`` (a signal ends it), ``busy`` (unwinds) or ``stopping``.
_state: list[str] = ["idle"]
_executor: list[Execute] = []


@dataclass(frozen=True)
class Done:
    """One chapter's outcome: headline JSON (None on error), cached, wall seconds, error."""

    result: str
    headline: Path | None
    cached: bool
    seconds: float
    error: tuple[str, str, str] | None = None


def cores() -> int:
    """Cores this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _worker_signal(signum: int, _frame: object) -> None:
    if _state[0] == "idle":
        os._exit(128 + signum)
    if _state[0] == "busy":
        _state[0] = "stopping"
        raise Terminated(signum)


def _worker_init(execute: Execute) -> None:
    _executor[:] = [execute]
    for sig in STOP_SIGNALS:
        signal.signal(sig, _worker_signal)


def _in_worker(
    result: str, source: str, params: dict[str, Any], out: str | Path | None, force: bool
) -> Done:
    return _one(_executor[0], result, source, params, out, force)


def _one(
    execute: Execute,
    result: str,
    source: str,
    params: dict[str, Any],
    out: str | Path | None,
    force: bool,
) -> Done:
    t0 = time.perf_counter()
    _state[0] = "busy"
    try:
        headline, cached = execute(result, source, params, out, False, force)
    except InputError as err:
        return Done(
            result, None, False, time.perf_counter() - t0, (err.file, err.field, err.problem)
        )
    except (KeyboardInterrupt, Terminated) as exc:
        os._exit(128 + getattr(exc, "signum", signal.SIGINT))
    finally:
        _state[0] = "idle"
    return Done(result, headline, cached, time.perf_counter() - t0)


def _stop_workers(ex: ProcessPoolExecutor) -> None:
    procs = list((getattr(ex, "_processes", None) or {}).values())  # no public way to them
    for p in procs:
        with contextlib.suppress(ProcessLookupError, AttributeError):
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + WORKER_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.join()


def run_chapters(
    names: Sequence[str],
    source: str,
    params: dict[str, Any],
    out: str | Path | None,
    execute: Execute,
    cached: Cached,
    force: bool = False,
    jobs: int | None = None,
    report: Callable[[Done], None] | None = None,
) -> list[Done]:
    """Execute ``names``, ``jobs`` at a time (cache first unless ``force``), ``report``
    each in order; raises the first failure once all have ended."""
    ready: dict[str, Done] = {}
    if not force:
        for name in names:
            t0 = time.perf_counter()
            try:
                hit = cached(name, source, params, out)
            except InputError as err:
                ready[name] = Done(name, None, False, 0.0, (err.file, err.field, err.problem))
                continue
            if hit is not None:
                ready[name] = Done(name, hit, True, time.perf_counter() - t0)
    todo = [n for n in names if n not in ready]
    jobs = max(1, min(jobs or cores(), len(todo) or 1))
    done: list[Done] = []

    def emit(d: Done) -> None:
        done.append(d)
        if report:
            report(d)

    if jobs == 1:
        for name in names:
            emit(ready[name] if name in ready else _one(execute, name, source, params, out, force))
    else:
        ex = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(execute,))
        futures: dict[str, Future[Done]] = {}
        try:
            futures = {
                name: ex.submit(_in_worker, name, source, params, out, force) for name in todo
            }
            for name in names:
                emit(ready[name] if name in ready else futures[name].result())
        except BaseException:
            # nothing starts or is reported after a signal; running chapters are stopped
            _stop_workers(ex)
            ex.shutdown(wait=False)
            raise
        ex.shutdown(wait=True)
    for d in done:
        if d.error:
            raise InputError(*d.error)
    return done
