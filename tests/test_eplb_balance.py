"""rackbook.results.eplb_balance: the synthetic default trace of eplb-balance, loads from traces,
scoring."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import edited_registry

from rackbook import paths
from rackbook.core import traces
from rackbook.core.traces import Trace
from rackbook.errors import InputError
from rackbook.inputs.claims import Registry, load_claims
from rackbook.physics import eplb
from rackbook.results import eplb_balance

DEFAULT = paths.TRACES / "eplb-balance"


@pytest.fixture(scope="module")
def default_trace() -> traces.Trace:
    return traces.read_trace(DEFAULT)


def test_default_trace_is_synthetic_with_generator_seed_and_calibration(default_trace) -> None:
    run = default_trace.run
    assert run["kind"] == "synthetic"
    gen = run["generator"]
    assert gen["name"] == eplb.SYNTHETIC_GENERATOR
    assert gen["seed"] == 0
    assert gen["calibrated"] is True
    assert gen["calibration"]["target"] == 0.35
    assert gen["calibration"]["target_claim"] == "eplb-balance.before"
    assert (gen["calibration"]["ep_size"], gen["calibration"]["redundant"]) == (64, 64)
    assert "SYNTHETIC" in run["notes"]
    # 12 decode steps x 40 layers x 384 experts (shape from the model catalog)
    loads = eplb_balance.trace_loads(default_trace)
    assert loads.shape == (12, 40, 384)
    # each layer of each step counts batch 64 x EP 64 x top-6 = 24,576 assignments
    assert (loads.sum(axis=2) == 64 * 64 * 6).all()


def test_regenerating_with_the_same_seed_gives_identical_loads(default_trace) -> None:
    again = eplb_balance.build_default_trace(eplb_balance.Spec())
    np.testing.assert_array_equal(
        eplb_balance.loads_from_table(again.extra["expert_load"]),
        eplb_balance.trace_loads(default_trace),
    )
    assert again.run["generator"]["skew"] == default_trace.run["generator"]["skew"]
    other = eplb_balance.build_default_trace(eplb_balance.Spec(seed=1))
    assert not np.array_equal(
        eplb_balance.loads_from_table(other.extra["expert_load"]),
        eplb_balance.trace_loads(default_trace),
    )


def test_calibration_target_holds_within_001(default_trace) -> None:
    loads = eplb_balance.trace_loads(default_trace)
    # the step it was calibrated on
    static = eplb.static_placement(384, 64, 64)
    b0 = eplb.balancedness(eplb.rank_loads_from_placement(loads[0], static, 64))
    assert b0 == pytest.approx(0.35, abs=0.01)
    assert default_trace.run["generator"]["calibration"]["achieved"] == pytest.approx(b0, abs=1e-12)
    # and the later steps it was not calibrated on
    summary, per = eplb_balance.score(loads, 8, 64, 64)
    assert summary["static"] == pytest.approx(0.35, abs=0.01)
    assert list(per["window"]) == [8, 9, 10, 11]


def test_score_hand_example() -> None:
    # 2 steps, 1 layer, 4 experts, 2 ranks, no redundancy. Step 0 fits: expert loads
    # [4, 3, 2, 1] -> EPLB packs {0, 3} and {1, 2}: 5 and 5. Static: {0, 1} = 7 and {2, 3} = 3.
    # Scored step 1 = same loads: static mean 5 / max 7; EPLB 5 / 5 = 1.
    loads = np.array([[[4, 3, 2, 1]], [[4, 3, 2, 1]]], dtype=float)
    s, per = eplb_balance.score(loads, 1, 2, 0)
    assert s["static"] == pytest.approx(5 / 7)
    assert s["eplb"] == pytest.approx(1.0)
    # gap closed: (1 - 5/7) / (1 - 5/7) = 1; ratio to uniform = 1
    assert s["fraction_recovered_gap"] == pytest.approx(1.0)
    assert s["fraction_of_uniform"] == pytest.approx(1.0)
    assert len(per) == 1
    with pytest.raises(InputError, match="fit_windows"):
        eplb_balance.score(loads, 2, 2, 0)


def test_recovered_shares_of_the_claims_own_figures() -> None:
    r = eplb_balance.recovered_shares(0.35, 0.94, 0.969)
    pct = dict(zip(r["reading"], r["pct"], strict=True))
    assert pct["gap closed"] == pytest.approx(100 * 0.59 / 0.65)  # 90.77 %
    assert pct["ratio to uniform"] == pytest.approx(94.0)
    assert pct["ratio to uniform, same sampling"] == pytest.approx(100 * 0.94 / 0.969)  # 97.0


def test_uniform_floor_is_below_one_and_rises_with_tokens() -> None:
    small = eplb_balance.uniform_floor(40, 64 * 8 * 6, 64)
    large = eplb_balance.uniform_floor(40, 64 * 256 * 6, 64)
    assert 0 < small < large < 1
    # one rank only: max = mean
    assert eplb_balance.uniform_floor(4, 100, 1) == 1.0


def test_redundant_for_and_tokens_per_step() -> None:
    assert eplb_balance.redundant_for(64, 384) == 64  # 7 slots x 64 = 448
    assert eplb_balance.redundant_for(72, 384) == 120  # (6 + 1) x 72 = 504
    assert eplb_balance.redundant_for(8, 384, 0) == 0
    assert eplb_balance.tokens_per_step(64, 64, 6) == 24_576


def test_loads_from_table_rejects_incomplete_grid() -> None:
    df = eplb_balance.loads_table(np.ones((2, 2, 3)))
    with pytest.raises(InputError, match="incomplete grid"):
        eplb_balance.loads_from_table(df.iloc[:-1])
    with pytest.raises(InputError, match="duplicate"):
        eplb_balance.loads_from_table(pd.concat([df, df.iloc[:1]]))


# --------------------------------------------------------------------------------------------
# The chapter: analyse, outcome, every reading by hand, the claims from the registry

CLAIMS = (
    eplb_balance.BEFORE,
    eplb_balance.AFTER,
    eplb_balance.RECOVERED,
)
#: Small model sweeps, so that a test analysis takes about a second.
SMALL = {"ep_sizes": [64], "redundant_values": [64], "skews": [0.5], "batch_sizes": [8, 64]}
MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"


def _registry(**changes: dict) -> Registry:
    """A copy of the claims registry with fields of some claims changed (id -> {field: value})."""
    return edited_registry({k: lambda c, v=v: c.update(v) for k, v in changes.items()})


def _hand_trace(gpus: tuple[str, ...] = ("NVIDIA B300",)) -> Trace:
    """A recorded trace (on ``gpus``, serving DeepSeek-V4.1-Flash) of 3 decode steps of 1 layer
    x 4 experts, each with loads [4, 3, 2, 1]; 2 EP ranks, no redundant expert, EPLB fitted on
    steps 0-1 and scored on step 2.

    Static placement: ranks {0, 1} = 7 and {2, 3} = 3 tokens: balancedness mean 5 / max 7.
    EPLB, fitted on [8, 6, 4, 2], packs {0, 3} and {1, 2}: 5 and 5 tokens, balancedness 1.
    Gap closed (1 - 5/7) / (1 - 5/7) = 100 %; ratio to uniform 1 / 1 = 100 %. With one layer
    the legacy balancedness (over layers) is 1 for both placements.
    """
    table = eplb_balance.loads_table(np.array([[[4, 3, 2, 1]]] * 3, dtype=float))
    run = {
        "trace_id": "hand",
        "kind": "recorded",
        "parameters": {"batch_per_rank": 64, "model": MODEL},
        "hardware": {"gpus": [{"name": g} for g in gpus], "cpu_model": "CPU", "cpu_cores": 2},
    }
    empty = pd.DataFrame()
    return Trace(run, empty, empty, empty, {"expert_load": table})


HAND = eplb_balance.Params(ep_size=2, redundant=0, fit_windows=2, **SMALL)


@pytest.fixture(scope="module")
def hand_gpu() -> eplb_balance.Analysis:
    return eplb_balance.analyse(_hand_trace(), HAND)


@pytest.fixture(scope="module")
def shipped() -> eplb_balance.Analysis:
    return eplb_balance.analyse(traces.read_trace(DEFAULT), eplb_balance.Params(**SMALL))


CAL = {"calibration": {"target_claim": "eplb-balance.before"}}
GPUS = {"gpus": [{"name": "NVIDIA B300"}, {"name": "NVIDIA B300"}]}


@pytest.mark.parametrize(
    "run,claim,value,claimed,unit,verdict,margin,reason",
    [
        (
            {"kind": "synthetic", "generator": CAL},
            eplb_balance.BEFORE,
            0.3506,
            0.35,
            "",
            "untested",
            "-",
            "the synthetic routing model was calibrated to give 0.35: an input",
        ),
        (
            {"kind": "synthetic", "generator": CAL},
            eplb_balance.AFTER,
            0.89594,
            0.94,
            "",
            "untested",
            "-",
            "a synthetic routing model predicts 0.896, no measured EPLB run",
        ),
        (
            {"kind": "recorded", "hardware": {"gpus": [], "cpu_model": "Xeon", "cpu_cores": 2}},
            eplb_balance.RECOVERED,
            91.234,
            97,
            " %",
            "untested",
            "-",
            "recorded on 2-core Xeon, no GPU (91.2 %); the claim needs EPLB on Blackwell GPUs "
            "serving DeepSeek-V4.1-Flash",
        ),
        (  # GPUs, but another model: not a test of the claim
            {"kind": "recorded", "hardware": GPUS, "parameters": {"model": "Qwen3-30B-A3B"}},
            eplb_balance.AFTER,
            0.94,
            0.94,
            "",
            "untested",
            "-",
            "recorded on 2 x NVIDIA B300 (0.94); the claim needs EPLB on Blackwell GPUs serving "
            "DeepSeek-V4.1-Flash",
        ),
        (  # |0.943 - 0.94| = 0.003 <= 0.005
            {"kind": "recorded", "hardware": GPUS, "parameters": {"model": MODEL}},
            eplb_balance.AFTER,
            0.943,
            0.94,
            "",
            "consistent",
            "+0.003",
            "measured 0.943 against 0.94 (tolerance 0.005)",
        ),
        (  # |0.90 - 0.94| = 0.04 > 0.005
            {"kind": "recorded", "hardware": GPUS, "parameters": {"model": MODEL}},
            eplb_balance.AFTER,
            0.90,
            0.94,
            "",
            "inconsistent",
            "-0.04",
            "measured 0.9 against 0.94 (tolerance 0.005)",
        ),
    ],
    ids=["synthetic-input", "synthetic-prediction", "cpu", "other-model", "within", "outside"],
)
def test_every_run_reading_by_hand(run, claim, value, claimed, unit, verdict, margin, reason):
    tol = 0.5 if unit else 0.005
    r = eplb_balance.run_reading(run, claim, value, tol, claimed, unit)
    assert (r.reading, r.verdict, r.margin, r.reason) == ("this run", verdict, margin, reason)


@pytest.mark.parametrize(
    "claimed,ep,verdict,margin",
    [
        (0.94, 64, "possible", "0.94 in [1/64, 1]"),
        (0.35, 2, "impossible", "0.35 outside [1/2, 1]"),  # 2 ranks: at worst 1/2
        (1.2, 64, "impossible", "1.2 outside [1/64, 1]"),
    ],
)
def test_every_balancedness_physics_reading(claimed, ep, verdict, margin):
    """Balancedness = sum(mean) / sum(max) lies in [1/R, 1] for R ranks."""
    r = eplb_balance.balancedness_physics(eplb_balance.AFTER, claimed, ep, "note")
    assert (r.verdict, r.margin) == (verdict, margin)
    assert r.reason.startswith(f"balancedness must lie between 1/{ep} = {1 / ep:.3g} and 1 (")
    # the write-up states no EP size: the reason says which is assumed, and the fewest ranks
    # whose floor the figure clears (0.94: ceil(1 / 0.94) = 2; 0.35: 3)
    assert f"{ep} is assumed here" in r.reason and r.reason.endswith("; note")
    if claimed <= 1:
        assert f"at least {-(-100 // round(100 * claimed))} ranks" in r.reason


@pytest.mark.parametrize(
    "recovered,verdict,why",
    [
        (91, "possible", "one fixed reading gives it"),  # gap (0.94 - 0.35) / 0.65 = 90.77 %
        (94, "possible", "one fixed reading gives it"),  # ratio 0.94 / 1 = 94 %
        (97, "undetermined", "uniform routing to score 0.969 per step"),  # 0.94 / 0.97 = 0.969
        (
            90,
            "impossible",
            "uniform would need 1.044",
        ),  # 0.94 / 0.9 = 1.044 > 1; |90.77 - 90| > 0.5
    ],
)
def test_every_recovered_physics_reading(recovered, verdict, why):
    """The recovered share from the claim's 0.35 and 0.94, tolerance 0.5 percentage points."""
    r = eplb_balance.recovered_physics(0.35, 0.94, recovered, 0.5, 64)
    assert r.verdict == verdict and why in r.reason
    assert r.margin == "gap 90.8 %, ratio 94 %"


