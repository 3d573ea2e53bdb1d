"""Measure built pages as a reader's browser lays them out: headless Chromium loads each page in
a 1,400 px wide frame of a probe page (same origin) and reports, per page, its height, where the
title and the conclusion box sit, the figures' alt text, the captions' and body text's colours,
table markup and whether the right-hand contents is shown. Used by ``tests/test_browser.py``;
``python tests/pageprobe.py HTML_DIR PAGE...`` prints the JSON (for measuring by hand).
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

#: Width of the frame each page is laid out in (px).
WIDTH = 1400

_JS = r"""
function wide(d) {
  // elements that stick out past the viewport's right edge with no ancestor that clips or
  // scrolls them (the ones that widen the page), leaves first: what makes a page scroll sideways
  const vw = d.documentElement.clientWidth, win = d.defaultView;
  const clipped = (e) => {
    for (let a = e.parentElement; a && a !== d.body; a = a.parentElement) {
      if (win.getComputedStyle(a).overflowX !== "visible") return true;
    }
    return false;
  };
  const out = (e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right > vw + 1;
  };
  return [...d.querySelectorAll("body *")].filter(
      (e) => out(e) && !clipped(e) && ![...e.children].some(out)).slice(0, 12).map(
      (e) => e.tagName + "." + [...e.classList].join(".") + " " +
        Math.round(e.getBoundingClientRect().right) + "px: " +
        (e.textContent || "").trim().slice(0, 40));
}

