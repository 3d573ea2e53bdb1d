"""Atomic writes: all or nothing, with ordinary permissions."""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import stat
import threading
from pathlib import Path

import pytest

from rackbook.core import fsio
from rackbook.core.fsio import MARKER, atomic_dir, atomic_write_text
from rackbook.errors import InputError


def test_atomic_write_text_permissions_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        f = atomic_write_text(tmp_path / "a.txt", "x")
        d_path = tmp_path / "d"
        with atomic_dir(d_path) as d:
            (d / "f").write_text("y")
    finally:
        os.umask(old)
    assert stat.S_IMODE(f.stat().st_mode) == 0o644
    assert stat.S_IMODE(d_path.stat().st_mode) == 0o755


def test_atomic_dir_leaves_nothing_on_error_and_keeps_old(tmp_path):
    target = tmp_path / "t"
    with atomic_dir(target) as d:
        (d / "v").write_text("1")
    with pytest.raises(RuntimeError), atomic_dir(target) as d:
        (d / "v").write_text("2")
        raise RuntimeError("boom")
    assert (target / "v").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


class Stopped(BaseException):
    """What the test's SIGTERM handler raises (as the CLI's raises ``Terminated``)."""


@pytest.fixture
def sigterm_raises():
    """SIGTERM raises :class:`Stopped` in this process for the test's duration."""

    def handler(_sig, _frame):
        raise Stopped

    old = signal.signal(signal.SIGTERM, handler)
    yield
    signal.signal(signal.SIGTERM, old)


def _then_sigterm(real):
    """``real`` (an os function) that sends this process SIGTERM once it has made a temporary
    (a path ending in ``.tmp``): the signal lands in the instant between one step of a write
    and the next."""

    def wrapped(path, *args, **kwargs):
        out = real(path, *args, **kwargs)
        if str(path).endswith(".tmp"):
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    return wrapped


def test_a_signal_just_after_the_temporary_folder_is_made_leaves_nothing(
    tmp_path, monkeypatch, sigterm_raises
):
    """A signal delivered as the temporary folder is made (before the cleanup's try) used to
    leave the empty temporary sibling behind (seen once in CI: test_hostile's import-sigterm)."""
    monkeypatch.setattr(os, "mkdir", _then_sigterm(os.mkdir))
    with pytest.raises(Stopped), atomic_dir(tmp_path / "t") as d:
        (d / "v").write_text("1")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_just_after_the_temporary_file_is_made_leaves_nothing(
    tmp_path, monkeypatch, sigterm_raises
):
    monkeypatch.setattr(os, "open", _then_sigterm(os.open))
    with pytest.raises(Stopped):
        atomic_write_text(tmp_path / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_between_the_two_renames_of_a_swap_leaves_the_new_folder_only(
    tmp_path, monkeypatch, sigterm_raises
):
    """Replacing a folder moves the old one aside, then the new one in: a signal between the
    two renames is held until both are done, and the old folder is removed."""
    target = tmp_path / "t"
    with atomic_dir(target) as d:
        (d / "v").write_text("old")
    calls = []
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        if Path(dst).name == MARKER:  # the new folder's marker, written before the swap
            return
        calls.append(dst)
        if len(calls) == 1:  # the old folder is aside, the new one not yet in
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Stopped), atomic_dir(target) as d:
        (d / "v").write_text("new")
    assert len(calls) == 2  # both renames ran before the signal was acted on
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]
    assert (target / "v").read_text() == "new"


# ----------------------------------------------------------------------------- issue 39, item 7
# (each piece of fsio by itself, inside tmp_path: what it returns, what each refusal names, and
# what it leaves on disk)

ABC_SHA = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def _where(e: InputError) -> tuple[str, str, str]:
    return e.file, e.field, e.problem


