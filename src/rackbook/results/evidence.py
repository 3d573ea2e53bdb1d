"""Published evidence: each claim set beside independent measurements of comparable systems.

Two kinds of published points meet here, both of kind ``published``:

- rows of the shipped published traces (``data/published/<trace>/``, imported from saved source
  files by ``env/published/derive.sh``: InferenceX API rows, MLPerf v6.1 ``summary.csv``, the
  SGLang DeepSeek-V4 cookbook cells), and figures derived from them in code (MLPerf rack/node
  ratios);
- figures that exist only in posts, PRs and price lists (``data/published/figures.yaml``,
  :mod:`rackbook.inputs.published`).

:func:`published_points` gives them one row each, in the unit of the claim they bear on, with
``comparable`` naming every mismatch with the claim (model, hardware, GPU count, engine).
:func:`published_reading` is the "published evidence" reading of a value against points:
``within`` the published range (widened by a tolerance), ``above`` or ``below`` it, or ``none
published``. :func:`claim_reading` chooses, per claim, which points are comparable (the parts
of the basis a point must share with the claim's to decide, and why, are :data:`DECISIVE`; the
plausible bases of a claim whose basis is unknown, :data:`PLAUSIBLE`) and reads the claim's
figure from the claims registry. Second-hand figures (``verified`` false) are shown but never
decide a verdict alone.

Units: the claim's own (``tok/s``, ``x``, ``$/GPU-hour``, ``1``, ...); per-GPU throughput in
``tok/s/GPU``; per-user decode speed in ``tok/s per user`` (1000 / TPOT in ms).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core import traces
from rackbook.inputs import catalogs
from rackbook.inputs import claims as claims_registry
from rackbook.inputs import published as figures_registry
from rackbook.physics import check as physics_check
from rackbook.physics.units import plural
from rackbook.results.headline import ClaimReading

#: The verdict words of the "published evidence" reading.
VERDICTS: tuple[str, ...] = ("within", "above", "below", "none published", "depends on basis")

#: Shipped published traces (folder under data/published/) -> what they hold.
SHIPPED: dict[str, str] = {
    "inferencex-dsr1": "InferenceX API rows (DeepSeek-R1)",
    "mlperf-v6.1-dsr1": "MLPerf Inference v6.1 DeepSeek-R1 token-rate rows",
    "sglang-cookbook-v4": "SGLang cookbook DeepSeek-V4 cells",
}

PER_GPU = "tok/s/GPU"
PER_USER = "tok/s per user"


def per_gpu_unit(tokens: str) -> str:
    """The unit of a per-GPU throughput point by the tokens its basis counts: ``output
    tok/s/GPU``, ``input tok/s/GPU`` (new or with cache hits), else ``tok/s/GPU`` (a total)."""
    if tokens == "output":
        return "output " + PER_GPU
    if tokens in ("new input", "input incl. cached"):
        return "input " + PER_GPU
    return PER_GPU


def unit_family(unit: str) -> str:
    """Units that differ only in the tokens they name (``output tok/s/GPU``, ``tok/s/GPU``) are
    one family: their values compare once the bases agree."""
    return PER_GPU if unit.endswith(PER_GPU) else unit


#: Columns of :func:`published_points`, in order.
POINT_COLUMNS: list[str] = [
    "id",
    "claim_id",
    "result",
    "kind",
    "role",
    "used",
    "value",
    "unit",
    "as_published",
    "verified",
    "submitter",
    "system",
    "hardware",
    "gpus",
    "model",
    "precision",
    "engine",
    "engine_version",
    "scenario",
    "isl",
    "osl",
    "concurrency",
    "speculative",
    "tok_s_per_gpu",
    "tok_s_per_user",
    "url",
    "date",
    "quote",
    "notes",
    "source",
    "comparable",
    "basis",
    "conversion",
    "price_kind",
]


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


# ----------------------------------------------------------------------------- formatting


def _num(v: float) -> str:
    """A published number as text: thousands separated, about four significant digits."""
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}" if a >= 10_000 else f"{v:,.1f}".removesuffix(".0")
    return f"{v:.4g}"


def value_text(v: float, unit: str) -> str:
    """``v`` with its unit: ``8.95x``, ``$3.96/GPU-hour``, ``11,056 tok/s/GPU``, ``0.9919``."""
    if unit == "x":
        return f"{v:.3g}x"
    if unit.startswith("$/"):
        return f"${v:,.2f}/{unit[2:]}"
    if unit == "1":
        return f"{v:.4g}"
    if unit == "%":
        return f"{v:.3g} %"
    return f"{_num(v)} {unit}"


# ----------------------------------------------------------------------------- loading


@functools.lru_cache(maxsize=4)
def _trace_points(root: str) -> pd.DataFrame:
    """The published_points tables of the shipped traces, with the trace's name in ``source``."""
    frames = []
    for name in SHIPPED:
        t = traces.read_trace(Path(root) / name, itl=False)
        df = t.extra["published_points"].copy()
        df["source"] = name
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


@functools.lru_cache(maxsize=4)
def _registry(root: str) -> tuple[claims_registry.Registry, figures_registry.FigureRegistry]:
    reg = claims_registry.load_claims(Path(root) / "claims.yaml")
    return reg, figures_registry.load_figures(Path(root) / "published" / "figures.yaml", reg)


def _base(row: dict[str, object]) -> dict[str, object]:
    out: dict[str, object] = {c: None for c in POINT_COLUMNS}
    out.update(row)
    out["kind"] = "published"
    return out


