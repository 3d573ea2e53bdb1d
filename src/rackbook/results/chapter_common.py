"""What every chapter does the same way: preamble, readings, headlines, outcome."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from rackbook.core import validity
from rackbook.core.provenance import hardware_label
from rackbook.core.traces import Trace
from rackbook.inputs.claims import Registry, load_claims
from rackbook.results import evidence, headline, verdicts
from rackbook.results.headline import NOT_COMPARABLE


class Chapter:
    """A chapter's analysis of ``trace`` at ``params`` (None: the notebook cell's defaults) against
    ``registry`` (None: data/claims.yaml): the trace without flagged requests (as given where not
    ``SCREENED``) and its hardware label, then :meth:`analyse` does the rest."""

    PARAMS: Any  # the result's headline.params
    SCREENED = True
    readings: list[headline.ClaimReading]

    def __init__(
        self, trace: Trace, params: Any = None, registry: Registry | None = None, **kw: Any
    ) -> None:
        self.params = p = self.PARAMS() if params is None else params
        self.trace = validity.valid_trace(trace)[0] if self.SCREENED else trace
        self.hardware = hardware_label(trace.run)
        self.analyse(p, registry or load_claims(), **kw)

    def analyse(self, p: Any, reg: Registry) -> None:
        """Everything the chapter derives from :attr:`trace` and ``p``, ending in ``readings``."""
        raise NotImplementedError


def reading(
    claim_id: str, which: str, verdict: str, margin: str, clauses: Iterable[str], **kw: Any
) -> headline.ClaimReading:
    """A ``which`` reading whose reason is the non-empty ``clauses`` joined by "; "."""
    reason = "; ".join(c for c in clauses if c)
    return headline.ClaimReading(claim_id, which, verdict, margin, reason, **kw)


def readings(
    registry: Registry, *pairs: tuple[headline.ClaimReading, headline.ClaimReading]
) -> list[headline.ClaimReading]:
    """Per claim's (physics, this run) pair: physics, the published evidence, this run."""
    return [
        x for p, run in pairs for x in (p, evidence.reading(p.claim_id, registry=registry), run)
    ]


def modelled(
    claim_id: str, name: str, value: Any, unit: str, definition: str, verdict: str, reason: str
) -> headline.Headline:
    """A modelled headline value of ``claim_id`` with its own verdict and reason."""
    return headline.Headline(name, value, unit, definition, claim_id, "modelled", verdict, reason)


def headlines(
    rows: Iterable[tuple[Any, ...]], kind: str = "modelled", **where: Any
) -> list[headline.Headline]:
    """One headline per row: (reading it speaks to, with its verdict and reason, or an unclaimed
    value's reason; name, value, unit, definition)."""
    return [
        headline.Headline(name, value, unit, what, r.claim_id, kind, r.verdict, r.reason, **where)
        if isinstance(r, headline.ClaimReading)
        else headline.Headline(name, value, unit, what, None, kind, NOT_COMPARABLE, r, **where)
        for r, name, value, unit, what in rows
    ]


def glue(a: Any, table: str) -> dict[str, Any]:
    """The values a chapter's prose quotes that are attributes of ``a``: per word of ``table``,
    ``name=dotted.attribute`` (or ``name``, the attribute of that name)."""
    rows = (word.partition("=") for word in table.split())
    return {name: operator.attrgetter(path or name)(a) for name, _, path in rows}


def where(a: Any, kind: str = "measured") -> dict[str, Any]:
    """A headline's kind, its traces and (measured only) the hardware it was measured on."""
    hardware = a.hardware if kind == "measured" else None
    return dict(kind=kind, hardware=hardware, trace_ids=[a.trace.trace_id])


def outcome(
    result: str,
    a: Any,
    headlines: list[headline.Headline],
    flips: list[str],
    names: str,
    trace_ids: list[str] | None = None,
    **resolved: Any,
) -> headline.Outcome:
    """The chapter's outcome of analysis ``a``; ``names``: the parameters it reports."""
    parameters = verdicts.parameters(a.params, names, **resolved)
    tid = trace_ids or [a.trace.trace_id]
    return headline.Outcome(result, headlines, a.readings, flips, tid, parameters, a.hardware)
