"""Published evidence: each claim beside the published rows (:mod:`published_rows`), read on
each of its named bases; second-hand figures never decide. Comparability: the parts a point must
share with a claim's named basis to decide (:data:`DECISIVE`), the bases a claim can mean
(:data:`PLAUSIBLE`) and when physics rules one out, and when a related measurement is near
evidence (:class:`Near`)."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core.basis import Basis, Difference
from rackbook.core.units import plural, ratio_text
from rackbook.inputs import catalogs
from rackbook.inputs import claims as claims_registry
from rackbook.physics import check as physics_check
from rackbook.results.headline import VOCABULARY, ClaimReading
from rackbook.results.published_rows import (
    MODELLED_NOTE,
    NODE_GPUS,
    PER_GPU,
    PER_USER,
    RACK_GPUS,
    as_basis,
    int_or_none,
    load_rows,
    near_text,
    number_text,
    point_ratio,
    point_value,
    registries,
    setup_text,
    side,
    span_text,
    text_or_none,
    unit_family,
    value_text,
)
from rackbook.results.registry import ChapterTable

#: A candidate point of a named basis: (row, differences, the decisive ones).
Candidate = tuple[pd.Series, list[Difference], list[Difference]]

#: Parts in which a point must agree with the claim's named basis to decide (chapters declare).
DECISIVE: Mapping[str, tuple[str, ...]] = ChapterTable("DECISIVE")
#: Each part's weight in a point's distance from the claim's basis (summed over differences).
WEIGHTS: dict[str, float] = dict(metric=10, tokens=10, per=10, counting=3, gpus=3, model=4)
WEIGHTS |= dict(hardware=2, gpu_count=2, concurrency=2, context=2, workload=1, speculation=1)
WEIGHTS |= dict(statistic=1, engine=1, serving=0.5)


@dataclass(frozen=True)
class Plausible:
    """One plausible basis of a claim: the parts it fills in, the figure's factor, the ``phase``
    whose ceilings bound it, a claim dividing it; a ``cross_check`` never decides."""

    name: str
    changes: tuple[tuple[str, object], ...] = ()
    scale: float = 1.0
    conversion: str = ""
    phase: str | None = None
    divide_by: str | None = None
    max_gpus: int | None = None
    cross_check: bool = False
    head: str = ""


def scale_of(plaus: Plausible) -> float:
    """``scale``, divided by the figure of the claim ``divide_by`` names if any."""
    if plaus.divide_by is None:
        return plaus.scale
    other = registries(str(paths.DATA))[0].get(plaus.divide_by).value
    return plaus.scale / float(other) if other else float("nan")


#: Token kinds a throughput counts: (words, basis tokens, the phase bounding it; counted cache
#: hits cost no GEMM: none).
_TOKENS = (
    ("output tokens", "output", "decode"),
    ("input + output, cached prefix not counted", "input+output", "prefill"),
    (
        "input + output counting each turn's re-read cached prefix",
        "input incl. cached+output",
        None,
    ),
)
#: The claim reading the rack against a node (at most NODE_GPUS: HGX; a tray has 4).
SPEEDUP_CLAIM = "rack-scaling.speedup"
#: GPUs of one cloud instance of a GB300 NVL72 rack (a compute tray).
INSTANCE_GPUS = 4
_NODE = "the node's throughput per GPU (the speed-up read as a per-GPU ratio)"
_RACK = f"a rack total over {RACK_GPUS} GPUs"
_TOTAL = dict(scale=1 / RACK_GPUS, head=_RACK)
_TOTAL["conversion"] = f"the figure read as the rack's total, divided by its {RACK_GPUS} GPUs"


def _on(name: str, part: str, value: object, **kw: Any) -> Plausible:
    """A plausible basis that sets one ``part`` to ``value``."""
    return Plausible(name, ((part, value),), **kw)


#: Claims whose write-up leaves a part of the basis that matters unknown: one reading per basis.
PLAUSIBLE: dict[str, tuple[Plausible, ...]] = {
    "rack-scaling.throughput": (
        *(_on(f"per GPU, {n}", "tokens", t, phase=ph, head="per GPU") for n, t, ph in _TOKENS),
        Plausible(
            f"{_NODE}, {_TOKENS[2][0]}",
            (("tokens", _TOKENS[2][1]), ("gpu_count", None)),
            conversion="the figure read per GPU of the rack, and the speed-up as a ratio of "
            "per-GPU throughputs: the node's throughput per GPU is the figure over the speed-up",
            divide_by=SPEEDUP_CLAIM,
            max_gpus=NODE_GPUS,
            cross_check=True,
            head=_NODE,
        ),
        *(_on(f"{_RACK}, {n}", "tokens", t, phase=ph, **_TOTAL) for n, t, ph in _TOKENS),
    ),
    "rack-scaling.speedup": tuple(
        _on(f"node = {n} (linear scaling would be {72 // g}x)", "counting", f"72 GPUs over {g}")
        for n, g in (("one 4-GPU GB300 compute tray", 4), ("an 8-GPU HGX-class node", 8))
    ),
    "rack-scaling.cost": (
        _on("a rental price", "metric", "rental price per GPU-hour"),
        _on("a list (on-demand) price", "metric", "list price per GPU-hour"),
        _on(
            "a list price per 4-GPU instance-hour",
            "metric",
            "list price per GPU-hour",
            scale=1 / INSTANCE_GPUS,
            conversion=f"the figure read as one {INSTANCE_GPUS}-GPU instance's (a GB300 tray's) "
            f"hourly price, divided by its {INSTANCE_GPUS} GPUs",
        ),
        _on("an ownership cost", "metric", "ownership cost per GPU-hour"),
        _on(
            "a token value at the model vendor's API prices",
            "metric",
            "token value per GPU-hour",
            conversion="the figure read as what the tokens of the rack claim's throughput, "
            "per GPU, are worth in an hour at DeepSeek's V4.1-Flash API list prices and "
            "AgentX's token mix",
            cross_check=True,
        ),
    ),
    "single-user.throughput": tuple(
        _on(f"{n} TPOT", "statistic", s) for n, s in (("mean", "mean"), ("median (P50)", "median"))
    ),
}


def claim_bases(claim: claims_registry.Claim) -> list[tuple[Plausible, basis_mod.Basis]]:
    """The named bases a claim is read on: its stated one, or its :data:`PLAUSIBLE` ones."""
    stated = claim.figure_basis
    named = PLAUSIBLE.get(claim.id, (Plausible("as stated"),))
    return [(p, stated.replace(**dict(p.changes))) for p in named]


#: Claims compared on a few parts only (a price depends on no model, workload or GPU count).
PARTS: dict[str, tuple[str, ...]] = {"rack-scaling.cost": ("metric", "hardware", "per")}
#: Parts whose difference makes a point an analogue (so does another GPU generation).
ANALOGUE_PARTS = ("metric", "tokens", "per", "model")


def is_analogue(claim_basis: basis_mod.Basis, point: basis_mod.Basis, diffs: list) -> bool:
    """True for another quantity, model or GPU generation than the claim's: never decides."""
    gen = basis_mod.hardware_class
    other = gen(point.hardware) != gen(claim_basis.hardware)
    return any(d.part in ANALOGUE_PARTS or (d.part == "hardware" and other) for d in diffs)


