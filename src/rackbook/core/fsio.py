"""Atomic file and folder writes: nothing half-written is ever left behind, and nothing that
rackbook did not write is ever replaced.

Every folder rackbook writes as an output carries :data:`MARKER`, a small text file naming the
kind of output (``trace``, ``results``, ``html``, ``recipes``, ...). A folder is replaced (or
written into) only when it is new, empty, marked as the same kind, or recognised by its writer
as that writer's own from before markers existed (the ``legacy`` test of
:func:`check_replaceable`); anything else is refused with one line, and nothing is touched.
Each output folder has an advisory lock (:func:`output_lock`): a second writer of the same
folder, in another process, is refused with one line instead of replacing the first's work.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """:func:`atomic_write_text` for bytes (a figure's PNG)."""
    path = check_output_file(path)
    tmp: str | None = None
    try:
        with _signals_held():
            fd, tmp = _make_temp(path, folder=False)
        assert fd is not None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
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


def _temp_prefix(path: Path) -> str:
    """``.NAME.``, the start of a temporary sibling's name; ``.output.`` when NAME is not
    valid UTF-8 (libraries such as pyarrow cannot write under such a name)."""
    try:
        path.name.encode("utf-8")
    except UnicodeEncodeError:
        return ".output."
    return f".{path.name}."


def _make_temp(path: Path, *, folder: bool) -> tuple[int | None, str]:
    """A temporary sibling of ``path`` (its parents made); an OS refusal (a read-only or
    special file system such as /proc, no permission) is an :class:`InputError` naming
    ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if folder:
            return None, tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
        return fd, tmp
    except OSError as exc:
        raise InputError(path, "output", f"cannot write here: {exc.strerror or exc}") from None


#: The file that marks a folder as an output rackbook wrote (its first line names the kind).
MARKER = ".rackbook-output"
_MARKER_HEAD = "rackbook output:"

#: What writes each kind of output, said in the marker for a person who finds it.
WRITERS: dict[str, str] = {
    "trace": "rackbook import or rackbook record",
    "results": "rackbook run or rackbook book --traces",
    "html": "rackbook book --html",
    "recipes": "rackbook recipes",
    "calibration": "rackbook calibrate",
    "raw": "rackbook record (its raw artifacts, beside the trace)",
}


def marker_text(kind: str) -> str:
    """The marker's text for an output of ``kind`` (the same bytes every time: shipped
    folders carry it in git)."""
    return (
        f"{_MARKER_HEAD} {kind}\n"
        f"Written by {WRITERS.get(kind, 'rackbook')}. rackbook replaces or writes into an\n"
        f"existing folder only when it is marked so as the same kind of output.\n"
    )


def marked_kind(folder: str | Path) -> str | None:
    """The kind ``folder``'s marker names; None when it has no marker (or the marker is not a
    small regular file of rackbook's)."""
    f = Path(folder) / MARKER
    try:
        fd = os.open(f, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            return None
        head = os.read(fd, 4096).decode("utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(_MARKER_HEAD):
        return None
    return head[len(_MARKER_HEAD) :].strip() or None


def write_marker(folder: str | Path, kind: str) -> Path:
    """Mark ``folder`` (which exists) as rackbook's output of ``kind``."""
    return atomic_write_text(Path(folder) / MARKER, marker_text(kind))


def check_replaceable(
    path: str | Path,
    kind: str,
    field: str = "output",
    legacy: Callable[[Path], bool] | None = None,
) -> None:
    """Refuse (:class:`InputError` naming ``field``) to replace or write into ``path`` unless
    it is missing, empty, marked as an output of ``kind``, or ``legacy(path)`` recognises it
    as what this writer made before markers existed. Nothing is touched."""
    path = Path(path)
    try:
        entries = sorted(os.listdir(path))
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise InputError(path, field, "exists and is a file, expected a folder") from None
    except OSError as exc:
        raise InputError(path, field, f"cannot read the folder: {exc.strerror or exc}") from None
    if not entries:
        return
    found = marked_kind(path)
    if found == kind:
        return
    if found is not None:
        raise InputError(
            path, field, f"holds a rackbook {found} output, not {kind}: refusing to replace it "
            "(choose another folder)"
        )  # fmt: skip
    if legacy is not None and legacy(path):
        return
    raise InputError(
        path,
        field,
        f"holds {entries[0]!r} and was not written by rackbook (no {MARKER} file): refusing to "
        "replace or write into it (move it away or choose another folder)",
    )


def _is_inside(inner: Path, outer: Path) -> bool:
    a, b = os.path.realpath(inner), os.path.realpath(outer)
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


def refuse_overlap(
    outputs: Mapping[str, str | Path | None], inputs: Mapping[str, str | Path | None]
) -> None:
    """Refuse (one :class:`InputError`, before any work) two of ``outputs`` (flag -> folder)
    naming the same folder or one inside the other, and an output and one of ``inputs`` (flag
    -> file or folder) the same or one inside the other: replacing the output would delete
    the input, or writing it would change what is being read. ``None`` values are skipped."""
    outs = [(f, Path(p)) for f, p in outputs.items() if p is not None]
    ins = [(f, Path(p)) for f, p in inputs.items() if p is not None]
    for i, (fa, a) in enumerate(outs):
        for fb, b in outs[i + 1 :] + ins:
            if _is_inside(b, a):
                what = "is" if _is_inside(a, b) else "lies inside"
                raise InputError(
                    b, fb, f"{what} the output {fa} {a}, which would be replaced: keep the two "
                    "apart (neither inside the other)"
                )  # fmt: skip
            if _is_inside(a, b):
                raise InputError(
                    a, fa, f"lies inside {fb} {b}: keep the two apart (neither inside the other)"
                )


def special_kind(path: str | Path) -> str | None:
    """``"a FIFO"``, ``"a device"`` or ``"a socket"`` when ``path`` (followed) is one; else
    None (a regular file, a folder, missing or unreadable)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def refuse_special(
    folder: str | Path, field: str = "output", names: Iterable[str] | None = None
) -> None:
    """Refuse (:class:`InputError`) a FIFO, device or socket among ``folder``'s entries (or
    only those of ``names``): where rackbook reads or writes a result file, opening one would
    block or misbehave."""
    try:
        present = os.listdir(folder)
    except OSError:
        return
    wanted = set(present) if names is None else set(names)
    for name in sorted(n for n in present if n in wanted):
        what = special_kind(Path(folder) / name)
        if what is not None:
            raise InputError(
                Path(folder) / name, field, f"is {what}, where a result file goes: remove it"
            )


#: Lock file -> [its descriptor (None: held without a file), depth]: this process's locks
#: (re-entrant: a verb holds its output's lock and atomic_dir takes it again).
_HELD: dict[str, list[Any]] = {}
_HELD_GUARD = threading.Lock()


def lock_path(path: str | Path) -> Path:
    """The lock file of the output folder ``path``: in this user's rackbook folder of the
    temporary folder, named by a hash of the folder's real path (never in the user's
    folder; removed when released)."""
    real = os.path.realpath(path)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"rackbook-{os.getuid()}" / "locks" / f"{digest}.lock"


def _acquire(lock: Path, path: Path, field: str, shared: bool = False) -> int | None:
    """An exclusive (``shared``: a shared) ``flock`` on ``lock`` (its descriptor);
    :class:`InputError` when another process holds it in a conflicting mode; None when no lock
    file can be made (the write goes on unlocked)."""
    for _ in range(50):
        try:
            lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 64).decode("ascii", errors="replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise InputError(
                path, field, f"another rackbook{who} is writing this folder now: wait for it "
                "to finish, or write elsewhere"
            ) from None  # fmt: skip
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except OSError:
            same = False
        if same:  # not a file its last holder removed after this process opened it
            if not shared:  # shared holders leave the file as it is: several hold it at once
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
            return fd
        os.close(fd)
    return None


@contextlib.contextmanager
def output_lock(path: str | Path, field: str = "output", shared: bool = False) -> Iterator[None]:
    """Hold the advisory lock of the output folder ``path`` for the block: a second writer of
    the same folder (another rackbook process) gets one :class:`InputError` instead of
    replacing this one's work. ``shared``: held together with other shared holders (writers
    of different parts of one folder, each also holding its part's own lock), never with an
    exclusive one. Re-entrant within a process. The lock file lives in :func:`lock_path`'s
    folder and is removed by its last holder."""
    lock = lock_path(path)
    key = str(lock)
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
    if held is None:
        fd = _acquire(lock, Path(path), field, shared)
        with _HELD_GUARD:
            held = _HELD[key] = [fd, 1]
    try:
        yield
    finally:
        with _HELD_GUARD:
            held[1] -= 1
            last = held[1] == 0 and _HELD.get(key) is held
            if last:
                del _HELD[key]
        if last and held[0] is not None:
            with contextlib.suppress(OSError):
                # exclusive: no other process holds this file. Shared: removed only when this
                # holder can take it exclusively, i.e. it is the last one (a failed conversion
                # drops the shared lock, which is being released anyway).
                if shared:
                    fcntl.flock(held[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(lock)
            os.close(held[0])


def _nonempty(path: Path) -> bool:
    try:
        return bool(os.listdir(path))
    except OSError:
        return path.exists() or path.is_symlink()


@contextlib.contextmanager
def atomic_dir(
    path: str | Path,
    *,
    overwrite: bool = True,
    kind: str = "output",
    legacy: Callable[[Path], bool] | None = None,
    field: str = "output",
) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it is marked (:data:`MARKER`, ``kind``)
    and replaces ``path``; on error it is removed.

    Readers never see a partly written folder at ``path``. The folder's lock
    (:func:`output_lock`) is held throughout. An existing ``path`` is replaced only when
    :func:`check_replaceable` allows it (checked before the block and again before the swap)
    and, with ``overwrite=False``, only when it is empty. A ``path`` that exists as a file, or
    under a file, is an :class:`InputError` (naming ``field``): a file is never replaced. The
    old folder is moved aside under a unique temporary name of rackbook's own, then removed.
    """
    path = check_output_folder(path, field)
    with output_lock(path, field):
        check_replaceable(path, kind, field, legacy)
        if not overwrite and _nonempty(path):
            raise InputError(path, field, f"a {kind} exists there: refusing to replace it")
        tmp: Path | None = None
        hold: Path | None = None  # a unique empty folder the old one is moved into
        try:
            with _signals_held():  # the temporary exists only once this try can remove it
                tmp = Path(_make_temp(path, folder=True)[1])
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700 folders
            yield tmp
            (tmp / MARKER).write_text(marker_text(kind), encoding="utf-8")
            if path.exists() or path.is_symlink():
                check_replaceable(path, kind, field, legacy)  # again: time has passed
                if not overwrite and _nonempty(path):
                    raise InputError(path, field, f"a {kind} exists there: refusing to replace it")
                with _signals_held():
                    hold = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".old",
                                                 dir=path.parent))  # fmt: skip
                with _signals_held():  # never the old folder moved aside and the new one not in
                    os.replace(path, hold / "old")
                    try:
                        os.replace(tmp, path)
                    except BaseException:
                        os.replace(hold / "old", path)
                        raise
            else:
                os.replace(tmp, path)
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)  # gone already if it was moved in
            raise
        finally:
            if hold is not None:  # empty, or the old folder once the new one is in
                shutil.rmtree(hold, ignore_errors=True)


