"""``rackbook book``: sources and executed notebooks staged under ``_build/site`` (only changed
files rewritten), Jupyter Book run on them unless the staged tree is unchanged; optionally every
result first run on a user's traces."""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from rackbook import limits, paths
from rackbook.book.runner import (
    available_results,
    cli_path,
    die_with_parent,
    execute_result,
    hash_tree,
    result_files,
    stop_child,
)
from rackbook.core import fsio
from rackbook.core.provenance import REPO, repo_relative
from rackbook.errors import InputError, write_log
from rackbook.inputs.loader import display_path

_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-f]+)?>$")


def _empty_display(output: dict[str, Any]) -> bool:
    if output.get("output_type") not in ("display_data", "execute_result"):
        return False
    data = output.get("data", {})
    text = {k: ("".join(v) if isinstance(v, list) else str(v)).strip() for k, v in data.items()}
    plain = text.pop("text/plain", "")
    return not any(text.values()) and (not plain or bool(_REPR.match(plain)))


def _glued_text(nb: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            name = (o.get("metadata", {}).get("scrapbook") or {}).get("name")
            text = o.get("data", {}).get("application/papermill.record/text/plain")
            if name and isinstance(text, str):
                out[name] = text.strip("'\"")
    return out


_FIGURE = re.compile(r"(```\{glue:figure\}[^\n]*\n)((?::[a-z]+:[^\n]*\n)*)(.*?)```", re.S)


def _plain_caption(caption: str, glued: dict[str, str]) -> str:
    def role(m: re.Match[str]) -> str:
        kind, body = m.group(1), m.group(2)
        if kind.startswith("glue"):
            return glued.get(body.split(":")[0], "")
        return re.sub(r"<[^>]*>", "", body).strip() if kind != "numref" else "the figure"

    text = re.sub(r"\{([a-z:]+)\}`([^`]*)`", role, caption)
    text = re.sub(r"[*`_]|\\(?=\$)", "", " ".join(text.split()))
    sentences = re.split(r"(?<=[.!?])\s+", text)
    return " ".join(sentences[:2]).replace('"', "'")


def add_alt_text(source: str, glued: dict[str, str]) -> str:
    """Give every ``{glue:figure}`` without ``:alt:`` one from its caption."""

    def fix(m: re.Match[str]) -> str:
        head, opts, caption = m.group(1), m.group(2), m.group(3)
        if ":alt:" in opts:
            return m.group(0)
        alt = _plain_caption(caption, glued)
        return f"{head}{opts}:alt: {alt}\n{caption}```" if alt else m.group(0)

    return _FIGURE.sub(fix, source)


#: What the collapsed parameter cells say instead of myst-nb's "Show code cell source".
PARAMETER_PROMPTS = {
    "injected-parameters": "Show the parameters this build passed",
    "parameters": "Show the chapter's parameters (the defaults a rerun can change)",
}
#: The heading of a chapter's provenance section, where the parameter cells are shown.
PROVENANCE_HEADING = "## Where the numbers come from"


def params_after_provenance(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells, the parameter cells moved after the one following :data:`PROVENANCE_HEADING`."""

    def is_param(c: dict[str, Any]) -> bool:
        return bool(PARAMETER_PROMPTS.keys() & set(c.get("metadata", {}).get("tags", [])))

    params = [c for c in cells if is_param(c)]
    rest = [c for c in cells if not is_param(c)]
    for i, c in enumerate(rest):
        text = "".join(c.get("source", []))
        if params and c.get("cell_type") == "markdown" and text.startswith(PROVENANCE_HEADING):
            return rest[: i + 2] + params + rest[i + 2 :]
    return cells


def _stage_notebook(src: Path, dst: Path) -> None:
    """Copy an executed notebook for the book (displays, alt text, parameter cells)."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    glued = _glued_text(nb)
    for cell in nb.get("cells", []):
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if not _empty_display(o)]
        if cell.get("cell_type") == "markdown" and "{glue:figure}" in "".join(cell["source"]):
            cell["source"] = add_alt_text("".join(cell["source"]), glued).splitlines(True)
        tags = cell.get("metadata", {}).get("tags", [])
        kind = next((t for t in PARAMETER_PROMPTS if t in tags), None)  # injected first
        if kind is not None:
            cell["metadata"].setdefault("mystnb", {})["code_prompt_show"] = PARAMETER_PROMPTS[kind]
        if kind == "injected-parameters":
            cell["metadata"]["tags"] = [*tags, "hide-input"]
            cell["source"] = [
                repo_relative(line).replace(REPO + "/", "") for line in cell.get("source", [])
            ]
    nb["cells"] = params_after_provenance(nb.get("cells", []))
    dst.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def stage_book(
    executed: Path, site: Path, reference: Path | None = None, mine: Collection[str] | None = None
) -> Path:
    """Copy the book's sources and executed notebooks into ``site`` and generate pages."""
    from rackbook.book import pages

    present = available_results()
    if missing := [r for r in present if not (executed / f"{r}.ipynb").exists()]:
        why = "not executed yet: run `rackbook run all` first"
        raise InputError(executed, missing[0] + ".ipynb", why)
    staging = site.with_name(site.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)  # a killed build's
    staging.mkdir(parents=True)
    try:
        for name in ("_config.yml", "_toc.yml"):
            shutil.copy2(paths.ROOT / name, staging / name)
        shutil.copytree(paths.ROOT / "book", staging / "book")
        (staging / "notebooks").mkdir()
        for r in present:
            _stage_notebook(executed / f"{r}.ipynb", staging / "notebooks" / f"{r}.ipynb")
        pages.generate(staging / "book" / "generated", executed, reference, mine)
        sync_tree(staging, site)  # only changed files rewritten: Sphinx rebuilds only those
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return site


def _jupyter_book(site: Path, build_parent: Path, strict: bool, force: bool, log: Path) -> None:
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(site)]
    cmd += ["--path-output", str(build_parent), "--keep-going"]
    cmd += ["-W", "-n"] * strict + ["--all"] * force
    proc = subprocess.Popen(
        cmd,
        cwd=paths.ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent(signal.SIGKILL),
    )
    try:
        out, err = proc.communicate()
    except BaseException:
        stop_child(proc)  # jupyter-book and its Sphinx workers
        raise
    text = re.sub(r"\x1b\[[0-9;]*m", "", out + err)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text, encoding="utf-8")
    if proc.returncode != 0:
        problems = [ln for ln in text.splitlines() if "WARNING" in ln or "ERROR" in ln]
        tail = problems[:1] or [ln for ln in text.splitlines() if ln.strip()][-1:]
        why = f"build failed: {tail[0] if tail else proc.returncode}"
        raise InputError(display_path(log), "jupyter-book", why)


def build_book(
    out: str | Path | None = None,
    strict: bool = False,
    force: bool = False,
    html: str | Path | None = None,
    reference: Path | None = None,
    mine: Collection[str] | None = None,
) -> Path:
    """Stage and build the HTML book (skipped when nothing staged changed, unless ``force``);
    returns ``index.html``'s path; ``html``: built aside, then swapped in whole."""
    executed = paths.resolve(out) if out else paths.EXECUTED
    fsio.refuse_special(executed, "--out", result_files())
    if html is not None:
        target = fsio.check_output_folder(Path(html), "--html")
        with fsio.atomic_dir(target, kind="html", field="--html") as tmp:
            work = tmp / ".work"
            site = stage_book(executed, work / "_build" / "site", reference, mine)
            log = work / "book-build.log"
            try:
                _jupyter_book(site, work, strict, force, log)
            except InputError as exc:
                kept = write_log("book-build", log.read_text(encoding="utf-8"))
                raise InputError(kept, exc.field, exc.problem) from None
            for item in (work / "_build" / "html").iterdir():
                os.replace(item, tmp / item.name)
            shutil.rmtree(work)
        return target / "index.html"
    if paths.BUILD.name != "_build":
        raise InputError(paths.BUILD, "RACKBOOK_BUILD", "must name a folder called _build")
    site = stage_book(executed, paths.BUILD / "site", reference, mine)
    index = paths.BUILD / "html" / "index.html"
    stamp = paths.BUILD / ".book-built"
    lock = paths.ROOT / "env" / "requirements-book.lock"
    env = lock.read_text(encoding="utf-8") if lock.is_file() else ""
    digest = tree_digest(site, f"strict={strict}\0{sys.executable}\0{env}")
    with contextlib.suppress(OSError):
        if not force and index.is_file() and stamp.read_text(encoding="utf-8").strip() == digest:
            return index
    stamp.unlink(missing_ok=True)
    _jupyter_book(site, paths.BUILD.parent, strict, force, paths.BUILD / "book-build.log")
    fsio.atomic_write_text(stamp, digest + "\n")
    return index


def check_user_traces(base: Path) -> list[str]:
    """The results with a trace ``base/RESULT``, each checked whole before anything runs."""
    from rackbook.core import traces
    from rackbook.results.registry import check_trace

    if not base.is_dir():
        raise InputError(base, "--traces", "not a folder of traces (one folder per result)")
    if not (mine := [r for r in available_results() if (base / r).is_dir()]):
        why = f"holds no trace folder named after a result ({', '.join(paths.RESULTS)})"
        raise InputError(base, "--traces", why)
    for r in mine:
        check_trace(r, base / r, "--traces")
        traces.read_trace(base / r, itl=False)
        traces.table_rows(base / r, "itl")
    return mine


def run_on_traces(
    traces_dir: str | Path, out: Path, shipped: Path | None = None, force: bool = False
) -> list[str]:
    """Execute every result on ``traces_dir/RESULT`` or the shipped trace into ``out``."""
    from rackbook.results.headline import read_result

    base = Path(traces_dir)
    mine = check_user_traces(base)
    copied = {}
    for r in available_results():
        done = [shipped / f"{r}.{ext}" for ext in ("ipynb", "json")] if shipped else []
        if r not in mine and done and all(f.is_file() for f in done):
            limits.input_file(done[1], "--reuse", what="headline JSON")
            read_result(done[1])
            copied[r] = done
    with fsio.atomic_dir(out, kind="results", field="--out") as tmp:
        for r in available_results():
            if r in copied:
                for f in copied[r]:
                    shutil.copy2(f, tmp / f.name)
                print(f"{r}: executed on the shipped trace already ({shipped})", flush=True)
                continue
            params = {"trace": str(base / r)} if r in mine else {}
            print(f"running {r} on {'your' if r in mine else 'the shipped'} trace ...", flush=True)
            execute_result(r, "trace", params, tmp, force=force)
    return mine


def _relative_files(root: Path) -> set[str]:
    return {(Path(d) / f).relative_to(root).as_posix() for d, _, fs in os.walk(root) for f in fs}


def sync_tree(src: Path, dst: Path) -> list[str]:
    """Make ``dst`` hold exactly ``src``'s files; returns the paths changed, sorted."""
    dst.mkdir(parents=True, exist_ok=True)
    new, old, changed = _relative_files(src), _relative_files(dst), []
    for rel in sorted(new):
        s, d = src / rel, dst / rel
        if d.is_file() and filecmp.cmp(s, d, shallow=False):
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        fsio.atomic_write_bytes(d, s.read_bytes())
        changed.append(rel)
    for rel in sorted(old - new):
        (dst / rel).unlink()
        changed.append(rel)
    for folder, _dirs, _files in sorted(os.walk(dst), key=lambda t: -len(t[0])):
        p = Path(folder)
        if p != dst and not any(p.iterdir()):
            p.rmdir()
    return sorted(changed)


def tree_digest(root: Path, extra: str = "") -> str:
    """SHA-256 (hex) of ``root``'s names and bytes, and ``extra``."""
    h = hashlib.sha256(extra.encode())
    hash_tree(h, root, "tree")
    return h.hexdigest()


def cli_book(args: argparse.Namespace) -> int:
    """``rackbook book``: HTML from executed notebooks (``--traces``: the user's first)."""
    force = bool(getattr(args, "force", False))
    out = cli_path(args.out)
    html = cli_path(getattr(args, "html", None))
    if html is not None:
        fsio.check_output_folder(html, "--html")
    if getattr(args, "reuse", None) and not args.traces:
        raise InputError(args.reuse, "--reuse", "only with --traces")
    traces_dir = cli_path(args.traces) if args.traces else None
    reuse = cli_path(getattr(args, "reuse", None)) if traces_dir else None
    results = out or (paths.BUILD / "yours" if traces_dir else paths.EXECUTED)
    written = {"--html": html, "--out": results if traces_dir else None}
    read = {"--traces": traces_dir, "--reuse": reuse, "--out": None if traces_dir else results}
    fsio.refuse_overlap(written, read)
    mine: list[str] = []
    built = {"RACKBOOK_BUILD": None if html else paths.BUILD / "html"}  # --html: built aside
    with contextlib.ExitStack() as held:  # each output's lock, for the whole build
        for field, folder in (written | built).items():
            if folder is not None:
                held.enter_context(fsio.output_lock(folder, field))
        if html is not None:
            fsio.check_replaceable(html, "html", "--html")
        if traces_dir is not None:
            fsio.check_output_folder(results, "--out")
            fsio.check_replaceable(results, "results", "--out")
            if reuse is not None and not reuse.is_dir():
                raise InputError(reuse, "--reuse", "not a folder of executed results")
            if reuse is not None:
                fsio.refuse_special(reuse, "--reuse", result_files())
            mine = run_on_traces(traces_dir, results, reuse, force)
            print(f"your traces: {', '.join(mine)}")
        index = build_book(results, args.strict, force, html, reuse, mine if traces_dir else None)
    print(f"book: {index}")
    return 0