def differences(cb: basis_mod.Basis, point: basis_mod.Basis, claim_id: str) -> list[Difference]:
    """How ``point`` differs from the claim's basis ``cb`` in the parts read for ``claim_id``."""
    parts = PARTS.get(claim_id) or tuple(dict.fromkeys((*DECISIVE[claim_id], *WEIGHTS)))
    return basis_mod.differences(cb, point, parts)


def mismatch(row: pd.Series | dict[str, object], claim: claims_registry.Claim) -> str:
    """How a point's basis differs from the claim's stated one, in words."""
    b = row.get("basis")
    if not isinstance(b, basis_mod.Basis):
        return "no basis"
    diffs = differences(claim.figure_basis, b, claim.id)
    if not diffs:
        return "same basis as the claim"
    names = catalogs.display_names()
    return "differs from the claim in: " + "; ".join(d.named(names) for d in diffs)


def score(diffs: Sequence[basis_mod.Difference]) -> float:
    """Distance in basis: the :data:`WEIGHTS` of the parts differing (1 by default)."""
    return float(sum(WEIGHTS.get(d.part, 1.0) for d in diffs))


@dataclass(frozen=True)
class RuledOut:
    """Why physics rules a basis out: its tok/s per GPU is ``ratio`` x the ``limit`` ceiling."""

    tok_s_per_gpu: float
    phase: str
    ratio: float
    limit: str
    ceiling_tok_s_per_gpu: float
    gpu: str

    def text(self) -> str:
        return (
            f"{number_text(self.tok_s_per_gpu)} computed {self.phase} tok/s per GPU is "
            f"{ratio_text(self.ratio)} the {self.limit} ceiling of "
            f"{number_text(self.ceiling_tok_s_per_gpu)} on {self.gpu}"
        )


