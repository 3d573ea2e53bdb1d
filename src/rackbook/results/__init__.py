"""One module per result of the book, each keeping :mod:`rackbook.results.contract`, named in
:data:`REGISTRY` (name -> module, loaded on first use: importing the six takes seconds); plus
what they share (``headline``, ``verdicts``, the published evidence)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        from rackbook.results.registry import RESULTS, module

        return {n: module(n) for n in RESULTS}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
