"""Outputs never delete what rackbook did not write (issue 29).

Every verb that writes a folder (``import``, ``run``, ``book --out``/``--html``, ``recipes``)
is run as a subprocess of the installed ``rackbook`` in a fresh working folder, as in
tests/test_hostile.py: a folder holding the user's files is refused with one ``error:`` line
(exit 2) and left byte for byte as it was; a folder rackbook marked (``.rackbook-output``) is
replaced; outputs naming one another, or an input inside the output, are refused before any
work; ``--force`` touches only the target; a second writer of the same folder is refused while
the first holds its lock; a FIFO where a result file goes is refused at once, never waited on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hostile import cli as hostile_cli

from rackbook import paths
from rackbook.core import fsio

RACKBOOK = str(Path(sys.executable).with_name("rackbook"))
FIXTURE = Path(__file__).parent / "fixtures" / "vllm-bench-serve-b32.json"


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``folder``, hidden ones too."""
    out: dict[str, bytes | None] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out[rel] = b"<special>"
        else:
            out[rel] = p.read_bytes() if p.is_file() else None
    return out


def cli(work: Path, *argv: str) -> tuple[int, str, str, float]:
    """``rackbook ARGV`` in ``work`` under test_hostile's limits (1 GiB; a hang fails the
    test): (exit code, stdout, stderr, seconds)."""
    return hostile_cli(work, list(argv))


def refused(result: tuple[int, str, str, float], *names: str) -> None:
    """Exit 2, one ``error:`` line naming each of ``names``, no traceback."""
    code, _, err, _ = result
    assert code == 2, err[-2000:]
    assert err.startswith("error: ") and err.count("\n") == 1, err[-2000:]
    for name in names:
        assert name in err, (name, err)


def thesis(folder: Path) -> Path:
    """A folder of the user's: chapters and a trace of their own (run.json included)."""
    folder.mkdir(parents=True)
    (folder / "chapter1.tex").write_text("\\chapter{Rack-scale serving}\n")
    (folder / "run.json").write_text('{"mine": true}\n')
    (folder / "figures").mkdir()
    (folder / "figures" / "fig1.pdf").write_bytes(b"%PDF-1.4 user figure")
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "work"
    w.mkdir()
    shutil.copy(FIXTURE, w / "in.json")
    return w


# --------------------------------------------------------------------------------------------
# import


def test_import_force_never_replaces_a_folder_of_the_users(work: Path) -> None:
    """A folder with run.json and the user's own files is not a trace rackbook wrote."""
    before = tree(thesis(work / "t"))
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force"), "t", "chapter1")
    assert tree(work / "t") == before


def test_import_marks_its_trace_and_force_replaces_a_marked_one(work: Path) -> None:
    code, _, err, _ = cli(work, "import", "vllm-bench", "in.json", "-o", "t")
    assert code == 0, err
    assert fsio.marked_kind(work / "t") == "trace"
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "t"), "--force")
    first = (work / "t" / "run.json").read_bytes()
    code, _, err, _ = cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force")
    assert code == 0, err
    assert (work / "t" / "run.json").read_bytes() != first  # a new trace id: replaced
    assert fsio.marked_kind(work / "t") == "trace"
    assert sorted(p.name for p in work.iterdir()) == ["in.json", "t"]  # no sibling left


def test_import_force_refuses_a_folder_without_a_manifest(work: Path) -> None:
    """No folder is recognised by what it holds any more: a trace's files without the marker,
    a lone run.json, or a marker without a manifest are all refused (issue 38: `import --force`
    replaced a user folder holding only run.json)."""
    shutil.copytree(paths.TRACES / "single-user", work / "t")
    (work / "t" / fsio.MARKER).unlink()
    (work / "lone").mkdir()
    (work / "lone" / "run.json").write_text('{"mine": true}\n')
    shutil.copytree(paths.TRACES / "single-user", work / "old")
    (work / "old" / fsio.MARKER).write_text(
        "rackbook output: trace\nWritten by rackbook import or rackbook record.\n"
    )
    before = tree(work)
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force"), "no valid .")
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "lone", "--force"), "run.json")
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "old", "--force"), "no valid .")
    assert tree(work) == before


