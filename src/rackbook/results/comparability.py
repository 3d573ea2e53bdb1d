"""Comparability rules of published evidence: the parts a point must share with a claim's named
basis to decide (:data:`DECISIVE`), the bases a claim can mean (:data:`PLAUSIBLE`) and when
physics rules one out, and when a related measurement is near evidence (:class:`Near`)."""

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
from rackbook.core.basis import Basis, Difference
from rackbook.core.units import plural, ratio_text
from rackbook.inputs import catalogs
from rackbook.inputs import claims as claims_registry
from rackbook.physics import check as physics_check
from rackbook.results import published_rows as pr
from rackbook.results.registry import ChapterTable

#: What a published margin resting on cost models' prices ends with (evidence writes it).
MODELLED_NOTE = " (modelled prices, not measurements)"
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
    other = pr.registries(str(paths.DATA))[0].get(plaus.divide_by).value
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
#: The claim reading the rack against a node, and the most GPUs of a node (HGX; a tray has 4).
SPEEDUP_CLAIM, NODE_GPUS_MAX = "rack-scaling.speedup", 8
#: GPUs of one cloud instance of a GB300 NVL72 rack (a compute tray).
INSTANCE_GPUS = 4
_NODE = "the node's throughput per GPU (the speed-up read as a per-GPU ratio)"
_RACK = f"a rack total over {pr.RACK_GPUS} GPUs"
_TOTAL = dict(scale=1 / pr.RACK_GPUS, head=_RACK)
_TOTAL["conversion"] = f"the figure read as the rack's total, divided by its {pr.RACK_GPUS} GPUs"


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
            max_gpus=NODE_GPUS_MAX,
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
            f"{pr.number_text(self.tok_s_per_gpu)} computed {self.phase} tok/s per GPU is "
            f"{ratio_text(self.ratio)} the {self.limit} ceiling of "
            f"{pr.number_text(self.ceiling_tok_s_per_gpu)} on {self.gpu}"
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

    def text(self) -> str:
        return near_text(self.as_dict(), lead="near evidence: ")

    def as_dict(self) -> dict[str, object]:
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()
        }


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
        and pr.unit_family(str(r["unit"])) == pr.unit_family(unit)
        and is_near(cb, r["basis"], diffs, dec)
        and not (peak and latency_tuned(r))
    ]
    if not near:
        return None
    parts = dict.fromkeys(basis_mod.NAMES.get(d.part, d.part) for _, ds in near for d in ds)
    kw = spread(value, [float(r["value"]) for r, _ in near])
    kw["unit"] = pr.unit_family(str(near[0][0]["unit"]))
    kw |= dict(differences=tuple(parts), urls=tuple(dict.fromkeys(str(r["url"]) for r, _ in near)))
    kw["unverified"] = tuple(str(r["id"]) for r, _ in near if not bool(r["verified"]))
    kw["superseded"] = tuple(str(r["id"]) for r, _ in near if pr.text_or_none(r.get("superseded")))
    ids = tuple(str(r["id"]) for r, _ in near)
    return Near(plaus.name, ids, head=plaus.head or plaus.name, **kw)


def spread(value: float, vals: list[float]) -> dict[str, Any]:
    """``low`` and ``high`` of ``vals``, and ``value`` over each end (``ratio_low`` = over high;
    None where ``value`` is not finite or the end is 0)."""
    lo, hi, ok = min(vals), max(vals), math.isfinite(value)
    ratios = (value / hi if ok and hi else None, value / lo if ok and lo else None)
    return dict(low=lo, high=hi, ratio_low=ratios[0], ratio_high=ratios[1])


#: How :func:`near_text` introduces near evidence read alone.
NEAR_LEAD = "near evidence, which does not decide (the same quantity on a sibling model or GPU): "


def as_basis(name: str) -> str:
    return name if name.startswith("as ") else f"as {name}"


def side(lo: object, hi: object) -> str:
    """``inside`` (points on both sides, or at it), ``above``, ``below`` or ``-`` (no ratios)."""
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return "-"
    return "above" if lo > 1 else "below" if hi < 1 else "inside"


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


def near_text(near: Mapping[str, Any] | None, lead: str = NEAR_LEAD) -> str:
    """Near points (a :class:`Near`'s dict, or :func:`near_summary`) as one clause: how many,
    flags, spread, the claim over them, their differences, the basis among several."""
    if not near or not near.get("points"):
        return ""
    pts = near["points"]
    unv, old = (len(near.get(k) or []) for k in ("unverified", "superseded"))
    flag = f", {unv} of them NOT VERIFIED" if unv else ""
    flag += f", {old} superseded by a later source" if old else ""
    span = pr.span_text(float(near["low"]), float(near["high"]), str(near["unit"]))
    out = f"{lead}{plural(len(pts), 'near point')}{flag}, {span}"
    lo, hi = near.get("ratio_low"), near.get("ratio_high")
    if isinstance(lo, float) and isinstance(hi, float):
        out += "; " + pr.claim_over(lo, hi, "it" if len(pts) == 1 or lo == hi else "them")
    out += f" (differing in: {', '.join(near['differences'])})" if near.get("differences") else ""
    nb = len(near.get("bases") or [])
    if nb > 1:
        out += f" {as_basis(str(near['basis']))} (one of {nb} bases with near points)"
    return out
