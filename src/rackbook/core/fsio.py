"""Output folders and files: nothing half-written is left, nothing rackbook did not write is
replaced, no link followed. A folder's marker (:data:`MARKER`) names its kind and lists each entry
(``["f", SIZE, SHA256]``, ``["d"]``, ``["o"]`` nested output, ``["l", TARGET]``, ``["p"]`` an
fnmatch pattern being written); a lock file beside it refuses a second writer and journals the
temporaries ``.NAME.XXXXXXXX.tmp``/``.old`` for the next writer to remove."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import hashlib
import json
import os
import re
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

#: The file that marks a folder as an output rackbook wrote.
MARKER = ".rackbook-output"
HEAD = "rackbook output:"
_MANIFEST = "manifest: "
#: The largest marker read (bytes).
MAX_MARKER_BYTES = 64 * 1024 * 1024

#: What writes each kind of output, said in the marker for a person who finds it.
WRITERS: dict[str, str] = {
    "trace": "rackbook import or rackbook record",
    "results": "rackbook run or rackbook book --traces",
    "html": "rackbook book --html",
    "recipes": "rackbook recipes",
    "calibration": "rackbook calibrate",
    "raw": "rackbook record (its raw artifacts, beside the trace)",
}

TEMP_NAME = re.compile(r"^\.(?P<base>.+)\.[a-z0-9_]{8}\.(?:tmp|old)$", re.DOTALL)

Manifest = dict[str, list[Any]]
#: The entry types (``x``: neither file, folder nor link: never matches).
_TYPES = ("f", "d", "o", "l", "p", "x")


def _regular(path: str | Path, read: Callable[[Any, os.stat_result], Any]) -> Any:
    """``read(file, stat)`` of the regular file ``path`` (no link followed), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with open(fd, "rb") as fh:  # closes fd
            st = os.fstat(fd)
            return read(fh, st) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return None


def digest(path: Path) -> tuple[int, str] | None:
    """(bytes, SHA-256) of the regular file ``path`` (no link followed), else None."""
    return _regular(path, lambda f, st: (st.st_size, hashlib.file_digest(f, "sha256").hexdigest()))


def marker_text(kind: str, listing: Manifest) -> str:
    """The marker's text for ``kind`` and ``manifest`` (sorted: stable bytes in git)."""
    listed = json.dumps(dict(sorted(listing.items())), separators=(",", ":"), ensure_ascii=True)
    return (
        f"{HEAD} {kind}\n"
        f"Written by {WRITERS.get(kind, 'rackbook')}. rackbook replaces or deletes only the\n"
        "files listed below, as it wrote them; a folder holding anything else is refused.\n"
        f"{_MANIFEST}{listed}\n"
    )


def read_marker(folder: str | Path) -> tuple[str, Manifest] | None:
    """(kind, manifest) of ``folder``'s marker; None without a valid one."""
    data = _regular(
        Path(folder) / MARKER, lambda fh, st: fh.read() if st.st_size <= MAX_MARKER_BYTES else None
    )
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").split("\n")
    kind = lines[0][len(HEAD) :].strip() if lines[0].startswith(HEAD) else ""
    listed = [ln[len(_MANIFEST) :] for ln in lines[1:] if ln.startswith(_MANIFEST)]
    if not kind or len(listed) != 1:
        return None
    try:
        manifest = json.loads(listed[0])
    except ValueError:
        return None
    if not isinstance(manifest, dict) or not all(
        isinstance(v, list) and v and v[0] in _TYPES for v in manifest.values()
    ):
        return None
    return kind, manifest


def _never(rel: str) -> bool:
    return False


def scan(
    folder: str | Path, pending: tuple[str, ...] = (), skip: Callable[[str], bool] = _never
) -> Manifest:
    """The manifest of what ``folder`` holds now (its marker and what ``skip`` names left out),
    plus ``pending`` names."""
    out: Manifest = {p: ["p"] for p in pending}
    for e in sorted(os.scandir(folder), key=lambda e: e.name):
        if e.name != MARKER:
            _list(Path(e.path), e.name, out, skip)
    return out


