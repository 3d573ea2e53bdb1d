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
published``. :func:`claim_reading` chooses, per claim, which points are comparable (the choice
and its reason live in :data:`SELECTORS` and the selector docstrings) and reads the claim's
figure from the claims registry. Second-hand figures (``verified`` false) are shown but never
decide a verdict alone.

Units: the claim's own (``tok/s``, ``x``, ``$/GPU-hour``, ``1``, ...); per-GPU throughput in
``tok/s/GPU``; per-user decode speed in ``tok/s per user`` (1000 / TPOT in ms).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core import traces
from rackbook.inputs import claims as claims_registry
from rackbook.inputs import published as figures_registry
from rackbook.physics.units import plural
from rackbook.results.headline import ClaimReading

#: The verdict words of the "published evidence" reading.
VERDICTS: tuple[str, ...] = ("within", "above", "below", "none published")

#: Shipped published traces (folder under data/published/) -> what they hold.
SHIPPED: dict[str, str] = {
    "inferencex-dsr1": "InferenceX API rows (DeepSeek-R1)",
    "mlperf-v6.1-dsr1": "MLPerf Inference v6.1 DeepSeek-R1 token-rate rows",
    "sglang-cookbook-v4": "SGLang cookbook DeepSeek-V4 cells",
}

PER_GPU = "tok/s/GPU"
PER_USER = "tok/s per user"

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
    unit = PER_USER if single else PER_GPU
    if single:
        shown = f"TPOT {r['tpot_median_s'] * 1000:.3g} ms"
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
            "serving": _s(r["serving"]) or "aggregated",
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
            trace_row_basis(r), metric="rack/node throughput ratio", per="deployment"
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
            "tok_s_per_gpu": value if unit == PER_GPU else None,
            "tok_s_per_user": f.tok_s_per_user,
            "url": f.url,
            "date": f.date,
            "quote": f.quote,
            "notes": f.notes,
            "source": "figures.yaml",
            "basis": f.figure_basis,
        }
    )


# ----------------------------------------------------------------------------- comparability


