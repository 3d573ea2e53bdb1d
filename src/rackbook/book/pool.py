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

#: Executes one chapter: ``(result, source, params, out, progress, force)`` -> its headline
#: JSON's path and whether it came from the cache; raises :class:`InputError` on failure.
Execute = Callable[[str, str, dict[str, Any], str | Path | None, bool, bool], tuple[Path, bool]]
#: The cache's headline of one chapter, ``(result, source, params, out)`` -> its path, or None
#: when the chapter must be executed.
Cached = Callable[[str, str, dict[str, Any], str | Path | None], Path | None]

#: Seconds the workers get to stop their chapters (kernels stopped, temporaries removed)
#: after the command is signalled, before they are killed.
WORKER_GRACE_S = 1.5
#: A worker's state: ``idle`` (a signal ends it), ``busy`` (a signal unwinds its chapter) or
#: ``stopping`` (later signals ignored; the parent kills a worker that lingers).
_state: list[str] = ["idle"]
#: A worker's executor of chapters (set by :func:`_worker_init`).
_executor: list[Execute] = []


@dataclass(frozen=True)
class Done:
    """One chapter's outcome: its headline JSON (None on error), whether it came from the
    cache, wall seconds, and the error's three parts when it failed."""

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
    """A worker's stop signal: unwind the chapter it executes, else exit."""
    if _state[0] == "idle":
        os._exit(128 + signum)
    if _state[0] == "busy":
        _state[0] = "stopping"
        raise Terminated(signum)


def _worker_init(execute: Execute) -> None:
    """Pool worker set-up: its own stop handler (:func:`_worker_signal`) and its executor."""
    _executor[:] = [execute]
    for sig in STOP_SIGNALS:
        signal.signal(sig, _worker_signal)


def _in_worker(
    result: str, source: str, params: dict[str, Any], out: str | Path | None, force: bool
) -> Done:
    """:func:`_one` in a worker process, with the executor :func:`_worker_init` set."""
    return _one(_executor[0], result, source, params, out, force)


def _one(
    execute: Execute,
    result: str,
    source: str,
    params: dict[str, Any],
    out: str | Path | None,
    force: bool,
) -> Done:
    """Run one chapter with ``execute``, its error as a value; a stop signal ends the worker
    once the chapter is unwound."""
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
    """SIGTERM every worker of ``ex``, wait up to :data:`WORKER_GRACE_S`, SIGKILL those left."""
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
    # Chapters the cache holds are answered here, without a worker.
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
            # A signal or failure: nothing starts or is reported after it; the running
            # chapters are stopped, not waited for (the broken pool fails their futures).
            _stop_workers(ex)
            ex.shutdown(wait=False)
            raise
        ex.shutdown(wait=True)
    for d in done:
        if d.error:
            raise InputError(*d.error)
    return done