def _list(path: Path, rel: str, out: Manifest, skip: Callable[[str], bool] = _never) -> None:
    """Add the entries of ``path`` (listed as ``rel``) and everything under it but what ``skip``
    names; a sub-folder whose marker matches is one ``o`` entry."""
    if skip(rel):
        return
    if path.is_symlink():
        out[rel] = ["l", os.readlink(path)]
    elif path.is_dir():
        if problem(path) is None:
            out[rel] = ["o"]
            return
        out[rel] = ["d"]
        for e in sorted(os.scandir(path), key=lambda e: e.name):
            _list(Path(e.path), f"{rel}/{e.name}", out, skip)
    else:
        got = digest(path)
        out[rel] = ["f", *got] if got is not None else ["x"]


def _pending(rel: str, patterns: list[str]) -> bool:
    parts = rel.split("/")
    return any(
        fnmatch.fnmatchcase("/".join(parts[: i + 1]), p)
        for p in patterns
        for i in range(len(parts))
    )


def problem(
    folder: str | Path, listed: Manifest | None = None, temps: list[Path] | None = None
) -> str | None:
    """Why ``folder`` does not match ``listed`` (default: its marker's manifest), a sentence, or
    None: what it holds now (:func:`scan`) against the manifest, pending entries and rackbook's
    temporaries beside entries left out (``temps`` collects the latter)."""
    if listed is None:
        found = read_marker(folder)
        if found is None:
            return f"has no valid {MARKER} file"
        listed = found[1]
    patterns = [k for k, v in listed.items() if v[0] == "p"]

    def skip(rel: str) -> bool:
        if _pending(rel, patterns):
            return True
        head, _, name = rel.rpartition("/")
        m = TEMP_NAME.match(name)
        base = (head + "/" if head else "") + m["base"] if m else None
        if base is None or not (base in listed or _pending(base, patterns)):
            return False
        if temps is not None:
            temps.append(Path(folder, rel))
        return True

    try:
        now = scan(folder, skip=skip)
    except OSError as exc:
        where = os.path.relpath(exc.filename or folder, folder)
        return f"{where!r} cannot be read ({exc.strerror or exc})"
    for rel, got in now.items():
        if rel not in listed:
            return f"holds {rel!r}, which rackbook did not write (not in its {MARKER})"
        if got != listed[rel] or got[0] == "x":
            return f"{rel!r} is not what rackbook wrote there (changed or replaced since)"
    return None


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


def _refuse_link(path: Path, field: str, what: str) -> None:
    if path.is_symlink():
        why = "is a symbolic link: rackbook never writes through one nor replaces it"
        raise InputError(path, field, f"{why} (name the {what} it points to, or another)")


def _check_output(path: str | Path, field: str, what: str) -> Path:
    """``path``; InputError naming ``field`` when empty, a link, not a ``what``, or under a file."""
    if not str(path).strip():  # before Path(), which reads "" as "."
        raise InputError("''", field, f"an empty path: name a {what}")
    path = Path(path)
    if what == "file" and path.is_dir() and not path.is_symlink():
        raise InputError(path, field, "is a folder, expected a file")
    _refuse_link(path, field, what)
    if what == "folder" and path.exists() and not path.is_dir():
        raise InputError(path, field, "exists and is a file, expected a folder")
    parent = next((p for p in path.parents if p.exists() or p.is_symlink()), None)
    if parent is not None and not parent.is_dir():
        raise InputError(path, field, f"{parent} is a file, not a folder")
    return path


def check_output_folder(path: str | Path, field: str = "output") -> Path:
    """``path``; InputError naming ``field`` when a link, a file, under a file, or read-only."""
    path = _check_output(path, field, "folder")
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
        why = "exists: rackbook does not replace a file it cannot tell is its own"
        raise InputError(path, field, f"{why} (remove it, or name a new file)")
    return path


def atomic_write_text(path: str | Path, data: str | bytes, field: str = "output") -> Path:
    """Write ``data`` (text: in UTF-8) to ``path`` through an exclusive temporary sibling, then
    rename."""
    path = _check_output(path, field, "file")
    tmp: Path | None = None
    try:
        with signals_held():  # the temporary exists only once this try can remove it
            fd, tmp = _make_temp(path, folder=False)
        assert fd is not None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    return path


atomic_write_bytes = atomic_write_text


def atomic_write_json(path: str | Path, obj: Any, field: str = "output") -> Path:
    """Write ``obj`` as indented JSON (NaN refused) atomically."""
    return atomic_write_text(
        path, json.dumps(obj, indent=2, allow_nan=False, default=str) + "\n", field
    )


