"""``rackbook run`` and ``list``: each result's notebook executed by papermill in a child
process into ``DIR/RESULT.ipynb`` and ``DIR/RESULT.json`` (default ``_build/executed``), several
at a time, cached in trace mode (``DIR/.RESULT.key``).
One idea: a result's notebook run, from its cache key through the child process to the
headline; the pool and the cache serve only this path."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

import rackbook
from rackbook import STOP_SIGNALS, paths
from rackbook.core import fsio
from rackbook.errors import InputError, Terminated, log_stem, write_log

if TYPE_CHECKING:  # the child (python -m) never imports multiprocessing
    from concurrent.futures import ProcessPoolExecutor


def available_results() -> list[str]:
    """Results whose notebook exists, in the book's order."""
    return [r for r in paths.RESULTS if (paths.NOTEBOOKS / f"{r}.ipynb").exists()]


def notebook_path(result: str) -> Path:
    """The source notebook of a result; unknown names raise :class:`InputError`."""
    if result not in paths.RESULTS:
        why = f"unknown result {result!r}; known: {', '.join(paths.RESULTS)}, all"
        raise InputError("-", "result", why)
    return paths.NOTEBOOKS / f"{result}.ipynb"


def read_params_file(path: str | Path) -> dict[str, Any]:
    """A parameters file: a YAML mapping of notebook parameter names to values."""
    from rackbook.inputs.loader import read_yaml

    raw = read_yaml(path, yaml12=True)
    if not isinstance(raw, dict):
        why = f"must be a mapping of parameter names, got {type(raw).__name__}"
        raise InputError(path, "-", why)
    if bad := [k for k in raw if not isinstance(k, str) or not k.isidentifier()]:
        raise InputError(path, str(bad[0]), "not a parameter name")
    return raw


def check_parameters(
    nb: Path, params: dict[str, Any], defaults: dict[str, Any], source: str, result: str
) -> None:
    """Refuse, before any kernel starts, what :func:`rackbook.params.check_given` refuses; in
    trace mode also a ``trace``/``trace_b`` the result cannot read, a ``point_id`` not in it,
    eplb-balance's layer, windows and EP layout beyond its trace's experts."""
    from rackbook import params as schema
    from rackbook.inputs.loader import display_path

    shown = display_path(nb)
    schema.check_given(result, params, shown, defaults)
    merged = defaults | params
    if source != "trace":
        return
    trace = merged.get("trace")
    folder = paths.resolve(trace) if isinstance(trace, str) and trace else None
    top = schema.expert_extent(folder) if folder and result == "eplb-balance" else None
    if top is not None:
        _check_layout(top, merged, shown)
    if folder and isinstance(merged.get("point_id"), str) and (folder / "points.parquet").is_file():
        _check_point_id(folder, merged["point_id"], shown)
    for name, value in params.items():
        if name in ("trace", "trace_b") and not (name == "trace_b" and value is None):
            _check_trace(result, value, f"parameter {name}", shown, merged)


def _check_trace(result: str, value: Any, field: str, shown: str, merged: dict[str, Any]) -> None:
    if not isinstance(value, str) or not value or "\0" in value:
        raise InputError(shown, field, f"expected a path to a trace folder, got {value!r}")
    folder = paths.resolve(value)
    if not folder.exists():
        raise InputError(folder, field, "trace folder does not exist")
    if not folder.is_dir():
        why = "not a folder (a trace is a folder with run.json and tables)"
        raise InputError(folder, field, why)
    from rackbook.results.registry import check_trace

    check_trace(result, folder, field)
    if result == "single-user":
        from rackbook.results.single_user import check_one_stream

        check_one_stream(folder, merged.get("point_id"), field)


def _check_point_id(folder: Path, point_id: str, where: str) -> None:
    from rackbook.core import traces
    from rackbook.inputs.loader import display_path

    known = traces.read_table(folder, "points", ["point_id"])["point_id"].astype(str).tolist()
    if point_id not in known:
        shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
        why = f"{point_id!r} is not a point of {display_path(folder)} (its points: "
        raise InputError(where, "parameter point_id", f"{why}{shown})")


