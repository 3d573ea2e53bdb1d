"""New-token prefill tok/s behind a cached prefix (new tokens / TTFT, a lower bound), the gain of
B over A (stat(B) / stat(A) - 1, bootstrap interval), and a roofline of reading the prefix's KV."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.traces import Trace
from rackbook.core.units import percent, ratio_text
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.inputs.claims import Registry
from rackbook.physics import check, results_bounds
from rackbook.physics.results_bounds import prefix_read_model, removable_share
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts
from rackbook.results.verdicts import RangeVerdict

RESULT = "prefill-gain"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.prefill_gain``).
FIGURES: tuple[str, ...] = ("fig_distribution", "fig_gain", "fig_ceiling")
#: The claim (a range in %) behind a cached prefix of its ``scope.context_tokens``.
CLAIM_ID = "prefill-gain.gain"

#: run.json ``parameters`` keys read as the cached prefix length (tokens), in order; the last two
#: are ``vllm bench serve``'s ``--random-prefix-len`` and ``--prefix-repetition-prefix-len``.
PREFIX_PARAM_KEYS: tuple[str, ...] = (
    "prefix_tokens",
    "cached_prefix_tokens",
    "random_prefix_len",
    "prefix_repetition_prefix_len",
)

NEW_TOKEN_FORMULA = r"\text{new-token prefill tok/s} = \frac{p_i - c_i}{\mathrm{TTFT}_i}"
GAIN_FORMULA = r"\text{gain} = \frac{\operatorname{stat}_B}{\operatorname{stat}_A} - 1"


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
    """Per successful request: cached tokens (the row's, else ``prefix_tokens``, else run.json's),
    new tokens, ttft_s (s) and new_tok_s (tok/s; NaN unless new tokens and TTFT > 0)."""
    req = trace.requests[trace.requests["success"]].reset_index(drop=True)
    cached = req["cached_prompt_tokens"]
    source = pd.Series("row", index=req.index, dtype="string")
    if cached.isna().any():
        given = (prefix_tokens, "argument") if prefix_tokens is not None else None
        fill, how = given or _prefix_from_run(trace)
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
    prompt = req["prompt_tokens"].astype("int64")
    new, ttft = prompt - cached, req["ttft_s"].astype("float64")
    rate = (new / ttft.where(ttft > 0)).where((new > 0) & (ttft > 0)).astype("float64")
    out = req[["point_id", "engine", "config"]].assign(prompt_tokens=prompt, cached_tokens=cached)
    return out.assign(cached_source=source, new_tokens=new, ttft_s=ttft, new_tok_s=rate)


def _stat(new: np.ndarray, ttft: np.ndarray, stat: str) -> np.ndarray:
    if stat == "mean":
        return (new / ttft).mean(axis=-1)
    if stat == "median":
        return np.median(new / ttft, axis=-1)
    return new.sum(axis=-1) / ttft.sum(axis=-1)


def _requests(table: pd.DataFrame, config: str) -> tuple[np.ndarray, np.ndarray]:
    """New tokens and TTFT (s) of ``config``'s usable requests."""
    g = table[(table["config"] == config) & table["new_tok_s"].notna()]
    return g["new_tokens"].to_numpy(np.float64), g["ttft_s"].to_numpy(np.float64)


def stat_tok_s(table: pd.DataFrame, config: str, stat: str) -> float:
    """The ``stat`` (mean, median or pooled) of ``config``'s new-token tok/s (NaN: no request)."""
    new, ttft = _requests(table, config)
    return float(_stat(new, ttft, stat)) if new.size else np.nan


@dataclass(frozen=True)
class Gain:
    """stat(B) / stat(A) - 1 (fraction) with its bootstrap interval [``low``, ``high``]."""

    gain: float
    low: float
    high: float
    level: float
    n_a: int
    n_b: int
    n_boot: int
    seed: int


