"""The expected throughput against every published measurement ``data/published/validation.yaml``
names, by leave-one-source-out error. Units: tok/s per GPU of the counted tokens."""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rackbook import paths
from rackbook.core import fsio
from rackbook.errors import InputError
from rackbook.inputs import catalogs, loader
from rackbook.physics import check as check_mod
from rackbook.physics import expected as exp_mod
from rackbook.physics.check import Workload
from rackbook.results import published_rows

MAPPING = "published/validation.yaml"  # under data/
#: The fit's grid: kernel-efficiency factors (dimensionless).
EFFICIENCIES: tuple[float, ...] = (0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)
#: Per-layer floors (s): the measured anchor only (fitted, a fold took none and over-read 3-6x).
LAYER_S: tuple[float, ...] = (exp_mod.ANCHOR_LAYER_S,)
#: Nominal quantiles of log(measured / expected) making an 80 % interval.
INTERVAL_QUANTILES = (0.1, 0.9)
#: Decoding batches per GPU grouped in bands for the book's figure.
BATCH_BANDS: tuple[tuple[float, str], ...] = (
    (1.0, "<= 1 sequence per GPU"),
    (16.0, "1-16 per GPU"),
    (math.inf, "> 16 per GPU"),
)


@dataclass(frozen=True)
class Point:
    """One published measurement as the expected throughput's arguments (tokens, tok/s, ms)."""

    id: str
    source: str
    primary: bool
    measured: float
    counted: str
    phase: str
    model: str
    precision: str | None
    gpu: str
    gpus: int
    isl: float | None
    osl: float | None
    batch: float | None
    batch_how: str
    verify: int = 1
    tokens_per_step: float = 1.0
    tpot_ms: float | None = None
    context: float | None = None
    note: str = ""

    @property
    def band(self) -> str:
        if self.batch is None:
            return "best batch (free)"
        per = self.batch / self.gpus
        return next(name for top, name in BATCH_BANDS if per <= top)


@dataclass(frozen=True)
class Excluded:
    id: str
    source: str
    reason: str


@dataclass(frozen=True)
class Prediction:
    """One point's expected rate (tok/s per GPU, its counted tokens) and interval."""

    point: Point
    expected: float
    low: float
    high: float
    deployment: str
    fit: str = "all"

    @property
    def ratio(self) -> float:
        return self.point.measured / self.expected if self.expected > 0 else math.inf

    @property
    def inside(self) -> bool:
        return self.low <= self.point.measured <= self.high

    def to_dict(self) -> dict[str, Any]:
        p = self.point
        row = {k: getattr(p, k) for k in ("id", "source", "primary")}
        row |= {"model": catalogs.as_model(p.model).name, "gpu": catalogs.as_gpu(p.gpu).label}
        row |= {k: getattr(p, k) for k in ("gpus", "counted", "band", "batch", "batch_how")}
        own = ("expected", "low", "high", "ratio", "inside", "deployment", "fit")
        return row | {"measured": p.measured} | {k: getattr(self, k) for k in own}


def _row_value(row: Any, *names: str) -> float | None:
    vals = (published_rows.float_or_none(row.get(n)) for n in names)
    return next((v for v in vals if v is not None and math.isfinite(v)), None)


def load(path: str | Path | None = None) -> tuple[list[Point], list[Excluded]]:
    """The points of the mapping (default :data:`MAPPING`) and those it excludes (InputError)."""
    file = Path(path) if path is not None else paths.DATA / MAPPING
    doc = loader.read_yaml(file)
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise InputError(file, "points", "a list of points is required")
    sources = doc.get("sources") or {}
    pts = published_rows.trace_points(str(paths.DATA / "published")).to_dict("records")
    rows = {(str(r["source"]), str(r["point_id"])): r for r in pts}
    figs = {f.id: f for f in published_rows.registries(str(paths.DATA))[1].figures}
    points: list[Point] = []
    excluded: list[Excluded] = []
    for i, raw in enumerate(doc["points"]):
        where = f"points[{i}]"
        if not isinstance(raw, dict) or "source" not in raw:
            raise InputError(file, where, "each point is a mapping with a source")
        src = str(raw["source"])
        if src not in sources:
            raise InputError(file, f"{where}.source", f"{src!r} is not under sources")
        spec = dict(sources[src].get("defaults") or {}) | raw
        spec["primary"] = bool(sources[src].get("primary"))
        pid = str(raw.get("point_id") or raw.get("figure") or "")
        if not pid:
            raise InputError(file, where, "names no point_id or figure")
        if spec.get("exclude"):
            excluded.append(Excluded(pid, src, str(spec["exclude"])))
            continue
        points.append(_point(file, where, pid, spec, rows, figs))
    return points, excluded


