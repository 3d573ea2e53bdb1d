"""Comparability rules of published evidence: which parts of the basis a published point must
share with a claim's named basis to decide its reading (:data:`DECISIVE`, weighted by
:data:`WEIGHTS` for the closest point), the bases each claim can plausibly mean
(:data:`PLAUSIBLE`) and when physics rules one out, how a point differs from a claim
(:func:`mismatch`), and when a different but related measurement counts as near evidence
(:func:`is_near`, :class:`Near`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core.units import plural, ratio_text
from rackbook.inputs import catalogs
from rackbook.inputs import claims as claims_registry
from rackbook.physics import check as physics_check
from rackbook.results.certainty import side
from rackbook.results.published_rows import (
    claim_over,
    number_text,
    registries,
    span_text,
    text_or_none,
    unit_family,
)
from rackbook.results.registry import ChapterTable

#: Parts of the basis in which a published point must agree with the claim's (named) basis to
#: decide its reading, per claim (a point differing in any of them is shown, never decides).
#: Why each: per-GPU throughput depends on the token kind, the GPUs counted, the model, the GPU,
#: the deployment's size, the workload and on whether the speculation really ran; a rack/node
#: ratio on the model, GPU, workload and the node it divides by; a price on its kind and GPU;
#: one user's speed on the model, GPU, GPU count, the statistic and real speculation; a
#: balance index on its exact definition and the model's routing.
DECISIVE: Mapping[str, tuple[str, ...]] = ChapterTable("DECISIVE")


#: Every part a closeness score looks at, and its weight (a point's distance from the claim's
#: basis is the sum of the weights of the parts it differs in; the closest point has the
#: least). Quantity first (metric, tokens, per), then model, GPUs, GPU count, the rest.
WEIGHTS: dict[str, float] = {
    "metric": 10,
    "tokens": 10,
    "per": 10,
    "counting": 3,
    "gpus": 3,
    "model": 4,
    "hardware": 2,
    "gpu_count": 2,
    "concurrency": 2,
    "context": 2,
    "workload": 1,
    "speculation": 1,
    "statistic": 1,
    "engine": 1,
    "serving": 0.5,
}


@dataclass(frozen=True)
class Plausible:
    """One plausible reading of a claim whose basis is unknown in a part that matters: its
    name, the parts it fills in (``changes``), and the factor the claim's figure is multiplied
    by to be read on that basis (``scale``, with the stated ``conversion``)."""

    name: str
    changes: tuple[tuple[str, object], ...] = ()
    scale: float = 1.0
    conversion: str = ""
    #: the phase whose ceilings bound the figure read on this basis when every counted token
    #: is computed (``decode``, ``prefill``), or None when physics cannot rule the basis out
    #: (counted cache hits cost no GEMM; a ratio or a price has no ceiling)
    phase: str | None = None
    #: a claim whose figure divides this reading's value (the scale is ``scale`` over that
    #: figure, read from the claims registry, never typed): the node a ratio claim implies
    divide_by: str | None = None
    #: the most GPUs a point of this basis may have (a node-scale reading), None: any
    max_gpus: int | None = None
    #: a cross-check: its points are near evidence of the value it implies, never a verdict
    cross_check: bool = False
    #: the name's first part, as a finding names the basis (``per GPU`` of ``per GPU, output
    #: tokens``); empty: the whole name
    head: str = ""


def scale_of(plaus: Plausible) -> float:
    """The factor the claim's figure is multiplied by on this basis: ``scale``, divided by the
    figure of the claim named in ``divide_by`` (from ``data/claims.yaml``) where there is one."""
    if plaus.divide_by is None:
        return plaus.scale
    other = registries(str(paths.DATA))[0].get(plaus.divide_by).value
    return plaus.scale / float(other) if other else float("nan")


_TOKENS = (
    ("output tokens", "output"),
    ("input + output, cached prefix not counted", "input+output"),
    ("input + output counting each turn's re-read cached prefix", "input incl. cached+output"),
)


#: The phase whose ceiling bounds a throughput of each token kind when every counted token is
#: computed: output tokens are decode work; input + output without a cached prefix is at most
#: all prefill (the cheaper phase per token, so the most permissive reading); a total that
#: counts re-read cached prefix tokens has no ceiling of its own (cache hits cost no GEMM).
_PHASE = {"output": "decode", "input+output": "prefill", "input incl. cached+output": None}


#: The claim whose ratio reads the rack's figure against a node (rack-scaling.speedup, 7.9x).
SPEEDUP_CLAIM = "rack-scaling.speedup"
#: The most GPUs of a node (an HGX-class node; a GB300 tray holds 4).
NODE_GPUS_MAX = 8


def _rack_bases(gpus: int) -> tuple[Plausible, ...]:
    per_gpu = tuple(
        Plausible(f"per GPU, {n}", (("tokens", t),), phase=_PHASE[t], head="per GPU")
        for n, t in _TOKENS
    )
    cached_name, cached = _TOKENS[2]
    node = "the node's throughput per GPU (the speed-up read as a per-GPU ratio)"
    # 7.9x read as a per-GPU ratio: the node's per-GPU throughput is the figure over 7.9; the
    # node's size is not stated (a 4-GPU tray or an 8-GPU node), so no GPU count is named and
    # the node's throughput is set against measured node-scale points of the same tokens
    ratio = Plausible(
        f"{node}, {cached_name}",
        (("tokens", cached), ("gpu_count", None)),
        conversion="the figure read per GPU of the rack, and the speed-up as a ratio of per-GPU "
        "throughputs: the node's throughput per GPU is the figure over the speed-up",
        phase=None,
        divide_by=SPEEDUP_CLAIM,
        max_gpus=NODE_GPUS_MAX,
        cross_check=True,
        head=node,
    )
    per_gpu = (*per_gpu, ratio)
    total = tuple(
        Plausible(
            f"a rack total over {gpus} GPUs, {n}",
            (("tokens", t),),
            1 / gpus,
            f"the figure read as the rack's total, divided by its {gpus} GPUs",
            _PHASE[t],
            head=f"a rack total over {gpus} GPUs",
        )
        for n, t in _TOKENS
    )
    return per_gpu + total


#: GPUs of one cloud instance of a GB300 (or GB200) NVL72 rack: a 4-GPU compute tray.
INSTANCE_GPUS = 4


#: Claims whose write-up leaves a part of the basis that matters unknown: one named reading per
#: plausible basis (the others read on their stated basis alone). Rack throughput: which tokens
#: are counted (the workload is agentic, so the cached prefix may be counted) and whether "per
#: GPU" is per GPU or the rack's total; the speedup: what a node is (a GB300 tray of 4 GPUs, an
#: HGX node of 8); the cost: what the dollars are; one user's speed: mean or median.
PLAUSIBLE: dict[str, tuple[Plausible, ...]] = {
    "rack-scaling.throughput": _rack_bases(72),
    "rack-scaling.speedup": (
        Plausible(
            "node = one 4-GPU GB300 compute tray (linear scaling would be 18x)",
            (("counting", "72 GPUs over 4"),),
        ),
        Plausible(
            "node = an 8-GPU HGX-class node (linear scaling would be 9x)",
            (("counting", "72 GPUs over 8"),),
        ),
    ),
    "rack-scaling.cost": (
        Plausible("a rental price", (("metric", "rental price per GPU-hour"),)),
        Plausible("a list (on-demand) price", (("metric", "list price per GPU-hour"),)),
        Plausible(
            "a list price per 4-GPU instance-hour",
            (("metric", "list price per GPU-hour"),),
            1 / INSTANCE_GPUS,
            f"the figure read as one {INSTANCE_GPUS}-GPU instance's (a GB300 tray's) hourly "
            f"price, divided by its {INSTANCE_GPUS} GPUs",
        ),
        Plausible("an ownership cost", (("metric", "ownership cost per GPU-hour"),)),
        Plausible(
            "a token value at the model vendor's API prices",
            (("metric", "token value per GPU-hour"),),
            conversion="the figure read as what the tokens of the rack claim's throughput, "
            "per GPU, are worth in an hour at DeepSeek's V4.1-Flash API list prices and "
            "AgentX's token mix",
            cross_check=True,
        ),
    ),
    "single-user.throughput": (
        Plausible("mean TPOT", (("statistic", "mean"),)),
        Plausible("median (P50) TPOT", (("statistic", "median"),)),
    ),
}


def claim_bases(claim: claims_registry.Claim) -> list[tuple[Plausible, basis_mod.Basis]]:
    """The named bases a claim is read on: its stated basis, or one per plausible basis
    (:data:`PLAUSIBLE`) where the write-up leaves a part that matters unknown."""
    stated = claim.figure_basis
    named = PLAUSIBLE.get(claim.id, (Plausible("as stated"),))
    return [(p, stated.replace(**dict(p.changes))) for p in named]


#: Claims compared on a few parts only (a price depends on no model, workload or GPU count).
PARTS: dict[str, tuple[str, ...]] = {"rack-scaling.cost": ("metric", "hardware", "per")}


#: Parts whose difference makes a point an analogue (another quantity or model; hardware of
#: another GPU generation, see :func:`is_analogue`).
ANALOGUE_PARTS = ("metric", "tokens", "per", "model")


def is_analogue(claim_basis: basis_mod.Basis, point: basis_mod.Basis, diffs: list) -> bool:
    """True when a point measures another quantity, another model, or on another GPU
    generation than the claim (:func:`rackbook.core.basis.hardware_class`): shown, never
    decides."""
    if any(d.part in ANALOGUE_PARTS for d in diffs):
        return True
    return any(d.part == "hardware" for d in diffs) and basis_mod.hardware_class(
        point.hardware
    ) != basis_mod.hardware_class(claim_basis.hardware)


def differences(
    claim_basis: basis_mod.Basis, point: basis_mod.Basis, claim_id: str
) -> list[basis_mod.Difference]:
    """How ``point`` differs from ``claim_basis`` in the parts read for ``claim_id``."""
    parts = PARTS.get(claim_id) or tuple(dict.fromkeys((*DECISIVE[claim_id], *WEIGHTS)))
    return basis_mod.differences(claim_basis, point, parts)


def mismatch(row: pd.Series | dict[str, object], claim: claims_registry.Claim) -> str:
    """How a published point's basis differs from the claim's stated basis (parts the claim
    leaves unknown are read per plausible basis, not named here), or ``"same basis as the
    claim"``."""
    b = row.get("basis")
    if not isinstance(b, basis_mod.Basis):
        return "no basis"
    diffs = differences(claim.figure_basis, b, claim.id)
    if not diffs:
        return "same basis as the claim"
    names = catalogs.display_names()  # a point's model and hardware as a reader meets them
    return "differs from the claim in: " + "; ".join(d.named(names) for d in diffs)