@functools.lru_cache(maxsize=64)
def _physics_rules_out(
    model: str, hardware: str, gpus: int, per_gpu: float, phase: str, data: str = ""
) -> RuledOut | None:
    """Why physics rules out ``per_gpu`` tok/s per GPU of ``phase``, or None (also uncatalogued)."""
    mid = catalogs.catalog_model_id(model)
    gid = basis_mod.hardware_key(hardware)
    if mid is None or gid not in catalogs.load_hardware().gpus:
        return None
    c = physics_check.check_claim(mid, gid, gpus, per_gpu, phase=phase)
    ruled = RuledOut(per_gpu, phase, c.ratio, c.limit, c.ceiling_tok_s_per_gpu, gid.upper())
    return ruled if c.verdict == "impossible" else None


def ruled_out(claim: claims_registry.Claim, plaus: Plausible, value: float) -> RuledOut | None:
    """Why physics rules this named basis out (every counted token computed), or None."""
    sc = claim.scope
    if plaus.phase is None or not (math.isfinite(value) and value > 0):
        return None
    if not (sc.model and sc.hardware and sc.gpu_count):
        return None
    per_gpu, data = value * scale_of(plaus), str(paths.DATA)  # the catalogs depend on data
    return _physics_rules_out(sc.model, sc.hardware, int(sc.gpu_count), per_gpu, plaus.phase, data)


def model_family(model: str) -> str:
    """``deepseek-flash`` for DeepSeek-V4.1-Flash and V4-Flash."""
    k = basis_mod.model_key(model)
    m = re.match(r"^deepseek-v[0-9.]+-(flash|pro)", k)
    return f"deepseek-{m.group(1)}" if m else k


def stated_differences(claim_basis: basis_mod.Basis, decisive: list) -> list[str]:
    """The decisive differences' parts that count for near evidence (not model, GPU, unknowns)."""
    skip = {"model", "hardware"}
    if claim_basis.speculation == basis_mod.UNKNOWN:
        skip.add("speculation")
    return [d.part for d in decisive if d.part not in skip]


def is_near(cb: basis_mod.Basis, point: basis_mod.Basis, diffs: list, decisive: list) -> bool:
    """Near evidence: the same quantity, model family and GPU generation, at most one stated
    decisive difference. It never decides."""
    if {d.part for d in diffs} & {"metric", "tokens", "per"}:
        return False
    if len(stated_differences(cb, decisive)) > 1 or (
        point.model != basis_mod.NA and model_family(point.model) != model_family(cb.model)
    ):
        return False
    hw_c, hw_p = cb.hardware, point.hardware
    if hw_c in (basis_mod.NA, basis_mod.UNKNOWN) or hw_p == basis_mod.NA:
        return True
    return basis_mod.hardware_class(hw_p) == basis_mod.hardware_class(hw_c)


#: Peak-throughput claims, which a point tuned for latency (at most this concurrency) never
#: brackets.
PEAK_THROUGHPUT, LATENCY_CONCURRENCY = ("rack-scaling.throughput",), 32


def latency_tuned(r: pd.Series) -> bool:
    conc = r.get("concurrency")
    low_conc = conc is not None and not pd.isna(conc) and int(conc) <= LATENCY_CONCURRENCY
    return "low-latency" in str(r.get("id", "")) or low_conc


@dataclass(frozen=True)
class Near:
    """One named basis's near points, their spread in ``unit`` and the figure over each end
    (``ratio_low`` = figure / high). It never decides a verdict."""

    basis: str
    points: tuple[str, ...]
    low: float
    high: float
    unit: str
    ratio_low: float | None
    ratio_high: float | None
    differences: tuple[str, ...]
    urls: tuple[str, ...]
    unverified: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    head: str = ""

    def as_dict(self) -> dict[str, object]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}


def near_reading(
    plaus: Plausible, value: float, unit: str, rows: list[Candidate], cb: Basis, claim_id: str
) -> Near | None:
    """The near reading of named basis ``plaus``: its candidates that do not decide but are near."""
    peak = claim_id in PEAK_THROUGHPUT
    near = [
        (r, diffs)
        for r, diffs, dec in rows
        if (dec or not bool(r["verified"]))
        and r["role"] == "measurement"
        and unit_family(str(r["unit"])) == unit_family(unit)
        and is_near(cb, r["basis"], diffs, dec)
        and not (peak and latency_tuned(r))
    ]
    if not near:
        return None
    parts = dict.fromkeys(basis_mod.NAMES.get(d.part, d.part) for _, ds in near for d in ds)
    kw = spread(value, [float(r["value"]) for r, _ in near])
    kw["unit"] = unit_family(str(near[0][0]["unit"]))
    kw |= dict(differences=tuple(parts), urls=tuple(dict.fromkeys(str(r["url"]) for r, _ in near)))
    kw["unverified"] = tuple(str(r["id"]) for r, _ in near if not bool(r["verified"]))
    kw["superseded"] = tuple(str(r["id"]) for r, _ in near if text_or_none(r.get("superseded")))
    ids = tuple(str(r["id"]) for r, _ in near)
    return Near(plaus.name, ids, head=plaus.head or plaus.name, **kw)