def _int(v: object) -> int | None:
    return None if v is None or pd.isna(v) else int(v)  # type: ignore[call-overload]


def _float(v: object) -> float | None:
    return None if v is None or pd.isna(v) else float(v)  # type: ignore[arg-type]


def _from_trace_row(r: pd.Series) -> dict[str, object]:
    """One published trace row as a point of the claim it bears on.

    SGLang cookbook cells at concurrency 1 bear on single-user (value: one user's decode speed,
    1000 / TPOT); every other trace row bears on rack-scaling.throughput (value: tok/s/GPU).
    """
    conc = _int(r["concurrency"])
    single = r["source"] == "sglang-cookbook-v4" and conc == 1
    b = trace_row_basis(r, per_user=single)
    value = float(r["tok_s_per_user"]) if single else float(r["tok_s_per_gpu"])
    unit = PER_USER if single else per_gpu_unit(b.tokens)
    if single:
        stat = _s(r["latency_statistic"]) or "median"
        shown = f"{stat} TPOT {r[f'tpot_{stat}_s'] * 1000:.3g} ms"
    elif r["per_gpu_basis"].startswith("computed"):
        shown = f"{_num(float(r['tok_s_total']))} tok/s on {int(r['gpus'])} GPUs"
    else:
        shown = value_text(value, unit)
    return _base(
        {
            "id": f"{r['source']}:{r['point_id']}",
            "claim_id": "single-user.throughput" if single else "rack-scaling.throughput",
            "role": "measurement",
            "value": value,
            "unit": unit,
            "as_published": shown,
            "verified": True,
            "submitter": r["submitter"],
            "system": r["system"],
            "hardware": r["hardware"],
            "gpus": _int(r["gpus"]),
            "model": r["model"],
            "precision": r["precision"],
            "engine": r["engine"],
            "engine_version": r["engine_version"],
            "scenario": r["scenario"],
            "isl": _int(r["isl"]),
            "osl": _int(r["osl"]),
            "concurrency": conc,
            "speculative": r["speculative"],
            "tok_s_per_gpu": float(r["tok_s_per_gpu"]),
            "tok_s_per_user": _float(r["tok_s_per_user"]),
            "url": r["url"],
            "date": r["date"],
            "notes": r["notes"],
            "source": r["source"],
            "basis": b,
        }
    )


def trace_row_basis(r: pd.Series, per_user: bool = False) -> basis_mod.Basis:
    """The basis of one published trace row from its basis columns (filled by the importers
    from each source's definitions): per GPU of ``tok_s_per_gpu``, or, with ``per_user``, one
    user's decode speed (1000 / TPOT, the row's ``latency_statistic``)."""
    spec = str(r["speculation_kind"])
    return basis_mod.make(
        {
            "metric": "per-user decode speed" if per_user else "throughput",
            "tokens": "output" if per_user else str(r["tokens_counted"]),
            "per": "user" if per_user else "GPU",
            "gpus": str(r["gpus_counted"]),
            "gpu_count": _int(r["gpus"]),
            "workload": str(r["workload"]),
            "speculation": spec,
            "statistic": (_s(r["latency_statistic"]) or "-") if per_user else "rate",
            "serving": _s(r["serving"]) or basis_mod.UNKNOWN,  # the source does not say
            "model": str(r["model"]),
            "hardware": str(r["hardware"]),
            "engine": str(r["engine"]),
            "engine_version": _s(r["engine_version"]),
            "isl": _int(r["isl"]),
            "osl": _int(r["osl"]),
            "concurrency": _int(r["concurrency"]),
            "spec_method": _s(r["speculative"]) if spec in ("real", "simulated") else None,
        }
    )


def converted_rows(r: pd.Series) -> list[dict[str, object]]:
    """A published trace row read on another token basis by a stated, tested rule, as extra
    points of rack-scaling.throughput (id suffix ``#output``):

    - an SGLang cookbook total derived from output (fp4/fp8 cells): output per GPU = total x
      osl / (isl + osl), the cookbook's own derivation undone (exact);
    - an InferenceX row with its output split: output per GPU of the deployment =
      ``output_tput_per_gpu`` (per decode GPU in a fixed-length disaggregated row) x decode
      GPUs / all GPUs; an AgentX row's split is already over all GPUs, taken as published.

    Rows of one user (the cookbook at concurrency 1) and rows without a split give none."""
    if r["source"] == "sglang-cookbook-v4" and _int(r["concurrency"]) == 1:
        return []
    out_gpu = _float(r["output_tok_s_per_gpu"])
    if out_gpu is None:
        return []
    if r["source"] == "sglang-cookbook-v4":
        rule = "output = total x osl / (isl + osl) (the cookbook's derivation undone)"
        value = out_gpu
    elif r["workload"] == "agentic trace":
        # InferenceX AgentX (process_agentic_result.py) divides input and output by all GPUs
        value, rule = out_gpu, "output per GPU as published (AgentX: over all the run's GPUs)"
    else:
        if r["serving"] == "disaggregated":
            dec, gpus = _int(r["decode_gpus"]), _int(r["gpus"])
            if dec is None or gpus is None:
                return []
            value = out_gpu * dec / gpus
            rule = (
                f"output per GPU of the deployment = output per decode GPU x {dec} decode / "
                f"{gpus} GPUs"
            )
        else:
            value, rule = out_gpu, "output per GPU as published (metrics.output_tput_per_gpu)"
    row = _from_trace_row(r)
    row.update(
        id=f"{row['id']}#output",
        value=value,
        as_published=f"{_num(float(r['tok_s_per_gpu']))} total tok/s/GPU, converted",
        basis=dataclasses.replace(row["basis"], tokens="output"),  # type: ignore[type-var]
        unit=per_gpu_unit("output"),
        conversion=rule,
    )
    return [row]


