"""rackbook.book.sphinx_figures: every figure links to its full-size image (a small Sphinx
build of two pages; the book's own figures are checked in Chromium by tests/test_browser.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from rackbook.book import sphinx_figures


def _png(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1), dpi=50)
    ax.plot([0, 1])
    fig.savefig(path)
    plt.close(fig)


def test_each_image_links_to_its_copy_and_links_are_kept(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    _png(src / "fig.png")
    (src / "conf.py").write_text('extensions = ["rackbook.book.sphinx_figures"]\n')
    (src / "index.rst").write_text(
        "T\n=\n\n.. image:: fig.png\n\n.. figure:: fig.png\n\n   A caption.\n\n"
        ".. image:: fig.png\n   :target: https://example.org/\n\n"
        ".. image:: fig.png\n   :class: no-scaled-link\n\n.. toctree::\n\n   sub/page\n"
    )
    (src / "sub" / "page.rst").write_text("S\n=\n\n.. image:: ../fig.png\n")
    out = tmp_path / "html"
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)],
        check=True,
        capture_output=True,
    )
    index = (out / "index.html").read_text()
    cls = f'class="{sphinx_figures.CLASS} reference internal image-reference"'
    # the plain image and the figure link to the copy; the one with a target keeps its target;
    # the one that opts out has no link
    assert index.count(cls) == 2
    assert re.findall(rf'<a {cls} href="([^"]+)"', index) == ["_images/fig.png"] * 2
    assert 'href="https://example.org/"' in index
    assert index.count("<img") == 4
    page = (out / "sub" / "page.html").read_text()
    (href,) = re.findall(rf'<a {cls} href="([^"]+)"', page)
    assert href == "../_images/fig.png"
    assert (out / "sub" / href).resolve().read_bytes() == (src / "fig.png").read_bytes()