@pytest.mark.parametrize(
    "change",
    ["my-measurements.parquet", "NOTES.md", "sub/NOTES.md", "edited", "link"],
)
def test_import_force_refuses_a_trace_holding_a_file_rackbook_did_not_write(
    work: Path, change: str
) -> None:
    """A marked trace whose folder gained a file of the user's (a Parquet table beside its
    own, notes) or whose own file was changed or replaced by a link is not replaced: only
    what the manifest lists, as written, is rackbook's."""
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    if change == "edited":
        with open(work / "t" / "run.json", "a", encoding="utf-8") as fh:
            fh.write(" ")
    elif change == "link":
        (work / "t" / "run.json").unlink()
        (work / "t" / "run.json").symlink_to(work / "in.json")
    else:
        (work / "t" / change).parent.mkdir(exist_ok=True)
        (work / "t" / change).write_text("the user's\n")
    before = tree(work)
    name = {"edited": "run.json", "link": "run.json"}.get(change, change.split("/")[0])
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force"), name)
    assert tree(work) == before


def test_a_copied_marker_does_not_authorise_replacing_a_folder(work: Path) -> None:
    """The marker of a rackbook folder copied into one of the user's: its manifest does not
    list the user's files, so the folder is refused (was: `book --html` replaced it whole)."""
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    thesis(work / "mine")
    shutil.copy(work / "t" / fsio.MARKER, work / "mine" / fsio.MARKER)
    before = tree(work)
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "mine", "--force"), "chapter1")
    assert tree(work) == before


def test_an_output_that_is_a_symbolic_link_is_refused(work: Path) -> None:
    """`-o LINK` never replaces the user's link with a folder, nor writes through it."""
    (work / "real").mkdir()
    (work / "link").symlink_to("real")
    before = tree(work)
    refused(cli(work, "import", "vllm-bench", "in.json", "-o", "link"), "symbolic link")
    refused(cli(work, "recipes", "-o", "link"), "symbolic link")
    refused(cli(work, "run", "single-user", "--out", "link"), "symbolic link")
    assert tree(work) == before and (work / "link").is_symlink()


def test_a_writer_with_another_tmpdir_is_still_refused(work: Path, tmp_path: Path) -> None:
    """The lock lives beside the output, not in $TMPDIR: two writers whose temporary folders
    differ conflict (was: both succeeded)."""
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    before = tree(work)
    (tmp_path / "other-tmp").mkdir()
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp_path / "other-tmp")
    try:
        with _held_elsewhere("fsio.output_lock(sys.argv[1])", work / "t") as holder:
            result = cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force")
            refused(result, "another rackbook", f"pid {holder.pid}")
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old
    lock = fsio.lock_path(work / "t")
    assert lock.parent == work
    # the killed holder's lock file stays (the kernel released its lock); the next writer
    # takes it, and removes it when done
    assert {k: v for k, v in tree(work).items() if k != lock.name} == before
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force")[0] == 0
    assert not lock.exists()


