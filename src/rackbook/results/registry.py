""":func:`module` (a result's module ``rackbook.results.NAME``) and :class:`ChapterTable`, the
tables chapters declare."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from rackbook.paths import RESULTS


def module(name: str) -> Any:
    """The module of result ``name`` (imported on first use)."""
    return importlib.import_module(f"rackbook.results.{name.replace('-', '_')}")


class ChapterTable(Mapping[str, Any]):
    """The union of the table ``attr`` (``DECISIVE``...) chapters declare, merged on first use."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    @functools.cached_property
    def _entries(self) -> dict[str, Any]:
        return {k: v for n in RESULTS for k, v in getattr(module(n), self.attr, {}).items()}

    def __getitem__(self, key: str) -> Any:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
