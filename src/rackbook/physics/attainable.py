"""What measured kernels reach: the attainable estimate beside every physics bound, calibrated
kernel times (:mod:`rackbook.core.calibration`) summed in a stated deployment (dp-ep, tp-ep).
Units: seconds, bytes, tokens/s per GPU."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from rackbook import paths
from rackbook.core.units import percent, plural, ratio_text, whole
from rackbook.errors import InputError
from rackbook.inputs import catalogs, loader
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import check, roofline
from rackbook.physics.check import Check, Workload

if TYPE_CHECKING:  # the calibration reader (pandas) is imported only to read one
    from rackbook.core.calibration import Calibration

DEPLOYMENT_TEXT: dict[str, str] = {
    "dp-ep": "attention data-parallel + experts expert-parallel",
    "tp-ep": "attention tensor-parallel + experts expert-parallel",
}
#: The resource each part of a step is named by when a figure needs faster kernels.
RESOURCE: dict[str, str] = {
    "dense weights": "stream bandwidth",
    "dense GEMMs": "dense-GEMM throughput",
    "experts": "expert-GEMM speed",
    "index scan": "index-scan speed",
    "attention": "sparse-attention speed",
    "attention FLOP": "dense-GEMM throughput",
    "context reads": "stream bandwidth",
    "drafter": "stream bandwidth",
    "NVLink": "NVLink bandwidth (data sheet)",
}


@dataclass(frozen=True)
class Efficiencies:
    """Kernel speeds a calibration measured: data-sheet fractions, timed curves (sizes, s)."""

    label: str
    gpu: str
    spec_bw: float
    spec_flops: dict[str, float]
    stream: float
    dense: dict[str, float]
    experts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    scan: tuple[np.ndarray, np.ndarray]
    attention: tuple[np.ndarray, np.ndarray]
    shapes: dict[str, Any] = field(default_factory=dict)

    @property
    def hopper(self) -> bool:
        """Whether the calibration GPU is a Hopper part (H100, H200)."""
        return any(k in self.gpu.upper() for k in ("H100", "H200", "H800", "H20", "GH200"))


def efficiencies(cal: Calibration | None = None) -> Efficiencies:
    """The fractions and curves of ``cal`` (default: the shipped H200 reference, read once)."""
    return _shipped() if cal is None else _efficiencies(cal)


@functools.cache
def _shipped() -> Efficiencies:
    folder = paths.DATA / "calibration" / "h200-reference"
    files = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    return _from_json(loader.derived("efficiencies", files, lambda: _to_json(_efficiencies(None))))


def _to_json(e: Efficiencies) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(e), default=lambda a: a.tolist()))


def _from_json(d: dict[str, Any]) -> Efficiencies:
    def arrays(xs: list[list[float]]) -> Any:
        return tuple(np.asarray(x, dtype=np.float64) for x in xs)

    experts = {k: arrays(v) for k, v in d["experts"].items()}
    curves = {"scan": arrays(d["scan"]), "attention": arrays(d["attention"])}
    return Efficiencies(**d | curves | {"experts": experts})


def _efficiencies(cal: Calibration | None) -> Efficiencies:
    from rackbook.core.calibration import read_calibration

    cal = cal if cal is not None else read_calibration()
    where = cal.path or "calibration"
    spec = cal.run.get("spec") or {}
    if not spec.get("hbm_TBps"):
        problem = "no data sheet (a CPU calibration has none): the attainable estimate needs "
        problem += "the share of a GPU's data sheet that its kernels reach"
        raise InputError(where, "run.json.spec", problem)
    spec_bw = float(spec["hbm_TBps"]) * 1e12
    flops = {
        d: float(spec[f"{d}_dense_TFLOPs"]) * 1e12
        for d in ("bf16", "fp8")
        if spec.get(f"{d}_dense_TFLOPs")
    }

    def need(fam: str) -> Any:
        rows = cal.family(fam)
        if rows.empty:
            raise InputError(where, "kernels", f"no {fam} rows")
        return rows

    def curve(rows: Any, *cols: str) -> Any:
        return tuple(rows[c].to_numpy(np.float64) for c in cols)

    hbm = need("hbm_read")
    stream = float((hbm["bytes"] / hbm["seconds"]).max()) / spec_bw
    dense = {
        str(d): float((g["flops"] / g["seconds"]).max()) / flops[str(d)]
        for d, g in need("dense_gemm").groupby("dtype")
        if str(d) in flops
    }
    gemms = {d: cal.family("expert_gemm", d) for d in ("fp8", "bf16")}
    cols = ("size", "seconds", "bytes", "flops")
    experts = {d: curve(e, *cols) for d, e in gemms.items() if not e.empty}
    if not experts:
        raise InputError(where, "kernels", "no expert_gemm rows")
    gpu, kernels = str(cal.run["gpu"]), {"scan": "indexer_scan", "attention": "sparse_attention"}
    curves = {k: curve(need(fam), "size", "seconds") for k, fam in kernels.items()}
    shapes = dict(cal.run.get("shapes") or {})
    return Efficiencies(
        cal.label, gpu, spec_bw, flops, stream, dense, experts, **curves, shapes=shapes
    )


def _interp(x: float, xs: np.ndarray, ys: np.ndarray) -> float:
    if x <= xs[0]:  # x > 0: keys, tokens
        return float(ys[0] * x / xs[0])
    if x >= xs[-1]:
        if len(xs) == 1:
            return float(ys[-1] * x / xs[-1])
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return float(ys[-1] + max(slope, 0.0) * (x - xs[-1]))
    return float(np.interp(x, xs, ys))


def scan_seconds(eff: Efficiencies, keys: float, sequences: float) -> float:
    """Calibration-GPU seconds of one index layer's scan of ``sequences`` x ``keys`` keys (> 0)."""
    sizes, secs = eff.scan
    rate = float((sizes / secs).max())
    one = _interp(keys, sizes, secs) if keys <= sizes[-1] else keys / rate
    return max(one, sequences * keys / rate)