def test_a_killed_writers_temporaries_are_removed_by_the_next(work: Path) -> None:
    """A writer killed with SIGKILL while its temporary sibling exists (`.t.XXXXXXXX.tmp`,
    noted in the lock file first) leaves it; the next import of the same folder removes it,
    and a user's file named like one is left alone."""
    code = (
        "import os, sys, time; from pathlib import Path; from rackbook.core import fsio\n"
        "with fsio.output_lock(sys.argv[1]):\n"
        "    t = fsio.make_temp_dir(Path(sys.argv[1]))\n"
        "    (t / 'big.parquet').write_bytes(b'x' * 1000)\n"
        "    print(t, flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(work / "t")], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    left = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    assert left.is_dir() and fsio.lock_path(work / "t").exists()
    (work / ".t.0123abcd.tmp").write_text("the user's, named like a temporary\n")
    code_, _, err, _ = cli(work, "import", "vllm-bench", "in.json", "-o", "t")
    assert code_ == 0, err
    assert not left.exists()
    assert sorted(p.name for p in work.iterdir()) == [".t.0123abcd.tmp", "in.json", "t"]


def test_import_force_leaves_a_sibling_named_like_the_old_folder_alone(work: Path) -> None:
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    (work / ".t.old").mkdir()
    (work / ".t.old" / "keep.txt").write_text("the user's")
    code, _, err, _ = cli(work, "import", "vllm-bench", "in.json", "-o", "t", "--force")
    assert code == 0, err
    assert (work / ".t.old" / "keep.txt").read_text() == "the user's"
    assert sorted(p.name for p in work.iterdir()) == [".t.old", "in.json", "t"]


def test_import_refuses_an_input_inside_the_output_it_would_replace(work: Path) -> None:
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    shutil.copy(FIXTURE, work / "t" / "mine.json")
    before = tree(work)
    refused(cli(work, "import", "vllm-bench", "t/mine.json", "-o", "t", "--force"), "inside")
    assert tree(work) == before


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_second_writer_of_the_same_folder_is_refused(work: Path, force: bool) -> None:
    """While one writer holds the folder's lock (here: this test), `import -o t` is refused
    in one line and the folder is left as the first writer has it."""
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    before = tree(work)
    with fsio.output_lock(work / "t"):
        argv = ["import", "vllm-bench", "in.json", "-o", "t"] + (["--force"] if force else [])
        refused(cli(work, *argv), "another rackbook", f"pid {os.getpid()}")
        # a new folder too: the lock is per folder, not per existing trace
        with fsio.output_lock(work / "new"):
            refused(cli(work, "import", "vllm-bench", "in.json", "-o", "new"), "another")
    assert tree(work) == before
    assert not fsio.lock_path(work / "t").exists()  # released and removed: no lock litter


def test_two_imports_at_once_one_refused_neither_silently_replaced(work: Path) -> None:
    """Started together without --force: one writes the trace, the other exits 2 (locked, or
    the trace exists), never both 0."""
    big = work / "in.json"
    procs = [
        subprocess.Popen(
            [RACKBOOK, "import", "vllm-bench", str(big), "-o", "t"],
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    codes = sorted(p.wait(timeout=600) for p in procs)
    errs = [p.stderr.read() for p in procs if p.stderr]
    assert codes == [0, 2], errs
    assert fsio.marked_kind(work / "t") == "trace"


# --------------------------------------------------------------------------------------------
# run, list, book


def test_run_refuses_to_write_into_a_folder_of_the_users(work: Path) -> None:
    before = tree(thesis(work / "o"))
    refused(cli(work, "run", "single-user", "--out", "o"), "o", "not written by rackbook")
    assert tree(work / "o") == before
    # a new folder claimed (made and marked) and the run failing: nothing left of it
    refused(cli(work, "run", "single-user", "--out", "new", "-p", "trace", "nope"), "nope")
    assert sorted(p.name for p in work.iterdir()) == ["in.json", "o"]


def test_results_folder_marks_new_and_refuses_older_results_folders(tmp_path: Path) -> None:
    from rackbook.book.runner import results_folder

    with results_folder(tmp_path / "new") as folder:
        (folder / "single-user.json").write_text("{}")
        fsio.update_manifest(folder, record=["single-user.json"])
    assert fsio.marked_kind(tmp_path / "new") == "results"
    with results_folder(tmp_path / "new"):  # its files are on its manifest
        pass
    older = tmp_path / "older"  # what rackbook run wrote before the marker: not recognised
    older.mkdir()
    for name in ("single-user.json", "single-user.ipynb", ".single-user.key"):
        (older / name).write_text("{}")
    with pytest.raises(fsio.InputError, match="not written by rackbook"):
        with results_folder(older):
            pass
    with pytest.raises(fsio.InputError, match="holds a rackbook trace output"):
        with results_folder(paths.TRACES / "single-user"):
            pass


def test_run_never_overwrites_the_users_own_headline(work: Path) -> None:
    """`run --out bench` where bench/ holds the user's own single-user.json (no marker)."""
    (work / "bench").mkdir()
    (work / "bench" / "single-user.json").write_text('{"mine": 1}\n')
    before = tree(work)
    refused(cli(work, "run", "single-user", "--out", "bench"), "single-user.json")
    assert tree(work) == before


def test_run_refuses_an_output_inside_its_input_trace(work: Path) -> None:
    """`run --out t/o -p trace t` would write inside the trace it reads."""
    shutil.copytree(paths.TRACES / "single-user", work / "t")
    before = tree(work)
    refused(cli(work, "run", "single-user", "--out", "t/o", "-p", "trace", "t"), "inside")
    refused(cli(work, "run", "single-user", "--out", "t", "-p", "trace", "t"), "trace")
    assert tree(work) == before


def test_book_traces_refuses_an_out_folder_holding_a_users_headline(work: Path) -> None:
    """`book --traces mine --out o` where o holds only the user's decode-parity.json."""
    shutil.copytree(paths.TRACES / "single-user", work / "mine" / "single-user")
    (work / "o").mkdir()
    (work / "o" / "decode-parity.json").write_text('{"mine": 1}\n')
    before = tree(work)
    argv = ["book", "--traces", "mine", "--out", "o", "--html", "h"]
    refused(cli(work, *argv), "decode-parity.json")
    assert tree(work) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["list", "--out", "ex"],
        ["book", "--out", "ex", "--html", "html"],
        ["run", "single-user", "--out", "ex"],
    ],
    ids=["list", "book", "run"],
)
def test_a_fifo_where_a_result_file_goes_is_refused_at_once(work: Path, argv: list[str]) -> None:
    (work / "ex").mkdir()
    os.mkfifo(work / "ex" / "single-user.json")
    before = tree(work)
    result = cli(work, *argv)
    refused(result, "single-user.json", "FIFO")
    assert tree(work) == before


def test_book_html_refuses_a_folder_of_the_users_before_any_work(work: Path) -> None:
    before = tree(thesis(work / "html"))
    refused(cli(work, "book", "--out", "nothing-run", "--html", "html"), "--html", "chapter1")
    assert tree(work / "html") == before


def test_book_html_refuses_a_rackbook_folder_of_another_kind(work: Path) -> None:
    assert cli(work, "import", "vllm-bench", "in.json", "-o", "t")[0] == 0
    before = tree(work)
    refused(cli(work, "book", "--out", "nothing-run", "--html", "t"), "trace output, not html")
    assert tree(work) == before


def test_book_html_goes_past_the_check_for_a_marked_book(work: Path) -> None:
    """A marked HTML folder is replaceable: the build starts (and stops at the first real
    problem, here no executed results), the folder left whole."""
    (work / "html").mkdir()
    (work / "html" / "index.html").write_text("<html>old book</html>")
    fsio.write_marker(work / "html", "html")
    before = tree(work)
    refused(cli(work, "book", "--out", "empty", "--html", "html"), "not executed yet")
    assert tree(work) == before


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--traces", "mine", "--out", "mine", "--html", "html"], ["--traces", "--out"]),
        (["--traces", "mine", "--out", "o", "--html", "mine/html"], ["--html", "--traces"]),
        (["--traces", "mine", "--out", "o", "--html", "o"], ["--out", "--html"]),
        (["--traces", "mine", "--out", "o", "--html", "o/html"], ["--html", "--out"]),
        (["--traces", "mine", "--out", "o", "--reuse", "o/x", "--html", "h"], ["--reuse"]),
        (["--out", "o", "--html", "o"], ["--out", "--html"]),
        (["--html", "_build"], ["--html", "_build"]),
    ],
    ids=["out=traces", "html-in-traces", "html=out", "html-in-out", "reuse-in-out", "no-traces",
         "html-holds-default-out"],
)  # fmt: skip
def test_book_outputs_naming_one_another_are_refused_before_any_work(
    work: Path, argv: list[str], names: list[str]
) -> None:
    shutil.copytree(paths.TRACES / "single-user", work / "mine" / "single-user")
    (work / "o").mkdir()
    (work / "o" / "x").mkdir()
    before = tree(work)
    result = cli(work, "book", *argv)
    refused(result, *names)
    assert tree(work) == before


