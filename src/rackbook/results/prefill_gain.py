"""New-token prefill throughput with a cached prefix, the gain of one configuration over
another, and a roofline model of reading the cached prefix's KV.

Definitions (successful requests):

- cached tokens c = ``cached_prompt_tokens`` of the row; where the row lacks it, the scenario's
  prefix length (the ``prefix_tokens`` argument, else the first of :data:`PREFIX_PARAM_KEYS`
  found in ``run.json`` ``parameters``);
- new tokens n = prompt_tokens - c (tokens the server had to prefill; a request with n <= 0 is
  excluded: vLLM always computes at least the last prompt token);
- new-token prefill throughput of a request = n / TTFT (tokens/s). TTFT is measured by the
  client: it includes queueing, scheduling, tokenisation, the network, and the first token's
  sampling, so this is a lower bound on the server's prefill rate;
- per configuration: mean, median, p10 and p90 of the per-request throughputs, and the pooled
  rate sum(n) / sum(TTFT) (token-weighted);
- gain of B over A = stat(B) / stat(A) - 1, with a seeded bootstrap spread: requests of A and
  of B are resampled with replacement (independently) and the gain recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.provenance import hardware_label
from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Claim, Registry, load_claims
from rackbook.physics import roofline, units
from rackbook.results import headline, verdicts
from rackbook.results.verdicts import RangeVerdict

RESULT = "prefill-gain"
#: The claim this chapter tests (data/claims.yaml): a range in %, behind a cached prefix whose
#: length is the claim's scope (``scope.context_tokens``).
CLAIM_ID = "prefill-gain.gain"

#: run.json ``parameters`` keys read as the cached prefix length (tokens), in order. The last
#: two are ``vllm bench serve``'s ``--random-prefix-len`` and ``--prefix-repetition-prefix-len``.
PREFIX_PARAM_KEYS: tuple[str, ...] = (
    "prefix_tokens",
    "cached_prefix_tokens",
    "random_prefix_len",
    "prefix_repetition_prefix_len",
)

NEW_TOKEN_FORMULA = r"\text{new-token prefill tok/s} = \frac{p_i - c_i}{\mathrm{TTFT}_i}"
GAIN_FORMULA = r"\text{gain} = \frac{\operatorname{stat}_B}{\operatorname{stat}_A} - 1"
STATS: tuple[str, ...] = ("mean", "median", "pooled")


def _prefix_from_run(trace: Trace) -> tuple[int | None, str]:
    params = trace.run.get("parameters") or {}
    for k in PREFIX_PARAM_KEYS:
        v = params.get(k)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v % 1:
                where = trace.path or "run.json"
                raise InputError(where, f"parameters.{k}", f"must be a token count, got {v!r}")
            return int(v), f"run.json parameters.{k}"
    return None, ""


def new_token_prefill(trace: Trace, prefix_tokens: int | None = None) -> pd.DataFrame:
    """Per successful request: point_id, engine, config, prompt_tokens, cached_tokens,
    cached_source (``row`` | ``argument`` | ``run.json parameters.<key>``), new_tokens,
    ttft_s (s) and new_tok_s (tokens/s) = new_tokens / ttft_s; NaN where new_tokens <= 0 or
    ttft_s == 0.

    Raises :class:`InputError` when a row lacks ``cached_prompt_tokens`` and no prefix length is
    known (``prefix_tokens`` argument or run.json parameters).
    """
    req = trace.requests[trace.requests["success"]].reset_index(drop=True)
    cached = req["cached_prompt_tokens"]
    source = pd.Series("row", index=req.index, dtype="string")
    if cached.isna().any():
        if prefix_tokens is not None:
            if prefix_tokens < 0:
                raise InputError("-", "prefix_tokens", f"must be >= 0, got {prefix_tokens}")
            fill, how = prefix_tokens, "argument"
        else:
            fill, how = _prefix_from_run(trace)
        if fill is None:
            raise InputError(
                trace.path or "<trace>",
                "requests.cached_prompt_tokens",
                "missing and no prefix length known: pass prefix_tokens= or set run.json "
                f"parameters.{PREFIX_PARAM_KEYS[0]}",
            )
        source[cached.isna()] = how
        cached = cached.fillna(fill)
    cached = cached.astype("int64")
    new = req["prompt_tokens"].astype("int64") - cached
    ttft = req["ttft_s"].astype("float64")
    ok = (new > 0) & (ttft > 0)
    rate = (new / ttft.where(ttft > 0)).where(ok)
    return pd.DataFrame(
        {
            "point_id": req["point_id"],
            "engine": req["engine"],
            "config": req["config"],
            "prompt_tokens": req["prompt_tokens"].astype("int64"),
            "cached_tokens": cached,
            "cached_source": source,
            "new_tokens": new,
            "ttft_s": ttft,
            "new_tok_s": rate.astype("float64"),
        }
    )


def summary(table: pd.DataFrame, by: str = "config") -> pd.DataFrame:
    """Per value of ``by`` (default ``config``): requests used, excluded (n <= 0 or TTFT 0),
    mean / median / p10 / p90 of per-request new-token tok/s, spread = p90 - p10, pooled tok/s
    = sum(new_tokens) / sum(ttft_s), mean new and cached tokens."""
    rows = []
    for key, g in table.groupby(by, sort=True):
        ok = g[g["new_tok_s"].notna()]
        v = ok["new_tok_s"].to_numpy(np.float64)
        have = v.size > 0
        p10, p90 = np.percentile(v, [10, 90]) if have else (np.nan, np.nan)
        rows.append(
            {
                by: key,
                "requests": int(v.size),
                "excluded": int(len(g) - v.size),
                "mean_tok_s": float(v.mean()) if have else np.nan,
                "median_tok_s": float(np.median(v)) if have else np.nan,
                "p10_tok_s": float(p10),
                "p90_tok_s": float(p90),
                "spread_tok_s": float(p90 - p10),
                "pooled_tok_s": float(ok["new_tokens"].sum() / ok["ttft_s"].sum())
                if have
                else np.nan,
                "mean_new_tokens": float(ok["new_tokens"].mean()) if have else np.nan,
                "mean_cached_tokens": float(ok["cached_tokens"].mean()) if have else np.nan,
            }
        )
    return pd.DataFrame(rows)


def _stat(new: np.ndarray, ttft: np.ndarray, stat: str) -> np.ndarray:
    """``stat`` along the last axis of per-request arrays (shape (..., n))."""
    if stat == "mean":
        return (new / ttft).mean(axis=-1)
    if stat == "median":
        return np.median(new / ttft, axis=-1)
    return new.sum(axis=-1) / ttft.sum(axis=-1)


@dataclass(frozen=True)
class Gain:
    """Gain of configuration ``b`` over ``a``: ``gain`` = stat(B) / stat(A) - 1 (fraction),
    with the bootstrap percentile interval [``low``, ``high``] at ``level``."""

    a: str
    b: str
    stat: str
    a_tok_s: float
    b_tok_s: float
    gain: float
    low: float
    high: float
    level: float
    n_a: int
    n_b: int
    n_boot: int
    seed: int
    formula: str

    def __float__(self) -> float:
        return self.gain


def gain(
    table: pd.DataFrame,
    a: str,
    b: str,
    *,
    stat: str = "median",
    by: str = "config",
    n_boot: int = 2000,
    level: float = 0.90,
    seed: int = 0,
) -> Gain:
    """Gain of ``b`` over ``a`` (rows of :func:`new_token_prefill` with ``by`` == a or b):
    stat(B) / stat(A) - 1, stat one of ``mean`` / ``median`` of per-request new-token tok/s or
    ``pooled`` = sum(new) / sum(TTFT). Spread: ``n_boot`` bootstrap resamples (numpy
    ``default_rng(seed)``), each drawing A's and B's requests with replacement; ``low``/``high``
    are the (1 - level) / 2 and (1 + level) / 2 percentiles of the resampled gains."""
    if stat not in STATS:
        raise InputError("-", "stat", f"{stat!r} is not one of {', '.join(STATS)}")
    if not 0 < level < 1:
        raise InputError("-", "level", f"must be in (0, 1), got {level}")
    if n_boot < 1:
        raise InputError("-", "n_boot", f"must be >= 1, got {n_boot}")
    arrays = {}
    for name in (a, b):
        g = table[(table[by] == name) & table["new_tok_s"].notna()]
        if g.empty:
            raise InputError("-", by, f"no usable request with {by} = {name!r}")
        arrays[name] = (
            g["new_tokens"].to_numpy(np.float64),
            g["ttft_s"].to_numpy(np.float64),
        )
    (na, ta), (nb, tb) = arrays[a], arrays[b]
    sa, sb = float(_stat(na, ta, stat)), float(_stat(nb, tb, stat))
    g0 = sb / sa - 1
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, na.size, size=(n_boot, na.size))
    ib = rng.integers(0, nb.size, size=(n_boot, nb.size))
    boot = _stat(nb[ib], tb[ib], stat) / _stat(na[ia], ta[ia], stat) - 1
    lo, hi = np.percentile(boot, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    formula = (
        f"{stat} new-token tok/s: {b} {sb:,.4g} / {a} {sa:,.4g} - 1 = {g0:+.1%} "
        f"({level:.0%} bootstrap interval {lo:+.1%} .. {hi:+.1%}; {n_boot} resamples, seed "
        f"{seed}; {na.size} vs {nb.size} requests)"
    )
    return Gain(
        a, b, stat, sa, sb, g0, float(lo), float(hi), level, na.size, nb.size, n_boot, seed, formula
    )


def verdict_range(g: Gain | float, low: float, high: float) -> RangeVerdict:
    """Compare a gain (fraction; a :class:`Gain` brings its interval) with [``low``, ``high``]."""
    if not low < high:
        raise InputError("-", "high", f"must be above low ({low}), got {high}")
    if isinstance(g, Gain):
        x, lo, hi = g.gain, g.low, g.high
    else:
        x = lo = hi = float(g)
    inside = low <= x <= high
    overlaps = lo <= high and hi >= low
    if inside:
        v = "inside"
    elif overlaps:
        v = "consistent"
    elif hi < low:
        v = "below"
    else:
        v = "above"
    text = (
        f"measured {x:+.1%} (interval {lo:+.1%} .. {hi:+.1%}) vs published "
        f"{low:+.0%} .. {high:+.0%}: {v}"
    )
    return RangeVerdict(v, inside, overlaps, text)


# ----------------------------------------------------------------------------- roofline


@dataclass(frozen=True)
class PrefixRead:
    """Per new prefill token with a cached prefix: bytes of prefix KV read, the time to read
    them, the compute floor, and the resulting tokens/s ceiling (seconds, bytes, tokens/s)."""

    prefix_tokens: int
    kv_bytes_per_new_token: float
    read_s_per_new_token: float
    compute_s_per_new_token: float
    tokens_per_s: float
    bound: str
    formula: str

    def __float__(self) -> float:
        return self.tokens_per_s


def prefix_read_model(
    model: ModelSpec | str,
    hw: GpuSpec | str,
    prefix_tokens: int,
    *,
    kv_dtype: str = "fp4",
    precision: str = "fp4",
    n_gpus: int = 1,
    reuse_tokens: int = 1,
) -> PrefixRead:
    """A simple model of prefilling new tokens after a cached prefix.

    Each new token's attention and indexer read the prefix's global KV once:
    bytes per new token = prefix_tokens x KV bytes/token
    (:func:`rackbook.physics.roofline.kv_bytes`)
    / ``reuse_tokens`` (new tokens that share one read, e.g. a chunk read once; 1 = no reuse, an
    upper bound on traffic). Read time = those bytes / (n_gpus x HBM bytes/s)
    (:func:`rackbook.physics.roofline.kv_read_time_s`); compute time = prefill FLOP per token /
    (n_gpus x
    dense FLOP/s) (:func:`rackbook.physics.roofline.compute_ceiling_tokens_per_s`); tokens/s
    ceiling =
    1 / max(read, compute) (the two overlap at best). Ignores sparse attention's top-k selection,
    the sliding-window cache, and attention FLOP (which also grow with the prefix).

    DeepSeek-V4.1-Flash behind the claim's cached prefix (tests/test_prefill_gain.py), FP4 KV,
    one B300, no reuse: the read takes about 13 times the compute time per new token (8e9 x 2
    FLOP / 15 PFLOP/s).
    """
    m = catalogs.as_model(model)
    if reuse_tokens < 1:
        raise InputError("-", "reuse_tokens", f"must be >= 1, got {reuse_tokens}")
    read = roofline.kv_read_time_s(prefix_tokens, m, hw, kv_dtype, n_gpus)
    comp = roofline.compute_ceiling_tokens_per_s(m, hw, precision, "prefill", n_gpus)
    read_s = read.seconds / reuse_tokens
    comp_s = 1 / comp.tokens_per_s
    per_tok = read.bytes / reuse_tokens
    bound = "KV read" if read_s >= comp_s else "compute"
    tps = 1 / max(read_s, comp_s)
    formula = (
        f"KV read per {reuse_tokens} new token(s): {read.formula}; per new token "
        f"{units.fmt(per_tok, 'B')} -> {read_s * 1e6:.4g} us; compute {comp.formula} -> "
        f"{comp_s * 1e6:.4g} us/token; ceiling 1 / max = {tps:,.0f} new tokens/s ({bound} bound)"
    )
    return PrefixRead(prefix_tokens, per_tok, read_s, comp_s, tps, bound, formula)


# --------------------------------------------------------------------------------------------
# The chapter

#: Cached prefixes (tokens) of the roofline curve: 40 points from 1,000 to 2^20, log-spaced.
CURVE_PREFIXES: tuple[int, ...] = tuple(
    int(p) for p in np.unique(np.geomspace(1_000, 1_048_576, 40).astype(int))
)


def comparable_to_claim(
    run: dict[str, Any], trace_prefix: int, claim_prefix: int, rel_tol: float
) -> bool:
    """True when the trace can speak to the claim: it ran on Blackwell GPUs and its mean cached
    prefix is within ``rel_tol`` (a fraction) of the claim's."""
    return verdicts.on_gpus(run, verdicts.BLACKWELL) and (
        abs(trace_prefix / claim_prefix - 1) <= rel_tol
    )


