"""The results of the book by name, in the book's order (``rackbook.results.REGISTRY``): each
the module or package ``rackbook.results.NAME`` (``-`` as ``_``) of a name in
:data:`rackbook.paths.RESULTS`, keeping the contract of :mod:`rackbook.results.contract`."""

from __future__ import annotations

import importlib
from typing import cast

from rackbook.paths import RESULTS
from rackbook.results.contract import Result

#: name -> result module, in the book's order.
REGISTRY: dict[str, Result] = {
    name: cast(Result, importlib.import_module(f"rackbook.results.{name.replace('-', '_')}"))
    for name in RESULTS
}
