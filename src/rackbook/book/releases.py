"""How to cite the book and what changed in its conclusions between releases
(``data/releases/VERSION.json``)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from rackbook import __version__, paths
from rackbook.book.report import render
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


def citation_cff(version: str = __version__, date: str | None = None) -> str:
    """``CITATION.cff`` (Citation File Format 1.2.0) for this version of the book."""
    when = date or _release_date(version)
    return render("citation.cff.j2", title=TITLE, authors=AUTHORS, version=version, date=when)


def cite_markdown(version: str = __version__) -> str:
    """The landing page's citation box: version, release date and the BibTeX."""
    when = _release_date(version)
    return render("cite.md.j2", title=TITLE, authors=AUTHORS, version=version, date=when)


def _release_date(version: str) -> str:
    for r in releases():
        if r["version"] == version:
            return str(r["date"])
    return datetime.datetime.now(datetime.UTC).date().isoformat()