#: MLPerf system sizes set against each other for the rack/node ratio (GPUs).
RACK_GPUS, NODE_GPUS = 72, 8


def mlperf_ratios(points: pd.DataFrame) -> list[dict[str, object]]:
    """Rack-over-node throughput ratios computed from MLPerf rows: for each submitter, hardware,
    model and scenario with both a 72-GPU and an 8-GPU result, ``Result(72) / Result(8)``
    (linear scaling would be 9x). Each becomes a point of rack-scaling.speedup."""
    ml = points[points["source"] == "mlperf-v6.1-dsr1"]
    out = []
    for (sub, hw, model, scen), g in ml.groupby(
        ["submitter", "hardware", "model", "scenario"], sort=True
    ):
        rack = g[g["gpus"] == RACK_GPUS]
        node = g[g["gpus"] == NODE_GPUS]
        if len(rack) != 1 or len(node) != 1:
            continue
        r, n = rack.iloc[0], node.iloc[0]
        ratio = float(r["tok_s_total"]) / float(n["tok_s_total"])
        b = dataclasses.replace(
            trace_row_basis(r),
            metric="rack/node throughput ratio",
            per="deployment",
            counting=f"{RACK_GPUS} GPUs over {NODE_GPUS}",
        )
        out.append(
            _base(
                {
                    "id": f"mlperf-v6.1-dsr1:{sub}/{scen}/{RACK_GPUS}v{NODE_GPUS}",
                    "claim_id": "rack-scaling.speedup",
                    "role": "measurement",
                    "value": ratio,
                    "unit": "x",
                    "as_published": f"{_num(float(r['tok_s_total']))} / "
                    f"{_num(float(n['tok_s_total']))} tok/s",
                    "verified": True,
                    "submitter": sub,
                    "system": f"{r['system']} vs {n['system']}",
                    "hardware": hw,
                    "gpus": RACK_GPUS,
                    "model": model,
                    "precision": r["precision"],
                    "engine": r["engine"],
                    "engine_version": r["engine_version"],
                    "scenario": scen,
                    "url": r["url"],
                    "date": r["date"],
                    "notes": f"ratio of two published rows computed here: {RACK_GPUS} GPUs over "
                    f"{NODE_GPUS} ({NODE_GPUS} GPUs = two 4-GPU GB300 trays); linear would be "
                    f"{RACK_GPUS / NODE_GPUS:g}x. MLPerf does not say whether the "
                    f"{RACK_GPUS}-GPU system serves as one deployment or as independent "
                    f"replicas (e.g. {RACK_GPUS // NODE_GPUS} of {NODE_GPUS} GPUs); as "
                    "replicas the ratio counts replicas, not one deployment's scaling",
                    "source": "mlperf-v6.1-dsr1",
                    "basis": b,
                }
            )
        )
    return out


def _from_figure(f: figures_registry.Figure) -> dict[str, object]:
    """A registry figure as a point; a TPOT (ms) bearing on single-user becomes one user's
    decode speed, 1000 / TPOT tok/s."""
    value, unit = f.value, f.unit
    if f.claim == "single-user.throughput" and f.unit == "ms":
        value, unit = 1000.0 / f.value, PER_USER
    elif unit.endswith(PER_GPU):  # the tokens counted are named by the basis
        unit = per_gpu_unit(f.figure_basis.tokens)
    return _base(
        {
            "id": f"figures:{f.id}",
            "claim_id": f.claim,
            "role": f.role,
            "value": value,
            "unit": unit,
            "as_published": value_text(f.value, f.unit),
            "verified": f.verified,
            "submitter": f.submitter,
            "system": None,
            "hardware": f.hardware,
            "gpus": f.gpus,
            "model": f.model,
            "precision": f.precision,
            "engine": f.engine,
            "engine_version": f.engine_version,
            "isl": f.isl,
            "osl": f.osl,
            "concurrency": f.concurrency,
            "speculative": f.speculative,
            "tok_s_per_gpu": value if unit_family(unit) == PER_GPU else None,
            "tok_s_per_user": f.tok_s_per_user,
            "url": f.url,
            "date": f.date,
            "quote": f.quote,
            "notes": f.notes,
            "source": "figures.yaml",
            "basis": f.figure_basis,
            "price_kind": f.price_kind,
        }
    )


# ----------------------------------------------------------------------------- comparability


