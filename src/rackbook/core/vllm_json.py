"""vLLM's detailed result JSON in bounded memory (:mod:`rackbook.core.jsonstream`): per-request
lists as float64 arrays, ``itls`` as :class:`RaggedGaps`, ``generated_texts`` dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rackbook import limits
from rackbook.core import jsonstream

#: ``itls`` as read: gaps per request and all gaps in request order (seconds).
RaggedGaps = jsonstream.Ragged
#: Lists of one number per request, read into float64 arrays.
PER_REQUEST = ("input_lens", "output_lens", "ttfts", "latencies", "start_times")
KINDS = {
    **{k: jsonstream.NUMBERS for k in PER_REQUEST},
    "itls": jsonstream.RAGGED,
    "generated_texts": jsonstream.SKIP,
}


def load_detailed(path: str | Path) -> dict[str, Any] | Any:
    """The parsed result (a non-list value kept as parsed, for the importer to name): lists of at
    most ``BOUNDS["requests"]`` entries, gaps at most ``BOUNDS["context"]`` per request and
    ``BOUNDS["gaps"]`` in all (the importer checks the lengths agree). Every problem is one
    InputError."""
    b = limits.BOUNDS  # read when called: tests lower the bounds
    counts = jsonstream.Counts(b["requests"], b["context"], b["gaps"])
    return jsonstream.load(path, KINDS, counts)
