"""The built book in a real browser: every chapter loads in headless Chromium, its figures
render, and its headline numbers (the verdict's reason) appear in the page. Screenshots and the
page weights are kept under ``_build/browser/`` as build artifacts.

Skipped, with the reason shown, where Chromium is not installed; CI installs it and sets
``RACKBOOK_REQUIRE_BROWSER=1`` so that there a missing browser fails instead.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pageprobe
import pytest

from rackbook import paths
from rackbook.book import runner
from rackbook.results.headline import read_result

# one xdist worker builds the shared book once for every test of the group (conftest.built_book)
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("book")]

ARTIFACTS = paths.BUILD / "browser"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--hide-scrollbars",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


@pytest.fixture(scope="module")
def browser() -> str:
    exe = _chromium()
    if exe is None:
        if os.environ.get("RACKBOOK_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium is required here (RACKBOOK_REQUIRE_BROWSER=1) but not found")
        pytest.skip("Chromium not installed (apt-get install chromium); CI installs it")
    return exe


@pytest.fixture(scope="module")
def site(browser, executed, built_book):
    """The book built once from the shared executed set, served on loopback."""
    root = built_book
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield {"root": root, "out": executed, "url": f"http://127.0.0.1:{server.server_port}"}
    server.shutdown()


def _run(browser: str, args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


_SMART = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "--", "\u2014": "---"}
)


def _text(dom: str) -> str:
    """Visible text of a DOM, whitespace collapsed, Sphinx's smart quotes made plain."""
    dom = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", dom)
    return _plain(html.unescape(re.sub(r"<[^>]+>", " ", dom)))


def _plain(text: str) -> str:
    """Whitespace collapsed, smart quotes plain, no space before punctuation (where a tag
    boundary left one): how page text and expected text are compared."""
    text = " ".join(text.split()).translate(_SMART)
    return re.sub(r" ([:;,.)\]])", r"\1", text.replace("( ", "("))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep the test output readable
        pass


def _page_weight(root: Path, page: Path, dom: str) -> int:
    """Bytes of the page and the local resources it references (CSS, JS, images)."""
    total = page.stat().st_size
    for ref in set(re.findall(r'(?:src|href)="([^"#?]+)', dom)):
        if ref.startswith(("http:", "https:", "data:", "mailto:")):
            continue
        f = (page.parent / ref).resolve()
        if f.is_file() and root in f.parents and f.suffix in {".css", ".js", ".png", ".svg"}:
            total += f.stat().st_size
    return total


@pytest.mark.parametrize("result", runner.available_results())
def test_chapter_renders(browser, site, result, tmp_path):
    page = site["root"] / "notebooks" / f"{result}.html"
    assert page.is_file(), f"{page} was not built"
    url = f"{site['url']}/notebooks/{result}.html"
    dump = _run(browser, ["--dump-dom", url], tmp_path / "p1")
    assert dump.returncode == 0, dump.stderr[-500:]
    dom = dump.stdout
    text = _text(dom)
    doc = read_result(site["out"] / f"{result}.json")
    # the chapter's readings reach the page: each claim's three verdicts in the claim-by-reading
    # table with their reasons one click away, and each headline's reason (which carries its
    # number) in the last table
    for r in doc["readings"]:
        assert _plain(r["reason"]) in text and r["verdict"] in text, r
    assert "What would flip it" in text
    for f in doc["flips"]:
        assert _plain(f) in text, f
    # nothing left raw: no unrendered glue role, no MathJax error, no internal sheet cited
    assert "{glue" not in text and "glue:text" not in text
    assert "<mjx-merror" not in dom and "Double subscripts" not in text
    assert "claims-context" not in text and "reference sheet" not in text.lower()
    # plurals for people: no "1 tokens", no "GPU(s)"
    slips = re.findall(
        r"\b1 (?:tokens|sequences|GPUs|requests|points|accelerators|replicas|nodes)\b|\w\(s\)",
        text,
    )
    assert not slips, slips
    # a URL a reader sees is a link they can follow
    hrefs = set(re.findall(r'href="(https?://[^"]+)"', dom))
    prose = _text(re.sub(r"(?s)<(pre|code)\b.*?</\1>", " ", dom))  # commands may show URLs
    for seen in re.findall(r"https?://[^\s<>\"')\]]+", prose):
        assert any(h.startswith(seen.rstrip(".,;:")) for h in hrefs), f"not a link: {seen}"
    # visible code fits the column (~90 characters at the book's width)
    for block in re.findall(r'(?s)<div class="highlight[^"]*"><pre>(.*?)</pre>', dom):
        for line in html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
            assert len(line) <= 90, f"code line wider than the column: {line[:60]}..."
    # every figure is numbered and captioned, per chapter: "Fig. 2.1", "Fig. 2.2", ...
    numbers = re.findall(r'class="caption-number">Fig\. (\d+)\.(\d+)', dom)
    chapter = paths.RESULTS.index(result) + 1
    assert numbers and {int(c) for c, _ in numbers} == {chapter}, numbers
    assert sorted(int(n) for _, n in numbers) == list(range(1, len(numbers) + 1)), numbers
    # the margin note is placed in the margin
    assert 'class="sidebar margin' in dom or 'class="margin sidebar' in dom
    for h in doc["headlines"]:
        assert h["name"] in text, h["name"]
        assert _plain(h["reason"]) in text, h["name"]
    # every figure is a non-empty PNG that the page references
    imgs = [m for m in re.findall(r'<img[^>]+src="([^"]+)"', dom) if m.endswith(".png")]
    assert imgs, "chapter has no figure"
    for src in imgs:
        f = (page.parent / src).resolve()
        data = f.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, src
    shot = ARTIFACTS / f"{result}.png"
    res = _run(browser, ["--window-size=1280,2400", f"--screenshot={shot}", url], tmp_path / "p2")
    shot_ok = res.returncode == 0 and shot.is_file() and shot.stat().st_size > 20_000
    assert shot_ok, res.stderr[-3000:]
    weight = _page_weight(site["root"], page, dom)
    weights = ARTIFACTS / "page-weight.json"
    current = json.loads(weights.read_text()) if weights.exists() else {}
    current[result] = weight
    weights.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    print(f"{result}: page weight {weight / 1024:.0f} KiB, {len(imgs)} figure(s)")


