"""Atomic file and folder writes: nothing half-written is left, nothing rackbook did not write (by
its marker, :mod:`rackbook.core.manifest`) is replaced, no link followed. A lock file beside each
output folder refuses a second writer and journals temporaries for the next writer to remove."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rackbook import STOP_SIGNALS
from rackbook.core import manifest
from rackbook.core.manifest import MARKER
from rackbook.errors import InputError

__all__ = ["MARKER", "InputError"]


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Stop signals noted within the block and acted on when it ends (main thread only)."""
    outside = any(signal.getsignal(sig) is None for sig in STOP_SIGNALS)
    if outside or threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    old = {
        sig: signal.signal(sig, lambda signum, _frame: noted.append(signum)) for sig in STOP_SIGNALS
    }
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(noted):  # each once, in the order they came
            handler = old[signal.Signals(signum)]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _check_parents(path: Path, field: str) -> None:
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise InputError(path, field, f"{parent} is a file, not a folder")
            return


def _refuse_link(path: Path, field: str, what: str) -> None:
    if path.is_symlink():
        raise InputError(
            path,
            field,
            f"is a symbolic link: rackbook never writes through one nor replaces "
            f"it (name the {what} it points to, or another)",
        )


def _check_output(path: str | Path, field: str, what: str) -> Path:
    """``path``; InputError naming ``field`` when empty, a link, not a ``what``, or under a file."""
    path = Path(path)
    if not str(path).strip():
        raise InputError("''", field, f"an empty path: name a {what}")
    if what == "file" and path.is_dir() and not path.is_symlink():
        raise InputError(path, field, "is a folder, expected a file")
    _refuse_link(path, field, what)
    if what == "folder" and path.exists() and not path.is_dir():
        raise InputError(path, field, "exists and is a file, expected a folder")
    _check_parents(path, field)
    return path


def check_output_folder(path: str | Path, field: str = "output") -> Path:
    """``path``; InputError naming ``field`` when a link, a file, under a file, or read-only."""
    return check_writable(_check_output(path, field, "folder"), field)


def check_writable(path: str | Path, field: str = "output") -> Path:
    """``path``; InputError naming ``field`` when where it goes is read-only."""
    path = Path(path)
    for d in (path, *path.parents) if path.is_dir() else path.parents:
        if d.exists():
            if not os.access(d, os.W_OK | os.X_OK):
                raise InputError(path, field, f"cannot write here: {d} is read-only")
            if d != path:
                break
    return path


def check_new_file(path: str | Path, field: str = "output") -> Path:
    """An output file path, refused too when anything is there."""
    path = _check_output(path, field, "file")
    if path.exists():
        raise InputError(
            path,
            field,
            "exists: rackbook does not replace a file it cannot tell is its own "
            "(remove it, or name a new file)",
        )
    return path


def atomic_write_bytes(path: str | Path, data: bytes, field: str = "output") -> Path:
    """Write ``data`` to ``path`` through an exclusive temporary sibling, then rename."""
    path = _check_output(path, field, "file")
    tmp: str | None = None
    try:
        with signals_held():  # the temporary exists only once this try can remove it
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


def atomic_write_text(path: str | Path, text: str, field: str = "output") -> Path:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"), field)


def atomic_write_json(path: str | Path, obj: Any, field: str = "output") -> Path:
    """Write ``obj`` as indented JSON (NaN refused) atomically."""
    return atomic_write_text(
        path, json.dumps(obj, indent=2, allow_nan=False, default=str) + "\n", field
    )


def temp_name(path: Path, suffix: str = ".tmp") -> Path:
    """A new temporary sibling name ``.NAME.XXXXXXXX.tmp`` of ``path``, journaled in its lock."""
    try:
        prefix = f".{path.name}.".encode().decode()
    except UnicodeEncodeError:
        prefix = ".output."
    name = path.parent / f"{prefix}{secrets.token_hex(4)}{suffix}"
    _note_temp(path, name)
    return name


