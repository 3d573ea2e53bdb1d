"""``rackbook run`` and ``list``: result notebooks executed with papermill into
``DIR/RESULT.ipynb`` and ``DIR/RESULT.json`` (default ``_build/executed``)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rackbook import paths
from rackbook.core import fsio
from rackbook.core.fsio import check_output_folder
from rackbook.errors import InputError, write_log
from rackbook.inputs.loader import display_path


def available_results() -> list[str]:
    """Results whose notebook exists, in the book's order."""
    return [r for r in paths.RESULTS if (paths.NOTEBOOKS / f"{r}.ipynb").exists()]


def notebook_path(result: str) -> Path:
    """The source notebook of a result; unknown names raise :class:`InputError`."""
    if result not in paths.RESULTS:
        raise InputError(
            "-", "result", f"unknown result {result!r}; known: {', '.join(paths.RESULTS)}, all"
        )
    return paths.NOTEBOOKS / f"{result}.ipynb"


def read_params_file(path: str | Path) -> dict[str, Any]:
    """A parameters file: a YAML mapping of notebook parameter names to values."""
    from rackbook.inputs.loader import read_yaml

    raw = read_yaml(path, yaml12=True)
    if not isinstance(raw, dict):
        why = f"must be a mapping of parameter names, got {type(raw).__name__}"
        raise InputError(path, "-", why)
    bad = [k for k in raw if not isinstance(k, str) or not k.isidentifier()]
    if bad:
        raise InputError(path, str(bad[0]), "not a parameter name")
    return raw


def check_parameters(
    nb: Path, params: dict[str, Any], defaults: dict[str, Any], source: str, result: str
) -> None:
    """Refuse, before any kernel starts, what :func:`rackbook.params.check_given` refuses; in
    trace mode also a ``trace``/``trace_b`` the result cannot read, a ``point_id`` not in it."""
    from rackbook import params as schema

    shown = display_path(nb)
    schema.check_given(result, params, shown, defaults, lookup=True)
    merged = defaults | params
    if source != "trace":
        return
    trace = merged.get("trace")
    if result == "eplb-balance" and isinstance(trace, str) and trace:
        check_expert_layout(paths.ROOT / trace, merged, shown)
    if isinstance(merged.get("point_id"), str):
        check_point_id(merged, shown)
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
    from rackbook.results.readable import check_trace

    check_trace(result, folder, field)
    if result == "single-user":
        from rackbook.results.single_user import check_one_stream

        check_one_stream(folder, merged.get("point_id"), field)


def check_point_id(params: dict[str, Any], where: str) -> None:
    """The ``point_id`` parameter names a point of the chapter's trace (its points table)."""
    from rackbook.core import traces

    trace = params.get("trace")
    folder = paths.resolve(trace) if isinstance(trace, str) and trace else None
    if folder is None or not (folder / "points.parquet").is_file():
        return  # the trace's own check names what is missing
    known = traces.read_table(folder, "points", ["point_id"])["point_id"].astype(str).tolist()
    if params["point_id"] not in known:
        shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
        why = f"{params['point_id']!r} is not a point of {display_path(folder)} (its points: "
        raise InputError(where, "parameter point_id", f"{why}{shown})")


def check_expert_layout(trace: Path, params: dict[str, Any], where: str) -> None:
    """eplb-balance's layer, windows and EP layout against its trace's experts."""
    from rackbook import params as schema
    from rackbook.physics import eplb

    top = schema.expert_extent(trace)
    if top is None:
        return
    schema.check_extent(top, params, where)
    layout = [params.get(k) for k in ("ep_size", "redundant", "groups", "nodes")]
    ints = [v for v in layout if isinstance(v, int)]
    if len(ints) == len(layout):
        try:
            eplb.check_layout(top["expert"] + 1, ints[0], ints[1], ints[2], ints[3])
        except InputError as exc:
            raise InputError(where, f"parameter {exc.field}", exc.problem) from None