def _s(v: object) -> str | None:
    """``v`` as text, or None when missing (None, NA, NaN)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):  # type: ignore[arg-type]
        return None
    return str(v)


#: Parts of the basis in which a published point must agree with the claim's (named) basis to
#: decide its reading, per claim (a point differing in any of them is shown, never decides).
#: Why each: per-GPU throughput depends on the token kind, the GPUs counted, the model, the GPU,
#: the deployment's size, the workload and on whether the speculation really ran; a rack/node
#: ratio on the model, GPU, workload and the node it divides by; a price on its kind and GPU;
#: one user's speed on the model, GPU, GPU count, the statistic and real speculation; a
#: balance index on its exact definition and the model's routing.
DECISIVE: dict[str, tuple[str, ...]] = {
    "decode-parity.gap": ("metric", "model"),
    "rack-scaling.throughput": (
        "metric", "tokens", "per", "gpus", "model", "hardware", "gpu_count", "workload",
        "speculation",
    ),
    "rack-scaling.speedup": ("metric", "counting", "model", "hardware", "workload", "speculation"),
    "rack-scaling.cost": ("metric", "hardware"),
    "prefill-gain.gain": ("metric", "model", "context"),
    "eplb-balance.before": ("metric", "model"),
    "eplb-balance.after": ("metric", "model"),
    "eplb-balance.recovered": ("metric", "model"),
    "context-latency.kv-bytes": ("metric", "model"),
    "context-latency.delta": ("metric", "model"),
    "context-latency.delta-pct": ("metric", "model"),
    "single-user.throughput": (
        "metric", "per", "model", "hardware", "gpu_count", "concurrency", "speculation",
        "statistic",
    ),
}  # fmt: skip
#: Every part a closeness score looks at, and its weight (a point's distance from the claim's
#: basis is the sum of the weights of the parts it differs in; the closest point has the
#: least). Quantity first (metric, tokens, per), then model, GPUs, GPU count, the rest.
WEIGHTS: dict[str, float] = {
    "metric": 10, "tokens": 10, "per": 10, "counting": 3, "gpus": 3, "model": 4,
    "hardware": 2, "gpu_count": 2, "concurrency": 2, "context": 2, "workload": 1,
    "speculation": 1, "statistic": 1, "engine": 1, "serving": 0.5,
}  # fmt: skip


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


_AGENTIC = "each turn's whole prompt counted as input, the re-read cached prefix included"
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


def _rack_bases(gpus: int) -> tuple[Plausible, ...]:
    per_gpu = tuple(
        Plausible(f"per GPU, {n}", (("tokens", t),), phase=_PHASE[t]) for n, t in _TOKENS
    )
    total = tuple(
        Plausible(
            f"a rack total over {gpus} GPUs, {n}",
            (("tokens", t),),
            1 / gpus,
            f"the figure read as the rack's total, divided by its {gpus} GPUs",
            _PHASE[t],
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
    if any(p in ANALOGUE_PARTS for p, _ in diffs):
        return True
    return any(p == "hardware" for p, _ in diffs) and basis_mod.hardware_class(
        point.hardware
    ) != basis_mod.hardware_class(claim_basis.hardware)


def _differences(
    claim_basis: basis_mod.Basis, point: basis_mod.Basis, claim_id: str
) -> list[tuple[str, str]]:
    parts = PARTS.get(claim_id) or tuple(dict.fromkeys((*DECISIVE[claim_id], *WEIGHTS)))
    return basis_mod.differences(claim_basis, point, parts)


def mismatch(row: pd.Series | dict[str, object], claim: claims_registry.Claim) -> str:
    """How a published point's basis differs from the claim's stated basis (parts the claim
    leaves unknown are read per plausible basis, not named here), or ``"same basis as the
    claim"``."""
    b = row.get("basis")
    if not isinstance(b, basis_mod.Basis):
        return "no basis"
    diffs = _differences(claim.figure_basis, b, claim.id)
    if not diffs:
        return "same basis as the claim"
    return "differs from the claim in: " + "; ".join(t for _, t in diffs)


def _score(diffs: list[tuple[str, str]]) -> float:
    return float(sum(WEIGHTS.get(p, 1.0) for p, _ in diffs))


@functools.lru_cache(maxsize=64)
def _physics_rules_out(
    model: str, hardware: str, gpus: int, per_gpu: float, phase: str, data: str = ""
) -> str | None:
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
    return (
        f"{_num(per_gpu)} computed {phase} tok/s per GPU is {c.ratio:.3g}x the {c.limit} "
        f"ceiling of {_num(c.ceiling_tok_s_per_gpu)} on {gid.upper()}"
    )


def ruled_out(claim: claims_registry.Claim, plaus: Plausible, value: float) -> str | None:
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
        value * plaus.scale,
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


def is_near(claim_basis: basis_mod.Basis, point: basis_mod.Basis, diffs: list) -> bool:
    """True when a point is near evidence for a claim's named basis: it measures the same
    quantity (no difference in metric, tokens counted or per), on the claim's model or a
    sibling of its family (:func:`model_family`: DeepSeek-V4-Flash for V4.1-Flash, not
    V4-Pro), on the claim's GPU or one of the same generation (GB300 and B300); every other
    difference (GPU count, concurrency, speculation, engine, workload, statistic) is stated
    beside it. A near point never decides a verdict."""
    parts = {p for p, _ in diffs}
    if parts & {"metric", "tokens", "per"}:
        return False
    if point.model != basis_mod.NA and model_family(point.model) != model_family(claim_basis.model):
        return False
    hw_c, hw_p = claim_basis.hardware, point.hardware
    if hw_c in (basis_mod.NA, basis_mod.UNKNOWN) or hw_p == basis_mod.NA:
        return True
    return basis_mod.hardware_class(hw_p) == basis_mod.hardware_class(hw_c)


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

    def text(self) -> str:
        """One line: ``2 near points, 104,429 to 142,565 tok/s/GPU; the claim 6.69x to 9.14x
        them (they differ in: GPU count; engine)``."""
        n = plural(len(self.points), "near point")
        span = (
            value_text(self.low, self.unit)
            if self.low == self.high
            else f"{value_text(self.low, self.unit)} to {value_text(self.high, self.unit)}"
        )
        ratio = ""
        if self.ratio_low is not None and self.ratio_high is not None:
            ratio = (
                f"; the claim {ratio_text(self.ratio_low)} it"
                if len(self.points) == 1 or self.ratio_low == self.ratio_high
                else f"; the claim {ratio_text(self.ratio_low)} to {ratio_text(self.ratio_high)} "
                "them"
            )
        diff = f" (differing in: {', '.join(self.differences)})" if self.differences else ""
        flag = f", {len(self.unverified)} of them NOT VERIFIED" if self.unverified else ""
        return f"{n}{flag}, {span}{ratio}{diff}"

    def as_dict(self) -> dict[str, object]:
        """For the headline JSON."""
        d = dataclasses.asdict(self)
        for k in ("points", "differences", "urls", "unverified"):
            d[k] = list(d[k])
        return d


