"""How certain the book is about each claim, graded as a GRADE / Cochrane summary-of-findings
table does, from the claim's readings and the claims registry, never typed. The level starts
from the strongest evidence: 4 a this-run verdict other than untested; 3 a published verdict
placing the figure (within, above, below) on a basis physics allows; 2 verified near points
(same quantity, sibling model or GPU) or an exact derivation from primary specifications
(``derived.exact``); 1 physics bounds only. Each named reason then moves it one level, within
1-4: ``lowered by`` a modelled price (every placing a cost model's rate) or an unknown basis
(placed on only some plausible bases, or the claim above every near point of one basis and
below every one of another); ``raised by`` a primary text stating the same figure where a
published reading places it (else ``confirmed by``, no move). Near points on both sides of the
claim on one basis ``corroborate`` it (never lowering); ``held back by`` names what explains a
level without moving it (analogue hardware, analogues only, NOT VERIFIED, synthetic input).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rackbook.core.basis import NAMES
from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.physics.units import ratio_text

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
#: How a difference of a near point from the claim's basis is named (its part -> words; else
#: "another" and the part's name, :data:`rackbook.core.basis.NAMES`).
DIFFERENCE_WORDS: dict[str, str] = {
    "hardware": "analogue hardware",
    "model": "another model",
    "gpu_count": "another GPU count",
    "engine": "another engine",
    "workload": "another workload",
    "metric": "another metric",
    "counting": "other counting",
}


@dataclass(frozen=True)
class Certainty:
    """A claim's graded certainty: the grade (one of :data:`GRADES`), its level (1-4) and the
    reasons, each a short phrase beginning with what it does (``rests on``, ``lowered by``,
    ``raised by``, ``held back by``)."""

    claim_id: str
    level: int
    #: each reason as (label, words): ``("held back by", "analogues only")``
    why: tuple[tuple[str, str], ...]

    @property
    def grade(self) -> str:
        return GRADES[self.level - 1]

    @property
    def reasons(self) -> tuple[str, ...]:
        """Each reason as one phrase, its label first: "held back by: analogues only"."""
        return tuple(f"{label}: {words}" for label, words in self.why)

    @property
    def note(self) -> str:
        """The reasons as one footnote, each label a phrase: "rests on 6 near published points;
        held back by analogue hardware (GB300, the claim B300), simulated acceptance"."""
        shown = [r for r in self.why if r != ("rests on", self.grade)] or list(self.why)
        return "; ".join(f"{label} {words}" for label, words in shown)

    def to_dict(self) -> dict[str, Any]:
        """The headline JSON's entry: ``{claim_id, grade, level, reasons}``."""
        return {
            "claim_id": self.claim_id,
            "grade": self.grade,
            "level": self.level,
            "reasons": list(self.reasons),
        }


