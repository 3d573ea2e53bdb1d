"""Is a serving claim physically possible? The ceilings a model and a GPU put on tokens per second
per GPU, and a verdict on a claimed figure.

Readings (each a ceiling in tokens/s per GPU, with its formula):

- **compute**: every GPU's dense FLOP/s at the precision each part of the model runs at
  (:func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`); with speculation, a step
  verifies more tokens than it keeps;
- **memory bandwidth** (decode): a step streams the dense weights once per GPU, the distinct
  routed experts all the step's tokens pick (spread over the GPUs), each sequence's context reads
  (the sparse end of :func:`rackbook.physics.roofline.decode_kv_reads`) and the drafter's
  weights; at ``batch`` sequences per GPU it yields batch x tokens-per-step tokens;
- **memory capacity**: the weights (dense on every GPU, experts spread) and each sequence's KV
  must fit; a model that does not fit at all is impossible.

Without a batch, the batch is the claimant's free choice: the ceiling is the best over every
batch whose KV fits, so ``impossible`` means no batch size could reach the figure.

Verdict on claimed / binding ceiling (``ratio``): ``possible`` below 1 - :data:`MARGIN`,
``impossible`` above 1 + :data:`MARGIN`, ``undetermined`` in between (within the modelling
uncertainty of a ceiling that ignores communication, attention FLOP and kernel efficiency).
"""

from __future__ import annotations

import argparse
import json
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
#: Largest batch per GPU searched when the batch is free.
MAX_BATCH = 1 << 16


def physics_verdict(ratio: float, margin: float = MARGIN) -> str:
    """``possible`` | ``undetermined`` | ``impossible`` for claimed / ceiling = ``ratio``."""
    if not math.isfinite(ratio) or ratio > 1 + margin:
        return "impossible"
    return "undetermined" if ratio >= 1 - margin else "possible"


@dataclass(frozen=True)
class Reading:
    """One ceiling: tokens/s per GPU, what it is, and the arithmetic."""

    name: str
    tok_s_per_gpu: float
    formula: str


@dataclass(frozen=True)
class Check:
    """The physics of one claimed rate (tokens/s per GPU)."""

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

    @property
    def reason(self) -> str:
        """One line: the claim over the binding ceiling, and what binds."""
        if self.limit == "memory capacity":
            return self.notes[0] if self.notes else "the model does not fit"
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
    if tokens_per_step < 1:
        raise InputError("-", "tokens_per_step", f"must be >= 1, got {tokens_per_step}")
    if tokens_per_step == 1:
        return 1
    spec = model.speculative
    return max(spec.draft_tokens + 1 if spec else 0, math.ceil(tokens_per_step))


def memory_ceiling(
    model: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    batch: int,
    *,
    context: int = 0,
    tokens_per_step: float = 1.0,
    kv_dtype: str = "fp4",
    efficiency: float = 1.0,
    active_scale: float = 1.0,
) -> Reading:
    """Decode tokens/s per GPU that HBM bandwidth allows with ``batch`` sequences decoding
    together on ``gpus`` GPUs. Per step and GPU: the dense weights once if the GPU has its own
    sequences (data-parallel attention), or its share of them when fewer sequences than GPUs
    are split across GPUs (batch 1 on 4 GPUs: a quarter each); the distinct routed experts the
    step's tokens pick, spread over the GPUs; the sequences' context reads and the drafter's
    weights, spread likewise."""
    verify = _spec_tokens(model, tokens_per_step)
    m = model.moe
    assert m.num_routed_experts and m.experts_per_token
    split = roofline.weight_split(model, "decode")
    dense_all = split.dense_params * float(roofline.DENSE_BYTES_PER_PARAM[split.dense_dtype])
    dense = dense_all * active_scale * min(1.0, batch / gpus)
    per_layer = roofline.distinct_experts(m.num_routed_experts, m.experts_per_token, batch * verify)
    experts = split.moe_layers * per_layer * roofline.expert_bytes(model) * active_scale / gpus
    kv_seq = roofline.decode_kv_reads(model, context, kv_dtype).sparse_bytes if kv_dtype else 0.0
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
        f"{fmt(experts, 'B')} + {fmt(kv, 'B')} context"
        + (f" + {fmt(draft, 'B')} drafter" if draft else "")
        + f") / {fmt(gpu.hbm_bandwidth_bytes_per_s * efficiency, 'B/s')} = {step * 1e6:.4g} us; "
        f"{plural(batch, 'sequence')} x {plural(tokens_per_step, 'token')} per step / "
        f"{plural(gpus, 'GPU')} = "
        f"{tps:,.0f} tok/s per GPU"
    )
    return Reading("memory bandwidth", tps, formula)