def expert_dtypes(eff: Efficiencies, model: ModelSpec) -> tuple[str, str]:
    """The model's routed-expert dtype and the calibration curve it reads (FP4 on FP8's)."""
    dtype = model.weights.routed_expert_dtype or model.weights.dense_dtype or "bf16"
    if dtype in eff.experts:
        return dtype, dtype
    return dtype, "fp8" if "fp8" in eff.experts else next(iter(eff.experts))


def expert_seconds(eff: Efficiencies, model: ModelSpec, gpu: GpuSpec, tokens: float) -> float:
    """Seconds one routed expert takes on ``gpu`` for ``tokens`` (> 0), scaled from the timing."""
    m, a = model.moe, model.architecture
    assert m.moe_intermediate_size and a.hidden_size
    dtype, cd = expert_dtypes(eff, model)
    sizes, secs, nbytes, flops = eff.experts[cd]
    t = _interp(tokens, sizes, secs) if tokens >= sizes[0] else float(secs[0])
    b_cal = float(np.interp(tokens, sizes, nbytes))
    i_cal = eff.shapes.get("moe_intermediate_size", m.moe_intermediate_size)
    per_cal = 3 * eff.shapes.get("hidden_size", a.hidden_size) * i_cal
    f_cal = 2.0 * max(tokens, 1.0) * per_cal
    f_t = 2.0 * max(tokens, 1.0) * 3 * a.hidden_size * m.moe_intermediate_size
    run = gpu.run_precision(dtype)
    peak_t = gpu.flops(run) or 0.0
    peak_c = eff.spec_flops.get(cd, max(eff.spec_flops.values()))
    # the target at the calibration's fraction of the roofline
    r_cal = max(b_cal / eff.spec_bw, f_cal / peak_c)
    r_bw = roofline.expert_bytes(model) / gpu.hbm_bandwidth_bytes_per_s
    r_tgt = max(r_bw, f_t / peak_t if peak_t > 0 else math.inf)
    return t * r_tgt / r_cal if r_cal > 0 else t


def dense_flops(eff: Efficiencies, gpu: GpuSpec, dtype: str) -> float:
    """Dense FLOP/s ``gpu`` reaches at ``dtype``: the calibration's fraction of its peak."""
    run = gpu.run_precision(dtype)
    frac = eff.dense.get(run) or eff.dense.get("fp8") or max(eff.dense.values())
    return frac * float(gpu.flops(run) or 0.0)


@functools.lru_cache(maxsize=64)
def nvlink_domain(gpu_id: str) -> int | None:
    """GPUs one NVLink domain of GPU ``gpu_id`` holds: the largest catalog system built from it."""
    sizes = [s.gpus for s in catalogs.load_hardware().systems.values() if s.gpu == gpu_id]
    return max(sizes) if sizes else None


@dataclass(frozen=True)
class Estimate:
    """One phase's tok/s per GPU, seconds per part (a decode step, a prefill token), batch."""

    phase: str
    tok_s_per_gpu: float
    parts: dict[str, float]
    batch: float | None
    formula: str


