"""The book's words about each claim, made once from its readings' fields (headline JSON dicts):
:func:`certainty` graded as a GRADE summary of findings (4 a run on its hardware, 3 like-for-like
published, 2 near points or an exact derivation, 1 physics bounds only; each named reason moves
it one level), :func:`conclude` every reading (each clause from :data:`SAY`), :func:`summarize`
the landing's row and its decisive finding. No sentence a reading carries is cut or parsed."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from rackbook.core.basis import NAMES
from rackbook.core.units import number, ratio_text
from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.results.published_rows import (
    MODELLED_NOTE,
    near_text,
    point_ratio,
    point_value,
    side,
    span_text,
)

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


def bases_of(r: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A published reading's ``by_basis`` entries."""
    return [e for e in r.get("by_basis") or [] if isinstance(e, Mapping)]


def _difference(d: Mapping[str, Any]) -> str:
    """A ``differing`` entry as words: ``analogue hardware (GB300, the claim B300)``."""
    part, point, claim = str(d.get("part")), d.get("point"), d.get("claim")
    if part == "speculation" and "simulated" in (point, claim):
        return "simulated acceptance"
    words = DIFFERENCE_WORDS.get(part, f"another {NAMES.get(part, part)}")
    point, claim = (f"{int(str(v)):,}" if str(v).isdigit() else str(v) for v in (point, claim))
    return words if d.get("claim") is None else f"{words} ({point}, the claim {claim})"


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
    entries = [e for e in bases_of(pub) if not e.get("ruled_out")]  # else itself on one basis
    entries = entries or ([] if bases_of(pub) or not pub else [pub])
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


ORDER: tuple[str, ...] = ("physics", "published", "this run")
#: Most characters of a basis a sentence names; words of a reason standing for a margin; words
#: of a landing cell's finding.
SHORT_BASIS, SHORT_REASON, FINDING_WORDS = 60, 20, 40
#: What a published verdict places a figure against: like-for-like points, else cost models.
POINT, MODELLED = "published like-for-like measurement", "modelled price"
#: Every reading's clause, by (reading, verdict; "synthetic": untested on a synthetic input):
#: ``{f}`` the figure (or "it"), ``{s}`` "<figure> is " (or nothing), ``{hw}`` the claim's
#: hardware, ``{m}`` " (margin)", ``{of}`` what a published verdict places it against.
SAY: dict[tuple[str, str], str] = {
    ("physics", "possible"): "{s}physically possible",
    ("physics", "impossible"): "{s}physically impossible",
    ("physics", "undetermined"): "physics does not settle {f}",
    ("published", "within"): "{s}within the {of}s",
    ("published", "above"): "{s}above every {of}",
    ("published", "below"): "{s}below every {of}",
    ("published", "none published"): "no like-for-like measurement is published",
    ("this run", "consistent"): "measured on {hw} here, {f} holds{m}",
    ("this run", "inconsistent"): "measured on {hw} here, {f} does not hold{m}",
    ("this run", "untested"): "not tested on {hw} here",
    ("this run", "synthetic"): "not measured here: this chapter's input is synthetic",
}
#: The landing's verdict words a published placing decides.
PLACED_WORDS = ("consistent", "above published", "below published")
#: The default deployment (named once in the landing page's note, not in every row).
DEFAULT_DEPLOYMENT = "attention data-parallel"
#: GRADE's four plain grades, lowest first: level 1-4 of :func:`certainty`.
PLAIN_GRADES: tuple[str, ...] = ("very low", "low", "moderate", "high")
#: What each verdict word means, for the landing's key.
VERDICT_WORDS: dict[str, str] = {
    "impossible as stated": "a physics bound rules the figure out on every basis it can have",
    "depends on what is counted": (
        "impossible on some readings of the figure, possible on others; the write-up does not "
        "say which"
    ),
    "exact": "the figure follows exactly from primary specifications",
    "consistent": "a run on the claim's hardware, or like-for-like published points, agree",
    "inconsistent": "a run on the claim's hardware disagrees",
    "above published": "above every published like-for-like figure (or modelled price)",
    "below published": "below every published like-for-like figure (or modelled price)",
    "plausible": "physically possible; nothing like-for-like measures it",
    "unsettled": "physics cannot decide it and nothing like-for-like is published",
}


@dataclass(frozen=True)
class Conclusion:
    """A claim's conclusion: figure, statement, sentences and certainty."""

    claim_id: str
    result: str
    figure: str
    statement: str
    sentences: tuple[str, ...]
    certainty: Certainty

    @property
    def grade(self) -> str:
        return self.certainty.grade

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class Summary:
    """A summary-of-findings row: verdict word, finding, plain grade and why."""

    claim_id: str
    word: str
    finding: str
    grade: str
    why: str