def _make_temp(path: Path, *, folder: bool) -> tuple[int | None, str]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            tmp = temp_name(path)
            try:
                if folder:
                    os.mkdir(tmp, 0o700)
                    return None, str(tmp)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                return os.open(tmp, flags, 0o600), str(tmp)
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free temporary name")
    except OSError as exc:
        raise InputError(path, "output", f"cannot write here: {exc.strerror or exc}") from None


def make_temp_dir(path: Path) -> Path:
    """A new temporary folder (mode 0700) beside ``path``; the caller removes it."""
    return Path(_make_temp(path, folder=True)[1])


def marked_kind(folder: str | Path) -> str | None:
    """The kind ``folder``'s marker names, or None."""
    found = manifest.read(folder)
    return None if found is None else found[0]


def write_marker(folder: str | Path, kind: str, pending: tuple[str, ...] = ()) -> Path:
    """Mark ``folder`` as a ``kind`` output listing what it holds (and ``pending``)."""
    return atomic_write_text(
        Path(folder) / MARKER, manifest.text(kind, manifest.scan(folder, pending))
    )


def check_replaceable(path: str | Path, kind: str, field: str = "output") -> None:
    """InputError unless ``path`` is missing, empty, or marked ``kind`` and as written."""
    path = Path(path)
    _refuse_link(path, field, "folder")
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
    found = manifest.read(path)
    why: str | None
    if found is None:
        why = f"holds {entries[0]!r} and was not written by rackbook (no valid {MARKER} file)"
    elif found[0] != kind:
        why = f"holds a rackbook {found[0]} output, not {kind}"
    else:
        why = manifest.problem(path, found[1])
    if why is not None:
        problem = "refusing to replace or write into it (move it away, or choose another folder)"
        raise InputError(path, field, f"{why}: {problem}")


def remove_temporaries(folder: str | Path, bases: Iterable[str] | None = None) -> None:
    """Remove temporaries a killed writer left in ``folder`` (beside ``bases``; all when None)."""
    wanted, temps = None if bases is None else set(bases), list[Path]()
    manifest.problem(folder, temps=temps)
    for t in temps:
        m = manifest.TEMP_NAME.match(t.name)
        if m is None or (wanted is not None and m["base"] not in wanted):
            continue
        _remove(t)


def _remove(p: Path) -> None:
    with contextlib.suppress(OSError):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink()