# --------------------------------------------------------------------------------------------
# recipes, and the shipped folders


def test_recipes_are_marked_and_a_marked_folder_replaced(work: Path) -> None:
    code, _, err, _ = cli(work, "recipes", "-o", "g")
    assert code == 0, err
    assert fsio.marked_kind(work / "g") == "recipes"
    code, _, err, _ = cli(work, "recipes", "-o", "g")
    assert code == 0, err
    (work / "g" / "params" / "mine.yaml").write_text("endpoint: x\n")
    fsio.write_marker(work / "g", "trace")  # a marker of another kind is not enough
    before = tree(work)
    refused(cli(work, "recipes", "-o", "g"), "g")
    assert tree(work) == before
    # the topology read from inside the folder it would replace
    shutil.rmtree(work / "g")
    assert cli(work, "recipes", "-o", "g")[0] == 0
    shutil.copy(paths.ROOT / "env" / "cluster" / "topology.yaml", work / "g" / "topology.yaml")
    before = tree(work)
    refused(cli(work, "recipes", "--topology", "g/topology.yaml", "-o", "g"), "inside")
    assert tree(work) == before


@pytest.mark.parametrize("name", ["slurm.sbatch", "kubernetes.yaml", "README.md"])
def test_recipes_never_overwrite_hand_written_files(work: Path, name: str) -> None:
    """A folder holding only a hand-written recipe (no marker) is refused; so is rackbook's
    recipes folder once a file in it is edited by hand or a README is added."""
    (work / "mine").mkdir()
    (work / "mine" / name).write_text("# written by hand\n")
    before = tree(work)
    refused(cli(work, "recipes", "-o", "mine"), "mine", name)
    assert tree(work) == before
    assert cli(work, "recipes", "-o", "g")[0] == 0
    if (work / "g" / name).exists():
        with open(work / "g" / name, "a", encoding="utf-8") as fh:
            fh.write("# my edit\n")
    else:
        (work / "g" / name).write_text("# my notes\n")
    before = tree(work)
    refused(cli(work, "recipes", "-o", "g"), name)
    assert tree(work) == before


