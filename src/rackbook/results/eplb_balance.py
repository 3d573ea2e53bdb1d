"""Data for the eplb-balance result: the SYNTHETIC default trace, loads from traces, scoring.

No DeepSeek-V4.1-Flash routing statistics are public, so the default input is a documented
synthetic routing model (:func:`rackbook.physics.eplb.synthetic_loads`: Zipf-like expert popularity
per layer over a seeded permutation, multinomial draws). Its one free parameter, the skew, is
calibrated so that *static* placement at the chosen EP size has balancedness equal to the
claim's "before" figure (read from the claims registry). Everything EPLB then does to that load
is a prediction of the model, not a measurement.

Granularity. One trace *window* is the expert load of one decode forward pass (engine step):
``batch_per_rank x ep_size`` tokens, each routed to ``top_k`` experts, so every MoE layer
counts ``batch_per_rank x ep_size x top_k`` token-expert assignments. vLLM logs balancedness
per forward pass in the same way (``EplbState.step``, from ``expert_load_pass``), and fits EPLB
on the sum over a sliding window of steps (``window_size``, 1000 by default). Here EPLB is fitted
on the sum of the first ``fit_windows`` steps and scored on each later step, so the score is out
of sample.

Units: loads are token-expert assignments ("tokens", as vLLM counts them); balancedness and
throughput relative to uniform routing are dimensionless; fractions are dimensionless (0..1)
unless a name ends in ``_pct``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core import expert_load, schema
from rackbook.core.provenance import hardware_label, new_run_info
from rackbook.core.traces import Trace, write_trace
from rackbook.errors import InputError
from rackbook.inputs.claims import Registry, load_claims
from rackbook.physics import eplb
from rackbook.results import evidence, headline, verdicts

RESULT = "eplb-balance"
#: The figures the chapter glues, in order (drawn by ``rackbook.book.figures.eplb_balance``).
FIGURES: tuple[str, ...] = ("fig_ranks", "fig_sweeps")
#: The claims this chapter tests (data/claims.yaml): balancedness before and after EPLB, and
#: the share of uniform routing's potential it recovers.
BEFORE = "eplb-balance.before"
AFTER = "eplb-balance.after"
RECOVERED = "eplb-balance.recovered"
#: The command that regenerates the default trace (recorded in run.json).
RECORD_COMMAND = "bash env/record/eplb-balance.sh"
#: The claim whose value the synthetic skew is calibrated to.
CALIBRATION_CLAIM = BEFORE


@dataclass(frozen=True)
class Spec:
    """Parameters of the synthetic default trace.

    ``ep_size`` EP ranks (64: the decode workers of this project's GB300 layout,
    ``env/cluster/topology.yaml``, decode DEP64, which follows the DeepInfer benchmark settings
    the write-up reports; no public source for those settings was located);
    ``redundant`` redundant physical experts (64: 384 + 64 = 448 = 7 per rank);
    ``batch_per_rank`` decode sequences per rank per step (tokens); ``windows`` decode steps
    drawn; ``seed`` of the generator; the layer/expert/top-k shape comes from the model catalog.
    """

    model: str = "deepseek-v4.1-flash"
    ep_size: int = 64
    redundant: int = 64
    batch_per_rank: int = 64
    windows: int = 12
    seed: int = 0


@dataclass(frozen=True)
class Shape:
    """MoE shape of a model: layers counted as MoE layers, routed experts, experts per token."""

    num_layers: int
    num_experts: int
    top_k: int


def model_shape(model: str = "deepseek-v4.1-flash") -> Shape:
    """The MoE shape from the model catalog (``data/models/MODEL.yaml``).

    The catalog does not state how many of the layers are MoE layers (``moe.num_moe_layers``
    is null for V4.1-Flash); then every layer (``architecture.num_layers``) is counted.
    """
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
    """Redundant experts giving every rank ``ceil(experts / ep) + extra_per_rank`` slots.

    E.g. 384 experts: EP 64 -> 7 slots per rank -> 64 redundant; EP 72 -> 6 + 1 = 7 slots ->
    504 - 384 = 120 redundant.
    """
    return int(ep_size) * (math.ceil(num_experts / ep_size) + int(extra_per_rank)) - num_experts


def calibration_target(registry: Registry | None = None) -> float:
    """The claim's static balancedness (claim :data:`CALIBRATION_CLAIM`), from the claims
    registry (``registry``, else ``data/claims.yaml``)."""
    return float((registry or load_claims()).value(CALIBRATION_CLAIM))


def calibrate(
    spec: Spec = Spec(), target: float | None = None, registry: Registry | None = None
) -> dict[str, Any]:
    """Skew of the synthetic model whose static placement has the target balancedness
    (``target``, else :func:`calibration_target` of ``registry``).

    Measured on one decode step (window 0 of the generated trace), as vLLM logs it, with
    ``spec.redundant`` slots placed as vLLM places them before any rearrangement.
    """
    shape = model_shape(spec.model)
    tgt = calibration_target(registry) if target is None else float(target)
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


def loads_table(loads: np.ndarray) -> pd.DataFrame:
    """``(windows, layers, experts)`` tokens as the trace's ``expert_load`` table."""
    arr = np.asarray(loads)
    win, lay, exp = np.indices(arr.shape)
    return pd.DataFrame(
        {
            "window": win.ravel().astype(np.int64),
            "layer": lay.ravel().astype(np.int64),
            "expert": exp.ravel().astype(np.int64),
            "tokens": arr.ravel().astype(np.float64),
        }
    )


