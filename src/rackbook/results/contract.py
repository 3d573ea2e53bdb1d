"""The contract every result module keeps: ``RESULT`` (its name), ``Params`` (a dataclass, every
field defaulted), ``analyse`` (an :class:`Analysis`), ``outcome`` (the headline's
:class:`~rackbook.results.headline.Outcome`) and ``FIGURES`` (glued figures, drawn by the book)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from rackbook.core.traces import Trace
from rackbook.inputs.claims import Registry
from rackbook.results import headline


@runtime_checkable
class Analysis(Protocol):
    trace: Trace
    hardware: str
    readings: list[headline.ClaimReading]

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        ...


@runtime_checkable
class Result(Protocol):
    RESULT: str
    Params: type[headline.Params]
    FIGURES: tuple[str, ...]

    def analyse(self, trace: Trace, params: Any = ..., registry: Registry | None = None) -> Any: ...

    def outcome(self, analysis: Any) -> headline.Outcome: ...