def _all_pages(root: Path) -> list[str]:
    """Every page a reader can open (not Sphinx's index and search pages)."""
    skip = {"genindex.html", "search.html"}
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.html")
        if p.name not in skip and not {"_static", "_sources", "_images"} & set(p.parts)
    )


@pytest.fixture(scope="module")
def laid_out(browser, site):
    """Every page laid out at 1,400 px (one Chromium run)."""
    facts = pageprobe.probe(browser, site["root"], _all_pages(site["root"]))
    sizes = {p: f["height"] for p, f in facts.items()}
    (ARTIFACTS / "page-heights.json").write_text(json.dumps(sizes, indent=2) + "\n")
    return facts


@pytest.fixture(scope="module")
def laid_out_narrow(browser, site):
    """Every page laid out at 400 px, a phone's width (one Chromium run)."""
    return pageprobe.probe(browser, site["root"], _all_pages(site["root"]), pageprobe.NARROW)


def _png(root: Path, page: str):  # type: ignore[no-untyped-def]
    from rackbook.book.plotting import png_facts

    return lambda src: png_facts(((root / page).parent / src).resolve().read_bytes())


@pytest.mark.parametrize("width", [pageprobe.WIDTH, pageprobe.NARROW])
def test_every_page_fits_the_screen_and_its_figures_read(laid_out, laid_out_narrow, site, width):
    """No page scrolls sideways at 400 px (nor at 1,400); every figure fills the text column,
    its smallest text >= 11 px at 1,400 px and >= 7 px at 400 px (measured from the figure's
    dpi, point size and rendered width). The widths and font sizes are kept as artifacts."""
    facts = laid_out if width == pageprobe.WIDTH else laid_out_narrow
    found, sizes = [], {}
    for page, f in facts.items():
        found += pageprobe.layout_defects(page, f, width, _png(site["root"], page))
        sizes[page] = {"scroll_width": f["scroll_width"], "figures": f["figures"]}
    (ARTIFACTS / f"layout-{width}.json").write_text(json.dumps(sizes, indent=2) + "\n")
    assert len(facts) >= 15 and found == []


