"""Every link of the built book leads somewhere: internal links to a page and anchor that exist,
external ones to a well-formed http(s) address. Whether an external site still answers needs
the internet, which CI does not have: `make linkcheck` asks Sphinx's link checker, elsewhere.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

# one xdist worker builds the shared book once for every test of the group (conftest.built_book)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]

#: Pages the theme or Sphinx make, whose links are theirs, not the book's.
SKIP = {"genindex.html", "search.html", "_static", "_sources", "_images"}


def _pages(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*.html")) if not SKIP & set(p.relative_to(root).parts)]


def _ids(page: Path, cache: dict[Path, set[str]]) -> set[str]:
    if page not in cache:
        cache[page] = set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))
    return cache[page]


def test_internal_links_resolve_and_external_ones_are_well_formed(built_book):
    root = built_book
    cache: dict[Path, set[str]] = {}
    broken, bad_urls, external = [], [], set()
    for page in _pages(root):
        dom = page.read_text(encoding="utf-8")
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', dom):
            href = html.unescape(href)
            parts = urlsplit(href)
            if parts.scheme in ("http", "https"):
                external.add(href)
                if not parts.netloc or " " in href:
                    bad_urls.append(f"{page.name}: {href}")
                continue
            if parts.scheme:  # mailto:, javascript: (the theme's buttons)
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.is_file():
                broken.append(f"{page.relative_to(root)}: {href} (no file)")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in _ids(target, cache):
                    broken.append(f"{page.relative_to(root)}: {href} (no anchor)")
    assert not broken, broken[:20]
    assert not bad_urls, bad_urls[:20]
    assert len(external) >= 30  # the sources the book cites, each a link


def test_collapsed_parameter_cells_say_what_they_hold(built_book):
    """No chapter shows myst-nb's bare "Show code cell source": both parameter cells (the
    notebook's defaults and what the build passed) are labelled."""
    from rackbook.book.build import PARAMETER_PROMPTS
    from rackbook.book.runner import available_results

    for result in available_results():
        (page,) = built_book.rglob(f"{result}.html")
        dom = html.unescape(page.read_text(encoding="utf-8"))
        assert "Show code cell source" not in dom, page
        assert PARAMETER_PROMPTS["parameters"] in dom, page
