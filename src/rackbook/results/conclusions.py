"""What the book concludes about each claim, generated from its readings (headline JSON dicts;
unknown fields ignored): :func:`conclude` the paragraph, :func:`finding` the decisive point,
:func:`summarize` the landing's row."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.results.certainty import (
    MODELLED_NOTE,
    PLACED,
    TESTED,
    Certainty,
    certainty,
    supported_finding,
)
from rackbook.results.certainty import number as _num

#: The readings in the order a conclusion states them.
ORDER: tuple[str, ...] = ("physics", "published", "this run")
#: At most this many characters of a reason go into a sentence (whole clauses only).
MAX_CLAUSE = 280
#: A reading's own ``basis`` names it in the sentence only when it is a short name, not a
#: full basis description (those name their bases in ``by_basis``).
SHORT_BASIS = 60
#: Parenthesised asides of at most this many characters stay in a sentence.
SHORT_ASIDE = 30
#: Where published points place a figure, by verdict; ``{}``: what it is placed against.
PLACES = {"within": "within the {}s", "above": "above every {}", "below": "below every {}"}


@dataclass(frozen=True)
class Conclusion:
    """A claim's conclusion: figure, statement, sentences, certainty and finding."""

    claim_id: str
    result: str
    figure: str
    statement: str
    sentences: tuple[str, ...]
    certainty: Certainty
    #: the decisive finding (:func:`finding`)
    finding: str = ""

    @property
    def grade(self) -> str:
        """One of :data:`rackbook.results.certainty.GRADES`."""
        return self.certainty.grade

    @property
    def text(self) -> str:
        """The sentences as one paragraph."""
        return " ".join(self.sentences)