def score(diffs: Sequence[basis_mod.Difference]) -> float:
    """Distance in basis: the :data:`WEIGHTS` of the parts ``diffs`` differ in (1 by default)."""
    return float(sum(WEIGHTS.get(d.part, 1.0) for d in diffs))


@dataclass(frozen=True)
class RuledOut:
    """Why physics rules a named basis out: its figure read on the basis (computed tokens/s
    per GPU of ``phase``), over the ceiling (``ratio``, dimensionless) of ``limit`` (a
    ceiling of ``ceiling_tok_s_per_gpu`` tokens/s per GPU on ``gpu``, as a reader names it)."""

    tok_s_per_gpu: float
    phase: str
    ratio: float
    limit: str
    ceiling_tok_s_per_gpu: float
    gpu: str

    def text(self) -> str:
        """ "954,000 computed decode tok/s per GPU is 3.94x the compute ceiling of 241,834 on
        GB300"."""
        return (
            f"{number_text(self.tok_s_per_gpu)} computed {self.phase} tok/s per GPU is "
            f"{ratio_text(self.ratio)} the {self.limit} ceiling of "
            f"{number_text(self.ceiling_tok_s_per_gpu)} on {self.gpu}"
        )


@functools.lru_cache(maxsize=64)
def _physics_rules_out(
    model: str, hardware: str, gpus: int, per_gpu: float, phase: str, data: str = ""
) -> RuledOut | None:
    """Why physics rules out ``per_gpu`` computed tokens/s per GPU of ``phase`` on ``gpus`` x
    ``hardware`` (:func:`rackbook.physics.check.check_claim`, verdict ``impossible``), or None
    when it does not (or the catalogs do not know the model or GPU)."""
    mid = catalogs.catalog_model_id(model)
    gid = basis_mod.hardware_key(hardware)
    if mid is None or gid not in catalogs.load_hardware().gpus:
        return None
    c = physics_check.check_claim(mid, gid, gpus, per_gpu, phase=phase)
    if c.verdict != "impossible":
        return None
    return RuledOut(per_gpu, phase, c.ratio, c.limit, c.ceiling_tok_s_per_gpu, gid.upper())


