"""The contract every result of the book keeps: a result is a plugin (one module per result,
``rackbook.results.REGISTRY`` names the six).

A result module provides:

- ``RESULT``: its name (``rack-scaling``), the notebook's and the trace folder's name;
- ``Params``: a dataclass of the analysis parameters, built from the notebook's parameters with
  ``Params.from_mapping`` (:class:`rackbook.results.headline.Params`); every field has a default;
- ``analyse(trace, params, registry=None)``: the chapter's analysis of a trace (an
  :class:`Analysis`); ``registry`` is the claims registry (default ``data/claims.yaml``);
- ``outcome(analysis)``: what the chapter concludes, one :class:`rackbook.results.headline.Outcome`
  for all six (its headlines, the three readings of each claim, the flips), which writes the
  headline JSON;
- ``FIGURES``: the names of the figures the chapter glues, in the order the chapter shows them.
  They are drawn by the book (``rackbook.book.figures.<result>.FIGURES``: name -> function of the
  analysis), which results never import: results sit below the book in the layers
  (``tests/test_layering.py``), and drawing needs the book's plotting style.

An :class:`Analysis` carries the three readings of each claim in ``readings`` (a list of
:class:`rackbook.results.headline.ClaimReading`, the same type in all six) and the numbers and
words the chapter's prose quotes in ``values()`` (glued by name).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from rackbook.core.traces import Trace
from rackbook.inputs.claims import Registry
from rackbook.results import headline


@runtime_checkable
class Analysis(Protocol):
    """What ``analyse`` returns: the trace it read, its parameters, the hardware the trace ran
    on (words), the three readings of each claim, and the values the prose quotes."""

    trace: Trace
    hardware: str
    readings: list[headline.ClaimReading]

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        ...


@runtime_checkable
class Result(Protocol):
    """A result of the book (a module): see the module's docstring."""

    RESULT: str
    Params: type[headline.Params]
    FIGURES: tuple[str, ...]

    def analyse(self, trace: Trace, params: Any = ..., registry: Registry | None = None) -> Any:
        """The chapter's :class:`Analysis` of ``trace``."""
        ...

    def outcome(self, analysis: Any) -> headline.Outcome:
        """What the chapter concludes from ``analysis``."""
        ...