def spread(value: float, vals: list[float]) -> dict[str, Any]:
    """``low`` and ``high`` of ``vals``, and ``value`` over each end (``ratio_low`` = over high;
    None where ``value`` is not finite or the end is 0)."""
    lo, hi, ok = min(vals), max(vals), math.isfinite(value)
    ratios = (value / hi if ok and hi else None, value / lo if ok and lo else None)
    return dict(low=lo, high=hi, ratio_low=ratios[0], ratio_high=ratios[1])


#: How :func:`near_text` introduces near evidence read alone.
def near_summary(brs: Sequence[Any], prefer: str | None = None) -> dict[str, object] | None:
    """Near evidence over bases ``brs`` (``per_basis``); at the top the first holding the figure,
    else ``prefer``, else the first."""
    ns = [br.near for br in brs if br.near is not None and not br.ruled_out]
    if not ns:
        return None
    # verified brackets first: a bracket of second-hand points only is shown, never preferred
    inside = sorted(
        (n for n in ns if side(n.ratio_low, n.ratio_high) == "inside"),
        key=lambda n: len(n.points) == len(n.unverified),
    )
    preferred = [n for n in ns if n.basis == prefer]
    top = (inside or preferred or ns)[0]
    return _bracket(top) | {
        "bases": [n.basis for n in ns],
        "per_basis": [_bracket(n) for n in ns],
        "verified": len(top.points) > len(top.unverified),
    }


def _bracket(n: Near) -> dict[str, object]:
    d = {k: v for k, v in n.as_dict().items() if k not in ("differences", "urls")}
    return d | {"position": side(n.ratio_low, n.ratio_high)}


#: The verdict words of the "published evidence" reading; :data:`DEPENDS` where bases disagree.
VERDICTS: tuple[str, ...] = VOCABULARY["published"]
DEPENDS = "depends on basis"
#: The unit a claim's published points are read in, where it is not the claim's own.
_UNITS = {"rack-scaling.throughput": PER_GPU, "single-user.throughput": PER_USER}


def published_points(result: str | None = None) -> pd.DataFrame:
    """Every published point, one row each (:data:`POINT_COLUMNS`), in its claim's unit."""
    df = _all_points(str(paths.DATA)).copy()
    if result is not None:
        registries(str(paths.DATA))[0].for_result(result)  # unknown result: one-line InputError
        df = df[df["result"] == result]
    return df.reset_index(drop=True)


@functools.lru_cache(maxsize=4)
def _all_points(data: str) -> pd.DataFrame:
    reg = registries(data)[0]
    df = load_rows(data)
    df["comparable"] = [mismatch(r, reg.get(r["claim_id"])) for _, r in df.iterrows()]
    mine = ((c, df[df["claim_id"] == c.id]) for c in reg.claims)
    used = {i for c, pts in mine for br in _basis_readings(c, c.value, pts) for i in br.decided_on}
    df["used"] = df["id"].isin(used).astype(bool)
    return df


def published_reading(
    claim_id: str, value: float, points: pd.DataFrame, tolerance: float = 0.0
) -> ClaimReading:
    """``value`` (``points``' unit) ``within`` [min - tolerance, max + tolerance] of ``points``,
    ``above``, ``below`` or ``none published``."""
    second_hand = 0
    if "verified" in points.columns:
        second_hand = int((~points["verified"].astype(bool)).sum())
        points = points[points["verified"].astype(bool)]
    vals = points["value"].astype(float).to_numpy() if len(points) else np.array([])
    vals = vals[np.isfinite(vals)]
    unit = str(points["unit"].iloc[0]) if "unit" in points.columns and len(points) else ""
    skipped = f"; {plural(second_hand, 'second-hand figure')} NOT VERIFIED, not used"
    skipped = skipped if second_hand else ""
    if value is None or not math.isfinite(value) or not len(vals):
        why = "no published point to compare with" if not len(vals) else "the value is unknown"
        return ClaimReading(claim_id, "published", "none published", "-", why + skipped)
    lo, hi = float(vals.min()), float(vals.max())
    if value > hi + tolerance or value < lo - tolerance:
        verdict, end, bound = ("above", "highest", hi) if value > hi else ("below", "lowest", lo)
        margin = f"{ratio_text(value / bound)} the {end} published ({value_text(bound, unit)})"
    else:
        verdict, margin = "within", f"at the published {value_text(hi, unit)}"
        if hi > lo:
            margin = f"within the published {value_text(lo, unit)} to {value_text(hi, unit)}"
    n = plural(len(vals), "published point")
    reason = f"{value_text(value, unit)} against {n}, {span_text(lo, hi, unit)}{skipped}"
    urls = tuple(dict.fromkeys(points["url"])) if "url" in points.columns else ()
    return ClaimReading(claim_id, "published", verdict, margin, reason, sources=urls)