def _point(
    file: Path, where: str, pid: str, spec: dict[str, Any], rows: dict[tuple, Any], figs: dict
) -> Point:
    src, ttft, tpot, conc = str(spec["source"]), None, None, None
    if "figure" in spec:
        f = figs.get(pid)
        if f is None:
            raise InputError(file, f"{where}.figure", f"{pid!r} is not in figures.yaml")
        measured, conc = float(f.value) / float(spec.get("per_node") or 1), f.concurrency
    else:
        r = rows.get((src, pid))
        if r is None:
            raise InputError(file, f"{where}.point_id", f"{pid!r} is not a row of {src}")
        col = "output_tok_s_per_gpu" if spec.get("counted") == "output" else "tok_s_per_gpu"
        measured = _row_value(r, col, "tok_s_per_gpu") or 0.0
        ttft, tpot = (_row_value(r, f"{k}_mean_s", f"{k}_median_s") for k in ("ttft", "tpot"))
        conc = _row_value(r, "concurrency")
        spec.setdefault("gpus", published_rows.int_or_none(r.get("gpus")))
        for k in ("isl", "osl"):
            spec.setdefault(k, _row_value(r, k))
    if not measured or measured <= 0:
        raise InputError(file, where, f"{pid}: no measured per-GPU value")
    for k in ("model", "gpu", "gpus", "counted", "phase"):
        if spec.get(k) in (None, ""):
            raise InputError(file, f"{where}.{k}", "missing")
    how = str(spec.get("batch", "concurrency" if conc else "free"))
    osl = spec.get("osl")
    if how == "little":
        if not (conc and osl and ttft is not None and tpot is not None):
            raise InputError(file, f"{where}.batch", "little needs concurrency, OSL, TTFT and TPOT")
        batch: float | None = exp_mod.littles_law(float(conc), float(osl), ttft, tpot)
        how_text = (
            f"Little's law: {conc:,.0f} clients x {osl - 1:,.0f} x {tpot * 1e3:.3g} ms / "
            f"({ttft:.3g} s + {osl - 1:,.0f} x {tpot * 1e3:.3g} ms) = {batch:,.1f} decoding"
        )
    elif how == "concurrency":
        batch, how_text = float(conc or 1), f"the {conc:,.0f} clients (no latency published)"
    elif how == "free":
        batch, how_text = None, "the best batch that fits (an offline or unconstrained run)"
    else:
        batch, how_text = float(how), "as published"
    sp: Any = spec.get("speculation") or "none"  # "none" or {verify, tokens_per_step}
    verify, tps = (1, 1.0) if sp == "none" else (int(sp["verify"]), float(sp["tokens_per_step"]))
    if spec.get("counted") not in ("output", "total", "input"):
        raise InputError(file, f"{where}.counted", "is not one of output, total, input")
    names = "counted phase model gpu precision isl osl tpot_ms context"
    kw: dict[str, Any] = {k: spec.get(k) for k in names.split()}
    kw |= dict(gpus=int(spec["gpus"]), note=str(spec.get("note") or ""))
    kw |= dict(batch=batch, batch_how=how_text, verify=verify, tokens_per_step=tps)
    return Point(pid, src, spec["primary"], measured, **kw)


def _split(p: Point, claimed: float) -> tuple[float, float]:
    """(output, new input) tok/s per GPU of ``claimed`` counted tok/s per GPU."""
    isl, osl = p.isl or 0.0, p.osl or 0.0
    if p.counted == "output":
        out, inp = claimed, (claimed * isl / osl if osl else 0.0)
    elif p.counted == "input":
        inp, out = claimed, (claimed * osl / isl if isl else 0.0)
    else:
        out, inp = claimed * osl / (isl + osl), claimed * isl / (isl + osl)
    return (0.0 if p.phase == "prefill" else out), (0.0 if p.phase == "decode" else inp)


def predict(p: Point, fit: exp_mod.Fit, *, fit_name: str = "all") -> Prediction:
    """The expected rate of ``p`` with ``fit``."""
    model = catalogs.as_model(p.model)
    kv = check_mod.narrowest_kv_dtype(model) or ("fp4" if model.kv_cache.relative_to else None)
    ctx = p.context if p.context is not None else ((p.isl or 0) + (p.osl or 0) / 2)
    out, inp = _split(p, p.measured)
    wk: dict[str, Any] = dict(tokens_per_step=p.tokens_per_step, verify_tokens=p.verify)
    wk |= dict(output_tok_s_per_gpu=out, new_input_tok_s_per_gpu=inp, kv_dtype=kv)
    w = Workload(p.counted, decode_context=ctx, prefill_prefix=(p.isl or 0) / 2, **wk)
    kw: dict[str, Any] = dict(precision=p.precision, tpot_ms=p.tpot_ms, fit=fit)
    kw |= dict(claimed=p.measured, phase=p.phase, decode_batch=p.batch)
    e = exp_mod.expected(model, p.gpu, p.gpus, w, **kw)
    rate, dep = e.tok_s_per_gpu, e.deployment
    low, high = rate * math.exp(fit.log_low), rate * math.exp(fit.log_high)
    return Prediction(p, rate, low, high, dep, fit_name)