def run_result(
    result: str,
    source: str = "trace",
    parameters: dict[str, Any] | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    force: bool = False,
) -> Path:
    """Execute one result's notebook (cached in trace mode unless ``force``); returns the
    path of its headline JSON."""
    return execute_result(result, source, parameters, out, progress, force)[0]


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A checked chapter: notebook, output folder, injected parameters, cache key (live: None)."""

    notebook: Path
    out_dir: Path
    params: dict[str, Any]
    key: str | None


def prepare_run(
    result: str,
    source: str = "trace",
    parameters: dict[str, Any] | None = None,
    out: str | Path | None = None,
) -> Prepared:
    """Check a chapter's parameters (one-line errors) and compute its cache key."""
    from rackbook import params as schema
    from rackbook.book import cache

    nb = notebook_path(result)
    out_dir = check_output_folder(paths.resolve(out) if out else paths.EXECUTED, "--out")
    fsio.refuse_special(out_dir, "--out", result_files())
    params = dict(parameters or {})
    defaults = schema.cell_defaults(result)
    check_parameters(nb, params, defaults, source, result)
    read = {f"-p {n}": params[n] for n in PATH_PARAMETERS if isinstance(params.get(n), str)}
    fsio.refuse_overlap({"--out": out_dir}, {k: v for k, v in read.items() if v})
    params |= {"source": source, "out_dir": str(out_dir)}
    key = cache.chapter_key(nb, defaults | params) if source == "trace" else None
    return Prepared(nb, out_dir, params, key)


def cached_headline(
    result: str,
    source: str = "trace",
    parameters: dict[str, Any] | None = None,
    out: str | Path | None = None,
) -> Path | None:
    """The headline JSON of ``result`` when the cache holds it for these inputs, else None."""
    from rackbook.book import cache

    prep = prepare_run(result, source, parameters, out)
    if prep.key is not None and cache.is_fresh(prep.out_dir, result, prep.key):
        return prep.out_dir / f"{result}.json"
    return None


def execute_result(
    result: str,
    source: str = "trace",
    parameters: dict[str, Any] | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    force: bool = False,
) -> tuple[Path, bool]:
    """:func:`run_result`, also saying whether the outputs came from the cache."""
    from papermill.exceptions import PapermillExecutionError

    from rackbook.book import cache
    from rackbook.book.execute import execute_notebook

    prep = prepare_run(result, source, parameters, out)
    nb, out_dir, params, key = prep.notebook, prep.out_dir, prep.params, prep.key
    if key is not None and not force and cache.is_fresh(out_dir, result, key):
        return out_dir / f"{result}.json", True
    created = [d for d in (out_dir, *out_dir.parents) if not d.exists()]
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"{result}.ipynb"
    headline = out_dir / f"{result}.json"
    # staged, then moved in as a pair; listed as pending so that a kill's leftovers go next run
    mine = (final.name, headline.name, cache.stamp_path(out_dir, result).name)
    fsio.update_manifest(out_dir, pending=mine)
    stage = fsio.make_temp_dir(final)

    def _leave_nothing() -> None:
        shutil.rmtree(stage, ignore_errors=True)
        fsio.update_manifest(out_dir, record=mine)
        for d in created:  # deepest first
            with contextlib.suppress(OSError):
                d.rmdir()

    cache.forget(out_dir, result)
    if source == "live":  # recordings go to out_dir/traces/RESULT
        fsio.update_manifest(out_dir, pending=[f"traces/{result}", f"traces/{result}.raw"])
    # The kernel must draw inline: MPLBACKEND=Agg would leave every chapter without figures.
    saved_backend = os.environ.pop("MPLBACKEND", None)
    try:
        shown = sys.stderr.isatty() if progress is None else progress
        execute_notebook(
            nb, stage / final.name, params, paths.NOTEBOOKS, shown, result, stage=stage
        )
    except PapermillExecutionError as exc:
        _leave_nothing()
        evalue = " ".join(str(exc.evalue).split())
        log = write_log(result, "\n".join(exc.traceback))
        why = f"{exc.ename}: {evalue} (the notebook's traceback: {log})"
        raise InputError(display_path(nb), f"cell {exc.exec_count}", why) from None
    except RuntimeError as exc:  # the runner itself failed (its log is named)
        _leave_nothing()
        raise InputError(display_path(nb), "-", str(exc)) from None
    except BaseException:
        _leave_nothing()
        raise
    finally:
        if saved_backend is not None:
            os.environ["MPLBACKEND"] = saved_backend
    try:
        if not (stage / headline.name).is_file():
            raise InputError(display_path(nb), "last cell", f"did not write {headline.name}")
        _move_in_pair(out_dir, stage, (final.name, headline.name))
    finally:
        _leave_nothing()
    if source == "live":
        fsio.update_manifest(out_dir, record=["traces"])
    if key is not None:
        cache.remember(out_dir, result, key)
    return headline, False