def _dispatch_bytes(model: ModelSpec, gpus: int) -> float:
    k, h = model.moe.experts_per_token, model.architecture.hidden_size
    assert k and h
    return k * (gpus - 1) / gpus * h * 3  # bytes a value: dispatch FP8 (1) + combine BF16 (2)


def _link(gpu: GpuSpec, gpus: int) -> float:
    return (gpu.nvlink_bandwidth_bytes_per_s or 0.0) / 2 if gpus > 1 else 0.0


def decode_step(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    batch: float,
    eff: Efficiencies,
    work: Workload | None = None,
    deployment: str = "dp-ep",
) -> Estimate:
    """One decode step of ``batch`` sequences doing ``work``: the busiest GPU's parts (seconds)."""
    w = work or Workload()
    context, verify, kv_dtype = w.decode_context, w.verify_tokens, w.kv_dtype
    m, a = model.moe, model.architecture
    assert m.num_routed_experts and m.experts_per_token and a.hidden_size and a.num_layers
    tp = deployment == "tp-ep"
    shards = gpus if tp else 1  # the GPUs one sequence's dense weights and index heads span
    tokens = batch * verify  # over all the GPUs
    local = batch if tp else batch / min(batch, gpus)  # sequences a GPU with sequences serves
    split, bw = roofline.weight_split(model, "decode"), gpu.hbm_bandwidth_bytes_per_s
    stream = eff.stream * bw  # bytes/s a kernel streams
    t_read = split.dense_bytes / shards / stream
    flops = dense_flops(eff, gpu, split.dense_dtype)
    t_gemm = 2 * (split.dense_params / shards) * (tokens if tp else local * verify) / flops
    parts = {"dense weights" if t_read >= t_gemm else "dense GEMMs": max(t_read, t_gemm)}
    distinct = roofline.distinct_experts(m.num_routed_experts, m.experts_per_token, tokens)
    per_expert = tokens * m.experts_per_token / distinct if distinct else 0.0
    mine = distinct / min(gpus, m.num_routed_experts) if distinct else 0.0
    parts["experts"] = split.moe_layers * mine * expert_seconds(eff, model, gpu, per_expert)
    seqs = batch / gpus if tp else local  # the sequences whose context a GPU reads
    if kv_dtype and context:
        kc, att_cfg = model.kv_cache, model.attention
        srcs = zip(kc.owning_layers or [], kc.compression_ratios or [], strict=True)
        keys = [context / r for lay, r in srcs if att_cfg and lay in att_cfg.index_sources]
        scan = sum(scan_seconds(eff, k, seqs) for k in keys) * (eff.spec_bw / bw) / shards
        cr = roofline.context_reads(model, context, "decode", kv_dtype)
        reads = (cr.rows + cr.pool + cr.window) * seqs / stream
        lat = float(np.interp(context, *eff.attention))  # a latency: flat outside the sizes timed
        att = a.num_layers * (lat * (eff.spec_bw / bw))
        parts |= {"index scan": scan} if scan else {}
        if att or reads:
            parts["attention" if att >= reads else "context reads"] = max(att, reads)
    if verify > 1 and model.speculative is not None:
        parts["drafter"] = roofline.draft_bytes(model) / shards / stream
    link = _link(gpu, gpus)
    if link and not tp:  # dispatch + combine of each token to the experts on other GPUs
        parts["NVLink"] = split.moe_layers * local * verify * _dispatch_bytes(model, gpus) / link
    elif link:  # two all-reduces of the hidden states (BF16) a layer
        allreduce = a.num_layers * 2 * 2 * (gpus - 1) / gpus * tokens * a.hidden_size * 2
        parts["NVLink"] = allreduce / link
    step = sum(parts.values())
    tps = batch * w.tokens_per_step / gpus / step if step else math.inf
    shown = " + ".join(f"{k} {v * 1e6:,.4g} us" for k, v in parts.items())
    formula = (
        f"{DEPLOYMENT_TEXT[deployment]}, {plural(whole(batch), 'sequence')} on "
        f"{plural(gpus, 'GPU')} at {context:,.0f} tokens of context: step = {shown} = "
        f"{step * 1e6:,.4g} us; {whole(batch):,} x {w.tokens_per_step:g} tokens / step / {gpus} = "
        f"{tps:,.0f} tok/s per GPU ({distinct:.4g} experts a layer touched, "
        f"{per_expert:.3g} tokens each)"
    )
    return Estimate("decode", tps, parts, batch, formula)


