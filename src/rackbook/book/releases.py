"""How to cite the book and what changed in its conclusions between releases
(``data/releases/VERSION.json``)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from rackbook import __version__, paths
from rackbook.inputs.claims import load_claims

#: Where each release's conclusions are kept, one JSON file per version.
RELEASES = paths.DATA / "releases"
TITLE = "rackbook: vLLM at rack scale, checked"
AUTHORS = "the rackbook authors"


def snapshot(executed: Path, version: str = __version__, date: str | None = None) -> dict:
    """The conclusions of one build as a release keeps them (claims not run left out)."""
    from rackbook.results.conclusions import summarize
    from rackbook.results.headline import read_result

    claims: dict[str, dict[str, Any]] = {}
    for result in paths.RESULTS:
        f = executed / f"{result}.json"
        if not f.exists():
            continue
        readings = read_result(f)["readings"]
        for c in load_claims().for_result(result):
            s = summarize(c, readings)
            verdicts = {r["reading"]: r["verdict"] for r in readings if r["claim_id"] == c.id}
            claims[c.id] = {"figure": c.value_text, "word": s.word, "grade": s.grade, **verdicts}
    today = date or datetime.datetime.now(datetime.UTC).date().isoformat()
    return {"version": version, "date": today, "claims": claims}


def releases(folder: Path = RELEASES) -> list[dict]:
    """Every release snapshot in ``folder``, oldest first (by date, then version)."""
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    return sorted(found, key=lambda r: (r["date"], r["version"]))


def _changes(old: dict, new: dict) -> list[str]:
    """One Markdown bullet per claim whose verdict word or grade differs between two
    snapshots (or that one of them lacks)."""
    out = []
    for cid in dict.fromkeys([*old["claims"], *new["claims"]]):
        a, b = old["claims"].get(cid), new["claims"].get(cid)
        fig = (b or a or {}).get("figure", cid).replace("$", "\\$")
        if a is None or b is None:
            out.append(f"- **{fig}**: {'first read' if a is None else 'no longer read'}")
        elif (a["word"], a["grade"]) != (b["word"], b["grade"]):
            out.append(
                f"- **{fig}**: *{a['word']}* ({a['grade']}) became *{b['word']}* ({b['grade']})"
            )
    return out


def changes_page(executed: Path, folder: Path = RELEASES) -> str:
    """The dated "what changed in the conclusions" page, newest release first."""
    rel = releases(folder)
    now = snapshot(executed, version="this build")
    out = ["# What changed in the conclusions", ""]
    out.append(
        "Each release keeps its conclusions (verdict word and certainty per claim, generated "
        "from the chapters' headline JSONs) in `data/releases/`; this page compares them."
    )
    if rel:
        last = rel[-1]
        diff = _changes(last, now)
        out += ["", f"## This build ({now['date']}) against release {last['version']}", ""]
        out += diff or [f"No conclusion changed since release {last['version']}."]
    for i in range(len(rel) - 1, -1, -1):
        r = rel[i]
        out += ["", f"## Release {r['version']} ({r['date']})", ""]
        if i:
            out += _changes(rel[i - 1], r) or [
                f"No conclusion changed since {rel[i - 1]['version']}."
            ]
        else:
            out += [
                f"- **{c['figure'].replace('$', chr(92) + '$')}**: *{c['word']}* ({c['grade']})"
                for c in r["claims"].values()
            ]
    return "\n".join(out) + "\n"


def citation_cff(version: str = __version__, date: str | None = None) -> str:
    """``CITATION.cff`` (Citation File Format 1.2.0) for this version of the book."""
    when = date or _release_date(version)
    return (
        "cff-version: 1.2.0\n"
        "message: If you quote the book's findings, please cite it as below.\n"
        f'title: "{TITLE}"\n'
        "type: software\n"
        "authors:\n"
        f'  - name: "{AUTHORS}"\n'
        f"version: {version}\n"
        f"date-released: {when}\n"
        "license: Apache-2.0\n"
    )


def bibtex(version: str = __version__, date: str | None = None) -> str:
    """The BibTeX entry the landing page shows (the same fields as ``CITATION.cff``)."""
    when = date or _release_date(version)
    return (
        f"@software{{rackbook_{version.replace('.', '_')},\n"
        f"  title = {{{{{TITLE}}}}},\n"
        f"  author = {{{{{AUTHORS}}}}},\n"
        f"  version = {{{version}}},\n"
        f"  year = {{{when[:4]}}},\n"
        f"  date = {{{when}}},\n"
        "}\n"
    )


def cite_markdown(version: str = __version__) -> str:
    """The landing page's citation box: version, release date and the BibTeX, one click
    away."""
    when = _release_date(version)
    return (
        f":::{{dropdown}} Cite this book (version {version}, {when})\n"
        f"```bibtex\n{bibtex(version)}```\n\n"
        "The same fields are in `CITATION.cff`; {doc}`/book/generated/changes` lists what "
        "changed in the conclusions from release to release.\n:::\n"
    )


def _release_date(version: str) -> str:
    """The date of ``version``'s release snapshot; today's (UTC) when it has none yet."""
    for r in releases():
        if r["version"] == version:
            return str(r["date"])
    return datetime.datetime.now(datetime.UTC).date().isoformat()