def test_shipped_output_folders_carry_the_marker() -> None:
    """The traces and recipes in git are rackbook's own: replaceable by their writers."""
    shipped = [p for p in paths.TRACES.iterdir() if (p / "run.json").is_file()]
    shipped += [p for p in (paths.DATA / "published").iterdir() if (p / "run.json").is_file()]
    assert len(shipped) >= 8  # 6 chapter traces, 2 published (no InferenceX: a UI fixture)
    for folder in shipped:
        assert fsio.marked_kind(folder) == "trace", folder
    assert fsio.marked_kind(paths.ROOT / "env" / "cluster" / "generated") == "recipes"
    raws = [p for p in paths.TRACES.glob("*.raw") if (p / "record.json").is_file()]
    assert raws and all(fsio.marked_kind(p) == "raw" for p in raws)
    calibration = paths.DATA / "calibration" / "h200-reference"
    # each matches its manifest (after editing one in git: python -c 'from rackbook.core import
    # fsio; fsio.write_marker(DIR, fsio.marked_kind(DIR))' lists what it holds now)
    for folder in [*shipped, *raws, calibration, paths.ROOT / "env" / "cluster" / "generated"]:
        assert fsio.problem(folder) is None, folder


# --------------------------------------------------------------------------------------------
# the pieces (fsio)


def test_atomic_dir_refuses_an_unmarked_folder_and_replaces_a_marked_one(tmp_path: Path) -> None:
    target = thesis(tmp_path / "t")
    before = tree(tmp_path)
    with pytest.raises(fsio.InputError, match="not written by rackbook"):
        with fsio.atomic_dir(target, kind="calibration"):
            raise AssertionError("the block must not run")
    assert tree(tmp_path) == before
    shutil.rmtree(target)
    with fsio.atomic_dir(target, kind="calibration") as d:
        (d / "a").write_text("1")
    with fsio.atomic_dir(target, kind="calibration") as d:
        (d / "a").write_text("2")
    assert (target / "a").read_text() == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]
    with pytest.raises(fsio.InputError, match="calibration output, not html"):
        with fsio.atomic_dir(target, kind="html"):
            pass


