"""vLLM's detailed result JSON read in bounded memory: per-request lists straight into arrays.

A detailed result of 100k requests x 128 tokens holds 12.7M inter-token gaps, most of the
file's bytes. The file is read by :mod:`rackbook.core.jsonstream` a piece at a time: the
per-request lists (:data:`PER_REQUEST`) become float64 arrays and ``itls`` a
:class:`RaggedGaps` (lengths and values), each piece parsed by orjson and copied into arrays
before the next is read; ``generated_texts`` (the outputs' text, not used) is checked and
dropped; the rest is kept as parsed. So memory is the arrays (8 bytes a number, 16 a gap with
its request row) plus a fixed budget, whatever the file's size.

Counts are bounded as they are read, before memory grows: once ``input_lens`` is read (vLLM
writes it first), no per-request list may be longer; before it, none past
``BOUNDS["requests"]``; the gaps of one request at most ``BOUNDS["context"]``, of all at most
``BOUNDS["gaps"]`` (:mod:`rackbook.limits`).
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