@dataclass(frozen=True)
class Closest:
    """The published point closest in basis to a named basis; ``ratio``: the figure over it (None
    across units); ``tied``: the points as close (spread ``low`` to ``high``)."""

    id: str
    source: tuple[str, ...]
    value: float
    unit: str
    ratio: float | None
    url: str
    differences: tuple[basis_mod.Difference, ...]
    verified: bool
    kind: str
    tied: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    modelled: bool = False  # a cost model's figure, not a measurement nor a listed price
    superseded: str | None = None  # a later source's change since this point, None if none
    setup: str = ""

    def as_dict(self) -> dict[str, object]:
        d = dataclasses.asdict(self)
        d |= dict(differing=list(d["differences"]), differences=[x.text for x in self.differences])
        return d | dict(tied=list(self.tied), source=list(self.source), who=self.who)

    @property
    def who(self) -> str:
        return " · ".join(self.source)

    def span(self) -> str:
        return point_value(vars(self)) + point_ratio(vars(self))

    def text(self) -> str:
        """One line: who, value, ratio, setup and URL, and what it differs in."""
        flag = "" if self.verified else " (NOT VERIFIED)"
        diffs = "; ".join(d.named(catalogs.display_names()) for d in self.differences)
        diff = f"{_KINDS[self.kind][0]}differs in {diffs}" if diffs else "like for like"
        old = f"; superseded {self.superseded.split(':')[0]}" if self.superseded else ""
        at = f"{self.setup}; {self.url}" if self.setup else self.url
        value = point_value(vars(self))
        return f"{self.who}: {value}{flag}{point_ratio(vars(self))} ({at}); {diff}{old}"


#: By a closest point's kind: how its differences are introduced, what a margin calls it.
_KINDS = {
    "like for like": ("", "closest like-for-like point"),
    "near": ("does not decide: ", "closest published point (near, does not decide)"),
    "analogue": ("an analogue, never decides: ", "closest published analogue (never decides)"),
    "modelled": ("", "closest published figure (a modelled price, not a measurement)"),
}


@dataclass(frozen=True)
class BasisReading:
    """A claim's published reading on one named basis (``step``: the conversion's arithmetic)."""

    name: str
    verdict: str
    margin: str
    basis: str
    decided_on: tuple[str, ...]
    sources: tuple[str, ...]
    closest: Closest | None
    conversion: str
    near: Near | None = None
    ruled_by: RuledOut | None = None
    modelled: bool = False
    step: str = ""

    @property
    def ruled_out(self) -> str | None:
        return self.ruled_by.text() if self.ruled_by else None

    @property
    def evidence(self) -> str:
        """The closest point and the near evidence, in words."""
        close = f"closest: {self.closest.text()}" if self.closest else "no published point"
        near = near_text(self.near.as_dict(), "near evidence: ") if self.near else ""
        return close + (f"; {near}" if near else "")

    def text(self) -> str:
        margin = f" ({self.margin})" if self.margin not in ("", "-") else ""
        ruled = f"ruled out by physics ({self.ruled_out}); " if self.ruled_out else ""
        return f"{as_basis(self.name)}: {ruled}{self.verdict}{margin}; {self.evidence}"

    def as_dict(self) -> dict[str, object]:
        d = dataclasses.asdict(self) | {"ruled_out": self.ruled_out}
        d |= dict(decided_on=list(self.decided_on), sources=list(self.sources))
        d["closest"] = self.closest.as_dict() if self.closest is not None else None
        return d | {"near": self.near.as_dict() if self.near is not None else None}