def ruled_out(claim: claims_registry.Claim, plaus: Plausible, value: float) -> RuledOut | None:
    """Why the physics reading rules this named basis of the claim out (its figure read on the
    basis, every counted token computed, above a ceiling of the claim's model and GPU by more
    than the modelling margin), or None when physics allows it or cannot tell."""
    sc = claim.scope
    if plaus.phase is None or not math.isfinite(value) or value <= 0:
        return None
    if not (sc.model and sc.hardware and sc.gpu_count):
        return None
    return _physics_rules_out(
        sc.model,
        sc.hardware,
        int(sc.gpu_count),
        value * scale_of(plaus),
        plaus.phase,
        str(paths.DATA),  # the catalogs read depend on the data folder
    )


def model_family(model: str) -> str:
    """A model name without its version: ``deepseek-flash`` for DeepSeek-V4.1-Flash,
    DeepSeek-V4-Flash and DeepSeek-V4-Flash-0731 (siblings), ``deepseek-pro`` for
    DeepSeek-V4-Pro; other names as :func:`rackbook.core.basis.model_key` gives them."""
    k = basis_mod.model_key(model)
    m = re.match(r"^deepseek-v[0-9.]+-(flash|pro)", k)
    return f"deepseek-{m.group(1)}" if m else k


#: Parts a near point may differ in without the difference counting as its one stated
#: difference: a sibling model of the claim's family, a GPU of the claim's generation, and a
#: simulated acceptance where the claim does not say whether its speculation ran (each is
#: still named beside the point).
TOLERATED = ("model", "hardware", "speculation")