@contextlib.contextmanager
def _manifest_held(folder: Path) -> Iterator[None]:
    lock = lock_path(folder, "manifest")
    fd = _flock(lock, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            os.close(fd)


def update_manifest(
    folder: str | Path,
    *,
    record: Iterable[str] = (),
    pending: Iterable[str] = (),
) -> None:
    """Relist ``record`` entries in ``folder``'s manifest as they are now, mark ``pending`` ones."""
    folder = Path(folder)
    with _manifest_held(folder):
        found = manifest.read(folder)
        if found is None:
            return
        kind, entries = found
        for name in pending:
            entries[name] = ["p"]
        for name in record:
            for key in [k for k in entries if k == name or k.startswith(name + "/")]:
                del entries[key]
            target = folder / name
            if target.is_symlink() or target.exists():
                manifest.entries(target, name, entries)
            for up in Path(name).parents:  # the folders above it
                if str(up) != "." and (folder / up).is_dir():
                    entries.setdefault(up.as_posix(), ["d"])
        atomic_write_text(folder / MARKER, manifest.text(kind, entries))


def _is_inside(inner: Path, outer: Path) -> bool:
    a, b = os.path.realpath(inner), os.path.realpath(outer)
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


def refuse_overlap(
    outputs: Mapping[str, str | Path | None], inputs: Mapping[str, str | Path | None]
) -> None:
    """InputError when two ``outputs``, or an output and an input, are the same or nested."""
    outs = [(f, Path(p)) for f, p in outputs.items() if p is not None]
    ins = [(f, Path(p)) for f, p in inputs.items() if p is not None]
    for i, (fa, a) in enumerate(outs):
        for fb, b in outs[i + 1 :] + ins:
            if _is_inside(b, a):
                what = "is" if _is_inside(a, b) else "lies inside"
                raise InputError(
                    b,
                    fb,
                    f"{what} the output {fa} {a}, which would be replaced: keep the two "
                    "apart (neither inside the other)",
                )
            if _is_inside(a, b):
                raise InputError(
                    a, fa, f"lies inside {fb} {b}: keep the two apart (neither inside the other)"
                )


_SPECIAL = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def refuse_special(
    folder: str | Path, field: str = "output", names: Iterable[str] | None = None
) -> None:
    """InputError for a FIFO, device or socket among ``folder``'s entries (or ``names``)."""
    try:
        present = os.listdir(folder)
    except OSError:
        return
    wanted = set(present) if names is None else set(names)
    for name in sorted(n for n in present if n in wanted):
        try:
            mode = os.stat(Path(folder) / name).st_mode
        except (OSError, ValueError):
            continue
        what = _SPECIAL.get(stat.S_IFMT(mode))
        if what is not None:
            raise InputError(
                Path(folder) / name, field, f"is {what}, where a result file goes: remove it"
            )


#: This process's locks (re-entrant): lock file -> [descriptor or None, depth, shared, folders
#: made for it].
_HELD: dict[str, list[Any]] = {}
_HELD_GUARD = threading.Lock()
_LOCK_SUFFIX = ".rackbook-lock"


def lock_path(path: str | Path, part: str = "") -> Path:
    """The lock file ``.NAME[.PART].rackbook-lock`` beside output folder ``path``."""
    real = Path(os.path.realpath(path))
    if real.parent == real:  # the root: no folder beside it
        digest = hashlib.sha256(os.fsencode(str(real))).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f".rackbook-{os.getuid()}-{digest}{_LOCK_SUFFIX}"
    tail = f".{part}" if part else ""
    return real.parent / f".{real.name}{tail}{_LOCK_SUFFIX}"


def _clean_journal(fd: int, lock: Path) -> None:
    """Remove the temporaries a killed holder journaled in ``lock``, then empty it."""
    data = b""
    with contextlib.suppress(OSError):
        data = os.pread(fd, 1 << 20, 0)
    base = lock.name[: -len(_LOCK_SUFFIX)]  # ".NAME" or ".NAME.PART"
    for line in data.decode("utf-8", errors="surrogateescape").splitlines():
        if not line.startswith("tmp "):
            continue
        name = line[4:]
        m = manifest.TEMP_NAME.match(name)
        if m and "/" not in name and (f".{m['base']}" == base or base.startswith(f".{m['base']}.")):
            _remove(lock.parent / name)
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)


def _flock(lock: Path, how: int) -> int | None:
    """``lock`` opened and flocked (``how``, retried while its last holder removed it meanwhile);
    None when no lock file can be made. A refused flock raises its OSError."""
    for _ in range(50):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, how)
        except OSError:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd
        os.close(fd)
    return None