def _refusal(call, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as exc:
        call(*args, **kwargs)
    return exc.value


def test_digest_of_a_regular_file_only(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert fsio.digest(tmp_path / "f") == (3, ABC_SHA)
    os.symlink(tmp_path / "f", tmp_path / "link")
    assert fsio.digest(tmp_path / "link") is None  # no link followed
    assert fsio.digest(tmp_path) is None  # a folder
    assert fsio.digest(tmp_path / "absent") is None
    os.mkfifo(tmp_path / "fifo")
    assert fsio.digest(tmp_path / "fifo") is None  # opened without blocking, not read


def test_marker_text_word_for_word():
    text = fsio.marker_text("trace", {"b": ["d"], "a": ["f", 3, "x"]})
    assert text == (
        "rackbook output: trace\n"
        "Written by rackbook import or rackbook record. rackbook replaces or deletes only the\n"
        "files listed below, as it wrote them; a folder holding anything else is refused.\n"
        'manifest: {"a":["f",3,"x"],"b":["d"]}\n'
    )
    assert fsio.marker_text("other", {}).splitlines()[1].startswith("Written by rackbook. ")
    assert fsio.marker_text("html", {"é": ["d"]}).endswith('manifest: {"\\u00e9":["d"]}\n')


def _marker(folder, text):
    folder.mkdir(exist_ok=True)
    (folder / fsio.MARKER).write_text(text)
    return fsio.read_marker(folder)


def test_read_marker_takes_only_a_whole_valid_marker(tmp_path, monkeypatch):
    head, man = "rackbook output:  trace \n", 'manifest: {"a":["f",1,"h"],"b":["o"]}\n'
    assert _marker(tmp_path / "ok", head + "words\n" + man) == (
        "trace",
        {"a": ["f", 1, "h"], "b": ["o"]},
    )
    assert fsio.read_marker(tmp_path / "absent") is None
    assert _marker(tmp_path / "nohead", "rackbook outpt: trace\n" + man) is None
    assert _marker(tmp_path / "nokind", "rackbook output: \n" + man) is None
    assert _marker(tmp_path / "none", head) is None
    assert _marker(tmp_path / "two", head + man + man) is None
    assert _marker(tmp_path / "json", head + "manifest: {a}\n") is None
    assert _marker(tmp_path / "list", head + 'manifest: [["f"]]\n') is None
    assert _marker(tmp_path / "str", head + 'manifest: {"a":"f"}\n') is None
    assert _marker(tmp_path / "empty", head + 'manifest: {"a":[]}\n') is None
    assert _marker(tmp_path / "type", head + 'manifest: {"a":["q"]}\n') is None
    for t in ("f", "d", "o", "l", "p", "x"):
        assert _marker(tmp_path / f"t{t}", head + f'manifest: {{"a":["{t}"]}}\n') == (
            "trace",
            {"a": [t]},
        )
    size = (tmp_path / "ok" / fsio.MARKER).stat().st_size
    monkeypatch.setattr(fsio, "MAX_MARKER_BYTES", size)
    assert fsio.read_marker(tmp_path / "ok") is not None  # exactly at the limit
    monkeypatch.setattr(fsio, "MAX_MARKER_BYTES", size - 1)
    assert fsio.read_marker(tmp_path / "ok") is None
    (tmp_path / "link").mkdir()
    os.symlink(tmp_path / "ok" / fsio.MARKER, tmp_path / "link" / fsio.MARKER)
    monkeypatch.setattr(fsio, "MAX_MARKER_BYTES", 1 << 20)
    assert fsio.read_marker(tmp_path / "link") is None  # a linked marker is no marker


def test_read_marker_decodes_bad_bytes_as_replacements(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / fsio.MARKER).write_bytes(b'rackbook output: tr\xffce\nmanifest: {"a":["d"]}\n')
    assert fsio.read_marker(folder) == ("tr\ufffdce", {"a": ["d"]})


def _tree(root):
    """A folder with a file, an empty sub-folder, a nested file, a link and a marked output."""
    root.mkdir()
    (root / "f").write_bytes(b"abc")
    (root / "sub").mkdir()
    (root / "sub" / "g").write_bytes(b"")
    (root / "empty").mkdir()
    os.symlink("f", root / "ln")
    (root / "out").mkdir()
    (root / "out" / "x").write_bytes(b"abc")
    fsio.write_marker(root / "out", "html")
    return root


def test_scan_lists_every_entry_by_type(tmp_path):
    root = _tree(tmp_path / "r")
    (root / fsio.MARKER).write_text("not listed")
    empty_sha = hashlib.sha256(b"").hexdigest()
    assert fsio.scan(root, pending=("p*",)) == {
        "p*": ["p"],
        "empty": ["d"],
        "f": ["f", 3, ABC_SHA],
        "ln": ["l", "f"],
        "out": ["o"],
        "sub": ["d"],
        "sub/g": ["f", 0, empty_sha],
    }
    assert list(fsio.scan(root)) == ["empty", "f", "ln", "out", "sub", "sub/g"]
    assert fsio.scan(root, skip=lambda rel: rel.startswith("sub")).keys() == {
        "empty",
        "f",
        "ln",
        "out",
    }
    os.mkfifo(root / "fifo")
    assert fsio.scan(root)["fifo"] == ["x"]
    (root / "out" / "y").write_text("new")  # no longer as marked: listed entry by entry
    assert fsio.scan(root)["out"] == ["d"] and fsio.scan(root)["out/y"][0] == "f"


def test_problem_says_what_differs_from_the_marker(tmp_path):
    root = _tree(tmp_path / "r")
    assert fsio.problem(root) == f"has no valid {fsio.MARKER} file"
    fsio.write_marker(root, "trace", pending=("pend*",))
    assert fsio.problem(root) is None
    (root / "pending-file").write_text("being written")
    (root / "pend-dir").mkdir()
    (root / "pend-dir" / "x").write_text("being written")
    assert fsio.problem(root) is None  # under a pattern being written
    (root / "other").write_text("mine")
    assert fsio.problem(root) == (
        f"holds 'other', which rackbook did not write (not in its {fsio.MARKER})"
    )
    (root / "other").unlink()
    (root / "f").write_bytes(b"abd")
    assert fsio.problem(root) == "'f' is not what rackbook wrote there (changed or replaced since)"
    (root / "f").write_bytes(b"abc")
    (root / "sub" / "h").write_text("")
    assert fsio.problem(root) == (
        f"holds 'sub/h', which rackbook did not write (not in its {fsio.MARKER})"
    )
    listed = {"a": ["f", 0, hashlib.sha256(b"").hexdigest()]}
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a").write_text("")
    assert fsio.problem(tmp_path / "x", listed) is None
    os.mkfifo(tmp_path / "x" / "b")  # unreadable as a file: never what rackbook wrote
    assert fsio.problem(tmp_path / "x", {**listed, "b": ["x"]}) == (
        "'b' is not what rackbook wrote there (changed or replaced since)"
    )


def test_problem_passes_temporaries_beside_listed_entries_only(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "f").write_text("1")
    (root / "d").mkdir()
    (root / "d" / "g").write_text("2")
    fsio.write_marker(root, "trace", pending=("pat*",))
    for name in (".f.abcd1234.tmp", ".f.abcd_234.old", "d/.g.00000000.tmp", ".pat1.zzzzzzzz.tmp"):
        (root / name).write_text("left by a killed writer")
    temps: list[Path] = []
    assert fsio.problem(root, temps=temps) is None
    assert sorted(p.relative_to(root).as_posix() for p in temps) == [
        ".f.abcd1234.tmp",
        ".f.abcd_234.old",
        ".pat1.zzzzzzzz.tmp",
        "d/.g.00000000.tmp",
    ]
    for name, why in (
        (".h.abcd1234.tmp", "not beside a listed entry"),
        (".f.abcd123.tmp", "7 characters"),
        (".f.ABCD1234.tmp", "upper case"),
        (".f.abcd1234.tmpx", "another suffix"),
        ("f.abcd1234.tmp", "no leading dot"),
    ):
        (root / name).write_text("")
        assert fsio.problem(root) == (
            f"holds {name!r}, which rackbook did not write (not in its {fsio.MARKER})"
        ), why
        (root / name).unlink()


def test_problem_names_what_cannot_be_read(tmp_path, monkeypatch):
    root = tmp_path / "r"
    root.mkdir()
    (root / "d").mkdir()
    real = os.scandir

    def scandir(path):
        if Path(path).name == "d":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert fsio.problem(root, {}) == "'d' cannot be read (Permission denied)"

    def broken(path):
        raise OSError("odd")

    monkeypatch.setattr(os, "scandir", broken)
    assert fsio.problem(root, {}) == "'.' cannot be read (odd)"


def test_check_output_refuses_by_field(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "dir", tmp_path / "link")
    e = _refusal(fsio.check_output_folder, "  ", "-o")
    assert (e.file, e.field, e.problem) == ("''", "-o", "an empty path: name a folder")
    e = _refusal(fsio.check_new_file, "", "--save")
    assert (e.file, e.field, e.problem) == ("''", "--save", "an empty path: name a file")
    e = _refusal(fsio.check_output_folder, tmp_path / "file", "-o")
    assert (e.file, e.field) == (str(tmp_path / "file"), "-o")
    assert e.problem == "exists and is a file, expected a folder"
    e = _refusal(fsio.check_new_file, tmp_path / "dir", "--save")
    assert _where(e) == (str(tmp_path / "dir"), "--save", "is a folder, expected a file")
    e = _refusal(fsio.check_output_folder, tmp_path / "link", "-o")
    assert (e.file, e.field) == (str(tmp_path / "link"), "-o")
    assert e.problem == (
        "is a symbolic link: rackbook never writes through one nor replaces it "
        "(name the folder it points to, or another)"
    )
    e = _refusal(fsio.check_new_file, tmp_path / "link", "--save")
    assert e.problem.endswith("(name the file it points to, or another)")
    os.symlink(tmp_path / "absent", tmp_path / "dangling")
    e = _refusal(fsio.check_new_file, tmp_path / "dangling")
    assert e.field == "output" and e.problem.startswith("is a symbolic link")
    e = _refusal(fsio.check_output_folder, tmp_path / "file" / "a" / "b", "-o")
    assert (e.file, e.field) == (str(tmp_path / "file" / "a" / "b"), "-o")
    assert e.problem == f"{tmp_path / 'file'} is a file, not a folder"
    os.symlink(tmp_path / "absent", tmp_path / "dangling-dir")
    e = _refusal(fsio.check_output_folder, tmp_path / "dangling-dir" / "x")
    assert (e.field, e.problem) == (
        "output",
        f"{tmp_path / 'dangling-dir'} is a file, not a folder",
    )


def test_check_output_accepts_new_paths_and_folders(tmp_path):
    assert fsio.check_output_folder(str(tmp_path / "new" / "deep")) == tmp_path / "new" / "deep"
    assert fsio.check_output_folder(tmp_path / "dir") == tmp_path / "dir"
    (tmp_path / "dir").mkdir()
    assert fsio.check_output_folder(tmp_path / "dir") == tmp_path / "dir"
    assert fsio.check_new_file(tmp_path / "dir" / "a.json") == tmp_path / "dir" / "a.json"
    os.symlink(tmp_path / "dir", tmp_path / "via")
    assert fsio.check_new_file(tmp_path / "via" / "b.json") == tmp_path / "via" / "b.json"


def test_check_new_file_refuses_anything_there(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    e = _refusal(fsio.check_new_file, tmp_path / "a.json", "--save-json")
    assert (e.file, e.field) == (str(tmp_path / "a.json"), "--save-json")
    assert e.problem == (
        "exists: rackbook does not replace a file it cannot tell is its own "
        "(remove it, or name a new file)"
    )


def test_check_output_folder_refuses_a_read_only_place(tmp_path, monkeypatch):
    """Root writes anywhere: ``os.access`` says which folders are read-only here."""
    ro = {tmp_path / "ro"}
    checked = []

    def access(path, mode):
        checked.append((Path(path), mode))
        return Path(path) not in ro

    monkeypatch.setattr(os, "access", access)
    (tmp_path / "ro" / "sub").mkdir(parents=True)
    e = _refusal(fsio.check_output_folder, tmp_path / "ro" / "new" / "x", "-o")
    assert (e.file, e.field) == (str(tmp_path / "ro" / "new" / "x"), "-o")
    assert e.problem == f"cannot write here: {tmp_path / 'ro'} is read-only"
    assert checked == [(tmp_path / "ro", os.W_OK | os.X_OK)]  # the nearest existing folder
    e = _refusal(fsio.check_output_folder, tmp_path / "ro")
    assert e.problem == f"cannot write here: {tmp_path / 'ro'} is read-only"
    # an existing folder (replaced by a swap): itself and the folder it lies in, no further
    e = _refusal(fsio.check_output_folder, tmp_path / "ro" / "sub")
    assert e.problem == f"cannot write here: {tmp_path / 'ro'} is read-only"
    ro.clear()
    ro.add(tmp_path / "ro" / "sub")
    e = _refusal(fsio.check_output_folder, tmp_path / "ro" / "sub")
    assert e.problem == f"cannot write here: {tmp_path / 'ro' / 'sub'} is read-only"
    ro.clear()
    ro.add(tmp_path)
    checked.clear()
    assert fsio.check_output_folder(tmp_path / "ro" / "sub") == tmp_path / "ro" / "sub"
    assert checked == [(tmp_path / "ro" / "sub", 3), (tmp_path / "ro", 3)]
    assert fsio.check_output_folder(tmp_path / "ro" / "sub" / "new").name == "new"


def test_atomic_write_text_bytes_and_json(tmp_path):
    assert fsio.atomic_write_text(tmp_path / "new" / "t.txt", "é\n") == tmp_path / "new" / "t.txt"
    assert (tmp_path / "new" / "t.txt").read_bytes() == "é\n".encode()
    fsio.atomic_write_bytes(tmp_path / "b", b"\xff\x00")
    assert (tmp_path / "b").read_bytes() == b"\xff\x00"
    fsio.atomic_write_json(tmp_path / "j.json", {"a": [1, 2.5], "p": tmp_path})
    assert (tmp_path / "j.json").read_text() == (
        '{\n  "a": [\n    1,\n    2.5\n  ],\n  "p": "' + str(tmp_path) + '"\n}\n'
    )
    with pytest.raises(ValueError):
        fsio.atomic_write_json(tmp_path / "nan.json", {"x": float("nan")})
    e = _refusal(fsio.atomic_write_json, tmp_path / "new", {}, "--save-json")
    assert (e.field, e.problem) == ("--save-json", "is a folder, expected a file")
    assert _refusal(fsio.atomic_write_json, tmp_path / "new", {}).field == "output"
    assert _refusal(fsio.atomic_write_text, tmp_path / "new", "").field == "output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "j.json", "new"]
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["t.txt"]


def test_a_file_is_written_beside_itself_then_renamed(tmp_path, monkeypatch):
    moved = []
    real = os.replace

    def replace(src, dst):
        moved.append((Path(src), Path(dst)))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    fsio.atomic_write_text(tmp_path / "a" / "b" / "c.txt", "x")
    ((src, dst),) = moved
    assert dst == tmp_path / "a" / "b" / "c.txt" and src.parent == dst.parent
    assert fsio.TEMP_NAME.match(src.name)["base"] == "c.txt" and src.name.endswith(".tmp")


def test_a_failed_write_removes_its_temporary(tmp_path, monkeypatch):
    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space"):
        fsio.atomic_write_text(tmp_path / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_temporaries_are_named_after_the_output(tmp_path):
    d = fsio.make_temp_dir(tmp_path / "deep" / "er" / "out")
    assert d.parent == tmp_path / "deep" / "er" and d.is_dir()
    assert fsio.TEMP_NAME.match(d.name)["base"] == "out" and d.name.endswith(".tmp")
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    odd = fsio.make_temp_dir(tmp_path / os.fsdecode(b"b\xffd"))  # bytes not UTF-8 spelt out
    assert odd.parent == tmp_path and fsio.TEMP_NAME.match(odd.name)["base"] == "b\\xffd"
    (tmp_path / "file").write_text("")
    e = _refusal(fsio.make_temp_dir, tmp_path / "file" / "out")
    assert _where(e) == (str(tmp_path / "file" / "out"), "output", "cannot write here: File exists")


def test_marked_kind_and_write_marker(tmp_path):
    (tmp_path / "o").mkdir()
    assert fsio.marked_kind(tmp_path / "o") is None
    (tmp_path / "o" / "a").write_bytes(b"abc")
    assert fsio.write_marker(tmp_path / "o", "calibration", ("p*",)) == tmp_path / "o" / fsio.MARKER
    assert fsio.marked_kind(tmp_path / "o") == "calibration"
    assert fsio.read_marker(tmp_path / "o")[1] == {"a": ["f", 3, ABC_SHA], "p*": ["p"]}


def test_check_replaceable_says_why_not(tmp_path):
    fsio.check_replaceable(tmp_path / "absent", "trace")
    (tmp_path / "empty").mkdir()
    fsio.check_replaceable(tmp_path / "empty", "trace")
    refusing = "refusing to replace or write into it (move it away, or choose another folder)"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "b").write_text("")
    (mine / "a").write_text("")
    e = _refusal(fsio.check_replaceable, mine, "trace", "-o")
    assert (e.file, e.field) == (str(mine), "-o")
    assert e.problem == (
        f"holds 'a' and was not written by rackbook (no valid {fsio.MARKER} file): {refusing}"
    )
    fsio.write_marker(mine, "results")
    e = _refusal(fsio.check_replaceable, mine, "trace")
    assert e.problem == f"holds a rackbook results output, not trace: {refusing}"
    fsio.check_replaceable(mine, "results")
    (mine / "a").write_text("changed")
    e = _refusal(fsio.check_replaceable, mine, "results")
    assert e.problem == (
        f"'a' is not what rackbook wrote there (changed or replaced since): {refusing}"
    )
    (tmp_path / "file").write_text("")
    e = _refusal(fsio.check_replaceable, tmp_path / "file", "trace", "-o")
    assert _where(e) == (str(tmp_path / "file"), "-o", "exists and is a file, expected a folder")
    assert _refusal(fsio.check_replaceable, tmp_path / "file", "trace").field == "output"
    assert _refusal(fsio.check_replaceable, mine, "trace").field == "output"
    os.symlink(tmp_path / "empty", tmp_path / "link")
    e = _refusal(fsio.check_replaceable, tmp_path / "link", "trace", "-o")
    assert e.field == "-o" and e.problem.endswith("(name the folder it points to, or another)")


def test_check_replaceable_names_a_folder_it_cannot_list(tmp_path, monkeypatch):
    def listdir(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "listdir", listdir)
    e = _refusal(fsio.check_replaceable, tmp_path, "trace", "-o")
    assert _where(e) == (str(tmp_path), "-o", "cannot read the folder: Permission denied")


def test_remove_temporaries_beside_chosen_entries(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "a").write_text("")
    (root / "b").write_text("")
    fsio.write_marker(root, "results")
    (root / ".a.00000000.tmp").write_text("")
    (root / ".a.11111111.old").mkdir()
    (root / ".a.11111111.old" / "x").write_text("")
    (root / ".b.00000000.tmp").write_text("")
    (root / ".c.00000000.tmp").write_text("")  # beside nothing listed: not rackbook's to remove
    fsio.remove_temporaries(root, ["b"])  # the ones beside a, listed first, are passed over
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [fsio.MARKER, ".a.00000000.tmp", ".a.11111111.old", ".c.00000000.tmp", "a", "b"]
    )
    fsio.remove_temporaries(root)
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [fsio.MARKER, ".c.00000000.tmp", "a", "b"]
    )


def test_pending_covers_what_lies_under_a_pattern():
    assert fsio._pending("traces/x", ["traces/x"])
    assert fsio._pending("traces/x/r.parquet", ["traces/x"])  # under a pending folder
    assert fsio._pending("a b/c", ["a b"])
    assert fsio._pending("traces/x/r.parquet", ["traces/?"])
    assert not fsio._pending("traces", ["traces/x"])
    assert not fsio._pending("traces/y/r.parquet", ["traces/x"])
    assert not fsio._pending("a", [])


def test_remove_takes_files_links_and_folders(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("")
    os.symlink(tmp_path / "d", tmp_path / "ln")
    fsio._remove(tmp_path / "ln")
    assert (tmp_path / "d" / "x").exists() and not (tmp_path / "ln").is_symlink()
    fsio._remove(tmp_path / "d")
    fsio._remove(tmp_path / "absent")
    assert list(tmp_path.iterdir()) == []


def test_update_manifest_relists_and_marks_pending(tmp_path, monkeypatch):
    root = tmp_path / "r"
    root.mkdir()
    (root / "a").write_bytes(b"")
    fsio.write_marker(root, "results")
    fsio.update_manifest(root, pending=["x*"])
    assert fsio.read_marker(root) == ("results", {"a": ["f", 0, hashlib.sha256(b"").hexdigest()],
                                                  "x*": ["p"]})  # fmt: skip
    (root / "a").write_bytes(b"abc")
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "f").write_bytes(b"abc")
    fsio.update_manifest(root, record=["a", "d/e/f"])
    assert fsio.read_marker(root)[1] == {
        "a": ["f", 3, ABC_SHA],
        "d": ["d"],
        "d/e": ["d"],
        "d/e/f": ["f", 3, ABC_SHA],
        "x*": ["p"],
    }
    assert fsio.problem(root) is None
    (root / "d" / "e" / "f").unlink()
    fsio.update_manifest(root, record=["d"])  # gone entries under it are dropped
    assert fsio.read_marker(root)[1] == {"a": ["f", 3, ABC_SHA], "d": ["d"], "d/e": ["d"],
                                         "x*": ["p"]}  # fmt: skip
    (root / "a").unlink()
    (root / "ab").write_text("")
    real, locks = fsio.atomic_write_text, []

    def write(path, data, field="output"):  # what the manifest's writer holds as it writes
        locks.append(sorted(p.name for p in Path(path).parent.parent.glob("*.rackbook-lock")))
        return real(path, data, field)

    monkeypatch.setattr(fsio, "atomic_write_text", write)
    fsio.update_manifest(root, record=["a"])
    assert locks == [[".r.manifest.rackbook-lock"]]
    assert "a" not in fsio.read_marker(root)[1] and "ab" not in fsio.read_marker(root)[1]
    assert not fsio.lock_path(root, "manifest").exists()
    (tmp_path / "plain").mkdir()
    fsio.update_manifest(tmp_path / "plain", record=["a"])  # no marker: nothing written
    assert list((tmp_path / "plain").iterdir()) == []
    assert not fsio.lock_path(tmp_path / "plain", "manifest").exists()


def test_update_manifest_keeps_other_entries_starting_alike(tmp_path):
    root = tmp_path / "r"
    (root / "d").mkdir(parents=True)
    (root / "d" / "x").write_bytes(b"abc")
    (root / "dd").write_bytes(b"abc")
    fsio.write_marker(root, "results")
    fsio.update_manifest(root, record=["d"])
    assert fsio.read_marker(root)[1] == {"d": ["d"], "d/x": ["f", 3, ABC_SHA],
                                         "dd": ["f", 3, ABC_SHA]}  # fmt: skip


def test_refuse_overlap_nested_same_and_siblings(tmp_path):
    out = tmp_path / "out"
    fsio.refuse_overlap({"-o": out}, {"input": tmp_path / "out2" / "x.json"})  # a sibling
    fsio.refuse_overlap(
        {"-o": out, "--html": tmp_path / "outer"}, {"input": None, "x": tmp_path / "o"}
    )
    fsio.refuse_overlap({"-o": None}, {"input": out})
    e = _refusal(fsio.refuse_overlap, {"-o": out}, {"input": out / "x.json"})
    assert (e.file, e.field) == (str(out / "x.json"), "input")
    assert e.problem == f"lies inside -o {out}: keep the two apart (neither inside the other)"
    e = _refusal(fsio.refuse_overlap, {"-o": out / "sub"}, {"input": out})
    assert (e.file, e.field) == (str(out / "sub"), "-o")
    assert e.problem == f"lies inside input {out}: keep the two apart (neither inside the other)"
    e = _refusal(fsio.refuse_overlap, {"-o": out}, {"input": tmp_path / "." / "out"})
    assert e.problem == f"is -o {out}: keep the two apart (neither inside the other)"
    e = _refusal(fsio.refuse_overlap, {"-o": out, "--html": out / "h"}, {})
    assert (e.field, e.problem) == ("--html", f"lies inside -o {out}: keep the two apart "
                                    "(neither inside the other)")  # fmt: skip
    e = _refusal(
        fsio.refuse_overlap,
        {"a": tmp_path / "x", "b": tmp_path / "y", "c": tmp_path / "x" / "z"},
        {},
    )
    assert e.field == "c"


def test_refuse_overlap_sees_through_links(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "alias")
    e = _refusal(
        fsio.refuse_overlap, {"-o": tmp_path / "real"}, {"input": tmp_path / "alias" / "x"}
    )
    assert e.field == "input" and e.problem.startswith(f"lies inside -o {tmp_path / 'real'}")
    os.symlink(tmp_path, tmp_path / "real" / "up")  # the input's real path is above the output
    e = _refusal(
        fsio.refuse_overlap, {"-o": tmp_path / "real" / "o"}, {"in": tmp_path / "real" / "up"}
    )
    assert e.field == "-o" and e.problem.startswith("lies inside in ")
    assert fsio._is_inside(Path("/"), Path("/")) and fsio._is_inside(tmp_path, Path("/"))
    assert not fsio._is_inside(Path("/"), tmp_path)


def test_refuse_special_names_a_fifo_where_a_result_goes(tmp_path):
    fsio.refuse_special(tmp_path / "absent")
    (tmp_path / "a.json").write_text("")
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "absent", tmp_path / "dangling")
    os.mkfifo(tmp_path / "z.json")
    os.mkfifo(tmp_path / "y.json")
    fsio.refuse_special(tmp_path, "--out", ["a.json", "d", "dangling", "other.json"])
    e = _refusal(fsio.refuse_special, tmp_path, "--out")
    assert (e.file, e.field) == (str(tmp_path / "y.json"), "--out")
    assert e.problem == "is a FIFO, device or socket, where a result file goes: remove it"
    e = _refusal(fsio.refuse_special, tmp_path, names=["z.json"])
    assert (e.file, e.field) == (str(tmp_path / "z.json"), "output")


