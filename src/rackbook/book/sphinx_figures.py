"""Sphinx extension for the book's figures: ``plotly.min.js`` from the installed ``plotly`` into
``_static`` for pages holding a Plotly figure (offline, no CDN); each static figure linked to its
full-size ``_images/`` copy (Sphinx's ``html_scaled_image_link`` links only sized images)."""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes

#: The script's name under ``_static``.
SCRIPT = "plotly.min.js"


def plotly_js() -> Path:
    """The ``plotly.min.js`` the installed ``plotly`` package ships."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / SCRIPT


def _page(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if "plotly-graph-div" in str(context.get("body", "")):
        app.add_js_file(SCRIPT)


def _copy(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(plotly_js(), static / SCRIPT)


#: Class of the links this extension adds (``book/_static/rackbook.css``).
CLASS = "rb-enlarge"


def link_images(app: Any, doctree: nodes.document, docname: str) -> int:
    """Wrap each unlinked image in a link to its ``_images/`` copy (not remote, data or
    ``no-scaled-link`` ones); returns how many."""
    from sphinx.util.osutil import relative_uri

    if getattr(app.builder, "format", "") != "html":
        return 0
    images = app.env.images
    imgpath = relative_uri(app.builder.get_target_uri(docname), "_images")
    wrapped = 0
    for node in list(doctree.findall(nodes.image)):
        if isinstance(node.parent, nodes.reference) or "no-scaled-link" in node["classes"]:
            continue
        src = str((node.get("candidates") or {}).get("*", node["uri"]))  # as env knows it
        if src not in images:
            continue
        ref = nodes.reference("", "", internal=True, classes=[CLASS])
        ref["refuri"] = posixpath.join(imgpath, images[src][1])
        ref["reftitle"] = "Open the full-size image"
        node.replace_self(ref)
        ref.append(node)
        wrapped += 1
    return wrapped


def setup(app: Any) -> dict[str, Any]:
    """Register the page, build-finished and doctree handlers."""
    app.connect("html-page-context", _page)
    app.connect("build-finished", _copy)
    app.connect("doctree-resolved", link_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
