"""The contract every result module keeps (``rackbook.results.REGISTRY`` names the six):
``RESULT`` (the notebook's and trace folder's name), ``Params`` (a dataclass built with
``Params.from_mapping``, every field defaulted), ``analyse(trace, params, registry=None)`` (an
:class:`Analysis`), ``outcome(analysis)`` (the :class:`rackbook.results.headline.Outcome` that
writes the headline JSON) and ``FIGURES`` (the glued figures' names, in order; the book draws
them, ``rackbook.book.figures.<result>.FIGURES``, which results never import).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from rackbook.core.traces import Trace
from rackbook.inputs.claims import Registry
from rackbook.results import headline


@runtime_checkable
class Analysis(Protocol):
    """What ``analyse`` returns: the trace, where it ran, the readings, the glued values."""

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