def test_signals_held_acts_on_each_signal_once_in_order():
    got: list[int] = []
    old = {
        s: signal.signal(s, lambda n, _f: got.append(n)) for s in (signal.SIGTERM, signal.SIGHUP)
    }
    old_quit = signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    try:
        with fsio.signals_held():
            signal.raise_signal(signal.SIGHUP)
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGHUP)
            signal.raise_signal(signal.SIGQUIT)  # ignored before: ignored after
            assert got == []
        assert got == [signal.SIGHUP, signal.SIGTERM]
        assert signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN  # each handler put back
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        signal.signal(signal.SIGQUIT, old_quit)


def test_signals_held_repeats_a_default_action_after_the_block(monkeypatch):
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append((pid, sig)))
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with fsio.signals_held():
            signal.raise_signal(signal.SIGHUP)
            assert killed == []
        assert killed == [(os.getpid(), signal.SIGHUP)]
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, old)


def test_signals_held_outside_the_main_thread_changes_nothing():
    seen = []

    def run():
        with fsio.signals_held():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [before]


def test_lock_path_beside_the_real_folder(tmp_path):
    assert fsio.lock_path(tmp_path / "t") == tmp_path / ".t.rackbook-lock"
    assert fsio.lock_path(tmp_path / "t", "manifest") == tmp_path / ".t.manifest.rackbook-lock"
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "alias")
    assert fsio.lock_path(tmp_path / "alias" / "t") == tmp_path / "real" / ".t.rackbook-lock"
    sha = hashlib.sha256(b"/").hexdigest()[:16]
    root = fsio.lock_path("/")
    assert root.parent == Path(fsio.tempfile.gettempdir())
    assert root.name == f".rackbook-{os.getuid()}-{sha}.rackbook-lock"


