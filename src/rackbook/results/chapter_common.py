"""What every chapter module does the same way: readings, where a value was measured, outcome."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rackbook.results import headline, verdicts


def reading(
    claim_id: str, which: str, verdict: str, margin: str, clauses: Iterable[str], **kw: Any
) -> headline.ClaimReading:
    """A ``which`` reading whose reason is the non-empty ``clauses`` joined by "; "."""
    kept = tuple(c for c in clauses if c)
    reason = "; ".join(kept)
    return headline.ClaimReading(claim_id, which, verdict, margin, reason, clauses=kept, **kw)


def where(a: Any, kind: str = "measured") -> dict[str, Any]:
    return dict(kind=kind, hardware=a.hardware, trace_ids=[a.trace.trace_id])


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
