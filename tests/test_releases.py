"""The book can be cited and says what changed in its conclusions: CITATION.cff and the
landing's BibTeX carry the package's version and its release date; the changes page is
generated from release snapshots and names each claim whose verdict word or grade moved."""

from __future__ import annotations

import json

from rackbook import __version__, paths
from rackbook.book import pages as releases
from rackbook.inputs.claims import load_claims


def test_citation_cff_is_this_version():
    cff = (paths.ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert cff == releases.citation("citation.cff.j2")
    assert f"version: {__version__}\n" in cff and "cff-version: 1.2.0" in cff


def test_bibtex_on_the_landing_names_the_version_and_date():
    md = releases.citation()
    assert md.startswith(f":::{{dropdown}} Cite this book (version {__version__}, ")
    assert f"version = {{{__version__}}}," in md and "@software{rackbook_" in md
    assert "```{include} generated/cite.md" in (paths.ROOT / "book/intro.md").read_text()


def _release(tmp_path, version, date, **words):  # type: ignore[no-untyped-def]
    claims = {cid: {"figure": cid.upper(), "word": w, "grade": g} for cid, (w, g) in words.items()}
    (tmp_path / f"{version}.json").write_text(
        json.dumps({"version": version, "date": date, "claims": claims})
    )


def test_changes_page_names_each_claim_that_moved(tmp_path, monkeypatch):
    _release(tmp_path, "0.1.0", "2026-12-01", a=("plausible", "very low"), b=("exact", "low"))
    _release(tmp_path, "0.2.0", "2026-12-05", a=("unsettled", "very low"), b=("exact", "low"))
    monkeypatch.setattr(
        releases, "snapshot", lambda executed, version="", date=None: {
            "version": version, "date": "2026-12-06",
            "claims": {"a": {"figure": "A", "word": "unsettled", "grade": "very low"},
                       "b": {"figure": "B", "word": "exact", "grade": "moderate"}},
        },
    )  # fmt: skip
    page = releases.changes_page(tmp_path, tmp_path)
    now, r2, r1 = page.split("\n## ")[1:]
    assert now.startswith("This build (2026-12-06) against release 0.2.0")
    assert "- **B**: *exact* (low) became *exact* (moderate)" in now and "**A**" not in now
    assert r2.startswith("Release 0.2.0 (2026-12-05)")
    assert "- **A**: *plausible* (very low) became *unsettled* (very low)" in r2
    assert r1.startswith("Release 0.1.0 (2026-12-01)") and "- **B**: *exact* (low)" in r1


def test_the_shipped_release_snapshot_covers_every_claim():
    shipped = releases.releases()
    assert shipped and shipped[-1]["version"] == __version__
    ids = {c.id for c in load_claims().claims}
    assert set(shipped[-1]["claims"]) == ids