def stated_differences(claim_basis: basis_mod.Basis, decisive: list) -> list[str]:
    """The parts of a point's decisive differences (``decisive``,
    :class:`rackbook.core.basis.Difference` each) that count as stated differences for near
    evidence: every one but the :data:`TOLERATED` parts (the speculation only where the
    claim's own is unknown)."""
    skip = {"model", "hardware"}  # family and generation are checked by is_near itself
    if claim_basis.speculation == basis_mod.UNKNOWN:
        skip.add("speculation")
    return [d.part for d in decisive if d.part not in skip]


def is_near(
    claim_basis: basis_mod.Basis,
    point: basis_mod.Basis,
    diffs: list,
    decisive: list | None = None,
) -> bool:
    """True when a point is near evidence for a claim's named basis: it measures the same
    quantity (no difference in metric, tokens counted or per), on the claim's model or a
    sibling of its family (:func:`model_family`: DeepSeek-V4-Flash for V4.1-Flash, not
    V4-Pro), on the claim's GPU or one of the same generation (GB300 and B300), and differs
    from the claim's basis in at most one stated difference of the parts that decide
    (``decisive``, :func:`stated_differences`: a GPU count, a workload, a statistic...), so
    that what separates it from the claim has one name; every difference is stated beside
    it. A near point never decides a verdict."""
    parts = {d.part for d in diffs}
    if parts & {"metric", "tokens", "per"}:
        return False
    if point.model != basis_mod.NA and model_family(point.model) != model_family(claim_basis.model):
        return False
    if decisive is not None and len(stated_differences(claim_basis, decisive)) > 1:
        return False
    hw_c, hw_p = claim_basis.hardware, point.hardware
    if hw_c in (basis_mod.NA, basis_mod.UNKNOWN) or hw_p == basis_mod.NA:
        return True
    return basis_mod.hardware_class(hw_p) == basis_mod.hardware_class(hw_c)


