"""What real deployments reach: calibrated kernels plus a per-layer latency floor, expert
imbalance, overlap and the best deployment, x an efficiency fitted on published measurements
(``data/published/expected-fit.yaml``). Units: seconds, bytes, FLOP, tokens/s per GPU."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rackbook import paths
from rackbook.core.units import percent, plural, ratio_text, whole
from rackbook.errors import InputError
from rackbook.inputs import catalogs, loader
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import attainable, check, roofline
from rackbook.physics.attainable import dense_flops as _flops
from rackbook.physics.check import Workload
from rackbook.physics.imbalance import imbalance

if TYPE_CHECKING:  # pandas and pyarrow stay off the check path
    from rackbook.core.calibration import Calibration

#: The per-layer floor's anchor: DeepSeek-V3.2 (61 layers), TP8 on 8 B300, one user at 125 tok/s
#: (vLLM blog, 2026-05-11, single-user post, vllm-project/vllm-project.github.io ``_posts``).
ANCHOR_LAYER_S = 1 / 125 / 61
#: Tokens of one prefill chunk per GPU (vLLM's default ``max_num_batched_tokens`` here).
PREFILL_CHUNK = 8192
#: Largest decoding batch per GPU searched.
MAX_BATCH_PER_GPU = 4096
#: Where the fit lives (``rackbook validate --fit`` writes it).
FIT_FILE = "published/expected-fit.yaml"
#: A fit's parameters, as the fit file stores them.
PARAMS = ("efficiency", "layer_s", "log_low", "log_high")


@dataclass(frozen=True)
class Fit:
    """The fit: kernel ``efficiency``, floor ``layer_s`` (s/layer), log-residual interval."""

    efficiency: float
    layer_s: float
    log_low: float
    log_high: float
    source: str = "prior"
    held_out: dict[str, dict[str, float]] = field(default_factory=dict)
    #: the held-out validation stored with the fit (``all``, ``primary``)
    validation: dict[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, float]:
        """The :data:`PARAMS` by name."""
        return {k: getattr(self, k) for k in PARAMS}

    @property
    def validation_text(self) -> str:
        """The stored held-out validation on all points in words ("" before any fit)."""
        return held_out_text(self.validation.get("all") or {})


def held_out_text(s: dict[str, Any]) -> str:
    """The one wording of a held-out validation summary ``s``; "" without points."""
    if not s.get("points"):
        return ""
    inside = s.get("inside")
    return (
        f"median measured/expected {s['median_ratio']:.2f} held out by source, "
        f"{percent(s['within_2x'], 0)} of {s['points']} published points within 2x"
        + (f", {percent(inside, 0)} inside the interval" if inside is not None else "")
    )


def load_fit(path: str | Path | None = None) -> Fit:
    """The stored fit; when absent the prior (kernels as calibrated, the anchor's floor, x/ 2)."""
    p = Path(path) if path is not None else paths.DATA / FIT_FILE
    if not p.exists():
        return Fit(1.0, ANCHOR_LAYER_S, -math.log(2), math.log(2))
    doc = loader.read_yaml(p)
    try:
        return Fit(
            **{k: float(doc["fit"][k]) for k in PARAMS},
            source=loader.display_path(p),
            held_out={
                k: {kk: float(v[kk]) for kk in PARAMS}
                for k, v in (doc.get("held_out") or {}).items()
            },
            validation=dict(doc.get("validation") or {}),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(p, "fit", f"not a fit: {exc}") from None


@functools.lru_cache(maxsize=64)
def _nic_of(gpu_id: str) -> float:
    """NIC bytes/s per GPU each way between NVLink domains (the catalog's, else its least)."""
    nics = [s.nic_bandwidth_bytes_per_s_per_gpu for s in catalogs.load_hardware().systems.values()]
    return float(catalogs.nic_bandwidth(gpu_id) or min(v for v in nics if v is not None))


def _bucket(x: float) -> int:
    return int(round(2 ** (round(4 * math.log2(max(x, 1.0))) / 4)))


R = TypeVar("R")


def _by_identity(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` memoised on its arguments: scalars by value, objects by identity (and kept alive)."""
    memo: dict[tuple[Any, ...], tuple[tuple[Any, ...], R]] = {}

    @functools.wraps(fn)
    def cached(*args: Any) -> R:
        key = tuple(a if isinstance(a, (int, float, str, type(None))) else id(a) for a in args)
        if key not in memo:
            if len(memo) > 65536:
                memo.clear()
            memo[key] = (args, fn(*args))
        return memo[key][1]

    return cached


@_by_identity
def expert_time(
    eff: attainable.Efficiencies, model: ModelSpec, gpu: GpuSpec, tokens: float
) -> float:
    """Seconds one routed expert takes for ``tokens`` (> 0) tokens, monotone (a kernel can pad)."""
    sizes = eff.experts[attainable.expert_dtypes(eff, model)[1]][0]
    cands = [tokens] + [float(s) for s in sizes if s > tokens]
    return min(attainable.expert_seconds(eff, model, gpu, x) for x in cands)


def scan_time(
    eff: attainable.Efficiencies, gpu: GpuSpec, key_bytes: float, key_flops: float
) -> float:
    """Index-scan seconds: keys read at the stream fraction or scored at BF16, the longer."""
    bw = eff.stream * gpu.hbm_bandwidth_bytes_per_s
    return max(key_bytes / bw, key_flops / _flops(eff, gpu, "bf16"))


def expert_part(
    eff: attainable.Efficiencies,
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    tokens: float,
    moe_layers: int,
) -> float:
    """Seconds the busiest GPU's routed experts take in a step of ``tokens`` tokens."""
    m = model.moe
    assert m.num_routed_experts and m.experts_per_token
    e, k = m.num_routed_experts, m.experts_per_token
    ep = min(gpus, e)
    imb = imbalance(e, ep, _bucket(tokens * k))
    load = tokens * k / ep * imb
    slots = math.ceil(e / ep) + 1
    distinct = roofline.distinct_experts(e, k, tokens)
    n = min(float(slots), max(1.0, distinct / ep * imb), load)
    return moe_layers * n * expert_time(eff, model, gpu, load / n)


@dataclass(frozen=True)
class Step:
    """A decode step (or prefill token) in a deployment: seconds by part, total, tok/s per GPU."""

    deployment: str
    batch: float
    parts: dict[str, float]
    seconds: float
    tok_s_per_gpu: float


def deployment_name(tp: int, gpus: int) -> str:
    """``dp-ep`` (tp 1), ``tp-ep`` (tp = gpus), else ``hybrid tpN``."""
    return "dp-ep" if tp == 1 else "tp-ep" if tp == gpus else f"hybrid tp{tp}"


@_by_identity
def _context(
    model: ModelSpec, context: float, phase: str, kv_dtype: str | None
) -> tuple[float, float, float, float]:
    rel = model.kv_cache.relative_to
    if model.kv_cache.compression_ratios is None and rel is not None and kv_dtype and context:
        other = catalogs.as_model(rel.model)
        base = _context(other, context, phase, kv_dtype if other.kv_cache.row_formats else "fp4")
        return tuple(x * rel.factor for x in base)  # type: ignore[return-value]
    if not kv_dtype or not context or model.kv_cache.compression_ratios is None:
        return 0.0, 0.0, 0.0, 0.0
    cr = roofline.context_reads(model, context, phase, kv_dtype)
    af = roofline.attention_flops(model, context, phase)
    return cr.scan, cr.rows + cr.pool + cr.window, af.scan, af.pool + af.rows + af.window


def decode_step(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    batch: float,
    eff: attainable.Efficiencies,
    fit: Fit,
    work: Workload | None = None,
    tp: int = 1,
) -> Step:
    """A decode step of ``batch`` sequences doing ``work``, attention TP ``tp``: the busiest GPU."""
    w = work or Workload()
    context, verify, kv_dtype = w.decode_context, w.verify_tokens, w.kv_dtype
    m, a = model.moe, model.architecture
    assert m.num_routed_experts and m.experts_per_token and a.hidden_size and a.num_layers
    stream = eff.stream * gpu.hbm_bandwidth_bytes_per_s
    split = roofline.weight_split(model, "decode")
    seqs = max(1.0, math.ceil(batch / (gpus // tp)))  # sequences of the busiest TP group
    toks = seqs * verify
    dense_flops = 2 * split.dense_params / tp * toks / _flops(eff, gpu, split.dense_dtype)
    parts = {"dense": max(split.dense_bytes / tp / stream, dense_flops)}
    s_bytes, c_bytes, s_flops, a_flops = _context(model, float(context), "decode", kv_dtype)
    if a_flops:
        parts["attention"] = toks * a_flops / tp / _flops(eff, gpu, "bf16")
    if c_bytes:
        parts["context"] = seqs * c_bytes / stream
    if s_bytes:
        parts["index scan"] = scan_time(eff, gpu, seqs * s_bytes, toks * s_flops / tp)
    parts["experts"] = expert_part(eff, model, gpu, gpus, batch * verify, split.moe_layers)
    if verify > 1:  # a verify carries plain decode's tokens and more: never cheaper
        plain = expert_part(eff, model, gpu, gpus, batch, split.moe_layers)
        parts["experts"] = max(parts["experts"], plain)
    drafts = verify - 1
    if drafts > 0:  # the catalog's drafter, else one layer's dense weights and top-k experts
        db = split.dense_bytes / a.num_layers + roofline.expert_bytes(model) * m.experts_per_token
        db = roofline.draft_bytes(model) if model.speculative is not None else db
        parts["drafter"] = drafts * db / tp / stream
    kernels = sum(parts.values()) * fit.efficiency
    net = _network(model, gpu, gpus, tp, toks, split.moe_layers)
    if net:
        parts["network"] = net
    busy = max(kernels, net) if seqs >= 2 and tp < gpus else kernels + net  # overlap
    parts["latency floor"] = floor = fit.layer_s * (a.num_layers + drafts)
    step = busy + floor
    tps = batch * w.tokens_per_step / gpus / step
    return Step(deployment_name(tp, gpus), batch, parts, step, tps)


def _network(
    model: ModelSpec, gpu: GpuSpec, gpus: int, tp: int, toks: float, moe_layers: int
) -> float:
    if gpus <= 1:
        return 0.0
    m, a = model.moe, model.architecture
    assert m.experts_per_token and a.hidden_size and a.num_layers
    link = (gpu.nvlink_bandwidth_bytes_per_s or 0.0) / 2 or _nic_of(gpu.id)
    inside = min(attainable.nvlink_domain(gpu.id) or gpus, gpus)
    vals = toks / tp * m.experts_per_token * a.hidden_size * 3  # bytes: 1 out + 2 back
    far, near = (gpus - inside) / gpus, (inside - 1) / gpus
    out = moe_layers * vals * (near / link + far / _nic_of(gpu.id))
    if tp > 1:
        out += a.num_layers * 2 * 2 * (tp - 1) / tp * toks * a.hidden_size * 2 / link
    return out


def prefill_token(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    eff: attainable.Efficiencies,
    fit: Fit,
    work: Workload,
) -> Step:
    """Seconds per new prefill token per GPU behind ``work``'s prefix, in chunks of 8,192."""
    prefix, kv_dtype, chunk, m = work.prefill_prefix, work.kv_dtype, PREFILL_CHUNK, model.moe
    assert m.num_routed_experts and m.experts_per_token
    split = roofline.weight_split(model, "prefill")
    parts = {"dense": 2 * split.dense_params / _flops(eff, gpu, split.dense_dtype)}
    s_bytes, c_bytes, s_flops, a_flops = _context(model, float(prefix), "prefill", kv_dtype)
    if a_flops:
        parts["attention"] = a_flops / _flops(eff, gpu, "bf16")
    if s_bytes or s_flops:
        parts["index scan"] = scan_time(eff, gpu, s_bytes / chunk, s_flops)
    if c_bytes:
        parts["context"] = c_bytes / chunk / (eff.stream * gpu.hbm_bandwidth_bytes_per_s)
    parts["experts"] = expert_part(eff, model, gpu, gpus, chunk * gpus, split.moe_layers) / chunk
    kernels = sum(parts.values()) * fit.efficiency
    net = _network(model, gpu, gpus, 1, 1.0, split.moe_layers)
    if net:
        parts["network"] = net
    parts["latency floor"] = fit.layer_s * roofline.phase_layers(model, "prefill") / chunk
    sec = max(kernels, net) + parts["latency floor"]
    return Step(deployment_name(1, gpus), float(chunk), parts, sec, 1 / sec)


@dataclass(frozen=True)
class Expected:
    """What a well-tuned deployment reaches per GPU, its interval, the ratio and the terms."""

    tok_s_per_gpu: float
    low: float
    high: float
    ratio: float
    deployment: str
    terms: dict[str, dict[str, float]]
    batch: float | None = None
    batch_text: str = ""
    notes: tuple[str, ...] = ()
    fit: str = "prior"

    def to_dict(self) -> dict[str, Any]:
        """The fields by name (non-finite rates and ratio as None, notes as a list)."""
        d = asdict(self) | {"notes": list(self.notes)}
        return check.finite(d, ("tok_s_per_gpu", "low", "high", "ratio"))

    def text(self, validation: str = "") -> str:
        """One line: what real deployments reach here and the claim's multiple of it."""
        if not math.isfinite(self.tok_s_per_gpu) or self.tok_s_per_gpu <= 0:
            why = self.notes[-1] if self.notes else "no expected rate"
            return f"real deployments: none expected ({why})"
        line = (
            f"real deployments reach ~{self.tok_s_per_gpu:,.0f} ({self.low:,.0f}-{self.high:,.0f}) "
            f"tok/s/GPU here ({self.deployment}); the claim is {ratio_text(self.ratio)} that"
        )
        return line + (f"; validation: {validation}" if validation else "")


def capacity(
    model: ModelSpec, gpu: GpuSpec, gpus: int, tp: int, context: float, kv_dtype: str | None
) -> float:
    """Sequences over all ``gpus`` whose KV fits with attention TP ``tp`` (weights in HBM)."""
    kw: dict[str, Any] = dict(context=context, kv_dtype=kv_dtype, tp=tp, relative=True)
    return float(check.capacity(model, gpu, gpus, most=MAX_BATCH_PER_GPU * gpus, **kw).sequences)


def expected(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    work: Workload,
    *,
    claimed: float,
    phase: str = "decode",
    decode_batch: float | None = None,
    precision: str | None = None,
    tpot_ms: float | None = None,
    ttft_s: float | None = None,
    deployment: str | None = None,
    calibration: Calibration | None = None,
    fit: Fit | None = None,
) -> Expected:
    """The expected reading of ``claimed`` tok/s per GPU doing ``work`` (phases share the time)."""
    m, g = roofline.served(catalogs.as_model(model), precision).model, catalogs.as_gpu(gpu)
    fit = fit if fit is not None else load_fit()
    eff = attainable.efficiencies(calibration)
    verify = max(1, int(work.verify_tokens))
    keep = min(max(1.0, work.tokens_per_step), float(verify))
    work = replace(work, verify_tokens=verify, tokens_per_step=keep)
    context, prefix, kv_dtype = work.decode_context, work.prefill_prefix, work.kv_dtype
    notes, rel = [], m.kv_cache.relative_to
    if m.kv_cache.compression_ratios is None and (context or prefix):
        how = f"taken as {rel.factor:g}x {catalogs.as_model(rel.model).name}'s" if rel else ""
        how = f"{how} (approximate)" if rel else "not counted"
        notes.append(f"{m.name}'s KV layout is not in the catalog: context costs {how}")
    dom = attainable.nvlink_domain(g.id) or gpus  # TP widths: powers of two in one NVLink domain
    widths = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(gpus, dom) and gpus % t == 0]
    widths += [gpus] if gpus <= dom and gpus not in widths else []
    if deployment is not None:
        want = {"dp-ep": 1, "tp-ep": gpus}.get(deployment)
        if want is None or want not in widths:
            raise InputError("-", "deployment", f"{deployment!r} is not one of dp-ep, tp-ep here")
        widths = [want]
    terms: dict[str, dict[str, float]] = {}
    rates: dict[str, float] = {}
    best, batch_text = None, ""
    if phase in ("decode", "mixed"):
        best, batch_text = _best_decode(m, g, gpus, eff, fit, widths, work, decode_batch, tpot_ms)
        if best is None:
            fits = any(capacity(m, g, gpus, tp, context, kv_dtype) >= 1 for tp in widths)
            notes.append(
                f"no deployment keeps one sequence within the TPOT limit of {tpot_ms:g} ms"
                if fits and tpot_ms is not None
                else "no deployment holds the weights and one sequence's KV"
            )
            return Expected(0.0, 0.0, 0.0, math.inf, "none", {}, None, "", tuple(notes), fit.source)
        terms["decode"] = dict(best.parts) | {"step": best.seconds}
        rates["decode"] = best.tok_s_per_gpu
    if phase in ("prefill", "mixed"):
        p = prefill_token(m, g, gpus, eff, fit, work)
        terms["prefill"] = dict(p.parts) | {"token": p.seconds}
        rates["prefill"] = p.tok_s_per_gpu
        if ttft_s is not None and prefix and 2 * prefix * p.seconds / gpus > ttft_s:
            notes.append(
                f"one request's prefill alone takes longer than the TTFT limit of {ttft_s:g} s "
                "at this rate (the limit is not otherwise modelled)"
            )
    ratio = sum(check.time_shares(work, rates).values(), 0.0)
    exp = claimed / ratio if ratio > 0 else math.inf
    lo, hi = exp * math.exp(fit.log_low), exp * math.exp(fit.log_high)
    dep = best.deployment if best is not None else deployment_name(1, gpus)
    where, batch = f"{dep} on {plural(gpus, 'GPU')}", None if best is None else best.batch
    return Expected(exp, lo, hi, ratio, where, terms, batch, batch_text, tuple(notes), fit.source)


def _best_decode(
    m: ModelSpec,
    g: GpuSpec,
    gpus: int,
    eff: attainable.Efficiencies,
    fit: Fit,
    widths: list[int],
    work: Workload,
    derived: float | None,
    tpot_ms: float | None,
) -> tuple[Step | None, str]:
    tps, asked = work.tokens_per_step, derived if derived is not None else work.concurrency
    best: Step | None = None
    text = ""
    for tp in widths:
        cap = capacity(m, g, gpus, tp, work.decode_context, work.kv_dtype)
        if cap < 1:
            continue
        sizes = [min(float(asked), cap)] if asked is not None else check.doublings(1.0, cap)

        def step(b: float, tp: int = tp) -> Step:
            return decode_step(m, g, gpus, b, eff, fit, work, tp)

        for b in sizes:
            s = step(b)
            if tpot_ms is not None and s.seconds / tps * 1e3 > tpot_ms:
                b = _tpot_batch(step, b, tpot_ms, tps)
                if b < 1:
                    continue
                s = step(b)
            if best is None or s.tok_s_per_gpu > best.tok_s_per_gpu:
                best = s
                text = _batch_text(asked, derived, b, cap, tpot_ms)
    return best, text


def _tpot_batch(step: Callable[[float], Step], b: float, tpot_ms: float, tps: float) -> float:
    def ok(x: float) -> bool:
        return step(x).seconds / tps * 1e3 <= tpot_ms

    if not ok(1.0):
        return 0.0
    lo, hi = 1.0, b
    while hi - lo > max(1.0, lo * 0.02):
        mid = math.floor((lo + hi) / 2)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def _batch_text(
    asked: float | None, derived: float | None, b: float, cap: float, tpot: float | None
) -> str:
    src = "the best batch that fits" if asked is None else f"concurrency {whole(asked):,}"
    if derived is not None:  # then also asked
        src = f"{whole(derived):,} decoding (derived from the clients' concurrency)"
    text = f"{plural(whole(b), 'sequence')} decoding ({src}"
    if b < (asked or math.inf):
        text += "; capped by " + ("the TPOT limit" if b < cap else "the KV capacity")
    elif tpot is not None:
        text += f"; within TPOT {tpot:g} ms"
    return text + ")"


def littles_law(concurrency: float, osl: float, ttft_s: float, tpot_s: float) -> float:
    """Sequences decoding among ``concurrency`` clients (Little's law on the decode stage)."""
    dec = max(osl - 1, 0) * tpot_s
    total = ttft_s + dec
    return concurrency * dec / total if total > 0 else concurrency


def for_check(
    c: Any, *, tpot_ms: float | None = None, ttft_s: float | None = None, **kw: Any
) -> Expected:
    """:func:`expected` for a :class:`check.Check`, the batch by :func:`littles_law` if it can."""
    w: Workload = c.work
    decoding = None
    if w.concurrency and w.osl and tpot_ms is not None and ttft_s is not None:
        decoding = max(1.0, littles_law(w.concurrency, w.osl, ttft_s, tpot_ms / 1e3))
    model, gpu = c.spec or c.model, c.gpu_spec or c.gpu
    kw |= dict(claimed=c.claimed_tok_s_per_gpu, phase=c.phase, tpot_ms=tpot_ms, ttft_s=ttft_s)
    return expected(model, gpu, c.gpus, w, decode_batch=decoding, **kw)
