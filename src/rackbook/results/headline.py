"""Headline results: what each chapter concludes, and the JSON its last cell writes
(``DIR/RESULT.json``). Every claim gets three readings, kept apart, each in its own words
(:data:`VOCABULARY`): physics, published and this run."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rackbook import limits
from rackbook.core import jsonstream
from rackbook.core.fsio import atomic_write_json
from rackbook.core.units import ratio_text
from rackbook.errors import InputError
from rackbook.paths import RESULTS

#: The headline JSON's layout (2: each claim's ``certainty``).
FORMAT = 2
#: Set by ``rackbook run``: the staging folder the headline JSON is written into.
STAGE_ENV = "RACKBOOK_HEADLINE_STAGE"
#: How a number was obtained; the three readings in the book's order; each reading's words.
KINDS = ("measured", "modelled", "published", "synthetic")
READINGS = ("physics", "published", "this run")
VOCABULARY: dict[str, tuple[str, ...]] = {
    "physics": ("possible", "impossible", "undetermined"),
    "published": ("within", "above", "below", "none published", "depends on basis"),
    "this run": ("consistent", "inconsistent", "untested"),
}
#: The word for a figure the claim does not speak to; every verdict word.
NOT_COMPARABLE = "not comparable"
VERDICTS = (*(w for r in READINGS for w in VOCABULARY[r]), NOT_COMPARABLE)
#: The reading a headline's kind belongs to.
READING_OF_KIND = dict(modelled="physics", published="published", measured="this run")
READING_OF_KIND["synthetic"] = "this run"


def _require(ok: bool, problem: str) -> None:
    if not ok:
        raise ValueError(problem)


@dataclass
class Headline:
    """One headline value of a result (``hardware``: where a measured value was measured)."""

    name: str
    value: float | int | str | None
    unit: str
    definition: str
    claim_id: str | None
    kind: str
    verdict: str
    reason: str
    hardware: str | None = None
    trace_ids: list[str] = field(default_factory=list)

    @property
    def reading(self) -> str:
        return READING_OF_KIND[self.kind]

    def __post_init__(self) -> None:
        me = f"headline {self.name}"
        _require(self.kind in KINDS, f"{me}: kind {self.kind!r} not in {KINDS}")
        allowed = (*VOCABULARY[self.reading], NOT_COMPARABLE)
        _require(self.verdict in allowed, f"{me}: verdict {self.verdict!r} not in {allowed}")
        no_claim = self.claim_id is None and self.verdict != NOT_COMPARABLE
        _require(not no_claim, f"{me}: without a claim the verdict is not comparable")
        _require(self.kind != "measured" or bool(self.hardware), f"{me}: measured where?")
        finite = not isinstance(self.value, float) or math.isfinite(self.value)
        _require(finite, f"{me}: value is not finite")
        _require("\n" not in self.reason, f"{me}: reason must be one line")


@dataclass(frozen=True)
class ClaimReading:
    """One reading of one claim: verdict, the margin that decided it, a one-line reason, and the
    reading's evidence as data."""

    claim_id: str
    reading: str
    verdict: str
    margin: str
    reason: str
    sources: tuple[str, ...] = ()
    basis: str | None = None
    closest: dict[str, Any] | None = None
    by_basis: tuple[dict[str, Any], ...] = ()
    near: dict[str, Any] | None = None
    ruled_out: tuple[str, ...] = ()
    list_price: dict[str, Any] | None = None
    attainable: dict[str, Any] | None = None
    derived: dict[str, Any] | None = None
    ratio: float | None = None  # figure / ceiling its margin names
    on_bases: tuple[dict[str, Any], ...] = ()
    workload: dict[str, float] | None = None  # isl, osl: tokens per request
    condition: dict[str, str] | None = None
    synthetic: bool = False

    def __post_init__(self) -> None:
        me, words = f"{self.claim_id} {self.reading}", VOCABULARY.get(self.reading)
        _require(words is not None, f"{self.claim_id}: reading {self.reading!r} not in {READINGS}")
        _require(self.verdict in (words or ()), f"{me} verdict {self.verdict!r} not in {words}")
        _require("\n" not in self.reason + self.margin, f"{me}: reason or margin on two lines")
        if self.reading == "physics" and (why := contradiction(self.verdict, self.ratio)):
            raise ValueError(f"{self.claim_id}: physics {self.verdict!r} beside {why}")


def ceiling_margin(ratio: float, ceiling: str = "the ceiling") -> str:
    """A physics margin: ``3.94x the decode ceiling`` (figure / ceiling)."""
    return f"{ratio_text(ratio)} {ceiling}"


def contradiction(verdict: str, ratio: float | None) -> str | None:
    """Why a physics verdict contradicts its ratio to the ceiling, or None."""
    if ratio is None:
        return None
    if verdict in ("possible", "undetermined") and ratio > 1:
        return f"{ceiling_margin(ratio)!r}: a ratio above the ceiling"
    if verdict == "impossible" and ratio < 1:
        return f"{ceiling_margin(ratio)!r}: a ratio below the ceiling"
    return None


def by_claim(readings: list[ClaimReading], reading: str) -> dict[str, ClaimReading]:
    return {r.claim_id: r for r in readings if r.reading == reading}