def prefill_token(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    eff: Efficiencies,
    work: Workload | None = None,
) -> Estimate:
    """Seconds per new prefill token per GPU (encoder layers) behind ``work``'s prefix, by part."""
    w = work or Workload()
    prefix, kv_dtype, m = w.prefill_prefix, w.kv_dtype, model.moe
    assert m.experts_per_token
    split = roofline.weight_split(model, "prefill")
    bw = gpu.hbm_bandwidth_bytes_per_s
    flops = dense_flops(eff, gpu, split.dense_dtype)
    parts = {"dense GEMMs": 2 * split.dense_params / flops}
    per_token = expert_seconds(eff, model, gpu, 4096.0) / 4096.0  # a large batch's rate
    parts["experts"] = split.moe_layers * m.experts_per_token * per_token
    if prefix:
        af = roofline.attention_flops(model, prefix, "prefill")
        parts["attention FLOP"] = af.total / flops
        if kv_dtype:
            cr = roofline.context_reads(model, prefix, "prefill", kv_dtype)
            parts["context reads"] = cr.total / check.PREFILL_CHUNK / (eff.stream * bw)
    link = _link(gpu, gpus)
    if link:
        parts["NVLink"] = split.moe_layers * _dispatch_bytes(model, gpus) / link
    sec = sum(parts.values())
    tps = 1 / sec
    shown = " + ".join(f"{k} {v * 1e6:,.4g} us" for k, v in parts.items())
    formula = (
        f"a new token after {prefix:,.0f} tokens, experts expert-parallel over "
        f"{plural(gpus, 'GPU')}: {shown} = {sec * 1e6:,.4g} us per GPU: {tps:,.0f} new tok/s"
    )
    return Estimate("prefill", tps, parts, None, formula)


@dataclass(frozen=True)
class Attainable:
    """The attainable reading of a figure: the rate per GPU, the figure's ratio to it, phases."""

    tok_s_per_gpu: float
    ratio: float
    deployment: str
    calibration: str
    claimed_tok_s_per_gpu: float
    counted: str
    estimates: dict[str, Estimate]
    notes: tuple[str, ...] = ()
    #: phase -> the share of the GPUs' time its work takes at the estimate
    shares: dict[str, float] = field(default_factory=dict)
    deployment_name: str = ""  # without why it was chosen

    @property
    def binding(self) -> str:
        """The part of a step that takes the largest share of the GPUs' time."""
        totals = {ph: sum(e.parts.values()) for ph, e in self.estimates.items()}
        shares = [
            (self.shares.get(ph, 1.0) * v / totals[ph] if totals[ph] else 0.0, k)
            for ph, e in self.estimates.items()
            for k, v in e.parts.items()
        ]
        return max(shares, key=lambda s: s[0], default=(0.0, ""))[1]  # the first of equals

    @property
    def text(self) -> str:
        """One line: the figure against what measured kernels reach."""
        fig = f"{self.claimed_tok_s_per_gpu:,.0f} {self.counted} tok/s per GPU"
        where = f"({self.deployment}; {self.calibration})"
        if not math.isfinite(self.ratio):
            why = self.notes[-1] if self.notes else "no attainable estimate"
            return f"{fig}: measured kernels cannot reach it: {why} {where}"
        if self.ratio <= 1:
            return (
                f"{fig} is {self.ratio:.2g}x what measured kernels reach for this workload "
                f"({self.tok_s_per_gpu:,.0f}) {where}"
            )
        what = RESOURCE.get(self.binding, self.binding)
        return (
            f"{fig} needs kernels at {percent(self.ratio, 0)} of the {what} measured: "
            f"{ratio_text(self.ratio)} what they reach for this workload "
            f"({self.tok_s_per_gpu:,.0f}) {where}"
        )

    def to_dict(self) -> dict[str, Any]:
        """``{tok_s_per_gpu, ratio, deployment, calibration, text, binding, phases}``."""
        names = "tok_s_per_gpu ratio deployment deployment_name calibration text binding".split()
        d = check.finite({k: getattr(self, k) for k in names}, names[:2])
        d["phases"] = {
            k: dict(
                tok_s_per_gpu=e.tok_s_per_gpu, batch=e.batch, seconds=e.parts, formula=e.formula
            )
            for k, e in self.estimates.items()
        }
        return d | {"notes": list(self.notes)}