def test_every_figure_taps_open_at_full_size(laid_out_narrow, site):
    """At 400 px every static figure sits inside a link to its own full-size image in the
    build, and the link a tap follows on a chapter's figure is served: the same PNG, wider in
    pixels than the phone shows it."""
    import urllib.parse
    import urllib.request

    from rackbook.book.plotting import png_facts

    found, links = [], []
    for page, f in laid_out_narrow.items():
        found += pageprobe.enlarge_defects(page, f, site["root"])
        links += [(page, src, href) for src, href in f.get("figure_links", []) if href]
    assert found == [] and any(p.startswith("notebooks/") for p, _, _ in links)
    shown_at = {(p, s): w for p, f in laid_out_narrow.items() for s, w, _n in f["figures"]}
    page, src, href = next(
        x for x in links if x[0].startswith("notebooks/") and (x[0], x[1]) in shown_at
    )
    url = urllib.parse.urljoin(f"{site['url']}/{page}", href)
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 (the local test server)
        body = r.read()
    assert body == ((site["root"] / page).parent / src).resolve().read_bytes()
    assert (
        png_facts(body)["width"] > shown_at[(page, src)]
    )  # the full-size file, larger than shown at 400 px


@pytest.mark.parametrize("result", runner.available_results())
def test_chapter_as_a_reader_meets_it(laid_out, site, result):
    """At 1,400 px: each claim's finding and plain certainty grade within the first screen below
    the title, at most CHAPTER_MAX px tall, no object repr or raw DataFrame, alt text that is
    not a file path, captions at body-text contrast, the right-hand contents usable."""
    from rackbook.inputs.claims import load_claims
    from rackbook.results.conclusions import summarize

    doc = read_result(site["out"] / f"{result}.json")
    found = [summarize(c, doc["readings"]) for c in load_claims().for_result(result)]
    sentences = [x for s in found for x in (s.finding, f"Certainty: {s.grade}")]
    facts = laid_out[f"notebooks/{result}.html"]
    assert pageprobe.defects(result, facts, sentences) == []


#: Inline math that holds prose: dollar signs MathJax paired ("$3.96/GPU-hour ... $2.65").
_PROSE_MATH = re.compile(r"\\\((?:(?!\\\)).)*?\b[a-z]{4,} [a-z]{3,}\b(?:(?!\\\)).)*?\\\)")


def test_dollars_read_as_dollars_not_math(laid_out, site):
    """A price such as "$3.96/GPU-hour ... $2.65" reads as text: no page's inline math holds
    words (MathJax pairs unescaped dollars), and rack-scaling shows its dollar figures."""
    found = []
    for page in _all_pages(site["root"]):
        source = (site["root"] / page).read_text(encoding="utf-8")
        found += [f"{page}: {m.group(0)[:60]}" for m in _PROSE_MATH.finditer(source)]
    assert found == []
    text = pageprobe.plain(laid_out["notebooks/rack-scaling.html"]["text"])
    assert "$3.96" in text and "$38.96" in text


def test_landing_page_is_one_screen_of_answers(laid_out, site):
    """At most LANDING_MAX (2,500) px tall; each claim's verdict word, finding and plain
    certainty grade shown, every table cell at most 60 words, at least two distinct grades."""
    from rackbook.inputs.claims import load_claims
    from rackbook.results.conclusions import summarize

    facts = laid_out["book/intro.html"]
    assert pageprobe.defects("intro", facts, max_height=pageprobe.LANDING_MAX) == []
    text = pageprobe.plain(facts["text"])
    grades = set()
    for r in runner.available_results():
        readings = read_result(site["out"] / f"{r}.json")["readings"]
        for c in load_claims().for_result(r):
            s = summarize(c, readings)
            assert pageprobe.plain(s.finding) in text, c.id
            assert f"{s.word} " in text and f"{s.grade}: " in text, c.id
            grades.add(s.grade)
    assert len(grades) >= 2
    long = [c for c in facts.get("answer_cells", []) if len(c.split()) > 60]
    assert facts.get("answer_cells") and long == []


def test_landing_page_lists_every_claim(browser, site, tmp_path):
    dump = _run(browser, ["--dump-dom", f"{site['url']}/book/intro.html"], tmp_path / "p")
    text = _text(dump.stdout)
    from rackbook.inputs.claims import load_claims

    for c in load_claims().claims:
        assert c.value_text in text
    _run(
        browser,
        [
            "--window-size=1280,1600",
            f"--screenshot={ARTIFACTS / 'intro.png'}",
            f"{site['url']}/book/intro.html",
        ],
        tmp_path / "q",
    )


def test_the_book_prints_to_pdf(browser, site, tmp_path):
    """`make book-pdf`'s script prints each page offline; a chapter is a multi-page PDF."""
    out = tmp_path / "pdf"
    res = subprocess.run(
        ["bash", str(paths.ROOT / "env/book/print-pdf.sh"), str(site["root"]), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    for r in runner.available_results():
        data = (out / f"{r}.pdf").read_bytes()
        assert data.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", data)) >= 5
    assert not list(out.glob("*.part"))