def _s(v: object) -> str | None:
    """``v`` as text, or None when missing (None, NA, NaN)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):  # type: ignore[arg-type]
        return None
    return str(v)


def _has(text: object, *needles: str) -> bool:
    t = (_s(text) or "").lower().replace(" ", "")
    return any(n in t for n in needles)


def _hw_class(hardware: object) -> str:
    """``gb300`` | ``b300`` | ``gb200`` | ``b200`` | other (lower case), from a hardware name."""
    for key in ("gb300", "gb200", "b300", "b200"):
        if _has(hardware, key):
            return key
    return (_s(hardware) or "unknown").lower()


def mismatch_parts(
    row: pd.Series | dict[str, object], claim: claims_registry.Claim
) -> list[tuple[str, str]]:
    """What differs between a published point and the claim's scope, as (kind, text) pairs;
    kinds: ``quantity`` (an analogue), ``model``, ``hardware``, ``GPU count``, ``engine`` (every
    claim is vLLM's)."""
    scope = claim.scope
    parts: list[tuple[str, str]] = []
    if row.get("role") == "analogue":
        parts.append(("quantity", "analogue (another quantity)"))
    model = _s(row.get("model")) or "?"
    if scope.model and not _has(model, "v4.1-flash", "v4.1flash"):
        parts.append(("model", f"model {model}"))
    if scope.hardware:
        want, got = _hw_class(scope.hardware), _hw_class(row.get("hardware"))
        if got != want:
            extra = " (a Grace-coupled B300)" if (got, want) == ("gb300", "b300") else ""
            parts.append(("hardware", f"hardware {row.get('hardware')}{extra}"))
    gpus = row.get("gpus")
    if scope.gpu_count:
        if gpus is None or pd.isna(gpus):
            parts.append(("GPU count", "GPU count not stated"))
        elif int(gpus) != scope.gpu_count:
            parts.append(("GPU count", f"{int(gpus)} GPUs"))
    if not _has(row.get("engine"), "vllm"):
        parts.append(("engine", f"engine {_s(row.get('engine')) or 'not stated'}"))
    return parts


def mismatch(row: pd.Series | dict[str, object], claim: claims_registry.Claim) -> str:
    """The mismatch of a published point with the claim, named (:func:`mismatch_parts`), or
    ``"same model, hardware, GPUs and engine"``."""
    parts = mismatch_parts(row, claim)
    if not parts:
        return "same model, hardware, GPUs and engine"
    return f"differs from the claim ({claim.scope.summary()}, vLLM): " + "; ".join(
        t for _, t in parts
    )


# ----------------------------------------------------------------------------- selection

Selector = Callable[[pd.DataFrame], pd.Series]


def _none(points: pd.DataFrame) -> pd.Series:
    """No published measurement of the quantity exists; analogues are named in the reason."""
    return pd.Series(False, index=points.index)


def _measurements(points: pd.DataFrame) -> pd.Series:
    """Points of role ``measurement``: published measurements of the same quantity."""
    return points["role"].eq("measurement")


def select_rack_throughput(points: pd.DataFrame) -> pd.Series:
    """rack-scaling.throughput (954,000 tok/s "per GPU" on a GB300 NVL72): every published
    per-GPU throughput measured on GB300 GPUs with a DeepSeek-family MoE (R1, V4-Pro, V4-Flash,
    V4.1-Flash), whatever the engine, GPU count or workload. Per-GPU figures are what the claim
    states; the hardware class is what bounds them. GB200, B300, B200 and AMD rows stay in the
    table as context (another GPU)."""
    return (
        points["role"].eq("measurement")
        & points["unit"].eq(PER_GPU)
        & points["hardware"].map(_hw_class).eq("gb300")
    )


def select_speedup(points: pd.DataFrame) -> pd.Series:
    """rack-scaling.speedup (7.9x over one node): the MLPerf v6.1 rack/node ratios of the same
    submitter, system family, model and scenario (72 vs 8 GB300 GPUs, DeepSeek-R1), the only
    published pairs of one rack against a node of the same GPUs."""
    return points["role"].eq("measurement") & points["unit"].eq("x")


def select_cost(points: pd.DataFrame) -> pd.Series:
    """rack-scaling.cost ($38.96 per GPU-hour): the published GB300 prices per GPU-hour
    (hyperscaler TCO, neocloud, 3-year rental). The claim does not say what its dollars are;
    set beside prices, it reads as a cost of the GPU-hour."""
    return points["role"].eq("measurement") & points["unit"].eq("$/GPU-hour")


def select_single_user(points: pd.DataFrame) -> pd.Series:
    """single-user.throughput (826 tok/s for one user on 4 B300): published single-stream
    (concurrency 1) decode speeds of DeepSeek-V4 Flash on B300-class GPUs (B300 and GB300),
    i.e. 1000 / TPOT: the SGLang cookbook cells and SGLang PR 33082 (4x GB300 with DSpark)."""
    return (
        points["role"].eq("measurement")
        & points["unit"].eq(PER_USER)
        & points["concurrency"].eq(1)
        & points["hardware"].map(_hw_class).isin(["b300", "gb300"])
        & points["model"].map(lambda m: _has(m, "v4-flash", "v4.1-flash"))
    )


def select_eplb(points: pd.DataFrame) -> pd.Series:
    """eplb-balance.before / .after: measured rank balancedness (mean over EP ranks / max) without
    / with EPLB (vLLM PR 50647, Kimi K3 on 16 ranks). Worked examples and test fixtures are
    context, not measurements."""
    return _measurements(points) & points["unit"].eq("1")


#: claim id -> the selector that chooses the comparable published points (docstring = reason).
SELECTORS: dict[str, Selector] = {
    "decode-parity.gap": _none,
    "rack-scaling.throughput": select_rack_throughput,
    "rack-scaling.speedup": select_speedup,
    "rack-scaling.cost": select_cost,
    "prefill-gain.gain": _none,
    "eplb-balance.before": select_eplb,
    "eplb-balance.after": select_eplb,
    "eplb-balance.recovered": _none,
    "context-latency.kv-bytes": _none,
    "context-latency.delta": _none,
    "context-latency.delta-pct": _none,
    "single-user.throughput": select_single_user,
}

#: Why a claim has no published measurement (the analogues are listed from the points).
NONE_REASONS: dict[str, str] = {
    "decode-parity.gap": "no DeepInfer throughput is published; the closest engine-vs-DeepSeek "
    "comparison is SGLang against DeepSeek's own profile (an analogue, not vLLM vs DeepInfer)",
    "prefill-gain.gain": "no published gain of prefill changes at a fixed 128,000-token cached "
    "prefix; published caching gains compare with and without a cache (analogues)",
    "eplb-balance.recovered": "no published share of the uniform-routing potential recovered",
    "context-latency.kv-bytes": "no published measurement of DeepSeek-V4.1-Flash's global KV bytes "
    "per token (the figure comes from the model card and paper); published KV sizes are of other "
    "models or include the sliding window",
    "context-latency.delta": "no published decode latency of DeepSeek-V4.1-Flash at 128k and "
    "855k tokens of context",
    "context-latency.delta-pct": "no published decode latency of DeepSeek-V4.1-Flash at 128k and "
    "855k tokens of context",
}


# ----------------------------------------------------------------------------- public API


def published_points(result: str | None = None) -> pd.DataFrame:
    """All shipped published points and registry figures, one row each, in the unit of the
    claim they bear on (``value``/``unit``; the figure as published in ``as_published``).

    Columns (:data:`POINT_COLUMNS`): id, claim_id, result, kind (always ``published``), role
    (measurement | analogue | context), used (chosen by the claim's selector), value, unit,
    as_published, verified, submitter, system, hardware, gpus, model, precision, engine,
    engine_version, scenario, isl, osl, concurrency, speculative, tok_s_per_gpu, tok_s_per_user
    (for the throughput-vs-interactivity figure), url, date, quote, notes, source (trace name or
    ``figures.yaml``), comparable (the mismatch with the claim, named). ``result`` keeps only
    the points of that result's claims.
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
    rows = [_from_trace_row(r) for _, r in raw.iterrows()]
    rows += mlperf_ratios(raw)
    rows += [_from_figure(f) for f in figs.figures]
    df = pd.DataFrame(rows, columns=POINT_COLUMNS)
    df["result"] = [reg.get(c).result for c in df["claim_id"]]
    df["gpus"] = pd.array([_int(v) for v in df["gpus"]], dtype="Int64")
    for c in ("isl", "osl", "concurrency"):
        df[c] = pd.array([_int(v) for v in df[c]], dtype="Int64")
    df["value"] = df["value"].astype(float)
    used = pd.Series(False, index=df.index)
    for cid, g in df.groupby("claim_id"):
        used.loc[g.index] = SELECTORS[str(cid)](g).to_numpy(bool)
    df["used"] = used.astype(bool)
    df["verified"] = df["verified"].astype(bool)
    df["comparable"] = [mismatch(r, reg.get(r["claim_id"])) for _, r in df.iterrows()]
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


def _common_mismatch(points: pd.DataFrame, claim: claims_registry.Claim) -> str:
    """How many of the chosen points differ from the claim, by kind, as one phrase."""
    counts: dict[str, int] = {}
    for _, r in points.iterrows():
        for kind in dict.fromkeys(k for k, _ in mismatch_parts(r, claim)):
            counts[kind] = counts.get(kind, 0) + 1
    if not counts:
        return "same model, hardware, GPUs and engine as the claim"
    n = len(points)
    return "mismatch: " + ", ".join(f"{k} differs in {c} of {n}" for k, c in counts.items())


def claim_reading(claim_id: str, value: float | None = None) -> PublishedReading:
    """The book's published-evidence reading of a claim of ``data/claims.yaml``: its figure
    (``value``, default the registry's, in the claim's unit) against the published points its
    selector (:data:`SELECTORS`) chooses, widened by the claim's tolerance."""
    reg, _ = _registry(str(paths.DATA))
    claim = reg.get(claim_id)
    if value is None:
        value = claim.value if claim.value is not None else float("nan")
    pts = published_points()
    mine = pts[pts["claim_id"] == claim_id]
    chosen = mine[mine["used"]]
    reading = published_reading(claim_id, value, chosen, reg.tolerance(claim_id))
    others = mine[~mine["used"] & mine["role"].isin(["analogue", "measurement"])]
    if claim_id in NONE_REASONS or not len(chosen):
        why = NONE_REASONS.get(claim_id, "no comparable published measurement")
        if len(others):
            named = "; ".join(
                f"{r.submitter}: {r.as_published}" + ("" if r.verified else " (NOT VERIFIED)")
                for r in others.itertuples()
            )
            why += f" [analogues: {named}]"
        return PublishedReading(claim_id, "none published", "-", why, ())
    extra = _common_mismatch(chosen, claim)
    if claim_id == "rack-scaling.throughput" and claim.scope.gpu_count:
        per_gpu = value / claim.scope.gpu_count
        alt = published_reading(claim_id, per_gpu, chosen, reg.tolerance(claim_id))
        extra += (
            f"; read as the rack's total, {value_text(value, 'tok/s')} is "
            f"{value_text(per_gpu, PER_GPU)} over {claim.scope.gpu_count} GPUs: {alt.verdict}"
        )
    return PublishedReading(
        claim_id, reading.verdict, reading.margin, f"{reading.reason}; {extra}", reading.sources
    )


def reading(
    claim_id: str, value: float | None = None, registry: claims_registry.Registry | None = None
) -> ClaimReading:
    """The published reading of a claim as the chapters' three-readings vocabulary
    (:class:`rackbook.results.headline.ClaimReading`): :func:`claim_reading` on the claim's
    figure from ``registry`` (default the shipped claims registry) unless ``value`` is given;
    the sources used are named in the reason."""
    if value is None and registry is not None:
        c = registry.get(claim_id)
        value = c.value if c.value is not None else None
    r = claim_reading(claim_id, value)
    return ClaimReading(claim_id, "published", r.verdict, r.margin, r.reason)


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
    "verdict",
    "margin",
    "url",
    "date",
]


def evidence_table(result: str) -> pd.DataFrame:
    """A chapter's "published measurements" table: for each claim of ``result``, a row of kind
    ``claim`` (its figure, the published-evidence verdict and margin) followed by its published
    points (kind ``published``; ``used`` marks those the verdict rests on, ``comparable`` names
    the mismatch). Columns: :data:`TABLE_COLUMNS`."""
    reg, _ = _registry(str(paths.DATA))
    pts = published_points(result)
    rows = []
    for c in reg.for_result(result):
        r = claim_reading(c.id)
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
                "comparable": r.reason,
                "verdict": r.verdict,
                "margin": r.margin,
                "url": c.source.primary,
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
                    "verdict": None,
                    "margin": None,
                    "url": p.url,
                    "date": p.date,
                }
            )
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["gpus"] = pd.array([_int(v) for v in df["gpus"]], dtype="Int64")
    return df