def _near(
    name: str,
    value: float,
    unit: str,
    rows: list[tuple[pd.Series, list, list]],
    cb: basis_mod.Basis,
) -> Near | None:
    """The near reading of one named basis from its candidate rows (point, differences,
    decisive differences): measurements in the claim's unit family that do not decide (a
    decisive difference, or read only second-hand) but are near (:func:`is_near`)."""
    near = [
        (r, diffs)
        for r, diffs, dec in rows
        if (dec or not bool(r["verified"]))
        and r["role"] == "measurement"
        and unit_family(str(r["unit"])) == unit_family(unit)
        and is_near(cb, r["basis"], diffs)
    ]
    if not near:
        return None
    vals = [float(r["value"]) for r, _ in near]
    lo, hi = min(vals), max(vals)
    ok = math.isfinite(value) and lo > 0
    parts = list(dict.fromkeys(basis_mod.NAMES.get(p, p) for _, d in near for p, _ in d))
    return Near(
        name,
        tuple(str(r["id"]) for r, _ in near),
        lo,
        hi,
        unit_family(str(near[0][0]["unit"])),
        value / hi if ok else None,
        value / lo if ok else None,
        tuple(parts),
        tuple(dict.fromkeys(str(r["url"]) for r, _ in near)),
        tuple(str(r["id"]) for r, _ in near if not bool(r["verified"])),
    )


# ----------------------------------------------------------------------------- public API


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
        _registry(str(paths.DATA))[0].for_result(result)  # unknown result: one-line InputError
        df = df[df["result"] == result]
    return df.reset_index(drop=True)


