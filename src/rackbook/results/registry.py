"""The results by name in the book's order (:data:`rackbook.paths.RESULTS` registers one):
``REGISTRY``, name -> module ``rackbook.results.NAME`` (``-`` as ``_``; the contract of
:mod:`rackbook.results.contract`), and :class:`ChapterTable`, the tables chapters declare."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from rackbook.paths import RESULTS


def _module(name: str) -> Any:
    return importlib.import_module(f"rackbook.results.{name.replace('-', '_')}")


class ChapterTable(Mapping[str, Any]):
    """The union of the table ``attr`` (``DECISIVE``, ``READING_NOTES``, ``RERUN_NEEDS``,
    ``RERUN_ARGS``) chapters declare, by claim id or result name; merged on first use."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    @functools.cached_property
    def _entries(self) -> dict[str, Any]:
        return {k: v for n in RESULTS for k, v in getattr(_module(n), self.attr, {}).items()}

    def __getitem__(self, key: str) -> Any:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def __getattr__(name: str) -> Any:
    """``REGISTRY`` (PEP 562), built when first asked for."""
    if name == "REGISTRY":
        return {n: _module(n) for n in RESULTS}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