def test_hand_trace_analysis_by_hand(hand_gpu) -> None:
    a = hand_gpu
    assert a.summary["static"] == pytest.approx(5 / 7)
    assert a.summary["eplb"] == pytest.approx(1.0)
    assert a.summary["static_legacy"] == pytest.approx(1.0)
    assert a.per_window["window"].tolist() == [2]
    assert a.ranks["static"].tolist() == [7.0, 3.0] and a.ranks["eplb"].tolist() == [5.0, 5.0]
    assert a.model_pct["gap closed"] == pytest.approx(100.0)
    assert a.model_pct["ratio to uniform"] == pytest.approx(100.0)
    # the claim's own figures: (0.94 - 0.35) / 0.65 = 90.77 %; 0.94 / 1 = 94 %
    assert a.claim_pct["gap closed"] == pytest.approx(100 * 0.59 / 0.65)
    assert a.claim_pct["ratio to uniform"] == pytest.approx(94.0)
    assert a.floor_needed == pytest.approx(0.94 / 0.97)
    assert list(a.shares.columns) == [
        "reading",
        "formula",
        "model (%)",
        "claim's 0.35 and 0.94 (%)",
    ]
    assert a.testable
    v = a.values()
    assert (v["n_windows"], v["n_layers"], v["n_experts"], v["tokens_per_step"]) == (3, 1, 4, 10)
    assert (v["n_physical"], v["n_scored"], v["small_batch"], v["large_batch"]) == (4, 1, 8, 64)
    assert (v["claim_before"], v["claim_after"], v["claim_recovered"]) == (0.35, 0.94, 97)
    assert v["claim_after_pct"] == pytest.approx(94.0)


