"""Is a serving claim physically possible? A figure's workload, and the ceilings (compute, memory
bandwidth, KV read, memory capacity) a model and GPU put on tokens/s per GPU; ratio = new input
tok/s / prefill ceiling + output tok/s / decode ceiling, possible at <= 1."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rackbook.core.units import fmt, number, percent, plural, ratio_text, whole
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import roofline

#: New tokens of one prefill chunk sharing one read of their prefix's caches (vLLM's least).
PREFILL_CHUNK = 256
#: Share of HBM the engine may use for weights and KV (vLLM's --gpu-memory-utilization default).
MEMORY_FRACTION = 0.9

#: Largest batch per GPU searched when the batch is free, and the most one may name.
MAX_BATCH = 1 << 16


@dataclass(frozen=True)
class Workload:
    """What one figure's GPUs do (tokens, tokens/s per GPU); concurrency None: best batch."""

    counted: str = "output"
    isl: float | None = None
    osl: float | None = None
    decode_context: float = 0.0
    prefill_prefix: float = 0.0
    cached_share: float = 0.0
    concurrency: float | None = None
    tokens_per_step: float = 1.0
    verify_tokens: int = 1
    kv_dtype: str | None = "fp4"
    weights: str = ""
    output_tok_s_per_gpu: float = 0.0
    new_input_tok_s_per_gpu: float = 0.0


def time_shares(w: Workload, rates: dict[str, float]) -> dict[str, float]:
    """Phase -> share of the GPUs' time ``w``'s tokens take at ``rates`` (tok/s per GPU), if any."""
    want = {"decode": w.output_tok_s_per_gpu, "prefill": w.new_input_tok_s_per_gpu}
    return {ph: want[ph] / r if r else math.inf for ph, r in rates.items() if want[ph]}