def _weights(points: list[Point]) -> np.ndarray:
    counts = Counter(p.source for p in points)
    return np.array([1.0 / counts[p.source] for p in points])


def best(logs: np.ndarray, weights: np.ndarray) -> int:
    """The grid row minimising the weighted squared log error (weight 0: not fitted)."""
    return int(np.argmin((logs**2 * weights).sum(axis=1)))


def weighted_quantiles(
    values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]
) -> tuple[float, ...]:
    """Weighted quantiles ``qs``, linear between weighted midpoints (numpy's ``hazen`` rule)."""
    if not len(values):
        return (0.0,) * len(qs)
    order = np.argsort(values, kind="stable")
    v, w = np.asarray(values, float)[order], np.asarray(weights, float)[order]
    mid = (np.cumsum(w) - 0.5 * w) / w.sum()
    return tuple(float(np.interp(q, mid, v)) for q in qs)


def interval_levels(n: int) -> tuple[float, float]:
    """:data:`INTERVAL_QUANTILES` with split conformal's correction (each tail x (n + 1) / n)."""
    lo, hi = INTERVAL_QUANTILES
    k = (n + 1) / n if n else 1.0
    return max(0.0, 1 - (1 - lo) * k), min(1.0, hi * k)


def grid_fit(i: int, residuals: np.ndarray, weights: np.ndarray | None = None) -> exp_mod.Fit:
    """The fit at grid row ``i``, its interval from the (held-out) log ``residuals``."""
    e, lay = EFFICIENCIES[i // len(LAYER_S)], LAYER_S[i % len(LAYER_S)]
    w = np.ones(len(residuals)) if weights is None else weights
    lo, hi = weighted_quantiles(residuals, w, interval_levels(len(residuals)))
    return exp_mod.Fit(e, lay, lo, hi)


@dataclass(frozen=True)
class FitResult:
    """The fit on all points, each source held out, and the grid's log residuals."""

    fit: exp_mod.Fit
    held_out: dict[str, exp_mod.Fit]
    points: list[Point]
    logs: np.ndarray = field(repr=False)


def _row_without(points: list[Point], logs: np.ndarray, out: set[str]) -> int | None:
    """The grid row fitted on ``points`` minus the sources ``out`` (None: no point left)."""
    keep = [p.source not in out for p in points]
    if not any(keep):
        return None
    w = np.zeros(len(points))
    w[np.array(keep)] = _weights([p for p, k in zip(points, keep, strict=True) if k])
    return best(logs, w)


def held_out_logs(
    points: list[Point], logs: np.ndarray, without: frozenset[str] = frozenset()
) -> tuple[np.ndarray, np.ndarray]:
    """(log residual, weight) of each point not of ``without``, predicted without its source."""
    sources = sorted({p.source for p in points} - without)
    res, wts = [], []
    for src in sources:
        j = _row_without(points, logs, set(without) | {src})
        idx = [k for k, p in enumerate(points) if p.source == src]
        if j is not None:
            res.extend(logs[j][idx])
            wts.extend([1.0 / len(idx)] * len(idx))
    return np.array(res), np.array(wts)


def fit_points(points: list[Point], logs: np.ndarray | None = None) -> FitResult:
    """Fit on ``points`` and leaving each source out; intervals from held-out errors only."""
    if logs is None:  # log(measured / expected): grid fits (efficiency outer) in rows
        fits = [exp_mod.Fit(e, lay, 0.0, 0.0) for e in EFFICIENCIES for lay in LAYER_S]
        rows = [[math.log(max(predict(p, f).ratio, 1e-12)) for p in points] for f in fits]
        logs = np.array(rows, dtype=float).reshape(len(fits), len(points))
    fit = grid_fit(best(logs, _weights(points)), *held_out_logs(points, logs))
    held: dict[str, exp_mod.Fit] = {}
    for src in sorted({p.source for p in points}):
        j = _row_without(points, logs, {src})
        r, w = held_out_logs(points, logs, frozenset({src}))
        if j is not None and not len(r):  # one other source only: its fitted residuals
            keep = np.array([p.source != src for p in points])
            r, w = logs[j][keep], np.ones(int(keep.sum()))
        held[src] = fit if j is None else grid_fit(j, r, w)
    return FitResult(fit, held, points, logs)


def held_out_fit(fit: exp_mod.Fit, source: str) -> exp_mod.Fit:
    """The fit with ``source`` held out (stored in the fit file), else ``fit`` itself."""
    h: dict[str, Any] = fit.held_out.get(source) or {}
    keys = ("efficiency", "layer_s", "log_low", "log_high")
    return replace(fit, **{k: h[k] for k in keys}) if h else fit


def predictions(
    points: list[Point], fit: exp_mod.Fit, *, held_out: bool = True
) -> list[Prediction]:
    """Every point's prediction, its own source held out of the fit unless not ``held_out``."""
    out = []
    for p in points:
        f = held_out_fit(fit, p.source) if held_out else fit
        name = f"without {p.source}" if held_out and p.source in fit.held_out else "all"
        out.append(predict(p, f, fit_name=name))
    return out


def summary(preds: list[Prediction]) -> dict[str, Any]:
    """``{points, median_ratio, within_2x, inside}`` (shares; None without points)."""
    finite = [x for x in preds if math.isfinite(x.ratio)]
    if not finite:
        return {"points": 0, "median_ratio": None, "within_2x": None, "inside": None}
    r = np.array([x.ratio for x in finite])
    return {
        "points": len(r),
        "median_ratio": float(np.median(r)),
        "within_2x": float(np.mean((r >= 0.5) & (r <= 2.0))),
        "inside": float(np.mean([x.inside for x in finite])),
    }


def report(points: list[Point], fit: exp_mod.Fit) -> dict[str, Any]:
    """Held-out predictions and the summary on all points and on primary sources."""
    preds = predictions(points, fit, held_out=True)
    return {
        "fit": fit.params() | {"source": fit.source},
        "held_out": bool(fit.held_out),
        "all": summary(preds),
        "primary": summary([x for x in preds if x.point.primary]),
        "points": [x.to_dict() for x in preds],
    }


def fit_document(res: FitResult) -> dict[str, Any]:
    """The fit file's content: method, grid, fit, held-out fits and the points fitted."""
    return {
        "schema_version": 1,
        "method": (
            "layer_s: the per-layer floor (s), 1 / 125 tok/s / 61 layers from vLLM's single-user "
            "post on 8 B300 (2026-05-11), not fitted; efficiency: the grid value minimising the "
            "squared log(measured / expected), each source weighing the same; interval: the "
            f"quantiles {INTERVAL_QUANTILES} of log(measured / expected), each point predicted "
            "without its source, each level x (n + 1) / n (split conformal); held_out: the fit "
            "without each source, its interval from the other sources' points predicted without "
            "their source and the fold's. Regenerate: rackbook validate --fit"
        ),
        "grid": {"efficiency": list(EFFICIENCIES), "layer_s": list(LAYER_S)},
        "fit": res.fit.params(),
        "held_out": {k: v.params() for k, v in res.held_out.items()},
        "points": [{"id": p.id, "source": p.source, "measured": p.measured} for p in res.points],
    }


def cli_validate(args: argparse.Namespace) -> int:
    """``rackbook validate [--json] [--fit]``: held-out measured / expected per point (``--fit``
    refits first and writes the fit file)."""
    points, excluded = load()
    if args.fit:
        res = fit_points(points)
        doc = fit_document(res)
        fit = replace(res.fit, source="fitted now", held_out=doc["held_out"])
        rep = report(points, fit)
        doc["validation"] = {"all": rep["all"], "primary": rep["primary"]}
        text = yaml.safe_dump(doc, sort_keys=False, width=100)
        target = paths.DATA / exp_mod.FIT_FILE
        fsio.atomic_write_text(target, "# written by rackbook validate --fit\n" + text)
        print(
            f"wrote {target}: efficiency {res.fit.efficiency:g}, "
            f"floor {res.fit.layer_s * 1e6:g} µs a layer"
        )
    else:
        rep = report(points, exp_mod.load_fit())
    rep["excluded"] = [vars(x) for x in excluded]
    for x in rep["points"]:
        print(
            f"  {x['source']}: {x['id']}: measured {x['measured']:,.0f}, expected "
            f"{x['expected']:,.0f} ({x['low']:,.0f}-{x['high']:,.0f}), ratio {x['ratio']:.2f} "
            f"[{x['gpu']} x {x['gpus']}, {x['band']}, {x['fit']}]"
        )
    for x in excluded:
        print(f"  not validated: {x.source}: {x.id}: {x.reason}")
    for key, name in (("all", "all points"), ("primary", "primary sources")):
        print(f"{name}: {exp_mod.held_out_text(rep[key]) or 'no points'}")
    if args.json:
        print(json.dumps(rep, allow_nan=False))
    return 0