@functools.lru_cache(maxsize=4)
def _all_points(data: str) -> pd.DataFrame:
    """Every published point (see :func:`published_points`), built once per data folder."""
    reg, figs = _registry(data)
    raw = _trace_points(str(Path(data) / "published"))
    rows = []
    for _, r in raw.iterrows():
        rows.append(_from_trace_row(r))
        rows += converted_rows(r)
    rows += mlperf_ratios(raw)
    rows += [_from_figure(f) for f in figs.figures]
    df = pd.DataFrame(rows, columns=POINT_COLUMNS)
    df["result"] = [reg.get(c).result for c in df["claim_id"]]
    df["gpus"] = pd.array([_int(v) for v in df["gpus"]], dtype="Int64")
    for c in ("isl", "osl", "concurrency"):
        df[c] = pd.array([_int(v) for v in df[c]], dtype="Int64")
    df["value"] = df["value"].astype(float)
    df["verified"] = df["verified"].astype(bool)
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
    ``below`` it; ``none published`` when no point is left. Points with ``verified`` false
    (second-hand) are left out of the range and named in the reason."""
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
            f"{value / hi:.3g}x the highest published ({value_text(hi, unit)})",
        )
    elif value < lo - tolerance:
        verdict, margin = (
            "below",
            f"{value / lo:.3g}x the lowest published ({value_text(lo, unit)})",
        )
    else:
        verdict = "within"
        margin = (
            f"within the published {value_text(lo, unit)} to {value_text(hi, unit)}"
            if hi > lo
            else f"at the published {value_text(hi, unit)}"
        )
    span = value_text(lo, unit) if hi == lo else f"{value_text(lo, unit)} to {value_text(hi, unit)}"
    n = plural(len(vals), "published point")
    reason = f"{value_text(value, unit)} against {n}, {span}{skipped}"
    urls = tuple(dict.fromkeys(points["url"])) if "url" in points.columns else ()
    return PublishedReading(claim_id, verdict, margin, reason, urls)


@dataclass(frozen=True)
class Closest:
    """The published point closest in basis to a claim's (named) basis: its id, who published
    it, value and unit, the claim's figure over it (``ratio``; None when the units differ),
    its URL, and the parts its basis differs in (empty: like for like)."""

    id: str
    who: str
    value: float
    unit: str
    ratio: float | None
    url: str
    differences: tuple[str, ...]
    verified: bool
    #: ``like for like`` (decides), ``near`` (same quantity, model and GPU; differs in
    #: another part that decides, so it does not) or ``analogue`` (another quantity, model or
    #: GPU class: shown, never decides)
    kind: str
    #: the other points exactly as close in basis (same distance, same verification): their
    #: values span ``low`` to ``high``, and the claim is ``ratio_low`` to ``ratio_high`` them.
    #: A tie is shown as a spread, never resolved toward the claim's figure.
    tied: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    #: a cost model's figure (a modelled price), not a measurement nor a listed price
    modelled: bool = False

    def value_span(self) -> str:
        """The value, or the spread of the equally close points: ``8.61x to 8.95x (4 points
        equally close)``."""
        if not self.tied or self.low is None or self.high is None or self.low == self.high:
            return value_text(self.value, self.unit)
        n = len(self.tied) + 1
        return (
            f"{value_text(self.low, self.unit)} to {value_text(self.high, self.unit)} "
            f"({n} points equally close)"
        )

    def ratio_span(self) -> str:
        """``, the claim 0.883x to 0.917x them`` (or ``it`` for one point); empty without a
        ratio."""
        if self.ratio is None:
            return ""
        lo, hi = self.ratio_low, self.ratio_high
        if self.tied and lo is not None and hi is not None and lo != hi:
            return f", the claim {ratio_text(lo)} to {ratio_text(hi)} them"
        return f", the claim {ratio_text(self.ratio)} it"

    def text(self) -> str:
        """One line: ``vLLM · GB300 x 4: 456.6 tok/s per user, the claim 1.81x it (URL); differs
        in: ...``; equally close points as a spread."""
        flag = "" if self.verified else " (NOT VERIFIED)"
        lead = {
            "like for like": "",
            "near": "does not decide: ",
            "analogue": "an analogue, never decides: ",
        }[self.kind]
        diff = (lead + "differs in " + "; ".join(self.differences)) if self.differences else ""
        diff = diff or "like for like"
        return f"{self.who}: {self.value_span()}{flag}{self.ratio_span()} ({self.url}); {diff}"


def ratio_text(x: float) -> str:
    """A ratio: ``1.81x``, ``9.14x``, ``1,054x``."""
    return f"{x:,.0f}x" if abs(x) >= 100 else f"{x:.3g}x"


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
    ruled_out: str | None = None
    #: True when every point the verdict rests on is a modelled figure (a cost model's price):
    #: the reading is shown, but it is not a published like-for-like measurement
    modelled: bool = False

    def text(self) -> str:
        """One line: name, verdict, margin and the closest point."""
        close = f"closest: {self.closest.text()}" if self.closest else "no published point"
        margin = f" ({self.margin})" if self.margin not in ("", "-") else ""
        name = _as(self.name)
        out = f"{name}: {self.verdict}{margin}; {close}"
        if self.near is not None:
            out += f"; near evidence: {self.near.text()}"
        if self.ruled_out:
            out = f"{name}: ruled out by physics ({self.ruled_out}); " + out.split(": ", 1)[1]
        return out

    def as_dict(self) -> dict[str, object]:
        """For the headline JSON."""
        d = dataclasses.asdict(self)
        d["decided_on"] = list(self.decided_on)
        d["sources"] = list(self.sources)
        if self.closest is not None:
            d["closest"] = dataclasses.asdict(self.closest) | {
                "differences": list(self.closest.differences),
                "tied": list(self.closest.tied),
            }
        d["near"] = self.near.as_dict() if self.near is not None else None
        return d


def _claim_value(claim: claims_registry.Claim) -> float:
    if claim.value is not None:
        return claim.value
    return float("nan")


def _who(r: pd.Series) -> str:
    parts = [str(r["submitter"])]
    hw = _s(r["hardware"])
    hw = None if hw in ("not stated", basis_mod.UNKNOWN) else hw  # never "not stated x 16"
    gpus = r["gpus"]
    if hw:
        parts.append(f"{hw}" + ("" if pd.isna(gpus) else f" x {int(gpus)}"))
    elif not pd.isna(gpus):
        parts.append(f"{int(gpus)} GPUs")
    if _s(r["model"]):
        parts.append(str(r["model"]))
    if _s(r["engine"]):
        parts.append(str(r["engine"]).split(",")[0])
    return " · ".join(parts)


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
        v = value * plaus.scale if value is not None and math.isfinite(value) else float("nan")
        rows = []
        for _, r in points.iterrows():
            b = r["basis"]
            if not isinstance(b, basis_mod.Basis) or r["role"] == "context":
                continue
            # a point is "of this basis" when it counts the same thing in every part the named
            # basis fills in (the expanded unknowns)
            if any(getattr(b, part) != want for part, want in plaus.changes if part != "counting"):
                continue
            diffs = _differences(cb, b, claim.id)
            decisive = [d for d in diffs if d[0] in DECISIVE[claim.id]]
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
        pr = published_reading(claim.id, v, frame, tolerance * plaus.scale)
        unit = _unit_of(claim, plaus)
        closest = _closest(cb, v, unit, rows) if rows else None
        margin = pr.margin
        if pr.verdict == "none published":
            margin = "-"
        modelled = bool(deciding) and all(_modelled(r) for r in deciding)
        if modelled and margin != "-":
            margin += " (modelled prices, not measurements)"
        out.append(
            BasisReading(
                plaus.name,
                pr.verdict,
                margin,
                cb.short(),
                tuple(str(r["id"]) for r in deciding),
                pr.sources,
                closest,
                plaus.conversion,
                _near(plaus.name, v, unit, rows, cb),
                ruled_out(claim, plaus, value),
                modelled,
            )
        )
    return out


def _modelled(r: pd.Series) -> bool:
    """True for a point that is a cost model's figure (its ``price_kind``)."""
    return _s(r.get("price_kind")) in figures_registry.MODELLED_PRICES