#: Claims whose figure is a peak throughput: a point tuned for latency (a low-latency recipe,
#: or a concurrency of at most :data:`LATENCY_CONCURRENCY`) never brackets it, since the
#: claim states no interactivity that such a point could match.
PEAK_THROUGHPUT: tuple[str, ...] = ("rack-scaling.throughput",)
LATENCY_CONCURRENCY = 32


def latency_tuned(r: pd.Series) -> bool:
    """True for a point tuned for latency: its id names a low-latency recipe, or it ran at a
    concurrency of at most :data:`LATENCY_CONCURRENCY` streams."""
    conc = r.get("concurrency")
    low_conc = conc is not None and not pd.isna(conc) and int(conc) <= LATENCY_CONCURRENCY
    return "low-latency" in str(r.get("id", "")) or low_conc


@dataclass(frozen=True)
class Near:
    """The near evidence of one named basis: the verified measurements that are near
    (:func:`is_near`), their spread (``low``, ``high`` in ``unit``) and the claim's figure on
    that basis over each end (``ratio_low`` = figure / high, ``ratio_high`` = figure / low).
    It never decides a verdict: it says where the figure sits against the nearest evidence."""

    basis: str
    points: tuple[str, ...]
    low: float
    high: float
    unit: str
    ratio_low: float | None
    ratio_high: float | None
    differences: tuple[str, ...]
    urls: tuple[str, ...]
    #: the near points read only second-hand (NOT VERIFIED): shown, but a near reading resting
    #: on them alone does not raise the strength of evidence
    unverified: tuple[str, ...] = ()
    #: the near points a later source supersedes (a change reported after their date)
    superseded: tuple[str, ...] = ()
    #: the basis as a finding names it (:attr:`Plausible.head`, else the basis's name)
    head: str = ""

    def text(self) -> str:
        """One line: ``2 near points, 104,429 to 142,565 tok/s/GPU; the claim 6.69x to 9.14x
        them (they differ in: GPU count; engine)``."""
        n = plural(len(self.points), "near point")
        span = span_text(self.low, self.high, self.unit)
        lo, hi = self.ratio_low, self.ratio_high
        ratio = ""
        if lo is not None and hi is not None:
            ratio = "; " + claim_over(lo, hi, "it" if len(self.points) == 1 or lo == hi else "them")
        diff = f" (differing in: {', '.join(self.differences)})" if self.differences else ""
        flag = f", {len(self.unverified)} of them NOT VERIFIED" if self.unverified else ""
        if self.superseded:
            flag += f", {len(self.superseded)} superseded by a later source"
        return f"{n}{flag}, {span}{ratio}{diff}"

    def as_dict(self) -> dict[str, object]:
        """For the headline JSON."""
        d = dataclasses.asdict(self)
        for k in ("points", "differences", "urls", "unverified", "superseded"):
            d[k] = list(d[k])
        return d