@contextlib.contextmanager
def output_folder(
    path: str | Path,
    *,
    kind: str,
    field: str = "output",
    legacy: Callable[[Path], bool] | None = None,
    parts: Sequence[str] = (),
) -> Iterator[Path]:
    """A folder rackbook writes into file by file (``rackbook run``'s results): its lock held
    for the block, :func:`check_replaceable` before anything, a FIFO, device or socket among
    its entries refused (:func:`refuse_special`), then made when missing and marked. With
    ``parts`` (the names of the files' owners: ``run``'s results) the block holds one lock per
    part and the folder's own lock shared: two writers of different parts share the folder
    (the suite runs chapters two at a time into one folder), two of the same part do not, nor
    does a writer of the whole folder. On an error that left the folder's entries as they
    were, the marker this call wrote is removed again, and the folders this call made if they
    are empty."""
    path = check_output_folder(path, field)
    with contextlib.ExitStack() as held:
        for part in parts:
            held.enter_context(output_lock(path / part, field))
        held.enter_context(output_lock(path, field, shared=bool(parts)))
        created = [d for d in (path, *path.parents) if not (d.exists() or d.is_symlink())]
        marked = False
        check_replaceable(path, kind, field, legacy)
        refuse_special(path, field)
        before = set() if created else set(os.listdir(path))
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(path, field, f"cannot write here: {exc.strerror or exc}") from None
        if marked_kind(path) != kind:
            write_marker(path, kind)
            marked = True
        try:
            yield path
        except BaseException:
            with contextlib.suppress(OSError):
                if marked and set(os.listdir(path)) - {MARKER} == before - {MARKER}:
                    os.unlink(path / MARKER)
            for d in created:  # deepest first
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise
