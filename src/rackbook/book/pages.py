"""Markdown generated for the book from data (claim cards, landing table, reference pages, the
validation page, citation and release changes): every number from the claims registry, the
catalogs, a headline JSON or ``data/releases/VERSION.json``."""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Collection
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

import numpy as np
import yaml

from rackbook import __version__, paths
from rackbook.book import plotting
from rackbook.book.report import cell as _cell
from rackbook.book.report import md as _md
from rackbook.book.report import render, table
from rackbook.core import schema
from rackbook.core.fsio import atomic_write_bytes, atomic_write_text
from rackbook.core.units import plural
from rackbook.inputs.claims import Claim, Registry, Status, load_claims
from rackbook.physics import expected as exp_mod
from rackbook.results import validation

#: A source's status in words: ``partly-located`` -> ``primary source partly located``.
_STATUS = {s: f"primary source {s.replace('-', ' ')}" for s in get_args(Status)}


def claim_card(result: str) -> str:
    """Markdown card of a result's claims: each claim's figure and statement."""
    claims = load_claims().for_result(result)
    cards = [f"**{_md(c.value_text)}** ({c.id}): {_md(c.statement)}" for c in claims]
    return "\n\n".join(cards) + "\n"


def as_published(result: str) -> str:
    """Per claim of ``result``, a dropdown: its original words, scope, metric and source."""
    return render("as-published.md.j2", reg=load_claims(), result=result, status=_STATUS)


def source_note(today: datetime.date | None = None) -> str:
    """The landing page's opening: where the claims were read, as of ``today`` (UTC)."""
    reg = load_claims()
    seen = sorted({c.source.seen_in for c in reg.claims})  # the articles the claims come from
    return render(
        "source-note.md.j2",
        reg=reg,
        day=(today or datetime.datetime.now(datetime.UTC).date()).isoformat(),
        articles=[f"*{_md(reg.source(s).title)}*" for s in seen],
        missing=any(s.status == "not-located" for s in reg.sources),
        confirmed=[c for c in reg.claims if c.source.status in ("located", "partly-located")],
        related=[s for s in reg.sources if s.status == "located" and s.id.startswith("vllm-")],
        results=len({c.result for c in reg.claims}),
    )


def _readings(executed: Path | None, result: str) -> list[dict[str, Any]] | None:
    from rackbook.results.headline import read_result

    f = executed / f"{result}.json" if executed else None
    return read_result(f)["readings"] if f is not None and f.exists() else None


def landing_row(claim: Claim, found: Any | None) -> tuple[str, str, str, str]:
    """One landing row's cells (claim, verdict, finding, certainty) from ``found``."""
    claim_cell = f"**{_cell(claim.value_text)}**: {_cell(claim.statement)}"
    if found is None:
        return claim_cell, "not run", "-", "-"
    grade = f"**{found.grade}**" + (f": {_cell(found.why)}" if found.why else "")
    return claim_cell, f"**{_cell(found.word)}**", _cell(found.finding), grade


def at_a_glance(
    executed: Path, reference: Path | None = None, mine: Collection[str] | None = None
) -> str:
    """The landing table from ``executed``; ``reference``/``mine`` add "this run" columns."""
    from rackbook.results.conclusions import VERDICT_WORDS, conclusions, summarize

    reg = load_claims()
    yours_too = reference is not None and mine is not None
    head = "claim | verdict | finding | certainty"
    head += " | this run, your traces" * yours_too
    head += " | this run, shipped recordings" * (reference is not None)
    found: dict[str, Any] = {}  # claim id -> its summary
    rows, reasons = [], []
    for n, result in enumerate(paths.RESULTS, 1):
        ran = (executed / f"{result}.ipynb").exists()
        link = f"{{doc}}`chapter {n} </notebooks/{result}>`" if ran else f"chapter {n}"
        ref, readings = _readings(reference, result), _readings(executed, result)
        yours = readings if result in (mine or ()) else []
        if readings is not None:
            found |= {c.id: summarize(c, readings) for c in reg.for_result(result)}
            for c in conclusions({"result": result, "readings": readings}, reg):
                note = c.certainty.note
                reasons.append(f"- **{_md(c.figure)}** ({found[c.claim_id].grade}): {_md(note)}")
        for claim in reg.for_result(result):
            cells = list(landing_row(claim, found.get(claim.id)))
            cells[0] += f" ({link})"
            cells += [_run_verdict(yours, claim.id)] * yours_too
            cells += [_run_verdict(ref, claim.id)] * (reference is not None)  # the word only
            rows.append(cells)
    used = dict.fromkeys(s.word for s in found.values())
    return render(
        "at-a-glance.md.j2",
        lines=table(head, rows),
        key="; ".join(f"*{w}*: {VERDICT_WORDS[w]}" for w in used if w in VERDICT_WORDS),
        yours_too=yours_too,
        reasons=reasons,
        held_out=exp_mod.load_fit().validation_text or "",
    )


def _run_verdict(readings: list[dict[str, Any]] | None, claim_id: str) -> str:
    if readings is None:
        return "not run"
    got = [r for r in readings if (r["claim_id"], r["reading"]) == (claim_id, "this run")]
    return str(got[-1]["verdict"]) if got else "-"


def _links(urls: list[str]) -> str:
    return ", ".join(f"[{i}]({u})" for i, u in enumerate(urls, 1)) or "-"


def _num(x: float | None, scale: float = 1.0, unit: str = "") -> str:
    if x is None:
        return "-"
    v = x / scale
    text = f"{v:,.0f}" if v >= 100 else f"{v:,.3g}"
    return f"{text} {unit}".strip()


def hardware_page() -> str:
    """The hardware catalog as tables (``data/hardware.yaml``)."""
    from rackbook.inputs.catalogs import load_hardware

    return render("hardware.md.j2", cat=load_hardware(), num=_num, links=_links)


def _kv(model: Any) -> str:
    from rackbook.errors import InputError
    from rackbook.physics import roofline

    out = []
    for dt in ("fp4", "fp8", "bf16"):
        try:
            out.append(f"{dt} {roofline.kv_bytes(model, dt).bytes_per_token:,} B")
        except InputError:
            out.append(f"{dt} -")
    return ", ".join(out)


def models_page() -> str:
    """The model catalog (``data/models/*.yaml``) with KV bytes computed by the roofline."""
    from rackbook.inputs.catalogs import list_models, load_model

    models = [load_model(m) for m in list_models()]
    return render("models.md.j2", models=models, num=_num, links=_links, kv=_kv)


def claims_page(registry: Registry | None = None) -> str:
    """Every claim of the registry and every source with its status."""
    return render("claims.md.j2", reg=registry or load_claims(), status=_STATUS)


def translation_page(trace_dir: Path | None = None, gpus: int = 1) -> str:
    """One point of a recorded trace (default: decode-parity's) under each tool's metric
    definitions."""
    from rackbook.core import cross_tool, provenance, traces

    trace_dir = trace_dir or paths.TRACES / "decode-parity"
    if not (trace_dir / "run.json").exists():
        return "No recorded trace is available to compute this table.\n"
    t = traces.read_trace(trace_dir)
    pid = str(t.points["point_id"].iloc[0])
    df = cross_tool.translate(t, gpus=gpus, point_id=pid)
    rows = [
        (r.quantity, r.tool, f"`{r.name}`", f"{r.value:,.2f}", r.unit, _cell(r.definition))
        for r in df.itertuples()
    ]
    out = table("quantity | tool | name | value | unit | definition", rows)
    src = f"point `{pid}` of trace `{t.trace_id}` ({t.kind}, {provenance.hardware_label(t.run)})"
    head = f"Computed by `rackbook.core.cross_tool.translate` from {src}, over "
    return head + f"{plural(gpus, 'GPU')}." + "\n\n" + "\n".join(out) + "\n"


#: Worked examples of ``rackbook check``: (what is claimed, check_claim keyword arguments).
CHECK_EXAMPLES = paths.ROOT / "book" / "_template" / "check-examples.yaml"


def check_page(model: str = "deepseek-v4.1-flash") -> str:
    """The worked ``rackbook check`` examples as a table (computed, never typed)."""
    from rackbook.physics import attainable, check

    reg = load_claims()
    rows = []
    for example in yaml.safe_load(CHECK_EXAMPLES.read_text(encoding="utf-8")):
        label, kw = example["label"], dict(example["args"])
        tok_s = kw.pop("tok_s", None) or reg.value(label.split(",")[0])  # "CLAIM, how"
        c = check.check_claim(model, kw.pop("gpu"), kw.pop("gpus"), tok_s, **kw)
        flags = [f"--model {model}", f"--gpu {c.gpu}", f"--gpus {c.gpus}", f"--tok-s {tok_s:g}"]
        flags += [f"--{k.replace('_', '-')} {v}" for k, v in kw.items()]
        a = attainable.for_check(c) if not c.limit.startswith("memory capacity") else None
        reach = "-"
        if a is not None and math.isfinite(a.ratio):
            where = a.deployment.split(" on ")[0]
            reach = f"{a.ratio:.2g} ({a.tok_s_per_gpu:,.0f} tok/s per GPU, {where})"
        ceiling = f"{c.limit}: {c.ceiling_tok_s_per_gpu:,.0f} tok/s per GPU"
        cmd = f"`rackbook check {' '.join(flags)}`"
        rows.append((_cell(label), cmd, f"**{c.verdict}**", f"{c.ratio:.3g}", ceiling, reach))
    head = "figure | command | verdict | claimed / ceiling | binding ceiling | claimed / attainable"
    return "\n".join(table(head, rows)) + "\n"


_URL = re.compile(r"https?://[^\s\"'<>)\]]+")


def data_urls() -> dict[str, list[str]]:
    """Every URL the book cites -> the files citing it (placeholders left out)."""
    found: dict[str, dict[str, None]] = {}  # files as an ordered set
    files = [paths.ROOT / "data" / "claims.yaml", paths.ROOT / "data" / "hardware.yaml"]
    files += sorted((paths.ROOT / "data" / "models").glob("*.yaml"))
    files += sorted((paths.ROOT / "data" / "published").glob("*.yaml"))
    files += sorted(paths.NOTEBOOKS.glob("*.ipynb")) + sorted((paths.ROOT / "book").glob("*.md"))
    for f in files:
        for url in _URL.findall(f.read_text(encoding="utf-8")):
            url = url.rstrip(".,;`\\")
            if not any(h in url for h in ("HOST", "127.0.0.1", "localhost")):
                found.setdefault(url, {})[str(f.relative_to(paths.ROOT))] = None
    return {url: list(cited) for url, cited in found.items()}


def bib_key(url: str) -> str:
    """A stable BibTeX key for a URL: host and path, lower case, other runs as ``-``."""
    bare = re.sub(r"^https?://(www\.)?", "", url.lower())
    return re.sub(r"[^a-z0-9]+", "-", bare).strip("-")[:80].strip("-")


def _bib_escape(text: str) -> str:
    return re.sub(r"([&%#_{}$])", r"\\\1", text)


#: How the bibliography names cited addresses: aggregators (secondary sources), the primary
#: each reports (address, title, organisation, date), a host's organisation.
_CITATIONS = yaml.safe_load((paths.DATA / "citations.yaml").read_text(encoding="utf-8"))
AGGREGATORS: tuple[str, ...] = tuple(_CITATIONS["aggregators"])
PRIMARY_OF: dict[str, tuple[str, str, str, str]] = {
    k: (v["url"], v["title"], v["org"], v["date"]) for k, v in _CITATIONS["primary_of"].items()
}
_HOSTS: dict[str, str] = _CITATIONS["hosts"]


def source_meta(url: str, titles: dict[str, str], figures: dict[str, tuple[str, str]]) -> dict:
    """Title, organisation, date (``n.d.``) and ``secondary`` of a cited address."""
    host = re.sub(r"^https?://(www\.)?", "", url).split("/")[0].lower()
    path = [p for p in re.sub(r"^https?://[^/]+/?", "", url).split("/") if p]
    org, title = "", titles.get(url, "")
    if host in ("github.com", "raw.githubusercontent.com") and len(path) >= 2:
        org, repo = path[0], f"{path[0]}/{path[1]}"
        named = f"{repo}: {path[-1]}" if len(path) > 2 else repo
        pull = len(path) >= 4 and path[2] == "pull"
        title = title or (f"{repo} pull request #{path[3]}" if pull else named)
    elif host == "huggingface.co" and path:
        org = "Hugging Face" if path[0] == "papers" else path[0]
        title = title or (" ".join(path[:2]) if path[0] == "papers" else "/".join(path[:2]))
        title += " (Hugging Face)" if "Hugging Face" not in title else ""
    else:
        org = next((o for h, o in _HOSTS.items() if host == h or host.endswith("." + h)), host)
        slug = re.sub(r"^\d{4}-\d{2}-\d{2}-|\.(html?|md|json|csv|jsx|ts)$", "", (path or [""])[-1])
        words = re.sub(r"[-_]+", " ", slug).strip()
        title = title or (words[:1].upper() + words[1:] if path else host)
    who, date = figures.get(url, ("", ""))
    org = who or org  # a figure's submitter names the organisation
    if not date and (m := re.search(r"(20\d\d)[-/](\d\d)[-/](\d\d)", url)):  # in the address
        date = "-".join(m.groups())
    secondary = any(host == a or host.endswith("." + a) for a in AGGREGATORS)
    if secondary:  # the aggregator is the author of the page; it reports the primary's text
        org = next((o for h, o in _HOSTS.items() if host == h), host)
        if url in PRIMARY_OF:
            title = f"Report of {PRIMARY_OF[url][2]}: {PRIMARY_OF[url][1]}"
    return {"title": title, "org": org, "date": date or "n.d.", "secondary": secondary}


def bibliography() -> str:
    """A BibTeX ``@misc`` per cited URL; an aggregator's primary gets its own entry."""
    from rackbook.inputs.claims import load_figures

    reg = load_claims()
    titles = {s_.url: s_.title for s_ in reg.sources if s_.url}
    # the first figure of each address names it
    figures = {f.url: (f.submitter, f.date or "") for f in reversed(load_figures().figures)}
    by_key: dict[str, tuple[str, list[str]]] = {}
    for url, files in data_urls().items():  # one entry per key: "a/b" and "a/b/" are one
        first, seen = by_key.setdefault(bib_key(url), (url, []))
        seen += [f for f in files if f not in seen]
    extra: dict[str, dict] = {}
    for url, (primary, title, org, date) in PRIMARY_OF.items():
        if bib_key(url) in by_key and bib_key(primary) not in by_key:
            by_key[bib_key(primary)] = (primary, [])
            extra[primary] = {"title": title, "org": org, "date": date, "secondary": False}
    entries = [
        (key, url, files, extra.get(url) or source_meta(url, titles, figures))
        for key, (url, files) in sorted(by_key.items())
    ]
    return render("references.bib.j2", entries=entries, bib=_bib_escape, primary_of=PRIMARY_OF)


def parameters_page() -> str:
    """The notebooks' parameters: meaning, and the chapters declaring each (defaults)."""
    import papermill

    from rackbook.params import cell_defaults

    declared: dict[str, dict[str, str]] = {}
    helps: dict[str, str] = {}
    for r in paths.RESULTS:
        defaults = cell_defaults(r)  # as YAML writes them (None: null)
        for name, info in papermill.inspect_notebook(str(paths.NOTEBOOKS / f"{r}.ipynb")).items():
            declared.setdefault(name, {})[r] = json.dumps(defaults[name])
            help_text = re.sub(r"\bNone\b", "null", str(info.get("help") or ""))
            helps.setdefault(name, help_text)
    rows = []
    for name in sorted(declared, key=lambda n: (-len(declared[n]), n)):
        by = "; ".join(f"{r} (`{_cell(d)}`)" for r, d in declared[name].items())
        if len(declared[name]) == len(paths.RESULTS):
            ds = set(declared[name].values())
            by = "every chapter" + (f" (`{_cell(ds.pop())}`)" if len(ds) == 1 else f": {by}")
        rows.append((f"`{name}`", _cell(helps[name]), by))
    return "\n".join(table("parameter | meaning | declared by (default)", rows)) + "\n"


#: How many of the largest misses the page names.
OUTLIERS = 6


def validation_report() -> dict[str, Any]:
    """``rackbook validate --json``'s report (held out by source) with the excluded points."""
    points, excluded = validation.load()
    rep = validation.report(points, exp_mod.load_fit())
    rep["excluded"] = [{"id": x.id, "source": x.source, "reason": x.reason} for x in excluded]
    rep["notes"] = {p.id: p.note for p in points}
    return rep


def _group(rep: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
    pts: list[Any] = [SimpleNamespace(**p) for p in rep["points"]]
    names = sorted({str(getattr(p, key)) for p in pts})
    return [(n, validation.summary([p for p in pts if str(getattr(p, key)) == n])) for n in names]


def validation_markdown(rep: dict[str, Any]) -> str:
    """The page's generated tables from ``rep`` (:func:`validation_report`)."""
    fit = rep["fit"]
    has_band = "log_low" in fit and "log_high" in fit
    keys = {"decoding batch per GPU": "band", "GPU": "gpu", "source": "source"}
    return render(
        "validation.md.j2",
        rep=rep,
        fit=fit,
        band=(math.exp(fit["log_low"]), math.exp(fit["log_high"])) if has_band else None,
        all_text=exp_mod.held_out_text(rep["all"]),
        groups={title: _group(rep, key) for title, key in keys.items()},
        worst=sorted(rep["points"], key=lambda p: -abs(math.log(p["ratio"])))[:OUTLIERS],
    )


def validation_figure(rep: dict[str, Any]) -> bytes:
    """Predicted against measured (tok/s per GPU, log axes), one marker per source, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plotting.apply_style()
    x, y = "expected, held out (tok/s per GPU)", "measured (tok/s per GPU)"
    fig, ax = plotting.axes(x, y, figsize=(plotting.MAX_WIDTH_IN, 4.6), log="xy")
    pts = rep["points"]
    lo = min(min(p["measured"], p["expected"]) for p in pts) / 2
    hi = max(max(p["measured"], p["expected"]) for p in pts) * 2
    xs = np.geomspace(lo, hi, 50)
    ax.fill_between(xs, xs / 2, xs * 2, color="0.9", label="within 2x")
    ax.plot(xs, xs, color="0.3", lw=1, label="measured = expected")
    for i, src in enumerate(sorted({p["source"] for p in pts})):
        mine = [p for p in pts if p["source"] == src]
        marker = plotting.MARKERS[i % len(plotting.MARKERS)]
        colour = plotting.PALETTE[i % len(plotting.PALETTE)]
        xy = [p["expected"] for p in mine], [p["measured"] for p in mine]
        ax.scatter(*xy, marker=marker, color=colour, label=src, s=28)
    ax.set(xlim=(lo, hi), ylim=(lo, hi))
    ax.legend(fontsize=plotting.SMALL_PT, loc="upper left", ncol=2)
    data = plotting.figure_png(fig)
    plt.close(fig)
    return data


#: Where each release's conclusions are kept, one JSON file per version.
RELEASES = paths.DATA / "releases"
TITLE = "rackbook: vLLM at rack scale, checked"
AUTHORS = "the rackbook authors"


def snapshot(executed: Path, version: str = __version__, date: str | None = None) -> dict:
    """The conclusions of one build as a release keeps them (claims not run left out)."""
    from rackbook.results.conclusions import summarize

    claims: dict[str, dict[str, Any]] = {}
    for result in paths.RESULTS:
        if (readings := _readings(executed, result)) is None:
            continue
        for c in load_claims().for_result(result):
            s = summarize(c, readings)
            verdicts = {r["reading"]: r["verdict"] for r in readings if r["claim_id"] == c.id}
            claims[c.id] = {"figure": c.value_text, "word": s.word, "grade": s.grade, **verdicts}
    return {"version": version, "date": date or _today(), "claims": claims}


def releases(folder: Path = RELEASES) -> list[dict]:
    """Every release snapshot in ``folder``, oldest first (by date, then version)."""
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    return sorted(found, key=lambda r: (r["date"], r["version"]))


def _changes(old: dict, new: dict) -> list[str]:
    out = []
    for cid in dict.fromkeys([*old["claims"], *new["claims"]]):
        a, b = old["claims"].get(cid), new["claims"].get(cid)
        fig = (b or a or {}).get("figure", cid).replace("$", "\\$")
        if a is None or b is None:
            out.append(f"- **{fig}**: {'first read' if a is None else 'no longer read'}")
        elif (a["word"], a["grade"]) != (b["word"], b["grade"]):
            was, now = f"*{a['word']}* ({a['grade']})", f"*{b['word']}* ({b['grade']})"
            out.append(f"- **{fig}**: {was} became {now}")
    return out


def changes_page(executed: Path, folder: Path = RELEASES) -> str:
    """The dated "what changed in the conclusions" page, newest release first."""
    now = snapshot(executed, version="this build")
    return render("changes.md.j2", rel=releases(folder), now=now, changes=_changes)


def citation(template: str = "cite.md.j2", version: str = __version__) -> str:
    """The landing's citation box (``cite.md.j2``: version, release date, BibTeX) or, with
    ``citation.cff.j2``, ``CITATION.cff`` (Citation File Format 1.2.0)."""
    when = next((str(r["date"]) for r in releases() if r["version"] == version), _today())
    return render(template, title=TITLE, authors=AUTHORS, version=version, date=when)


def _today() -> str:
    return datetime.datetime.now(datetime.UTC).date().isoformat()


TRACE_FORMAT = "# The trace format\n\nGenerated from `rackbook.core.schema`.\n\n"


def generate(
    folder: Path, executed: Path, reference: Path | None = None, mine: Collection[str] | None = None
) -> list[Path]:
    """Write every generated page into ``folder``; returns the files written."""
    from rackbook.book import rerun

    folder.mkdir(parents=True, exist_ok=True)
    ref = None if executed == paths.EXECUTED else reference or paths.EXECUTED  # "this run" beside
    pages = {
        "hardware.md": hardware_page,
        "models.md": models_page,
        "rerun-cost.md": rerun.cost_table,
        "rerun-deployment.md": rerun.deployment,
        "claims.md": claims_page,
        "source-note.md": source_note,
        "check-examples.md": check_page,
        "parameters.md": parameters_page,
        "references.bib": bibliography,
        "metric-translation.md": translation_page,
        "at-a-glance.md": lambda: at_a_glance(executed, reference=ref, mine=mine),
        "changes.md": lambda: changes_page(executed),
        "cite.md": citation,
        "trace-format.md": lambda: TRACE_FORMAT + schema.markdown_reference(),
    }
    written = [atomic_write_text(folder / name, make()) for name, make in pages.items()]
    rep = validation_report()
    written.append(atomic_write_text(folder / "validation.md", validation_markdown(rep)))
    return [*written, atomic_write_bytes(folder / "validation.png", validation_figure(rep))]
