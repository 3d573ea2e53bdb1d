"""Atomic file and folder writes: nothing half-written is ever left behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rackbook import STOP_SIGNALS
from rackbook.errors import InputError

#: The signals the CLI turns into exceptions (KeyboardInterrupt, Terminated).
_STOP_SIGNALS = STOP_SIGNALS


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM, SIGHUP and SIGQUIT noted within the block and acted on when it ends.

    A Python signal handler runs between two bytecodes: one that raises (Ctrl-C, the CLI's
    SIGTERM handler) between a temporary's creation and the ``try`` that removes it, or
    between the two renames that swap a folder in, would leave it behind. Within the block the
    handlers only note the signal; at its end the original handlers are back and called for
    what was noted, where the cleanup is in place. (The block is a few system calls.) Python
    runs handlers in the main thread only: elsewhere nothing is changed. A mask of the
    thread's signals would not do: the kernel hands a process's signal to any thread that
    does not mask it (pyarrow's, execnet's), and Python then runs the handler in the main
    thread all the same. A handler installed outside Python (``getsignal`` gives None) could
    not be put back, so then nothing is changed either.
    """
    outside = any(signal.getsignal(sig) is None for sig in _STOP_SIGNALS)
    if outside or threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    old = {sig: signal.signal(sig, lambda signum, _frame: noted.append(signum))
           for sig in _STOP_SIGNALS}  # fmt: skip
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(noted):  # each once, in the order they came
            handler = old[sig]
            if callable(handler):
                handler(sig, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), sig)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _check_parents(path: Path, field: str) -> None:
    """The nearest existing ancestor of ``path`` must be a folder."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise InputError(path, field, f"{parent} is a file, not a folder")
            return


def check_output_folder(path: str | Path, field: str = "output") -> Path:
    """``path`` as a Path; :class:`InputError` (naming ``field``) when a folder cannot be made
    there: ``path`` exists and is not a folder, or one of its parents is a file."""
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise InputError(path, field, "a broken or looping symbolic link, expected a folder")
    if path.exists() and not path.is_dir():
        raise InputError(path, field, "exists and is a file, expected a folder")
    _check_parents(path, field)
    return path


def check_output_file(path: str | Path, field: str = "output") -> Path:
    """``path`` as a Path; :class:`InputError` when it is a folder or a parent is a file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, field, "is a folder, expected a file")
    _check_parents(path, field)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename.

    A ``path`` that is a folder, or under a file, is an :class:`InputError` (field ``output``).
    """
    path = check_output_file(path)
    tmp: str | None = None
    try:
        with _signals_held():  # the temporary exists only once this try can remove it
            fd, tmp = _make_temp(path, folder=False)
        assert fd is not None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    return path


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON (NaN forbidden) atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=2, allow_nan=False, default=str) + "\n")


def _make_temp(path: Path, *, folder: bool) -> tuple[int | None, str]:
    """A temporary sibling of ``path`` (its parents made); an OS refusal (a read-only or
    special file system such as /proc, no permission) is an :class:`InputError` naming
    ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if folder:
            return None, tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        return fd, tmp
    except OSError as exc:
        raise InputError(path, "output", f"cannot write here: {exc.strerror or exc}") from None


@contextlib.contextmanager
def atomic_dir(path: str | Path, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path``, on error it is removed.

    Readers never see a partly written folder at ``path``. A ``path`` that exists as a file, or
    under a file, is an :class:`InputError` (field ``output``): a file is never replaced.
    """
    path = check_output_folder(path)
    tmp: Path | None = None
    replaced: Path | None = None  # the previous folder, moved aside once the new one is in
    try:
        with _signals_held():  # the temporary exists only once this try can remove it
            tmp = Path(_make_temp(path, folder=True)[1])
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700 folders
        yield tmp
        if path.exists():
            if not overwrite:
                raise FileExistsError(path)
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            with _signals_held():  # never the old folder moved aside and the new one not in
                os.replace(path, old)
                os.replace(tmp, path)
                replaced = old
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already if it was moved in
        if replaced is not None:
            shutil.rmtree(replaced, ignore_errors=True)
        raise