def _drop_brackets(text: str, keep: int = SHORT_ASIDE) -> str:
    """``text`` without bracketed asides nor parenthesised ones over ``keep`` characters."""
    text = re.sub(r"\s*\[[^\[\]]*\]", "", text)
    aside = r"\s*\(((?:[^()]|\([^()]*\))*)\)"  # one level of nesting
    text = re.sub(aside, lambda m: m.group(0) if len(m.group(1)) <= keep else "", text)
    return re.sub(r"\s+([,;:.])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


def _clauses(reason: str, limit: int = MAX_CLAUSE, many: bool = True) -> str:
    """A reason's leading ``;`` clauses within ``limit`` characters (the first unless ``many``)."""
    parts = [p.strip() for p in _drop_brackets(reason).split(";") if p.strip()]
    if not parts:
        return ""
    out = [parts[0]]
    for p in parts[1:] if many else []:
        if len("; ".join([*out, p])) > limit:
            break
        out.append(p)
    return "; ".join(out).rstrip(".:, ")


def _field(r: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``r[key]`` where it is a mapping, else an empty one."""
    v = r.get(key)
    return v if isinstance(v, Mapping) else {}


def _informative(margin: Any) -> str:
    text = str(margin or "").strip()
    return "" if text in ("", "-") else text


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


#: How the default deployment of the attainable estimate begins (physics.attainable), named
#: once in the landing page's note rather than in every row.
DEFAULT_DEPLOYMENT = "attention data-parallel"


def _attainable(r: Mapping[str, Any], named: bool = True) -> str:
    """The attainable (or expected) estimate as a clause, "" without one; a deployment other
    than the default is named unless ``named`` is False."""
    a = _field(r, "attainable")
    if not a:
        return ""
    expected = _expected(a.get("expected"))
    if expected:
        return expected
    dep = str(a.get("deployment_name") or "")
    default = not named or not dep or dep.startswith(DEFAULT_DEPLOYMENT)
    shown = "" if default else f" ({dep})"
    ratio = a.get("ratio")
    if a.get("brief"):
        return f"; {a['brief']}{shown}"
    if isinstance(ratio, (int, float)) and math.isfinite(ratio):
        return f"; {_ratio(ratio)} what measured kernels reach{shown}"
    reach = a.get("tok_s_per_gpu")
    if isinstance(reach, (int, float)) and math.isfinite(reach):
        return f"; measured kernels reach {_num(reach)} tok/s per GPU{shown}"
    return ""


def _expected(e: Any) -> str:
    """The expected reading as a ratio-and-interval clause (tok/s per GPU)."""
    keys = ("ratio", "tok_s_per_gpu", "low", "high")
    if not isinstance(e, Mapping) or not all(
        isinstance(e.get(k), (int, float)) and math.isfinite(e[k]) for k in keys
    ):
        return ""
    return (
        f"; {_ratio(e['ratio'])} what real deployments are expected to reach "
        f"(~{e['tok_s_per_gpu']:,.0f}, {e['low']:,.0f}-{e['high']:,.0f} tok/s per GPU)"
    )


def _physics(figure: str, r: Mapping[str, Any]) -> str:
    verdict = str(r.get("verdict", ""))
    att = _attainable(r)
    if verdict == "undetermined":
        why = _clauses(str(r.get("reason", "")))
        return f"physics does not settle {figure}" + (f": {why}" if why else "") + att
    why = _clauses(str(r.get("reason", "")), many=False) or _informative(r.get("margin"))
    return f"{figure} is physically {verdict}" + (f": {why}" if why else "") + att


def _closest(c: Any) -> str:
    """A closest published point: who, value (or tied spread) with unit, the claim's ratio."""
    if not isinstance(c, Mapping):
        return _drop_brackets(str(c))
    text = " · ".join(_source(c))
    value, ratio, tied = _value(c), _claim_ratio(c), _spread(c, "low", "high")
    if value:
        text += f": {value}" + (f" ({len(c['tied']) + 1} points)" if tied else "")
    return text + (f", the claim {ratio} {'them' if tied else 'it'}" if ratio else "")


def _published(figure: str, r: Mapping[str, Any]) -> str:
    verdict = str(r.get("verdict", ""))
    margin = _informative(r.get("margin"))
    if verdict == "none published":
        c = r.get("closest")
        analogue = isinstance(c, Mapping) and c.get("kind") == "analogue"
        return "no like-for-like measurement is published" + (
            " (only analogues, which do not decide)" if analogue else ""
        )
    place = PLACES.get(verdict, "").format("published like-for-like measurement")
    verb = "sits" if verdict == "within" else "is"
    head = (
        f"{figure} {verb} {place}" if place else f"the published reading of {figure} is {verdict}"
    )
    text = head + (f": {margin}" if margin else "")
    closest = r.get("closest")
    if closest and not margin:
        text += f"; closest like-for-like point: {_closest(closest)}"
    return text


def _names(names: list[str]) -> str:
    """Quoted basis names: ``“a”, “b” or “c”``; past three, the first two and a count."""
    shown = [f"\u201c{n}\u201d" for n in names]
    if len(shown) > 3:
        return f"{shown[0]}, {shown[1]} or {len(shown) - 2} other bases"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _per_basis(kind: str, figure: str, r: Mapping[str, Any], hardware: str) -> list[str]:
    """A reading with ``by_basis`` as one sentence per verdict, naming the bases that reach it."""
    entries = [e for e in r.get("by_basis") or [] if isinstance(e, Mapping)]
    out = []
    gone = [e for e in entries if e.get("ruled_out")]
    if kind == "published" and gone and len(gone) < len(entries):
        names = _names([str(e.get("name") or "?") for e in gone])
        out.append(f"Physics rules out {names}; the published reading is of the other bases.")
        entries = [e for e in entries if not e.get("ruled_out")]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for e in entries:
        key = str(e.get("verdict", "")) + (" modelled" if e.get("modelled") else "")
        groups.setdefault(key, []).append(e)
    for verdict, es in groups.items():
        names = _names([str(e.get("name") or e.get("basis") or "?") for e in es])
        if kind == "published" and verdict == "none published":
            every = len(es) == len(entries)
            where = (
                ("" if len(es) == 1 else f" on any of its {len(es)} plausible bases")
                if every
                else f" as {names}"
            )
            text = f"no like-for-like measurement is published{where}"
            near = r.get("closest") if every else es[0].get("closest")
            if near:
                text += f" (closest, which does not decide: {_closest(near)})"
            out.append(_cap(text) + ".")
            continue
        verdict = verdict.removesuffix(" modelled")
        if es[0].get("modelled"):
            margin = _informative(es[0].get("margin"))
            out.append(
                f"As {names}, {figure} is "
                + PLACES.get(verdict, verdict).format("modelled price")
                + " (a cost model's rate, not a listed price nor a measurement)"
                + (f": {margin}" if margin else "")
                + "."
            )
            figure = "it"
            continue
        sub = {k: es[0].get(k) for k in ("margin", "reason", "closest")} | {"verdict": verdict}
        out.append(f"As {names}, {_body(kind, figure, sub, hardware)}.")
        figure = "it"
    return out


def _this_run(figure: str, r: Mapping[str, Any], hardware: str) -> str:
    verdict = str(r.get("verdict", ""))
    margin = _informative(r.get("margin"))
    tail = f" ({margin})" if margin else ""
    if verdict == "consistent":
        return f"measured on {hardware} here, {figure} holds{tail}"
    if verdict == "inconsistent":
        return f"measured on {hardware} here, {figure} does not hold{tail}"
    if r.get("synthetic"):  # untested
        return "not measured here: this chapter's input is synthetic"
    return f"not tested on {hardware} here"


def _body(kind: str, figure: str, r: Mapping[str, Any], hardware: str) -> str:
    """One reading's words, uncapitalised and without its full stop."""
    if kind == "physics":
        return _physics(figure, r)
    if kind == "published":
        return _published(figure, r)
    return _this_run(figure, r, hardware)


def _sentence(kind: str, figure: str, r: Mapping[str, Any], hardware: str) -> str:
    """One reading as a sentence; ``figure`` is the claim's figure, or "it" once named."""
    body = _body(kind, figure, r, hardware)
    basis = str(r.get("basis") or "")
    if basis and len(basis) <= SHORT_BASIS and ";" not in basis and "|" not in basis:
        return f"As {_drop_brackets(basis)}, {body}."
    return _cap(body) + "."


def near_sentence(r: Mapping[str, Any]) -> str:
    """A published reading's ``near`` evidence as one sentence, or empty."""
    n = _field(r, "near")
    if not n.get("points"):
        return ""
    pts = list(n["points"])
    span = _span(n["low"], n["high"], str(n.get("unit") or ""))
    rl, rh = n.get("ratio_low"), n.get("ratio_high")
    them = "it" if len(pts) == 1 else "them"
    ratio = ""
    if isinstance(rl, (int, float)) and isinstance(rh, (int, float)):
        ratio = f"the claim is {_ratios(rl, rh)} {them}"
    unv = len(n.get("unverified") or [])
    flag = f", {unv} NOT VERIFIED" if unv else ""
    nb = len(n.get("bases") or [])
    over = f" on {nb} bases" if nb > 1 else ""
    return (
        f"Near evidence, which does not decide: {len(pts)} published points of the same "
        f"quantity on a sibling model or GPU{flag}{',' if flag else ''} span {span}; "
        f"{ratio}{over}."
    )


def _ratio(x: float) -> str:
    """``0.093x``, ``9.14x``, ``1,054x``: three figures from 1x, three decimals below."""
    if abs(x) >= 100:
        return f"{x:,.0f}x"
    if 0.001 <= abs(x) < 1:
        return f"{x:.3f}".rstrip("0").rstrip(".") + "x"
    return f"{x:.3g}x"


def _hardware(claim: Claim) -> str:
    hw = claim.scope.hardware
    if not hw:
        return "the claim's hardware"
    article = "an" if hw[:1].upper() in "AEIOU" else "a"
    return f"{article} {hw}" if claim.scope.gpu_count in (None, 72) else f"{hw} GPUs"


def conclude(claim: Claim, readings: Iterable[Mapping[str, Any]]) -> Conclusion:
    """The conclusion about ``claim`` from its readings (other claims' are ignored)."""
    mine = [r for r in readings if r.get("claim_id", claim.id) == claim.id]
    figure = claim.value_text
    hardware = _hardware(claim)
    sentences: list[str] = []
    kinds = [*ORDER, *sorted({str(r.get("reading")) for r in mine} - set(ORDER))]
    for kind in kinds:
        for r in (r for r in mine if r.get("reading") == kind):
            if r.get("by_basis"):
                sentences += _per_basis(kind, "it" if sentences else figure, r, hardware)
            else:
                sentences.append(_sentence(kind, "it" if sentences else figure, r, hardware))
            if kind == "published" and near_sentence(r):
                sentences.append(near_sentence(r))
    if not sentences:
        sentences.append(f"{figure} has not been read yet: run the chapter.")
    return Conclusion(
        claim.id,
        claim.result,
        figure,
        claim.statement,
        tuple(sentences),
        certainty(mine, claim),
        finding(claim, mine, hardware),
    )


def conclusions(doc: Mapping[str, Any], registry: Registry | None = None) -> list[Conclusion]:
    """One conclusion per claim of a headline JSON's result, in registry order."""
    reg = registry or load_claims()
    readings = [r for r in doc.get("readings", []) if isinstance(r, Mapping)]
    result = doc.get("result") or (readings[0]["claim_id"].split(".")[0] if readings else None)
    return [conclude(c, readings) for c in reg.for_result(str(result))]


# --- The decisive finding: what a performance engineer would repeat about a claim -----------

#: A reason's clauses go into a finding up to this many characters (whole clauses only).
FINDING_CLAUSE = 160


def _ruled_out(pub: Mapping[str, Any]) -> str:
    """ "impossible as “a” (3.94x a GB300's compute ceiling) or as “b” (1.97x)", or empty."""
    out, last = [], None
    for e in pub.get("by_basis") or []:
        if not isinstance(e, Mapping) or not e.get("ruled_out"):
            continue
        by = e.get("ruled_by")
        name = f"\u201c{e.get('name') or '?'}\u201d"
        if not isinstance(by, Mapping):
            out.append(f"as {name}")
            continue
        gpu, ceiling = str(by.get("gpu") or ""), f"{by['limit']} ceiling"
        where = f"a {gpu}'s {ceiling}" if gpu else f"the {ceiling}"
        out.append(f"as {name} ({by['ratio']:.3g}x" + ("" if where == last else f" {where}") + ")")
        last = where
    return "impossible " + " or ".join(out) if out else ""


def _derived_text(r: Mapping[str, Any]) -> str:
    """A derivation as words ("exactly what ... give (890 B/token: 2.5 rows x 356 B)"), or empty."""
    d = r.get("derived")
    if not isinstance(d, Mapping) or not isinstance(d.get("value"), (int, float)):
        return ""
    value = f"{_num(d['value'])} {d.get('unit') or ''}".strip()
    how = f": {d['how']}" if d.get("how") else ""
    if d.get("exact"):
        return f"exactly what {d.get('from') or 'the specifications'} give ({value}{how})"
    return f"{d.get('from') or 'the specifications'} give {value}, not the claim's figure"


def _physics_finding(r: Mapping[str, Any], pub: Mapping[str, Any]) -> str:
    """The physics reading in a finding: ruled-out bases, a derivation, or verdict and margin."""
    verdict = str(r.get("verdict", ""))
    margin = _informative(r.get("margin"))
    ruled = _ruled_out(pub)
    if ruled:
        parts = [ruled]
        if verdict == "undetermined" and margin:
            parts.append(margin)
        parts += [f"possible as {b}" for b in _possible_as(r)]
        return "; ".join(parts)
    derived = _derived_text(r)
    if derived:
        return derived
    if verdict == "undetermined":
        why = _clauses(str(r.get("reason", "")), limit=FINDING_CLAUSE)
        if len(why) > FINDING_CLAUSE and margin:
            why = margin
        return "physics does not settle it" + (f": {why}" if why else "")
    short = f" ({margin})" if margin and len(margin) <= SHORT_ASIDE else ""
    why = "" if short else _clauses(str(r.get("reason", "")), limit=FINDING_CLAUSE, many=False)
    return f"physically {verdict}{short}" + (f": {why}" if why else "")


def _source(c: Mapping[str, Any]) -> list[str]:
    """A point's ``source`` parts (submitter, hardware, model, engine)."""
    parts = [str(p) for p in c.get("source") or [c.get("who") or "a published point"]]
    return [p for p in parts if p not in ("-", "")] or ["a published point"]


def _who(c: Mapping[str, Any]) -> str:
    """A point's source in short: "SemiAnalysis InferenceX (GB300 x 4, vLLM)"."""
    org, *rest = _source(c)
    org = re.sub(r"\s*\([^()]*\)$", "", org)
    rest = [p for p in dict.fromkeys(rest) if p != org]
    return f"{org} ({', '.join(rest)})" if rest else org


def _spread(c: Mapping[str, Any], low: str, high: str) -> bool:
    """Whether a point's tied points give a spread of ``low`` to ``high`` (two numbers)."""
    lo, hi = c.get(low), c.get(high)
    return (
        bool(c.get("tied"))
        and isinstance(lo, (int, float))
        and isinstance(hi, (int, float))
        and lo != hi
    )


def _span(lo: float, hi: float, unit: str) -> str:
    """``lo`` to ``hi`` (one number where equal) in ``unit``."""
    shown = ("" if unit in ("1", "", "x") else " ") + ("" if unit == "1" else unit)
    return (_num(lo) if lo == hi else f"{_num(lo)} to {_num(hi)}") + shown


def _ratios(lo: float, hi: float) -> str:
    """The claim's ratio to points, ``lo`` to ``hi`` (one where they agree)."""
    return _ratio(lo) if lo == hi else f"{_ratio(lo)} to {_ratio(hi)}"


def _value(c: Mapping[str, Any]) -> str:
    """A point's value (or its tied points' spread) with its unit."""
    unit, v = str(c.get("unit") or ""), c.get("value")
    if _spread(c, "low", "high"):
        return _span(c["low"], c["high"], unit)
    return _span(v, v, unit) if isinstance(v, (int, float)) else ""


def _claim_ratio(c: Mapping[str, Any]) -> str:
    """The claim's ratio to a point (or to its tied points, as a spread)."""
    if _spread(c, "ratio_low", "ratio_high"):
        return _ratios(c["ratio_low"], c["ratio_high"])
    r = c.get("ratio")
    return _ratio(r) if isinstance(r, (int, float)) else ""


def _published_finding(r: Mapping[str, Any]) -> str:
    """The published reading in a finding: the placing, else the ratio to near points; empty
    with only analogues."""
    entries = [e for e in r.get("by_basis") or [] if isinstance(e, Mapping)] or [r]
    entries = [e for e in entries if not e.get("ruled_out")]
    placed = [e for e in entries if e.get("verdict") in PLACED]
    if placed:
        e = placed[0]
        kind = "modelled price" if e.get("modelled") else "published like-for-like point"
        names = [str(x.get("name")) for x in placed if x.get("name") and x is not r]
        own = str(r.get("basis") or "")
        short = len(own) <= SHORT_BASIS and not any(ch in own for ch in ";|")
        basis = f"as {_names(names)}, " if names and len(entries) > 1 else ""
        basis = basis or (f"as {_drop_brackets(own)}, " if own and short else "")
        margin = _drop_brackets(_informative(e.get("margin")).removesuffix(MODELLED_NOTE))
        tail = f" ({margin})" if margin else ""
        return f"{basis}{PLACES[str(e['verdict'])].format(kind)}{tail}"
    c = _field(r, "closest")
    near = _field(r, "near")
    lo, hi = near.get("ratio_low"), near.get("ratio_high")
    closest = c.get("kind") == "near" and bool(_claim_ratio(c))
    if near.get("points") and isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        either = lo <= 1 <= hi  # near points on both sides of the claim, on one basis
        if either or not closest:
            flag = "" if near.get("verified") else ", NOT VERIFIED"
            on = near.get("basis")
            by = f", on both sides of it as {on}" if either and on else ""
            n = len(near["points"])
            return f"the claim is {_ratios(lo, hi)} the {n} near published points{flag}{by}"
    if closest:
        out = f"the claim is {_claim_ratio(c)} the closest near published point, {_who(c)}: "
        out += _value(c)
        return out + (" (NOT VERIFIED)" if c.get("verified") is False else "")
    return ""  # analogues never decide: the certainty's reasons name them


def finding(
    claim: Claim, readings: Iterable[Mapping[str, Any]], hardware: str = "", named: bool = True
) -> str:
    """The decisive finding about ``claim``: physics, then published points, then a run on the
    claim's hardware; ``named`` False leaves the deployment out."""
    rs = {str(r.get("reading")): r for r in readings if r.get("claim_id", claim.id) == claim.id}
    if not rs:
        return f"{claim.value_text} has not been read yet: run the chapter"
    pub = rs.get("published", {})
    parts = []
    if "physics" in rs:
        phys = rs["physics"]
        parts.append(_cap(_physics_finding(phys, pub) + _attainable(phys, named)) + ".")
    published = _published_finding(pub) if pub else ""
    placed = any(e.get("verdict") in PLACED for e in [pub, *(pub.get("by_basis") or [])])
    if placed and rs.get("physics", {}).get("verdict") == "undetermined" and parts:
        parts = []  # a placing decides where physics does not
    if published:
        parts.append(_cap(published) + ".")
    run = rs.get("this run", {})
    if run.get("verdict") in TESTED:
        parts.append(_cap(_this_run("it", run, hardware or _hardware(claim))) + ".")
    return " ".join(parts)


# --- The quotable summary: one verdict word, one short finding, one plain grade -------------

#: A landing cell's finding holds at most this many words (a summary-of-findings table).
FINDING_WORDS = 40
#: GRADE's four plain grades, lowest first: level 1-4 of :mod:`rackbook.results.certainty`.
PLAIN_GRADES: tuple[str, ...] = ("very low", "low", "moderate", "high")
#: What each verdict word means, for the landing's key (the words a finding opens with).
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
class Summary:
    """A summary-of-findings row: verdict word, finding (<= :data:`FINDING_WORDS` words), plain
    grade and why."""

    claim_id: str
    word: str
    finding: str
    grade: str
    why: str


def words(text: str) -> int:
    """The number of words in ``text`` (whitespace-separated, Markdown marks included)."""
    return len(text.split())


def within_words(text: str, limit: int = FINDING_WORDS) -> str:
    """``text`` cut to ``limit`` words at a whole clause, else at a word with an ellipsis."""
    if words(text) <= limit:
        return text
    parts = re.split(r"(?<=[;.])\s+", text)
    out = ""
    for p in parts:
        cand = f"{out} {p}".strip()
        if words(cand) > limit:
            break
        out = cand
    if not out:
        out = " ".join(text.split()[:limit]).rstrip(",;:") + "\u2026"
    return out.rstrip(";,: ") + ("" if out.endswith(("\u2026", ".")) else ".")


def plain_number(text: str) -> str:
    """``64.0%`` as ``64 %``, ``0.0929x`` as ``0.093x``, ``2.17367e+06`` as ``2,173,670``."""
    text = re.sub(r"(\d+(?:\.\d+)?)\s?%", lambda m: f"{m.group(1).removesuffix('.0')} %", text)

    def ratio(m: re.Match[str]) -> str:
        v = float(m.group(1).replace(",", ""))
        return _ratio(v)

    text = re.sub(r"(?<![\w.,])(\d[\d,]*\.\d+)x\b", ratio, text)
    return re.sub(r"\b(\d(?:\.\d+)?)e([+-]\d\d)\b", _unscientific, text)


def for_reader(text: str) -> str:
    """``text`` as a reader meets it: :func:`plain_number` and :func:`reader_names`."""
    return reader_names(plain_number(text))


def reader_names(text: str) -> str:
    """Bare catalog ids ("gb300") as names ("GB300"); ids in names, paths or URLs stay."""
    from rackbook.inputs import catalogs

    names = {g: catalogs.as_gpu(g).label for g in catalogs.load_hardware().gpus}
    names |= {m: catalogs.load_model(m).name for m in catalogs.list_models()}
    for i in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w/.`-]){re.escape(i)}(?![\w`-])", names[i], text)
    return text