def _is_num(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and math.isfinite(v)


def _names(names: list[str]) -> str:
    """Quoted basis names: ``“a”, “b” or “c”``; past three, the first two and a count."""
    shown = [f"\u201c{n}\u201d" for n in names]
    if len(shown) > 3:
        return f"{shown[0]}, {shown[1]} or {len(shown) - 2} other bases"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _hardware(claim: Claim) -> str:
    hw = claim.scope.hardware
    if not hw:
        return "the claim's hardware"
    article = "an" if hw[:1].upper() in "AEIOU" else "a"
    return f"{article} {hw}" if claim.scope.gpu_count in (None, 72) else f"{hw} GPUs"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _margin(r: Mapping[str, Any]) -> str:
    text = str(r.get("margin") or "").strip()
    return "" if text == "-" else text


def _short_basis(r: Mapping[str, Any]) -> str:
    b = str(r.get("basis") or "")
    return b if len(b) <= SHORT_BASIS and not any(ch in b for ch in ";|") else ""


def _attainable(r: Mapping[str, Any], named: bool = True) -> str:
    """The expected (else attainable) estimate as a ``; ...`` clause (``named``: the deployment)."""
    a = field(r, "attainable")
    expected = brief(field(a, "expected"))
    if expected:
        return f"; {expected}"
    dep = str(a.get("deployment_name") or "")
    shown = f" ({dep})" if named and dep and not dep.startswith(DEFAULT_DEPLOYMENT) else ""
    if a.get("brief"):
        return f"; {a['brief']}{shown}"
    if _is_num(a.get("ratio")):
        return f"; {ratio_text(a['ratio'])} what measured kernels reach{shown}"
    if _is_num(a.get("tok_s_per_gpu")):
        return f"; measured kernels reach {number(a['tok_s_per_gpu'])} tok/s per GPU{shown}"
    return ""


def say(kind: str, r: Mapping[str, Any], f: str, hw: str = "", of: str = POINT) -> str:
    """Reading ``r`` of kind ``kind`` as :data:`SAY`'s clause about ``f`` (the figure, "it", or
    nothing: a verdict without its subject)."""
    verdict = str(r.get("verdict", ""))
    verdict = "synthetic" if verdict == "untested" and r.get("synthetic") else verdict
    m = f" ({_margin(r)})" if _margin(r) else ""
    text = SAY.get((kind, verdict), f"the {kind} reading is {verdict}")
    return text.format(f=f or "it", s=f"{f} is " if f else "", hw=hw, m=m, of=of)


def _closest(c: Any) -> str:
    if not isinstance(c, Mapping):
        return str(c)
    parts = [str(p) for p in c.get("source") or [c.get("who") or ""] if p not in ("-", "")]
    value, who = point_value(c), " · ".join(parts) or "a published point"
    return who + (f": {value}{point_ratio(c)}" if value else point_ratio(c))


def _body(kind: str, f: str, r: Mapping[str, Any], hw: str, of: str = POINT) -> str:
    """:func:`say`'s clause with what the reading adds: physics its reason and attainable
    estimate, published its margin (else closest point), or why nothing decides."""
    head = say(kind, r, f, hw, of)
    if kind == "physics":
        return head + (f": {r['reason']}" if r.get("reason") else "") + _attainable(r)
    if kind != "published":
        return head
    if r.get("verdict") == "none published":
        analogue = field(r, "closest").get("kind") == "analogue"
        return head + (" (only analogues, which do not decide)" if analogue else "")
    if _margin(r):
        return f"{head}: {_margin(r)}"
    closest = r.get("closest")
    return head + (f"; closest like-for-like point: {_closest(closest)}" if closest else "")


def _per_basis(figure: str, r: Mapping[str, Any]) -> list[str]:
    """A published reading per basis: the bases physics rules out, then one sentence per
    verdict (and kind of point) naming its bases."""
    entries, out = bases_of(r), []
    gone = [e for e in entries if e.get("ruled_out")]
    if gone and len(gone) < len(entries):
        names = _names([str(e.get("name") or "?") for e in gone])
        out.append(f"Physics rules out {names}; the published reading is of the other bases.")
        entries = [e for e in entries if not e.get("ruled_out")]
    groups: dict[tuple[str, bool], list[Mapping[str, Any]]] = {}
    for e in entries:
        groups.setdefault((str(e.get("verdict", "")), bool(e.get("modelled"))), []).append(e)
    for (verdict, modelled), es in groups.items():
        names = _names([str(e.get("name") or e.get("basis") or "?") for e in es])
        if verdict == "none published":
            every = len(es) == len(entries)
            where = f" on any of its {len(es)} plausible bases" if len(es) > 1 else ""
            where, holder = (where, r) if every else (f" as {names}", es[0])
            near = holder.get("closest")
            aside = f" (closest, which does not decide: {_closest(near)})" if near else ""
            out.append(f"No like-for-like measurement is published{where}{aside}.")
            continue
        sub = {k: es[0].get(k) for k in ("margin", "reason", "closest")} | {"verdict": verdict}
        body = _body("published", figure, sub, "", MODELLED if modelled else POINT)
        out.append(f"As {names}, {body}.")
        figure = "it"
    return out


def conclude(claim: Claim, readings: Iterable[Mapping[str, Any]]) -> Conclusion:
    """The conclusion about ``claim`` from its readings (other claims' are ignored)."""
    mine = [r for r in readings if r.get("claim_id", claim.id) == claim.id]
    figure, hardware = claim.value_text, _hardware(claim)
    sentences: list[str] = []
    kinds = [*ORDER, *sorted({str(r.get("reading")) for r in mine} - set(ORDER))]
    for kind in kinds:
        for r in (r for r in mine if r.get("reading") == kind):
            named = "it" if sentences else figure
            if kind == "published" and r.get("by_basis"):
                sentences += _per_basis(named, r)
            else:
                basis = _short_basis(r)
                body = _body(kind, named, r, hardware)
                sentences.append(f"As {basis}, {body}." if basis else _cap(body) + ".")
            near = near_text(field(r, "near")) if kind == "published" else ""
            sentences += [_cap(near) + "."] if near else []
    if not sentences:
        sentences.append(f"{figure} has not been read yet: run the chapter.")
    cert = certainty(mine, claim)
    return Conclusion(claim.id, claim.result, figure, claim.statement, (*sentences,), cert)


def conclusions(doc: Mapping[str, Any], registry: Registry | None = None) -> list[Conclusion]:
    """One conclusion per claim of a headline JSON's result, in registry order."""
    reg = registry or load_claims()
    readings = [r for r in doc.get("readings", []) if isinstance(r, Mapping)]
    result = doc.get("result") or (readings[0]["claim_id"].split(".")[0] if readings else None)
    return [conclude(c, readings) for c in reg.for_result(str(result))]


def _impossible(bases: list[tuple[str, Any, str, str]]) -> str:
    """``impossible as A (3.94x a GB300's decode ceiling) or as B (2x)``: per (name, ratio or
    None, GPU, ceiling), each place named once in a row."""
    out, last = [], None
    for name, ratio, gpu, ceiling in bases:
        where = f"a {gpu}'s {ceiling}" if gpu else f"the {ceiling}"
        shown = "" if ratio is None else f"{ratio:.3g}x" + ("" if where == last else f" {where}")
        out.append(f"as {name}" + (f" ({shown})" if shown else ""))
        last = where if ratio is not None else last
    return "impossible " + " or ".join(out) if out else ""


def _ruled_out(pub: Mapping[str, Any]) -> str:
    bases = []
    for e in (e for e in bases_of(pub) if e.get("ruled_out")):
        by = field(e, "ruled_by")
        name, ceiling = f"\u201c{e.get('name') or '?'}\u201d", f"{by.get('limit')} ceiling"
        bases.append((name, by.get("ratio"), str(by.get("gpu") or ""), ceiling))
    return _impossible(bases)


def _possible_as(phys: Mapping[str, Any]) -> list[str]:
    ok = [b for b in phys.get("on_bases") or [] if isinstance(b, Mapping)]
    ok = [b for b in ok if b.get("verdict") == "possible" and _is_num(b.get("tok_s_per_gpu"))]
    return [f"{b['name']} ({b['tok_s_per_gpu']:,.0f} per GPU)" for b in ok]


def _physics_said(r: Mapping[str, Any]) -> str:
    """:func:`say` of a physics reading with its margin, else its reason when short."""
    reason = str(r.get("reason") or "")
    gist = _margin(r) or (reason if words(reason) <= SHORT_REASON else "")
    return say("physics", r, "") + (f": {gist}" if gist else "")


def _physics_finding(r: Mapping[str, Any], pub: Mapping[str, Any]) -> str:
    """The bases physics rules out, else what the specifications give, else :func:`say`'s."""
    margin, ruled, d = _margin(r), _ruled_out(pub), field(r, "derived")
    if ruled:
        parts = [ruled] + ([margin] if margin and r.get("verdict") == "undetermined" else [])
        return "; ".join(parts + [f"possible as {b}" for b in _possible_as(r)])
    if not _is_num(d.get("value")):
        return _physics_said(r)
    value, source = f"{number(d['value'])} {d.get('unit') or ''}".strip(), d.get("from")
    how, source = f": {d['how']}" if d.get("how") else "", source or "the specifications"
    if d.get("exact"):
        return f"exactly what {source} give ({value}{how})"
    return f"{source} give {value}, not the claim's figure"


def _placed(r: Mapping[str, Any], margin: bool = True) -> str:
    entries = [e for e in bases_of(r) if not e.get("ruled_out")] or [r]
    placed = [e for e in entries if e.get("verdict") in PLACED]
    if not placed:
        return ""
    e = placed[0]
    names = [str(x.get("name")) for x in placed if x.get("name") and x is not r]
    basis = f"as {_names(names)}, " if names and len(entries) > 1 else ""
    basis = basis or (f"as {_short_basis(r)}, " if _short_basis(r) else "")
    shown = _margin(e).removesuffix(MODELLED_NOTE) if margin else ""
    placing = say("published", e, "", of=MODELLED if e.get("modelled") else POINT)
    return basis + placing + (f" ({shown})" if shown else "")


def _near_finding(r: Mapping[str, Any]) -> str:
    c, near = field(r, "closest"), field(r, "near")
    lo, hi = near.get("ratio_low"), near.get("ratio_high")
    closest = c.get("kind") == "near" and bool(point_ratio(c))
    if near.get("points") and _is_num(lo) and _is_num(hi):
        either = lo <= 1 <= hi  # near points on both sides of the claim, on one basis
        if either or not closest:
            flag = "" if near.get("verified") else ", NOT VERIFIED"
            on = near.get("basis")
            by = f", on both sides of it as {on}" if either and on else ""
            n = len(near["points"])
            return f"the claim is {span_text(lo, hi, 'x')} the {n} near published points{flag}{by}"
    if closest:
        flag = " (NOT VERIFIED)" if c.get("verified") is False else ""
        return f"the closest near published point is {_closest(c)}{flag}"
    return ""  # analogues never decide: the certainty's reasons name them


def words(text: str) -> int:
    return len(text.split())


def within_words(sentences: list[str], limit: int = FINDING_WORDS) -> str:
    """The leading whole sentences within ``limit`` words (else the first, cut, with …)."""
    out: list[str] = []
    for s in sentences:
        if words(" ".join([*out, s])) > limit:
            break
        out.append(s)
    if out or not sentences:
        return " ".join(out)
    return " ".join(sentences[0].split()[:limit]).rstrip(",;:.") + "\u2026"


def _word(rs: Mapping[str, Mapping[str, Any]]) -> str:
    phys, pub, run = rs.get("physics", {}), rs.get("published", {}), rs.get("this run", {})
    if run.get("verdict") in TESTED:
        return str(run["verdict"])
    if phys.get("verdict") == "impossible":
        return "impossible as stated"
    if any(e.get("ruled_out") for e in bases_of(pub)):
        return "depends on what is counted"
    placed = [str(e.get("verdict")) for e in bases_of(pub) or [pub] if e.get("verdict") in PLACED]
    if placed:
        return "consistent" if placed[0] == "within" else f"{placed[0]} published"
    if field(phys, "derived").get("exact"):
        return "exact"
    return "plausible" if phys.get("verdict") == "possible" else "unsettled"


def supported_basis(pub: Mapping[str, Any]) -> str:
    """``the evidence supports <basis>, <step>: 0.847x to 1.16x the 2 near points``, or empty."""
    near = field(pub, "near")
    lo, hi, pts = near.get("ratio_low"), near.get("ratio_high"), near.get("points") or []
    if not pts or not _is_num(lo) or not _is_num(hi) or not lo <= 1 <= hi:
        return ""
    entry = next((e for e in bases_of(pub) if e.get("name") == near.get("basis")), {})
    if not entry.get("conversion"):
        return ""
    name = str(near.get("head") or near["basis"])
    step, unit = str(entry.get("step") or ""), str(near.get("unit") or "")
    low, high = number(near["low"]), number(near["high"])
    span = f"${low} to ${high}{unit[1:]}" if unit.startswith("$") else f"{low} to {high} {unit}"
    ratios = f"{span_text(lo, hi, 'x')} the {len(pts)} near points"
    out = f"the evidence supports {name}" + (f", {step}: {ratios}" if step else f": {ratios}")
    out += "" if step else f" ({span})"
    lp = field(pub, "list_price")
    if _is_num(lp.get("ratio")):
        out += f"; {ratio_text(lp['ratio'])} the highest list price (${lp['value']:,.2f}/GPU-hour)"
    return out


def _condition(phys: Mapping[str, Any]) -> str:
    cond, wl = field(phys, "condition"), field(phys, "workload")
    if not cond:
        return ""
    isl, osl = (round(wl.get(n) or 0) for n in ("isl", "osl"))
    k = {n: f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}" for n in (isl, osl)}
    tail = f" ({k[isl]}-in/{k[osl]}-out workload assumed)" if wl else ""
    return f"{cond['basis']}, it {cond['condition']}{tail}"


def _plain_finding(claim: Claim, rs: Mapping[str, Mapping[str, Any]], word: str) -> str:
    """The landing's finding (within :data:`FINDING_WORDS`): the decisive physics clause, the
    published placing or near points, a run on the claim's hardware, the supported basis."""
    phys, pub, run = rs.get("physics", {}), rs.get("published", {}), rs.get("this run", {})
    nothing = pub.get("verdict") == "none published" and not field(pub, "near").get("points")
    none = "nothing comparable is published" if nothing else ""
    placed = _placed(pub)
    published = placed or _near_finding(pub)
    if word == "depends on what is counted":
        needs = next((b for b in phys.get("on_bases") or [] if b.get("ceiling")), None)
        gpu = next(iter((claim.scope.hardware or "").split()), "")  # none: "the ceiling"
        ruling = _ruled_out(pub)
        if needs:
            ruling = _impossible([(needs["name"], needs["ratio"], gpu, needs["ceiling"])])
        possible = "".join(f" but possible as {p}" for p in _possible_as(phys))
        heads, sentences = [ruling], [ruling + possible, _condition(phys)]
    elif word == "unsettled":
        heads = [_condition(phys) or _physics_said(phys)]
        sentences = [heads[0], none or published]
    else:
        said = _physics_finding(phys, pub) if phys else ""
        shown = said and not (placed and phys.get("verdict") == "undetermined")
        tested = say("this run", run, "", _hardware(claim)) if word in TESTED else ""
        sentences = [said + _attainable(phys, named=False) if shown else "", published, tested]
        sentences += [none] if not published else []
        heads = [placed, _placed(pub, margin=False)] if word in PLACED_WORDS else [said]
        heads = [tested] if tested else heads
    supported = supported_basis(pub)
    if supported:
        fits = [h for h in heads if words(f"{h}; {supported}.") <= FINDING_WORDS]
        sentences = [f"{fits[0] if fits else heads[-1]}; {supported}"]
    return within_words([_cap(s) + "." for s in sentences if s])


def summarize(claim: Claim, readings: Iterable[Mapping[str, Any]]) -> Summary:
    mine = [r for r in readings if r.get("claim_id", claim.id) == claim.id]
    rs = {str(r.get("reading")): r for r in mine}
    if not rs:
        return Summary(claim.id, "not run", "Not read yet: run the chapter.", "not graded", "")
    word = _word(rs)
    c = certainty(mine, claim)
    grade = PLAIN_GRADES[3 if word == "impossible as stated" else c.level - 1]
    first = sorted(c.why, key=lambda r: {"lowered by": 0, "held back by": 1}.get(r[0], 2))
    why = "a physics bound decides" if word == "impossible as stated" else ""
    why = why or next((w for _, w in first), "")
    return Summary(claim.id, word, _plain_finding(claim, rs, word), grade, why)


def placement(d: Mapping[str, Any]) -> str:
    """``below``, ``within`` or ``above`` an :func:`expected` reading's interval, "" without."""
    exp, low, high, ratio = (d.get(k) for k in ("tok_s_per_gpu", "low", "high", "ratio"))
    if not all(isinstance(x, (int, float)) for x in (exp, low, high, ratio)) or not exp or exp <= 0:
        return ""
    claim = ratio * exp
    return "below" if claim < low else "above" if claim > high else "within"


def brief(d: Mapping[str, Any], validation: str = "") -> str:
    """``claim above what real deployments reach (~1,000, 490-1,830 tok/s/GPU: 2x)``, error."""
    where = placement(d)
    if not where:
        return ""
    line = (
        f"claim {where} what real deployments reach (~{d['tok_s_per_gpu']:,.0f}, "
        f"{d['low']:,.0f}-{d['high']:,.0f} tok/s/GPU: {ratio_text(d['ratio'])})"
    )
    return line + (f"; model error: {validation}" if validation else "")