def _entries(r: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A published reading's bases physics allows (its ``by_basis`` entries not ruled out), or
    the reading itself when it was read on one basis."""
    entries = [e for e in r.get("by_basis") or [] if isinstance(e, Mapping)]
    return [e for e in entries if not e.get("ruled_out")] or ([] if entries else [r])


def _difference(d: Mapping[str, Any]) -> str:
    """A near point's difference (a headline JSON's ``differing`` entry: ``part``, the point's
    value, the claim's) as a reason's words: ``analogue hardware (GB300, the claim B300)``."""
    part, point, claim = str(d.get("part")), d.get("point"), d.get("claim")
    if part == "speculation" and "simulated" in (point, claim):
        return "simulated acceptance"
    words = DIFFERENCE_WORDS.get(part, f"another {NAMES.get(part, part)}")
    return words if claim is None else f"{words} ({_value(point)}, the claim {_value(claim)})"


def _value(v: object) -> str:
    """A difference's value as a reader reads it: a whole number with thousands separators
    (``128,000``, not ``128000``), anything else as written."""
    text = str(v)
    return f"{int(text):,}" if text.isdigit() else text


def _why_not_like_for_like(closest: Any) -> list[tuple[str, str]]:
    if not isinstance(closest, Mapping):
        return []
    diffs = [_difference(d) for d in closest.get("differing") or [] if isinstance(d, Mapping)]
    return [("held back by", ", ".join(diffs))] if diffs else []


def side(lo: object, hi: object) -> str:
    """Where a claim sits against one basis's near points from its ratios to them: ``inside``
    (points on both sides of it, or at it), ``above``, ``below``, or ``-`` without ratios."""
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return "-"
    return "above" if lo > 1 else "below" if hi < 1 else "inside"


def _near_bases(near: Mapping[str, Any]) -> tuple[int, tuple[str, str] | None]:
    """How the near evidence moves the grade, judged per basis (``per_basis``; an older
    reading without it is one basis): near points on both sides of the claim on one basis
    corroborate it (no move, however many points are added there); the claim above every near
    point on one basis and below every one on another lowers it one level (an unknown basis);
    on one side on every basis, no move."""
    per = [b for b in near.get("per_basis") or [near] if isinstance(b, Mapping)]
    sides = [
        (str(b.get("basis") or "its basis"), b, side(b.get("ratio_low"), b.get("ratio_high")))
        for b in per
    ]
    inside = [(n, b) for n, b, side in sides if side == "inside"]
    if inside:
        n, b = inside[0]
        span = f"the claim {ratio_text(b['ratio_low'])} to {ratio_text(b['ratio_high'])} them"
        return 0, ("corroborated by", f"near points on both sides of the claim as {n} ({span})")
    above = [n for n, _, side in sides if side == "above"]
    below = [n for n, _, side in sides if side == "below"]
    if above and below:
        return -1, (
            "lowered by",
            f"an unknown basis (the claim above every near point as {above[0]}, "
            f"below every one as {below[0]})",
        )
    return 0, None


def certainty(
    readings: Iterable[Mapping[str, Any]], claim: Claim | None = None, claim_id: str = ""
) -> Certainty:
    """The certainty of one claim from its readings (dicts with ``reading``, ``verdict`` and
    the optional fields of :class:`rackbook.results.headline.ClaimReading`); ``claim``: its
    registry entry, for whether a primary text states the figure."""
    rs = {str(r.get("reading")): r for r in readings}
    cid = claim.id if claim is not None else claim_id
    run, pub, phys = rs.get("this run", {}), rs.get("published", {}), rs.get("physics", {})
    reasons: list[tuple[str, str]] = []
    if run.get("verdict") in TESTED:
        margin = str(run.get("margin") or "-")
        tail = "" if margin == "-" else f" ({margin})"
        reasons.append(("rests on", f"a run on the claim's hardware{tail}"))
        return Certainty(cid, 4, tuple(reasons))
    entries = _entries(pub) if pub else []
    placed = [e for e in entries if e.get("verdict") in PLACED]
    near = pub.get("near") if isinstance(pub.get("near"), Mapping) else None
    derived = phys.get("derived") if isinstance(phys.get("derived"), Mapping) else None
    level = 1
    if placed:
        level = 3
        reasons.append(("rests on", "like-for-like published figures"))
        if all(e.get("modelled") for e in placed):
            level -= 1
            reasons.append(
                ("lowered by", "modelled price (a cost model's rates, not a listed price)")
            )
        if len(placed) < len(entries):
            level -= 1
            reasons.append(
                (
                    "lowered by",
                    f"an unknown basis (placed on {len(placed)} of its "
                    f"{len(entries)} plausible bases)",
                )
            )
    elif near and near.get("points") and near.get("verified"):
        level = 2
        reasons.append(("rests on", f"{len(near['points'])} near published points"))
        reasons += _why_not_like_for_like(pub.get("closest"))
        change, reason = _near_bases(near)
        level += change
        reasons += [reason] if reason else []
    elif derived and derived.get("exact"):
        level = 2
        source = derived.get("from") or "primary specifications"
        reasons.append(("rests on", f"exact derivation from {source}"))
    else:
        reasons.append(("rests on", "physics bounds only"))
    confirmed = bool(derived and derived.get("exact") and claim is not None)
    confirmed = confirmed and claim.source.status != "not-located"  # type: ignore[union-attr]
    if confirmed and placed:
        level += 1
        reasons.append(("raised by", "a primary text stating the same figure (exact match)"))
    elif confirmed:
        # a primary text stating a derived figure is not a published measurement: the grade
        # stays that of the derivation, so it never reads "like-for-like published" beside a
        # published reading of "none published"
        reasons.append(("confirmed by", "a primary text stating the same figure (exact match)"))
    elif level < 3 and not placed:
        closest = pub.get("closest") if isinstance(pub.get("closest"), Mapping) else None
        if near and near.get("points") and not near.get("verified"):
            reasons.append(("held back by", "near points read only second-hand (NOT VERIFIED)"))
        elif closest and closest.get("kind") == "analogue" and not (near and near.get("points")):
            reasons.append(("held back by", "analogues only"))
        elif not closest and not near:
            reasons.append(("held back by", "no comparable published point"))
    if run.get("verdict") == "untested" and run.get("synthetic"):
        reasons.append(("held back by", "a synthetic input"))
    return Certainty(cid, max(1, min(4, level)), tuple(reasons))


def certainties(
    result: str, readings: Iterable[Mapping[str, Any]], registry: Registry | None = None
) -> list[Certainty]:
    """The certainty of every claim of ``result`` (registry order) from a headline's readings;
    a claim without readings is left out."""
    reg = registry or load_claims()
    rs = [r for r in readings if isinstance(r, Mapping)]
    out = []
    for c in reg.for_result(result):
        mine = [r for r in rs if r.get("claim_id") == c.id]
        if mine:
            out.append(certainty(mine, c))
    return out


def number(v: float) -> str:
    """A number for a sentence: thousands separators, four significant digits below 1,000."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.4g}"


def supported_basis(pub: Mapping[str, Any]) -> str:
    """ "the evidence supports <basis>, 954,000 / 7.9 = 120,759 tok/s/GPU: 0.847x to 1.16x the
    2 near points" where the figure converted to a basis lies inside its near points, then the
    highest list price; empty otherwise."""
    near: Mapping[str, Any] = pub["near"] if isinstance(pub.get("near"), Mapping) else {}
    lo, hi, pts = near.get("ratio_low"), near.get("ratio_high"), near.get("points") or []
    if not pts or not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return ""
    entry = next((e for e in _entries(pub) if e.get("name") == near.get("basis")), {})
    if not entry.get("conversion") or not lo <= 1 <= hi:
        return ""
    name = str(near.get("head") or near["basis"])  # the basis as a finding names it
    step, unit = str(entry.get("step") or ""), str(near.get("unit") or "")
    low, high = number(near["low"]), number(near["high"])
    span = f"${low} to ${high}{unit[1:]}" if unit.startswith("$") else f"{low} to {high} {unit}"
    ratios = f"{ratio_text(lo)} to {ratio_text(hi)} the {len(pts)} near points"
    out = f"the evidence supports {name}" + (f", {step}: {ratios}" if step else f": {ratios}")
    out += "" if step else f" ({span})"
    lp = pub.get("list_price")
    if not isinstance(lp, Mapping) or not isinstance(lp.get("ratio"), (int, float)):
        return out
    price = f"${lp['value']:,.2f}/GPU-hour"
    return out + f"; {ratio_text(lp['ratio'])} the highest list price ({price})"


def supported_finding(
    head: str, pub: Mapping[str, Any], shorten: Callable[[str], str], limit: int
) -> str:
    """``head``; :func:`supported_basis` (``head`` shortened past ``limit`` words), or empty."""
    sup = supported_basis(pub) if pub else ""
    if not sup:
        return ""
    if len(f"{head} {sup}".split()) > limit:
        head = shorten(head)
    return f"{head[:1].upper()}{head[1:]}; {sup}."
