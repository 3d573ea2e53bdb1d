"""One module per result (:data:`REGISTRY`, loaded on first use), each keeping the contract of
:mod:`rackbook.results.registry`; plus what they share (``headline``, the published evidence)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        from rackbook.results.registry import RESULTS, module

        return {n: module(n) for n in RESULTS}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
