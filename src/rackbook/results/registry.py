"""The six results of the book, by name, in the book's order (``rackbook.results.REGISTRY``):
each a module that keeps the contract of :mod:`rackbook.results.contract`."""

from __future__ import annotations

from rackbook.results import (
    context_latency,
    decode_parity,
    eplb_balance,
    prefill_gain,
    rack_scaling,
    single_user,
)
from rackbook.results.contract import Result

#: name -> result module, in the book's order (:data:`rackbook.paths.RESULTS`).
REGISTRY: dict[str, Result] = {
    m.RESULT: m  # type: ignore[misc]
    for m in (decode_parity, rack_scaling, prefill_gain, eplb_balance, context_latency, single_user)
}
