"""How certain the book is about each claim, graded as a GRADE summary-of-findings table does
from its readings: 4 a run on its hardware, 3 like-for-like published, 2 near points or an exact
derivation, 1 physics bounds only; each named reason moves it one level, within 1-4."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rackbook.core.basis import NAMES
from rackbook.core.units import ratio_text
from rackbook.inputs.claims import Claim, Registry, load_claims

#: The grades, lowest first (level 1 to 4).
GRADES: tuple[str, ...] = (
    "physics bounds only",
    "near evidence or exact derivation",
    "like-for-like published",
    "measured on the claim's hardware",
)
#: This-run verdicts of a trace on the claim's hardware; published verdicts that place a figure.
TESTED: tuple[str, ...] = ("consistent", "inconsistent")
PLACED: tuple[str, ...] = ("within", "above", "below")
#: What a published margin resting on cost models' prices ends with (evidence writes it).
MODELLED_NOTE = " (modelled prices, not measurements)"
#: How a near point's difference is named (else "another" and the part's name).
DIFFERENCE_WORDS = {"hardware": "analogue hardware", "counting": "other counting"}


@dataclass(frozen=True)
class Certainty:
    """A claim's graded certainty: level 1-4 and the reasons as (label, words)."""

    claim_id: str
    level: int
    why: tuple[tuple[str, str], ...]

    @property
    def grade(self) -> str:
        return GRADES[self.level - 1]

    @property
    def reasons(self) -> tuple[str, ...]:
        """Each reason as one phrase: "held back by: analogues only"."""
        return tuple(f"{label}: {words}" for label, words in self.why)

    @property
    def note(self) -> str:
        """The reasons as one footnote: "rests on 6 near published points; held back by ..."."""
        shown = [r for r in self.why if r != ("rests on", self.grade)] or list(self.why)
        return "; ".join(f"{label} {words}" for label, words in shown)

    def to_dict(self) -> dict[str, Any]:
        reasons = list(self.reasons)
        return dict(claim_id=self.claim_id, grade=self.grade, level=self.level, reasons=reasons)


Reason = tuple[str, str]


def _reason(label: str, words: str, aside: str = "") -> Reason:
    return label, f"{words} ({aside})" if aside else words