def gain(
    table: pd.DataFrame,
    a: str,
    b: str,
    *,
    stat: str = "median",
    n_boot: int = 2000,
    level: float = 0.90,
    seed: int = 0,
) -> Gain:
    """Gain of ``b`` over ``a`` with the ``level`` interval of ``n_boot`` bootstrap resamples
    (``default_rng(seed)``; A and B drawn independently)."""
    (na, ta), (nb, tb) = arrays = _requests(table, a), _requests(table, b)
    for name, (new, _) in zip((a, b), arrays, strict=True):
        if not new.size:
            raise InputError("-", "config", f"no usable request with config = {name!r}")
    g0 = float(_stat(nb, tb, stat)) / float(_stat(na, ta, stat)) - 1
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, na.size, size=(n_boot, na.size))
    ib = rng.integers(0, nb.size, size=(n_boot, nb.size))
    boot = _stat(nb[ib], tb[ib], stat) / _stat(na[ia], ta[ia], stat) - 1
    lo, hi = np.percentile(boot, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return Gain(g0, float(lo), float(hi), level, na.size, nb.size, n_boot, seed)


def verdict_range(g: Gain | float, low: float, high: float) -> RangeVerdict:
    """Compare a gain (fraction; a :class:`Gain` brings its interval) with [``low``, ``high``]."""
    x, lo, hi = (g.gain, g.low, g.high) if isinstance(g, Gain) else (float(g),) * 3
    inside = low <= x <= high
    overlaps = lo <= high and hi >= low
    v = "inside" if inside else "consistent" if overlaps else "below" if hi < low else "above"
    text = (
        f"measured {percent(x, sign=True)} (interval {percent(lo, sign=True)} .. "
        f"{percent(hi, sign=True)}) vs published "
        f"{percent(low, 0, sign=True)} .. {percent(high, 0, sign=True)}: {v}"
    )
    return RangeVerdict(v, inside, overlaps, text)


def gain_attainable(
    model: ModelSpec, gpu: GpuSpec, gpus: int, prefix: int, high: float, baseline: float | None
) -> dict[str, Any]:
    """What measured kernels reach behind ``prefix`` cached tokens (ratio None: no baseline)."""
    claimed = baseline * (1 + high) / gpus if baseline else 1.0
    a = verdicts.attainable(
        check.check_claim(model, gpu, gpus, claimed, phase="prefill", context=prefix)
    )
    if baseline:
        return {**a, "text": f"the gained throughput {a['text']}"}
    text = (
        f"measured kernels reach {a['tok_s_per_gpu']:,.0f} new tok/s per GPU behind {prefix:,} "
        f"cached tokens ({a['deployment']}; {a['calibration']}); without the baseline's "
        "throughput no gain can be set against it"
    )
    return {**a, "ratio": None, "text": text}


def gain_physics(
    low: float,
    high: float,
    removable: float,
    how: str,
    *,
    baseline_tok_s: float | None = None,
    bound_tok_s: float | None = None,
    bound_how: str = "",
    attainable: dict[str, Any] | None = None,
) -> headline.ClaimReading:
    """Physics of a gain of ``low`` .. ``high`` (fractions): undetermined without the baseline
    (new tok/s per GPU), else baseline x (1 + high) against ``bound_tok_s``."""
    need_lo, need_hi = 1 - 1 / (1 + low), 1 - 1 / (1 + high)
    cap = 1 / (1 - removable) - 1 if removable < 1 else float("inf")
    assumed = (
        f"at equal kernel efficiency before and after (an assumption, not physics), +"
        f"{percent(low, 0)} to +{percent(high, 0)} on new tokens removes {percent(need_lo)} to "
        f"{percent(need_hi)} of their time, and running the decoder layers on the last window "
        f"only removes up to {percent(removable)} of it ({how}): gains up to +{percent(cap, 0)} "
        "need no faster kernels"
    )
    v, margin = "undetermined", "no baseline throughput published"
    why = "a bound caps a throughput, not a gain: the baseline's absolute new-token throughput "
    why += "is not published, and a slow enough baseline makes any gain reachable"
    if baseline_tok_s is not None and bound_tok_s is not None:
        after = baseline_tok_s * (1 + high)
        ratio = after / bound_tok_s
        why = f"a baseline of {baseline_tok_s:,.0f} new tok/s per GPU x (1 + {percent(high, 0)})"
        why += f" = {after:,.0f}, {ratio_text(ratio)} the {bound_tok_s:,.0f} new-token bound "
        why += f"({bound_how})"
        v, margin = check.physics_verdict(ratio), f"{ratio_text(ratio)} the new-token bound"
    return common.reading(CLAIM_ID, "physics", v, margin, [why, assumed], attainable=attainable)


#: Cached prefixes (tokens) of the roofline curve: 40 points from 1,000 to 2^20, log-spaced.
CURVE_PREFIXES: tuple[int, ...] = tuple(
    int(p) for p in np.unique(np.geomspace(1_000, 1_048_576, 40).astype(int))
)


def can_test(run: dict[str, Any], trace_prefix: int, claim_prefix: int, rel_tol: float) -> bool:
    """A recording on Blackwell GPUs, its cached prefix within ``rel_tol`` of the claim's."""
    return verdicts.can_test(run, verdicts.BLACKWELL) and (
        abs(trace_prefix / claim_prefix - 1) <= rel_tol
    )


def run_reading(
    rv: RangeVerdict | None, testable: bool, run: dict[str, Any], claim_prefix: int, missing: str
) -> headline.ClaimReading:
    """Consistent when inside or overlapping, else inconsistent; untested if not testable."""
    if rv is None:
        return headline.ClaimReading(CLAIM_ID, "this run", "untested", "-", missing)
    if not testable:
        needs = f"Blackwell GPUs serving DeepSeek-V4.1-Flash behind {claim_prefix:,} cached tokens"
        return verdicts.untested(CLAIM_ID, run, rv.text, needs)
    v = "consistent" if rv.verdict in ("inside", "consistent") else "inconsistent"
    return headline.ClaimReading(CLAIM_ID, "this run", v, rv.verdict, rv.text)


#: The notebook's ``parameters`` and the bootstrap's (not notebook parameters).
Params = headline.params(RESULT, n_boot=2000, level=0.90, seed=0)
REPORTED = "assume_prefix_tokens config_a config_b stat model_id gpu_id kv_dtype prefill_gpus "
REPORTED += "rel_tol baseline_tok_s n_boot level seed"


class Analysis(common.Chapter):
    """Per-request table, gain, prefix-read roofline (new tok/s) and readings."""

    PARAMS = Params

    def analyse(self, p: Any, reg: Registry) -> None:
        trace = self.trace
        self.claim = claim = reg.get(CLAIM_ID)
        rng = reg.range(CLAIM_ID)
        self.claim_low, self.claim_high = low, high = rng.low / 100, rng.high / 100
        if claim.scope.context_tokens is None:
            raise InputError("claims", f"claims[{CLAIM_ID}].scope.context_tokens", "required")
        self.claim_prefix = prefix = claim.scope.context_tokens.high
        self.table = table = new_token_prefill(trace, p.assume_prefix_tokens)
        lacking = [c for c in (p.config_a, p.config_b) if not _requests(table, c)[0].size]
        kw: dict[str, Any] = dict(stat=p.stat, n_boot=p.n_boot, level=p.level, seed=p.seed)
        self.gain = None if lacking else gain(table, p.config_a, p.config_b, **kw)
        self.range_verdict = verdict_range(self.gain, low, high) if self.gain else None
        need = "record both configurations behind the same cached prefix"
        self.missing = f"no usable request of configuration {' or '.join(lacking)}: {need}"
        self.missing = self.missing if lacking else ""
        self.trace_prefix = int(round(table["cached_tokens"].mean())) if len(table) else 0
        self.trace_new = new = max(1, int(round(table["new_tokens"].mean()))) if len(table) else 1
        model, gpu = catalogs.as_model(p.model_id), catalogs.as_gpu(p.gpu_id)  # read once

        read = functools.partial(
            prefix_read_model, model, gpu, kv_dtype=p.kv_dtype, n_gpus=p.prefill_gpus
        )
        self.read_no_reuse, self.read_reuse = read(prefix), read(prefix, reuse_tokens=new)
        #: behind the claim's prefix, check.PREFILL_CHUNK new tokens sharing one read of it
        self.bound = bound = read(prefix, reuse_tokens=check.PREFILL_CHUNK)
        curve = [(pre, r, read(pre, reuse_tokens=r)) for r in (1, new) for pre in CURVE_PREFIXES]
        self.curve = pd.DataFrame(
            [(pre, r, x.tokens_per_s, x.dense_tokens_per_s) for pre, r, x in curve],
            columns=["prefix", "reuse", "tok_s", "dense_tok_s"],
        )
        self.removable, how = removable_share(model, gpu, prefix, p.kv_dtype)
        self.testable = can_test(trace.run, self.trace_prefix, prefix, p.rel_tol)
        run = run_reading(self.range_verdict, self.testable, trace.run, prefix, self.missing)
        bound_how = (
            f"{p.prefill_gpus} x {gpu.id} behind {prefix:,} cached tokens, "
            f"{check.PREFILL_CHUNK} new tokens sharing one read of the prefix"
        )
        attainable = gain_attainable(model, gpu, p.prefill_gpus, prefix, high, p.baseline_tok_s)
        kw = dict(baseline_tok_s=p.baseline_tok_s, bound_tok_s=bound.tokens_per_s)
        kw |= dict(bound_how=bound_how, attainable=attainable)
        physics = gain_physics(low, high, self.removable, how, **kw)
        self.readings = common.readings(reg, (physics, run))

    def batched_tokens(self, which: str) -> int | str:
        """``--max-num-batched-tokens`` in :meth:`serve_args`, else ``vLLM's default``."""
        m = re.search(r"--max-num-batched-tokens[= ](\d+)", self.serve_args(which))
        return int(m.group(1)) if m else "vLLM's default"

    def serve_args(self, which: str) -> str:
        """run.json ``parameters.serve_args_<which>`` (``a`` or ``b``), else ``not recorded``."""
        v = (self.trace.run.get("parameters") or {}).get(f"serve_args_{which}")
        return str(v) if v else "not recorded"

    def stat_tok_s(self, config: str) -> float:
        """The chosen statistic of per-request new-token tok/s of ``config`` (NaN if absent)."""
        return stat_tok_s(self.table, config, self.params.stat)

    def cached_sources(self) -> str:
        """Where the cached-token counts came from, with the number of requests of each."""
        counts = self.table["cached_source"].value_counts(sort=False)
        # most requests first; equal counts by name (value_counts' own sort leaves ties unordered)
        counts = counts.sort_index(kind="stable").sort_values(ascending=False, kind="stable")
        return ", ".join(f"{k} ({v} requests)" for k, v in counts.items())

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        p, m, g, nan = self.params, self.read_no_reuse, self.gain, float("nan")
        reuse = self.read_reuse
        return {
            "claim_low_pct": self.claim.values.low if self.claim.values else None,
            "claim_high_pct": self.claim.values.high if self.claim.values else None,
            "claim_prefix": self.claim_prefix,
            "mean_new_tokens": float(self.table["new_tokens"].mean()),
            "mean_cached_tokens": float(self.table["cached_tokens"].mean()),
            **{f"{w}_tok_s": self.stat_tok_s(c) for w, c in (("a", p.config_a), ("b", p.config_b))},
            "stat": p.stat,
            "gain_pct": 100 * g.gain if g else nan,
            **{f"gain_{k}_pct": 100 * getattr(g, k) if g else nan for k in ("low", "high")},
            "level_pct": 100 * (g.level if g else p.level),
            "range_verdict": self.range_verdict.verdict if self.range_verdict else "untested",
            "sparse_mb_per_new_token": m.sparse_bytes_per_new_token / 1e6,
            "sparse_read_us": 1e6 * m.sparse_read_s,
            "compute_us": 1e6 * m.compute_s_per_new_token,
            "ceiling_no_reuse": m.tokens_per_s,
            "trace_new": self.trace_new,
            "reuse_change": (
                f"it rises to {reuse.tokens_per_s:,.0f} ({reuse.bound} bound)"
                if round(reuse.tokens_per_s) > round(m.tokens_per_s)
                else f"it stays there: the {reuse.bound} bound binds either way"
            ),
            "removable_pct": 100 * self.removable,
            "need_low_pct": 100 * (1 - 1 / (1 + self.claim_low)),
            "need_high_pct": 100 * (1 - 1 / (1 + self.claim_high)),
            **{f"batched_tokens_{w}": self.batched_tokens(w) for w in ("a", "b")},
            "gpu_name": catalogs.as_gpu(p.gpu_id).name,
            "read_over_compute": m.sparse_read_s / m.compute_s_per_new_token,
            "v_physics": self.readings[0].verdict,
        }


analyse = Analysis


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, the claim's three readings and what would flip them."""
    return common.outcome(RESULT, a, _headlines(a), _flips(a), REPORTED)


def _headlines(a: Analysis) -> list[headline.Headline]:
    p, g, num = a.params, a.gain, verdicts.number
    run = headline.by_claim(a.readings, "this run")[CLAIM_ID]
    phys = headline.by_claim(a.readings, "physics")[CLAIM_ID]
    rows: list[tuple[Any, ...]] = []
    if g is not None:
        lvl = f"end of the {percent(g.level, 0)} bootstrap interval of the gain"
        what = f"{p.stat} new-token prefill tok/s of {p.config_b} / {p.config_a} - 1; new tokens"
        gains = [
            ("gain", g.gain, f"{what} = prompt - cached, over TTFT"),
            ("gain_interval_low", g.low, f"lower {lvl} ({g.n_boot} resamples, seed {g.seed})"),
            ("gain_interval_high", g.high, f"upper {lvl}"),
        ]
        rows += [(run, name, num(100 * x, 2), "%", what) for name, x, what in gains]
    no = "the write-up gives no absolute throughput"
    for cfg in (p.config_a, p.config_b):
        v = a.stat_tok_s(cfg)
        if np.isfinite(v):
            what = f"{p.stat} new-token prefill throughput per request, config {cfg}"
            rows.append((no, f"new_token_tok_s_{cfg.lower()}", num(v, 2), "tok/s", what))
    prefix = f"the claim's prefix is {a.claim_prefix:,} tokens"
    mean_p = "mean cached prompt tokens per request (the prefix P)"
    cached = num(a.table["cached_tokens"].mean(), 1)
    rows.append((prefix, "mean_cached_tokens", cached, "tokens", mean_p))
    removes = (
        "share of a new token's time at the bounds that the decoder replay "
        "layers remove (at equal kernel efficiency before and after: an assumption)"
    )
    ceiling = (
        f"new-token prefill ceiling behind {a.claim_prefix:,} cached "
        f"tokens, {p.prefill_gpus} x {catalogs.as_gpu(p.gpu_id).label}, {p.kv_dtype} KV, "
        "sparse reads, no reuse"
    )
    no_gain, top = "a ceiling on throughput, not a gain", num(a.read_no_reuse.tokens_per_s, 1)
    bounds = [
        (phys, "removable_share", num(100 * a.removable, 1), "%", removes),
        (no_gain, "prefix_read_ceiling_no_reuse", top, "tok/s", ceiling),
    ]
    return common.headlines(rows, **common.where(a)) + common.headlines(bounds)


def _flips(a: Analysis) -> list[str]:
    p, bound = a.params, a.bound.tokens_per_s
    rule = results_bounds.verdict_rule()
    return [
        f"physics: undetermined while the baseline's new-token throughput is unpublished; a "
        f"published baseline above {rule.impossible_above * bound / (1 + a.claim_high):,.0f} "
        f"new tok/s on {p.prefill_gpus} x {catalogs.as_gpu(p.gpu_id).label} makes "
        f"+{percent(a.claim_high, 0)} impossible "
        f"(above the {bound:,.0f} new-token bound behind {a.claim_prefix:,} cached tokens), "
        f"one at or below it possible; at equal kernel efficiency (an assumption) the decoder "
        f"replay layers' {percent(a.removable)} allow up to "
        f"+{100 * (1 / (1 - a.removable) - 1):.0f} %",
        f"this run: a trace on Blackwell GPUs serving DeepSeek-V4.1-Flash, both configurations "
        f"behind {a.claim_prefix:,} cached tokens; inconsistent if the whole interval of the gain "
        f"lies outside +{percent(a.claim_low, 0)} to +{percent(a.claim_high, 0)}",
    ]


# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {"prefill-gain.gain": ("metric", "model", "context")}
READING_NOTES = {
    "prefill-gain.gain": "no published gain of prefill changes at a fixed 128,000-token cached "
    "prefix; vLLM's own table measures the same changes on one cold request (no cached prefix, "
    "GB200), and published caching gains compare with and without a cache"
}
RERUN_ARGS = {"prefill-gain": (("endpoint_a", "http://BASELINE:8000"),)}