def test_output_lock_is_reentrant_and_leaves_no_litter(tmp_path):
    lock = tmp_path / "a" / "b" / ".t.rackbook-lock"
    with fsio.output_lock(tmp_path / "a" / "b" / "t"):
        assert lock.read_text() == str(os.getpid())
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600
        with fsio.output_lock(tmp_path / "a" / "b" / "t"):
            assert lock.exists()
        assert lock.exists()  # still held by the outer block
    assert list(tmp_path.iterdir()) == []  # the lock and the folders made for it are gone
    with fsio.output_lock(tmp_path / "a" / "t"):
        (tmp_path / "a" / "kept").write_text("")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["kept"]


def _hold(lock: Path, how: int, text: str = "") -> int:
    """``lock`` flocked through a descriptor of its own (to the kernel, another holder)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, how)
    os.write(fd, os.fsencode(text))
    return fd


@pytest.mark.parametrize(
    ("text", "said"),
    [("4321\nmore", "another rackbook (pid 4321)"), ("", "another rackbook"),
     ("me", "another rackbook"), ("\udcff12", "another rackbook")],
)  # fmt: skip
def test_a_held_lock_refuses_naming_the_holder(tmp_path, text, said):
    fd = _hold(tmp_path / "new" / ".t.rackbook-lock", fcntl.LOCK_EX, text)
    try:
        e = _refusal(fsio.atomic_dir(tmp_path / "new" / "t", field="-o").__enter__)
        assert (e.file, e.field) == (str(tmp_path / "new" / "t"), "-o")
        assert (
            e.problem
            == f"{said} is writing this folder now: wait for it to finish, or write elsewhere"
        )
        with (
            pytest.raises(InputError, match="another rackbook"),
            fsio.output_lock(tmp_path / "new" / "t", shared=True),
        ):
            pass
    finally:
        os.close(fd)
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == [".t.rackbook-lock"]


def test_a_refused_lock_removes_the_folders_it_made(tmp_path, monkeypatch):
    def acquire(lock, path, field, shared=False):
        assert lock.parent.is_dir()  # made for the lock file
        raise InputError(path, field, "refused")

    monkeypatch.setattr(fsio, "_acquire", acquire)
    with pytest.raises(InputError, match="refused"), fsio.output_lock(tmp_path / "a" / "b" / "t"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_linked_lock_file_is_never_followed(tmp_path):
    os.symlink(tmp_path / "elsewhere", tmp_path / ".t.rackbook-lock")
    with fsio.output_lock(tmp_path / "t"):
        fsio.make_temp_dir(tmp_path / "t")
    assert not (tmp_path / "elsewhere").exists()
    assert (tmp_path / ".t.rackbook-lock").is_symlink()


def test_a_lock_that_fails_otherwise_is_no_lock(tmp_path, monkeypatch):
    def flock(fd, how):
        raise OSError(fsio.errno.ENOLCK, "no locks")

    monkeypatch.setattr(fcntl, "flock", flock)
    ran = []
    with fsio.output_lock(tmp_path / "t"):
        ran.append(str(fsio.lock_path(tmp_path / "t")) in fsio._HELD)
        assert fsio.make_temp_dir(tmp_path / "t").is_dir()  # nothing to journal it in
    assert ran == [True]  # a file system without locks: written unlocked
    assert str(fsio.lock_path(tmp_path / "t")) not in fsio._HELD


def test_shared_holders_keep_the_lock_file_for_each_other(tmp_path):
    lock = tmp_path / ".t.rackbook-lock"
    fd = _hold(lock, fcntl.LOCK_SH, "")
    try:
        with fsio.output_lock(tmp_path / "t", shared=True):
            assert lock.read_text() == ""  # a shared holder writes nothing
        assert lock.exists()  # the other shared holder still has it
        e = _refusal(fsio.output_lock(tmp_path / "t").__enter__)
        assert e.problem.startswith("another rackbook is writing this folder now")
    finally:
        os.close(fd)
    with fsio.output_lock(tmp_path / "t", shared=True):
        pass
    assert not lock.exists()  # the last shared holder removes it


def test_the_next_writer_removes_what_the_journal_names(tmp_path):
    for name in (".t.abcd1234.tmp", ".t.abcd1234.old", ".u.abcd1234.tmp", ".t.abcd123.tmp"):
        (tmp_path / name).mkdir()
    (tmp_path / ".t.abcd1234.old" / "x").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".t.abcd1234.tmp").write_text("")
    journal = "".join(
        f"\ntmp {n}"
        for n in (".t.abcd1234.tmp", ".t.abcd1234.old", ".u.abcd1234.tmp", ".t.abcd123.tmp",
                  "sub/.t.abcd1234.tmp")
    )  # fmt: skip
    (tmp_path / ".t.rackbook-lock").write_text("999" + journal + "\nnot tmp .t.zzzzzzzz.tmp")
    (tmp_path / ".t.zzzzzzzz.tmp").mkdir()
    with fsio.output_lock(tmp_path / "t"):
        assert (tmp_path / ".t.rackbook-lock").read_text() == str(os.getpid())
        left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [".t.abcd123.tmp", ".t.rackbook-lock", ".t.zzzzzzzz.tmp", ".u.abcd1234.tmp",
                    "sub"]  # fmt: skip
    assert (tmp_path / "sub" / ".t.abcd1234.tmp").exists()


def test_a_parts_lock_cleans_its_folders_temporaries(tmp_path):
    (tmp_path / ".t.abcd1234.tmp").write_text("")
    (tmp_path / ".tt.abcd1234.tmp").write_text("")
    (tmp_path / ".t.x.rackbook-lock").write_text("\ntmp .t.abcd1234.tmp\ntmp .tt.abcd1234.tmp")
    with fsio.output_lock(tmp_path / "t", part="x"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tt.abcd1234.tmp"]


def test_the_journal_of_a_long_or_undecodable_name(tmp_path):
    """The lock's own name says whose temporaries it journals, however long the name; a
    name no codec writes is journaled and read back byte for byte."""
    long = "a-folder-named-at-length"
    (tmp_path / f".{long}.abcd1234.tmp").write_text("")
    (tmp_path / f".{long}.rackbook-lock").write_text(f"1\ntmp .{long}.abcd1234.tmp")
    with fsio.output_lock(tmp_path / long):
        pass
    odd = os.fsdecode(b"t\xff")
    (tmp_path / f".{odd}.abcd1234.tmp").write_text("")
    (tmp_path / f".{odd}.rackbook-lock").write_bytes(b"1\ntmp .t\xff.abcd1234.tmp")
    with fsio.output_lock(tmp_path / odd):
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_killed_writers_temporary_of_an_undecodable_name_is_removed(tmp_path):
    """The temporary's name and the lock's both keep the output's bytes, so the next writer
    of that output finds and removes what a killed one left."""
    odd = tmp_path / os.fsdecode(b"t\xff")
    with fsio.output_lock(odd):
        left = fsio.make_temp_dir(odd)
        journal = (tmp_path / f".{odd.name}.rackbook-lock").read_bytes()
    assert journal.endswith(b"\ntmp " + os.fsencode(left.name)) and left.is_dir()
    lock = tmp_path / f".{odd.name}.rackbook-lock"
    lock.write_bytes(b"999" + journal[journal.index(b"\n") :])  # as a killed holder left it
    with fsio.output_lock(odd):
        pass
    assert not left.exists()


def test_temporaries_are_journaled_under_an_exclusive_lock_only(tmp_path):
    lock = tmp_path / ".t.rackbook-lock"
    with fsio.output_lock(tmp_path / "t"):
        d = fsio.make_temp_dir(tmp_path / "t")
        fsio.atomic_write_text(tmp_path / "t", "x")
        lines = lock.read_text().split("\n")
    assert lines[0] == str(os.getpid()) and lines[1] == f"tmp {d.name}"
    assert len(lines) == 3 and fsio.TEMP_NAME.match(lines[2][4:])["base"] == "t"
    with fsio.output_lock(tmp_path / "u", shared=True):
        fsio.make_temp_dir(tmp_path / "u")
        assert (tmp_path / ".u.rackbook-lock").read_text() == ""
    fsio.make_temp_dir(tmp_path / "v")  # no lock held: nothing journaled, none made
    assert not (tmp_path / ".v.rackbook-lock").exists()


def test_atomic_dir_replaces_only_its_own_kind(tmp_path):
    t = tmp_path / "t"
    with fsio.atomic_dir(t, kind="trace") as d:
        (d / "a").write_bytes(b"abc")
        assert d.parent == tmp_path and d.name.startswith(".t.")
    assert fsio.read_marker(t) == ("trace", {"a": ["f", 3, ABC_SHA]})
    e = _refusal(fsio.atomic_dir(t, kind="results", field="-o").__enter__)
    assert (e.field, e.problem) == ("-o", "holds a rackbook trace output, not results: refusing "
                                    "to replace or write into it (move it away, or choose "
                                    "another folder)")  # fmt: skip
    e = _refusal(fsio.atomic_dir(t, kind="trace", overwrite=False, field="-o").__enter__)
    assert (e.file, e.field) == (str(t), "-o")
    assert e.problem == "a trace exists there: refusing to replace it"
    with fsio.atomic_dir(t, kind="trace") as d:
        (d / "b").write_bytes(b"")
    assert sorted(p.name for p in t.iterdir()) == [fsio.MARKER, "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]  # no .old, no lock left
    (tmp_path / "e").mkdir()
    with fsio.atomic_dir(tmp_path / "e", overwrite=False, kind="trace") as d:
        (d / "c").write_bytes(b"")
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == [fsio.MARKER, "c"]


def test_atomic_dir_checks_again_before_the_swap(tmp_path):
    t = tmp_path / "t"
    with fsio.atomic_dir(t, kind="trace") as d:
        (d / "a").write_text("1")
    with pytest.raises(InputError) as exc, fsio.atomic_dir(t, kind="trace") as d:
        (d / "a").write_text("2")
        (t / "mine").write_text("written meanwhile")
    assert exc.value.problem.startswith("holds 'mine', which rackbook did not write")
    assert (t / "a").read_text() == "1" and (t / "mine").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_a_failed_swap_puts_the_old_folder_back(tmp_path, monkeypatch):
    t = tmp_path / "t"
    with fsio.atomic_dir(t) as d:
        (d / "v").write_text("old")
    real = os.replace

    def replace(src, dst):
        if Path(dst) == t and Path(src).name.endswith(".tmp"):
            raise OSError(5, "I/O error")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="I/O error"), fsio.atomic_dir(t) as d:
        (d / "v").write_text("new")
    assert (t / "v").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_output_folder_made_marked_and_undone_on_error(tmp_path):
    out = tmp_path / "a" / "out"
    with pytest.raises(RuntimeError), fsio.output_folder(out, kind="results"):
        assert fsio.marked_kind(out) == "results"
        assert (tmp_path / "a" / ".out.rackbook-lock").exists()
        raise RuntimeError("nothing written")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), fsio.output_folder(out, kind="results") as p:
        assert p == out
        (out / "x.json").write_text("{}")
        raise RuntimeError("one file written")
    assert sorted(p.name for p in out.iterdir()) == [fsio.MARKER, "x.json"]  # kept as it is
    fsio.write_marker(out, "results")
    before = (out / fsio.MARKER).read_text()
    with pytest.raises(RuntimeError), fsio.output_folder(out, kind="results"):
        raise RuntimeError("the marker was there before")
    assert (out / fsio.MARKER).read_text() == before
    with fsio.output_folder(out, kind="results"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["out"]


def test_output_folder_refuses_by_field(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("")
    e = _refusal(fsio.output_folder(out, kind="results", field="--out").__enter__)
    assert (e.file, e.field) == (str(out), "--out")
    assert e.problem.startswith("holds 'notes.txt' and was not written by rackbook")
    (out / "notes.txt").unlink()
    fsio.write_marker(out, "results", pending=("*.json",))
    os.mkfifo(out / "r.json")
    e = _refusal(fsio.output_folder(out, kind="results", field="--out").__enter__)
    assert (e.file, e.field) == (str(out / "r.json"), "--out")
    assert e.problem == "is a FIFO, device or socket, where a result file goes: remove it"


def test_output_folder_parts_and_stale_temporaries(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.json").write_text("")
    (out / "b.json").write_text("")
    fsio.write_marker(out, "results")
    (out / ".a.json.abcd1234.tmp").write_text("")
    (out / ".b.json.abcd1234.tmp").write_text("")
    with fsio.output_folder(out, kind="results", parts=("p1", "p2"), owned=["a.json"]):
        assert (tmp_path / ".out.p1.rackbook-lock").exists()
        assert (tmp_path / ".out.p2.rackbook-lock").exists()
        assert (tmp_path / ".out.rackbook-lock").read_text() == ""  # the folder's: shared
        assert sorted(p.name for p in out.iterdir()) == [".b.json.abcd1234.tmp", fsio.MARKER,
                                                         "a.json", "b.json"]  # fmt: skip
    with fsio.output_folder(out, kind="results"):
        assert sorted(p.name for p in out.iterdir()) == [fsio.MARKER, "a.json", "b.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_output_folder_that_cannot_be_made(tmp_path, monkeypatch):
    real = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.name == "out":
            raise OSError(30, "Read-only file system")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    e = _refusal(fsio.output_folder(tmp_path / "out", kind="results", field="--out").__enter__)
    assert (e.file, e.field) == (str(tmp_path / "out"), "--out")
    assert e.problem == "cannot write here: Read-only file system"