def _writable(name: str) -> str:
    """``name`` with bytes that are not UTF-8 written ``\\xNN`` (libraries refuse such names
    for the temporaries; the journal's cleaner spells a lock's name the same way)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _make_temp(path: Path, *, folder: bool, suffix: str = ".tmp") -> tuple[int | None, Path]:
    """A new temporary sibling ``.NAME.XXXXXXXX.tmp`` of ``path`` (a file's descriptor, or a
    folder), journaled in its lock."""
    prefix = f".{_writable(path.name)}."
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if folder:
            fd, tmp = None, tempfile.mkdtemp(suffix, prefix, path.parent)
        else:
            fd, tmp = tempfile.mkstemp(suffix, prefix, path.parent)
    except OSError as exc:
        raise InputError(path, "output", f"cannot write here: {exc.strerror or exc}") from None
    _note_temp(path, Path(tmp))
    return fd, Path(tmp)


def make_temp_dir(path: Path) -> Path:
    """A new temporary folder (mode 0700) beside ``path``; the caller removes it."""
    return _make_temp(path, folder=True)[1]


def marked_kind(folder: str | Path) -> str | None:
    """The kind ``folder``'s marker names, or None."""
    found = read_marker(folder)
    return None if found is None else found[0]


def write_marker(folder: str | Path, kind: str, pending: tuple[str, ...] = ()) -> Path:
    """Mark ``folder`` as a ``kind`` output listing what it holds (and ``pending``)."""
    return atomic_write_text(Path(folder) / MARKER, marker_text(kind, scan(folder, pending)))


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
    found = read_marker(path)
    why: str | None
    if found is None:
        why = f"holds {entries[0]!r} and was not written by rackbook (no valid {MARKER} file)"
    elif found[0] != kind:
        why = f"holds a rackbook {found[0]} output, not {kind}"
    else:
        why = problem(path, found[1])
    if why is not None:
        refusing = "refusing to replace or write into it (move it away, or choose another folder)"
        raise InputError(path, field, f"{why}: {refusing}")


def remove_temporaries(folder: str | Path, bases: Iterable[str] | None = None) -> None:
    """Remove temporaries a killed writer left in ``folder`` (beside ``bases``; all when None)."""
    wanted, temps = None if bases is None else set(bases), list[Path]()
    problem(folder, temps=temps)
    for t in temps:
        m = TEMP_NAME.match(t.name)
        if m is None or (wanted is not None and m["base"] not in wanted):
            continue
        _remove(t)


def _remove(p: Path) -> None:
    with contextlib.suppress(OSError):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink()


def update_manifest(
    folder: str | Path, *, record: Iterable[str] = (), pending: Iterable[str] = ()
) -> None:
    """Relist ``record`` entries in ``folder``'s manifest as they are now, mark ``pending`` ones."""
    folder = Path(folder)
    lock = lock_path(folder, "manifest")
    fd = _flock(lock, fcntl.LOCK_EX)  # waits for another writer's update
    try:
        found = read_marker(folder)
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
                _list(target, name, entries)
            for up in Path(name).parents:  # the folders above it
                if str(up) != "." and (folder / up).is_dir():
                    entries.setdefault(up.as_posix(), ["d"])
        atomic_write_text(folder / MARKER, marker_text(kind, entries))
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            os.close(fd)


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
            for (fi, inner), (fo, outer) in (((fb, b), (fa, a)), ((fa, a), (fb, b))):
                if _is_inside(inner, outer):
                    what = "is" if _is_inside(outer, inner) else "lies inside"
                    problem = f"{what} {fo} {outer}: keep the two apart (neither inside the other)"
                    raise InputError(inner, fi, problem)


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
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            problem = "is a FIFO, device or socket, where a result file goes: remove it"
            raise InputError(Path(folder) / name, field, problem)


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
    base = _writable(lock.name[: -len(_LOCK_SUFFIX)])  # ".NAME" or ".NAME.PART"
    for line in data.decode("utf-8", errors="surrogateescape").splitlines():
        if not line.startswith("tmp "):
            continue
        name = line[4:]
        m = TEMP_NAME.match(name)
        if not m or "/" in name:
            continue
        own = f".{_writable(m['base'])}"
        if own == base or base.startswith(f"{own}."):
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
        why = f"another rackbook{who} is writing this folder now"
        raise InputError(path, field, f"{why}: wait for it to finish, or write elsewhere") from None
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
    path: str | Path, *, overwrite: bool = True, kind: str = "output", field: str = "output"
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
                    hold = _make_temp(path, folder=True, suffix=".old")[1]
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