def _acquire(lock: Path, path: Path, field: str, shared: bool = False) -> int | None:
    """A non-blocking flock on ``lock`` (its descriptor, None without a lock file); InputError when
    another process holds it. An exclusive holder first cleans the journal."""
    try:
        fd = _flock(lock, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        holder = ""
        with contextlib.suppress(OSError):
            holder = lock.read_text("ascii", "replace")[:64].split("\n")[0].strip()
        who = f" (pid {holder})" if holder.isdigit() else ""
        raise InputError(
            path,
            field,
            f"another rackbook{who} is writing this folder now: wait for it "
            "to finish, or write elsewhere",
        ) from None
    if fd is not None and not shared:  # shared holders leave the file as it is
        _clean_journal(fd, lock)
        os.write(fd, str(os.getpid()).encode())
    return fd


def _note_temp(path: Path, tmp: Path) -> None:
    try:
        key = str(lock_path(path))
    except OSError:
        return
    with _HELD_GUARD:
        held = _HELD.get(key)
    if held is None or held[0] is None or held[2]:
        return
    with contextlib.suppress(OSError):
        os.write(held[0], f"\ntmp {tmp.name}".encode("utf-8", errors="surrogateescape"))


def _make_parents(folder: Path) -> list[Path]:
    made = [d for d in (folder, *folder.parents) if not (d.exists() or d.is_symlink())]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return []
    return made


@contextlib.contextmanager
def output_lock(
    path: str | Path, field: str = "output", shared: bool = False, part: str = ""
) -> Iterator[None]:
    """Hold ``path``'s advisory lock (of ``part``; ``shared`` or exclusive) for the block; another
    process gets one InputError. The last holder removes the lock file."""
    lock = lock_path(path, part)
    key = str(lock)
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
    if held is None:
        made = _make_parents(lock.parent)
        try:
            fd = _acquire(lock, Path(path), field, shared)
        except BaseException:
            for d in made:
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise
        with _HELD_GUARD:
            held = _HELD[key] = [fd, 1, shared, made]
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
                # shared: removed only when this holder can take it exclusively (the last one)
                if shared:
                    fcntl.flock(held[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(lock)
            os.close(held[0])
        if last:
            for d in held[3]:  # deepest first; kept when something was written there
                with contextlib.suppress(OSError):
                    d.rmdir()


def _check_swap(path: Path, kind: str, field: str, overwrite: bool) -> None:
    check_replaceable(path, kind, field)
    with contextlib.suppress(OSError):
        if not overwrite and os.listdir(path):
            raise InputError(path, field, f"a {kind} exists there: refusing to replace it")


@contextlib.contextmanager
def atomic_dir(
    path: str | Path,
    *,
    overwrite: bool = True,
    kind: str = "output",
    field: str = "output",
) -> Iterator[Path]:
    """Yield a temporary sibling folder under ``path``'s lock; on success it is marked and swapped
    in, on error removed. ``path`` is replaced only as :func:`check_replaceable` allows (and with
    ``overwrite=False`` only when empty)."""
    path = check_output_folder(path, field)
    with output_lock(path, field):
        _check_swap(path, kind, field, overwrite)
        tmp: Path | None = None
        hold: Path | None = None  # a unique empty folder the old one is moved into
        try:
            with signals_held():  # the temporary exists only once this try can remove it
                tmp = make_temp_dir(path)
            os.chmod(tmp, 0o777 & ~_umask())  # made 0700
            yield tmp
            write_marker(tmp, kind)
            if path.exists() or path.is_symlink():
                _check_swap(path, kind, field, overwrite)  # again: time has passed
                with signals_held():
                    hold = temp_name(path, ".old")
                    os.mkdir(hold, 0o700)
                with signals_held():  # never the old folder moved aside and the new one not in
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
    parts: Sequence[str] = (),
    owned: Iterable[str] | None = None,
) -> Iterator[Path]:
    """A folder written file by file: locked (``parts``: one lock each, the folder's shared),
    checked, made and marked, stale temporaries beside ``owned`` removed; an error that changed
    nothing removes the marker and the folders made."""
    path = check_output_folder(path, field)
    with contextlib.ExitStack() as held:
        for part in parts:
            held.enter_context(output_lock(path, field, part=part))
        held.enter_context(output_lock(path, field, shared=bool(parts)))
        created = [d for d in (path, *path.parents) if not (d.exists() or d.is_symlink())]
        marked = False
        check_replaceable(path, kind, field)
        refuse_special(path, field)
        before = set() if created else set(os.listdir(path))
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(path, field, f"cannot write here: {exc.strerror or exc}") from None
        if marked_kind(path) != kind:
            write_marker(path, kind)
            marked = True
        remove_temporaries(path, None if owned is None else list(owned))
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