@contextlib.contextmanager
def _held_elsewhere(block: str, folder: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process inside ``with <block>:`` (``block`` names the folder ``sys.argv[1]``)
    for the duration of this block; killed after."""
    code = (
        "import sys, time; from rackbook.core import fsio\n"
        f"with {block}:\n"
        "    print('held', flush=True); time.sleep(30)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_atomic_dir_takes_the_lock_another_process_holds(tmp_path: Path) -> None:
    with _held_elsewhere("fsio.output_lock(sys.argv[1])", tmp_path / "t") as holder:
        with pytest.raises(fsio.InputError, match=f"another rackbook \\(pid {holder.pid}\\)"):
            with fsio.atomic_dir(tmp_path / "t"):
                raise AssertionError("the block must not run")
    with fsio.atomic_dir(tmp_path / "t") as d:  # free again once the holder is gone
        (d / "a").write_text("1")
    assert list(tmp_path.iterdir()) == [tmp_path / "t"]


def test_record_refuses_a_folder_of_the_users_before_any_server(tmp_path, run_cli, monkeypatch):
    """``rackbook record -o DIR`` checks DIR before a server starts (the recorder run in this
    process, as where vLLM is installed; nothing is started: the refusal comes first)."""
    import importlib.util

    import rackbook.live.record as rec

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "vllm" else real(n, *a)
    )
    monkeypatch.setattr(rec, "vllm_environ", lambda: {})
    monkeypatch.setattr(rec, "api_key", lambda: None)
    started = []
    monkeypatch.setattr(rec.Recorder, "run", lambda self: started.append(self))
    before = tree(thesis(tmp_path / "mine"))
    code, _, err = run_cli("record", "single-user", "-o", str(tmp_path / "mine"))
    assert code == 2 and err.count("\n") == 1, err
    assert "not written by rackbook" in err and "chapter1.tex" in err
    assert started == [] and tree(tmp_path / "mine") == before
    # the raw artifacts' folder beside the trace (TRACE.raw) is an output of record's too
    before = tree(thesis(tmp_path / "new.raw"))
    code, _, err = run_cli("record", "single-user", "-o", str(tmp_path / "new"))
    assert code == 2 and "new.raw" in err and "not written by rackbook" in err, err
    assert started == [] and tree(tmp_path / "new.raw") == before
    assert not (tmp_path / "new").exists()


def test_an_output_name_that_is_not_utf8_is_written(work: Path) -> None:
    """The temporary sibling gets a name libraries can write under (was an internal error)."""
    name = os.fsdecode(b"t\xff")
    proc = subprocess.run(
        [RACKBOOK, "import", "vllm-bench", "in.json", "-o", name],
        cwd=work, capture_output=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert fsio.marked_kind(work / name) == "trace"
    assert sorted(os.listdir(work)) == ["in.json", name]


def test_runs_of_different_results_share_a_results_folder(tmp_path: Path) -> None:
    """`rackbook run A --out R` and `rackbook run B --out R` at once both write (the live suite
    runs chapters two at a time into one folder: CI found the whole-folder lock refused the
    second); two runs of the same result do not."""
    block = "fsio.output_folder(sys.argv[1], kind='results', parts=('decode-parity',))"
    with _held_elsewhere(block, tmp_path / "r") as holder:
        with fsio.output_folder(tmp_path / "r", kind="results", parts=("single-user",)) as d:
            (d / "single-user.json").write_text("{}")
        with pytest.raises(fsio.InputError, match=f"another rackbook \\(pid {holder.pid}\\)"):
            with fsio.output_folder(tmp_path / "r", kind="results", parts=("decode-parity",)):
                raise AssertionError("the block must not run")
        with pytest.raises(fsio.InputError, match="another rackbook"):  # `run all`: every part
            with fsio.output_folder(tmp_path / "r", kind="results", parts=paths.RESULTS):
                raise AssertionError("the block must not run")
        # a writer of the whole folder (`book --out`) waits for no part writer: refused while
        # one writes (the part writers hold the folder's lock shared throughout; CI found the
        # second of two runs refused when it checked the folder while the first marked it)
        with pytest.raises(fsio.InputError, match="another rackbook"):
            with fsio.atomic_dir(tmp_path / "r", kind="results"):
                raise AssertionError("the block must not run")
        with pytest.raises(fsio.InputError, match="another rackbook"):
            with fsio.output_folder(tmp_path / "r", kind="results"):
                raise AssertionError("the block must not run")
    assert (tmp_path / "r" / "single-user.json").is_file()


def _dead(pid: int) -> bool:
    """True when ``pid`` is gone or a zombie (reparented and not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_child_dies_with_its_parent_killed_outright(tmp_path: Path) -> None:
    """The execute child and jupyter-book are started with :func:`die_with_parent`: a parent
    killed with SIGKILL takes them along (was: `run`'s child wrote single-user.json after)."""
    code = (
        "import signal, subprocess, sys, time\n"
        "from rackbook.book.runner import die_with_parent\n"
        "p = subprocess.Popen(['sleep', '600'], start_new_session=True,\n"
        "                     preexec_fn=die_with_parent(signal.SIGKILL))\n"
        "print(p.pid, flush=True); time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert not _dead(child)
    parent.kill()
    parent.wait()
    # the kernel signals the child as the parent exits: poll for it (no time limit: a child
    # that survives fails the test at the hang guard of the whole run)
    while not _dead(child):
        os.sched_yield()


def test_a_pair_interrupted_on_its_way_in_leaves_no_headline(tmp_path: Path, monkeypatch) -> None:
    """The executed notebook and its headline move in as a pair: interrupted between the two
    renames, the folder holds no headline (the result reads as not run), never a new
    headline beside the old notebook, and the folder still matches its manifest."""
    from rackbook.book import runner

    with runner.results_folder(tmp_path / "r", names=["single-user"]) as out:
        for name, text in (("single-user.ipynb", "old nb"), ("single-user.json", "old")):
            (out / name).write_text(text)
        fsio.update_manifest(out, record=["single-user.ipynb", "single-user.json"])
        stage = fsio.make_temp_dir(out / "single-user.ipynb")
        (stage / "single-user.ipynb").write_text("new nb")
        (stage / "single-user.json").write_text("new")
        real = os.replace

        def replace(src, dst):
            if Path(dst).name == "single-user.json":
                raise KeyboardInterrupt
            return real(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        with pytest.raises(KeyboardInterrupt):
            runner._move_in_pair(out, stage, ("single-user.ipynb", "single-user.json"))
        monkeypatch.undo()
        shutil.rmtree(stage)
    assert not (tmp_path / "r" / "single-user.json").exists()
    assert fsio.problem(tmp_path / "r") is None
    with runner.results_folder(tmp_path / "r", names=["single-user"]):
        pass  # still rackbook's: the next run may write it


def test_a_runs_staging_folder_left_by_a_kill_is_removed_by_the_next(tmp_path: Path) -> None:
    """A run killed outright leaves its staging folder (`.RESULT.ipynb.XXXXXXXX.tmp`) in the
    results folder; the manifest lists the result's names as being written, so the folder
    stays rackbook's and the next run of that result removes the leftover."""
    from rackbook.book import runner

    with runner.results_folder(tmp_path / "r", names=["single-user"]) as out:
        fsio.update_manifest(out, pending=["single-user.ipynb", "single-user.json"])
        left = fsio.make_temp_dir(out / "single-user.ipynb")
        (left / "single-user.ipynb").write_text("half")
    assert left.is_dir() and fsio.problem(tmp_path / "r") is None
    with runner.results_folder(tmp_path / "r", names=["decode-parity"]):
        assert left.is_dir()  # another result's run leaves it: it may be running
    with runner.results_folder(tmp_path / "r", names=["single-user"]):
        assert not left.exists()


def test_a_planted_link_in_a_results_folder_is_never_written_through(work: Path) -> None:
    """Issue 38: `run` wrote the executed notebook through a link planted at
    `.single-user.tmp.ipynb` (thesis.tex overwritten). The link is not on the folder's
    manifest: the folder is refused, the file behind the link untouched."""
    from rackbook.book import runner

    with runner.results_folder(work / "o", names=["single-user"]):
        pass
    (work / "thesis.tex").write_text("\\chapter{mine}\n")
    (work / "o" / ".single-user.tmp.ipynb").symlink_to(work / "thesis.tex")
    before = tree(work)
    refused(cli(work, "run", "single-user", "--out", "o"), ".single-user.tmp.ipynb")
    assert tree(work) == before
    assert (work / "thesis.tex").read_text() == "\\chapter{mine}\n"
