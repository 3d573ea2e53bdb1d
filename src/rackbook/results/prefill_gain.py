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

import numpy as np
import pandas as pd

from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics import roofline, units
from rackbook.results.verdicts import RangeVerdict

#: run.json ``parameters`` keys read as the cached prefix length (tokens), in order. The last
#: two are ``vllm bench serve``'s ``--random-prefix-len`` and ``--prefix-repetition-prefix-len``.
PREFIX_PARAM_KEYS: tuple[str, ...] = (
    "prefix_tokens",
    "cached_prefix_tokens",
    "random_prefix_len",
    "prefix_repetition_prefix_len",
)

#: The published range (data/claims.yaml: prefill-gain.gain), as fractions.
CLAIM_LOW, CLAIM_HIGH = 0.35, 0.44
CLAIM_PREFIX_TOKENS = 128_000

NEW_TOKEN_FORMULA = r"\text{new-token prefill tok/s} = \frac{p_i - c_i}{\mathrm{TTFT}_i}"
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


def verdict_range(
    g: Gain | float, low: float = CLAIM_LOW, high: float = CLAIM_HIGH
) -> RangeVerdict:
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
    prefix_tokens: int = CLAIM_PREFIX_TOKENS,
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

    DeepSeek-V4.1-Flash, 128,000 cached tokens, FP4 KV, one B300, no reuse: 113.9 MB per new
    token, 14.24 us, against 1.067 us of compute (8e9 x 2 FLOP / 15 PFLOP/s).
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
