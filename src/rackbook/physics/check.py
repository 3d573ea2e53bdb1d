"""Is a serving claim physically possible? The ceilings a model and a GPU put on tokens per second
per GPU, and a verdict on a claimed figure.

Readings (each a ceiling in tokens/s per GPU, with its formula):

- **compute**: every GPU's dense FLOP/s at the precision each part of the model runs at, for
  the GEMMs and the attention and indexer FLOP at the workload's context
  (:func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`); with speculation, a step
  verifies more tokens than it keeps; prefill passes the encoder layers only;
- **memory bandwidth** (decode): a step streams the dense weights once per GPU, the distinct
  routed experts all the step's tokens pick (spread over the GPUs), each sequence's context
  reads (index scan, top-k rows, candidate pool, sliding window:
  :func:`rackbook.physics.roofline.context_reads`) and the drafter's weights; at ``batch``
  sequences it yields batch x tokens-per-step tokens;
- **KV read** (prefill): each new token reads its prefix's caches in the encoder layers;
- **memory capacity**: the weights (dense on every GPU, experts spread) and each sequence's KV
  must fit; what does not fit (the weights, or the KV cache) makes the figure impossible.

A workload's prefill and decode share the GPUs' time: ratio = new input tokens/s / prefill
ceiling + output tokens/s / decode ceiling. Without a concurrency the batch is the claimant's
free choice: the best batch whose KV fits, and the output says so.

Verdict on the ratio: ``possible`` below 1 - :data:`MARGIN`, ``undetermined`` from there to 1
(the modelling uncertainty of ceilings that leave out communication and kernel efficiency),
``impossible`` above 1: a figure above 100 % of a peak is impossible whatever the margin.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import roofline
from rackbook.physics.units import fmt, plural

#: Relative modelling uncertainty of a ceiling: a claim within this of it is undetermined.
MARGIN = 0.15
#: The physics vocabulary.
VERDICTS = ("possible", "impossible", "undetermined")
#: Share of HBM the engine may use for weights and KV (vLLM's --gpu-memory-utilization default).
MEMORY_FRACTION = 0.9
#: Largest batch per GPU searched when the batch is free, and the most one may name.
MAX_BATCH = 1 << 16
#: The most GPUs a claim may name, and the most tokens a speculative step may keep.
MAX_GPUS = 1 << 20
MAX_TOKENS_PER_STEP = 64
#: What a figure counts: output tokens, input + output, or input tokens (prefill).
COUNTED = ("output", "total", "input")
#: The phases a figure's GPUs run: decode only, prefill only, or both sharing the time.
CHECK_PHASES = ("decode", "prefill", "mixed")


def physics_verdict(ratio: float, margin: float = MARGIN) -> str:
    """``possible`` | ``undetermined`` | ``impossible`` for claimed / ceiling = ``ratio``.

    A ceiling leaves out only what lowers it further (communication, scheduling, kernel
    efficiency), so a figure above 100 % of it is ``impossible`` whatever the margin; from
    1 - ``margin`` to 1 it is ``undetermined`` (within the modelling uncertainty); below,
    ``possible``."""
    if not math.isfinite(ratio) or ratio > 1:
        return "impossible"
    return "undetermined" if ratio >= 1 - margin else "possible"


@dataclass(frozen=True)
class Reading:
    """One ceiling: tokens/s per GPU, what it is, and the arithmetic; ``phase`` is the phase
    whose tokens it bounds (empty for memory capacity)."""

    name: str
    tok_s_per_gpu: float
    formula: str
    phase: str = ""


@dataclass(frozen=True)
class Check:
    """The physics of one claimed rate (tokens/s per GPU) on one workload.

    ``ratio``: the share of the GPUs' time the claimed work needs at the ceilings (the prefill
    share of the new input tokens plus the decode share of the output tokens); 1 = every
    second at a ceiling. ``ceiling_tok_s_per_gpu``: the counted rate at which the ratio is 1.
    ``fractions``: phase -> its share of the time."""

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
    readings: list[Reading]
    notes: list[str] = field(default_factory=list)
    counted: str = "output"
    fractions: dict[str, float] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """One line: the claim over the binding ceiling, and what binds."""
        if self.limit.startswith("memory capacity"):
            return self.notes[0] if self.notes else "the model does not fit"
        if len(self.fractions) > 1:
            parts = " + ".join(f"{k} {v:.3g}" for k, v in self.fractions.items())
            return (
                f"{self.claimed_tok_s_per_gpu:,.0f} {self.counted} tok/s per GPU needs {parts} "
                f"= {self.ratio:.3g}x the time of the {self.gpu} GPUs at their ceilings "
                f"(the workload's ceiling is {self.ceiling_tok_s_per_gpu:,.0f})"
            )
        return (
            f"{self.claimed_tok_s_per_gpu:,.0f} tok/s per GPU is {self.ratio:.3g}x the "
            f"{self.limit} ceiling of {self.ceiling_tok_s_per_gpu:,.0f} on {self.gpu}"
            + (f" with {plural(self.batch, 'sequence')} decoding together" if self.batch else "")
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reason"] = self.reason
        return d


def _spec_tokens(model: ModelSpec, tokens_per_step: float) -> int:
    """Tokens a verify step carries for ``tokens_per_step`` kept tokens (1 without speculation)."""
    if not (math.isfinite(tokens_per_step) and 1 <= tokens_per_step <= MAX_TOKENS_PER_STEP):
        raise InputError(
            "-",
            "tokens_per_step",
            f"must be a number from 1 to {MAX_TOKENS_PER_STEP}, got {tokens_per_step}",
        )
    if tokens_per_step == 1:
        return 1
    spec = model.speculative
    return max(spec.draft_tokens + 1 if spec else 0, math.ceil(tokens_per_step))


def memory_ceiling(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    batch: float,
    *,
    context: float = 0,
    tokens_per_step: float = 1.0,
    kv_dtype: str | None = "fp4",
    efficiency: float = 1.0,
    active_scale: float = 1.0,
) -> Reading:
    """Decode tokens/s per GPU that HBM bandwidth allows with ``batch`` sequences decoding
    together on ``gpus`` GPUs. Per step and GPU: the dense weights once if the GPU has its own
    sequences (data-parallel attention), or its share of them when fewer sequences than GPUs
    are split across GPUs (batch 1 on 4 GPUs: a quarter each); the distinct routed experts the
    step's tokens pick, spread over the GPUs; each sequence's context reads at ``context``
    tokens (index scan, top-k rows, candidate pool and sliding window,
    :func:`rackbook.physics.roofline.context_reads`) and the drafter's weights, spread
    likewise."""
    verify = _spec_tokens(model, tokens_per_step)
    m = model.moe
    assert m.num_routed_experts and m.experts_per_token
    split = roofline.weight_split(model, "decode")
    dense_all = split.dense_params * float(roofline.DENSE_BYTES_PER_PARAM[split.dense_dtype])
    dense = dense_all * active_scale * min(1.0, batch / gpus)
    per_layer = roofline.distinct_experts(m.num_routed_experts, m.experts_per_token, batch * verify)
    experts = split.moe_layers * per_layer * roofline.expert_bytes(model) * active_scale / gpus
    kv_seq = roofline.context_reads(model, context, "decode", kv_dtype).total if kv_dtype else 0.0
    kv = batch * kv_seq / gpus
    spec = model.speculative
    draft = 0.0
    if verify > 1 and spec is not None:
        draft_all = spec.draft_active_params * float(
            roofline.DENSE_BYTES_PER_PARAM[spec.draft_dtype]
        )
        draft = draft_all * min(1.0, batch / gpus)
    step = (dense + experts + kv + draft) / (gpu.hbm_bandwidth_bytes_per_s * efficiency)
    tps = batch * tokens_per_step / gpus / step
    formula = (
        f"per GPU, step >= ({fmt(dense, 'B')} dense + {split.moe_layers} layers x "
        f"{per_layer:.4g} experts x {fmt(roofline.expert_bytes(model), 'B')} / "
        f"{plural(gpus, 'GPU')} = "
        f"{fmt(experts, 'B')} + {fmt(kv, 'B')} context at {context:,.0f} tokens"
        + (f" + {fmt(draft, 'B')} drafter" if draft else "")
        + f") / {fmt(gpu.hbm_bandwidth_bytes_per_s * efficiency, 'B/s')} = {step * 1e6:,.4g} µs; "
        f"{plural(_n(batch), 'sequence')} x {plural(tokens_per_step, 'token')} per step / "
        f"{plural(gpus, 'GPU')} = "
        f"{tps:,.0f} tok/s per GPU"
    )
    return Reading("memory bandwidth", tps, formula, "decode")


def _n(x: float) -> float | int:
    """A whole number as an int (for plural())."""
    return int(x) if float(x).is_integer() else x


@dataclass(frozen=True)
class Capacity:
    """Sequences per GPU whose caches fit after the weights, and what does not fit (units:
    bytes per GPU; ``sequences`` 0 when the weights or one sequence's KV cache do not fit)."""

    sequences: int
    weights_bytes: float
    usable_bytes: float
    per_sequence_bytes: float
    context: float
    formula: str

    @property
    def what_does_not_fit(self) -> str | None:
        """``weights`` | ``KV cache`` | None (something fits)."""
        if self.usable_bytes <= self.weights_bytes:
            return "weights"
        return "KV cache" if self.sequences == 0 else None


def capacity(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    *,
    context: float = 0,
    kv_dtype: str | None = "fp4",
) -> Capacity:
    """Sequences of ``context`` tokens per GPU whose KV (and sliding-window cache) fits after
    the weights (dense on every GPU, experts spread over ``gpus``), at :data:`MEMORY_FRACTION`
    of HBM (bytes)."""
    st = roofline.storage(model)
    weights = st.per_gpu_bytes(gpus)
    stored = roofline.kv_bytes_per_sequence(model, math.ceil(context), kv_dtype) if kv_dtype else 0
    per_seq = stored + roofline.window_bytes_per_sequence(model)
    usable = gpu.hbm_capacity_bytes * MEMORY_FRACTION
    free = usable - weights
    n = 0 if free <= 0 else (MAX_BATCH if per_seq == 0 else min(MAX_BATCH, int(free // per_seq)))
    if free <= 0:
        formula = (
            f"the weights do not fit: {fmt(weights, 'B')} per GPU ({plural(gpus, 'GPU')}, "
            f"experts spread) > {fmt(usable, 'B')} usable ({MEMORY_FRACTION:g} x "
            f"{fmt(gpu.hbm_capacity_bytes, 'B')})"
        )
    elif n == 0:
        formula = (
            f"the KV cache does not fit: one sequence of {context:,.0f} tokens needs "
            f"{fmt(per_seq, 'B')}, more than the {fmt(free, 'B')} per GPU left after "
            f"{fmt(weights, 'B')} of weights"
        )
    else:
        formula = (
            f"({fmt(gpu.hbm_capacity_bytes, 'B')} x {MEMORY_FRACTION:g} - {fmt(weights, 'B')} "
            f"weights per GPU) / {fmt(per_seq, 'B')} per sequence of {context:,.0f} tokens = "
            f"{n:,} sequences per GPU"
        )
    return Capacity(n, weights, usable, per_seq, context, formula)


def max_batch(
    model: ModelSpec, gpu: GpuSpec, gpus: int, *, context: float = 0, kv_dtype: str | None = "fp4"
) -> tuple[int, str]:
    """Sequences per GPU whose caches fit (:func:`capacity`), and its formula."""
    c = capacity(model, gpu, gpus, context=context, kv_dtype=kv_dtype)
    return c.sequences, c.formula


def narrowest_kv_dtype(model: ModelSpec) -> str | None:
    """The narrowest KV storage dtype the model's catalog entry has a row format for (None when
    its KV layout is unknown)."""
    table = model.kv_cache.row_formats
    if model.kv_cache.compression_ratios is None or table is None:
        return None
    for d in catalogs.PRECISIONS:
        if getattr(table, d) is not None:
            return d
    return None


def prefill_ceiling(
    model: ModelSpec,
    gpu: GpuSpec,
    prefix: float,
    *,
    kv_dtype: str | None = "fp4",
    efficiency: float = 1.0,
    active_scale: float = 1.0,
) -> list[Reading]:
    """New-token prefill ceilings per GPU after a prefix of ``prefix`` tokens, through the
    encoder layers only: compute (GEMMs + attention and indexer FLOP at the prefix,
    :func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`) and the prefix's KV reads
    of those layers (:func:`rackbook.physics.roofline.context_reads`, each new token reading
    them once)."""
    comp = roofline.compute_ceiling_tokens_per_s(
        model, gpu, "prefill", efficiency=efficiency, active_scale=active_scale, context=prefix
    )
    out = [Reading("compute", comp.tokens_per_s, comp.formula, "prefill")]
    if kv_dtype and prefix:
        r = roofline.context_reads(model, prefix, "prefill", kv_dtype)
        bw = gpu.hbm_bandwidth_bytes_per_s * efficiency
        tps = bw / r.total if r.total else math.inf
        out.append(
            Reading(
                "KV read",
                tps,
                f"{r.formula}; {fmt(bw, 'B/s')} / {fmt(r.total, 'B')} = {tps:,.0f} new tokens/s",
                "prefill",
            )
        )
    return out


def _finite(
    value: float | None, field_name: str, *, low: float = 0.0, strict: bool = False
) -> None:
    if value is None:
        return
    ok = isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > low if strict else value >= low)
    if not ok:
        raise InputError(
            "-",
            field_name,
            f"must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}",
        )


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
    margin: float = MARGIN,
    active_scale: float = 1.0,
    efficiency: float = 1.0,
    counted: str | None = None,
    isl: float | None = None,
    osl: float | None = None,
    cached_share: float = 0.0,
) -> Check:
    """The physics verdict on ``tok_s`` tokens/s (``per`` GPU or the ``total`` of ``gpus``)
    of ``model`` on ``gpus`` x ``gpu`` for a workload (units: tokens, tokens/s).

    ``counted``: ``output`` (output tokens), ``total`` (input + output; needs ``isl`` and
    ``osl``) or ``input`` (input tokens, cached ones included); default ``input`` in the
    prefill phase, else ``output``. ``cached_share``: share of the input tokens served from the
    prefix cache (no prefill work). ``batch``: sequences in flight over all ``gpus`` (the
    concurrency; default the best batch whose KV fits). ``context``: tokens each decoding
    sequence holds (default ``isl`` + ``osl`` / 2, else 0). ``phase``: ``decode`` (these GPUs
    only decode), ``prefill`` (they only prefill) or ``mixed`` (both; the default when ``isl``
    and ``osl`` are given). A new input token's prefix is the cached share of ``isl`` plus half
    the rest (``context`` without ``isl``).

    The claimed work shares the GPUs' time: ratio = new input tokens/s / prefill ceiling +
    output tokens/s / decode ceiling (per GPU); the verdict is :func:`physics_verdict` of it.
    """
    m, g = catalogs.as_model(model), catalogs.as_gpu(gpu)
    if per not in ("gpu", "total"):
        raise InputError("-", "per", f"{per!r} is not one of gpu, total")
    if not (isinstance(gpus, int) and 1 <= gpus <= MAX_GPUS):
        raise InputError("-", "gpus", f"must be a whole number from 1 to {MAX_GPUS}, got {gpus!r}")
    if not (isinstance(tok_s, (int, float)) and math.isfinite(tok_s) and tok_s > 0):
        raise InputError("-", "tok_s", f"must be a positive number, got {tok_s!r}")
    _finite(isl, "isl", strict=True)
    _finite(osl, "osl", strict=True)
    _finite(context, "context")
    _finite(batch, "batch", strict=True)
    _finite(cached_share, "cached_share")
    if not 0 <= cached_share < 1:
        raise InputError("-", "cached_share", f"must be in [0, 1), got {cached_share}")
    if counted is None:
        counted = "input" if phase == "prefill" else "output"
    if counted not in COUNTED:
        raise InputError("-", "counted", f"{counted!r} is not one of {', '.join(COUNTED)}")
    if phase is None:
        phase = "mixed" if isl and osl else ("prefill" if counted == "input" else "decode")
    if phase not in CHECK_PHASES:
        raise InputError("-", "phase", f"{phase!r} is not one of {', '.join(CHECK_PHASES)}")
    if counted == "total" and not (isl and osl):
        raise InputError("-", "counted", "total needs --isl and --osl to split input and output")
    if (phase, counted) in (("prefill", "output"), ("decode", "input")):
        raise InputError("-", "counted", f"a {phase} figure does not count {counted} tokens")
    limit_ctx = m.architecture.max_context_tokens
    longest = (isl or 0) + (osl or 0)
    longest = max(longest, context or 0)
    if limit_ctx is not None and longest > limit_ctx:
        raise InputError(
            "-",
            "context",
            f"{longest:,.0f} tokens is out of range: {m.name} holds at most {limit_ctx:,}",
        )
    if batch is not None and batch > MAX_BATCH * gpus:
        raise InputError(
            "-",
            "batch",
            f"{batch:,.0f} sequences is out of range: at most {MAX_BATCH:,} per GPU "
            f"({MAX_BATCH * gpus:,} on {plural(gpus, 'GPU')})",
        )
    claimed = tok_s / gpus if per == "total" else tok_s
    kv_dtype = kv_dtype or narrowest_kv_dtype(m)
    notes: list[str] = []
    if kv_dtype is None:
        if context or isl:
            raise InputError(m.file, "kv_cache", "KV layout unknown: cannot judge a context")
        notes.append("KV layout unknown: context reads and KV memory are not counted")
    verify = _spec_tokens(m, tokens_per_step)

    # the workload's rates per GPU
    if counted == "output":
        out = claimed
        inp = claimed * isl / osl if isl and osl else 0.0
    elif counted == "input":
        inp = claimed
        out = claimed * osl / isl if isl and osl else 0.0
    else:
        assert isl and osl
        out, inp = claimed * osl / (isl + osl), claimed * isl / (isl + osl)
    new = inp * (1 - cached_share)
    dec_ctx = context if context is not None else ((isl or 0) + (osl or 0) / 2 if isl else 0.0)
    if isl:
        pre_ctx = isl * cached_share + isl * (1 - cached_share) / 2
    else:
        pre_ctx = context or 0.0
    if phase == "decode" and new and counted != "output":
        notes.append("--phase decode: the input tokens are prefilled on other GPUs")
    if phase == "decode" and counted == "output":
        new = 0.0
    if phase == "prefill":
        out = 0.0
    if phase in ("decode", "mixed") and not context and not isl and kv_dtype:
        notes.append("no context given: decode reads no context (the most permissive case)")
    workload = {
        "counted": counted,
        "isl": isl,
        "osl": osl,
        "decode_context": dec_ctx,
        "prefill_prefix": pre_ctx,
        "cached_share": cached_share,
        "concurrency": batch,
        "tokens_per_step": tokens_per_step,
        "output_tok_s_per_gpu": out,
        "new_input_tok_s_per_gpu": new,
    }

    def result(
        verdict: str,
        ratio: float,
        ceiling: float,
        limit: str,
        chosen: float | None,
        readings: list[Reading],
        fractions: dict[str, float],
    ) -> Check:
        return Check(
            m.id,
            g.id,
            gpus,
            phase,
            claimed,
            verdict,
            ratio,
            ceiling,
            limit,
            None if chosen is None else _n(chosen),
            readings,
            notes,
            counted,
            fractions,
            workload,
        )

    readings: list[Reading] = []
    if phase in ("decode", "mixed"):
        comp = roofline.compute_ceiling_tokens_per_s(
            m, g, "decode", efficiency=efficiency, active_scale=active_scale, context=dec_ctx
        )
        notes.extend(comp.notes)
        comp_tps = comp.tokens_per_s * tokens_per_step / verify  # a verify step keeps S of V
        readings.append(Reading("compute", comp_tps, comp.formula, "decode"))
    cap = capacity(m, g, gpus, context=max(dec_ctx, longest), kv_dtype=kv_dtype)
    readings.append(Reading("memory capacity", math.inf if cap.sequences else 0.0, cap.formula))
    lacking = cap.what_does_not_fit
    if lacking is not None:
        notes.insert(0, f"{cap.formula} on {g.name}")
        return result(
            "impossible", math.inf, 0.0, f"memory capacity ({lacking})", batch, readings, {}
        )
    cap_total = cap.sequences * gpus
    if batch is not None and batch > cap_total:
        notes.insert(
            0,
            f"the KV cache does not fit: {batch:,.0f} sequences of {cap.context:,.0f} tokens need "
            f"{fmt(batch / gpus * cap.per_sequence_bytes, 'B')} per GPU; at most "
            f"{cap.sequences:,} per GPU fit ({cap.formula})",
        )
        return result(
            "impossible", math.inf, 0.0, "memory capacity (KV cache)", batch, readings, {}
        )
    chosen = batch
    fractions: dict[str, float] = {}
    binding: dict[str, Reading] = {}
    if phase in ("decode", "mixed"):
        kw = dict(
            context=dec_ctx,
            tokens_per_step=tokens_per_step,
            kv_dtype=kv_dtype,
            efficiency=efficiency,
            active_scale=active_scale,
        )
        if batch is not None:
            mem = memory_ceiling(m, g, gpus, batch, **kw)
        else:  # the best batch that fits: the claimant's free choice
            best = None
            b = 1
            while True:
                bb = min(b, cap_total)
                r = memory_ceiling(m, g, gpus, bb, **kw)
                if best is None or min(r.tok_s_per_gpu, comp_tps) > min(
                    best[1].tok_s_per_gpu, comp_tps
                ):
                    best = (bb, r)
                if b >= cap_total or r.tok_s_per_gpu >= comp_tps:
                    break
                b *= 2
            chosen, mem = best
            mem = Reading(
                mem.name, mem.tok_s_per_gpu, mem.formula + f" (best batch {chosen:,})", "decode"
            )
            notes.append(
                f"concurrency not given: the best batch that fits ({chosen:,} sequences on "
                f"{plural(gpus, 'GPU')}), the claimant's free choice"
            )
        readings.append(mem)
        if batch == 1:
            readings.append(Reading("batch-1 floor", mem.tok_s_per_gpu, mem.formula, "decode"))
        dec = min((r for r in readings if r.phase == "decode"), key=lambda r: r.tok_s_per_gpu)
        binding["decode"] = dec
        fractions["decode"] = out / dec.tok_s_per_gpu
    if phase in ("prefill", "mixed"):
        pre = prefill_ceiling(
            m, g, pre_ctx, kv_dtype=kv_dtype, efficiency=efficiency, active_scale=active_scale
        )
        readings.extend(pre)
        best_pre = min(pre, key=lambda r: r.tok_s_per_gpu)
        binding["prefill"] = best_pre
        fractions["prefill"] = new / best_pre.tok_s_per_gpu
    ratio = sum(fractions.values())
    if len(fractions) == 1:
        ph = next(iter(fractions))
        limit = binding[ph].name
    else:
        ph = max(fractions, key=lambda k: fractions[k])
        limit = f"{ph} {binding[ph].name}"
    ceiling = claimed / ratio if ratio > 0 else math.inf
    if phase == "prefill" and ratio == 0:
        ceiling = math.inf
    return result(
        physics_verdict(ratio, margin), ratio, ceiling, limit, chosen, readings, fractions
    )


@dataclass(frozen=True)
class Band:
    """How a ratio moves with the model's uncertainty: active parameters (and bytes) +/-20 %,
    and kernels at 40 to 60 % of the peak FLOP/s and bandwidth."""

    ratio: float
    low: float
    high: float
    text: str


def sensitivity(**kwargs: Any) -> Band:
    """The ratio of :func:`check_claim` (same arguments) at peak, and its range over active
    parameters x 0.8 .. 1.2 and efficiency 0.4 .. 0.6."""
    base = check_claim(**kwargs).ratio
    ratios = [
        check_claim(**kwargs, active_scale=s, efficiency=e).ratio
        for s in (0.8, 1.2)
        for e in (0.4, 0.6)
    ]
    lo, hi = min(ratios), max(ratios)
    text = (
        f"{base:.3g}x at peak; {lo:.3g}x to {hi:.3g}x with active parameters +/-20 % and "
        "kernels at 40-60 % of peak"
    )
    return Band(base, lo, hi, text)