def _closest(
    cb: basis_mod.Basis, v: float, unit: str, rows: list[tuple[pd.Series, list, list]]
) -> Closest:
    """The closest point of a named basis: least distance in basis (:func:`_score`), verified
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
        str(r["id"]), _who(r), float(r["value"]), str(r["unit"]), ratio, str(r["url"]),
        tuple(t for _, t in diffs), bool(r["verified"]),
        "analogue" if r["role"] == "analogue" or is_analogue(cb, r["basis"], dec)
        else "near" if dec or not bool(r["verified"]) else "like for like",
        tuple(str(x[0]["id"]) for x in tied),
        lo, hi,
        v / hi if fin and hi else None,
        v / lo if fin and lo else None,
        _modelled(r),
    )  # fmt: skip


def _closeness(row: tuple[pd.Series, list[tuple[str, str]], object]) -> tuple[float, bool, str]:
    """Sort key of a candidate for the closest point: its distance in basis (:func:`_score`),
    then verified first, then id. Never the value: a tie in basis is a spread, not a choice
    of the point nearest the claim."""
    r, diffs, _ = row
    return (_score(diffs), not bool(r["verified"]), str(r["id"]))


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
    """One verdict over the named bases: ``none published`` when none decides; the verdict
    when every basis with a published point of its own gives the same; else
    :data:`DEPENDS`. Never a range over mixed bases: each basis is read on its own points."""
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


def near_summary(brs: list[BasisReading] | tuple[BasisReading, ...]) -> dict[str, object] | None:
    """The near evidence of a claim over the named bases physics allows: every near point
    (ids), the spread of their values (``low``, ``high`` in ``unit``), and the claim's ratio to
    them over all those bases (``ratio_low``, ``ratio_high``: each basis's figure over its own
    points, so the figure is never set against points of another basis); ``bases`` names
    the bases that have near points. None when no allowed basis has one."""
    ns = [br.near for br in brs if br.near is not None and not br.ruled_out]
    if not ns:
        return None
    ratios = [x for n in ns for x in (n.ratio_low, n.ratio_high) if x is not None]
    return {
        "points": list(dict.fromkeys(p for n in ns for p in n.points)),
        "low": min(n.low for n in ns),
        "high": max(n.high for n in ns),
        "unit": ns[0].unit,
        "ratio_low": min(ratios) if ratios else None,
        "ratio_high": max(ratios) if ratios else None,
        "bases": [n.basis for n in ns],
        "unverified": list(dict.fromkeys(p for n in ns for p in n.unverified)),
        "verified": any(len(n.points) > len(n.unverified) for n in ns),
    }


def near_text(near: dict[str, object] | None) -> str:
    """The near reading as one line (the page generators print it): ``near evidence: 4
    points, 904.8 to 142,565 tok/s/GPU; the claim 0.093x to 14.6x them over 3 bases``; empty
    without near evidence."""
    if not near:
        return ""
    pts = near["points"]
    lo, hi, unit = float(near["low"]), float(near["high"]), str(near["unit"])  # type: ignore[arg-type]
    span = value_text(lo, unit) if lo == hi else f"{value_text(lo, unit)} to {value_text(hi, unit)}"
    out = f"near evidence: {plural(len(pts), 'point')}, {span}"  # type: ignore[arg-type]
    unv = near.get("unverified") or []
    if unv:
        out += f" ({len(unv)} NOT VERIFIED)"  # type: ignore[arg-type]
    rl, rh = near.get("ratio_low"), near.get("ratio_high")
    if isinstance(rl, float) and isinstance(rh, float):
        them = "it" if len(pts) == 1 else "them"  # type: ignore[arg-type]
        out += (
            f"; the claim {ratio_text(rl)} {them}"
            if rl == rh
            else f"; the claim {ratio_text(rl)} to {ratio_text(rh)} {them}"
        )
    nb = len(near["bases"])  # type: ignore[arg-type]
    if nb > 1:
        out += f" over {nb} bases"
    return out + " (does not decide)"


def claim_evidence(claim_id: str, value: float | None = None) -> ClaimEvidence:
    """The book's published-evidence reading of a claim of ``data/claims.yaml`` (its figure,
    or ``value`` in the claim's unit), on each of its named bases. The headline's closest point
    is chosen among the bases physics allows (all of them when it rules out every one), by
    distance in basis; bases exactly as close are all named."""
    reg, _ = _registry(str(paths.DATA))
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
            (_score_of(br.closest), not br.closest.verified, i, br)
            for i, br in enumerate(allowed)
            if br.closest is not None
        ),
        key=lambda c: c[:3],
    )
    top = [c[3] for c in cands if c[:2] == cands[0][:2]] if cands else []
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
                f"{_as(br.name)}: {br.closest.value_span()}{br.closest.ratio_span()}"  # type: ignore[union-attr]
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
    near = near_summary(brs)
    if near:
        margin += f"; {near_text(near)}"
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
        claim_id, verdict, margin, reason, sources, tuple(brs), closest, closest_basis, near,
        out_names,
    )  # fmt: skip


def _score_of(c: Closest) -> float:
    """Distance in basis of a closest point (the weights of the parts it differs in)."""
    return float(sum(WEIGHTS.get(_part_of(t), 1.0) for t in c.differences))


def _part_of(text: str) -> str:
    """The basis part a difference text names (``GPU count: 4 (claim: 72)`` -> ``gpu_count``)."""
    name = text.split(":", 1)[0]
    return next((k for k, v in basis_mod.NAMES.items() if v == name), name)


def _as(name: str) -> str:
    """A basis name as prose: ``as the rack's total`` (the name itself when it starts so)."""
    return name if name.startswith("as ") else f"as {name}"


