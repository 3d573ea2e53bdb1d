"""eplb-balance: with no public routing statistics, the default trace is a SYNTHETIC seeded
routing model calibrated to the claim's "before" (written with its provenance by ``python -m
rackbook.results.eplb_balance OUT``, env/record); one window is one decode step's expert load.
Expert loads, static placement and EPLB fitted on the first steps and scored on the later ones,
uniform routing's per-step floor, the recovered share (%) and the routing model's sweeps; the
readings of balancedness before and after EPLB and of the share recovered, the chapter's
analysis, outcome and the values its prose quotes."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import expert_load
from rackbook.core.importers.points import empty_table
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import Trace, read_run, write_trace
from rackbook.core.units import percent
from rackbook.errors import InputError
from rackbook.inputs.claims import Registry, load_claims
from rackbook.physics import eplb
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts

BEFORE = "eplb-balance.before"
AFTER = "eplb-balance.after"
RECOVERED = "eplb-balance.recovered"
#: The command that regenerates the default trace (recorded in run.json).
RECORD_COMMAND = "bash env/record/eplb-balance.sh"
#: The claim whose value the synthetic skew is calibrated to.
CALIBRATION_CLAIM = BEFORE


@dataclass(frozen=True)
class Spec:
    """The synthetic default trace's layout (topology.yaml's decode DEP64), batch per rank,
    decode steps drawn and seed."""

    model: str = "deepseek-v4.1-flash"
    ep_size: int = 64
    redundant: int = 64
    batch_per_rank: int = 64
    windows: int = 12
    seed: int = 0


@dataclass(frozen=True)
class Shape:
    """MoE layers, routed experts and experts per token of a model."""

    num_layers: int
    num_experts: int
    top_k: int


def model_shape(model: str = "deepseek-v4.1-flash") -> Shape:
    """The MoE shape from the model catalog; every layer where ``moe.num_moe_layers`` is null."""
    from rackbook.inputs.catalogs import load_model

    m = load_model(model)
    layers = m.moe.num_moe_layers or m.architecture.num_layers
    if not layers or not m.moe.num_routed_experts or not m.moe.experts_per_token:
        raise InputError(m.file, "moe", "the model catalog lacks layers, experts or top-k")
    return Shape(int(layers), int(m.moe.num_routed_experts), int(m.moe.experts_per_token))


def tokens_per_step(batch_per_rank: int, ep_size: int, top_k: int) -> int:
    """Token-expert assignments per MoE layer in one decode step: batch x ranks x top-k."""
    return int(batch_per_rank) * int(ep_size) * int(top_k)


def redundant_for(ep_size: int, num_experts: int, extra_per_rank: int = 1) -> int:
    """Redundant experts giving every rank ``ceil(experts / ep) + extra_per_rank`` slots."""
    return int(ep_size) * (math.ceil(num_experts / ep_size) + int(extra_per_rank)) - num_experts


def calibrate(
    spec: Spec = Spec(), target: float | None = None, registry: Registry | None = None
) -> dict[str, Any]:
    """Skew at which static placement scores ``target`` (default: the claim's) on one step."""
    shape = model_shape(spec.model)
    tgt = float((registry or load_claims()).value(CALIBRATION_CLAIM) if target is None else target)
    return eplb.calibrate_skew(
        tgt,
        spec.ep_size,
        num_layers=shape.num_layers,
        num_experts=shape.num_experts,
        tokens_per_layer=tokens_per_step(spec.batch_per_rank, spec.ep_size, shape.top_k),
        seed=spec.seed,
        redundant=spec.redundant,
        windows=1,
    )


_KEYS = ("window", "layer", "expert")


def loads_table(loads: np.ndarray) -> pd.DataFrame:
    """``(windows, layers, experts)`` tokens as the trace's ``expert_load`` table."""
    arr = np.asarray(loads)
    idx = {k: i.ravel().astype(np.int64) for k, i in zip(_KEYS, np.indices(arr.shape), strict=True)}
    return pd.DataFrame(idx | {"tokens": arr.ravel().astype(np.float64)})


def build_default_trace(spec: Spec = Spec()) -> Trace:
    """The SYNTHETIC default trace: ``spec.windows`` steps drawn at the calibrated skew."""
    shape = model_shape(spec.model)
    cal = calibrate(spec)
    n = tokens_per_step(spec.batch_per_rank, spec.ep_size, shape.top_k)
    loads, meta = eplb.synthetic_loads(
        shape.num_layers, shape.num_experts, n, cal["skew"], spec.seed, spec.windows
    )
    window = "one decode forward pass (engine step)"
    run = new_run_info(
        kind="synthetic",
        commands=[RECORD_COMMAND],
        parameters=asdict(spec) | asdict(shape) | {"tokens_per_step": n, "window": window},
        engine={"name": "none", "version": None},
        generator={
            "name": eplb.SYNTHETIC_GENERATOR,
            "seed": spec.seed,
            "skew": cal["skew"],
            "calibrated": True,
            "calibration": {
                "quantity": "vLLM balancedness of static placement, one decode step (window 0)",
                "target": cal["target"],
                "target_claim": CALIBRATION_CLAIM,
                "achieved": cal["balancedness_static"],
                "ep_size": spec.ep_size,
                "redundant": spec.redundant,
            },
            "model": meta["note"],
        },
        notes=(
            "SYNTHETIC routing, not measured: no DeepSeek-V4.1-Flash routing statistics are "
            "public. Zipf-like popularity per layer over a seeded permutation, multinomial "
            f"draws per decode step; skew calibrated so that static placement at EP "
            f"{spec.ep_size} ({spec.redundant} redundant) has balancedness {cal['target']:g} "
            f"(claim {CALIBRATION_CLAIM}). Balance after EPLB is a prediction of this model."
        ),
    )
    extra = {"expert_load": loads_table(loads)}
    return Trace(run, empty_table("requests"), empty_table("itl"), empty_table("points"), extra)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rackbook.results.eplb_balance OUT [--seed N] ...``: write the trace."""
    ap = argparse.ArgumentParser(
        prog="python -m rackbook.results.eplb_balance", description=__doc__
    )
    ap.add_argument("out", help="trace folder to write")
    for f in fields(Spec):  # --model, --ep-size, ... with Spec's defaults
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    a = ap.parse_args(argv)
    spec = Spec(**{f.name: getattr(a, f.name) for f in fields(Spec)})
    try:
        path = write_trace(a.out, build_default_trace(spec))
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    gen = read_run(path)["generator"]
    print(
        f"wrote {path}: skew {gen['skew']:.6f}, static balancedness "
        f"{gen['calibration']['achieved']:.4f} (target {gen['calibration']['target']:g})"
    )
    return 0


def loads_from_table(df: pd.DataFrame, where: str | Path | None = None) -> np.ndarray:
    """``expert_load`` rows -> ``(windows, layers, experts)`` float64 tokens."""
    if df.empty:
        raise InputError(where, "expert_load", "no rows")
    key = ["window", "layer", "expert"]
    for col in key:
        if (df[col] < 0).any():
            raise InputError(where, f"expert_load.{col}", "negative index")
    if df.duplicated(key).any():
        raise InputError(where, "expert_load", "duplicate (window, layer, expert) rows")
    shape = tuple(int(df[c].max()) + 1 for c in key)
    if len(df) != shape[0] * shape[1] * shape[2]:
        raise InputError(
            where,
            "expert_load",
            f"incomplete grid: {len(df)} rows for {shape[0]} windows x {shape[1]} layers x "
            f"{shape[2]} experts",
        )
    arr = np.zeros(shape, dtype=np.float64)
    arr[df["window"].to_numpy(), df["layer"].to_numpy(), df["expert"].to_numpy()] = df[
        "tokens"
    ].to_numpy(np.float64)
    for w in range(shape[0]):
        expert_load.as_loads(arr[w], where, f"expert_load window {w}")
    return arr


def trace_loads(tr: Trace) -> np.ndarray:
    if "expert_load" not in tr.extra:
        raise InputError(tr.path, "expert_load", "the trace has no expert_load table")
    return loads_from_table(tr.extra["expert_load"], tr.path)


@dataclass
class Placements:
    """Static and EPLB placements (``phy2log``) for one layout, fitted on summed loads."""

    static: np.ndarray
    eplb: np.ndarray
    ep_size: int


def score(
    loads: np.ndarray,
    fit_windows: int,
    ep_size: int,
    redundant: int,
    groups: int = 1,
    nodes: int = 1,
) -> tuple[dict[str, float], pd.DataFrame]:
    """EPLB fitted on the first ``fit_windows`` windows summed, beside vLLM's static placement
    (:class:`Placements` in the table's ``attrs["placements"]``), each's balancedness (vLLM's,
    ``*_legacy``) on every later window: (means and recovered fractions, per window)."""
    arr = np.asarray(loads, dtype=np.float64)
    if not 1 <= fit_windows < arr.shape[0]:
        problem = f"need 1 <= fit_windows < {arr.shape[0]} windows (at least one left to score)"
        raise InputError(None, "fit_windows", problem)
    fit_loads, scored = arr[:fit_windows].sum(axis=0), arr[fit_windows:]
    num_logical = fit_loads.shape[1]
    num_physical = eplb.check_layout(num_logical, ep_size, redundant, groups, nodes)
    phy2log, _, _ = eplb.rebalance_experts(fit_loads, num_physical, groups, nodes, ep_size)
    pl = Placements(eplb.static_placement(num_logical, ep_size, redundant), phy2log, ep_size)
    rows = []
    for i, window in enumerate(scored):
        rs = eplb.rank_loads_from_placement(window, pl.static, ep_size)
        re = eplb.rank_loads_from_placement(window, pl.eplb, ep_size)
        legacy = (eplb.balancedness_legacy(rs), eplb.balancedness_legacy(re))
        rows.append((fit_windows + i, eplb.balancedness(rs), eplb.balancedness(re), *legacy))
    per = pd.DataFrame(rows, columns=["window", "static", "eplb", "static_legacy", "eplb_legacy"])
    s = {k: float(per[k].mean()) for k in ("static", "eplb", "static_legacy", "eplb_legacy")}
    s["fraction_recovered_gap"] = eplb.fraction_recovered_gap(s["static"], s["eplb"])
    s["fraction_of_uniform"] = eplb.fraction_of_uniform(s["eplb"])
    s.update(ep_size=ep_size, redundant=redundant, fit_windows=fit_windows, scored=len(per))
    per.attrs["placements"] = pl
    return s, per


def layer_rank_loads(loads: np.ndarray, pl: Placements, window: int, layer: int) -> pd.DataFrame:
    """Tokens per EP rank in one layer of one window, static vs EPLB (one row per rank)."""
    one = loads[window, layer][None, :]
    static = eplb.rank_loads_from_placement(one, pl.static, pl.ep_size)[0]  # one row, all layers
    moved = eplb.rank_loads_from_placement(one, pl.eplb[layer], pl.ep_size)[0]  # per layer
    return pd.DataFrame({"rank": np.arange(pl.ep_size), "static": static, "eplb": moved})


def uniform_floor(
    num_layers: int, tokens_per_layer: int, ep_size: int, seed: int = 0, windows: int = 8
) -> float:
    """Mean per-step balancedness of uniform routing (below 1: a step is a finite sample)."""
    rng = np.random.default_rng(seed)
    p = np.full(ep_size, 1.0 / ep_size)
    vals = [
        eplb.balancedness(rng.multinomial(tokens_per_layer, p, size=num_layers))
        for _ in range(windows)
    ]
    return float(np.mean(vals))


def recovered_shares(static: float, eplb_value: float, floor: float) -> pd.DataFrame:
    """Three readings of "share of uniform routing's potential recovered" (percent)."""
    gap = "(T_eplb - T_static) / (T_uniform - T_static), T_uniform = 1"
    same = "T_eplb / T_uniform, T_uniform = per-step balancedness of uniform routing"
    ratio = "T_eplb / T_uniform, T_uniform = 1"
    rows = [
        ("gap closed", gap, 100 * eplb.fraction_recovered_gap(static, eplb_value)),
        ("ratio to uniform", ratio, 100 * eplb.fraction_of_uniform(eplb_value)),
        (
            "ratio to uniform, same sampling",
            same,
            100 * eplb.fraction_of_uniform(eplb_value, floor),
        ),
    ]
    return pd.DataFrame(rows, columns=["reading", "formula", "pct"])


def scenario(
    *,
    skew: float,
    seed: int,
    shape: Shape,
    ep_size: int,
    redundant: int,
    batch_per_rank: int,
    windows: int,
    fit_windows: int,
    groups: int = 1,
    nodes: int = 1,
) -> dict[str, float]:
    """:func:`score` of synthetic loads for one layout, with ``uniform_floor`` and ``skew``."""
    n = tokens_per_step(batch_per_rank, ep_size, shape.top_k)
    loads, _ = eplb.synthetic_loads(shape.num_layers, shape.num_experts, n, skew, seed, windows)
    s, _ = score(loads, fit_windows, ep_size, redundant, groups, nodes)
    s["uniform_floor"] = uniform_floor(shape.num_layers, n, ep_size, seed, windows - fit_windows)
    s["skew"] = float(skew)
    s["batch_per_rank"] = int(batch_per_rank)
    return s


def sweep(base: dict[str, Any], name: str, values: Iterable[Any]) -> pd.DataFrame:
    """:func:`scenario` per value of parameter ``name`` (over ``ep_size``, redundant follows)."""
    rows = []
    for v in values:
        kw = {**base, name: v}
        if name == "ep_size":
            kw["redundant"] = redundant_for(int(v), base["shape"].num_experts)
        rows.append(scenario(**kw))
    return pd.DataFrame(rows)


RESULT = "eplb-balance"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.eplb_balance``).
FIGURES: tuple[str, ...] = ("fig_ranks", "fig_sweeps")


def balancedness_physics(
    claim_id: str, claimed: float, ep_size: int, note: str
) -> headline.ClaimReading:
    """Balancedness lies in [1 / ``ep_size``, 1]: possible inside, impossible outside."""
    lo = 1 / ep_size
    ok = lo <= claimed <= 1
    fewest = math.ceil(1 / claimed) if claimed > 0 else None
    ranks = f"the write-up does not state the EP ranks: {ep_size} is assumed here (the "
    ranks += "chapter's ep_size)"
    if fewest is not None and claimed <= 1:
        ranks += f"; the figure clears the floor of any EP size of at least {fewest} ranks"
    v, where = ("possible", "in") if ok else ("impossible", "outside")
    clauses = [f"balancedness must lie between 1/{ep_size} = {lo:.3g} and 1 ({ranks})", note]
    return common.reading(claim_id, "physics", v, f"{claimed:g} {where} [1/{ep_size}, 1]", clauses)


def recovered_physics(
    before: float, after: float, recovered_pct: float, tol_pct: float, ep_size: int
) -> headline.ClaimReading:
    """Possible when the gap closed or the ratio to uniform gives ``recovered_pct`` within
    ``tol_pct``, undetermined when only a reference in [after, 1] can, else impossible."""
    gap = 100 * eplb.fraction_recovered_gap(before, after)
    ratio = 100 * eplb.fraction_of_uniform(after)
    needed = after / (recovered_pct / 100)
    if min(abs(gap - recovered_pct), abs(ratio - recovered_pct)) <= tol_pct:
        v, why = "possible", "one fixed reading gives it"
    elif after <= needed <= 1:
        v = "undetermined"
        why = f"it needs uniform routing to score {needed:.3f} per step, which the batch decides"
    else:
        v, why = "impossible", f"no reading gives it (uniform would need {needed:.3f})"
    clauses = [
        f"from {before:g} and {after:g}: {percent(gap / 100)} of the gap closed, "
        f"{percent(ratio / 100)} of uniform",
        f"neither is {recovered_pct:g} % within {tol_pct:g}" if v != "possible" else "",
        why,
    ]
    margin = f"gap {percent(gap / 100)}, ratio {percent(ratio / 100)}"
    return common.reading(RECOVERED, "physics", v, margin, clauses)


def run_reading(
    run: dict[str, Any], claim_id: str, value: float, tolerance: float, claimed: float, unit: str
) -> headline.ClaimReading:
    """Within ``tolerance`` of ``claimed`` for a recording on Blackwell GPUs with EPLB; any other
    trace is untested."""
    u = unit
    cal = (run.get("generator") or {}).get("calibration") or {}
    if run.get("kind") == "synthetic":
        why = (
            f"the synthetic routing model was calibrated to give {claimed:g}{u}: an input"
            if cal.get("target_claim") == claim_id
            else f"a synthetic routing model predicts {value:.3g}{u}, no measured EPLB run"
        )
        return headline.ClaimReading(claim_id, "this run", "untested", "-", why, synthetic=True)
    if not verdicts.can_test(run, verdicts.BLACKWELL):
        needs = "EPLB on Blackwell GPUs serving DeepSeek-V4.1-Flash"
        return verdicts.untested(claim_id, run, f"{value:.3g}{u}", needs)
    why = f"measured {value:.3g}{u} against {claimed:g}{u} (tolerance {tolerance:g}{u})"
    return verdicts.within(claim_id, value, claimed, tolerance, f"{value - claimed:+.3g}{u}", why)


#: The model sweeps the chapter draws, each a parameter of :func:`scenario`.
SWEEPS = ("ep_size", "redundant", "skew", "batch_per_rank")
#: The values the prose quotes that are attributes of the analysis (chapter_common.glue).
GLUE = (
    "claim_before=before claim_after=after claim_recovered=recovered trace_kind=trace.kind "
    "top_k=shape.top_k batch_per_rank floor ep=params.ep_size redundant=params.redundant "
    "fit_windows=params.fit_windows floor_needed skew"
)
LEGACY_REASON = "legacy definition, shown to read vLLM logs of about Aug 2025 to Aug 2026"


#: The notebook's ``parameters``: EP layout, fit windows, layer shown, sweep values.
Params = headline.params(RESULT)


class Analysis(common.Chapter):
    """Static placement and EPLB scored on the trace's expert loads, sweeps and readings."""

    PARAMS, SCREENED = Params, False

    def analyse(self, p: Any, reg: Registry) -> None:
        trace = self.trace
        self.before, self.after, self.recovered = (reg.value(c) for c in (BEFORE, AFTER, RECOVERED))
        self.loads = loads = trace_loads(trace)
        self.shape = model_shape()
        self.batch_per_rank = int(trace.run["parameters"].get("batch_per_rank", 64))
        self.kind = "measured" if trace.run.get("kind") == "recorded" else "synthetic"
        self.testable = trace.kind != "synthetic" and verdicts.can_test(
            trace.run, verdicts.BLACKWELL
        )
        layout = (p.ep_size, p.redundant, p.groups, p.nodes)
        self.summary, self.per_window = score(loads, p.fit_windows, *layout)
        s = self.summary
        n, scored = int(loads[0, 0].sum()), max(loads.shape[0] - p.fit_windows, 1)
        self.floor = uniform_floor(loads.shape[1], n, p.ep_size, windows=scored)
        self.ranks = layer_rank_loads(
            loads, self.per_window.attrs["placements"], p.fit_windows, p.show_layer
        )
        model_shares = recovered_shares(s["static"], s["eplb"], self.floor)
        claim_shares = recovered_shares(self.before, self.after, self.floor)
        self.shares = model_shares.rename(columns={"pct": "model (%)"})
        self.shares[f"claim's {self.before:g} and {self.after:g} (%)"] = claim_shares["pct"]
        self.model_pct, self.claim_pct = (
            dict(zip(x["reading"], x["pct"].tolist(), strict=True))
            for x in (model_shares, claim_shares)
        )
        self.floor_needed = self.after / (self.recovered / 100)
        # the synthetic trace's skew, else one calibrated to the measured static balancedness
        gen, spec = trace.run.get("generator") or {}, Spec(ep_size=p.ep_size, redundant=p.redundant)
        own = trace.run.get("kind") == "synthetic" and "skew" in gen
        self.skew = float(gen["skew"] if own else calibrate(spec, target=s["static"])["skew"])
        fit = p.fit_windows
        base = dict(skew=self.skew, seed=int(gen.get("seed", 0)), shape=self.shape)
        base |= dict(batch_per_rank=self.batch_per_rank, ep_size=p.ep_size, redundant=p.redundant)
        base |= dict(groups=p.groups, nodes=p.nodes, windows=fit + 4, fit_windows=fit)
        skews = sorted(set(p.skews) | {round(self.skew, 4)})
        values = (p.ep_sizes, p.redundant_values, skews, p.batch_sizes)  # in SWEEPS' order
        self.sweeps = {x: sweep(base, x, v) for x, v in zip(SWEEPS, values, strict=True)}
        self.readings = _readings(self, reg)

    @property
    def model_note(self) -> str:
        """What the routing model gives after EPLB at the smallest and largest batch per rank."""
        by = self.sweeps["batch_per_rank"].set_index("batch_per_rank")["eplb"]
        return (
            f"the routing model gives {by.iloc[0]:.3f} at batch {by.index[0]} per rank and "
            f"{by.iloc[-1]:.3f} at {by.index[-1]}"
        )

    def describe(self) -> str:
        """What the trace holds, how the synthetic one was made, and what vLLM logged."""
        tr, (w, lay, e) = self.trace, self.loads.shape
        lines = [
            f"trace {tr.trace_id} ({tr.kind}): {w} windows x {lay} layers x {e} experts, "
            f"{self.loads[0, 0].sum():,.0f} token-expert assignments per layer per window"
        ]
        if tr.kind == "synthetic":
            gen = tr.run.get("generator") or {}
            cal = gen.get("calibration") or {}
            lines.append(f"generator: {gen['name']}, seed {gen['seed']}, skew {gen['skew']:.4f}")
            lines.append(
                f"calibrated: {cal['quantity']} = {cal['achieved']:.4f} "
                f"(target {cal['target']:g}, claim {cal['target_claim']}) at EP "
                f"{cal['ep_size']}, {cal['redundant']} redundant"
            )
        if "eplb_log" in tr.extra:
            log = tr.extra["eplb_log"]
            lines.append(
                f"vLLM logged balancedness: {len(log)} lines, mean {log['balancedness'].mean():.4f}"
            )
        return "\n".join(lines)

    def values(self) -> dict[str, Any]:
        """Numbers and words the chapter's prose quotes (glued by name)."""
        s, loads = self.summary, self.loads
        phys = headline.by_claim(self.readings, "physics")
        b, a = phys[BEFORE].verdict, phys[AFTER].verdict
        by_batch = self.sweeps["batch_per_rank"].set_index("batch_per_rank")
        ends = (("small", 0), ("large", -1))
        return common.glue(self, GLUE) | {
            "claim_after_pct": 100 * self.after,
            **dict(zip(("n_windows", "n_layers", "n_experts"), loads.shape, strict=True)),
            "tokens_per_step": int(loads[0, 0].sum()),
            **{f"b_{k}": s[k] for k in ("static", "eplb", "static_legacy", "eplb_legacy")},
            "n_physical": loads.shape[2] + self.params.redundant,
            "n_scored": s["scored"],
            "pct_gap": self.model_pct["gap closed"],
            "pct_ratio": self.model_pct["ratio to uniform"],
            "pct_floor": self.model_pct["ratio to uniform, same sampling"],
            "claim_gap": self.claim_pct["gap closed"],
            "claim_ratio": self.claim_pct["ratio to uniform"],
            **{f"eplb_{k}_batch": float(by_batch["eplb"].iloc[i]) for k, i in ends},
            **{f"{k}_batch": int(by_batch.index[i]) for k, i in ends},
            **{f"{c.split('.')[1]}_physics": r.verdict for c, r in phys.items()},
            "before_after_physics": f"both {b}" if b == a else f"{b} and {a}",
        }


analyse = Analysis


def _readings(a: Analysis, reg: Registry) -> list[headline.ClaimReading]:
    p, s, run, tol = a.params, a.summary, a.trace.run, reg.tolerance
    skewed = "a skewed routing with static placement can score it"
    claims = ((BEFORE, a.before, "static", skewed), (AFTER, a.after, "eplb", a.model_note))
    pairs = [
        (
            balancedness_physics(c, claimed, p.ep_size, note),
            run_reading(run, c, s[k], tol(c), claimed, ""),
        )
        for c, claimed, k, note in claims
    ]
    gap, rec = a.model_pct["gap closed"], a.recovered
    phys = recovered_physics(a.before, a.after, rec, tol(RECOVERED), p.ep_size)
    pairs.append((phys, run_reading(run, RECOVERED, gap, tol(RECOVERED), rec, " %")))
    return common.readings(reg, *pairs)


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, the three readings of each claim and what would flip them."""
    names = "ep_size redundant groups nodes fit_windows batch_per_rank skew"
    resolved: dict[str, Any] = dict(batch_per_rank=a.batch_per_rank, skew=round(a.skew, 6))
    return common.outcome(RESULT, a, _headlines(a), _flips(a), names, **resolved)


def _headlines(a: Analysis) -> list[headline.Headline]:
    s, kind = a.summary, a.kind
    where = common.where(a, kind)
    run = headline.by_claim(a.readings, "this run")
    legacy = "legacy vLLM balancedness (reduced over layers)"
    fitted = f"vLLM balancedness after EPLB fitted on {a.params.fit_windows} steps, mean over later"
    static = "vLLM balancedness of static placement, mean over scored decode steps"
    gap = "(T_eplb - T_static) / (T_uniform - T_static), T = balancedness, T_uniform = 1"
    ratio = "T_eplb / T_uniform, T = balancedness, T_uniform = 1"
    second = "a second reading of the recovered share, shown beside the gap closed"
    measured = [
        (run[BEFORE], "balancedness_static", round(s["static"], 4), "1", static),
        (run[AFTER], "balancedness_eplb", round(s["eplb"], 4), "1", f"{fitted} steps"),
        (run[RECOVERED], "recovered_gap", round(a.model_pct["gap closed"], 2), "%", gap),
        (second, "recovered_ratio", round(a.model_pct["ratio to uniform"], 2), "%", ratio),
    ]
    legacies = [
        (LEGACY_REASON, f"balancedness_{k}_legacy", round(s[f"{k}_legacy"], 4), "1", what)
        for k, what in (
            ("static", f"{legacy} of static placement"),
            ("eplb", f"{legacy} after EPLB"),
        )
    ]
    needed = "per-step balancedness uniform routing must score for the claim's after / that to "
    needed += "equal its recovered share"
    v = headline.by_claim(a.readings, "physics")[RECOVERED].verdict
    row = (RECOVERED, "uniform_floor_needed", round(a.floor_needed, 4), "1", needed, v)
    floor = common.modelled(*row, "arithmetic on the two published figures")
    return [*common.headlines(measured, **where), floor, *common.headlines(legacies, **where)]


def _flips(a: Analysis) -> list[str]:
    return [
        f"after, this run: a recording on Blackwell GPUs with EPLB logging balancedness within "
        f"{a.params.ep_size} ranks; {a.model_note}: the claim's batch decides",
        f"recovered, physics: possible if uniform routing scored {a.floor_needed:.3f} per step "
        f"at the claim's batch (the model's per-step floor here is {a.floor:.3f})",
        "all three: balancedness counts tokens; at small decode batches expert time follows "
        "the weight bytes each rank reads, so balance costs less than these figures suggest",
    ]


# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = dict.fromkeys(
    (BEFORE, AFTER, RECOVERED), ("metric", "model")
)
READING_NOTES = {RECOVERED: "no published share of the uniform-routing potential recovered"}
RERUN_NEEDS = {
    "eplb-balance": "Balancedness is read from the servers' EPLB log lines (`log_balancedness` in "
    "the recipe's `--eplb-config`): `server_log` is the decode leader's log, which the Slurm "
    "script writes under `logs/JOBID/`."
}
#: The sbatch's decode leader log.
RERUN_ARGS = {"eplb-balance": (("server_log", "logs/JOBID/decode-0.log"),)}


if __name__ == "__main__":
    raise SystemExit(main())