def field(r: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``r[key]`` where it is a mapping, else empty."""
    v = r.get(key)
    return v if isinstance(v, Mapping) else {}


def entries(r: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A published reading's ``by_basis`` entries."""
    return [e for e in r.get("by_basis") or [] if isinstance(e, Mapping)]


def _entries(r: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A published reading's ``by_basis`` entries not ruled out, or itself on one basis."""
    return [e for e in entries(r) if not e.get("ruled_out")] or ([] if entries(r) else [r])


def _difference(d: Mapping[str, Any]) -> str:
    """A ``differing`` entry as words: ``analogue hardware (GB300, the claim B300)``."""
    part, point, claim = str(d.get("part")), d.get("point"), d.get("claim")
    if part == "speculation" and "simulated" in (point, claim):
        return "simulated acceptance"
    words = DIFFERENCE_WORDS.get(part, f"another {NAMES.get(part, part)}")
    point, claim = (f"{int(str(v)):,}" if str(v).isdigit() else str(v) for v in (point, claim))
    return words if d.get("claim") is None else f"{words} ({point}, the claim {claim})"


def side(lo: object, hi: object) -> str:
    """``inside`` (points on both sides, or at it), ``above``, ``below`` or ``-`` (no ratios)."""
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return "-"
    return "above" if lo > 1 else "below" if hi < 1 else "inside"


def _near_bases(near: Mapping[str, Any]) -> tuple[int, Reason | None]:
    """Near points on both sides of the claim on one basis: no move; above and below: -1."""
    by: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for b in (b for b in near.get("per_basis") or [near] if isinstance(b, Mapping)):
        where = side(b.get("ratio_low"), b.get("ratio_high"))
        by.setdefault(where, []).append((str(b.get("basis") or "its basis"), b))
    if "inside" in by:
        n, b = by["inside"][0]
        span = f"the claim {ratio_text(b['ratio_low'])} to {ratio_text(b['ratio_high'])} them"
        return 0, _reason("corroborated by", f"near points on both sides of the claim as {n}", span)
    if "above" in by and "below" in by:
        above, below = by["above"][0][0], by["below"][0][0]
        apart = f"the claim above every near point as {above}, below every one as {below}"
        return -1, _reason("lowered by", "an unknown basis", apart)
    return 0, None


def _evidence(
    pub: Mapping[str, Any], near: Mapping[str, Any], derived: Mapping[str, Any]
) -> tuple[int, list[Reason]]:
    entries = _entries(pub) if pub else []
    placed = [e for e in entries if e.get("verdict") in PLACED]
    if placed:
        out = [_reason("rests on", "like-for-like published figures")]
        if all(e.get("modelled") for e in placed):
            why = "a cost model's rates, not a listed price"
            out.append(_reason("lowered by", "modelled price", why))
        if len(placed) < len(entries):
            why = f"placed on {len(placed)} of its {len(entries)} plausible bases"
            out.append(_reason("lowered by", "an unknown basis", why))
        return 4 - len(out), out
    if near.get("points") and near.get("verified"):
        out = [_reason("rests on", f"{len(near['points'])} near published points")]
        differing = field(pub, "closest").get("differing") or []
        diffs = [_difference(d) for d in differing if isinstance(d, Mapping)]
        out += [("held back by", ", ".join(diffs))] if diffs else []
        change, reason = _near_bases(near)
        return 2 + change, out + ([reason] if reason else [])
    if derived.get("exact"):
        source = derived.get("from") or "primary specifications"
        return 2, [_reason("rests on", f"exact derivation from {source}")]
    return 1, [_reason("rests on", "physics bounds only")]


def certainty(
    readings: Iterable[Mapping[str, Any]], claim: Claim | None = None, claim_id: str = ""
) -> Certainty:
    """The certainty of one claim from its readings (headline JSON dicts)."""
    rs = {str(r.get("reading")): r for r in readings}
    cid = claim.id if claim is not None else claim_id
    run, pub, phys = rs.get("this run", {}), rs.get("published", {}), rs.get("physics", {})
    if run.get("verdict") in TESTED:
        margin = str(run.get("margin") or "-")
        why = _reason("rests on", "a run on the claim's hardware", "" if margin == "-" else margin)
        return Certainty(cid, 4, (why,))
    near, derived = field(pub, "near"), field(phys, "derived")
    level, reasons = _evidence(pub, near, derived)
    placed = reasons[0][1] == "like-for-like published figures"
    stated = "a primary text stating the same figure"
    confirmed = bool(derived.get("exact")) and claim is not None
    if confirmed and claim.source.status != "not-located":  # type: ignore[union-attr]
        level += placed  # without a placing, "confirmed by" moves nothing
        reasons.append(_reason("raised by" if placed else "confirmed by", stated, "exact match"))
    elif level < 3 and not placed:
        closest = field(pub, "closest")
        if near.get("points") and not near.get("verified"):
            reasons.append(
                _reason("held back by", "near points read only second-hand (NOT VERIFIED)")
            )
        elif closest and closest.get("kind") == "analogue" and not near.get("points"):
            reasons.append(_reason("held back by", "analogues only"))
        elif not closest and not near:
            reasons.append(_reason("held back by", "no comparable published point"))
    if run.get("verdict") == "untested" and run.get("synthetic"):
        reasons.append(_reason("held back by", "a synthetic input"))
    return Certainty(cid, max(1, min(4, level)), tuple(reasons))


def certainties(
    result: str, readings: Iterable[Mapping[str, Any]], registry: Registry | None = None
) -> list[Certainty]:
    """The certainty of each claim of ``result`` with readings, in registry order."""
    rs, claims = list(readings), (registry or load_claims()).for_result(result)
    mine = [(c, [r for r in rs if r.get("claim_id") == c.id]) for c in claims]
    return [certainty(of, c) for c, of in mine if of]