def _who(r: pd.Series) -> tuple[str, ...]:
    """A point's submitter, hardware x GPUs (or N GPUs), model and engine."""
    names, gpus = catalogs.display_names(), int_or_none(r["gpus"])
    hw = names.get(str(r["hardware"]), text_or_none(r["hardware"]))
    hw = None if hw in ("not stated", basis_mod.UNKNOWN) else hw  # never "not stated x 16"
    count = None if gpus is None else f" x {gpus}" if hw else f"{gpus} GPUs"
    model, engine = text_or_none(r["model"]), text_or_none(r["engine"])
    engine = engine and engine.split(",")[0]
    parts = (f"{hw or ''}{count or ''}", model and names.get(model, model), engine)
    return (str(r["submitter"]), *(p for p in parts if p))


def _candidates(
    claim: claims_registry.Claim, plaus: Plausible, cb: basis_mod.Basis, points: pd.DataFrame
) -> list[Candidate]:
    """(point, differences, decisive ones) of each point counting what basis ``plaus`` does."""
    rows = []
    for _, r in points.iterrows():
        b = r["basis"]
        if not isinstance(b, basis_mod.Basis) or r["role"] == "context":
            continue
        if any(w is not None and getattr(b, p) != w for p, w in plaus.changes if p != "counting"):
            continue
        if plaus.max_gpus is not None and (pd.isna(r["gpus"]) or r["gpus"] > plaus.max_gpus):
            continue  # a node-scale reading takes node-scale points only
        diffs = differences(cb, b, claim.id)
        decisive = [d for d in diffs if d.part in DECISIVE[claim.id]]
        if plaus.cross_check:  # a node of unstated size, or derived: shown, never like for like
            how = Difference("counting", "derived from the rack claim at published prices")
            if plaus.max_gpus is not None:
                how = Difference("gpu_count", int(r["gpus"]), "a node, size not stated")
            diffs, decisive = [how, *diffs], [how, *decisive]
        rows.append((r, diffs, decisive))
    return rows


def _basis_readings(
    claim: claims_registry.Claim, value: float | None, points: pd.DataFrame, tolerance: float = 0.0
) -> list[BasisReading]:
    """The claim's reading on each named basis (verified, agreeing in :data:`DECISIVE`: decide)."""
    out, value = [], float("nan") if value is None else value
    for plaus, cb in claim_bases(claim):
        scale = scale_of(plaus)
        v = value * scale if math.isfinite(value) else float("nan")
        rows = _candidates(claim, plaus, cb, points)
        like = [
            r for r, _, d in rows if not d and (r["role"] == "measurement" or not r["verified"])
        ]
        deciding = [r for r in like if r["verified"]]
        read = published_reading(claim.id, v, pd.DataFrame(like), tolerance * scale)
        unit = _UNITS.get(claim.id, claim.unit)
        margin = "-" if read.verdict == "none published" else read.margin
        modelled = bool(deciding) and all(_modelled(r) for r in deciding)
        if modelled and margin != "-":
            margin += MODELLED_NOTE
        step = ""  # 954,000 / 7.9 = 120,759 tok/s/GPU where another claim's figure divides it
        if plaus.divide_by is not None and math.isfinite(v):
            step = f"{number_text(value)} / {plaus.scale / scale:g} = {value_text(v, unit)}"
        kw: dict[str, Any] = dict(basis=cb.short(), sources=read.sources, modelled=modelled)
        kw |= dict(decided_on=tuple(str(r["id"]) for r in deciding), step=step)
        kw["closest"] = _closest(cb, v, unit, rows) if rows else None
        kw["conversion"] = f"{plaus.conversion}: {step}" if step else plaus.conversion
        kw["near"] = near_reading(plaus, v, unit, rows, cb, claim.id)
        kw["ruled_by"] = ruled_out(claim, plaus, value)
        out.append(BasisReading(plaus.name, read.verdict, margin, **kw))
    return out


def _modelled(r: pd.Series) -> bool:
    return text_or_none(r.get("price_kind")) in claims_registry.MODELLED_PRICES


def _closest(cb: basis_mod.Basis, v: float, unit: str, rows: list[Candidate]) -> Closest:
    ranked = sorted(rows, key=_closeness)
    r, diffs, dec = ranked[0]
    tied = [x for x in ranked[1:] if _closeness(x)[:2] == _closeness(ranked[0])[:2]]
    fin = unit_family(str(r["unit"])) == unit_family(unit) and math.isfinite(v)
    group = [r] + [x[0] for x in tied]
    vals = [float(x["value"]) for x in group if unit_family(str(x["unit"])) == unit_family(unit)]
    analogue = r["role"] == "analogue" or is_analogue(cb, r["basis"], dec)
    kind = "analogue" if analogue else "near" if dec or not r["verified"] else "like for like"
    kw = spread(v if fin else math.nan, vals) if vals else {}
    kw |= dict(modelled=_modelled(r), kind=kind)
    kw |= dict(tied=tuple(str(x[0]["id"]) for x in tied), verified=bool(r["verified"]))
    kw |= dict(superseded=text_or_none(r.get("superseded")), differences=tuple(diffs))
    kw["setup"] = setup_text(r) if len({setup_text(x) for x in group}) == 1 else ""
    kw |= dict(value=float(r["value"]), unit=str(r["unit"]), url=str(r["url"]))
    return Closest(str(r["id"]), _who(r), ratio=v / float(r["value"]) if fin else None, **kw)