@pytest.mark.parametrize(
    "gpus,changes,run,physics",
    [
        # a CPU recording: untested; at EP 2 balancedness lies in [1/2, 1], so 0.35 is impossible
        ((), {}, ("untested",) * 3, ("impossible", "possible", "undetermined")),
        # B300: 5/7 vs 0.35, 1 vs 0.94, 100 % vs 97 %: every one outside its tolerance
        (("NVIDIA B300",), {}, ("inconsistent",) * 3, ("impossible", "possible", "undetermined")),
        (
            ("NVIDIA B300",),
            # 5/7 = 0.7143 is within 0.005 of 0.71; 1 of 1; 100 % of 100 %; gap (1 - 0.71) /
            # (1 - 0.71) = 100 %: one fixed reading gives the recovered share
            {
                eplb_balance.BEFORE: {"value": 0.71},
                eplb_balance.AFTER: {"value": 1.0},
                eplb_balance.RECOVERED: {"value": 100},
            },
            ("consistent",) * 3,
            ("possible",) * 3,
        ),
    ],
    ids=["cpu", "gpu-outside", "gpu-within"],
)
def test_every_chapter_reading(gpus, changes, run, physics) -> None:
    an = eplb_balance.analyse(_hand_trace(gpus=gpus), HAND, registry=_registry(**changes))
    out = eplb_balance.outcome(an)
    assert tuple(out.reading(c, "this run").verdict for c in CLAIMS) == run
    assert tuple(out.reading(c, "physics").verdict for c in CLAIMS) == physics
    # vLLM PR 50647's 0.9356 / 0.9919 is another metric (per-rank totals over all layers, Kimi
    # K3): an analogue, never a verdict, whatever the figures; no share of the uniform
    # potential is published
    published = tuple(out.reading(c, "published").verdict for c in CLAIMS)
    assert published == ("none published",) * 3
    h = {x.name: x for x in out.headlines}
    assert h["balancedness_eplb"].verdict == run[1] and h["balancedness_eplb"].kind == "measured"
    assert h["balancedness_eplb"].hardware == an.hardware
    assert h["uniform_floor_needed"].verdict == physics[2]
    assert [
        h[n].claim_id for n in ("balancedness_static", "balancedness_eplb", "recovered_gap")
    ] == [*CLAIMS]
    assert an.testable == bool(gpus)


def test_the_shipped_trace_headlines(shipped) -> None:
    """The synthetic trace: every claim untested (the calibrated one is an input)."""
    out = eplb_balance.outcome(shipped)
    assert out.result == "eplb-balance" and not shipped.testable
    assert {r.verdict for r in out.readings if r.reading == "this run"} == {"untested"}
    assert out.reading(eplb_balance.BEFORE, "this run").reason.endswith("0.35: an input")
    assert out.reading(eplb_balance.RECOVERED, "physics").verdict == "undetermined"
    got = {h.name: (h.value, h.unit, h.verdict, h.kind, h.hardware) for h in out.headlines}
    assert got == {
        "balancedness_static": (0.3506, "1", "untested", "synthetic", None),
        "balancedness_eplb": (0.8953, "1", "untested", "synthetic", None),
        "recovered_gap": (83.87, "%", "untested", "synthetic", None),
        "recovered_ratio": (89.53, "%", "not comparable", "synthetic", None),
        "uniform_floor_needed": (0.9691, "1", "undetermined", "modelled", None),
        "balancedness_static_legacy": (0.4469, "1", "not comparable", "synthetic", None),
        "balancedness_eplb_legacy": (0.9033, "1", "not comparable", "synthetic", None),
    }
    assert out.parameters == {
        "ep_size": 64,
        "redundant": 64,
        "groups": 1,
        "nodes": 1,
        "fit_windows": 8,
        "batch_per_rank": 64,
        "skew": 0.530067,
    }