def _check_layout(top: dict[str, int], params: dict[str, Any], where: str) -> None:
    from rackbook import params as schema
    from rackbook.physics import eplb

    schema.check_extent(top, params, where)
    layout: list[Any] = [params.get(k) for k in ("ep_size", "redundant", "groups", "nodes")]
    if all(isinstance(v, int) for v in layout):
        try:
            eplb.check_layout(top["expert"] + 1, *layout)
        except InputError as exc:
            raise InputError(where, f"parameter {exc.field}", exc.problem) from None


def prepare_run(
    result: str,
    source: str = "trace",
    parameters: dict[str, Any] | None = None,
    out: str | Path | None = None,
) -> tuple[Path, Path, dict[str, Any], str | None]:
    """Check a chapter's parameters (one-line errors): notebook, output folder, injected
    parameters and cache key (live: None)."""
    from rackbook import params as schema

    nb = notebook_path(result)
    out_dir = fsio.check_output_folder(paths.resolve(out) if out else paths.EXECUTED, "--out")
    fsio.refuse_special(out_dir, "--out", result_files())
    params = dict(parameters or {})
    defaults = schema.cell_defaults(result)
    check_parameters(nb, params, defaults, source, result)
    read = {f"-p {n}": params[n] for n in PATH_PARAMETERS if isinstance(params.get(n), str)}
    fsio.refuse_overlap({"--out": out_dir}, {k: v for k, v in read.items() if v})
    params |= {"source": source, "out_dir": str(out_dir)}
    key = chapter_key(nb, defaults | params) if source == "trace" else None
    return nb, out_dir, params, key


def cached_headline(
    result: str, source: str, parameters: dict[str, Any], out: str | Path | None
) -> Path | None:
    """The headline JSON of ``result`` when the cache holds it for these inputs, else None."""
    _, out_dir, _, key = prepare_run(result, source, parameters, out)
    return out_dir / f"{result}.json" if key and is_fresh(out_dir, result, key) else None


def execute_result(
    result: str,
    source: str = "trace",
    parameters: dict[str, Any] | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    force: bool = False,
) -> tuple[Path, bool]:
    """Execute (or, unless ``force``, reuse) a result's notebook: (headline JSON, cached)."""
    from rackbook.inputs.loader import display_path

    nb, out_dir, params, key = prepare_run(result, source, parameters, out)
    if key is not None and not force and is_fresh(out_dir, result, key):
        return out_dir / f"{result}.json", True
    created = [d for d in (out_dir, *out_dir.parents) if not d.exists()]
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"{result}.ipynb"
    headline = out_dir / f"{result}.json"
    # staged, then moved in as a pair; listed as pending so that a kill's leftovers go next run
    mine = (final.name, headline.name, stamp_path(out_dir, result).name)
    fsio.update_manifest(out_dir, pending=mine)
    stage = fsio.make_temp_dir(final)
    stamp_path(out_dir, result).unlink(missing_ok=True)
    if source == "live":  # recordings go to out_dir/traces/RESULT
        fsio.update_manifest(out_dir, pending=[f"traces/{result}", f"traces/{result}.raw"])
    try:
        shown = sys.stderr.isatty() if progress is None else progress
        execute_notebook(
            nb, stage / final.name, params, paths.NOTEBOOKS, shown, result, stage=stage
        )
        if not (stage / headline.name).is_file():
            raise InputError(display_path(nb), "last cell", f"did not write {headline.name}")
        _move_in_pair(out_dir, stage, (final.name, headline.name))
    finally:  # nothing left but the pair moved in
        shutil.rmtree(stage, ignore_errors=True)
        fsio.update_manifest(out_dir, record=mine)
        for d in created:  # deepest first
            with contextlib.suppress(OSError):
                d.rmdir()
    if source == "live":
        fsio.update_manifest(out_dir, record=["traces"])
    if key is not None:  # the outputs made with this key
        doc = _stamp(out_dir, result, key)
        fsio.atomic_write_text(stamp_path(out_dir, result), json.dumps(doc, indent=1) + "\n")
        fsio.update_manifest(out_dir, record=[stamp_path(out_dir, result).name])
    return headline, False