def max_batch(
    model: ModelSpec, gpu: GpuSpec, gpus: int, *, context: int = 0, kv_dtype: str = "fp4"
) -> tuple[int, str]:
    """Sequences per GPU whose KV (and sliding-window cache) fits after the weights (dense on
    every GPU, experts spread over ``gpus``), at :data:`MEMORY_FRACTION` of HBM; 0 when the
    weights alone do not fit."""
    st = roofline.storage(model)
    weights = st.per_gpu_bytes(gpus)
    stored = roofline.kv_bytes_per_sequence(model, context, kv_dtype) if kv_dtype else 0
    per_seq = stored + roofline.window_bytes_per_sequence(model)
    free = gpu.hbm_capacity_bytes * MEMORY_FRACTION - weights
    n = 0 if free <= 0 else (MAX_BATCH if per_seq == 0 else min(MAX_BATCH, int(free // per_seq)))
    formula = (
        f"({fmt(gpu.hbm_capacity_bytes, 'B')} x {MEMORY_FRACTION:g} - {fmt(weights, 'B')} weights "
        f"per GPU) / {fmt(per_seq, 'B')} per sequence = {n:,} sequences per GPU"
    )
    return n, formula


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


def check_claim(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    gpus: int,
    tok_s: float,
    *,
    per: str = "gpu",
    phase: str = "decode",
    batch: int | None = None,
    context: int = 0,
    tokens_per_step: float = 1.0,
    kv_dtype: str | None = None,
    margin: float = MARGIN,
    active_scale: float = 1.0,
    efficiency: float = 1.0,
) -> Check:
    """The physics verdict on ``tok_s`` tokens/s (``per`` GPU or the ``total`` of ``gpus``)
    of ``model`` on ``gpus`` x ``gpu`` in ``phase`` (module docstring)."""
    m, g = catalogs.as_model(model), catalogs.as_gpu(gpu)
    if phase not in roofline.PHASES:
        raise InputError("-", "phase", f"{phase!r} is not one of {', '.join(roofline.PHASES)}")
    if per not in ("gpu", "total"):
        raise InputError("-", "per", f"{per!r} is not one of gpu, total")
    if not (isinstance(gpus, int) and gpus >= 1):
        raise InputError("-", "gpus", f"must be a whole number >= 1, got {gpus!r}")
    if not (math.isfinite(tok_s) and tok_s > 0):
        raise InputError("-", "tok_s", f"must be a positive number, got {tok_s!r}")
    if batch is not None and batch < 1:
        raise InputError("-", "batch", f"must be >= 1, got {batch}")
    if context < 0:
        raise InputError("-", "context", f"must be >= 0, got {context}")
    claimed = tok_s / gpus if per == "total" else tok_s
    kv_dtype = kv_dtype or narrowest_kv_dtype(m)
    if kv_dtype is None:
        if context:
            raise InputError(m.file, "kv_cache", "KV layout unknown: cannot judge a context")
    verify = _spec_tokens(m, tokens_per_step)
    comp = roofline.compute_ceiling_tokens_per_s(
        m, g, phase, efficiency=efficiency, active_scale=active_scale
    )
    comp_tps = comp.tokens_per_s * tokens_per_step / verify  # a verify step keeps S of V tokens
    readings = [Reading("compute", comp_tps, comp.formula)]
    notes = list(comp.notes)
    if kv_dtype is None:
        notes.append("KV layout unknown: context reads and KV memory are not counted")
    cap, cap_formula = max_batch(m, g, gpus, context=context, kv_dtype=kv_dtype)
    readings.append(Reading("memory capacity", math.inf if cap else 0.0, cap_formula))
    if cap == 0:
        notes.insert(0, f"the weights do not fit in {gpus} x {g.id}: {cap_formula}")
        return Check(
            m.id,
            g.id,
            gpus,
            phase,
            claimed,
            "impossible",
            math.inf,
            0.0,
            "memory capacity",
            batch,
            readings,
            notes,
        )
    cap_total = cap * gpus
    if batch is not None and batch > cap_total:
        notes.append(f"batch {batch:,} does not fit: at most {cap_total:,} sequences")
    chosen = batch
    if phase == "decode":
        if batch is not None:
            mem = memory_ceiling(
                m,
                g,
                gpus,
                batch,
                context=context,
                tokens_per_step=tokens_per_step,
                kv_dtype=kv_dtype,
                efficiency=efficiency,
                active_scale=active_scale,
            )
        else:  # the best batch that fits
            best = None
            b = 1
            while True:
                r = memory_ceiling(
                    m,
                    g,
                    gpus,
                    min(b, cap_total),
                    context=context,
                    tokens_per_step=tokens_per_step,
                    kv_dtype=kv_dtype,
                    efficiency=efficiency,
                    active_scale=active_scale,
                )
                if best is None or min(r.tok_s_per_gpu, comp_tps) > min(
                    best[1].tok_s_per_gpu, comp_tps
                ):
                    best = (min(b, cap_total), r)
                if b >= cap_total or r.tok_s_per_gpu >= comp_tps:
                    break
                b *= 2
            chosen, mem = best
            mem = Reading(mem.name, mem.tok_s_per_gpu, mem.formula + f" (best batch {chosen:,})")
        readings.append(mem)
        if batch == 1:
            readings.append(Reading("batch-1 floor", mem.tok_s_per_gpu, mem.formula))
    else:
        notes.append(
            "prefill: compute only; attention FLOP that grow with a cached prefix are not counted"
        )
    binding = min(
        (r for r in readings if r.name != "memory capacity"), key=lambda r: r.tok_s_per_gpu
    )
    ratio = claimed / binding.tok_s_per_gpu
    return Check(
        m.id,
        g.id,
        gpus,
        phase,
        claimed,
        physics_verdict(ratio, margin),
        ratio,
        binding.tok_s_per_gpu,
        binding.name,
        chosen,
        readings,
        notes,
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


def cli_check(args: argparse.Namespace) -> int:
    """``rackbook check --model M --gpu G --gpus N --tok-s X [...] [--json]``: each reading,
    the limiting one and the verdict; with ``--json`` one JSON object printed last."""
    c = check_claim(
        args.model,
        args.gpu,
        args.gpus,
        args.tok_s,
        per=args.per,
        phase=args.phase,
        batch=args.batch,
        context=args.context,
        tokens_per_step=args.tokens_per_step,
        kv_dtype=args.kv_dtype,
    )
    print(
        f"{c.model} on {c.gpus} x {c.gpu}, {c.phase}: claimed {c.claimed_tok_s_per_gpu:,.1f} "
        "tok/s per GPU"
    )
    for r in c.readings:
        shown = "fits" if r.name == "memory capacity" else f"{r.tok_s_per_gpu:,.0f} tok/s/GPU"
        print(f"  {r.name}: {shown}  [{r.formula}]")
    for n in c.notes:
        print(f"  note: {n}")
    print(f"verdict: {c.verdict} ({c.reason}; limit: {c.limit})")
    if args.json:
        d = c.to_dict()
        d["readings"] = [
            {
                **r,
                "tok_s_per_gpu": r["tok_s_per_gpu"] if math.isfinite(r["tok_s_per_gpu"]) else None,
            }
            for r in d["readings"]
        ]
        d["ratio"] = d["ratio"] if math.isfinite(d["ratio"]) else None
        print(json.dumps(d, allow_nan=False))
    return 0