@dataclass
class Outcome:
    """What a chapter concludes: headline values, each claim's three readings, what would flip
    each verdict (one line each), the traces read and the parameters."""

    result: str
    headlines: list[Headline]
    readings: list[ClaimReading]
    flips: list[str] = field(default_factory=list)
    trace_ids: list[str] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    hardware: str | None = None

    def __post_init__(self) -> None:
        _require(self.result in RESULTS, f"unknown result {self.result!r}")
        seen: dict[str, list[str]] = {}
        for r in self.readings:
            _require(r.claim_id.startswith(self.result + "."), f"{r.claim_id}: not {self.result}'s")
            seen.setdefault(r.claim_id, []).append(r.reading)
        for claim, got in seen.items():
            _require(sorted(got) == sorted(READINGS), f"{claim}: readings {got}, need {READINGS}")
        _require(not any("\n" in f for f in self.flips), f"{self.result}: a flip on two lines")

    def reading(self, claim_id: str, reading: str) -> ClaimReading:
        return next(r for r in self.readings if (r.claim_id, r.reading) == (claim_id, reading))

    def to_dict(self, source: str) -> dict[str, Any]:
        from rackbook.results.conclusions import certainties

        readings = [asdict(r) for r in self.readings]
        doc = dict(format=FORMAT, result=self.result, source=source, hardware=self.hardware)
        doc |= dict(trace_ids=sorted(set(self.trace_ids)), parameters=self.parameters)
        doc["created"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        graded = [c.to_dict() for c in certainties(self.result, readings)]
        doc |= dict(readings=readings, certainty=graded)
        return doc | dict(flips=list(self.flips), headlines=[asdict(h) for h in self.headlines])

    def write(self, out_dir: str | Path, source: str) -> Path:
        """``out_dir/RESULT.json`` (atomic; in :data:`STAGE_ENV`'s folder if set)."""
        folder = os.environ.get(STAGE_ENV) or out_dir
        return atomic_write_json(Path(folder) / f"{self.result}.json", self.to_dict(source))

    def markdown(self) -> str:
        """The headline values as a Markdown list, shown at the end of the chapter."""
        rows = []
        for h in self.headlines:
            unit = "" if h.unit in ("1", "") or h.value is None else f" {h.unit}"
            kind = h.kind + (f" on {h.hardware}" if h.hardware else "")
            claim = f"the claim {cell(_figure(h.claim_id))}" if h.claim_id else "no claim"
            rows.append(
                f"- `{h.name}` = **{cell(_fmt_value(h.value) + unit)}** ({cell(kind)}; {claim}: "
                f"*{h.verdict}*): {cell(h.reason)}"
            )
        return "\n".join(rows) + "\n"


class Params:
    """Base of a result's parameters, a frozen dataclass :func:`params` makes."""

    @classmethod
    def from_mapping(cls, names: Mapping[str, Any]) -> Any:
        fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in names.items() if k in fields})


def params(result: str, **extra: Any) -> Any:
    """``result``'s parameters: one field per name of its notebook's ``parameters`` cell, then
    ``extra`` (name=default); defaults the cell's, lists as tuples."""
    from rackbook.params import cell_defaults

    cell = cell_defaults(result) | extra
    tup = {k: tuple(v) if isinstance(v, list) else v for k, v in cell.items()}
    fields = [(k, Any, dataclasses.field(default=v)) for k, v in tup.items()]
    return dataclasses.make_dataclass("Params", fields, bases=(Params,), frozen=True)


def _fmt_value(v: float | int | str | None) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.0f}"  # never 3.327e+05
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "not recorded" if v is None else str(v)


def _figure(claim_id: str) -> str:
    from rackbook.inputs.claims import load_claims

    try:
        return load_claims().get(claim_id).value_text
    except InputError:
        return claim_id


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("$", "\\$")


#: How each reading is named in the book.
READING_TITLES = {"physics": "Physics", "published": "Published evidence", "this run": "This run"}


def read_result(path: str | Path) -> dict[str, Any]:
    """A headline JSON :meth:`Outcome.write` wrote, read in bounded memory."""
    path = Path(path)
    limits.input_file(path, missing="no headline JSON: run the result first", streamed=True)
    doc = jsonstream.load(path)
    if not isinstance(doc, dict):
        raise InputError(path, "-", f"must be a JSON object, got {type(doc).__name__}")
    for key in ("headlines", "readings"):
        if not isinstance(doc.get(key), list):
            got = f"must be a list, got {type(doc[key]).__name__}" if key in doc else "missing"
            raise InputError(path, key, got)
    for i, r in enumerate(doc["readings"]):
        if not isinstance(r, dict) or not {"claim_id", "reading", "verdict", "reason"} <= set(r):
            raise InputError(path, f"readings[{i}]", "needs claim_id, reading, verdict, reason")
    return doc


def summary_line(doc: dict[str, Any]) -> str:
    """Each claim's three verdicts in one line (``rackbook run``, ``rackbook list``)."""
    by_claim: dict[str, list[str]] = {}
    for r in doc["readings"]:
        by_claim.setdefault(r["claim_id"], []).append(f"{r['reading']} {r['verdict']}")
    return "; ".join(f"{c}: {', '.join(v)}" for c, v in by_claim.items())