def near_reading(
    plaus: Plausible,
    value: float,
    unit: str,
    rows: list[tuple[pd.Series, list, list]],
    cb: basis_mod.Basis,
    claim_id: str = "",
) -> Near | None:
    """The near reading of one named basis (``plaus``) from its candidate rows (point, differences,
    decisive differences): measurements in the claim's unit family that do not decide (a
    decisive difference, or read only second-hand) but are near (:func:`is_near`: one stated
    difference at most); for a peak-throughput claim (:data:`PEAK_THROUGHPUT`), never a point
    tuned for latency (:func:`latency_tuned`)."""
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
    vals = [float(r["value"]) for r, _ in near]
    lo, hi = min(vals), max(vals)
    ok = math.isfinite(value) and lo > 0
    parts = list(dict.fromkeys(basis_mod.NAMES.get(d.part, d.part) for _, ds in near for d in ds))
    return Near(
        plaus.name,
        tuple(str(r["id"]) for r, _ in near),
        lo,
        hi,
        unit_family(str(near[0][0]["unit"])),
        value / hi if ok else None,
        value / lo if ok else None,
        tuple(parts),
        tuple(dict.fromkeys(str(r["url"]) for r, _ in near)),
        tuple(str(r["id"]) for r, _ in near if not bool(r["verified"])),
        tuple(str(r["id"]) for r, _ in near if text_or_none(r.get("superseded"))),
        plaus.head or plaus.name,
    )


def as_basis(name: str) -> str:
    """A basis name as prose: ``as the rack's total`` (the name itself when it starts so)."""
    return name if name.startswith("as ") else f"as {name}"


def near_position(n: Near) -> str:
    """Where the claim's figure sits against one basis's near points: ``inside`` (near points
    on both sides of it, or at it), ``above`` every one, ``below`` every one, or ``-`` without
    a ratio (:func:`rackbook.results.certainty.side`)."""
    return side(n.ratio_low, n.ratio_high)


def near_summary(brs: Sequence[Any], prefer: str | None = None) -> dict[str, object] | None:
    """The near evidence over the bases physics allows (``brs``: basis readings): ``per_basis``
    (:func:`_bracket` of each basis with near points, never mixing bases); at the top level the
    bracket of the first basis whose points hold the figure, else ``prefer``, else the first
    with points (``head``: its name in a finding); ``bases``: all with points; None without."""
    ns = [br.near for br in brs if br.near is not None and not br.ruled_out]
    if not ns:
        return None
    # verified brackets first: a bracket of second-hand points only is shown, never preferred
    inside = sorted(
        (n for n in ns if near_position(n) == "inside"),
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
    """One basis's near points for the headline JSON: ``{basis, head, points, low, high, unit,
    ratio_low, ratio_high, position, unverified, superseded}`` (values in ``unit``)."""
    d = {k: v for k, v in n.as_dict().items() if k not in ("differences", "urls")}
    return d | {"position": near_position(n)}


def near_text(near: Mapping[str, Any] | None) -> str:
    """The near evidence over the bases physics allows (:func:`near_summary`) as one clause:
    the published margin ends with it, the conclusion states it as a sentence. ``near
    evidence, which does not decide: 2 published points of the same quantity on a sibling model
    or GPU, 104,429 to 142,565 tok/s/GPU; the claim 0.847x to 1.16x them as X (one of 4 bases
    with near points)``; empty without near evidence."""
    if not near or not near.get("points"):
        return ""
    pts = near["points"]
    unv = len(near.get("unverified") or [])
    out = (
        f"near evidence, which does not decide: {plural(len(pts), 'published point')} of the "
        "same quantity on a sibling model or GPU"
        + (f" ({unv} NOT VERIFIED)" if unv else "")
        + f", {span_text(float(near['low']), float(near['high']), str(near['unit']))}"
    )
    rl, rh = near.get("ratio_low"), near.get("ratio_high")
    if isinstance(rl, float) and isinstance(rh, float):
        out += "; " + claim_over(rl, rh, "it" if len(pts) == 1 else "them")
    nb = len(near.get("bases") or [])
    if nb > 1:
        out += f" {as_basis(str(near['basis']))} (one of {nb} bases with near points)"
    return out