def _names_text(names: tuple[str, ...]) -> str:
    """Basis names as ``as a`` or ``as a and as b`` or ``as a, as b and as c``."""
    shown = [_as(n) for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


#: What the reader must know before a claim's published reading: why it has no published
#: measurement of its own basis, or which part of its basis the write-up leaves open.
READING_NOTES: dict[str, str] = {
    "rack-scaling.throughput": "the write-up describes an agentic workload with long, growing "
    "contexts and says neither which tokens it counts (cached prefix or not) nor whether "
    "'per GPU' divides the rack's total",
    "rack-scaling.speedup": "the write-up does not say what a node is; MLPerf's 72-GPU results "
    "may be independent replicas (its summary does not say how the GPUs serve), so its "
    "72-over-8 ratios may count replicas rather than one deployment's scaling",
    "rack-scaling.cost": "the write-up does not say what the dollars are; each price is read "
    "with its own source (InferenceX's GB300 rental and ownership prices are placeholders, "
    "1.2x GB200 pricing per its constants file; OCI's list price was read only in a price "
    "compilation)",
    "single-user.throughput": "the write-up names neither the statistic of its speed nor "
    "whether its speculation ran for real",
    "decode-parity.gap": "no DeepInfer throughput is published",
    "prefill-gain.gain": "no published gain of prefill changes at a fixed 128,000-token cached "
    "prefix; published caching gains compare with and without a cache",
    "eplb-balance.recovered": "no published share of the uniform-routing potential recovered",
    "context-latency.kv-bytes": "the figure comes from the model card and paper; no published "
    "measurement of the global KV bytes per token",
    "context-latency.delta": "no published decode latency of DeepSeek-V4.1-Flash at 128k and "
    "855k tokens of context",
    "context-latency.delta-pct": "no published decode latency of DeepSeek-V4.1-Flash at 128k "
    "and 855k tokens of context",
}


def claim_reading(claim_id: str, value: float | None = None) -> PublishedReading:
    """The published-evidence reading of a claim (:func:`claim_evidence`) as one verdict,
    margin, reason and the URLs of the points it decided on."""
    e = claim_evidence(claim_id, value)
    return PublishedReading(claim_id, e.verdict, e.margin, e.reason, e.sources)


def reading(
    claim_id: str, value: float | None = None, registry: claims_registry.Registry | None = None
) -> ClaimReading:
    """The published reading of a claim as the chapters' three-readings vocabulary
    (:class:`rackbook.results.headline.ClaimReading`), carrying the URLs it decided on, the
    basis (or named bases) it decided on, the closest like-for-like point and each named
    basis's reading, for the headline file."""
    if value is None and registry is not None:
        c = registry.get(claim_id)
        value = c.value if c.value is not None else None
    e = claim_evidence(claim_id, value)
    closest = None
    if e.closest is not None:
        closest = dataclasses.asdict(e.closest) | {
            "differences": list(e.closest.differences),
            "tied": list(e.closest.tied),
            "basis": e.closest_basis,
        }
    return ClaimReading(
        claim_id,
        "published",
        e.verdict,
        e.margin,
        e.reason,
        sources=e.sources,
        basis=" | ".join(f"{_as(b.name)}: {b.basis}" for b in e.bases),
        closest=closest,
        by_basis=tuple(b.as_dict() for b in e.bases),
        near=e.near,
        ruled_out=e.ruled_out,
    )


#: Columns of :func:`evidence_table`.
TABLE_COLUMNS = [
    "claim_id",
    "kind",
    "who",
    "hardware",
    "gpus",
    "model",
    "engine",
    "value",
    "unit",
    "as_published",
    "used",
    "role",
    "verified",
    "comparable",
    "basis",
    "verdict",
    "margin",
    "url",
    "date",
]


def evidence_table(result: str) -> pd.DataFrame:
    """A chapter's "published measurements" table: for each claim of ``result``, a row of kind
    ``claim`` (its figure, the combined published verdict and the closest point), one row of
    kind ``reading`` per named basis (its verdict, margin, the closest point of that basis in
    ``comparable`` with its URL), then its published points (kind ``published``; ``used``
    marks those that decided a basis reading, ``comparable`` names how their basis differs).
    Columns: :data:`TABLE_COLUMNS`."""
    reg, _ = _registry(str(paths.DATA))
    pts = published_points(result)
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
                "date": None,
            }
        )
        for br in e.bases:
            rows.append(
                {
                    "claim_id": c.id,
                    "kind": "reading",
                    "who": br.name,
                    "hardware": None,
                    "gpus": None,
                    "model": None,
                    "engine": None,
                    "value": None,
                    "unit": None,
                    "as_published": br.conversion or None,
                    "used": bool(br.decided_on),
                    "role": "reading",
                    "verified": True,
                    "comparable": (br.closest.text() if br.closest else "no published point")
                    + (f"; near evidence (does not decide): {br.near.text()}" if br.near else ""),
                    "basis": br.basis,
                    "verdict": br.verdict,
                    "margin": (
                        f"ruled out by physics: {br.ruled_out}"
                        + (f"; {br.margin}" if br.margin not in ("", "-") else "")
                        if br.ruled_out
                        else br.margin
                    ),
                    "url": br.closest.url if br.closest else None,
                    "date": None,
                }
            )
        for p in pts[pts["claim_id"] == c.id].itertuples():
            rows.append(
                {
                    "claim_id": c.id,
                    "kind": "published",
                    "who": f"{p.submitter}" + (f" · {p.system}" if _s(p.system) else ""),
                    "hardware": p.hardware,
                    "gpus": p.gpus,
                    "model": p.model,
                    "engine": p.engine,
                    "value": p.value,
                    "unit": p.unit,
                    "as_published": p.as_published,
                    "used": bool(p.used),
                    "role": p.role,
                    "verified": bool(p.verified),
                    "comparable": p.comparable,
                    "basis": p.basis.short() if isinstance(p.basis, basis_mod.Basis) else None,
                    "verdict": None,
                    "margin": None,
                    "url": p.url,
                    "date": p.date,
                }
            )
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["gpus"] = pd.array([_int(v) for v in df["gpus"]], dtype="Int64")
    return df
