"""Decode latency against context length, and the KV-bandwidth model of its growth.

Definitions (per sweep point with a ``context_tokens`` target; successful requests):

- TPOT (ms) per request = (e2el - ttft) / (output_tokens - 1), requests with more than one
  output token (vLLM's definition, :func:`rackbook.core.metrics.tpot_s`); ``mean_tpot_ms`` /
  ``median_tpot_ms`` over the point's requests;
- ITL (ms): every gap between streamed chunks of the point's requests, pooled; with one token
  per chunk the ITL is the decode step time (with speculative decoding a chunk may carry
  several tokens and the ITL is longer than the TPOT);
- linear fit: least squares TPOT = a + b x context (a in ms, b in ms/token; ``slope_per_1k`` =
  1000 b in ms per 1,000 tokens);
- delta between two context lengths lo < hi: delta_ms = L(hi) - L(lo), delta_pct = 100 x
  delta_ms / L(lo).

KV model: each decode step reads every sequence's global KV once, so growing each of ``batch``
sequences from lo to hi tokens adds batch x (hi - lo) x KV bytes/token of reads per step, at
least that / (n_gpus x HBM bytes/s) seconds (:func:`rackbook.physics.roofline.kv_read_time_s`).

The published figures (bytes per token, the delta in ms and in %, their tolerances and the pair
of context lengths) come from the claims registry (``data/claims.yaml``): :func:`analyse` reads
them; the functions below take them as arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import metrics
from rackbook.core.provenance import hardware_label
from rackbook.core.traces import Trace, point_batch
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.physics import roofline, units
from rackbook.results import headline, verdicts

RESULT = "context-latency"
#: The claims this chapter tests (data/claims.yaml): bytes per token of the global KV cache,
#: and the decode-latency delta between two context lengths, in ms and in %.
KV_BYTES_ID = "context-latency.kv-bytes"
DELTA_ID = "context-latency.delta"
DELTA_PCT_ID = "context-latency.delta-pct"

SERIES_KEYS: tuple[str, ...] = ("engine", "config", "batch")
FIT_FORMULA = r"\mathrm{TPOT} = a + b \cdot \text{context}"
DELTA_FORMULA = (
    r"\Delta = L(c_\mathrm{hi}) - L(c_\mathrm{lo}), \qquad "
    r"\Delta\% = 100 \times \Delta / L(c_\mathrm{lo})"
)
KV_READ_FORMULA = (
    r"t_\mathrm{KV} \geq \frac{B \times (c_\mathrm{hi} - c_\mathrm{lo}) \times "
    r"\text{KV bytes/token}}{G \times \text{HBM bytes/s}}"
)


def decode_latency_by_context(trace: Trace) -> pd.DataFrame:
    """One row per point with ``context_tokens``: point_id, engine, config, batch (batch size or
    concurrency), context_tokens, requests (successful), mean/median TPOT (ms) and mean/median
    ITL (ms); NaN where no request has more than one output token (or no gaps). Sorted by
    engine, config, batch, context."""
    req = trace.requests
    ok = req["success"].to_numpy(dtype=bool)
    pid = req["point_id"].to_numpy()
    rr = trace.itl["request_row"].to_numpy()
    gaps = trace.itl["itl_s"].to_numpy(dtype=np.float64)
    pts = trace.points.assign(batch=point_batch(trace.points))
    rows = []
    for _, p in pts.iterrows():
        if pd.isna(p["context_tokens"]):
            continue
        mask = ok & (pid == p["point_id"])
        r = req[mask]
        tpot = metrics.tpot_s(
            r["ttft_s"].to_numpy(np.float64),
            r["e2el_s"].to_numpy(np.float64),
            r["output_tokens"].to_numpy(np.int64),
        )
        itl = gaps[mask[rr]] if gaps.size else gaps
        rows.append(
            {
                "point_id": p["point_id"],
                "engine": p["engine"],
                "config": p["config"],
                "batch": p["batch"],
                "context_tokens": int(p["context_tokens"]),
                "requests": int(mask.sum()),
                "mean_tpot_ms": 1000 * float(tpot.mean()) if tpot.size else np.nan,
                "median_tpot_ms": 1000 * float(np.median(tpot)) if tpot.size else np.nan,
                "mean_itl_ms": 1000 * float(itl.mean()) if itl.size else np.nan,
                "median_itl_ms": 1000 * float(np.median(itl)) if itl.size else np.nan,
            }
        )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["batch"] = out["batch"].astype("Int64")
    return out.sort_values(["engine", "config", "batch", "context_tokens"], ignore_index=True)


def _one_series(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    if metric not in table.columns:
        raise InputError("-", "metric", f"{metric!r} is not a column of the table")
    keys = [k for k in SERIES_KEYS if k in table.columns]
    if keys and len(table[keys].astype("string").drop_duplicates()) > 1:
        raise InputError(
            "-",
            "table",
            f"holds several series ({', '.join(keys)}); select one before fitting",
        )
    t = table[table[metric].notna()]
    if t["context_tokens"].duplicated().any():
        raise InputError("-", "table", "two rows share a context length; select one series")
    return t.sort_values("context_tokens")


@dataclass(frozen=True)
class LinearFit:
    """Least-squares line latency_ms = intercept_ms + slope_ms_per_token x context (tokens)."""

    metric: str
    intercept_ms: float
    slope_ms_per_token: float
    r2: float
    n: int
    context_min: int
    context_max: int
    formula: str

    @property
    def slope_per_1k(self) -> float:
        """Slope in ms per 1,000 context tokens."""
        return 1000 * self.slope_ms_per_token

    def predict(self, context_tokens: float) -> float:
        """Fitted latency (ms) at ``context_tokens``."""
        return self.intercept_ms + self.slope_ms_per_token * context_tokens


def fit_linear(table: pd.DataFrame, metric: str = "median_tpot_ms") -> LinearFit:
    """Least squares ``metric`` (ms) = a + b x context_tokens over one series of
    :func:`decode_latency_by_context` (one engine/config/batch; at least two context
    lengths). r2 = 1 - SS_res / SS_tot (1.0 when all latencies are equal and fitted)."""
    t = _one_series(table, metric)
    if len(t) < 2:
        raise InputError("-", "table", f"needs two context lengths to fit, has {len(t)}")
    x = t["context_tokens"].to_numpy(np.float64)
    y = t[metric].to_numpy(np.float64)
    b, a = np.polyfit(x, y, 1)
    res = y - (a + b * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float((res**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    formula = (
        f"{metric} = {a:.4g} ms + {b * 1000:.4g} ms per 1k tokens x context "
        f"(least squares over {len(t)} points, {int(x.min()):,}..{int(x.max()):,} tokens, "
        f"R^2 = {r2:.3f})"
    )
    return LinearFit(metric, float(a), float(b), r2, len(t), int(x.min()), int(x.max()), formula)


@dataclass(frozen=True)
class Delta:
    """Latency change between context lengths ``lo`` and ``hi`` (tokens): ms and percent.

    ``source``: ``measured`` (table rows) or ``fit``; ``pair``: ``requested`` (lo and hi as
    asked), ``longest-available`` (the table's shortest and longest contexts instead), or
    ``extrapolated`` (a fit evaluated outside the contexts it was fitted on).
    """

    lo: int
    hi: int
    lo_ms: float
    hi_ms: float
    delta_ms: float
    delta_pct: float
    source: str
    pair: str
    formula: str


def delta(
    table_or_fit: pd.DataFrame | LinearFit,
    lo: int,
    hi: int,
    metric: str = "median_tpot_ms",
) -> Delta:
    """Latency at ``hi`` minus latency at ``lo`` (ms) and in % of the latency at ``lo``.

    From a table (one series of :func:`decode_latency_by_context`): the measured ``metric`` at
    both lengths when the trace has both, else at the shortest and longest contexts it has
    (``pair = "longest-available"``). From a :class:`LinearFit`: fitted values at lo and hi.
    """
    if not lo < hi:
        raise InputError("-", "hi", f"must be above lo ({lo}), got {hi}")
    if isinstance(table_or_fit, LinearFit):
        f = table_or_fit
        lo_ms, hi_ms = f.predict(lo), f.predict(hi)
        inside = f.context_min <= lo and hi <= f.context_max
        source, pair = "fit", ("requested" if inside else "extrapolated")
    else:
        t = _one_series(table_or_fit, metric)
        if len(t) < 2:
            raise InputError("-", "table", f"needs two context lengths, has {len(t)}")
        by = t.set_index("context_tokens")[metric]
        if lo in by.index and hi in by.index:
            pair = "requested"
        else:
            lo, hi, pair = int(by.index.min()), int(by.index.max()), "longest-available"
        lo_ms, hi_ms = float(by.loc[lo]), float(by.loc[hi])
        source = "measured"
    d = hi_ms - lo_ms
    pct = 100 * d / lo_ms if lo_ms else np.nan
    formula = (
        f"{metric}: {hi_ms:.4g} ms at {hi:,} - {lo_ms:.4g} ms at {lo:,} = {d:+.4g} ms "
        f"({pct:+.3g} %) [{source}, {pair}]"
    )
    return Delta(lo, hi, lo_ms, hi_ms, d, pct, source, pair, formula)


# ----------------------------------------------------------------------------- KV model


@dataclass(frozen=True)
class KvBandwidth:
    """Extra KV bytes each decode step reads when ``batch`` sequences grow from lo to hi tokens,
    and the least extra time (seconds) that costs at the HBM bandwidth of ``n_gpus`` GPUs."""

    lo: int
    hi: int
    batch: int
    kv_bytes_per_token: int
    bytes_per_sequence_lo: int
    bytes_per_sequence_hi: int
    extra_bytes: float
    extra_s: float
    formula: str

    @property
    def extra_ms(self) -> float:
        return 1000 * self.extra_s


def kv_bandwidth_model(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    lo: int,
    hi: int,
    kv_dtype: str = "fp4",
    n_gpus: int = 1,
    batch: int = 1,
) -> KvBandwidth:
    """Extra global-KV bytes per decode step = batch x (hi - lo) x KV bytes/token, and the time
    to stream them = bytes / (n_gpus x HBM bytes/s)
    (:func:`rackbook.physics.roofline.kv_read_time_s`).

    ``n_gpus`` is the GPUs whose bandwidth shares the reads: 1 when each sequence's KV lives on
    one GPU (data-parallel attention), more when a sequence's KV is split (context parallel).
    """
    m = catalogs.as_model(model)
    if not 0 <= lo < hi:
        raise InputError("-", "hi", f"need 0 <= lo < hi, got lo={lo}, hi={hi}")
    if batch < 1:
        raise InputError("-", "batch", f"must be >= 1, got {batch}")
    step = roofline.kv_read_time_s(batch * (hi - lo), m, hw, kv_dtype, n_gpus)
    formula = f"{batch} sequence(s) x ({hi:,} - {lo:,}) = {step.formula}"
    return KvBandwidth(
        lo,
        hi,
        batch,
        roofline.kv_bytes_per_token(m, kv_dtype),
        roofline.kv_bytes_per_sequence(m, lo, kv_dtype),
        roofline.kv_bytes_per_sequence(m, hi, kv_dtype),
        step.bytes,
        step.seconds,
        formula,
    )


def memory_by_context(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    contexts: list[int] | tuple[int, ...],
    kv_dtype: str = "fp4",
    *,
    weight_bytes_per_gpu: float,
    memory_fraction: float = 1.0,
) -> pd.DataFrame:
    """Per context length (tokens): global KV bytes per sequence
    (:func:`rackbook.physics.roofline.kv_bytes_per_sequence`) and sequences whose KV fits on one GPU
    after ``weight_bytes_per_gpu`` bytes of weights
    (:func:`rackbook.physics.roofline.sequences_fitting`;
    the weight bytes depend on the parallel layout and must be given)."""
    m = catalogs.as_model(model)
    rows = []
    for c in contexts:
        fit = roofline.sequences_fitting(
            m,
            hw,
            c,
            kv_dtype,
            weight_bytes_per_gpu=weight_bytes_per_gpu,
            memory_fraction=memory_fraction,
        )
        rows.append(
            {
                "context_tokens": int(c),
                "kv_bytes_per_sequence": fit.bytes_per_sequence,
                "sequences_per_gpu": fit.sequences,
                "free_bytes": fit.free_bytes,
                "formula": fit.formula,
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# readings of the claims
#
# Readings of the context-latency claims: weight bytes per GPU, and verdicts of the measured
# and modelled numbers against the published bytes per token and delta (ms and %).
#
# Definitions:
#
# - weight bytes of the backbone = routed bytes + dense bytes, where routed bytes = L x routed
#   experts x bytes per routed expert (FP4 with scales) and dense bytes = (backbone params -
#   L x routed experts x 3 x hidden x moe_intermediate) x bytes/param of the dense dtype (the
#   shared expert, attention, embeddings); L = MoE layers. The Engram lookup memory is not
#   counted (the catalog gives neither its storage dtype nor where it lives). Per GPU: divided
#   evenly over the GPUs holding the weights (expert parallel).
# - KV-read floor reading: the claimed delta (ms) against the least time the extra global KV
#   takes to stream from HBM (:func:`rackbook.results.context_latency.kv_bandwidth_model`);
#   share = floor / claim; sequences to explain = claim / floor of one sequence (how many
#   sequences per GPU, each growing from lo to hi tokens, would make KV reads alone add the
#   claimed time).
# - implied baseline (ms) = 100 x claimed delta / claimed percent: the decode latency at the
#   shorter claimed context that the two published figures imply together.

#: MoE layers assumed when the catalog does not say: every one of the 40 layers (the same
#: assumption as :func:`rackbook.physics.roofline.active_weight_bytes_per_token`).
DEFAULT_MOE_LAYERS = 40
#: GPUs holding one copy of the weights by default: a GB300 tray (claims-context.md,
#: "Hardware": a GB300 "node" is a 4-GPU tray; DeepInfer's prefill runs DEP4 on one tray).
DEFAULT_WEIGHT_GPUS = 4
#: GPU names that make a trace comparable with the GB300 claim.
BLACKWELL = verdicts.BLACKWELL
#: What the served model's name must contain for a trace to be comparable.
MODEL_KEY = "v4.1-flash"


@dataclass(frozen=True)
class WeightBytes:
    """Backbone weight bytes (total and per GPU), with the arithmetic in ``formula``."""

    total_bytes: float
    routed_bytes: float
    dense_bytes: float
    per_gpu_bytes: float
    n_gpus: int
    moe_layers: int
    formula: str

    def __float__(self) -> float:
        return self.per_gpu_bytes


def weight_bytes_per_gpu(
    model: ModelSpec | str = "deepseek-v4.1-flash",
    n_gpus: int = DEFAULT_WEIGHT_GPUS,
    *,
    moe_layers: int | None = None,
) -> WeightBytes:
    """Backbone weight bytes spread evenly over ``n_gpus`` GPUs (bytes per GPU).

    L = ``moe_layers``, else the catalog's ``moe.num_moe_layers``, else
    :data:`DEFAULT_MOE_LAYERS` (an assumption, said in the formula). DeepSeek-V4.1-Flash, L = 40:
    routed 40 x 384 x 18.8 MB = 288.768 GB; dense (552e9 - 40 x 384 x 3 x 5120 x 2304)
    = 8.418e9 params x 1 B (FP8) = 8.418 GB; total 297.19 GB, 74.30 GB per GPU over 4 GPUs.
    """
    m = catalogs.as_model(model)
    if n_gpus < 1:
        raise InputError("-", "n_gpus", f"must be >= 1, got {n_gpus}")
    if moe_layers is not None and moe_layers < 1:
        raise InputError("-", "moe_layers", f"must be >= 1, got {moe_layers}")
    assumed = moe_layers is None and m.moe.num_moe_layers is None
    layers = moe_layers or m.moe.num_moe_layers or DEFAULT_MOE_LAYERS
    needed = {
        "moe.num_routed_experts": m.moe.num_routed_experts,
        "moe.moe_intermediate_size": m.moe.moe_intermediate_size,
        "architecture.hidden_size": m.architecture.hidden_size,
        "weights.routed_expert_bytes": m.weights.routed_expert_bytes,
        "weights.dense_dtype": m.weights.dense_dtype,
        "params.backbone": m.params.backbone,
    }
    missing = [k for k, v in needed.items() if v is None]
    if missing:
        raise InputError(m.file, missing[0], "unknown: weight bytes cannot be derived")
    experts = m.moe.num_routed_experts
    hidden, inter = m.architecture.hidden_size, m.moe.moe_intermediate_size
    per_expert, backbone = m.weights.routed_expert_bytes, m.params.backbone
    assert experts and hidden and inter and per_expert and backbone and m.weights.dense_dtype
    routed_params = layers * experts * 3 * hidden * inter
    dense_params = backbone - routed_params
    if dense_params < 0:
        raise InputError(
            m.file, "params.backbone", f"below the {routed_params} routed params of {layers} layers"
        )
    per_param = roofline.DENSE_BYTES_PER_PARAM[m.weights.dense_dtype]
    routed = float(layers * experts * per_expert)
    dense = float(dense_params * per_param)
    total = routed + dense
    formula = (
        f"routed: {layers} MoE layers{' (assumed)' if assumed else ''} x {experts} experts x "
        f"{units.fmt(per_expert, 'B')} = {units.fmt(routed, 'B')}; dense: "
        f"({units.eng(backbone)} backbone - {layers} x {experts} x 3 x {hidden} x {inter} "
        f"routed) params x {float(per_param):g} B ({m.weights.dense_dtype}) = "
        f"{units.fmt(dense, 'B')}; total {units.fmt(total, 'B')} / {n_gpus} GPU(s) = "
        f"{units.fmt(total / n_gpus, 'B')} per GPU (Engram memory not counted)"
    )
    return WeightBytes(total, routed, dense, total / n_gpus, n_gpus, layers, formula)


def main_series(table: pd.DataFrame, metric: str = "median_tpot_ms") -> pd.DataFrame:
    """The one series (engine, config, batch) of
    :func:`rackbook.results.context_latency.decode_latency_by_context`
    with the most context lengths that have ``metric``; ties go to the first in table order.
    Rows without ``metric`` are dropped."""
    if table.empty or metric not in table.columns:
        raise InputError("-", "table", f"no point with context_tokens and {metric}")
    t = table[table[metric].notna()]
    if t.empty:
        raise InputError("-", metric, "no point has a value (requests of one output token?)")
    keys = [k for k in SERIES_KEYS if k in t.columns]
    labels = t[keys].astype("string").fillna("<NA>").agg(" | ".join, axis=1)
    order = list(dict.fromkeys(labels))
    best = max(order, key=lambda k: (labels == k).sum())  # max keeps the first of equals
    return t[labels == best].reset_index(drop=True)


def evidence_kind(trace_kind: str) -> str:
    """Headline kind of a number read from a trace: ``recorded`` -> ``measured``; ``published``
    and ``synthetic`` keep their names."""
    kinds = {"recorded": "measured", "published": "published", "synthetic": "synthetic"}
    if trace_kind not in kinds:
        raise InputError("run.json", "kind", f"{trace_kind!r} is not one of {', '.join(kinds)}")
    return kinds[trace_kind]


def comparable_to_claim(run: dict[str, Any]) -> bool:
    """True when a trace can test the published delta itself: recorded on Blackwell GPUs
    (:data:`BLACKWELL`) serving a model whose name (run.json ``parameters`` or ``engine``)
    contains ``v4.1-flash``. A CPU recording of a tiny model is a stand-in."""
    if run.get("kind") != "recorded":
        return False
    names = json.dumps([run.get("parameters"), run.get("engine")], default=str).lower()
    return verdicts.on_gpus(run, verdicts.BLACKWELL) and MODEL_KEY in names


def kv_bytes_verdict(computed: int, claim: float) -> tuple[str, str]:
    """Verdict on the bytes/token claim ``claim``: ``consistent`` when the layout's arithmetic
    gives exactly the claimed bytes, else ``inconsistent``; with a one-line reason."""
    if computed == claim:
        return "consistent", f"the catalog's cache layout gives exactly {computed} B/token"
    return "inconsistent", f"the catalog's cache layout gives {computed} B/token, not {claim:g}"


def measured_verdict(
    d: Delta,
    comparable: bool,
    hardware: str,
    *,
    claim: float,
    tolerance: float,
    percent: bool = False,
) -> tuple[str, str]:
    """Verdict on the claimed delta ``claim`` (ms, or % with ``percent``) from a measured
    :class:`Delta`.

    ``not reproduced`` unless the trace is comparable (:func:`comparable_to_claim`) and holds
    both claimed lengths (``d.pair == "requested"``); then ``consistent`` when the measured value
    is within ``tolerance`` (same unit) of the claim, else ``inconsistent``.
    """
    value = d.delta_pct if percent else d.delta_ms
    unit = "%" if percent else "ms"
    what = f"{value:+.3g} {unit} from {d.lo:,} to {d.hi:,} tokens"
    if not comparable:
        return "not reproduced", f"{what} on {hardware}, not DeepSeek-V4.1-Flash on Blackwell"
    if d.pair != "requested":
        return "not reproduced", f"{what} ({d.pair}): the trace lacks the claimed lengths"
    ok = abs(value - claim) <= tolerance
    return ("consistent" if ok else "inconsistent"), f"{what}, claim {claim:+g} {unit}"


@dataclass(frozen=True)
class FloorReading:
    """The claimed delta against the KV-read floor (ms), and what the comparison implies."""

    floor_ms: float
    claim_ms: float
    share: float
    sequences_to_explain: float
    implied_baseline_ms: float
    verdict: str
    reason: str
    formula: str


def floor_vs_claim(
    kv: KvBandwidth,
    claim_ms: float,
    claim_pct: float,
    tolerance_ms: float,
) -> FloorReading:
    """Compare the claimed delta (``claim_ms``, and ``claim_pct`` %) with the KV-read floor of
    :func:`kv_bandwidth_model`.

    ``consistent`` when the floor does not exceed the claim (plus its rounding tolerance
    ``tolerance_ms``): the claim is possible; the share of it that KV reads explain is in the
    reason. ``inconsistent`` when the claim is faster than streaming the extra KV allows. The
    worked numbers are in ``tests/test_context_latency_readings.py``.
    """
    if not claim_ms > 0 or not claim_pct > 0:
        raise InputError(
            "-", "claim", f"need claim_ms > 0 and claim_pct > 0, got {claim_ms}, {claim_pct}"
        )
    floor_ms = kv.extra_ms
    per_seq_ms = floor_ms / kv.batch
    share = floor_ms / claim_ms
    n_seq = claim_ms / per_seq_ms if per_seq_ms > 0 else float("inf")
    baseline = 100 * claim_ms / claim_pct
    formula = (
        f"floor {kv.formula} = {floor_ms:.4g} ms = {100 * share:.3g} % of the claimed "
        f"{claim_ms:g} ms; {claim_ms:g} / {per_seq_ms:.4g} ms per sequence = {n_seq:.3g} "
        f"sequences; implied latency at {kv.lo:,} tokens = 100 x {claim_ms:g} / {claim_pct:g} "
        f"= {baseline:.4g} ms"
    )
    if floor_ms <= claim_ms + tolerance_ms:
        verdict = "consistent"
        reason = (
            f"the claimed {claim_ms:g} ms is above the {1000 * floor_ms:.0f} us KV-read floor "
            f"({kv.batch} sequence(s)): KV reads explain {100 * share:.0f} %, the rest needs "
            f"indexer/attention compute or about {n_seq:.1f} sequences per GPU"
        )
    else:
        verdict = "inconsistent"
        reason = (
            f"streaming the extra KV takes at least {1000 * floor_ms:.0f} us, more than the "
            f"claimed {claim_ms:g} ms"
        )
    return FloorReading(floor_ms, claim_ms, share, n_seq, baseline, verdict, reason, formula)


# --------------------------------------------------------------------------------------------
# The chapter


def claimed_span(registry: Registry) -> tuple[int, int]:
    """The pair of context lengths (tokens) of the published delta: the scope
    ``context_tokens.low`` / ``.high`` of :data:`DELTA_ID`."""
    span = registry.get(DELTA_ID).scope.context_tokens
    if span is None:
        raise InputError(registry.path, f"claims[{DELTA_ID}].scope.context_tokens", "not stated")
    return span.low, span.high


@dataclass(frozen=True)
class Params(headline.Params):
    """The chapter's analysis parameters (the notebook's ``parameters`` cell): the model entry,
    GPU entry and KV-cache dtype of the arithmetic; the pair of context lengths ``lo`` < ``hi``
    (tokens; ``None``: the registry's pair); sequences per GPU growing from lo to hi and GPUs
    sharing one sequence's KV reads (bandwidth model); GPUs one copy of the weights is spread
    over, weight bytes per GPU (``None``: derived from the model entry) and the share of HBM
    vLLM may use."""

    model: str = "deepseek-v4.1-flash"
    gpu: str = "b300"
    kv_dtype: str = "fp4"
    lo: int | None = None
    hi: int | None = None
    batch: int = 1
    n_gpus: int = 1
    weight_gpus: int = DEFAULT_WEIGHT_GPUS
    weight_bytes_per_gpu: float | None = None
    memory_fraction: float = 0.9


@dataclass
class Analysis:
    """Everything the chapter shows: the KV bytes per token at every dtype, memory per sequence
    and sequences per GPU over a grid of contexts, decode latency against context (the trace's
    main series, its fit and the delta), the KV-read floor against the claimed delta (whose
    tolerance is ``tolerance_ms``), the verdicts, and the values its prose quotes."""

    trace: Trace
    params: Params
    claim_kv: Claim
    claim_delta: Claim
    claim_pct: Claim
    lo: int
    hi: int
    model: ModelSpec
    hw: GpuSpec
    kv_bytes: dict[str, roofline.KvBytes]
    weights: WeightBytes
    w_per_gpu: float
    memory: dict[str, pd.DataFrame]
    table: pd.DataFrame
    series: pd.DataFrame
    fit: LinearFit
    measured: Delta
    kv: KvBandwidth
    floor: FloorReading
    tolerance_ms: float
    kv_verdict: str
    kv_reason: str
    v_delta: str
    r_delta: str
    v_pct: str
    r_pct: str
    hardware: str
    kind: str
    verdict: str = field(init=False)
    reason: str = field(init=False)

    def __post_init__(self) -> None:
        self.verdict = self.v_delta
        self.reason = (
            f"{self.kv_bytes_per_token} B/token {self.kv_verdict} (arithmetic); latency delta "
            f"{self.v_delta} ({self.r_delta}); KV-read floor {1000 * self.floor.floor_ms:.0f} us "
            f"is {100 * self.floor.share:.0f} % of the claimed {self.floor.claim_ms:g} ms"
        )

    @property
    def kv_bytes_per_token(self) -> int:
        """Global KV bytes per token at the chapter's dtype."""
        return self.kv_bytes[self.params.kv_dtype].bytes_per_token

    @property
    def kv_table(self) -> pd.DataFrame:
        """One row per dtype: rows per token, KV and indexer row bytes, bytes per token."""
        return pd.DataFrame(
            {
                "kv_dtype": d,
                "rows_per_token": float(b.rows_per_token),
                "kv_row_bytes": b.kv_row_bytes,
                "indexer_row_bytes": b.indexer_row_bytes,
                "bytes_per_token": b.bytes_per_token,
            }
            for d, b in self.kv_bytes.items()
        )

    @property
    def at(self) -> pd.DataFrame:
        """Memory per sequence at the chapter's dtype, indexed by context (tokens)."""
        return self.memory[self.params.kv_dtype].set_index("context_tokens")

    @property
    def weights_note(self) -> str:
        """How the weight bytes per GPU were obtained (derived, with the arithmetic, or given)."""
        if self.params.weight_bytes_per_gpu is None:
            return self.weights.formula
        return f"given: {self.w_per_gpu:.4g} B per GPU"

    @property
    def idx_share(self) -> float:
        """Share of a KV row's bytes that is the indexer key."""
        b = self.kv_bytes[self.params.kv_dtype]
        return b.indexer_row_bytes / (b.kv_row_bytes + b.indexer_row_bytes)

    @property
    def latency_table(self) -> pd.DataFrame:
        """The main series' TPOT and ITL per context length, as the chapter shows it."""
        cols = ["context_tokens", "requests", "mean_tpot_ms", "median_tpot_ms", "median_itl_ms"]
        return self.series[cols].round(3)

    @property
    def pair_note(self) -> str:
        """Which pair of contexts the measured delta uses, in words."""
        d = self.measured
        if d.pair == "requested":
            return "the requested pair"
        return (
            f"the longest pair the trace has ({d.lo:,} and {d.hi:,} tokens), because it "
            f"does not reach {self.lo:,} and {self.hi:,}"
        )

    @property
    def rerun_contexts(self) -> list[int]:
        """Prompt lengths (tokens) of the live rerun: lo, 2 lo, 4 lo and hi."""
        return sorted({self.lo, 2 * self.lo, 4 * self.lo, self.hi})

    def verdict_markdown(self) -> str:
        """The four readings of the claims, one Markdown bullet each."""
        kv, dl, pct = self.claim_kv, self.claim_delta, self.claim_pct
        on = f"({self.kind} on {self.hardware})"
        return "\n".join(
            [
                f"- **{kv.value_text}: {self.kv_verdict}** (modelled: arithmetic on the "
                f"published layout): {self.kv_reason}.",
                f"- **{dl.value_text}: {self.v_delta}** {on}: {self.r_delta}.",
                f"- **{pct.value_text}: {self.v_pct}** {on}: {self.r_pct}.",
                f"- **{dl.value_text} against the bandwidth model: {self.floor.verdict}** "
                f"(modelled): {self.floor.reason}.",
            ]
        )

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        m, kvb, at, d, f = self.model, self.kv_bytes, self.at, self.measured, self.fit
        b = kvb[self.params.kv_dtype]
        return {
            "claim_kv": int(self.claim_kv.value),
            "claim_delta_ms": float(self.claim_delta.value),
            "claim_pct": float(self.claim_pct.value),
            "lo": int(self.lo),
            "hi": int(self.hi),
            "window": int(m.architecture.sliding_window or 0),
            "owning_layers": ", ".join(map(str, m.kv_cache.owning_layers or [])),
            "n_layers": int(m.architecture.num_layers or 0),
            "backbone_b": (m.params.backbone or 0) / 1e9,
            "hardware": self.hardware,
            "trace_kind": self.trace.kind,
            "kv_bytes": int(b.bytes_per_token),
            "kv_dtype": self.params.kv_dtype,
            "rows_per_token": float(b.rows_per_token),
            "kv_row": int(b.kv_row_bytes),
            "idx_row": int(b.indexer_row_bytes),
            "kv_fp8": int(kvb["fp8"].bytes_per_token),
            "kv_bf16": int(kvb["bf16"].bytes_per_token),
            "kv_verdict": self.kv_verdict,
            "weights_total_gb": self.weights.total_bytes / 1e9,
            "weight_gpus": int(self.params.weight_gpus),
            "w_per_gpu_gb": self.w_per_gpu / 1e9,
            "moe_layers": int(self.weights.moe_layers),
            "hbm_gb": self.hw.hbm_capacity_bytes / 1e9,
            "mem_frac": float(self.params.memory_fraction),
            "seq_lo_mb": float(at.loc[self.lo, "kv_bytes_per_sequence"]) / 1e6,
            "seq_hi_mb": float(at.loc[self.hi, "kv_bytes_per_sequence"]) / 1e6,
            "fit_lo": int(at.loc[self.lo, "sequences_per_gpu"]),
            "fit_hi": int(at.loc[self.hi, "sequences_per_gpu"]),
            "n_points": int(len(self.series)),
            "ctx_min": int(f.context_min),
            "ctx_max": int(f.context_max),
            "slope_1k": float(f.slope_per_1k),
            "intercept": float(f.intercept_ms),
            "r2": float(f.r2),
            "d_lo": int(d.lo),
            "d_hi": int(d.hi),
            "d_lo_ms": float(d.lo_ms),
            "d_hi_ms": float(d.hi_ms),
            "d_ms": float(d.delta_ms),
            "d_pct": float(d.delta_pct),
            "pair_note": self.pair_note,
            "extra_mb": self.kv.extra_bytes / 1e6,
            "floor_us": 1000 * self.floor.floor_ms,
            "idx_us": 1000 * self.floor.floor_ms * self.idx_share,
            "hbm_tbs": self.hw.hbm_bandwidth_bytes_per_s / 1e12,
            "batch": int(self.params.batch),
            "kv_gpus": int(self.params.n_gpus),
            "share_pct": 100 * self.floor.share,
            "seq_explain": float(self.floor.sequences_to_explain),
            "baseline_ms": float(self.floor.implied_baseline_ms),
            "floor_verdict": self.floor.verdict,
            "verdict": self.verdict,
            "v_delta": self.v_delta,
        }


def analyse(trace: Trace, params: Params = Params(), registry: Registry | None = None) -> Analysis:
    """The chapter's analysis: KV bytes per token at every dtype against the claimed bytes,
    memory per sequence over a grid of contexts, the trace's decode latency against context
    (main series, fit, delta between lo and hi or the longest pair it has) against the claimed
    delta, and the KV-read floor of lo -> hi against it. The published figures, their tolerances
    and (unless ``params.lo`` / ``params.hi`` are set) the pair of contexts come from the claims
    registry."""
    p = params
    reg = registry or load_claims()
    span = claimed_span(reg)
    lo = int(p.lo) if p.lo is not None else span[0]
    hi = int(p.hi) if p.hi is not None else span[1]
    claim_ms, claim_pct = reg.value(DELTA_ID), reg.value(DELTA_PCT_ID)
    tol_ms, tol_pct = reg.tolerance(DELTA_ID), reg.tolerance(DELTA_PCT_ID)
    m, hw = catalogs.load_model(p.model), catalogs.gpu(p.gpu)
    kvb = {d: roofline.kv_bytes(m, d) for d in catalogs.PRECISIONS}
    kv_v, kv_r = kv_bytes_verdict(kvb[p.kv_dtype].bytes_per_token, reg.value(KV_BYTES_ID))
    weights = weight_bytes_per_gpu(m, p.weight_gpus)
    w_per_gpu = float(
        weights.per_gpu_bytes if p.weight_bytes_per_gpu is None else p.weight_bytes_per_gpu
    )
    max_ctx = int(m.architecture.max_context_tokens or hi)
    grid = sorted({*np.linspace(max_ctx / 64, max_ctx, 64).astype(int).tolist(), lo, hi})
    memory = {
        d: memory_by_context(
            m, hw, grid, d, weight_bytes_per_gpu=w_per_gpu, memory_fraction=p.memory_fraction
        )
        for d in catalogs.PRECISIONS
    }
    table = decode_latency_by_context(trace)
    series = main_series(table)
    measured = delta(series, lo, hi)
    kv = kv_bandwidth_model(m, hw, lo, hi, p.kv_dtype, p.n_gpus, p.batch)
    hardware = hardware_label(trace.run)
    comparable = comparable_to_claim(trace.run)
    v_delta, r_delta = measured_verdict(
        measured, comparable, hardware, claim=claim_ms, tolerance=tol_ms
    )
    v_pct, r_pct = measured_verdict(
        measured, comparable, hardware, claim=claim_pct, tolerance=tol_pct, percent=True
    )
    return Analysis(
        trace=trace,
        params=p,
        claim_kv=reg.get(KV_BYTES_ID),
        claim_delta=reg.get(DELTA_ID),
        claim_pct=reg.get(DELTA_PCT_ID),
        lo=lo,
        hi=hi,
        model=m,
        hw=hw,
        kv_bytes=kvb,
        weights=weights,
        w_per_gpu=w_per_gpu,
        memory=memory,
        table=table,
        series=series,
        fit=fit_linear(series),
        measured=measured,
        kv=kv,
        floor=floor_vs_claim(kv, claim_ms, claim_pct, tol_ms),
        tolerance_ms=tol_ms,
        kv_verdict=kv_v,
        kv_reason=kv_r,
        v_delta=v_delta,
        r_delta=r_delta,
        v_pct=v_pct,
        r_pct=r_pct,
        hardware=hardware,
        kind=evidence_kind(trace.kind),
    )


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines and verdict (the headline JSON)."""
    p, d, f, fl = a.params, a.measured, a.fit, a.floor
    tid = [a.trace.trace_id]
    measured = dict(kind=a.kind, hardware=a.hardware, trace_ids=tid)
    floor_reading = dict(claim_id=DELTA_ID, kind="modelled", verdict=fl.verdict, reason=fl.reason)
    not_claimed = dict(claim_id=None, kind="modelled", verdict="not comparable")
    headlines = [
        headline.Headline(
            name="decode_delta",
            value=round(d.delta_ms, 4),
            unit="ms",
            definition=f"median TPOT at {d.hi:,} minus at {d.lo:,} tokens of context "
            f"({d.pair} pair)",
            claim_id=DELTA_ID,
            verdict=a.v_delta,
            reason=a.r_delta,
            **measured,
        ),
        headline.Headline(
            name="decode_delta_pct",
            value=round(d.delta_pct, 3),
            unit="%",
            definition=f"decode_delta over median TPOT at {d.lo:,} tokens",
            claim_id=DELTA_PCT_ID,
            verdict=a.v_pct,
            reason=a.r_pct,
            **measured,
        ),
        headline.Headline(
            name="kv_bytes_per_token",
            value=int(a.kv_bytes_per_token),
            unit="B/token",
            definition=f"global KV bytes per token at {p.kv_dtype}: rows/token x (KV + indexer "
            "row)",
            claim_id=KV_BYTES_ID,
            kind="modelled",
            verdict=a.kv_verdict,
            reason=a.kv_reason,
        ),
        headline.Headline(
            name="kv_read_floor",
            value=round(fl.floor_ms, 5),
            unit="ms",
            definition=f"least time to stream the extra global KV of {p.batch} sequence(s) "
            f"growing {a.lo:,} -> {a.hi:,} tokens at {p.n_gpus} x {p.gpu} HBM bandwidth",
            **floor_reading,
        ),
        headline.Headline(
            name="kv_read_share_of_claim",
            value=round(100 * fl.share, 2),
            unit="%",
            definition="kv_read_floor over the claimed delta",
            **floor_reading,
        ),
        headline.Headline(
            name="implied_latency_at_lo",
            value=round(fl.implied_baseline_ms, 3),
            unit="ms",
            definition=f"100 x claimed delta / claimed percent: decode latency at {a.lo:,} tokens",
            claim_id=DELTA_PCT_ID,
            kind="published",
            verdict="not comparable",
            reason="arithmetic on the two published figures; no baseline latency was published",
        ),
        headline.Headline(
            name="decode_slope",
            value=round(f.slope_per_1k, 5),
            unit="ms per 1k tokens",
            definition=f"least-squares slope of median TPOT over {f.n} contexts "
            f"{f.context_min:,}..{f.context_max:,} tokens",
            claim_id=None,
            verdict="not comparable",
            reason="the write-up gives a delta between two lengths, not a slope",
            **measured,
        ),
        headline.Headline(
            name="sequences_per_gpu_at_hi",
            value=int(a.at.loc[a.hi, "sequences_per_gpu"]),
            unit="sequences",
            definition=f"sequences of {a.hi:,} tokens whose {p.kv_dtype} KV fits on one {p.gpu} "
            f"after {a.w_per_gpu / 1e9:.1f} GB of weights, at {p.memory_fraction:g} of HBM",
            reason="the write-up gives no capacity figure",
            **not_claimed,
        ),
    ]
    headlines += [
        headline.Headline(
            name=f"kv_bytes_per_token_{dt}",
            value=int(b.bytes_per_token),
            unit="B/token",
            definition=f"global KV bytes per token with the same layout stored at {dt}",
            reason="the claim is for the FP4 cache; other dtypes for scale",
            **not_claimed,
        )
        for dt, b in a.kv_bytes.items()
        if dt != p.kv_dtype
    ]
    parameters = {
        "model": p.model,
        "gpu": p.gpu,
        "kv_dtype": p.kv_dtype,
        "lo": a.lo,
        "hi": a.hi,
        "batch": p.batch,
        "n_gpus": p.n_gpus,
        "weight_gpus": p.weight_gpus,
        "weight_bytes_per_gpu": a.w_per_gpu,
        "memory_fraction": p.memory_fraction,
    }
    return headline.Outcome(RESULT, headlines, a.verdict, a.reason, tid, parameters)