def _closeness(row: tuple[pd.Series, list[Difference], object]) -> tuple[float, bool, str]:
    r, diffs, _ = row
    return (score(diffs), not bool(r["verified"]), str(r["id"]))


@dataclass(frozen=True)
class ClaimEvidence:
    """A claim's published evidence over its named bases (``closest``: those physics allows)."""

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
    list_price: dict[str, object] | None = None


def _top(brs: list[BasisReading]) -> tuple[list[BasisReading], str]:
    """The bases whose closest points are closest (one holding the figure first), and in words."""
    ranked = [((score(b.closest.differences), not b.closest.verified), b) for b in brs if b.closest]
    top = sorted(  # Python's sort is stable: ties keep the bases' order
        (b for r, b in ranked if r == min(r for r, _ in ranked)),
        key=lambda br: br.near is None or side(br.near.ratio_low, br.near.ratio_high) != "inside",
    )
    c = top[0].closest if top else None
    if c is None:
        return top, "-"
    kind = _KINDS["modelled" if c.modelled else c.kind][1]
    if len(top) == 1:
        return top, f"{kind}: {c.span()}"
    each = "; ".join(f"{as_basis(br.name)}: {br.closest.span()}" for br in top if br.closest)
    return top, f"{kind}, on {len(top)} bases equally close: {each}"