def _move_in_pair(out_dir: Path, stage: Path, names: tuple[str, ...]) -> None:
    """Move ``names`` from ``stage`` into ``out_dir``, the old headline (last name) removed
    first: a kill never leaves a new headline beside an old notebook."""
    with fsio.signals_held():
        fsio.update_manifest(out_dir, pending=names)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out_dir / names[-1])
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
    """``rackbook run RESULT|all``: ``-p`` over the params file; source from ``--source``,
    the file's ``source``, else ``trace``."""
    params = read_params_file(args.params_file) if getattr(args, "params_file", None) else {}
    source = args.source or params.pop("source", None) or "trace"
    params.pop("source", None)
    if source not in ("trace", "live"):
        raise InputError(args.params_file, "source", f"{source!r} is not one of trace, live")
    from rackbook.params import read_pairs

    params = cwd_paths(params | read_pairs(args.parameter))
    out = cli_path(args.out)
    names = available_results() if args.result == "all" else [args.result]
    for name in names:
        notebook_path(name)
    if args.result == "all" and params:
        raise InputError("-", "-p", "parameters apply to one result; run results one by one")
    from rackbook.book import pool
    from rackbook.book import report as numbers
    from rackbook.results.headline import read_result, summary_line

    force = bool(getattr(args, "force", False))
    before = previous_headlines(out or paths.EXECUTED, names)

    def report(d: pool.Done) -> None:
        if d.headline is None:
            print(f"{d.result}: failed [{d.seconds:.1f} s]", flush=True)
            return
        how = "cached, unchanged inputs" if d.cached else f"executed in {d.seconds:.1f} s"
        doc = read_result(d.headline)
        line = f"{d.result}: {summary_line(doc)} [{how}] -> {d.headline}"
        lines = numbers.block(doc, before.get(d.result), compare=True)
        print("\n".join([line, *lines]), flush=True)

    if len(names) == 1:
        prepare_run(names[0], source, params, out)  # every check before the first line
    with results_folder(out or paths.EXECUTED, "--out", names):
        if len(names) == 1:
            t0 = time.perf_counter()
            print(f"running {names[0]} ({source}) ...", flush=True)
            path, cached = execute_result(names[0], source, params, out, force=force)
            report(pool.Done(names[0], path, cached, time.perf_counter() - t0))
            return 0
        jobs = min(getattr(args, "jobs", None) or pool.cores(), len(names))
        print(f"running {len(names)} results ({source}), {jobs} at a time ...", flush=True)
        pool.run_chapters(
            names, source, params, out, execute_result, cached_headline, force, jobs, report
        )
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


def finite_json(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float (in dicts and lists) made None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


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
            {"result": n, "readings": d["readings"] if d else None, "claims": c}
            for n, d, c in listing
        ]
        doc = finite_json({"executed": str(out_dir), "results": results})
        print(json.dumps(doc, default=str, allow_nan=False))
        return 0
    for name, doc, claims in listing:
        print(f"{name}: {summary_line(doc) if doc else 'not run'}")
        for c in claims:
            print(f"  - {c['id']}: {c['statement']}")
        if doc:
            print("\n".join(numbers.block(doc, compare=False)))
    return 0