def test_the_after_figure_comes_from_the_registry() -> None:
    """Change the published "after" balancedness in a copy of the registry: on the shipped
    synthetic trace the readings quote the new figure, and 0.94 is gone from every headline.
    (The synthetic skew is calibrated to .before, left unchanged.)"""
    tr = traces.read_trace(DEFAULT)
    reg = _registry(**{eplb_balance.AFTER: {"value": 0.90}})
    an = eplb_balance.analyse(tr, eplb_balance.Params(**SMALL), registry=reg)
    assert an.after == 0.90 and an.values()["claim_after"] == 0.90
    assert an.floor_needed == pytest.approx(0.90 / 0.97)
    assert an.claim_pct["gap closed"] == pytest.approx(100 * 0.55 / 0.65)
    out = eplb_balance.outcome(an)
    phys = out.reading(eplb_balance.AFTER, "physics")
    assert phys.margin == "0.9 in [1/64, 1]"
    h = {x.name: x for x in out.headlines}
    assert h["balancedness_eplb"].value == 0.8953  # the model's number does not move
    text = " ".join(x.definition + " " + x.reason for x in out.headlines)
    text += " ".join(r.reason + r.margin for r in out.readings)
    assert "0.94" not in text and "from 0.35 and 0.9:" in text


def test_the_recovered_share_comes_from_the_registry() -> None:
    """Move the recovered share to 90 % (tolerance 2 points): the claim's gap reading, 90.77 %,
    now gives it, and the physics reading turns from undetermined to possible."""
    tr = traces.read_trace(DEFAULT)
    reg = _registry(
        **{
            eplb_balance.RECOVERED: {
                "value": 90,
                "tolerance": {"absolute": 2.0, "basis": "edited"},
            }
        }
    )
    an = eplb_balance.analyse(tr, eplb_balance.Params(**SMALL), registry=reg)
    out = eplb_balance.outcome(an)
    assert out.reading(eplb_balance.RECOVERED, "physics").verdict == "possible"
    assert an.values()["claim_recovered"] == 90
    text = " ".join(x.definition + " " + x.reason for x in out.headlines)
    text += " ".join(r.reason for r in out.readings)
    assert "97" not in text


def test_the_calibration_target_comes_from_the_registry() -> None:
    small = eplb_balance.Spec(ep_size=8, redundant=0, batch_per_rank=8)
    published = load_claims().value(eplb_balance.BEFORE)
    assert eplb_balance.calibrate(small)["target"] == published
    reg = _registry(**{eplb_balance.BEFORE: {"value": 0.5}})
    # a small synthetic model, calibrated to the edited figure
    cal = eplb_balance.calibrate(small, registry=reg)
    assert cal["target"] == 0.5 and cal["balancedness_static"] == pytest.approx(0.5, abs=1e-3)


def test_no_claim_figure_is_typed_in_the_chapter() -> None:
    """The published figures reach the module, its figures and the notebook only through the
    registry (tests may type them; src and notebooks may not)."""
    files = [
        paths.ROOT / "src/rackbook/results/eplb_balance.py",
        paths.ROOT / "src/rackbook/book/figures/eplb_balance.py",
        paths.NOTEBOOKS / "eplb-balance.ipynb",
    ]
    reg = load_claims()
    for f in files:
        text = f.read_text()
        for cid in CLAIMS:
            figure = re.escape(f"{reg.value(cid):g}")
            assert not re.search(rf"(?<![\w.]){figure}(?![\w.])", text), (f.name, cid)


def test_figures_draw_from_the_analysis(hand_gpu) -> None:
    """Every figure: units on both axes, the legend outside the axes; the sweeps carry the
    claim's figures as labelled reference lines and say they are the synthetic model."""
    import matplotlib

    matplotlib.use("Agg")
    from rackbook.book.figures import eplb_balance as figures

    assert list(figures.FIGURES) == ["fig_ranks", "fig_sweeps"]
    fig = figures.rank_loads(hand_gpu)
    ax = fig.axes[0]
    assert [p.get_height() for p in ax.patches] == [7.0, 3.0, 5.0, 5.0]
    assert ax.get_title() == "Layer 0, decode step 2: load per rank (1 x NVIDIA B300)"
    matplotlib.pyplot.close(fig)
    for name, draw in figures.FIGURES.items():
        fig = draw(hand_gpu)
        ax = fig.axes[0]
        assert ax.get_legend() is None and len(fig.legends) == 1
        assert "(" in ax.get_xlabel() and "(" in ax.get_ylabel()
        if name != "fig_ranks":  # one panel per sweep, each with the claim's two lines
            assert len(fig.axes) == 4, name
            for panel in fig.axes:
                labels = panel.get_legend_handles_labels()[1]
                assert "claim: 0.35" in labels and "claim: 0.94" in labels, name
                assert "(" in panel.get_xlabel()
            assert ax.get_ylabel() == "balancedness (0 to 1)"
            assert "synthetic routing model" in fig.get_suptitle()
        matplotlib.pyplot.close(fig)


# --------------------------------------------------------------------------------------------
# issue 39, item 7: the survivors of the 16:16 mutation run (benchmarks/README.md)

SMALL_SPEC = ["--ep-size", "8", "--redundant", "0", "--batch-per-rank", "8", "--windows", "2"]