def claim_evidence(claim_id: str, value: float | None = None) -> ClaimEvidence:
    """A claim's published evidence on each named basis (``value``: in the claim's unit)."""
    reg, _ = registries(str(paths.DATA))
    claim = reg.get(claim_id)
    value = claim.value if value is None else value
    pts = published_points()
    mine = pts[pts["claim_id"] == claim_id]
    brs = _basis_readings(claim, value, mine, reg.tolerance(claim_id))
    out_names = tuple(br.name for br in brs if br.ruled_out)
    top, margin = _top([br for br in brs if not br.ruled_out] or brs)
    closest_basis = top[0].name if top else None
    decided = [br for br in brs if br.verdict != "none published"]
    if len(brs) == 1 and decided:
        margin = f"{decided[0].margin}; {margin}"
    verdicts = list(dict.fromkeys(br.verdict for br in decided))  # bases that disagree: DEPENDS
    verdict = DEPENDS if len(verdicts) > 1 else (verdicts or ["none published"])[0]
    near = near_summary(brs, closest_basis)
    if near:
        margin += f"; {near_text(near)}"
    top_list = highest_list_price(mine, value)
    if top_list:
        margin += f"; {top_list.pop('text')}"
    if out_names:
        shown = [as_basis(n) for n in out_names]
        names = " and ".join([", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown)
        margin = f"physics rules out {names}; {margin}"
    many = f"basis unknown in a part that matters, read on {len(brs)} named bases"
    basis_line = many if len(brs) > 1 else f"basis: {brs[0].basis}"
    lead = "; ".join(x for x in (READING_NOTES.get(claim_id, ""), basis_line) if x)
    ordered = [br for br in brs if not br.ruled_out] + [br for br in brs if br.ruled_out]
    reason = lead + ": " + " | ".join(br.text() for br in ordered)
    sources = tuple(dict.fromkeys(u for br in brs for u in br.sources))
    closest = top[0].closest if top else None
    kw: dict[str, Any] = dict(near=near, ruled_out=out_names, list_price=top_list)
    kw["closest_basis"] = closest_basis
    return ClaimEvidence(claim_id, verdict, margin, reason, sources, tuple(brs), closest, **kw)


def highest_list_price(points: pd.DataFrame, value: float | None) -> dict[str, object] | None:
    """The highest list price ($/GPU-hour) of a claim's points: ``value``, ``who``, ``verified``,
    ``ratio`` (the claim's figure over it), ``text``; None without one."""
    if "price_kind" not in points.columns:
        return None
    lp = points[(points["price_kind"] == "list price") & (points["unit"] == "$/GPU-hour")]
    lp = lp[~lp["id"].str.startswith("token-value:")]
    if not len(lp):
        return None
    r = lp.loc[lp["value"].astype(float).idxmax()]
    hw, price = text_or_none(r["hardware"]), float(r["value"])
    ratio = value / price if value is not None and math.isfinite(value) else None
    who = f"{r['submitter']}{', ' + hw if hw else ''}"
    said = f"{who}{'' if r['verified'] else ', NOT VERIFIED'}"
    tail = f", the claim {ratio_text(ratio)} it" if ratio is not None else ""
    text = f"highest list price: {value_text(price, '$/GPU-hour')} ({said}){tail}"
    return dict(value=price, who=who, verified=bool(r["verified"]), ratio=ratio, text=text)


#: What the reader must know before a claim's published reading (chapters declare it).
READING_NOTES: Mapping[str, str] = ChapterTable("READING_NOTES")


def reading(
    claim_id: str, value: float | None = None, registry: claims_registry.Registry | None = None
) -> ClaimReading:
    """:func:`claim_evidence` as a :class:`~rackbook.results.headline.ClaimReading`."""
    if value is None and registry is not None:
        value = registry.get(claim_id).value
    e = claim_evidence(claim_id, value)
    kw: dict[str, Any] = dict(sources=e.sources, near=e.near, ruled_out=e.ruled_out)
    kw["closest"] = e.closest.as_dict() | {"basis": e.closest_basis} if e.closest else None
    kw["basis"] = " | ".join(f"{as_basis(b.name)}: {b.basis}" for b in e.bases)
    kw |= dict(by_basis=tuple(b.as_dict() for b in e.bases), list_price=e.list_price)
    return ClaimReading(claim_id, "published", e.verdict, e.margin, e.reason, **kw)


#: Columns of :func:`evidence_table`.
TABLE_COLUMNS = (
    "claim_id kind who hardware gpus model engine value unit as_published used role verified "
    "comparable basis verdict margin url date"
).split()
#: The columns a published point's row takes from :func:`published_points` as they are.
_POINT_COPY = "hardware gpus model engine value unit as_published role comparable url date".split()


def evidence_table(result: str) -> pd.DataFrame:
    """A chapter's "published measurements" table: per claim a ``claim`` row, a ``reading`` row
    per named basis, then its ``published`` points."""
    reg, _ = registries(str(paths.DATA))
    pts, names = published_points(result), catalogs.display_names()
    rows = []
    for c in reg.for_result(result):
        e, sc = claim_evidence(c.id), c.scope
        row: dict[str, object] = dict(claim_id=c.id, kind="claim", role="claim", engine="vLLM")
        row |= dict(who="claim (data/claims.yaml)", verified=False, basis=c.figure_basis.short())
        row |= dict(hardware=sc.hardware, gpus=sc.gpu_count, model=sc.model, used=False)
        row |= dict(value=c.value, unit=c.unit, comparable=e.reason, verdict=e.verdict)
        row |= dict(as_published=c.value_text, margin=e.margin)
        rows.append(row | {"url": e.closest.url if e.closest else c.source.primary})
        for br in e.bases:
            shown = f"; {br.margin}" if br.margin not in ("", "-") else ""
            margin = f"ruled out by physics: {br.ruled_out}{shown}" if br.ruled_out else br.margin
            row = dict(claim_id=c.id, kind="reading", who=br.name, role="reading", verified=True)
            row |= dict(as_published=br.conversion or None, used=bool(br.decided_on), margin=margin)
            row |= dict(comparable=br.evidence, verdict=br.verdict, basis=br.basis)
            rows.append(row | {"url": br.closest.url if br.closest else None})
        for p in pts[pts["claim_id"] == c.id].to_dict("records"):
            gpu, _, how = str(p["system"]).partition(" ")  # "b200 low-latency (single)"
            system = f" · {names.get(gpu, gpu)} {how}".rstrip() if text_or_none(p["system"]) else ""
            b, row = p["basis"], {k: p[k] for k in _POINT_COPY}
            row |= dict(claim_id=c.id, kind="published", who=f"{p['submitter']}{system}")
            row |= dict(used=bool(p["used"]), verified=bool(p["verified"]))
            rows.append(row | {"basis": b.short(names) if isinstance(b, basis_mod.Basis) else None})
    df = pd.DataFrame([dict.fromkeys(TABLE_COLUMNS) | r for r in rows], columns=TABLE_COLUMNS)
    df["gpus"] = pd.array([int_or_none(v) for v in df["gpus"]], dtype="Int64")
    return df
