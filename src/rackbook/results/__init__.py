"""One module per result of the book (``decode_parity``, ``rack_scaling``, ``prefill_gain``,
``eplb_balance``, ``context_latency``, ``single_user``), each a plugin keeping the contract of
:mod:`rackbook.results.contract`, named in :data:`REGISTRY` (name -> module); plus what they
share: the headline format (``headline``) and the verdict helpers (``verdicts``).

``REGISTRY`` is loaded on first use (:mod:`rackbook.results.registry`): importing the six results
takes seconds, which the modules that need only ``headline`` should not pay."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``REGISTRY``, loaded on first use (PEP 562)."""
    if name == "REGISTRY":
        from rackbook.results.registry import REGISTRY

        return REGISTRY
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