def _move_in_pair(out_dir: Path, stage: Path, names: tuple[str, ...]) -> None:
    """Move ``names`` from ``stage`` into ``out_dir``, the old headline (last name) removed
    first: a kill never leaves a new headline beside an old notebook."""
    with fsio.signals_held():
        fsio.update_manifest(out_dir, pending=names)
        (out_dir / names[-1]).unlink(missing_ok=True)
        for name in names:
            os.replace(stage / name, out_dir / name)
        fsio.update_manifest(out_dir, record=names)


#: Notebook parameters naming files or folders: relative ones resolve against the working
#: directory.
PATH_PARAMETERS = ("trace", "trace_b", "server_log", "expert_load")


def cwd_paths(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with :data:`PATH_PARAMETERS` made absolute against the working directory."""
    rel = {n: v for n, v in params.items() if n in PATH_PARAMETERS and isinstance(v, str) and v}
    return params | {n: str(Path.cwd() / v) for n, v in rel.items() if not Path(v).is_absolute()}


def cli_path(value: str | Path | None) -> Path | None:
    """A path given on the command line, absolute against the working directory."""
    return None if value is None else Path(value).absolute()


def cli_run(args: argparse.Namespace) -> int:
    """``rackbook run RESULT|all``: source from ``--source``, the params file, else trace."""
    params = read_params_file(args.params_file) if getattr(args, "params_file", None) else {}
    source = args.source or params.pop("source", None) or "trace"
    params.pop("source", None)
    if source not in ("trace", "live"):
        raise InputError(args.params_file, "source", f"{source!r} is not one of trace, live")
    from rackbook.book import report as numbers
    from rackbook.params import read_pairs
    from rackbook.results.headline import read_result, summary_line

    params = cwd_paths(params | read_pairs(args.parameter))
    out = cli_path(args.out)
    names = available_results() if args.result == "all" else [notebook_path(args.result).stem]
    if args.result == "all" and params:
        raise InputError("-", "-p", "parameters apply to one result; run results one by one")
    force = bool(getattr(args, "force", False))
    before = previous_headlines(out or paths.EXECUTED, names)

    def report(d: Done) -> None:
        if d.headline is None:
            print(f"{d.result}: failed [{d.seconds:.1f} s]", flush=True)
            return
        how = "cached, unchanged inputs" if d.cached else f"executed in {d.seconds:.1f} s"
        doc = read_result(d.headline)
        line = f"{d.result}: {summary_line(doc)} [{how}] -> {d.headline}"
        print(line, *numbers.block(doc, before.get(d.result), compare=True), sep="\n", flush=True)

    jobs = min(getattr(args, "jobs", None) or cores(), len(names))
    what = f"{len(names)} results ({source}), {jobs} at a time"
    if len(names) == 1:
        prepare_run(names[0], source, params, out)  # every check before the first line
        what = f"{names[0]} ({source})"
    with results_folder(out or paths.EXECUTED, "--out", names):
        print(f"running {what} ...", flush=True)
        run_chapters(names, source, params, out, force, jobs, report)
    return 0


def previous_headlines(out_dir: Path, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """result -> its readable headline JSON in ``out_dir`` before a run (to compare with)."""
    from rackbook.results.headline import read_result

    found = {}
    for f in (Path(out_dir) / f"{name}.json" for name in names):
        if f.is_file():
            with contextlib.suppress(InputError, OSError):
                found[f.stem] = read_result(f)
    return found


def result_files(results: Sequence[str] = paths.RESULTS) -> set[str]:
    """Each of ``results``' notebook, headline JSON and cache stamp file name."""
    return {name for r in results for name in (f"{r}.ipynb", f"{r}.json", f".{r}.key")}


def results_folder(
    path: str | Path, field: str = "--out", names: Sequence[str] = ()
) -> contextlib.AbstractContextManager[Path]:
    """``path`` claimed for writing executed results, one lock per result of ``names``."""
    owned = result_files(names) | {f"traces/{r}" for r in names}
    return fsio.output_folder(
        path, kind="results", field=field, parts=tuple(names), owned=owned if names else None
    )


def cli_list(args: argparse.Namespace) -> int:
    """``rackbook list``: each result, its claims and the latest readings of each."""
    from rackbook.book import report as numbers
    from rackbook.inputs.claims import load_claims
    from rackbook.results.headline import read_result, summary_line

    reg = load_claims()
    out_dir = cli_path(args.out) or paths.EXECUTED
    fsio.refuse_special(out_dir, "--out", result_files())
    listing = []
    for name in paths.RESULTS:
        f = out_dir / f"{name}.json"
        doc = read_result(f) if f.exists() else None
        claims = [{"id": c.id, "statement": c.statement} for c in reg.for_result(name)]
        listing.append((name, doc, claims))
    if getattr(args, "json", False):
        results = [
            {"result": n, "readings": d and d["readings"], "claims": c} for n, d, c in listing
        ]
        doc = {"executed": str(out_dir), "results": results}
        print(orjson.dumps(doc, default=str).decode())  # NaN and infinities as null
        return 0
    for name, doc, claims in listing:
        print(f"{name}: {summary_line(doc) if doc else 'not run'}")
        for c in claims:
            print(f"  - {c['id']}: {c['statement']}")
        if doc:
            print("\n".join(numbers.block(doc, compare=False)))
    return 0


# The cache of executed notebooks (trace mode only): a SHA-256 of the notebook, its
# parameters, the files they name, the shared data, the env lock, the source and Python, and
# the hashes of RESULT.ipynb and RESULT.json; all three must match.

#: Format of the key; bump it when what the key covers changes.
KEY_VERSION = 1
#: The package whose source is part of every key (tests point it elsewhere).
PACKAGE_SOURCE: Path = Path(rackbook.__file__).resolve().parent
#: Parameters that name where outputs go, never hashed by content.
OUTPUT_PARAMETERS = frozenset({"out_dir"})


def hash_tree(h: Any, root: Path, label: str) -> None:
    """Feed ``root``'s relative paths and file bytes into ``h`` (missing hashes as missing)."""
    h.update(f"\0tree\0{label}\0".encode())
    if not root.exists():
        h.update(b"\0missing\0")
        return
    for f in [root, *sorted(root.rglob("*"))]:
        rel = f.relative_to(root).as_posix()
        if "__pycache__" in rel.split("/"):
            continue
        if not f.is_file():
            h.update(f"\0dir\0{rel}\0".encode())
            continue
        data = f.read_bytes()
        h.update(f"\0file\0{rel}\0{len(data)}\0".encode())
        h.update(data)


def _input_paths(params: Mapping[str, Any]) -> list[tuple[str, Path]]:
    found = []
    for name, value in sorted(params.items()):
        if name not in OUTPUT_PARAMETERS and isinstance(value, str) and value:
            with contextlib.suppress(OSError, ValueError):
                if (p := paths.resolve(value)).exists():
                    found.append((name, p))
    return found


def chapter_key(notebook: Path, params: Mapping[str, Any]) -> str:
    """Hex SHA-256 of ``notebook`` executed with ``params`` (defaults included)."""
    h = hashlib.sha256()
    h.update(f"rackbook-cache-{KEY_VERSION}\0{sys.version}\0".encode())
    h.update(b"\0notebook\0" + notebook.read_bytes())
    h.update(b"\0params\0" + json.dumps(params, sort_keys=True, default=str).encode())
    for name, p in _input_paths(params):
        hash_tree(h, p, f"param:{name}")
    data, root = paths.DATA, paths.ROOT  # the shared data, the words chapters glue, the env
    shared = [data / "claims.yaml", data / "hardware.yaml", data / "models", data / "published"]
    for p in [*shared, root / "book" / "_template", root / "env" / "requirements-book.lock"]:
        hash_tree(h, p, f"shared:{p.name}")
    hash_tree(h, PACKAGE_SOURCE, "package")
    return h.hexdigest()


def stamp_path(out_dir: Path, result: str) -> Path:
    """Where the key of ``result``'s outputs in ``out_dir`` is kept."""
    return out_dir / f".{result}.key"


def _stamp(out_dir: Path, result: str, key: str) -> dict[str, Any]:
    """The key, and the size and SHA-256 of ``result``'s notebook and headline (as JSON reads)."""
    found = {x: fsio.digest(out_dir / f"{result}.{x}") for x in ("ipynb", "json")}
    return json.loads(json.dumps({"key": key} | found))


def is_fresh(out_dir: Path, result: str, key: str) -> bool:
    """True when ``out_dir`` holds ``result``'s outputs made with ``key``, unchanged since."""
    try:
        doc = json.loads(stamp_path(out_dir, result).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return doc == _stamp(out_dir, result, key) and doc["ipynb"] is not None


#: Seconds the child gets to stop its kernel after SIGTERM before both are killed.
STOP_GRACE_S = 1.0

#: The environment variable naming the file a kernel writes an uncaught InputError's fields to.
ERROR_ENV = "RACKBOOK_KERNEL_ERROR"


def report_input_errors() -> None:
    """In the kernel: write a cell's uncaught InputError as JSON to :data:`ERROR_ENV`'s file."""
    from IPython import get_ipython

    def handler(shell: Any, etype: type, value: InputError, tb: Any, tb_offset: Any = None) -> Any:
        fields = {"file": value.file, "field": value.field, "problem": value.problem}
        Path(os.environ[ERROR_ENV]).write_text(json.dumps(fields), encoding="utf-8")
        return shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)

    get_ipython().set_custom_exc((InputError,), handler)


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` (None off Linux): the child gets ``sig`` when this process dies."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, int(sig), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call: nothing would signal
            os._exit(128 + int(sig))

    return preexec


def execute_notebook(
    nb: Path,
    output: Path,
    parameters: dict[str, Any],
    cwd: Path,
    progress: bool,
    log_name: str,
    stage: Path | None = None,
) -> None:
    """Execute ``nb`` into ``output`` in a child process (headline JSON to ``stage``); a
    failed cell or child raises InputError naming the cell and the log."""
    from rackbook.inputs.loader import display_path
    from rackbook.results.headline import STAGE_ENV

    stem = log_stem(log_name)
    log, spec, result, kernel_error = (
        Path(f"{stem}.{s}") for s in ("log", "spec.json", "result.json", "error.json")
    )
    term = os.dup(2) if progress else None  # the progress bar's way to the terminal
    files = {"nb": nb, "output": output, "cwd": cwd, "result": result}
    job = {k: str(v) for k, v in files.items()} | {"parameters": parameters, "progress_fd": term}
    # the kernel must draw inline: MPLBACKEND=Agg would leave chapters without figures
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env |= {ERROR_ENV: str(kernel_error)} | ({STAGE_ENV: str(stage)} if stage else {})
    spec.write_text(json.dumps(job), encoding="utf-8")
    try:
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rackbook.book.runner", str(spec)],
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=subprocess.STDOUT,
                pass_fds=(term,) if term is not None else (),
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),  # it stops its kernel, then exits
            )
            try:
                code = proc.wait()
            except BaseException:
                stop_child(proc)
                log.unlink()
                raise
        if result.is_file() or code == 0:
            log.unlink()  # nothing to read in it: a failed cell is raised with its traceback
        if result.is_file() and kernel_error.is_file():
            raise InputError(**json.loads(kernel_error.read_text(encoding="utf-8")))
        if result.is_file():
            failed = json.loads(result.read_text(encoding="utf-8"))
            evalue = " ".join(str(failed["evalue"]).split())
            kept = write_log(log_name, "\n".join(failed["traceback"]))
            why = f"{failed['ename']}: {evalue} (the notebook's traceback: {kept})"
            raise InputError(display_path(nb), f"cell {failed['exec_count']}", why)
        if code != 0:
            why = f"notebook execution failed (exit code {code}); log: {log}"
            raise InputError(display_path(nb), "-", why)
    finally:
        if term is not None:
            os.close(term)
        for f in (spec, result, kernel_error):
            f.unlink(missing_ok=True)


def stop_child(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM the child (it stops its kernel); if it lingers, SIGKILL its group and kernel."""
    proc.terminate()  # nothing if it has ended
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_children(proc.pid)  # its kernel runs in a session of its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _kill_children(pid: int) -> None:
    """SIGKILL the processes ``pid`` started (a chapter's kernel)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children():
            with contextlib.suppress(psutil.Error):
                child.kill()


_REPORT = "from rackbook.book.runner import report_input_errors; report_input_errors()"


def _child_main(spec_path: str) -> int:
    """The child: execute the spec's notebook; a fatal signal kills the kernel."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))

    def _on_signal(signum: int, _frame: object) -> None:
        _kill_children(os.getpid())
        os._exit(128 + signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, _on_signal)
    import papermill
    from papermill.exceptions import PapermillExecutionError

    fd = spec["progress_fd"]  # the terminal, for the progress bar
    progress: bool | dict[str, Any] = fd is not None and {"file": os.fdopen(fd, "w")}
    kernel = {"kernel_name": "python3", "extra_arguments": [f"--IPKernelApp.exec_lines={_REPORT}"]}
    try:
        nb, out, cwd = spec["nb"], spec["output"], spec["cwd"]
        papermill.execute_notebook(
            nb, out, spec["parameters"], progress_bar=progress, cwd=cwd, log_output=False, **kernel
        )
    except PapermillExecutionError as exc:
        failed = {k: getattr(exc, k) for k in ("exec_count", "ename", "evalue", "traceback")}
        Path(spec["result"]).write_text(json.dumps(failed), encoding="utf-8")
        return 1
    return 0


#: Seconds the workers get to stop their chapters after a signal, before they are killed.
WORKER_GRACE_S = 1.5
#: A worker's state: ``idle`` (a signal ends it), ``busy`` (unwinds) or ``stopping``.
_state: list[str] = ["idle"]


@dataclasses.dataclass(frozen=True)
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


def _worker_init() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, _worker_signal)


def _one(
    result: str,
    source: str,
    params: dict[str, Any],
    out: str | Path | None,
    force: bool,
    progress: bool | None = False,
) -> Done:
    t0 = time.perf_counter()
    _state[0] = "busy"
    try:
        headline, cached = execute_result(result, source, params, out, progress, force)
    except InputError as err:
        fields = (err.file, err.field, err.problem)
        return Done(result, None, False, time.perf_counter() - t0, fields)
    except Terminated as exc:
        if _state[0] == "stopping":  # a worker told to stop: its parent reports it
            os._exit(128 + exc.signum)
        raise
    finally:
        _state[0] = "idle"
    return Done(result, headline, cached, time.perf_counter() - t0)


def _stop_workers(ex: ProcessPoolExecutor) -> None:
    procs = list((getattr(ex, "_processes", None) or {}).values())  # no public way to them
    for p in procs:
        p.terminate()  # SIGTERM: each stops its chapter
    deadline = time.monotonic() + WORKER_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def run_chapters(
    names: Sequence[str],
    source: str,
    params: dict[str, Any],
    out: str | Path | None,
    force: bool = False,
    jobs: int | None = None,
    report: Callable[[Done], None] | None = None,
) -> list[Done]:
    """Execute ``names``, ``jobs`` at a time, reported in order; raises the first failure."""
    jobs = min(jobs or cores(), len(names))
    ready: dict[str, Done] = {}
    for name in names if jobs > 1 and not force else ():  # the cache served in the parent
        t0 = time.perf_counter()
        try:
            hit = cached_headline(name, source, params, out)
        except InputError as err:
            ready[name] = Done(name, None, False, 0.0, (err.file, err.field, err.problem))
            continue
        if hit is not None:
            ready[name] = Done(name, hit, True, time.perf_counter() - t0)
    todo = [n for n in names if n not in ready]
    jobs = max(1, min(jobs, len(todo)))
    done: list[Done] = []

    def emit(d: Done) -> None:
        done.append(d)
        if report:
            report(d)

    if jobs == 1:  # in this process: one chapter's progress bar may show
        shown = None if len(names) == 1 else False
        for name in names:
            emit(ready[name] if name in ready else _one(name, source, params, out, force, shown))
    else:
        from concurrent.futures import ProcessPoolExecutor

        ex = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init)
        try:
            futures = {name: ex.submit(_one, name, source, params, out, force) for name in todo}
            for name in names:
                emit(ready[name] if name in ready else futures[name].result())
        except BaseException:
            # nothing starts or is reported after a signal; running chapters are stopped
            _stop_workers(ex)
            ex.shutdown(wait=False)
            raise
        ex.shutdown(wait=True)
    if failed := [d.error for d in done if d.error]:
        raise InputError(*failed[0])
    return done


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1]))