def test_main_writes_a_small_synthetic_trace_and_says_what_it_calibrated(tmp_path, capsys):
    out = tmp_path / "small"
    assert eplb_balance.main([str(out), *SMALL_SPEC, "--seed", "3"]) == 0
    # 8 ranks x batch 8 x top-6 = 384 assignments a layer; the skew from calibrate_skew itself
    kw = {"num_layers": 40, "num_experts": 384, "tokens_per_layer": 384, "seed": 3}
    cal = eplb.calibrate_skew(0.35, 8, **kw)
    tr = traces.read_trace(out)
    printed = capsys.readouterr()
    assert printed.err == ""
    assert printed.out == (
        f"wrote {out}: skew {cal['skew']:.6f}, static balancedness "
        f"{cal['balancedness_static']:.4f} (target 0.35)\n"
    )
    assert tr.run["parameters"] == {
        "model": "deepseek-v4.1-flash",
        "ep_size": 8,
        "redundant": 0,
        "batch_per_rank": 8,
        "windows": 2,
        "seed": 3,
        "num_layers": 40,
        "num_experts": 384,
        "top_k": 6,
        "tokens_per_step": 384,
        "window": "one decode forward pass (engine step)",
    }
    gen = tr.run["generator"]
    assert (gen["seed"], gen["skew"], gen["calibrated"]) == (3, cal["skew"], True)
    assert gen["calibration"] == {
        "quantity": "vLLM balancedness of static placement, one decode step (window 0)",
        "target": 0.35,
        "target_claim": "eplb-balance.before",
        "achieved": cal["balancedness_static"],
        "ep_size": 8,
        "redundant": 0,
    }
    loads = eplb_balance.trace_loads(tr)
    assert loads.shape == (2, 40, 384) and (loads.sum(axis=2) == 384).all()
    want, _ = eplb.synthetic_loads(40, 384, 384, cal["skew"], 3, 2)
    np.testing.assert_array_equal(loads, want)
    assert (tr.run["kind"], tr.run["commands"]) == (
        "synthetic",
        ["bash env/record/eplb-balance.sh"],
    )
    assert tr.run["engine"] == {"name": "none", "version": None}
    assert (gen["name"], gen["model"]) == (
        eplb.SYNTHETIC_GENERATOR,
        eplb.synthetic_loads(1, 2, 1, 0, 0)[1]["note"],
    )
    assert tr.run["notes"] == (
        "SYNTHETIC routing, not measured: no DeepSeek-V4.1-Flash routing statistics are public. "
        "Zipf-like popularity per layer over a seeded permutation, multinomial draws per decode "
        "step; skew calibrated so that static placement at EP 8 (0 redundant) has balancedness "
        "0.35 (claim eplb-balance.before). Balance after EPLB is a prediction of this model."
    )
    for table in ("requests", "itl", "points"):  # written, with no rows
        assert (out / f"{table}.parquet").is_file() and getattr(tr, table).empty


def test_main_refuses_a_layout_in_one_error_line_writing_nothing(tmp_path, capsys) -> None:
    out = tmp_path / "bad"
    assert eplb_balance.main([str(out), "--ep-size", "7", "--redundant", "0"]) == 2
    printed = capsys.readouterr()
    problem = "384 experts + 0 redundant = 384 physical experts do not divide evenly over 7 ranks"
    assert (printed.out, printed.err) == ("", f"error: -: ep_size: {problem}\n")
    assert not out.exists()


def test_describe_says_what_each_trace_holds(shipped) -> None:
    hand = "trace hand (recorded): 3 windows x 1 layers x 4 experts, 10 token-expert "
    hand += "assignments per layer per window"
    assert eplb_balance.analyse(_hand_trace(), HAND).describe() == hand
    # vLLM's logged balancedness, when the trace has it: 2 lines, mean of 0.5 and 0.7
    tr = _hand_trace()
    tr.extra["eplb_log"] = pd.DataFrame({"balancedness": [0.5, 0.7]})
    logged = eplb_balance.analyse(tr, HAND).describe()
    assert logged == hand + "\nvLLM logged balancedness: 2 lines, mean 0.6000"
    # the shipped synthetic trace: its generator and calibration (0.3498 on step 0)
    assert shipped.describe().splitlines() == [
        f"trace {shipped.trace.trace_id} (synthetic): 12 windows x 40 layers x 384 experts, "
        "24,576 token-expert assignments per layer per window",
        "generator: rackbook.eplb.synthetic_loads (zipf-permuted-multinomial v1), seed 0, "
        "skew 0.5301",
        "calibrated: vLLM balancedness of static placement, one decode step (window 0) = "
        "0.3498 (target 0.35, claim eplb-balance.before) at EP 64, 64 redundant",
    ]


def test_loads_table_and_back_in_any_row_order() -> None:
    arr = np.arange(12, dtype=float).reshape(2, 2, 3)  # 2 windows x 2 layers x 3 experts
    df = eplb_balance.loads_table(arr)
    assert list(df.columns) == ["window", "layer", "expert", "tokens"]
    assert [str(t) for t in df.dtypes] == ["int64", "int64", "int64", "float64"]
    # row 5 = window 0, layer 1, expert 2 (C order), 5 tokens
    assert df.iloc[5].tolist() == [0, 1, 2, 5.0]
    back = eplb_balance.loads_from_table(df.sample(frac=1, random_state=0))
    np.testing.assert_array_equal(back, arr)


def _table_with(change: str) -> pd.DataFrame:
    df = eplb_balance.loads_table(np.ones((2, 2, 3)))
    if change == "empty":
        return df.iloc[:0]
    if change in ("window", "layer", "expert"):
        return df.assign(**{change: df[change] - 1})
    if change == "short":
        return df.iloc[:-1]
    if change == "duplicate":
        return pd.concat([df, df.iloc[:1]])
    return df.assign(tokens=np.where(df["window"] == 1, -2.0, 1.0))  # window 1's first row


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ("empty", "expert_load", "no rows"),
        ("window", "expert_load.window", "negative index"),
        ("layer", "expert_load.layer", "negative index"),
        ("expert", "expert_load.expert", "negative index"),
        ("short", "expert_load", "incomplete grid: 11 rows for 2 windows x 2 layers x 3 experts"),
        ("duplicate", "expert_load", "duplicate (window, layer, expert) rows"),
        ("negative", "expert_load window 1[0][0]", "negative token count -2"),
    ],
)
def test_loads_from_table_refuses_by_file_field_and_problem(change, field, problem) -> None:
    with pytest.raises(InputError) as e:
        eplb_balance.loads_from_table(_table_with(change), "t/expert_load.parquet")
    got = (e.value.file, e.value.field, e.value.problem)
    assert got == ("t/expert_load.parquet", field, problem)


