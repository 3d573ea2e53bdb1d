"""vLLM's detailed result JSON in bounded memory (:mod:`rackbook.core.jsonstream`):
:data:`PER_REQUEST` lists as float64 arrays, ``itls`` as :class:`RaggedGaps`, ``generated_texts``
dropped. No list may be longer than ``input_lens`` (before it, ``BOUNDS["requests"]``); gaps at most
``BOUNDS["context"]`` per request and ``BOUNDS["gaps"]`` in all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rackbook import limits
from rackbook.core import jsonstream

#: ``itls`` as read: gaps per request and all gaps in request order (seconds).
RaggedGaps = jsonstream.Ragged

#: Lists of one number per request, read into float64 arrays.
PER_REQUEST = ("input_lens", "output_lens", "ttfts", "latencies", "start_times")
#: How each key of the result is read.
KINDS: dict[str, str] = {
    **{k: jsonstream.NUMBERS for k in PER_REQUEST},
    "itls": jsonstream.RAGGED,
    "generated_texts": jsonstream.SKIP,
}


def counts() -> jsonstream.Counts:
    """The bounds of the per-request lists (read when called: tests lower the bounds)."""
    return jsonstream.Counts(
        entries=limits.BOUNDS["requests"],
        inner=limits.BOUNDS["context"],
        total=limits.BOUNDS["gaps"],
        name="requests",
        same_length="input_lens",
    )


def load_detailed(path: str | Path) -> dict[str, Any] | Any:
    """The parsed result (typed lists as above; a non-list value kept as parsed for the importer to
    name). Every problem is one InputError."""
    return jsonstream.load(path, KINDS, counts())