def finite(d: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """``d`` with the non-finite numbers at ``keys`` as None (JSON has no inf, nan)."""
    return d | {k: d[k] if math.isfinite(d[k]) else None for k in keys}


def physics_verdict(ratio: float) -> str:
    """``possible`` when claimed / ceiling = ``ratio`` <= 1 (no margin), else ``impossible``."""
    return "possible" if math.isfinite(ratio) and ratio <= 1 else "impossible"


@dataclass(frozen=True)
class PerGpuCeiling:
    """One ceiling: tokens/s per GPU, its name, arithmetic and the phase it bounds (if any)."""

    name: str
    tok_s_per_gpu: float
    formula: str
    phase: str = ""


@dataclass(frozen=True)
class Check:
    """The physics of one claimed rate (tokens/s per GPU) on one workload."""

    model: str
    gpu: str
    gpus: int
    phase: str
    claimed_tok_s_per_gpu: float
    verdict: str
    ratio: float
    ceiling_tok_s_per_gpu: float
    limit: str
    batch: int | None
    ceilings: list[PerGpuCeiling]
    work: Workload
    notes: list[str] = field(default_factory=list)
    counted: str = "output"
    fractions: dict[str, float] = field(default_factory=dict)
    #: phase -> the binding ceiling's rate (output tok/s per GPU decode, new input prefill)
    bounds: dict[str, float] = field(default_factory=dict)
    #: The model and GPU as a sentence names them (``model`` and ``gpu`` are ids).
    model_name: str = ""
    gpu_label: str = ""
    #: The model entry (weights' format included) and GPU read: later readings read these.
    spec: ModelSpec | None = field(default=None, repr=False, compare=False)
    gpu_spec: GpuSpec | None = field(default=None, repr=False, compare=False)

    @property
    def workload(self) -> dict[str, Any]:
        """:attr:`work` as a dict, for JSON and the readers that index it by name."""
        return asdict(self.work)

    @property
    def reason(self) -> str:
        """One line: the claim over the binding ceiling, and what binds."""
        if self.limit.startswith("memory capacity"):
            return self.notes[0] if self.notes else "the model does not fit"
        counted = f"{self.claimed_tok_s_per_gpu:,.0f} {self.counted} tok/s per GPU"
        if len(self.fractions) > 1:
            parts = " + ".join(f"{k} {v:.3g}" for k, v in self.fractions.items())
            return (
                f"{counted} needs {parts} = {ratio_text(self.ratio)} the time of the "
                f"{self.gpu_label} GPUs at their ceilings (the workload's ceiling is "
                f"{self.ceiling_tok_s_per_gpu:,.0f} {self.counted} tok/s per GPU)"
            )
        ph, ceiling = next(iter(self.fractions), self.phase), self.ceiling_tok_s_per_gpu
        bound = self.bounds.get(ph, ceiling)
        unit = "new input" if ph == "prefill" else "output"
        text = (
            f"{counted} is {ratio_text(self.ratio)} the {ph} {self.limit} ceiling of {bound:,.0f} "
            f"{unit} tok/s per GPU on {self.gpu_label}"
        )
        if math.isfinite(ceiling) and not math.isclose(ceiling, bound, rel_tol=1e-9):
            text += f" ({ceiling:,.0f} {self.counted} tok/s per GPU)"
        if self.batch and ph == "decode":
            text += f" with {plural(self.batch, 'sequence')} decoding together"
        return text


def memory_ceiling(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    batch: float,
    work: Workload | None = None,
    active_scale: float = 1.0,
) -> PerGpuCeiling:
    """Decode tokens/s per GPU HBM bandwidth allows ``batch`` sequences doing ``work``."""
    w = work or Workload()
    kw: dict[str, Any] = dict(context_tokens=w.decode_context, kv_dtype=w.kv_dtype, batch=batch)
    r = roofline.batch1_decode_ceiling_tokens_per_s(
        model, gpu, gpus, w.tokens_per_step, active_scale=active_scale, **kw
    )
    tps = batch * w.tokens_per_step / gpus / r.step_s
    formula = f"{r.formula} / {plural(gpus, 'GPU')} = {tps:,.0f} tok/s per GPU"
    return PerGpuCeiling("memory bandwidth", tps, formula, "decode")


@dataclass(frozen=True)
class Capacity:
    """Sequences whose KV fits after the weights (0: none; over ``gpus // tp`` groups), bytes."""

    sequences: int
    weights_bytes: float
    usable_bytes: float
    per_sequence_bytes: float
    context: float
    formula: str
    offloaded_bytes: float = 0.0
    #: ``weights`` | ``KV cache`` | None (something fits)
    what_does_not_fit: str | None = None

    @property
    def free_bytes(self) -> float:
        """HBM bytes per GPU left for KV after the weights kept there."""
        return self.usable_bytes - self.weights_bytes + self.offloaded_bytes


def usable_bytes(gpu: GpuSpec) -> float:
    """HBM bytes an engine may use on ``gpu``: :data:`MEMORY_FRACTION` of what the GPU reports."""
    return gpu.memory_bytes * MEMORY_FRACTION


def sequence_bytes(
    model: ModelSpec, tokens: float, kv_dtype: str | None, *, relative: bool, window: bool
) -> float:
    """Bytes of one sequence: KV of ``tokens`` tokens (none without ``kv_dtype``) and window;
    ``relative``: a layout given relative to another model is its x the factor, else none."""
    rel, factor = model.kv_cache.relative_to, 1.0
    if relative:
        if model.kv_cache.compression_ratios is None and rel is not None:
            model, factor = catalogs.as_model(rel.model), rel.factor
        if not kv_dtype or model.kv_cache.compression_ratios is None:
            return 0.0
    kv = roofline.kv_bytes_per_sequence(model, math.ceil(tokens), kv_dtype) if kv_dtype else 0
    return ((roofline.window_bytes_per_sequence(model) if window else 0) + kv) * factor


def capacity(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    *,
    context: float = 0,
    longest: float | None = None,
    kv_dtype: str | None = "fp4",
    tp: int | None = None,
    offload: bool = False,
    most: float = MAX_BATCH,
    weights: float | None = None,
    hbm: float | None = None,
    relative: bool = False,
    window: bool = True,
) -> Capacity:
    """Sequences of ``context`` tokens whose KV fits after the weights (bytes per GPU): all spread
    (``tp`` None) or dense over ``tp``, KV in ``gpus // tp`` groups; ``offload``: to host memory."""
    if weights is None:
        st = roofline.storage(model)
        weights = st.dense_bytes / tp + st.routed_bytes / gpus if tp else st.total_bytes / gpus
    groups, longest = gpus // tp if tp else 1, max(longest or 0.0, context)
    kw = dict(relative=relative, window=window)
    per_seq, one = (sequence_bytes(model, t, kv_dtype, **kw) for t in (context, longest))
    usable = usable_bytes(gpu) if hbm is None else hbm
    host = float(gpu.host_memory_bytes or 0) if offload else 0.0
    offloaded = min(weights, host)
    in_hbm = weights - offloaded
    free = usable - in_hbm
    n = min(most, int(free // per_seq) * groups) if per_seq else most
    n = 0 if free <= 0 or one > free else n
    reported = " (as the GPU reports it)" if gpu.hbm_reported_bytes else ""
    hbm_text = f"{MEMORY_FRACTION:g} x {fmt(gpu.memory_bytes, 'B')} HBM{reported}"
    hbm_text = hbm_text if hbm is None else f"{fmt(hbm, 'B')} HBM"
    grace = f"{fmt(host, 'B')} of host (Grace) memory"
    where = f", {fmt(offloaded, 'B')} of them offloaded to {grace}" if offloaded else ""
    lacking = "weights" if weights >= usable + host else ("KV cache" if n == 0 else None)
    if lacking == "weights":
        formula = (
            f"the weights do not fit: {fmt(weights, 'B')} per GPU ({plural(gpus, 'GPU')}, "
            f"{'all weights' if tp is None else 'experts'} spread) > {fmt(usable, 'B')} usable "
            f"({hbm_text})" + (f" + {grace}" if host else "")
        )
    elif lacking:
        formula = (
            f"the KV cache does not fit: one sequence of {longest:,.0f} tokens needs "
            f"{fmt(one, 'B')}, more than the {fmt(max(free, 0.0), 'B')} per GPU left after "
            f"{fmt(in_hbm, 'B')} of weights in HBM{where}"
        )
    else:
        formula = (
            f"({hbm_text} - {fmt(in_hbm, 'B')} weights per GPU in HBM{where}) / "
            f"{fmt(per_seq, 'B')} per sequence of {context:,.0f} tokens on average = "
            f"{n // groups:,} sequences per GPU"
        )
    return Capacity(int(n), weights, usable, per_seq, context, formula, offloaded, lacking)


def narrowest_kv_dtype(model: ModelSpec) -> str | None:
    """The narrowest KV dtype the model has a row format for (None: KV layout unknown)."""
    table = model.kv_cache.row_formats
    if model.kv_cache.compression_ratios is None or table is None:
        return None
    return next((d for d in catalogs.PRECISIONS if getattr(table, d) is not None), None)


def doublings(start: int | float, cap: int | float) -> list[Any]:
    """Batch sizes tried: ``start``, twice it, ... while below ``cap``, then ``cap``."""
    sizes = [start]
    while sizes[-1] < cap:
        sizes.append(sizes[-1] * 2)
    return sizes[:-1] + [cap]


def _best_batch(
    m: ModelSpec, g: GpuSpec, gpus: int, most: int, comp_tps: float, w: Workload, scale: float
) -> tuple[int, PerGpuCeiling]:
    tried = []
    for b in doublings(1, most):
        tried.append((b, memory_ceiling(m, g, gpus, b, w, scale)))
        if tried[-1][1].tok_s_per_gpu >= comp_tps:
            break
    b, r = max(tried, key=lambda t: min(t[1].tok_s_per_gpu, comp_tps))  # the first of equals
    return b, replace(r, formula=r.formula + f" (best batch {b:,})")


def check_claim(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    tok_s: float,
    *,
    per: str = "gpu",
    phase: str | None = None,
    batch: float | None = None,
    context: float | None = None,
    tokens_per_step: float = 1.0,
    kv_dtype: str | None = None,
    active_scale: float = 1.0,
    counted: str | None = None,
    isl: float | None = None,
    osl: float | None = None,
    cached_share: float = 0.0,
    precision: str | None = None,
) -> Check:
    """The physics verdict on ``tok_s`` tokens/s (``per`` GPU or ``total``) of a workload."""
    if not (isinstance(tok_s, (int, float)) and math.isfinite(tok_s) and tok_s > 0):
        raise InputError("-", "tok_s", f"must be a positive number, got {tok_s!r}")
    g, sv = catalogs.as_gpu(gpu), roofline.served(catalogs.as_model(model), precision)
    m = sv.model
    counted = counted or ("input" if phase == "prefill" else "output")
    phase = phase or ("mixed" if isl and osl else ("prefill" if counted == "input" else "decode"))
    if counted == "total" and not (isl and osl):
        raise InputError("-", "counted", "total needs --isl and --osl to split input and output")
    if (phase, counted) in (("prefill", "output"), ("decode", "input")):
        raise InputError("-", "counted", f"a {phase} figure does not count {counted} tokens")
    most, n = m.architecture.max_context_tokens, MAX_BATCH * gpus
    longest = max((isl or 0) + (osl or 0), context or 0)
    if most is not None and longest > most:
        problem = f"{longest:,.0f} tokens is out of range: {m.name} holds at most {most:,}"
        raise InputError("-", "context", problem)
    if batch is not None and not (float(batch).is_integer() and batch >= 1):
        problem = f"must be a whole number of sequences >= 1, got {batch:g}"
        raise InputError("-", "concurrency", problem)
    if phase == "decode" and counted == "total":
        problem = "a decode-only figure counting input + output tokens credits its prefill to "
        problem += f"GPUs not among the {gpus:,}: give --phase mixed or --counted output"
        raise InputError("-", "phase", problem)
    if batch is not None and batch > n:
        problem = f"at most {MAX_BATCH:,} per GPU ({n:,} on {plural(gpus, 'GPU')})"
        raise InputError("-", "batch", f"{batch:,.0f} sequences is out of range: {problem}")
    kv_dtype, notes = kv_dtype or narrowest_kv_dtype(m), []
    if kv_dtype is None:
        if context or isl:
            raise InputError(m.file, "kv_cache", "KV layout unknown: cannot judge a context")
        notes.append("KV layout unknown: context reads and KV memory are not counted")
    if phase in ("decode", "mixed") and not context and not isl and kv_dtype:
        notes.append("no context given: decode reads no context (the most permissive case)")
    claimed = tok_s / gpus if per == "total" else tok_s
    if counted == "output":
        out, inp = claimed, claimed * isl / osl if isl and osl else 0.0
    elif counted == "input":
        inp, out = claimed, claimed * osl / isl if isl and osl else 0.0
    else:
        assert isl and osl
        out, inp = claimed * osl / (isl + osl), claimed * isl / (isl + osl)
    w = Workload(
        counted=counted,
        isl=isl,
        osl=osl,
        decode_context=context if context is not None else (isl + (osl or 0) / 2 if isl else 0.0),
        prefill_prefix=isl * cached_share + isl * (1 - cached_share) / 2 if isl else context or 0.0,
        cached_share=cached_share,
        concurrency=batch,
        tokens_per_step=tokens_per_step,
        verify_tokens=roofline.verify_count(m, tokens_per_step),
        kv_dtype=kv_dtype,
        weights=sv.text,
        output_tok_s_per_gpu=0.0 if phase == "prefill" else out,
        new_input_tok_s_per_gpu=0.0 if phase == "decode" else inp * (1 - cached_share),
    )
    r = _ceilings(m, g, gpus, phase, w, longest, notes, active_scale)
    return Check(
        model=m.id,
        gpu=g.id,
        gpus=gpus,
        phase=phase,
        claimed_tok_s_per_gpu=claimed,
        counted=w.counted,
        work=w,
        notes=notes,
        model_name=m.name,
        gpu_label=g.label,
        spec=m,
        gpu_spec=g,
        verdict=physics_verdict(r["ratio"]),
        ceiling_tok_s_per_gpu=claimed / r["ratio"] if r["ratio"] > 0 else math.inf,
        **r,
    )


def _ceilings(
    m: ModelSpec,
    g: GpuSpec,
    gpus: int,
    phase: str,
    w: Workload,
    longest: float,
    notes: list[str],
    active_scale: float,
) -> dict[str, Any]:
    ceilings: list[PerGpuCeiling] = []
    comp, compute = None, roofline.compute_ceiling_tokens_per_s
    if phase in ("decode", "mixed"):
        c = compute(m, g, "decode", active_scale=active_scale, context=w.decode_context)
        keep, verify = w.tokens_per_step, w.verify_tokens
        tps = c.tokens_per_s * keep / verify
        kept = f"; a step verifies {verify} tokens and keeps {keep:g}: {c.tokens_per_s:,.0f} x "
        kept += f"{keep:g} / {verify} = {tps:,.0f} tokens/s kept"
        comp = PerGpuCeiling("compute", tps, c.formula + (kept if verify > 1 else ""), "decode")
        notes.extend(c.notes)
        ceilings.append(comp)
    held = w.decode_context or longest  # on average; a prefill-only figure: its input
    cap = capacity(m, g, gpus, context=held, longest=longest, kv_dtype=w.kv_dtype, offload=True)
    room = math.inf if cap.sequences else 0.0
    ceilings.append(PerGpuCeiling("memory capacity", room, cap.formula))
    why = f"{cap.formula} on {g.name}" if cap.what_does_not_fit is not None else None
    if why is None and w.concurrency is not None and w.concurrency > cap.sequences * gpus:
        why = (
            f"the KV cache does not fit: {w.concurrency:,.0f} sequences of {cap.context:,.0f} "
            f"tokens need {fmt(w.concurrency / gpus * cap.per_sequence_bytes, 'B')} per GPU; at "
            f"most {cap.sequences:,} per GPU fit ({cap.formula})"
        )
    if why is not None:
        notes.insert(0, why)
        return dict(
            ratio=math.inf,
            limit=f"memory capacity ({cap.what_does_not_fit or 'KV cache'})",
            batch=None if w.concurrency is None else whole(w.concurrency),
            ceilings=ceilings,
        )
    chosen, binding, fractions = w.concurrency, {}, {}
    if comp is not None:
        if w.concurrency is None:  # the best batch that fits, the claimant's free choice
            most, comp_tps = cap.sequences * gpus, comp.tok_s_per_gpu
            chosen, mem = _best_batch(m, g, gpus, most, comp_tps, w, active_scale)
            notes.append(
                f"concurrency not given: the best batch that fits ({chosen:,} sequences on "
                f"{plural(gpus, 'GPU')}), the claimant's free choice"
            )
        else:
            mem = memory_ceiling(m, g, gpus, w.concurrency, w, active_scale)
        ceilings.append(mem)
        binding["decode"] = min((comp, mem), key=lambda r: r.tok_s_per_gpu)
        fractions["decode"] = w.output_tok_s_per_gpu / binding["decode"].tok_s_per_gpu
    if phase in ("prefill", "mixed"):
        prefix = w.prefill_prefix
        c = compute(m, g, "prefill", active_scale=active_scale, context=prefix)
        pre = [PerGpuCeiling("compute", c.tokens_per_s, c.formula, "prefill")]
        if w.kv_dtype and prefix:  # the prefix's caches read once per chunk of new tokens
            r = roofline.context_reads(m, prefix, "prefill", w.kv_dtype)
            bw, per_token = g.hbm_bandwidth_bytes_per_s, r.total / PREFILL_CHUNK
            tps = bw / per_token if per_token else math.inf
            formula = (
                f"{r.formula.replace(' per token', '')} read once per chunk of {PREFILL_CHUNK} new "
                f"tokens = {fmt(per_token, 'B')} per new token; {fmt(bw, 'B/s')} / "
                f"{fmt(per_token, 'B')} = {tps:,.0f} new tokens/s"
            )
            pre.append(PerGpuCeiling("KV read", tps, formula, "prefill"))
        ceilings.extend(pre)
        binding["prefill"] = min(pre, key=lambda r: r.tok_s_per_gpu)
        fractions["prefill"] = w.new_input_tok_s_per_gpu / binding["prefill"].tok_s_per_gpu
    ratio = sum(fractions.values())
    ph = max(fractions, key=lambda k: fractions[k])
    return dict(
        ratio=ratio,
        limit=binding[ph].name if len(fractions) == 1 else f"{ph} {binding[ph].name}",
        batch=None if chosen is None else whole(chosen),
        ceilings=ceilings,
        fractions=fractions,
        bounds={k: r.tok_s_per_gpu for k, r in binding.items()},
    )


@dataclass(frozen=True)
class Threshold:
    """The least cached share of the input at which a figure is possible (None: at no share)."""

    share: float | None
    ratio_uncached: float
    ratio_cached: float
    verdict: str
    formula: str


def cached_share_threshold(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    tok_s: float,
    reading: Callable[[Check], float] = lambda c: c.ratio,
    steps: int = 40,
    tol: float = 1e-4,
    **kwargs: Any,
) -> Threshold:
    """The least cached share at which ``tok_s`` (:func:`check_claim`'s arguments) has ``reading``
    <= 1 (0 always, None never): ``steps`` even shares tried, the last crossing bisected."""

    def ratio(c: float) -> float:
        return reading(check_claim(model, gpu, gpus, tok_s, cached_share=c, **kwargs))

    shares = [i / steps for i in range(steps)] + [1 - 1e-6]
    r = [ratio(c) for c in shares]
    bad = [i for i, x in enumerate(r) if not x <= 1]
    share: float | None = None if bad and bad[-1] == steps else 0.0
    if bad and share is not None:
        lo, hi = shares[bad[-1]], shares[bad[-1] + 1]
        while hi - lo > tol:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if ratio(mid) <= 1 else (mid, hi)
        share = hi
    verdict = {None: "impossible", 0.0: "possible"}.get(share, "undetermined")
    how = f"{verdict} at any cached share"
    if share:
        how = f"possible from {percent(share)} of the input cached (every share above reads "
        how += "possible), impossible below"
    text = (
        f"{number(tok_s, 6)} tok/s: {ratio_text(r[0])} the bound uncached, {ratio_text(r[-1])} "
        f"with all but the last input token cached: {how}"
    )
    return Threshold(share, r[0], r[-1], verdict, text)


@dataclass(frozen=True)
class Band:
    """A ratio to a bound, and its range with active parameters +/-20 % (at peak)."""

    ratio: float
    low: float
    high: float
    text: str


def sensitivity(**kwargs: Any) -> Band:
    """The ratio of :func:`check_claim` at peak and with active parameters x 0.8 .. 1.2."""
    base = check_claim(**kwargs).ratio
    ratios = [check_claim(**kwargs, active_scale=s).ratio for s in (0.8, 1.2)]
    lo, hi = min(ratios), max(ratios)
    text = (
        f"{ratio_text(base)} at peak; {ratio_text(lo)} to {ratio_text(hi)} with active "
        "parameters +/-20 % (at peak)"
    )
    return Band(base, lo, hi, text)