def _unscientific(m: re.Match[str]) -> str:
    """``2.17367e+06`` as ``2,173,670``; ``4.1e-05`` as ``0.000041``."""
    v = float(m.group(0))
    if abs(v) >= 1:
        return f"{v:,.0f}"
    return f"{v:.12f}".rstrip("0")


def _k(num: float) -> str:
    """``100000`` tokens as ``100k``, ``1000`` as ``1k``; other numbers as ``1,234``."""
    v = round(num)
    return f"{v // 1000}k" if v >= 1000 and v % 1000 == 0 else f"{v:,}"


def _on_bases(phys: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The physics reading's figure on each basis it names (its ``on_bases``)."""
    return [b for b in phys.get("on_bases") or [] if isinstance(b, Mapping)]


def _possible_as(phys: Mapping[str, Any]) -> list[str]:
    """The bases physics allows, with the figure per GPU: "the rack's total (13,250 per GPU)"."""
    return [
        f"{b['name']} ({b['tok_s_per_gpu']:,.0f} per GPU)"
        for b in _on_bases(phys)
        if b.get("verdict") == "possible" and isinstance(b.get("tok_s_per_gpu"), (int, float))
    ]


def _split_basis(phys: Mapping[str, Any], pub: Mapping[str, Any], gpu: str) -> tuple[str, str]:
    """A figure ruled out on some bases, allowed on others: (head, whole text)."""
    needs = next((b for b in _on_bases(phys) if b.get("ceiling")), None)
    if needs:
        where = f"a {gpu}'s {needs['ceiling']}" if gpu else f"the {needs['ceiling']}"
        head = f"impossible as {needs['name']} ({needs['ratio']:.3g}x {where})"
    else:
        head = _ruled_out(pub)
    parts = [head + "".join(f" but possible as {p}" for p in _possible_as(phys))]
    cond = _field(phys, "condition")
    wl = _field(phys, "workload")
    if cond:
        tail = f" ({_k(wl['isl'])}-in/{_k(wl['osl'])}-out workload assumed)" if wl else ""
        parts.append(f"{cond['basis']}, it {cond['condition']}{tail}")
    return head, "; ".join(parts)


def _word(rs: Mapping[str, Mapping[str, Any]]) -> str:
    """The verdict word (:data:`VERDICT_WORDS`), the strongest evidence deciding."""
    phys, pub, run = rs.get("physics", {}), rs.get("published", {}), rs.get("this run", {})
    if run.get("verdict") in TESTED:
        return str(run["verdict"])
    if phys.get("verdict") == "impossible":
        return "impossible as stated"
    if any(isinstance(e, Mapping) and e.get("ruled_out") for e in pub.get("by_basis") or []):
        return "depends on what is counted"
    entries = [e for e in pub.get("by_basis") or [] if isinstance(e, Mapping)] or [pub]
    placed = [str(e.get("verdict")) for e in entries if e.get("verdict") in PLACED]
    if placed:
        return "consistent" if placed[0] == "within" else f"{placed[0]} published"
    if _field(phys, "derived").get("exact"):
        return "exact"
    if phys.get("verdict") == "possible":
        return "plausible"
    return "unsettled"


def _none_published(pub: Mapping[str, Any]) -> str:
    """ "nothing comparable is published" without a placing or near point; else empty."""
    if not pub or pub.get("verdict") != "none published":
        return ""
    near = _field(pub, "near")
    return "" if near.get("points") else "nothing comparable is published"


def _plain_finding(claim: Claim, rs: Mapping[str, Mapping[str, Any]], word: str) -> str:
    phys, pub = rs.get("physics", {}), rs.get("published", {})
    gpu = claim.scope.hardware.split()[0] if claim.scope.hardware else ""
    none = _none_published(pub)
    pub_text = _published_finding(pub) if pub else ""
    if word == "depends on what is counted":
        head, text = _split_basis(phys, pub, gpu)
        text = _cap(text) + "."
    elif word == "unsettled":
        reason = _drop_brackets(str(phys.get("reason", "")))
        clauses = [c.strip() for c in reason.split(";") if c.strip()]
        head = "; ".join(clauses[:2]) if clauses else ""
        if not head or words(head) > 28:
            cond = _field(phys, "condition")
            margin = _informative(phys.get("margin"))
            margin = f"{cond['basis']}, it {cond['condition']}" if cond else margin
            head = (clauses[0] if clauses and words(clauses[0]) <= 28 else "") or (
                f"physics does not settle it: {margin}" if margin else "physics does not settle it"
            )
        more = none or pub_text
        text = _cap(head) + "." + (f" {_cap(more)}." if more else "")
    else:
        text = finding(claim, rs.values(), named=False)
        if none and not pub_text:
            text = text.rstrip(".") + f". {_cap(none)}."
        run = rs.get("this run", {})
        head = (
            _this_run("it", run, _hardware(claim))
            if word in TESTED
            else pub_text
            if word in ("consistent", "above published", "below published")
            else _physics_finding(phys, pub)
        )
    supported = supported_finding(head, pub, _drop_brackets, FINDING_WORDS)
    return within_words(for_reader(supported or text))


def _why(c: Certainty, word: str) -> str:
    """The first reason that lowers or holds back the certainty, else what it rests on."""
    if word == "impossible as stated":
        return "a physics bound decides"
    for kind in ("lowered by", "held back by"):
        for label, why in c.why:
            if label == kind:
                return plain_number(_drop_brackets(why))
    return _drop_brackets(c.why[0][1] if c.why else "")


def summarize(claim: Claim, readings: Iterable[Mapping[str, Any]]) -> Summary:
    """The summary-of-findings row of ``claim``; a bound on every basis grades high."""
    mine = [r for r in readings if r.get("claim_id", claim.id) == claim.id]
    rs = {str(r.get("reading")): r for r in mine}
    if not rs:
        return Summary(claim.id, "not run", "Not read yet: run the chapter.", "not graded", "")
    word = _word(rs)
    c = certainty(mine, claim)
    level = 4 if word == "impossible as stated" else c.level
    return Summary(
        claim.id, word, _plain_finding(claim, rs, word), PLAIN_GRADES[level - 1], _why(c, word)
    )