def test_trace_loads_needs_the_expert_load_table() -> None:
    tr = _hand_trace()
    tr.path = Path("traces/hand")
    tr.extra["expert_load"] = _table_with("layer")  # a bad table: named by the trace's path
    with pytest.raises(InputError) as e:
        eplb_balance.trace_loads(tr)
    assert (e.value.file, e.value.field) == ("traces/hand", "expert_load.layer")
    tr.extra.pop("expert_load")
    with pytest.raises(InputError) as e:
        eplb_balance.trace_loads(tr)
    got = (e.value.file, e.value.field, e.value.problem)
    assert got == ("traces/hand", "expert_load", "the trace has no expert_load table")


def test_main_says_how_it_is_called(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        eplb_balance.main(["-h"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert out.startswith("usage: python -m rackbook.results.eplb_balance [-h] [--model MODEL]")
    words = " ".join(out.split())  # argparse wraps the description (the module's docstring)
    assert "out trace folder to write" in words
    assert "eplb-balance: with no public routing statistics, the default trace is a" in words


@pytest.mark.parametrize("fit", [0, 3])
def test_score_needs_a_fitted_and_a_scored_window(fit) -> None:
    loads = np.array([[[4, 3, 2, 1]]] * 3, dtype=float)
    with pytest.raises(InputError) as e:
        eplb_balance.score(loads, fit, 2, 0)
    problem = "need 1 <= fit_windows < 3 windows (at least one left to score)"
    assert (e.value.file, e.value.field, e.value.problem) == ("-", "fit_windows", problem)
    # the bounds themselves: 1 fitted window, or 2 leaving one to score
    assert eplb_balance.score(loads, 1, 2, 0)[0]["scored"] == 2
    assert eplb_balance.score(loads, 2, 2, 0)[0]["scored"] == 1


def test_every_headline_definition_and_reason_of_the_hand_trace(hand_gpu) -> None:
    legacy = "legacy vLLM balancedness (reduced over layers)"
    why_legacy = "legacy definition, shown to read vLLM logs of about Aug 2025 to Aug 2026"
    gap = "(T_eplb - T_static) / (T_uniform - T_static), T = balancedness, T_uniform = 1"
    needed = "per-step balancedness uniform routing must score for the claim's after / that to "
    needed += "equal its recovered share"
    got = {h.name: (h.definition, h.reason) for h in eplb_balance.outcome(hand_gpu).headlines}
    assert got == {
        "balancedness_static": (
            "vLLM balancedness of static placement, mean over scored decode steps",
            "measured 0.714 against 0.35 (tolerance 0.005)",  # 5/7
        ),
        "balancedness_eplb": (
            "vLLM balancedness after EPLB fitted on 2 steps, mean over later steps",
            "measured 1 against 0.94 (tolerance 0.005)",
        ),
        "recovered_gap": (gap, "measured 100 % against 97 % (tolerance 0.5 %)"),
        "recovered_ratio": (
            "T_eplb / T_uniform, T = balancedness, T_uniform = 1",
            "a second reading of the recovered share, shown beside the gap closed",
        ),
        "uniform_floor_needed": (needed, "arithmetic on the two published figures"),
        "balancedness_static_legacy": (f"{legacy} of static placement", why_legacy),
        "balancedness_eplb_legacy": (f"{legacy} after EPLB", why_legacy),
    }


def test_what_would_flip_the_hand_trace_readings(hand_gpu) -> None:
    # the model's EPLB balancedness at batch 8 and 64 per rank (its sweep), the floor the
    # claim needs (0.94 / 0.97 = 0.969) and the model's own: seed 0 splits the 10 tokens of
    # the one scored step 6 | 4 over the 2 ranks, mean 5 / max 6 = 0.833
    by = hand_gpu.sweeps["batch_per_rank"].set_index("batch_per_rank")["eplb"]
    model = f"the routing model gives {by[8]:.3f} at batch 8 per rank and {by[64]:.3f} at 64"
    assert hand_gpu.floor == pytest.approx(5 / 6)
    assert eplb_balance.outcome(hand_gpu).flips == [
        "after, this run: a recording on Blackwell GPUs with EPLB logging balancedness within "
        f"2 ranks; {model}: the claim's batch decides",
        "recovered, physics: possible if uniform routing scored 0.969 per step at the claim's "
        "batch (the model's per-step floor here is 0.833)",
        "all three: balancedness counts tokens; at small decode batches expert time follows "
        "the weight bytes each rank reads, so balance costs less than these figures suggest",
    ]


def test_the_values_the_prose_quotes_of_the_hand_trace(hand_gpu) -> None:
    by = hand_gpu.sweeps["batch_per_rank"].set_index("batch_per_rank")["eplb"]
    assert hand_gpu.values() == {
        "claim_before": 0.35,
        "claim_after": 0.94,
        "claim_recovered": 97.0,
        "trace_kind": "recorded",
        "top_k": 6,
        "batch_per_rank": 64,
        "floor": pytest.approx(5 / 6),
        "ep": 2,
        "redundant": 0,
        "fit_windows": 2,
        "floor_needed": pytest.approx(0.94 / 0.97),
        "skew": hand_gpu.skew,
        "claim_after_pct": pytest.approx(94.0),
        "n_windows": 3,
        "n_layers": 1,
        "n_experts": 4,
        "tokens_per_step": 10,
        "b_static": pytest.approx(5 / 7),
        "b_eplb": 1.0,
        "b_static_legacy": 1.0,
        "b_eplb_legacy": 1.0,
        "n_physical": 4,
        "n_scored": 1,
        "pct_gap": pytest.approx(100.0),  # (1 - 5/7) / (1 - 5/7)
        "pct_ratio": 100.0,
        "pct_floor": pytest.approx(120.0),  # 1 / (5/6)
        "claim_gap": pytest.approx(100 * 0.59 / 0.65),
        "claim_ratio": pytest.approx(94.0),
        "eplb_small_batch": by[8],
        "eplb_large_batch": by[64],
        "small_batch": 8,
        "large_batch": 64,
        "before_physics": "impossible",  # 0.35 below 1/2 at 2 ranks
        "after_physics": "possible",
        "recovered_physics": "undetermined",
        "before_after_physics": "impossible and possible",
    }


def test_values_count_redundant_slots_agreeing_verdicts_and_the_sweeps_ends() -> None:
    # 2 redundant slots: 4 + 2 physical experts; the before figure moved to 0.71 (possible at
    # 2 ranks, as 0.94 is); three batch sizes, the ends are the first and the last
    params = eplb_balance.Params(
        ep_size=2, redundant=2, fit_windows=2, **{**SMALL, "batch_sizes": [8, 16, 64]}
    )
    reg = _registry(**{eplb_balance.BEFORE: {"value": 0.71}})
    an = eplb_balance.analyse(_hand_trace(), params, registry=reg)
    v = an.values()
    assert (v["n_physical"], v["small_batch"], v["large_batch"]) == (6, 8, 64)
    assert v["before_after_physics"] == "both possible"
    by = an.sweeps["batch_per_rank"].set_index("batch_per_rank")["eplb"]
    assert (v["eplb_small_batch"], v["eplb_large_batch"]) == (by[8], by[64])
    assert an.ranks.columns.tolist() == ["rank", "static", "eplb"]
    assert an.ranks["rank"].tolist() == [0, 1]


def _sweep_row(skew, seed, ep, redundant, batch, fit, groups=1, nodes=1) -> dict:
    """One row of a model sweep computed here: synthetic loads of the catalog's shape for
    ``fit + 4`` steps, scored, with uniform routing's floor over the 4 scored steps."""
    shape = eplb_balance.model_shape()
    n = batch * ep * shape.top_k
    loads, _ = eplb.synthetic_loads(shape.num_layers, shape.num_experts, n, skew, seed, fit + 4)
    row, _ = eplb_balance.score(loads, fit, ep, redundant, groups, nodes)
    row["uniform_floor"] = eplb_balance.uniform_floor(shape.num_layers, n, ep, seed, 4)
    return row | {"skew": skew, "batch_per_rank": batch}


def test_a_recorded_trace_is_modelled_at_the_skew_its_static_balancedness_gives() -> None:
    # no generator: the skew is calibrated to the measured 5/7 at the chapter's EP 2
    hand_gpu = eplb_balance.analyse(_hand_trace(), HAND)
    spec = eplb_balance.Spec(ep_size=2, redundant=0)
    skew = eplb_balance.calibrate(spec, target=5 / 7)["skew"]
    assert hand_gpu.skew == skew
    # the sweeps: that skew and the 0.5 asked for; EP 64 with the redundant slots it implies
    assert hand_gpu.sweeps["skew"]["skew"].tolist() == [0.5, round(skew, 4)]
    ep = hand_gpu.sweeps["ep_size"]
    assert (ep["ep_size"].tolist(), ep["redundant"].tolist()) == ([64], [64])
    # each row as computed here, seed 0, fitted on 2 steps and scored on 4
    got = hand_gpu.sweeps["batch_per_rank"].iloc[0].to_dict()
    assert got == pytest.approx(_sweep_row(skew, 0, 2, 0, 8, 2))


def test_the_synthetic_trace_is_modelled_at_its_own_skew_and_seed() -> None:
    tr = traces.read_trace(DEFAULT)
    # its skew moved to 0.6 (calibrating again would give about 0.53) and its seed to 2
    tr.run["generator"] = {**tr.run["generator"], "skew": 0.6, "seed": 2}
    params = eplb_balance.Params(groups=2, nodes=2, **{**SMALL, "batch_sizes": [8]})
    an = eplb_balance.analyse(tr, params)
    assert an.skew == 0.6  # not calibrated again
    got = an.sweeps["batch_per_rank"].iloc[0].to_dict()
    assert got == pytest.approx(_sweep_row(an.skew, 2, 64, 64, 8, 8, groups=2, nodes=2))


def test_a_recorded_trace_with_a_generator_is_still_calibrated() -> None:
    tr = _hand_trace()
    tr.run["generator"] = {"skew": 9.0, "seed": 0}
    an = eplb_balance.analyse(tr, HAND)
    spec = eplb_balance.Spec(ep_size=2, redundant=0)
    assert an.skew == eplb_balance.calibrate(spec, target=5 / 7)["skew"]  # not 9


@pytest.mark.parametrize(("parameters", "batch"), [({"batch_per_rank": 16}, 16), ({}, 64)])
def test_the_batch_per_rank_is_the_traces_else_64(parameters, batch) -> None:
    tr = _hand_trace()
    tr.run["parameters"] = {"model": MODEL, **parameters}
    assert eplb_balance.analyse(tr, HAND).batch_per_rank == batch


@pytest.mark.parametrize(("gpu", "testable"), [("NVIDIA B200", True), ("NVIDIA H100", False)])
def test_any_blackwell_gpu_can_test_the_claims(gpu, testable) -> None:
    assert eplb_balance.analyse(_hand_trace(gpus=(gpu,)), HAND).testable is testable


def test_uniform_floor_over_the_scored_steps_of_the_first_steps_tokens() -> None:
    # 4 steps x 2 layers x 4 experts, step 1 doubled: a step's tokens are the first one's
    # (10 a layer); EPLB fitted on 2, scored on 2: the floor is uniform routing's over 2
    # steps of 2 layers of 10 tokens on 2 ranks
    one, two = [[4, 3, 2, 1]] * 2, [[8, 6, 4, 2]] * 2
    tr = _hand_trace()
    tr.extra["expert_load"] = eplb_balance.loads_table(np.array([one, two, one, one], float))
    an = eplb_balance.analyse(tr, HAND)
    assert an.floor == eplb_balance.uniform_floor(2, 10, 2, windows=2)
    assert an.values()["tokens_per_step"] == 10


def test_the_shares_table_of_the_hand_trace() -> None:
    # model 5/7 -> 1 with a floor of 5/6; the claim's 0.35 -> 0.94 (an analysis of its own:
    # mutmut counts a module fixture's calls for the first test that uses it)
    hand = eplb_balance.analyse(_hand_trace(), HAND)
    assert hand.shares.to_dict("list") == {
        "reading": ["gap closed", "ratio to uniform", "ratio to uniform, same sampling"],
        "formula": [
            "(T_eplb - T_static) / (T_uniform - T_static), T_uniform = 1",
            "T_eplb / T_uniform, T_uniform = 1",
            "T_eplb / T_uniform, T_uniform = per-step balancedness of uniform routing",
        ],
        "model (%)": pytest.approx([100.0, 100.0, 120.0]),
        "claim's 0.35 and 0.94 (%)": pytest.approx([100 * 0.59 / 0.65, 94.0, 94 * 6 / 5]),
    }


def test_score_summary_every_field_by_hand() -> None:
    # see test_score_hand_example: static 5/7, EPLB 1, one layer (legacy 1 both)
    loads = np.array([[[4, 3, 2, 1]], [[4, 3, 2, 1]]])
    s, _ = eplb_balance.score(loads, 1, 2, 0)
    assert s == {
        "static": pytest.approx(5 / 7),
        "eplb": 1.0,
        "static_legacy": 1.0,
        "eplb_legacy": 1.0,
        "fraction_recovered_gap": pytest.approx(1.0),
        "fraction_of_uniform": 1.0,
        "ep_size": 2,
        "redundant": 0,
        "fit_windows": 1,
        "scored": 1,
    }


@pytest.mark.parametrize(
    ("layout", "field", "problem"),
    [
        ((2, 0, 3, 1), "groups", "3 groups do not divide 4 experts"),
        ((3, 2, 2, 2), "nodes", "3 ranks do not divide evenly over 2 nodes"),
    ],
)
def test_score_checks_groups_and_nodes(layout, field, problem) -> None:
    loads = np.array([[[4, 3, 2, 1]], [[4, 3, 2, 1]]])
    with pytest.raises(InputError) as e:
        eplb_balance.score(loads, 1, *layout)
    assert (e.value.field, e.value.problem) == (field, problem)


def test_uniform_floor_by_its_definition() -> None:
    # 8 steps (the default) from default_rng(0) (the default seed) of 3 layers x 20 tokens
    # over 2 ranks, each step's balancedness, then their mean
    rng = np.random.default_rng(0)
    want = np.mean([eplb.balancedness(rng.multinomial(20, [0.5, 0.5], size=3)) for _ in range(8)])
    assert eplb_balance.uniform_floor(3, 20, 2) == want


@pytest.mark.parametrize(
    ("claimed", "ep", "verdict", "clears"),
    [
        (0.5, 2, "possible", "; the figure clears the floor of any EP size of at least 2 ranks"),
        (1.0, 64, "possible", "; the figure clears the floor of any EP size of at least 1 ranks"),
        (1.2, 64, "impossible", ""),
        (0.0, 64, "impossible", ""),  # no number of ranks: 1 / 0
    ],
)
def test_balancedness_physics_at_its_bounds(claimed, ep, verdict, clears) -> None:
    r = eplb_balance.balancedness_physics(eplb_balance.AFTER, claimed, ep, "note")
    assert r.verdict == verdict
    assert r.reason == (
        f"balancedness must lie between 1/{ep} = {1 / ep:.3g} and 1 (the write-up does not "
        f"state the EP ranks: {ep} is assumed here (the chapter's ep_size){clears}); note"
    )


@pytest.mark.parametrize(
    ("recovered", "verdict", "tail"),
    [
        (94.5, "possible", "one fixed reading gives it"),  # |94 - 94.5| = 0.5: the tolerance
        (
            100,
            "undetermined",  # needs 0.94 / 1 = 0.94 = after: the lowest uniform can score
            "neither is 100 % within 0.5; it needs uniform routing to score 0.940 per step, "
            "which the batch decides",
        ),
    ],
)
def test_recovered_physics_at_its_bounds(recovered, verdict, tail) -> None:
    r = eplb_balance.recovered_physics(0.35, 0.94, recovered, 0.5, 64)
    assert r.verdict == verdict
    assert r.reason == f"from 0.35 and 0.94: 90.8 % of the gap closed, 94 % of uniform; {tail}"


def test_run_readings_of_a_synthetic_trace_are_flagged_and_b200_tests() -> None:
    r = eplb_balance.run_reading({"kind": "synthetic"}, eplb_balance.AFTER, 0.9, 0.005, 0.94, "")
    assert r.synthetic is True
    run = {"kind": "recorded", "hardware": {"gpus": [{"name": "NVIDIA B200"}]}}
    run["parameters"] = {"model": MODEL}
    r = eplb_balance.run_reading(run, eplb_balance.AFTER, 0.943, 0.005, 0.94, "")
    assert (r.verdict, r.margin) == ("consistent", "+0.003")


def test_the_physics_readings_end_with_their_notes(hand_gpu) -> None:
    out = eplb_balance.outcome(hand_gpu)
    before = out.reading(eplb_balance.BEFORE, "physics").reason
    assert before.endswith("; a skewed routing with static placement can score it")
    assert out.reading(eplb_balance.AFTER, "physics").reason.endswith(hand_gpu.model_note)


def test_model_shape_counts_the_moe_layers_and_refuses_a_model_without_experts(tmp_path):
    # DeepSeek-R1: 61 layers, the first 3 dense (num_moe_layers 58), 256 experts, top-8
    assert eplb_balance.model_shape("deepseek-r1") == eplb_balance.Shape(58, 256, 8)
    text = (paths.DATA / "models" / "deepseek-r1.yaml").read_text()
    yaml = tmp_path / "deepseek-r1.yaml"
    yaml.write_text(text.replace("  num_routed_experts: 256\n", "  num_routed_experts: null\n"))
    with pytest.raises(InputError) as e:
        eplb_balance.model_shape(str(yaml))
    problem = "the model catalog lacks layers, experts or top-k"
    assert (e.value.file, e.value.field, e.value.problem) == (str(yaml), "moe", problem)
