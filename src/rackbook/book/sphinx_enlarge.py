"""Sphinx extension: each static figure links to its full-size ``_images/`` copy (class
:data:`CLASS`), which Sphinx's ``html_scaled_image_link`` does only for sized images."""

from __future__ import annotations

import posixpath
from typing import Any

from docutils import nodes

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
    app.connect("doctree-resolved", link_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