def _decode_estimate(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    eff: Efficiencies,
    w: Workload,
    deployment: str,
    notes: list[str],
) -> Estimate:
    dp = deployment == "dp-ep"
    most, tp = check.MAX_BATCH * (gpus if dp else 1), 1 if dp else None
    c = check.capacity(
        model, gpu, gpus, context=w.decode_context, kv_dtype=w.kv_dtype, tp=tp, most=most
    )
    cap = float(c.sequences)
    how = "dense on every GPU, experts spread; each sequence's KV on its GPU"
    how = how if dp else "all weights spread; every GPU holds every sequence's compressed KV"
    cap_text = f"{c.formula} ({how}): {c.sequences:,.0f} sequences"
    batch = w.concurrency
    if cap < 1 or (batch is not None and batch > cap):
        notes.append(f"the batch does not fit in this deployment: {cap_text}")
        return Estimate("decode", 0.0, {}, batch, cap_text)
    if batch is not None:
        return decode_step(model, gpu, gpus, batch, eff, w, deployment)
    sizes = check.doublings(float(gpus), cap)
    steps = [decode_step(model, gpu, gpus, b, eff, w, deployment) for b in sizes]
    best = max(steps, key=lambda e: e.tok_s_per_gpu)
    return replace(best, formula=best.formula + f" (the best batch within {cap_text})")


def estimate(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    work: Workload,
    *,
    claimed: float,
    phase: str = "decode",
    deployment: str | None = None,
    calibration: Calibration | None = None,
) -> Attainable:
    """The attainable reading of ``claimed`` tok/s per GPU doing ``work`` (phases share time)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(gpu)
    eff = efficiencies(calibration)
    dep, why, batch = deployment or "dp-ep", "as asked", work.concurrency
    if deployment is None and batch is not None and batch < gpus:
        dep, why = "tp-ep", f"assumed: {plural(whole(batch), 'sequence')} on {plural(gpus, 'GPU')}"
    elif deployment is None:
        why = "assumed: the default for this model on a rack"
    notes: list[str] = []
    dom = nvlink_domain(g.id)
    if dom is not None and gpus > dom:
        notes.append(
            f"{gpus} GPUs span more than one NVLink domain of {dom}: the network between "
            "domains is not modelled (NVLink assumed throughout)"
        )
    note = (
        f"; fractions of the data sheet measured on Hopper ({eff.gpu}) applied to "
        f"{g.label} (Blackwell): an assumption, not a Blackwell measurement"
    )
    estimates: dict[str, Estimate] = {}
    if phase in ("decode", "mixed"):
        estimates["decode"] = _decode_estimate(m, g, gpus, eff, work, dep, notes)
    if phase in ("prefill", "mixed"):
        estimates["prefill"] = prefill_token(m, g, gpus, eff, work)
    shares = check.time_shares(work, {k: e.tok_s_per_gpu for k, e in estimates.items()})
    ratio = sum(shares.values())
    return Attainable(
        tok_s_per_gpu=claimed / ratio if ratio > 0 else math.inf,
        ratio=ratio if ratio > 0 else 0.0,
        deployment=f"{DEPLOYMENT_TEXT[dep]} on {plural(gpus, 'GPU')} ({why})",
        deployment_name=f"{DEPLOYMENT_TEXT[dep]} on {plural(gpus, 'GPU')}",
        calibration=eff.label + (note if eff.hopper and "blackwell" in g.name.lower() else ""),
        claimed_tok_s_per_gpu=claimed,
        counted=work.counted,
        estimates=estimates,
        notes=tuple(notes),
        shares=shares,
    )


def for_check(c: Check, **kw: Any) -> Attainable:
    """:func:`estimate` for a :class:`check.Check` (``kw``: ``deployment``, ``calibration``)."""
    model, gpu = c.spec or c.model, c.gpu_spec or c.gpu
    kw |= dict(claimed=c.claimed_tok_s_per_gpu, phase=c.phase)
    return estimate(model, gpu, c.gpus, c.work, **kw)


def cached_share_threshold(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    tok_s: float,
    *,
    deployment: str | None = None,
    calibration: Calibration | None = None,
    **kwargs: Any,
) -> float | None:
    """The least cached share at which measured kernels reach ``tok_s`` (0 uncached, None never)."""

    def ratio(ck: Check) -> float:
        if ck.limit.startswith("memory capacity"):
            return math.inf
        return for_check(ck, deployment=deployment, calibration=calibration).ratio

    return check.cached_share_threshold(model, gpu, gpus, tok_s, ratio, 20, 1e-3, **kwargs).share