@dataclass(frozen=True)
class Params(headline.Params):
    """The chapter's analysis parameters (the notebook's ``parameters`` cell): the cached prefix
    assumed for requests lacking ``cached_prompt_tokens`` (``None``: run.json), the config labels
    of A (reference) and B (changed), the statistic of per-request throughput, the bootstrap
    (resamples, interval level, seed), the roofline's model, GPU, KV dtype, FLOP precision and
    GPUs per prefill, and how close (fraction) the trace's cached prefix must be to the claim's
    to compare. ``n_boot``, ``level`` and ``seed`` are not notebook parameters (the parameters
    cell holds at most 20 lines): set them here."""

    assume_prefix_tokens: int | None = None
    config_a: str = "A"
    config_b: str = "B"
    stat: str = "median"
    n_boot: int = 2000
    level: float = 0.90
    seed: int = 0
    model_id: str = "deepseek-v4.1-flash"
    gpu_id: str = "b300"
    kv_dtype: str = "fp4"
    precision: str = "fp4"
    prefill_gpus: int = 1
    rel_tol: float = 0.10


@dataclass
class Analysis:
    """Everything the chapter shows: the per-request table and its summary per configuration,
    the gain of B over A with its bootstrap interval against the published range, the prefix-read
    roofline behind the claim's cached prefix (and its curve over prefix lengths), the verdict,
    and the values its prose quotes."""

    trace: Trace
    params: Params
    claim: Claim
    claim_low: float
    claim_high: float
    claim_prefix: int
    table: pd.DataFrame
    summary: pd.DataFrame
    gain: Gain
    range_verdict: RangeVerdict
    trace_prefix: int
    trace_new: int
    read_no_reuse: PrefixRead
    read_reuse: PrefixRead
    curve: pd.DataFrame
    comparable: bool
    verdict: str
    reason: str
    hardware: str

    def stat_tok_s(self, config: str) -> float:
        """The chosen statistic of per-request new-token tok/s of ``config``."""
        return float(self.summary.set_index("config").loc[config, f"{self.params.stat}_tok_s"])

    def cached_sources(self) -> str:
        """Where the cached-token counts came from, with the number of requests of each."""
        counts = self.table["cached_source"].value_counts()
        return ", ".join(f"{k} ({v} requests)" for k, v in counts.items())

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        p, m = self.params, self.read_no_reuse
        return {
            "claim_low_pct": self.claim.values.low if self.claim.values else None,
            "claim_high_pct": self.claim.values.high if self.claim.values else None,
            "claim_prefix": self.claim_prefix,
            "hardware": self.hardware,
            "trace_kind": self.trace.kind,
            "mean_new_tokens": float(self.table["new_tokens"].mean()),
            "mean_cached_tokens": float(self.table["cached_tokens"].mean()),
            "a_tok_s": self.stat_tok_s(p.config_a),
            "b_tok_s": self.stat_tok_s(p.config_b),
            "stat": p.stat,
            "gain_pct": 100 * self.gain.gain,
            "gain_low_pct": 100 * self.gain.low,
            "gain_high_pct": 100 * self.gain.high,
            "level_pct": 100 * self.gain.level,
            "range_verdict": self.range_verdict.verdict,
            "kv_mb_per_new_token": m.kv_bytes_per_new_token / 1e6,
            "read_us": 1e6 * m.read_s_per_new_token,
            "compute_us": 1e6 * m.compute_s_per_new_token,
            "read_over_compute": m.read_s_per_new_token / m.compute_s_per_new_token,
            "ceiling_no_reuse": m.tokens_per_s,
            "trace_new": self.trace_new,
            "ceiling_reuse": self.read_reuse.tokens_per_s,
            "bound_reuse": self.read_reuse.bound,
            "verdict": self.verdict,
        }