function probe(d) {
  const abs = (el) => el.getBoundingClientRect().top + d.defaultView.scrollY;
  const h1 = d.querySelector("article h1") || d.querySelector("h1");
  const conc = d.querySelector(".rb-conclusion");
  const colour = (el) => el ? d.defaultView.getComputedStyle(el).color : null;
  const body = d.querySelector("article p, main p");
  const toc = d.querySelector(".bd-sidebar-secondary");
  const tocBox = toc ? toc.getBoundingClientRect() : null;
  const tocLinks = toc ? [...toc.querySelectorAll("nav a")].filter(
      (a) => a.getBoundingClientRect().width > 0).length : 0;
  return {
    height: d.documentElement.scrollHeight,
    title_top: h1 ? abs(h1) : null,
    title: h1 ? h1.textContent.trim() : null,
    conclusion_top: conc ? abs(conc) : null,
    conclusion_bottom: conc ? abs(conc) + conc.getBoundingClientRect().height : null,
    conclusion: conc ? conc.innerText : null,
    text: d.body.innerText,
    images: [...d.querySelectorAll("article img, main img")].map(
      (i) => [i.getAttribute("src"), i.getAttribute("alt") || ""]),
    caption_colours: [...d.querySelectorAll("figcaption")].map(
      (c) => colour(c.querySelector("p") || c)),
    body_colour: colour(body),
    background: d.defaultView.getComputedStyle(d.body).backgroundColor,
    dataframes: d.querySelectorAll("table.dataframe").length,
    answer_cells: [...d.querySelectorAll(".rb-answers table td")].map((c) => c.innerText),
    sections: [...d.querySelectorAll("article h2, article h3")].map(
      (h) => [h.textContent.trim().slice(0, 40), Math.round(abs(h))]),
    blocks: [...d.querySelectorAll("article table, article figure, article pre, article details")]
      .filter((e) => e.getBoundingClientRect().height > 150).map(
      (e) => [e.tagName + ":" + e.textContent.trim().slice(0, 40),
              Math.round(abs(e)), Math.round(e.getBoundingClientRect().height)]),
    toc_width: tocBox ? tocBox.width : 0,
    toc_links: tocLinks,
    view_width: d.documentElement.clientWidth,
    scroll_width: d.documentElement.scrollWidth,
    column_width: (() => {  // the text column's content box (px)
      const a = d.querySelector("article.bd-article") || d.body;
      const s = d.defaultView.getComputedStyle(a);
      return a.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
    })(),
    // figures a reader sees without a click (one in a closed dropdown is laid out on opening)
    figures: [...d.querySelectorAll("article figure img, article .cell_output img")].filter(
      (i) => !i.closest("details:not([open])")).map(
      (i) => [i.getAttribute("src"), i.getBoundingClientRect().width, i.naturalWidth]),
    // every static figure and the link a tap follows (null: not inside a link)
    figure_links: [...d.querySelectorAll("article figure img, article .cell_output img")].map(
      (i) => [i.getAttribute("src"), i.closest("a") ? i.closest("a").getAttribute("href") : null]),
    overflowing: wide(d),
    // where the clutter sits: parameter toggles, "As published" boxes, warnings (page y, px)
    clutter: [...d.querySelectorAll("article summary, article .admonition.warning")].filter(
      (e) => e.tagName !== "SUMMARY" || /parameters|As published/.test(e.textContent)).map(
      (e) => [e.textContent.trim().slice(0, 40), Math.round(abs(e))]),
  };
}
"""

_PAGE = """<!doctype html><html><body style="margin:0"><pre id="out">pending</pre>
<iframe id="f" style="width:%dpx;height:1200px;border:0"></iframe>
<script>%s
const pages = %s; const res = {}; let i = 0;
function next() {
  if (i >= pages.length) {
    document.getElementById("out").textContent = JSON.stringify(res); return; }
  const f = document.getElementById("f");
  f.onload = () => setTimeout(() => { res[pages[i]] = probe(f.contentDocument); i++; next(); },
                              1500);
  f.src = pages[i];
}
next();
</script></body></html>"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    probe_page = b""

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        if self.path.startswith("/_probe.html"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(self.probe_page)
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


def probe(browser: str, root: Path, pages: list[str], width: int = WIDTH) -> dict[str, dict]:
    """Each of ``pages`` (paths under ``root``, the built HTML) laid out at ``width`` px
    (default :data:`WIDTH`): page -> the facts :data:`_JS` reports."""
    body = (_PAGE % (width, _JS, json.dumps(pages))).encode()
    handler = type("H", (_Handler,), {"probe_page": body})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as profile:
            out = subprocess.run(
                [
                    browser,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    f"--user-data-dir={profile}",
                    f"--window-size={max(width, WIDTH) + 20},1200",
                    "--virtual-time-budget=120000",
                    "--dump-dom",
                    f"http://127.0.0.1:{server.server_port}/_probe.html",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
    finally:
        server.shutdown()
    found = re.search(r'<pre id="out">(.*?)</pre>', out.stdout, re.S)
    if not found or found.group(1) == "pending":
        raise RuntimeError(f"probe did not finish: {out.stderr[-1000:]}")
    return json.loads(html.unescape(found.group(1)))


def rgb(text: str) -> tuple[float, float, float]:
    """``rgb(r, g, b)`` / ``rgba(...)`` as three 0-255 numbers."""
    return tuple(float(x) for x in re.findall(r"[\d.]+", text)[:3])  # type: ignore[return-value]


def contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two CSS colours."""

    def lum(c: tuple[float, float, float]) -> float:
        ch = [v / 255 for v in c]
        ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]

    a, b = sorted((lum(rgb(fg)), lum(rgb(bg))), reverse=True)
    return (a + 0.05) / (b + 0.05)


if __name__ == "__main__":
    args = sys.argv[2:]
    if args and args[0].isdigit():  # first argument after HTML_DIR may be a width (px)
        facts = probe("chromium", Path(sys.argv[1]), args[1:], int(args[0]))
    else:
        facts = probe("chromium", Path(sys.argv[1]), args)
    for page, f in facts.items():
        f.pop("text")
        print(page, json.dumps(f))


#: Limits a reader's page must keep at :data:`WIDTH` px (px): issue 37's 9,000. Measured in
#: Chromium on 2026-12-06: decode-parity 7,076, prefill-gain 7,535, context-latency 8,348,
#: single-user 8,541, eplb-balance 8,757, rack-scaling 8,897.
CHAPTER_MAX = 9_000
#: A phone's width (px): no page may scroll sideways there.
NARROW = 400
#: Smallest figure text (CSS px): at :data:`WIDTH` (a laptop) and at :data:`NARROW` (a phone,
#: where a reader can zoom; below 7 px no one reads without it).
FIGURE_TEXT_MIN = {WIDTH: 11.0, NARROW: 7.0}
#: The landing page: one row per claim as the write-up makes it (derived figures in their
#: parent's row), each with its decisive finding and certainty (issue 31), in the test build
#: with its extra "this run, shipped recordings" column.
LANDING_MAX = 2_500
FIRST_SCREEN = 1_200
_REPRS = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-f]+)?>|IPython\.core\.display")
_SMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def plain(text: str) -> str:
    """Whitespace collapsed and smart quotes made plain: how page and expected text compare."""
    return " ".join(str(text).split()).translate(_SMART)


def defects(
    page: str, facts: dict, sentences: list[str] = (), max_height: int = CHAPTER_MAX
) -> list[str]:
    """What a reader would trip over on one probed page (empty when none): an object's repr
    or a raw DataFrame shown, a page taller than ``max_height``, a conclusion sentence missing
    from the first screen below the title (``sentences``: every one must be in the conclusion
    box, which must end within :data:`FIRST_SCREEN` px of the title), a figure whose alt text
    is its file path, a caption at less than body-text contrast, no usable right-hand
    contents."""
    out = []
    text = facts.get("text") or ""
    for m in _REPRS.finditer(text):
        out.append(f"{page}: object repr shown: {m.group(0)}")
    if facts.get("dataframes"):
        out.append(f"{page}: {facts['dataframes']} raw DataFrame table(s)")
    if facts["height"] > max_height:
        out.append(f"{page}: {facts['height']:,} px tall, over {max_height:,}")
    if sentences:
        box = plain(facts.get("conclusion") or "")
        top = facts.get("title_top") or 0
        bottom = facts.get("conclusion_bottom")
        if bottom is None:
            out.append(f"{page}: no conclusion under the title")
        elif bottom - top > FIRST_SCREEN:
            out.append(f"{page}: conclusion ends {bottom - top:,.0f} px below the title")
        for s in sentences:
            if plain(s) not in box:
                out.append(f"{page}: conclusion sentence not in the first screen: {s[:60]}")
    for src, alt in facts.get("images", []):
        if not alt.strip() or alt == src or re.search(r"\.(png|svg|jpe?g)$", alt.strip()):
            out.append(f"{page}: alt text is a file path or empty: {alt[:60]!r}")
    body = facts.get("body_colour")
    bg = facts.get("background") or "rgb(255, 255, 255)"
    if body:
        need = contrast(body, bg) - 0.05
        for c in facts.get("caption_colours", []):
            if c and contrast(c, bg) < need:
                out.append(f"{page}: caption {c} below body-text contrast ({body})")
    if facts.get("images") and (facts.get("toc_width", 0) <= 0 or facts.get("toc_links", 0) < 2):
        out.append(f"{page}: the right-hand contents is not usable")
    out += order_defects(page, facts)
    return out


#: The section after the evidence that holds a chapter's provenance and parameters.
PROVENANCE = "Where the numbers come from"


def order_defects(page: str, facts: dict) -> list[str]:
    """A chapter out of reading order (empty when in order, or not a chapter): the conclusion
    box first, Definitions before the evidence, the parameter toggles and "As published" boxes
    only in the provenance section after the evidence, and no warning before the evidence (a
    caution about a reading may sit beside it)."""
    heads = {name.rstrip("#").strip(): y for name, y in facts.get("sections", [])}
    if "Definitions" not in heads or "The evidence" not in heads:
        return []
    out = []
    conc = facts.get("conclusion_top")
    if conc is None or conc > heads["Definitions"]:
        out.append(f"{page}: the conclusion does not come before the definitions")
    if heads["Definitions"] > heads["The evidence"]:
        out.append(f"{page}: the definitions come after the evidence")
    after = heads.get(PROVENANCE)
    for what, y in facts.get("clutter", []):
        warning = what.startswith("Warning")
        if y < heads["The evidence"] or (not warning and (after is None or y < after)):
            out.append(f"{page}: {what!r} at {y} px, before the evidence and provenance")
    return out


def layout_defects(
    page: str, facts: dict, width: int, png: Callable[[str], dict[str, float]]
) -> list[str]:
    """What a reader at ``width`` px would trip over in a page's layout (empty when none): the
    page scrolls sideways (what sticks out is named), a figure narrower than the text column,
    a figure whose smallest text renders under :data:`FIGURE_TEXT_MIN` px. ``png(src)``: the
    figure's :func:`rackbook.book.plotting.png_facts` (its pixel width, smallest font in pt
    and dpi), so that its text's rendered size is pt / 72 x dpi x shown width / pixel width."""
    from rackbook.book.plotting import rendered_font_px

    out = []
    if facts["scroll_width"] > facts["view_width"]:
        wide = "; ".join(facts.get("overflowing") or []) or "?"
        out.append(
            f"{page} at {width} px: scrolls sideways ({facts['scroll_width']} px wide): {wide}"
        )
    column = facts.get("column_width") or 0
    for src, shown, _natural in facts.get("figures", []):
        if shown < 0.97 * column:  # the column's width, less a margin the theme may keep
            out.append(
                f"{page} at {width} px: figure {src} {shown:.0f} px in a {column:.0f} px column"
            )
        f = png(src)
        if "min_pt" not in f:
            out.append(f"{page}: figure {src} does not say its smallest font (figure_png)")
            continue
        px = rendered_font_px(f, shown)
        need = FIGURE_TEXT_MIN.get(width, FIGURE_TEXT_MIN[WIDTH])
        if px < need:
            out.append(f"{page} at {width} px: figure {src} text {px:.1f} px, under {need:g}")
    return out


def enlarge_defects(page: str, facts: dict, root: Path) -> list[str]:
    """Figures of ``page`` a reader cannot tap to enlarge (empty when none): each figure image
    must sit inside a link whose target, resolved against the page, is a file of the build
    (``root``) and is the image's own file (the full-size PNG or SVG the page scales down)."""
    out = []
    base = (root / page).parent
    for src, href in facts.get("figure_links", []):
        if not href:
            out.append(f"{page}: figure {src} is not inside a link to its full-size image")
            continue
        target = (base / href.split("#")[0].split("?")[0]).resolve()
        if not target.is_file() or root.resolve() not in target.parents:
            out.append(f"{page}: figure {src} links to {href}, not a file of the build")
        elif target != (base / src).resolve():
            out.append(f"{page}: figure {src} links to {href}, not its own image")
    return out
