"""Execute several chapters at once: one papermill run per chapter in a process pool sized to
the cores, each chapter's line printed in the book's order (the same output whatever finishes
first).

Chapters are independent: each reads its own trace and the shared read-only inputs and writes
only ``DIR/RESULT.*``. A chapter that fails does not stop the others; the first failure in
the book's order is raised, as one :class:`~rackbook.errors.InputError`, once all have ended.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackbook.errors import InputError


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


def _one(
    result: str, source: str, params: dict[str, Any], out: str | Path | None, force: bool
) -> Done:
    """Run one chapter (in a worker process); errors come back as values, not exceptions."""
    from rackbook.book import runner

    t0 = time.perf_counter()
    try:
        headline, cached = runner.execute_result(result, source, params, out, False, force)
    except InputError as err:
        return Done(
            result, None, False, time.perf_counter() - t0, (err.file, err.field, err.problem)
        )
    return Done(result, headline, cached, time.perf_counter() - t0)


def run_chapters(
    names: Sequence[str],
    source: str,
    params: dict[str, Any],
    out: str | Path | None,
    force: bool = False,
    jobs: int | None = None,
    report: Callable[[Done], None] | None = None,
) -> list[Done]:
    """Execute ``names`` with at most ``jobs`` (default: the cores) at a time; ``report`` is
    called for each chapter in the order of ``names``, as soon as it and those before it are
    done. Raises the first failure (in that order) after every chapter has ended."""
    from rackbook.book import runner

    # Chapters the cache holds are answered here, without a worker (a worker forked from
    # this process also finds papermill and the package already imported).
    ready: dict[str, Done] = {}
    if not force:
        for name in names:
            t0 = time.perf_counter()
            try:
                hit = runner.cached_headline(name, source, params, out)
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
            emit(ready[name] if name in ready else _one(name, source, params, out, force))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            futures: dict[str, Future[Done]] = {
                name: ex.submit(_one, name, source, params, out, force) for name in todo
            }
            try:
                for name in names:
                    emit(ready[name] if name in ready else futures[name].result())
            except BaseException:
                for f in futures.values():
                    f.cancel()
                raise
    for d in done:
        if d.error:
            raise InputError(*d.error)
    return done