def analyse(trace: Trace, params: Params = Params(), registry: Registry | None = None) -> Analysis:
    """New-token throughput per request and per configuration, the gain of B over A with its
    bootstrap interval against the published range, and the prefix-read roofline behind the
    claim's cached prefix (range and prefix from the claims registry)."""
    reg = registry or load_claims()
    claim = reg.get(CLAIM_ID)
    rng = reg.range(CLAIM_ID)
    low, high = rng.low / 100, rng.high / 100
    if claim.scope.context_tokens is None:
        raise InputError("claims", f"claims[{CLAIM_ID}].scope.context_tokens", "required")
    claim_prefix = claim.scope.context_tokens.high
    p = params
    table = new_token_prefill(trace, p.assume_prefix_tokens)
    summ = summary(table)
    g = gain(
        table, p.config_a, p.config_b, stat=p.stat, n_boot=p.n_boot, level=p.level, seed=p.seed
    )
    rv = verdict_range(g, low, high)
    trace_prefix = int(round(table["cached_tokens"].mean()))
    trace_new = max(1, int(round(table["new_tokens"].mean())))
    model, gpu = catalogs.as_model(p.model_id), catalogs.as_gpu(p.gpu_id)  # read once

    def read(prefix: int, reuse: int = 1) -> PrefixRead:
        return prefix_read_model(
            model,
            gpu,
            prefix,
            kv_dtype=p.kv_dtype,
            precision=p.precision,
            n_gpus=p.prefill_gpus,
            reuse_tokens=reuse,
        )

    curve = pd.DataFrame(
        [
            {"prefix": pre, "reuse": r, "tok_s": read(pre, r).tokens_per_s}
            for r in (1, trace_new)
            for pre in CURVE_PREFIXES
        ]
    )
    comparable = comparable_to_claim(trace.run, trace_prefix, claim_prefix, p.rel_tol)
    target = f"Blackwell GPUs with {claim_prefix:,} cached tokens"
    v, why = verdicts.gain_verdict(rv, comparable, target, trace.run)
    return Analysis(
        trace,
        p,
        claim,
        low,
        high,
        claim_prefix,
        table,
        summ,
        g,
        rv,
        trace_prefix,
        trace_new,
        read(claim_prefix),
        read(claim_prefix, trace_new),
        curve,
        comparable,
        v,
        why,
        hardware_label(trace.run),
    )


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines and verdict (the headline JSON)."""
    p, g, num = a.params, a.gain, verdicts.number
    tid = [a.trace.trace_id]
    measured = dict(kind="measured", hardware=a.hardware, trace_ids=tid)
    on_claim = dict(claim_id=CLAIM_ID, verdict=a.verdict, reason=a.reason, **measured)
    no_claim = dict(claim_id=None, verdict="not comparable", **measured)
    absolute = "the write-up gives no absolute throughput"
    headlines = [
        headline.Headline(
            name="gain",
            value=num(100 * g.gain, 2),
            unit="%",
            definition=f"{p.stat} new-token prefill tok/s of {p.config_b} / {p.config_a} - 1; "
            "new tokens = prompt - cached, over TTFT",
            **on_claim,
        ),
        headline.Headline(
            name="gain_interval_low",
            value=num(100 * g.low, 2),
            unit="%",
            definition=f"lower end of the {g.level:.0%} bootstrap interval of the gain "
            f"({g.n_boot} resamples, seed {g.seed})",
            **on_claim,
        ),
        headline.Headline(
            name="gain_interval_high",
            value=num(100 * g.high, 2),
            unit="%",
            definition=f"upper end of the {g.level:.0%} bootstrap interval of the gain",
            **on_claim,
        ),
        headline.Headline(
            name="new_token_tok_s_a",
            value=num(g.a_tok_s, 2),
            unit="tok/s",
            definition=f"{p.stat} new-token prefill throughput per request, config {p.config_a}",
            reason=absolute,
            **no_claim,
        ),
        headline.Headline(
            name="new_token_tok_s_b",
            value=num(g.b_tok_s, 2),
            unit="tok/s",
            definition=f"{p.stat} new-token prefill throughput per request, config {p.config_b}",
            reason=absolute,
            **no_claim,
        ),
        headline.Headline(
            name="mean_cached_tokens",
            value=num(a.table["cached_tokens"].mean(), 1),
            unit="tokens",
            definition="mean cached prompt tokens per request (the prefix P)",
            reason=f"the claim's prefix is {a.claim_prefix:,} tokens",
            **no_claim,
        ),
        headline.Headline(
            name="prefix_read_ceiling_no_reuse",
            value=num(a.read_no_reuse.tokens_per_s, 1),
            unit="tok/s",
            definition=f"new-token prefill ceiling behind {a.claim_prefix:,} cached tokens, "
            f"{p.prefill_gpus} x {p.gpu_id}, {p.kv_dtype} KV, each new token reading the prefix",
            claim_id=None,
            kind="modelled",
            verdict="not comparable",
            reason="a ceiling on throughput, not a gain",
        ),
    ]
    parameters = {
        "config_a": p.config_a,
        "config_b": p.config_b,
        "stat": p.stat,
        "n_boot": p.n_boot,
        "level": p.level,
        "seed": p.seed,
        "assume_prefix_tokens": p.assume_prefix_tokens,
        "model_id": p.model_id,
        "gpu_id": p.gpu_id,
        "kv_dtype": p.kv_dtype,
        "precision": p.precision,
        "prefill_gpus": p.prefill_gpus,
    }
    return headline.Outcome(RESULT, headlines, a.verdict, a.reason, tid, parameters)
