"""vLLM's detailed result JSON read in bounded memory (:mod:`rackbook.core.jsonstream`): the
per-request lists (:data:`PER_REQUEST`) straight into float64 arrays, ``itls`` (most of the
file: 12.7M gaps for 100k requests x 128 tokens) into a :class:`RaggedGaps`, a piece at a time;
``generated_texts`` checked and dropped; the rest kept as parsed. Counts are bounded as read:
once ``input_lens`` is read (vLLM writes it first) no per-request list may be longer, before it
none past ``BOUNDS["requests"]``; gaps at most ``BOUNDS["context"]`` per request and
``BOUNDS["gaps"]`` in all (:mod:`rackbook.limits`).
"""

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
    """The parsed result: :data:`PER_REQUEST` lists as float64 arrays, ``itls`` as
    :class:`RaggedGaps`, ``generated_texts`` dropped (a key whose value is not a list is kept
    as parsed, for the importer to name). Any other top level is returned as parsed. Every
    problem of the file is one :class:`~rackbook.errors.InputError`."""
    return jsonstream.load(path, KINDS, counts())
