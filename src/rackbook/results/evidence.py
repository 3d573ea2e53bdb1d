"""Published evidence: each claim beside independent measurements of comparable systems.

The points (kind ``published``) are rows of the shipped published traces
(``data/published/<trace>/``: MLPerf v6.1 ``summary.csv``, the SGLang DeepSeek-V4 cookbook),
figures derived from them in code, and figures only posts, PRs and price lists give
(``data/published/figures.yaml``). :func:`published_points` gives them one row each, in the
unit of the claim they bear on (``comparable`` names every mismatch with the claim);
:func:`published_reading` places a value ``within`` their range (widened by a tolerance),
``above``, ``below`` it or ``none published``; :func:`claim_evidence` reads a claim on each of
its named bases, the points that may decide being those whose basis agrees in every part of
:data:`DECISIVE`. Second-hand figures (``verified`` false) are shown, never decide alone.

Units: the claim's own; per-GPU throughput in ``tok/s/GPU``; per-user decode speed in ``tok/s
per user`` (1000 / TPOT in ms). The rows are :mod:`rackbook.results.published_rows`'s, the
rules :mod:`rackbook.results.comparability`'s; their public names import from here too.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core.basis import Difference
from rackbook.core.units import plural
from rackbook.inputs import catalogs
from rackbook.inputs import claims as claims_registry
from rackbook.inputs import published as figures_registry
from rackbook.results.certainty import MODELLED_NOTE
from rackbook.results.comparability import (
    DECISIVE,
    Near,
    Plausible,
    RuledOut,
    as_basis,
    claim_bases,
    differences,
    is_analogue,
    mismatch,
    near_position,
    near_reading,
    ruled_out,
    scale_of,
    score,
)
from rackbook.results.comparability import PLAUSIBLE as PLAUSIBLE
from rackbook.results.comparability import near_summary as near_summary
from rackbook.results.comparability import near_text as near_text
from rackbook.results.headline import ClaimReading
from rackbook.results.published_rows import (
    PER_GPU,
    PER_USER,
    int_or_none,
    load_rows,
    number_text,
    point_ratio,
    point_value,
    ratio_text,
    registries,
    setup_text,
    span_text,
    text_or_none,
    unit_family,
    value_text,
)
from rackbook.results.published_rows import POINT_COLUMNS as POINT_COLUMNS
from rackbook.results.published_rows import SHIPPED as SHIPPED
from rackbook.results.registry import ChapterTable

#: The verdict words of the "published evidence" reading.
VERDICTS: tuple[str, ...] = ("within", "above", "below", "none published", "depends on basis")


@dataclass(frozen=True)
class PublishedReading:
    """The published-evidence reading of one claim.

    ``verdict`` is one of :data:`VERDICTS`; ``margin`` one line (``"1.09x the highest published
    (8.95x)"`` or ``"-"``); ``reason`` one line naming what was compared with what and the
    mismatch; ``sources`` the URLs of the points the verdict used.
    """

    claim_id: str
    verdict: str
    margin: str
    reason: str
    sources: tuple[str, ...]


def published_points(result: str | None = None) -> pd.DataFrame:
    """All shipped published points and registry figures, one row each, in the unit of the
    claim they bear on (``value``/``unit``; the figure as published in ``as_published``).

    Columns (:data:`POINT_COLUMNS`): id, claim_id, result, kind (always ``published``), role
    (measurement | analogue | context), used (decides one of the claim's basis readings),
    value, unit, as_published, verified, submitter, system, hardware, gpus, model, precision,
    engine, engine_version, scenario, isl, osl, concurrency, speculative, tok_s_per_gpu,
    tok_s_per_user, url, date, quote, notes, source (trace name or ``figures.yaml``),
    comparable (how its basis differs from the claim's), basis (its
    :class:`rackbook.core.basis.Basis`), conversion (the stated rule when the value was
    converted from the published one). ``result`` keeps only the points of that result's
    claims.
    """
    df = _all_points(str(paths.DATA)).copy()
    if result is not None:
        registries(str(paths.DATA))[0].for_result(result)  # unknown result: one-line InputError
        df = df[df["result"] == result]
    return df.reset_index(drop=True)


@functools.lru_cache(maxsize=4)
def _all_points(data: str) -> pd.DataFrame:
    """Every published point (see :func:`published_points`), built once per data folder."""
    reg = registries(data)[0]
    df = load_rows(data)
    df["comparable"] = [mismatch(r, reg.get(r["claim_id"])) for _, r in df.iterrows()]
    used: set[str] = set()
    for c in reg.claims:
        for br in _basis_readings(c, _claim_value(c), df[df["claim_id"] == c.id]):
            used.update(br.decided_on)
    df["used"] = df["id"].isin(used).astype(bool)
    return df


def published_reading(
    claim_id: str, value: float, points: pd.DataFrame, tolerance: float = 0.0
) -> PublishedReading:
    """``value`` against the published ``points`` (column ``value``, same unit; optional
    ``verified``, ``url``, ``unit``): ``within`` [min - tolerance, max + tolerance], ``above`` or
    ``below`` it; ``none published`` when no point is left."""
    if "verified" in points.columns:
        second_hand = points[~points["verified"].astype(bool)]
        points = points[points["verified"].astype(bool)]
    else:
        second_hand = points.iloc[0:0]
    vals = points["value"].astype(float).to_numpy() if len(points) else np.array([])
    vals = vals[np.isfinite(vals)]
    unit = str(points["unit"].iloc[0]) if "unit" in points.columns and len(points) else ""
    skipped = (
        f"; {plural(len(second_hand), 'second-hand figure')} NOT VERIFIED, not used"
        if len(second_hand)
        else ""
    )
    if value is None or not math.isfinite(value) or not len(vals):
        why = "no published point to compare with" if not len(vals) else "the value is unknown"
        return PublishedReading(claim_id, "none published", "-", why + skipped, ())
    lo, hi = float(vals.min()), float(vals.max())
    if value > hi + tolerance:
        verdict, margin = (
            "above",
            f"{ratio_text(value / hi)} the highest published ({value_text(hi, unit)})",
        )
    elif value < lo - tolerance:
        verdict, margin = (
            "below",
            f"{ratio_text(value / lo)} the lowest published ({value_text(lo, unit)})",
        )
    else:
        verdict = "within"
        margin = (
            f"within the published {value_text(lo, unit)} to {value_text(hi, unit)}"
            if hi > lo
            else f"at the published {value_text(hi, unit)}"
        )
    span = span_text(lo, hi, unit)
    n = plural(len(vals), "published point")
    reason = f"{value_text(value, unit)} against {n}, {span}{skipped}"
    urls = tuple(dict.fromkeys(points["url"])) if "url" in points.columns else ()
    return PublishedReading(claim_id, verdict, margin, reason, urls)


@dataclass(frozen=True)
class Closest:
    """The published point closest in basis to a claim's (named) basis: its id, who published
    it (``source``: submitter, hardware x GPUs, model, engine), value and unit, the claim's
    figure over it (``ratio``; None when the units differ), its URL, the parts its basis
    differs in (empty: like for like) and its stated ``setup``."""

    id: str
    source: tuple[str, ...]
    value: float
    unit: str
    ratio: float | None
    url: str
    differences: tuple[basis_mod.Difference, ...]
    verified: bool
    #: ``like for like`` (decides), ``near`` (same quantity, model and GPU; differs in
    #: another part that decides, so it does not) or ``analogue`` (another quantity, model or
    #: GPU class: shown, never decides)
    kind: str
    #: the other points exactly as close in basis (distance, verification): values ``low`` to
    #: ``high``, the claim ``ratio_low`` to ``ratio_high`` them; a spread, never resolved to one.
    tied: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    #: a cost model's figure (a modelled price), not a measurement nor a listed price
    modelled: bool = False
    #: a later source reporting a change since this point (date and what), None if none
    superseded: str | None = None
    setup: str = ""  # concurrency, lengths, speculation and date as stated (setup_text)

    def as_dict(self) -> dict[str, object]:
        """For the headline JSON: the fields, with lists for tuples."""
        lists = {
            "differences": [d.text for d in self.differences],
            "differing": [dataclasses.asdict(d) for d in self.differences],
            "tied": list(self.tied),
            "source": list(self.source),
            "who": self.who,
        }
        return dataclasses.asdict(self) | lists

    @property
    def who(self) -> str:
        """``vLLM · GB300 x 4 · DeepSeek-V4.1-Flash · vLLM``."""
        return " · ".join(self.source)

    def value_span(self) -> str:
        """:func:`rackbook.results.published_rows.point_value` of this point."""
        return point_value(vars(self))

    def ratio_span(self) -> str:
        """:func:`rackbook.results.published_rows.point_ratio` of this point."""
        return point_ratio(vars(self))

    def text(self) -> str:
        """One line: ``vLLM · GB300 x 4: 456.6 tok/s per user, the claim 1.81x it (URL); differs
        in: ...``; equally close points as a spread."""
        flag = "" if self.verified else " (NOT VERIFIED)"
        lead = {
            "like for like": "",
            "near": "does not decide: ",
            "analogue": "an analogue, never decides: ",
        }[self.kind]
        diffs = "; ".join(d.named(catalogs.display_names()) for d in self.differences)
        diff = f"{lead}differs in {diffs}" if diffs else "like for like"
        old = f"; superseded {self.superseded.split(':')[0]}" if self.superseded else ""
        at = f"{self.setup}; {self.url}" if self.setup else self.url
        return f"{self.who}: {self.value_span()}{flag}{self.ratio_span()} ({at}); {diff}{old}"


@dataclass(frozen=True)
class BasisReading:
    """The published reading of a claim on one named basis: verdict (:data:`VERDICTS`), the
    margin that decided it, the basis (one line), the points it decided on (ids and URLs), and
    the closest point of that basis (None when no published point counts the same thing)."""

    name: str
    verdict: str
    margin: str
    basis: str
    decided_on: tuple[str, ...]
    sources: tuple[str, ...]
    closest: Closest | None
    conversion: str
    #: the near evidence of this basis (:class:`Near`), None when no point is near
    near: Near | None = None
    #: why the physics reading rules this basis out (None: physics allows it or cannot tell)
    ruled_by: RuledOut | None = None
    #: True when every point the verdict rests on is a modelled figure (a cost model's price):
    #: the reading is shown, but it is not a published like-for-like measurement
    modelled: bool = False
    #: the conversion's arithmetic where another claim's figure divides the value (:func:`_step`)
    step: str = ""

    @property
    def ruled_out(self) -> str | None:
        """Why the physics reading rules this basis out, in words (None: it does not)."""
        return self.ruled_by.text() if self.ruled_by else None

    def text(self) -> str:
        """One line: name, verdict, margin and the closest point."""
        close = f"closest: {self.closest.text()}" if self.closest else "no published point"
        margin = f" ({self.margin})" if self.margin not in ("", "-") else ""
        out = as_basis(self.name) + ": "
        if self.ruled_out:
            out += f"ruled out by physics ({self.ruled_out}); "
        out += f"{self.verdict}{margin}; {close}"
        return out + (f"; near evidence: {self.near.text()}" if self.near is not None else "")

    def as_dict(self) -> dict[str, object]:
        """For the headline JSON."""
        d = dataclasses.asdict(self)
        d["ruled_out"] = self.ruled_out
        d["decided_on"] = list(self.decided_on)
        d["sources"] = list(self.sources)
        d["closest"] = self.closest.as_dict() if self.closest is not None else None
        d["near"] = self.near.as_dict() if self.near is not None else None
        return d


def _claim_value(claim: claims_registry.Claim) -> float:
    return claim.value if claim.value is not None else float("nan")


def _who(r: pd.Series) -> tuple[str, ...]:
    """Who published a point: submitter, hardware x GPUs (or GPUs), model, engine."""
    parts, names = [str(r["submitter"])], catalogs.display_names()
    hw = names.get(str(r["hardware"]), text_or_none(r["hardware"]))
    hw = None if hw in ("not stated", basis_mod.UNKNOWN) else hw  # never "not stated x 16"
    gpus = r["gpus"]
    if hw:
        parts.append(f"{hw}" + ("" if pd.isna(gpus) else f" x {int(gpus)}"))
    elif not pd.isna(gpus):
        parts.append(f"{int(gpus)} GPUs")
    if text_or_none(r["model"]):
        parts.append(names.get(str(r["model"]), str(r["model"])))
    if text_or_none(r["engine"]):
        parts.append(str(r["engine"]).split(",")[0])
    return tuple(parts)


def _basis_readings(
    claim: claims_registry.Claim, value: float, points: pd.DataFrame, tolerance: float = 0.0
) -> list[BasisReading]:
    """The claim's reading on each of its named bases (:func:`claim_bases`): points whose basis
    agrees in every part of :data:`DECISIVE` decide (verified measurements only); the closest
    point of that basis is named with the ratio of the claim's figure to it (points equally
    close shown as a spread); the near points (:func:`is_near`) give the basis's near
    evidence; a basis the physics reading rules out says so (:func:`ruled_out`)."""
    out = []
    for plaus, cb in claim_bases(claim):
        scale = scale_of(plaus)
        v = value * scale if value is not None and math.isfinite(value) else float("nan")
        rows = []
        for _, r in points.iterrows():
            b = r["basis"]
            if not isinstance(b, basis_mod.Basis) or r["role"] == "context":
                continue
            # a point is "of this basis" when it counts the same thing in every part the named
            # basis fills in (the expanded unknowns)
            # (a part the named basis leaves open, None, takes any point)
            if any(
                want is not None and getattr(b, part) != want
                for part, want in plaus.changes
                if part != "counting"
            ):
                continue
            if plaus.max_gpus is not None and (pd.isna(r["gpus"]) or r["gpus"] > plaus.max_gpus):
                continue  # a node-scale reading takes node-scale points only
            diffs = differences(cb, b, claim.id)
            decisive = [d for d in diffs if d.part in DECISIVE[claim.id]]
            if plaus.cross_check and plaus.max_gpus is not None:  # a node of unstated size
                node = Difference("gpu_count", int(r["gpus"]), "a node, size not stated")
                diffs, decisive = [node, *diffs], [node, *decisive]
            elif plaus.cross_check:  # derived from another claim: shown, never like for like
                how = Difference("counting", "derived from the rack claim at published prices")
                diffs, decisive = [how, *diffs], [how, *decisive]
            rows.append((r, diffs, decisive))
        deciding = [
            r
            for r, _, dec in rows
            if not dec and r["role"] == "measurement" and bool(r["verified"])
        ]
        unverified_like = [r for r, _, dec in rows if not dec and not bool(r["verified"])]
        frame = pd.DataFrame(deciding) if deciding else points.iloc[0:0]
        if unverified_like:
            frame = pd.concat([frame, pd.DataFrame(unverified_like)])
        pr = published_reading(claim.id, v, frame, tolerance * scale)
        unit = _unit_of(claim, plaus)
        closest = _closest(cb, v, unit, rows) if rows else None
        margin = pr.margin
        if pr.verdict == "none published":
            margin = "-"
        modelled = bool(deciding) and all(_modelled(r) for r in deciding)
        if modelled and margin != "-":
            margin += MODELLED_NOTE
        step = _step(claim, plaus, value, v)
        out.append(
            BasisReading(
                plaus.name,
                pr.verdict,
                margin,
                cb.short(),
                tuple(str(r["id"]) for r in deciding),
                pr.sources,
                closest,
                f"{plaus.conversion}: {step}" if step else plaus.conversion,
                near_reading(plaus, v, unit, rows, cb, claim.id),
                ruled_out(claim, plaus, value),
                modelled,
                step,
            )
        )
    return out


def _step(claim: claims_registry.Claim, plaus: Plausible, value: float, v: float) -> str:
    """Where another claim's figure divides the value (``divide_by``), the arithmetic:
    ``954,000 / 7.9 = 120,759 tok/s/GPU``; empty otherwise."""
    if plaus.divide_by is None or not math.isfinite(v):
        return ""
    other = registries(str(paths.DATA))[0].get(plaus.divide_by)
    unit = _unit_of(claim, plaus)
    return f"{number_text(value)} / {other.value:g} = {value_text(v, unit)}"


def _modelled(r: pd.Series) -> bool:
    """True for a point that is a cost model's figure (its ``price_kind``)."""
    return text_or_none(r.get("price_kind")) in figures_registry.MODELLED_PRICES


def _closest(
    cb: basis_mod.Basis, v: float, unit: str, rows: list[tuple[pd.Series, list, list]]
) -> Closest:
    """The closest point of a named basis: least distance in basis (:func:`score`), verified
    first; points exactly as close are kept as a spread (``tied``), never narrowed to the one
    nearest the claim's figure; the representative is the first by id."""
    ranked = sorted(rows, key=_closeness)
    r, diffs, dec = ranked[0]
    best = _closeness(ranked[0])[:2]
    tied = [x for x in ranked[1:] if _closeness(x)[:2] == best]
    same = unit_family(str(r["unit"])) == unit_family(unit)
    fin = same and math.isfinite(v)
    ratio = v / float(r["value"]) if fin else None
    group = [r] + [x[0] for x in tied]
    vals = [float(x["value"]) for x in group if unit_family(str(x["unit"])) == unit_family(unit)]
    lo = min(vals) if vals else None
    hi = max(vals) if vals else None
    return Closest(
        str(r["id"]),
        _who(r),
        float(r["value"]),
        str(r["unit"]),
        ratio,
        str(r["url"]),
        tuple(diffs),
        bool(r["verified"]),
        "analogue"
        if r["role"] == "analogue" or is_analogue(cb, r["basis"], dec)
        else "near"
        if dec or not bool(r["verified"])
        else "like for like",
        tuple(str(x[0]["id"]) for x in tied),
        lo,
        hi,
        v / hi if fin and hi else None,
        v / lo if fin and lo else None,
        _modelled(r),
        text_or_none(r.get("superseded")),
        setup_text(r) if len({setup_text(x) for x in group}) == 1 else "",  # tied: if shared
    )


def _closeness(row: tuple[pd.Series, list[Difference], object]) -> tuple[float, bool, str]:
    """Sort key of a candidate for the closest point: its distance in basis (:func:`score`), then
    verified first, then id."""
    r, diffs, _ = row
    return (score(diffs), not bool(r["verified"]), str(r["id"]))


def _unit_of(claim: claims_registry.Claim, plaus: Plausible) -> str:
    """The unit the published points of this claim are in: per-GPU throughput for rack
    throughput, one user's speed for single-user, else the claim's own."""
    if claim.id == "rack-scaling.throughput":
        return PER_GPU
    if claim.id == "single-user.throughput":
        return PER_USER
    return claim.unit


#: Verdict when the named bases' readings disagree (the claim's basis decides the answer).
DEPENDS = "depends on basis"


def combine(readings: list[BasisReading]) -> str:
    """One verdict over the named bases: ``none published`` when none decides; the verdict when
    every basis with a published point of its own gives the same; else :data:`DEPENDS`."""
    decided = list(dict.fromkeys(r.verdict for r in readings if r.verdict != "none published"))
    if not decided:
        return "none published"
    return decided[0] if len(decided) == 1 else DEPENDS


@dataclass(frozen=True)
class ClaimEvidence:
    """The published-evidence reading of a claim over its named bases (:class:`BasisReading`
    each), the combined verdict (:func:`combine`), the closest point over the bases physics
    allows, the bases it rules out, and the near evidence over the allowed bases (``near``:
    points, low, high, unit, ratio_low, ratio_high, bases; None without a near point)."""

    claim_id: str
    verdict: str
    margin: str
    reason: str
    sources: tuple[str, ...]
    bases: tuple[BasisReading, ...]
    closest: Closest | None
    closest_basis: str | None
    near: dict[str, object] | None = None
    ruled_out: tuple[str, ...] = ()
    #: the highest list price among the claim's points (:func:`highest_list_price`)
    list_price: dict[str, object] | None = None


def claim_evidence(claim_id: str, value: float | None = None) -> ClaimEvidence:
    """The book's published-evidence reading of a claim of ``data/claims.yaml`` (its figure, or
    ``value`` in the claim's unit), on each of its named bases."""
    reg, _ = registries(str(paths.DATA))
    claim = reg.get(claim_id)
    if value is None:
        value = _claim_value(claim)
    pts = published_points()
    mine = pts[pts["claim_id"] == claim_id]
    brs = _basis_readings(claim, value, mine, reg.tolerance(claim_id))
    verdict = combine(brs)
    allowed = [br for br in brs if not br.ruled_out] or brs
    out_names = tuple(br.name for br in brs if br.ruled_out)
    cands = sorted(
        (
            (score(br.closest.differences), not br.closest.verified, i, br)
            for i, br in enumerate(allowed)
            if br.closest is not None
        ),
        key=lambda c: c[:3],
    )
    top = [c[3] for c in cands if c[:2] == cands[0][:2]] if cands else []
    # among bases equally close, the one the near evidence supports (the claim's figure inside
    # its near points) is named first: the headline leans to it, never to one it does not favour
    top = sorted(top, key=lambda br: br.near is None or near_position(br.near) != "inside")
    closest = top[0].closest if top else None
    closest_basis = top[0].name if top else None
    if closest is not None:
        kind = {
            "analogue": "closest published point (an analogue, never decides)",
            "near": "closest published point (near, does not decide)",
        }.get(closest.kind, "closest like-for-like point")
        if closest.modelled:
            kind = "closest published figure (a modelled price, not a measurement)"
        if len(top) > 1:
            each = "; ".join(
                f"{as_basis(br.name)}: {br.closest.value_span()}{br.closest.ratio_span()}"  # type: ignore[union-attr]
                for br in top
            )
            margin = f"{kind}, on {len(top)} bases equally close: {each}"
        else:
            margin = f"{kind}: {closest.value_span()}{closest.ratio_span()}"
    else:
        margin = "-"
    decided = [br for br in brs if br.verdict != "none published"]
    if len(brs) == 1 and decided:
        margin = f"{decided[0].margin}; {margin}"
    near = near_summary(brs, closest_basis)
    if near:
        margin += f"; {near_text(near)}"
    top_list = highest_list_price(mine, value)
    if top_list:
        margin += f"; {list_price_text(top_list)}"
    if out_names:
        margin = f"physics rules out {_names_text(out_names)}; {margin}"
    lead = READING_NOTES.get(claim_id, "")
    basis_line = (
        f"basis: {brs[0].basis}"
        if len(brs) == 1
        else f"basis unknown in a part that matters, read on {len(brs)} named bases"
    )
    ordered = [br for br in brs if not br.ruled_out] + [br for br in brs if br.ruled_out]
    reason = (
        "; ".join(x for x in (lead, basis_line) if x)
        + ": "
        + " | ".join(br.text() for br in ordered)
    )
    sources = tuple(dict.fromkeys(u for br in brs for u in br.sources))
    return ClaimEvidence(
        claim_id,
        verdict,
        margin,
        reason,
        sources,
        tuple(brs),
        closest,
        closest_basis,
        near,
        out_names,
        top_list,
    )


def highest_list_price(points: pd.DataFrame, value: float) -> dict[str, object] | None:
    """The highest list (on-demand) price per GPU-hour among a claim's points: ``value``
    ($/GPU-hour), ``who`` lists it (submitter, hardware), ``verified``, and ``ratio``, the
    claim's figure over it (None for an unknown figure); None where the claim has none."""
    if "price_kind" not in points.columns:
        return None
    lp = points[(points["price_kind"] == "list price") & (points["unit"] == "$/GPU-hour")]
    lp = lp[~lp["id"].str.startswith("token-value:")]
    if not len(lp):
        return None
    r = lp.loc[lp["value"].astype(float).idxmax()]
    hw = text_or_none(r["hardware"])
    price = float(r["value"])
    known = value is not None and math.isfinite(value)
    return {
        "value": price,
        "who": f"{r['submitter']}{', ' + hw if hw else ''}",
        "verified": bool(r["verified"]),
        "ratio": value / price if known else None,
    }


def list_price_text(lp: Mapping[str, object]) -> str:
    """:func:`highest_list_price` in words: ``highest list price: $18.00/GPU-hour (Oracle
    Cloud ..., NOT VERIFIED), the claim 2.16x it``."""
    flag = "" if lp["verified"] else ", NOT VERIFIED"
    ratio = lp["ratio"]
    tail = f", the claim {ratio_text(ratio)} it" if isinstance(ratio, float) else ""
    price = value_text(float(lp["value"]), "$/GPU-hour")  # type: ignore[arg-type]
    return f"highest list price: {price} ({lp['who']}{flag}){tail}"


def _names_text(names: tuple[str, ...]) -> str:
    """Basis names as ``as a`` or ``as a and as b`` or ``as a, as b and as c``."""
    shown = [as_basis(n) for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


#: What the reader must know before a claim's published reading: why it has no published
#: measurement of its own basis, or which part of its basis the write-up leaves open.
READING_NOTES: Mapping[str, str] = ChapterTable("READING_NOTES")


def reading(
    claim_id: str, value: float | None = None, registry: claims_registry.Registry | None = None
) -> ClaimReading:
    """The published reading of a claim as the chapters' three-readings vocabulary
    (:class:`rackbook.results.headline.ClaimReading`), carrying the URLs it decided on, the
    basis (or named bases) it decided on, the closest like-for-like point and each named
    basis's reading, for the headline file."""
    if value is None and registry is not None:
        value = registry.get(claim_id).value
    e = claim_evidence(claim_id, value)
    closest = e.closest.as_dict() | {"basis": e.closest_basis} if e.closest else None
    return ClaimReading(
        claim_id,
        "published",
        e.verdict,
        e.margin,
        e.reason,
        sources=e.sources,
        basis=" | ".join(f"{as_basis(b.name)}: {b.basis}" for b in e.bases),
        closest=closest,
        by_basis=tuple(b.as_dict() for b in e.bases),
        near=e.near,
        ruled_out=e.ruled_out,
        list_price=e.list_price,
    )


#: Columns of :func:`evidence_table`.
TABLE_COLUMNS = (
    "claim_id kind who hardware gpus model engine value unit as_published used role verified "
    "comparable basis verdict margin url date"
).split()


#: The columns a published point's row takes from :func:`published_points` as they are.
_POINT_COPY = "hardware gpus model engine value unit as_published role comparable url date".split()


def evidence_table(result: str) -> pd.DataFrame:
    """A chapter's "published measurements" table: for each claim of ``result``, a row of kind
    ``claim`` (its figure, the combined published verdict and the closest point), one row of
    kind ``reading`` per named basis (its verdict, margin, the closest point of that basis in
    ``comparable`` with its URL), then its published points (kind ``published``; ``used``
    marks those that decided a basis reading, ``comparable`` names how their basis differs).
    Columns: :data:`TABLE_COLUMNS` (None where a kind has no value)."""
    reg, _ = registries(str(paths.DATA))
    pts, names = published_points(result), catalogs.display_names()
    rows = []
    for c in reg.for_result(result):
        e = claim_evidence(c.id)
        rows.append(
            {
                "claim_id": c.id,
                "kind": "claim",
                "who": "claim (data/claims.yaml)",
                "hardware": c.scope.hardware,
                "gpus": c.scope.gpu_count,
                "model": c.scope.model,
                "engine": "vLLM",
                "value": c.value,
                "unit": c.unit,
                "as_published": c.value_text,
                "used": False,
                "role": "claim",
                "verified": False,
                "comparable": e.reason,
                "basis": c.figure_basis.short(),
                "verdict": e.verdict,
                "margin": e.margin,
                "url": e.closest.url if e.closest else c.source.primary,
            }
        )
        for br in e.bases:
            close = br.closest.text() if br.closest else "no published point"
            near = f"; near evidence (does not decide): {br.near.text()}" if br.near else ""
            margin = br.margin
            if br.ruled_out:
                shown = f"; {br.margin}" if br.margin not in ("", "-") else ""
                margin = f"ruled out by physics: {br.ruled_out}{shown}"
            rows.append(
                {
                    "claim_id": c.id,
                    "kind": "reading",
                    "who": br.name,
                    "as_published": br.conversion or None,
                    "used": bool(br.decided_on),
                    "role": "reading",
                    "verified": True,
                    "comparable": close + near,
                    "basis": br.basis,
                    "verdict": br.verdict,
                    "margin": margin,
                    "url": br.closest.url if br.closest else None,
                }
            )
        for p in pts[pts["claim_id"] == c.id].to_dict("records"):
            gpu, _, how = str(p["system"]).partition(" ")  # "b200 low-latency (single)"
            system = f" · {names.get(gpu, gpu)} {how}".rstrip() if text_or_none(p["system"]) else ""
            b = p["basis"]
            rows.append(
                {k: p[k] for k in _POINT_COPY}
                | {"claim_id": c.id, "kind": "published", "who": f"{p['submitter']}{system}"}
                | {"used": bool(p["used"]), "verified": bool(p["verified"])}
                | {"basis": b.short(names) if isinstance(b, basis_mod.Basis) else None}
            )
    df = pd.DataFrame([dict.fromkeys(TABLE_COLUMNS) | r for r in rows], columns=TABLE_COLUMNS)
    df["gpus"] = pd.array([int_or_none(v) for v in df["gpus"]], dtype="Int64")
    return df