def _empty(table: str) -> pd.DataFrame:
    dtypes = {"string": "string", "int64": "Int64", "float64": "float64", "bool": "bool"}
    return pd.DataFrame(
        {c.name: pd.Series([], dtype=dtypes[c.dtype]) for c in schema.TABLES[table]}
    )


def build_default_trace(spec: Spec = Spec()) -> Trace:
    """The SYNTHETIC default trace: calibrate the skew, draw ``spec.windows`` decode steps.

    Returns a :class:`Trace` of kind ``synthetic`` with empty request tables and an
    ``expert_load`` table; ``run.json`` names the generator, its seed and the calibration.
    """
    shape = model_shape(spec.model)
    cal = calibrate(spec)
    n = tokens_per_step(spec.batch_per_rank, spec.ep_size, shape.top_k)
    loads, meta = eplb.synthetic_loads(
        shape.num_layers, shape.num_experts, n, cal["skew"], spec.seed, spec.windows
    )
    run = new_run_info(
        kind="synthetic",
        commands=[RECORD_COMMAND],
        parameters={
            **asdict(spec),
            "num_layers": shape.num_layers,
            "num_experts": shape.num_experts,
            "top_k": shape.top_k,
            "tokens_per_step": n,
            "window": "one decode forward pass (engine step)",
        },
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
    return Trace(
        run,
        _empty("requests"),
        _empty("itl"),
        _empty("points"),
        {"expert_load": loads_table(loads)},
    )


def write_default_trace(path: str | Path, spec: Spec = Spec()) -> Path:
    """Build and write the default trace to folder ``path`` (atomically)."""
    return write_trace(path, build_default_trace(spec))


# --------------------------------------------------------------------------------------------
# Loads from a trace
# --------------------------------------------------------------------------------------------


def loads_from_table(df: pd.DataFrame, where: str | Path | None = None) -> np.ndarray:
    """``expert_load`` rows -> ``(windows, layers, experts)`` float64 tokens.

    Every (window, layer, expert) must appear exactly once; indices start at 0.
    """
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
    """The trace's expert loads ``(windows, layers, experts)``; InputError when it has none."""
    if "expert_load" not in tr.extra:
        raise InputError(tr.path, "expert_load", "the trace has no expert_load table")
    return loads_from_table(tr.extra["expert_load"], tr.path)


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def _split(loads: np.ndarray, fit_windows: int) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(loads, dtype=np.float64)
    if arr.ndim != 3:
        raise InputError(None, "loads", f"expected (windows, layers, experts), got {arr.shape}")
    if not 1 <= fit_windows < arr.shape[0]:
        raise InputError(
            None,
            "fit_windows",
            f"need 1 <= fit_windows < {arr.shape[0]} windows (at least one left to score)",
        )
    return arr[:fit_windows].sum(axis=0), arr[fit_windows:]


@dataclass
class Placements:
    """Static and EPLB placements (``phy2log``) for one layout, fitted on summed loads."""

    static: np.ndarray
    eplb: np.ndarray
    ep_size: int
    redundant: int


def fit(
    loads: np.ndarray,
    fit_windows: int,
    ep_size: int,
    redundant: int,
    groups: int = 1,
    nodes: int = 1,
) -> Placements:
    """Fit EPLB (DeepSeek's algorithm, :func:`rackbook.physics.eplb.rebalance_experts`) on windows
    ``[0, fit_windows)`` summed; the static placement is vLLM's initial one."""
    fit_loads, _ = _split(loads, fit_windows)
    num_logical = fit_loads.shape[1]
    num_physical = eplb.check_layout(num_logical, ep_size, redundant, groups, nodes)
    phy2log, _, _ = eplb.rebalance_experts(fit_loads, num_physical, groups, nodes, ep_size)
    return Placements(
        eplb.static_placement(num_logical, ep_size, redundant), phy2log, ep_size, redundant
    )


def score(
    loads: np.ndarray,
    fit_windows: int,
    ep_size: int,
    redundant: int,
    groups: int = 1,
    nodes: int = 1,
) -> tuple[dict[str, float], pd.DataFrame]:
    """Fit EPLB on the first ``fit_windows`` windows; score both placements on each later one.

    Returns ``(summary, per_window)``. ``per_window`` has one row per scored window with vLLM's
    balancedness (``static``, ``eplb``) and the legacy variant (``static_legacy``,
    ``eplb_legacy``). ``summary`` holds their means over scored windows, and the two
    "fraction recovered" readings of the means: ``fraction_recovered_gap`` =
    (T_eplb - T_static) / (1 - T_static) and ``fraction_of_uniform`` = T_eplb / 1.
    """
    _, scored = _split(loads, fit_windows)
    pl = fit(loads, fit_windows, ep_size, redundant, groups, nodes)
    rows = []
    for i, window in enumerate(scored):
        rs = eplb.rank_loads_from_placement(window, pl.static, ep_size)
        re = eplb.rank_loads_from_placement(window, pl.eplb, ep_size)
        rows.append(
            {
                "window": fit_windows + i,
                "static": eplb.balancedness(rs),
                "eplb": eplb.balancedness(re),
                "static_legacy": eplb.balancedness_legacy(rs),
                "eplb_legacy": eplb.balancedness_legacy(re),
            }
        )
    per = pd.DataFrame(rows)
    s = {k: float(per[k].mean()) for k in ("static", "eplb", "static_legacy", "eplb_legacy")}
    s["fraction_recovered_gap"] = eplb.fraction_recovered_gap(s["static"], s["eplb"])
    s["fraction_of_uniform"] = eplb.fraction_of_uniform(s["eplb"])
    s.update(ep_size=ep_size, redundant=redundant, fit_windows=fit_windows, scored=len(per))
    return s, per


def layer_rank_loads(loads: np.ndarray, pl: Placements, window: int, layer: int) -> pd.DataFrame:
    """Tokens per EP rank in one layer of one window, static vs EPLB (one row per rank)."""
    arr = np.asarray(loads, dtype=np.float64)
    one = arr[window, layer][None, :]
    static = pl.static if pl.static.ndim == 1 else pl.static[layer]
    moved = pl.eplb if pl.eplb.ndim == 1 else pl.eplb[layer]
    return pd.DataFrame(
        {
            "rank": np.arange(pl.ep_size),
            "static": eplb.rank_loads_from_placement(one, static, pl.ep_size)[0],
            "eplb": eplb.rank_loads_from_placement(one, moved, pl.ep_size)[0],
        }
    )


def uniform_floor(
    num_layers: int, tokens_per_layer: int, ep_size: int, seed: int = 0, windows: int = 8
) -> float:
    """Mean per-step balancedness of perfectly uniform routing (dimensionless, below 1).

    Every token-expert assignment lands on each EP rank with probability ``1 / ep_size``
    (uniform routing over equally filled ranks); rank loads are drawn multinomially per layer
    and step from ``numpy.random.default_rng(seed)``. Below 1 only because a finite step is a
    sample: this is the best per-step balancedness any placement can expect.
    """
    rng = np.random.default_rng(seed)
    p = np.full(ep_size, 1.0 / ep_size)
    vals = [
        eplb.balancedness(rng.multinomial(tokens_per_layer, p, size=num_layers))
        for _ in range(windows)
    ]
    return float(np.mean(vals))


def recovered_shares(static: float, eplb_value: float, floor: float) -> pd.DataFrame:
    """Three readings of "share of uniform routing's potential recovered", in percent.

    ``gap``: (T_eplb - T_static) / (T_uniform - T_static) with T_uniform = 1;
    ``ratio``: T_eplb / T_uniform with T_uniform = 1; ``ratio to floor``: T_eplb / floor, where
    the floor is what uniform routing itself scores per step (:func:`uniform_floor`).
    """
    return pd.DataFrame(
        [
            {
                "reading": "gap closed",
                "formula": "(T_eplb - T_static) / (T_uniform - T_static), T_uniform = 1",
                "pct": 100 * eplb.fraction_recovered_gap(static, eplb_value),
            },
            {
                "reading": "ratio to uniform",
                "formula": "T_eplb / T_uniform, T_uniform = 1",
                "pct": 100 * eplb.fraction_of_uniform(eplb_value),
            },
            {
                "reading": "ratio to uniform, same sampling",
                "formula": "T_eplb / T_uniform, T_uniform = per-step balancedness of uniform "
                "routing",
                "pct": 100 * eplb.fraction_of_uniform(eplb_value, floor),
            },
        ]
    )


# --------------------------------------------------------------------------------------------
# Model sweeps
# --------------------------------------------------------------------------------------------


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
    """Draw synthetic loads for one layout and score them (see :func:`score`).

    Adds ``uniform_floor`` (same tokens per step, same EP size) and ``skew``.
    """
    n = tokens_per_step(batch_per_rank, ep_size, shape.top_k)
    loads, _ = eplb.synthetic_loads(shape.num_layers, shape.num_experts, n, skew, seed, windows)
    s, _ = score(loads, fit_windows, ep_size, redundant, groups, nodes)
    s["uniform_floor"] = uniform_floor(shape.num_layers, n, ep_size, seed, windows - fit_windows)
    s["skew"] = float(skew)
    s["batch_per_rank"] = int(batch_per_rank)
    return s


def sweep(base: dict[str, Any], name: str, values: Iterable[Any]) -> pd.DataFrame:
    """:func:`scenario` for each value of parameter ``name`` (others from ``base``).

    With ``name == "ep_size"`` the redundant count follows :func:`redundant_for` (one extra
    slot per rank) unless ``base`` has ``redundant_per_rank``.
    """
    rows = []
    for v in values:
        kw = {k: val for k, val in base.items() if k != "redundant_per_rank"}
        kw[name] = v
        if name == "ep_size":
            kw["redundant"] = redundant_for(
                int(v), base["shape"].num_experts, base.get("redundant_per_rank", 1)
            )
        rows.append(scenario(**kw))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------------------------


def model_skew(run: dict[str, Any], static: float, ep_size: int, redundant: int) -> float:
    """Skew for the model sweeps: the synthetic trace's own, else one calibrated to ``static``.

    For a recorded trace the synthetic model is calibrated to the trace's measured static
    balancedness at ``ep_size`` and ``redundant`` (default batch per rank and seed).
    """
    gen = run.get("generator") or {}
    if run.get("kind") == "synthetic" and "skew" in gen:
        return float(gen["skew"])
    return float(calibrate(Spec(ep_size=ep_size, redundant=redundant), target=static)["skew"])


def kind_of(run: dict[str, Any]) -> str:
    """Headline kind for values computed from a trace: ``synthetic`` or ``measured``."""
    return "measured" if run.get("kind") == "recorded" else "synthetic"


def balancedness_physics(
    claim_id: str, claimed: float, ep_size: int, note: str
) -> headline.ClaimReading:
    """vLLM's balancedness (sum of per-layer mean rank load / sum of max) lies between
    1 / n (every token on one of n EP ranks) and 1 (every rank equal): ``possible`` inside,
    ``impossible`` outside. The write-up does not state n: ``ep_size`` is the chapter's
    assumption (the parameter, 64 by default: this project's decode DEP64), and the reason
    gives the fewest ranks whose floor the figure clears, ceil(1 / claimed),
    so the reading holds for any EP size from there. ``note`` adds what the routing model says
    about the figure."""
    lo = 1 / ep_size
    ok = lo <= claimed <= 1
    fewest = math.ceil(1 / claimed) if claimed > 0 else None
    ranks = (
        f"the write-up does not state the EP ranks: {ep_size} is assumed here (the "
        "chapter's ep_size)"
        + (
            f"; the figure clears the floor of any EP size of at least {fewest} ranks"
            if fewest is not None and claimed <= 1
            else ""
        )
    )
    return headline.ClaimReading(
        claim_id,
        "physics",
        "possible" if ok else "impossible",
        f"{claimed:g} in [1/{ep_size}, 1]" if ok else f"{claimed:g} outside [1/{ep_size}, 1]",
        f"balancedness must lie between 1/{ep_size} = {lo:.3g} and 1 ({ranks}); {note}",
    )


def recovered_physics(
    before: float, after: float, recovered_pct: float, tol_pct: float, ep_size: int
) -> headline.ClaimReading:
    """Does "recovers ``recovered_pct`` % of uniform routing's potential" follow from the before
    and after figures? ``possible`` when the gap closed, (after - before) / (1 - before), or the
    ratio to uniform, after / 1, gives it within ``tol_pct``; ``undetermined`` when only the
    reading with a free reference (after / the per-step balancedness of uniform routing) can,
    with a reference in [after, 1]; ``impossible`` otherwise."""
    gap = 100 * eplb.fraction_recovered_gap(before, after)
    ratio = 100 * eplb.fraction_of_uniform(after)
    needed = after / (recovered_pct / 100)
    if min(abs(gap - recovered_pct), abs(ratio - recovered_pct)) <= tol_pct:
        v, why = "possible", "one fixed reading gives it"
    elif after <= needed <= 1:
        v, why = (
            "undetermined",
            (f"it needs uniform routing to score {needed:.3f} per step, which the batch decides"),
        )
    else:
        v, why = "impossible", f"no reading gives it (uniform would need {needed:.3f})"
    return headline.ClaimReading(
        RECOVERED,
        "physics",
        v,
        f"gap {gap:.1f} %, ratio {ratio:.1f} %",
        f"from {before:g} and {after:g}: {gap:.1f} % of the gap closed, {ratio:.1f} % of "
        f"uniform; neither is {recovered_pct:g} % within {tol_pct:g}; {why}"
        if v != "possible"
        else f"from {before:g} and {after:g}: {gap:.1f} % of the gap closed, {ratio:.1f} % of "
        f"uniform; {why}",
    )


def run_reading(
    run: dict[str, Any], claim_id: str, value: float, tolerance: float, claimed: float, unit: str
) -> headline.ClaimReading:
    """This run's reading of one value against its claim: ``consistent`` / ``inconsistent``
    only for a recording on Blackwell GPUs serving DeepSeek-V4.1-Flash with EPLB; a synthetic
    trace, or any other recording (vLLM on CPU refuses ``--enable-eplb``), is ``untested``."""
    u = unit
    cal = (run.get("generator") or {}).get("calibration") or {}
    if run.get("kind") == "synthetic":
        why = (
            f"the synthetic routing model was calibrated to give {claimed:g}{u}: an input"
            if cal.get("target_claim") == claim_id
            else f"a synthetic routing model predicts {value:.3g}{u}, no measured EPLB run"
        )
        return headline.ClaimReading(claim_id, "this run", "untested", "-", why)
    if not verdicts.can_test(run, verdicts.BLACKWELL):
        return headline.untested(
            claim_id,
            f"{verdicts.hardware(run)} ({value:.3g}{u})",
            "EPLB on Blackwell GPUs serving DeepSeek-V4.1-Flash",
        )
    ok = abs(value - claimed) <= tolerance
    return headline.ClaimReading(
        claim_id,
        "this run",
        "consistent" if ok else "inconsistent",
        f"{value - claimed:+.3g}{u}",
        f"measured {value:.3g}{u} against {claimed:g}{u} (tolerance {tolerance:g}{u})",
    )


# --------------------------------------------------------------------------------------------
# The chapter
# --------------------------------------------------------------------------------------------

#: The model sweeps the chapter draws, each a parameter of :func:`scenario`.
SWEEPS = ("ep_size", "redundant", "skew", "batch_per_rank")
LEGACY_REASON = "legacy definition, shown to read vLLM logs of about Aug 2025 to Aug 2026"


@dataclass(frozen=True)
class Params(headline.Params):
    """The chapter's analysis parameters (the notebook's ``parameters`` cell): the EP layout
    (ranks, redundant experts, groups and nodes for hierarchical EPLB), the decode steps EPLB
    is fitted on, the layer shown rank by rank, and the values of each model sweep."""

    ep_size: int = 64
    redundant: int = 64
    groups: int = 1
    nodes: int = 1
    fit_windows: int = 8
    show_layer: int = 0
    ep_sizes: tuple[int, ...] | list[int] = (8, 16, 24, 32, 48, 64, 72)
    redundant_values: tuple[int, ...] | list[int] = (0, 64, 128, 192, 256)
    skews: tuple[float, ...] | list[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2)
    batch_sizes: tuple[int, ...] | list[int] = (8, 16, 32, 64, 128, 256)


@dataclass
class Analysis:
    """Everything the chapter shows: the trace's loads, balancedness per scored step before and
    after EPLB, one layer's load per rank, the readings of the recovered share, the model
    sweeps, the verdicts, and the values its prose quotes. ``before``, ``after`` and
    ``recovered`` are the claims' figures from the registry."""

    trace: Trace
    params: Params
    before: float
    after: float
    recovered: float
    shape: Shape
    loads: np.ndarray
    batch_per_rank: int
    hardware: str
    kind: str
    summary: dict[str, float]
    per_window: pd.DataFrame
    placements: Placements
    ranks: pd.DataFrame
    floor: float
    shares: pd.DataFrame
    model_pct: dict[str, float]
    claim_pct: dict[str, float]
    floor_needed: float
    skew: float
    sweeps: dict[str, pd.DataFrame]
    readings: list[headline.ClaimReading]

    @property
    def testable(self) -> bool:
        """True when the trace can test the claims: a recording on Blackwell GPUs serving
        DeepSeek-V4.1-Flash (the condition of :func:`run_reading`)."""
        return self.trace.kind != "synthetic" and verdicts.can_test(
            self.trace.run, verdicts.BLACKWELL
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
        by_batch = self.sweeps["batch_per_rank"].set_index("batch_per_rank")
        return {
            "claim_before": self.before,
            "claim_after": self.after,
            "claim_after_pct": 100 * self.after,
            "claim_recovered": self.recovered,
            "trace_kind": self.trace.kind,
            "n_windows": loads.shape[0],
            "n_layers": loads.shape[1],
            "n_experts": loads.shape[2],
            "top_k": self.shape.top_k,
            "batch_per_rank": self.batch_per_rank,
            "tokens_per_step": int(loads[0, 0].sum()),
            **{f"b_{k}": s[k] for k in ("static", "eplb", "static_legacy", "eplb_legacy")},
            "floor": self.floor,
            "ep": self.params.ep_size,
            "redundant": self.params.redundant,
            "n_physical": loads.shape[2] + self.params.redundant,
            "fit_windows": self.params.fit_windows,
            "n_scored": s["scored"],
            "pct_gap": self.model_pct["gap closed"],
            "pct_ratio": self.model_pct["ratio to uniform"],
            "pct_floor": self.model_pct["ratio to uniform, same sampling"],
            "claim_gap": self.claim_pct["gap closed"],
            "claim_ratio": self.claim_pct["ratio to uniform"],
            "floor_needed": self.floor_needed,
            "skew": self.skew,
            "eplb_small_batch": float(by_batch["eplb"].iloc[0]),
            "eplb_large_batch": float(by_batch["eplb"].iloc[-1]),
            "small_batch": int(by_batch.index[0]),
            "large_batch": int(by_batch.index[-1]),
            **(
                verdicts := {
                    f"{r.claim_id.split('.')[1]}_{r.reading.replace(' ', '_')}": r.verdict
                    for r in self.readings
                }
            ),
            # one phrase for both figures: "both possible", never "possible and possible"
            "before_after_physics": (
                f"both {verdicts.get('before_physics')}"
                if verdicts.get("before_physics") == verdicts.get("after_physics")
                else f"{verdicts.get('before_physics')} and {verdicts.get('after_physics')}"
            ),
        }


def _pct(shares: pd.DataFrame) -> dict[str, float]:
    return {k: float(v) for k, v in zip(shares["reading"], shares["pct"], strict=True)}


def analyse(trace: Trace, params: Params = Params(), registry: Registry | None = None) -> Analysis:
    """Score static placement and EPLB (fitted on ``params.fit_windows`` steps) on the trace's
    expert loads, read the recovered share three ways for the model and for the claims' own
    figures (from the claims registry), sweep the synthetic model over the layout, skew and
    batch, and give each claim its verdict."""
    reg = registry or load_claims()
    p = params
    before, after, recovered = (reg.value(c) for c in (BEFORE, AFTER, RECOVERED))
    loads = trace_loads(trace)
    shape = model_shape()
    gen = trace.run.get("generator") or {}
    batch_per_rank = int(trace.run["parameters"].get("batch_per_rank", 64))
    summary, per_window = score(loads, p.fit_windows, p.ep_size, p.redundant, p.groups, p.nodes)
    placements = fit(loads, p.fit_windows, p.ep_size, p.redundant, p.groups, p.nodes)
    floor = uniform_floor(
        loads.shape[1],
        int(loads[0, 0].sum()),
        p.ep_size,
        windows=max(loads.shape[0] - p.fit_windows, 1),
    )
    ranks = layer_rank_loads(loads, placements, window=p.fit_windows, layer=p.show_layer)
    model_shares = recovered_shares(summary["static"], summary["eplb"], floor)
    claim_shares = recovered_shares(before, after, floor)
    table = model_shares.rename(columns={"pct": "model (%)"})
    table[f"claim's {before:g} and {after:g} (%)"] = claim_shares["pct"]
    r = _pct(model_shares)
    skew = model_skew(trace.run, summary["static"], p.ep_size, p.redundant)
    base = dict(
        skew=skew,
        seed=int(gen.get("seed", 0)),
        shape=shape,
        ep_size=p.ep_size,
        redundant=p.redundant,
        batch_per_rank=batch_per_rank,
        windows=p.fit_windows + 4,
        fit_windows=p.fit_windows,
        groups=p.groups,
        nodes=p.nodes,
    )
    values = {
        "ep_size": p.ep_sizes,
        "redundant": p.redundant_values,
        "skew": sorted(set(p.skews) | {round(skew, 4)}),
        "batch_per_rank": p.batch_sizes,
    }
    sweeps = {x: sweep(base, x, values[x]) for x in SWEEPS}
    by_batch = sweeps["batch_per_rank"].set_index("batch_per_rank")["eplb"]
    model_note = (
        f"the routing model gives {by_batch.iloc[0]:.3f} at batch {by_batch.index[0]} per rank "
        f"and {by_batch.iloc[-1]:.3f} at {by_batch.index[-1]}"
    )
    tol = reg.tolerance
    run = trace.run
    cr = [
        balancedness_physics(
            BEFORE, before, p.ep_size, "a skewed routing with static placement can score it"
        ),
        evidence.reading(BEFORE, registry=reg),
        run_reading(run, BEFORE, summary["static"], tol(BEFORE), before, ""),
        balancedness_physics(AFTER, after, p.ep_size, model_note),
        evidence.reading(AFTER, registry=reg),
        run_reading(run, AFTER, summary["eplb"], tol(AFTER), after, ""),
        recovered_physics(before, after, recovered, tol(RECOVERED), p.ep_size),
        evidence.reading(RECOVERED, registry=reg),
        run_reading(run, RECOVERED, r["gap closed"], tol(RECOVERED), recovered, " %"),
    ]
    return Analysis(
        trace,
        p,
        before,
        after,
        recovered,
        shape,
        loads,
        batch_per_rank,
        hardware_label(trace.run),
        kind_of(trace.run),
        summary,
        per_window,
        placements,
        ranks,
        floor,
        table,
        r,
        _pct(claim_shares),
        after / (recovered / 100),
        skew,
        sweeps,
        cr,
    )


def outcome(a: Analysis) -> headline.Outcome:
    """The chapter's headlines, the three readings of each claim and what would flip them."""
    tid = [a.trace.trace_id]
    s, kind = a.summary, a.kind
    common = dict(hardware=a.hardware if kind == "measured" else None, trace_ids=tid)
    run = {r.claim_id: r for r in a.readings if r.reading == "this run"}

    def claimed(name: str, value: float, unit: str, definition: str, cid: str) -> headline.Headline:
        r = run[cid]
        return headline.Headline(
            name, value, unit, definition, cid, kind, r.verdict, r.reason, **common
        )

    def legacy(name: str, value: float, definition: str) -> headline.Headline:
        return headline.Headline(
            name,
            value,
            "1",
            definition,
            None,
            kind,
            headline.NOT_COMPARABLE,
            LEGACY_REASON,
            **common,
        )

    by_batch = a.sweeps["batch_per_rank"].set_index("batch_per_rank")["eplb"]
    headlines = [
        claimed(
            "balancedness_static",
            round(s["static"], 4),
            "1",
            "vLLM balancedness of static placement, mean over scored decode steps",
            BEFORE,
        ),
        claimed(
            "balancedness_eplb",
            round(s["eplb"], 4),
            "1",
            f"vLLM balancedness after EPLB fitted on {a.params.fit_windows} steps, mean over "
            "later steps",
            AFTER,
        ),
        claimed(
            "recovered_gap",
            round(a.model_pct["gap closed"], 2),
            "%",
            "(T_eplb - T_static) / (T_uniform - T_static), T = balancedness, T_uniform = 1",
            RECOVERED,
        ),
        headline.Headline(
            name="recovered_ratio",
            value=round(a.model_pct["ratio to uniform"], 2),
            unit="%",
            definition="T_eplb / T_uniform, T = balancedness, T_uniform = 1",
            claim_id=None,
            kind=kind,
            verdict=headline.NOT_COMPARABLE,
            reason="a second reading of the recovered share, shown beside the gap closed",
            **common,
        ),
        headline.Headline(
            name="uniform_floor_needed",
            value=round(a.floor_needed, 4),
            unit="1",
            definition="per-step balancedness uniform routing must score for the claim's after "
            "/ that to equal its recovered share",
            claim_id=RECOVERED,
            kind="modelled",
            verdict=next(
                r.verdict for r in a.readings if r.claim_id == RECOVERED and r.reading == "physics"
            ),
            reason="arithmetic on the two published figures",
        ),
        legacy(
            "balancedness_static_legacy",
            round(s["static_legacy"], 4),
            "legacy vLLM balancedness (reduced over layers) of static placement",
        ),
        legacy(
            "balancedness_eplb_legacy",
            round(s["eplb_legacy"], 4),
            "legacy vLLM balancedness (reduced over layers) after EPLB",
        ),
    ]
    flips = [
        f"after, this run: a recording on Blackwell GPUs with EPLB logging balancedness within "
        f"{a.params.ep_size} ranks; the routing model predicts {by_batch.iloc[0]:.3f} at batch "
        f"{by_batch.index[0]} per rank and {by_batch.iloc[-1]:.3f} at {by_batch.index[-1]}: the "
        "claim's batch decides",
        f"recovered, physics: possible if uniform routing scored {a.floor_needed:.3f} per step "
        f"at the claim's batch (the model's per-step floor here is {a.floor:.3f})",
        "all three: balancedness counts tokens; at small decode batches expert time follows "
        "the weight bytes each rank reads, so balance costs less than these figures suggest",
    ]
    p = a.params
    parameters = {
        "ep_size": p.ep_size,
        "redundant": p.redundant,
        "groups": p.groups,
        "nodes": p.nodes,
        "fit_windows": p.fit_windows,
        "batch_per_rank": a.batch_per_rank,
        "skew": round(a.skew, 6),
    }
    return headline.Outcome(RESULT, headlines, a.readings, flips, tid, parameters, a.hardware)


# --------------------------------------------------------------------------------------------
# Command line (env/record/eplb-balance.sh)
# --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rackbook.results.eplb_balance OUT [--seed N] [--ep-size N] ...``: write the
    trace."""
    d = Spec()
    ap = argparse.ArgumentParser(
        prog="python -m rackbook.results.eplb_balance", description=__doc__
    )
    ap.add_argument("out", help="trace folder to write")
    ap.add_argument("--model", default=d.model)
    ap.add_argument("--ep-size", type=int, default=d.ep_size)
    ap.add_argument("--redundant", type=int, default=d.redundant)
    ap.add_argument("--batch-per-rank", type=int, default=d.batch_per_rank)
    ap.add_argument("--windows", type=int, default=d.windows)
    ap.add_argument("--seed", type=int, default=d.seed)
    a = ap.parse_args(argv)
    spec = Spec(a.model, a.ep_size, a.redundant, a.batch_per_rank, a.windows, a.seed)
    try:
        path = write_default_trace(a.out, spec)
    except InputError as err:
        print(f"error: {err}")
        return 2
    from rackbook.core.traces import read_run

    gen = read_run(path)["generator"]
    print(
        f"wrote {path}: skew {gen['skew']:.6f}, static balancedness "
        f"{gen['calibration']['achieved']:.4f} (target {gen['calibration']['target']:g})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
