"""Sphinx extension: ``plotly.min.js`` from the installed ``plotly`` into ``_static``, added
only to pages holding a Plotly figure (offline, no CDN)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

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


def setup(app: Any) -> dict[str, Any]:
    """Register the page and build-finished handlers."""
    app.connect("html-page-context", _page)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
