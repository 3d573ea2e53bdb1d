"""``rackbook validate`` (:mod:`rackbook.results.validation`): the mapping loads with measured
values read from the published traces and figures, Little's law by hand, the summary on a tiny
fixture, and leave-one-source-out that really leaves the source out."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rackbook.errors import InputError
from rackbook.physics import expected as E
from rackbook.results import validation as V


def point(pid: str, source: str, measured: float = 100.0, **kw) -> V.Point:
    base = dict(
        id=pid, source=source, primary=True, measured=measured, counted="output",
        phase="decode", model="deepseek-v4.1-flash", precision=None, gpu="gb300", gpus=4,
        isl=None, osl=None, batch=4.0, batch_how="test",
    )  # fmt: skip
    return V.Point(**(base | kw))


def test_littles_law_by_hand() -> None:
    # 16 clients, OSL 1,024, TTFT 0.557 s, TPOT 7.02 ms: decode 1,023 x 7.02 ms = 7.1815 s;
    # 16 x 7.1815 / (0.557 + 7.1815) = 14.848 decoding
    assert E.littles_law(16, 1024, 0.557, 0.00702) == pytest.approx(14.848, rel=1e-4)
    assert E.littles_law(16, 1024, 0.0, 0.00702) == 16


def test_mapping_loads_measured_values_from_the_published_data() -> None:
    points, excluded = V.load()
    by_id = {p.id: p for p in points}
    # the SGLang cookbook's GB300 low-latency c16 cell: 3,710 total tok/s/GPU, MTP 3-1-4
    p = by_id["gb300/flash/fp4/low-latency/c16"]
    assert p.measured == 3710.0 and p.counted == "total" and p.verify == 4
    # the random dataset's mean lengths, not the caps 8,192 / 1,024 (range ratio 0)
    assert (p.isl, p.osl) == (4096.5, 512.5)
    # Little's law from the cell's mean TTFT 0.557 s and TPOT 7.02 ms (16 clients, mean OSL
    # 512.5): 16 x 511.5 x 7.02 ms / (0.557 s + 3.591 s) = 13.85 decoding
    assert p.batch == pytest.approx(13.85, abs=0.01)
    assert p.batch == pytest.approx(E.littles_law(16, 512.5, 0.557, 0.00702), rel=1e-9)
    # a per-node figure is divided by 8 GPUs: 22,300 / 8 = 2,787.5
    assert by_id["lmsys-large-scale-ep.decode-per-node"].measured == 2787.5
    # DeepSeek's production decode: 14,800 / 8 per GPU on 144 H800, Little's law batch
    # 1,850 / 21 tok/s per user x 144 = 12,686; the prefill figure counts cache hits: excluded
    d = by_id["deepseek-day6.decode-per-node"]
    assert (d.measured, d.gpu, d.gpus, d.batch, d.context) == (1850.0, "h800", 144, 12686, 4989)
    assert any("cache hits" in x.reason for x in excluded if x.id.startswith("deepseek-day6"))
    assert len(points) >= 45  # 49 less InferenceX's 5 (a UI test fixture, not published)


def test_a_point_naming_no_row_is_one_error(tmp_path) -> None:
    bad = tmp_path / "v.yaml"
    bad.write_text(
        "schema_version: 1\nsources:\n  mlperf-v6.1-dsr1: {primary: true, defaults: {}}\n"
        "points:\n  - {source: mlperf-v6.1-dsr1, point_id: nope, model: deepseek-v3, gpu: gb300,"
        " gpus: 8, counted: output, phase: decode}\n"
    )
    with pytest.raises(InputError, match="nope"):
        V.load(bad)


def test_summary_on_a_tiny_fixture() -> None:
    # measured / expected = 0.5, 1, 2, 4: median (1 + 2) / 2 = 1.5; within 2x: 0.5, 1, 2 = 3/4;
    # intervals [0.5 E, 2 E]: 0.5, 1, 2 inside, 4 outside = 3/4
    preds = [
        V.Prediction(point(f"p{i}", "s", measured=r * 100), 100.0, 50.0, 200.0, "dp-ep")
        for i, r in enumerate((0.5, 1.0, 2.0, 4.0))
    ]
    s = V.summary(preds)
    assert s == {"points": 4, "median_ratio": 1.5, "within_2x": 0.75, "inside": 0.75}
    assert V.summary([])["points"] == 0


def test_leave_one_source_out_excludes_the_source() -> None:
    # grid rows: source "a" (2 points) fits row 2 exactly (log error 1 elsewhere); source "bad"
    # (1 point) fits row 5 exactly (log error 10 elsewhere). Each source weighs the same:
    # all points -> row 5 (cost 1 against 100 at row 2); without "bad" -> row 2.
    pts = [point("a1", "a"), point("a2", "a"), point("b1", "bad")]
    rows = len(V.EFFICIENCIES) * len(V.LAYER_S)
    logs = np.empty((rows, 3))
    logs[:, :2] = 1.0
    logs[2, :2] = 0.0
    logs[:, 2] = 10.0
    logs[5, 2] = 0.0
    res = V.fit_points(pts, logs)

    def row(f: E.Fit) -> int:
        return V.EFFICIENCIES.index(f.efficiency) * len(V.LAYER_S) + V.LAYER_S.index(f.layer_s)

    assert row(res.fit) == 5
    assert row(res.held_out["bad"]) == 2
    assert row(res.held_out["a"]) == 5
    # the held-out interval comes from the other source's residuals only (all 0 at row 2)
    assert res.held_out["bad"].log_low == res.held_out["bad"].log_high == 0.0
    stored = E.Fit(1.0, 0.0, 0.0, 0.0, held_out=V.fit_document(res)["held_out"])
    assert V.held_out_fit(stored, "bad").efficiency == V.EFFICIENCIES[2 // len(V.LAYER_S)]
    assert V.held_out_fit(stored, "bad").layer_s == V.LAYER_S[2 % len(V.LAYER_S)]


def test_weighted_quantiles_by_hand() -> None:
    # equal weights: midpoints 0.125, 0.375, 0.625, 0.875 -> 0.5 is 1.5, 0.1 the least value
    v = np.array([3.0, 0.0, 2.0, 1.0])
    assert V.weighted_quantiles(v, np.ones(4), (0.1, 0.5)) == (0.0, 1.5)
    # value 3 weighing 3 (half the weight): midpoints 1/12, 3/12, 5/12, 9/12 -> 0.5 at 2.25
    w = np.array([3.0, 1.0, 1.0, 1.0])
    assert V.weighted_quantiles(v, w, (0.5,)) == pytest.approx((2.25,))
    assert V.weighted_quantiles(np.array([]), np.array([]), (0.1, 0.9)) == (0.0, 0.0)


def test_intervals_come_from_held_out_errors_only() -> None:
    # three sources, one point each: "a" fits grid row 0 only (log error 2 elsewhere), "b" and
    # "c" every row but 0 (error 5 there). The fit on all is row 1, where b and c have no
    # fitted residual; held out, "a" is predicted by row 1 (error 2), "b" and "c" by row 1
    # too (a + c or a + b: cost 4 against 25 at row 0; error 0). The interval reads those.
    pts = [point("a1", "a"), point("b1", "b"), point("c1", "c")]
    rows = len(V.EFFICIENCIES) * len(V.LAYER_S)
    logs = np.zeros((rows, 3))
    logs[1:, 0] = 2.0  # "a" fits row 0 only
    logs[0, 1:] = 5.0  # "b" and "c" fit every row but 0
    res = V.fit_points(pts, logs)
    r, w = V.held_out_logs(pts, logs)
    assert sorted(r.tolist()) == [0.0, 0.0, 2.0] and w.tolist() == [1.0, 1.0, 1.0]
    lo, hi = V.weighted_quantiles(r, w, V.interval_levels(3))
    assert (res.fit.log_low, res.fit.log_high) == (lo, hi) and hi > 0
    # the fold without "b": its interval is read from a and c, each held out with b too:
    # a (fit on c alone: row 1, error 2) and c (fit on a alone: row 0, error 5)
    rb, _ = V.held_out_logs(pts, logs, frozenset({"b"}))
    assert sorted(rb.tolist()) == [2.0, 5.0]
    assert res.held_out["b"].log_high == V.weighted_quantiles(rb, np.ones(2), (1.0,))[0] == 5.0


def test_interval_levels_carry_the_finite_sample_correction() -> None:
    # split conformal: each tail's level x (n + 1) / n, capped at 0 and 1
    assert V.INTERVAL_QUANTILES == (0.1, 0.9)
    assert V.interval_levels(45) == pytest.approx((0.08, 0.92))
    assert V.interval_levels(9) == pytest.approx((0.0, 1.0))
    assert V.interval_levels(8) == (0.0, 1.0)  # capped, not beyond the extremes
    lo, hi = V.interval_levels(1000)
    assert 0.0989 < lo < 0.1 and 0.9 < hi < 0.9011


def test_predictions_use_the_held_out_fit() -> None:
    p = point("x", "s", measured=1000.0)
    fast = {"efficiency": 1.0, "layer_s": 0.0, "log_low": 0.0, "log_high": 0.0}
    slow = E.Fit(4.0, 100e-6, 0.0, 0.0, held_out={"s": fast})
    held = V.predictions([p], slow, held_out=True)[0]
    full = V.predictions([p], slow, held_out=False)[0]
    assert held.fit == "without s" and full.fit == "all"
    assert held.expected > full.expected  # the held-out fit has faster kernels and no floor
    assert math.isclose(held.expected, V.predict(p, V.held_out_fit(slow, "s")).expected)


def tiny_report() -> dict:
    preds = [
        V.Prediction(point("a1", "src-a", measured=100.0, gpu="gb300"), 100.0, 50.0, 200.0, "x"),
        V.Prediction(point("a2", "src-a", measured=400.0, gpu="b300"), 100.0, 50.0, 200.0, "x"),
        V.Prediction(point("b1", "src-b", measured=50.0, batch=None), 100.0, 60.0, 150.0, "x"),
    ]
    return {
        "fit": {"efficiency": 2.0, "layer_s": 131e-6, "source": "test"},
        "all": V.summary(preds),
        "primary": V.summary(preds),
        "points": [x.to_dict() for x in preds],
        "excluded": [{"id": "z", "source": "figures", "reason": "not in the catalog"}],
    }


def test_the_book_page_tables_come_from_the_report() -> None:
    from rackbook.book import pages

    text = pages.validation_markdown(tiny_report())
    assert "(anchored) (`data/published/expected-fit.yaml`); every prediction" in text
    rep = tiny_report()
    rep["fit"] |= {"log_low": math.log(0.5), "log_high": math.log(1.8)}
    # the interval as multiples of the expected rate, read from held-out errors
    assert (
        "; the interval x0.50 to x1.80 the expected rate (the 10th-90th percentiles of "
        "held-out errors, conformal-corrected); every prediction" in pages.validation_markdown(rep)
    )
    # ratios 1, 4, 0.5: median 1; within 2x: 1 and 0.5 = 67 %; inside: a1 only = 33 %
    assert "| all | 3 | 1.00 | 67% | 33% |" in text
    assert "| src-a | 2 | 2.50 | 50% | 50% |" in text  # median of 1 and 4
    assert "| best batch (free) | 1 | 0.50 | 100% | 0% |" in text
    # the largest miss first: a2 at 4x
    misses = text.split("The largest misses")[1]
    assert misses.index("| a2 |") < misses.index("| b1 |")
    assert "- figures: z: not in the catalog" in text


def test_the_book_figure_is_a_png_with_readable_text() -> None:
    from rackbook.book import pages, plotting

    data = pages.validation_figure(tiny_report())
    facts = plotting.png_facts(data)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert facts["min_pt"] >= plotting.SMALL_PT and facts["width"] >= 1000


def test_the_stored_fit_matches_the_mapping() -> None:
    """The fit file was made from the mapping's points (rerun ``rackbook validate --fit`` after
    editing either), with one held-out fit per source, on the grid."""
    points, _ = V.load()
    fit = E.load_fit()
    assert set(fit.held_out) == {p.source for p in points}
    doc = __import__("yaml").safe_load((E.paths.DATA / E.FIT_FILE).read_text())
    assert [(x["id"], x["measured"]) for x in doc["points"]] == [(p.id, p.measured) for p in points]
    assert fit.efficiency in V.EFFICIENCIES and fit.layer_s in V.LAYER_S
    assert fit.log_low < 0 < fit.log_high


def test_validate_meets_the_issue_targets_held_out(run_cli) -> None:
    """Issue 35's done-when on the project's own points, every prediction held out by source:
    median measured / expected in [0.75, 1.33], >= 75 % within 2x, >= 70 % inside [low, high]."""
    import json

    code, out, _ = run_cli("validate", "--json")
    assert code == 0
    rep = json.loads(out.splitlines()[-1])
    assert rep["held_out"] and all(p["fit"].startswith("without ") for p in rep["points"])
    s = rep["all"]
    assert 0.75 <= s["median_ratio"] <= 1.33
    assert s["within_2x"] >= 0.75 and s["inside"] >= 0.70
    assert "all points: median measured/expected" in out


def test_no_published_point_reads_impossible_on_the_bound() -> None:
    """Issue 35's done-when: every published measurement the project maps, checked as
    ``rackbook check`` reads it (its model, GPUs, counted tokens, phase, lengths, stated
    precision, decoding batch rounded up, tokens kept a step within the model's drafter), is
    within the bound."""
    from rackbook.inputs import catalogs
    from rackbook.physics import check

    points, _ = V.load()
    assert len(points) >= 40
    read = []
    for p in points:
        spec = catalogs.as_model(p.model).speculative
        tps = min(p.tokens_per_step, spec.draft_tokens + 1) if spec else 1.0
        c = check.check_claim(
            p.model, p.gpu, p.gpus, p.measured, counted=p.counted, phase=p.phase, isl=p.isl,
            osl=p.osl, context=p.context, precision=p.precision, tokens_per_step=tps,
            batch=None if p.batch is None else float(max(1, math.ceil(p.batch))),
        )  # fmt: skip
        read.append((p.id, c.verdict, round(c.ratio, 3)))
    assert [r for r in read if r[1] == "impossible"] == []
    assert max(r[2] for r in read) < 1


def test_the_floor_is_anchored_on_a_figure_the_validation_does_not_read() -> None:
    """The per-layer floor is the measured anchor (the vLLM single-user figure: 1 / tok/s / 61
    DeepSeek-V3.2 layers), never fitted, in the stored fit and every held-out fit; the anchor's
    figure is excluded from the validated points."""
    _, figs = __import__("rackbook.results.evidence", fromlist=["x"]).registries(str(E.paths.DATA))
    anchor = next(f for f in figs.figures if f.id == "vllm-blog-aa.v32-b300x8-c1-no-mtp")
    assert math.isclose(E.ANCHOR_LAYER_S, 1 / float(anchor.value) / 61)
    assert math.isclose(E.ANCHOR_LAYER_S * 1e6, 131.1, abs_tol=0.1)
    assert V.LAYER_S == (E.ANCHOR_LAYER_S,)
    fit = E.load_fit()
    assert fit.layer_s == E.ANCHOR_LAYER_S
    assert {h["layer_s"] for h in fit.held_out.values()} == {E.ANCHOR_LAYER_S}
    points, excluded = V.load()
    assert anchor.id in {x.id for x in excluded}
    assert anchor.id not in {p.id for p in points}


def test_one_wording_of_the_held_out_summary() -> None:
    """The CLI, the book page and the fit's stored summary (landing note, chapters) word a
    held-out summary one way: median 0.98, 0.822 within 2x, 0.689 inside over 45 points."""
    s = {"points": 45, "median_ratio": 0.98, "within_2x": 0.822, "inside": 0.689}
    text = (
        "median measured/expected 0.98 held out by source, 82 % of 45 published points within "
        "2x, 69 % inside the interval"
    )
    assert E.held_out_text(s) == text
    assert E.Fit(1.0, 0.0, 0.0, 0.0, validation={"all": s}).validation_text == text
    assert E.held_out_text({"points": 0}) == "" and not hasattr(V, "summary_text")
    from rackbook.book import pages

    assert f"All points: {text}." in pages.validation_markdown(tiny_report() | {"all": s})


SG = "sglang-cookbook-v4"
C16 = "gb300/flash/fp4/low-latency/c16"


def _mapping(tmp_path, *points: str, sources: str = "") -> object:
    f = tmp_path / "v.yaml"
    f.write_text(
        "schema_version: 1\nsources:\n"
        f"  {SG}: {{primary: true, defaults: {{model: deepseek-v4-flash, gpu: gb300, "
        "counted: total, phase: mixed}}\n"
        "  lmsys-large-scale-ep: {defaults: {model: deepseek-v3, gpu: h100-sxm}}\n"
        + sources
        + "points:\n"
        + "".join(f"  - {p}\n" for p in points)
    )
    return f


def test_load_reads_each_batch_rule_and_the_rows_own_fields(tmp_path) -> None:
    """A trace row's value per GPU in the tokens counted (output: the output column), its GPUs
    and lengths unless the point gives them; the batch by Little's law from the row's mean TTFT
    and TPOT, the clients, a number as published, or free; speculation's verify and kept
    tokens; a per-node figure over its GPUs; an excluded point kept with its reason."""
    f = _mapping(
        tmp_path,
        f"{{source: {SG}, point_id: {C16}, batch: little}}",
        f"{{source: {SG}, point_id: {C16}, counted: output, batch: concurrency, gpus: 8}}",
        f"{{source: {SG}, point_id: {C16}, batch: 12, isl: 100, osl: 10, note: n}}",
        f"{{source: {SG}, point_id: {C16}, batch: free, speculation: "
        "{verify: 4, tokens_per_step: 3.18}}",
        "{source: lmsys-large-scale-ep, figure: lmsys-large-scale-ep.decode-per-node, "
        "per_node: 8, gpus: 72, counted: output, phase: decode}",
        f"{{source: {SG}, point_id: gone, exclude: not comparable}}",
    )
    points, excluded = V.load(f)
    assert excluded == [V.Excluded("gone", SG, "not comparable")]
    little, conc, number, free, fig = points
    assert (little.measured, little.counted, little.gpus, little.isl, little.osl) == (
        3710.0,
        "total",
        4,
        8192,
        1024,
    )
    assert little.primary and not fig.primary and little.source == SG
    assert little.batch == pytest.approx(E.littles_law(16, 1024, 0.557, 0.00702), rel=1e-12)
    assert little.batch_how == (
        "Little's law: 16 clients x 1,023 x 7.02 ms / (0.557 s + 1,023 x 7.02 ms) = "
        f"{little.batch:,.1f} decoding"
    )
    assert (little.verify, little.tokens_per_step, little.note) == (1, 1.0, "")
    assert conc.measured == pytest.approx(3710 * 1024 / 9216) and conc.counted == "output"
    assert (conc.batch, conc.batch_how, conc.gpus) == (
        16.0,
        "the 16 clients (no latency published)",
        8,
    )
    assert (number.batch, number.batch_how, number.isl, number.osl) == (
        12.0,
        "as published",
        100,
        10,
    )
    assert number.note == "n"
    assert (free.batch, free.verify, free.tokens_per_step) == (None, 4, 3.18)
    assert free.batch_how == "the best batch that fits (an offline or unconstrained run)"
    assert (fig.measured, fig.gpus, fig.phase, fig.model, fig.gpu) == (
        22300 / 8,
        72,
        "decode",
        "deepseek-v3",
        "h100-sxm",
    )
    assert fig.batch is None and fig.batch_how.startswith("the best batch")  # no concurrency
    one = _mapping(
        tmp_path,
        "{source: lmsys-large-scale-ep, figure: lmsys-large-scale-ep.decode-per-node, "
        "gpus: 72, counted: output, phase: decode}",
    )
    assert V.load(one)[0][0].measured == 22300.0  # no per_node: the figure as it is


@pytest.mark.parametrize(
    "point,message",
    [
        ("3", r"points\[0\]: each point is a mapping with a source"),
        ("{point_id: x}", r"points\[0\]: each point is a mapping with a source"),
        ("{source: nope, point_id: x}", r"points\[0\]\.source: 'nope' is not under sources"),
        (f"{{source: {SG}}}", r"points\[0\]: names no point_id or figure"),
        (f"{{source: {SG}, point_id: ''}}", r"points\[0\]: names no point_id or figure"),
        (f"{{source: {SG}, figure: nope}}", r"points\[0\]\.figure: 'nope' is not in figures\.yaml"),
        (
            f"{{source: {SG}, point_id: nope}}",
            r"points\[0\]\.point_id: 'nope' is not a row of sglang",
        ),
        (f"{{source: {SG}, point_id: {C16}, model: ''}}", r"points\[0\]\.model: missing"),
        (f"{{source: {SG}, point_id: {C16}, gpu: null}}", r"points\[0\]\.gpu: missing"),
        (f"{{source: {SG}, point_id: {C16}, phase: ''}}", r"points\[0\]\.phase: missing"),
        (f"{{source: {SG}, point_id: {C16}, counted: ''}}", r"points\[0\]\.counted: missing"),
        (
            f"{{source: {SG}, point_id: {C16}, counted: tokens}}",
            r"points\[0\]\.counted: is not one of output, total, input",
        ),
        (
            "{source: lmsys-large-scale-ep, figure: lmsys-large-scale-ep.decode-per-node, "
            "counted: output, phase: decode, batch: little}",
            r"points\[0\]\.gpus: missing",
        ),
    ],
)
def test_each_bad_point_is_one_error_naming_its_field(tmp_path, point, message) -> None:
    with pytest.raises(InputError, match=r"v\.yaml: " + message):
        V.load(_mapping(tmp_path, point))


def test_bad_mappings_and_batches(tmp_path) -> None:
    f = tmp_path / "v.yaml"
    for text in ("[]", "points: 3\n", "sources: {}\n"):
        f.write_text(text)
        with pytest.raises(InputError, match=r"v\.yaml: points: a list of points is required"):
            V.load(f)
    little = (
        "{source: lmsys-large-scale-ep, figure: lmsys-large-scale-ep.decode-per-node, gpus: 72, "
        "counted: output, phase: decode, batch: little}"
    )
    with pytest.raises(
        InputError, match=r"v\.yaml: points\[0\]\.batch: little needs concurrency, OSL"
    ):
        V.load(_mapping(tmp_path, little))
    zero = f"{{source: {SG}, point_id: {C16}, per_node: 0}}"
    (p,) = V.load(_mapping(tmp_path, zero))[0]
    assert p.measured == 3710.0  # per_node only for figures
    assert (p.batch, p.batch_how) == (16.0, "the 16 clients (no latency published)")  # no batch
    with pytest.raises(InputError, match=r"points\[1\]\.source: 'x' is not under sources"):
        V.load(_mapping(tmp_path, f"{{source: {SG}, point_id: {C16}}}", "{source: x, point_id: y}"))
    f.write_text("sources: {}\npoints: []\n")
    assert V.load(f) == ([], [])


def test_bands_splits_ratios_and_the_prediction_row() -> None:
    assert point("a", "s", batch=None).band == "best batch (free)"
    assert point("a", "s", batch=4.0, gpus=4).band == "<= 1 sequence per GPU"
    assert point("a", "s", batch=4.04, gpus=4).band == "1-16 per GPU"
    assert point("a", "s", batch=64.0, gpus=4).band == "1-16 per GPU"
    assert point("a", "s", batch=68.0, gpus=4).band == "> 16 per GPU"
    # output counted: input is output x isl / osl; input counted: output is input x osl / isl
    for counted, phase, value, split in [
        ("output", "mixed", 10.0, (10.0, 30.0)),
        ("input", "mixed", 30.0, (10.0, 30.0)),
        ("total", "mixed", 40.0, (10.0, 30.0)),
        ("total", "decode", 40.0, (10.0, 0.0)),
        ("total", "prefill", 40.0, (0.0, 30.0)),
    ]:
        p = point("a", "s", counted=counted, phase=phase, isl=300, osl=100)
        assert V._split(p, value) == split, (counted, phase)
    assert V._split(point("a", "s", counted="output", phase="mixed"), 10.0) == (10.0, 0.0)
    assert V._split(point("a", "s", counted="input", phase="mixed"), 30.0) == (0.0, 30.0)
    p = point("a", "s", measured=100.0, batch=8.0, gpus=4)
    pred = V.Prediction(p, 50.0, 100.0, 150.0, "dp-ep", "without s")
    assert pred.ratio == 2.0 and pred.inside
    assert V.Prediction(p, 0.0, 0.0, 1.0, "x").ratio == math.inf
    assert not V.Prediction(p, 50.0, 100.01, 150.0, "x").inside
    assert V.Prediction(p, 50.0, 50.0, 100.0, "x").inside
    assert not V.Prediction(p, 50.0, 50.0, 99.99, "x").inside
    assert pred.to_dict() == {
        "id": "a",
        "source": "s",
        "primary": True,
        "model": "DeepSeek-V4.1-Flash",
        "gpu": "GB300",
        "gpus": 4,
        "counted": "output",
        "band": "1-16 per GPU",
        "batch": 8.0,
        "batch_how": "test",
        "measured": 100.0,
        "expected": 50.0,
        "low": 100.0,
        "high": 150.0,
        "ratio": 2.0,
        "inside": True,
        "deployment": "dp-ep",
        "fit": "without s",
    }


def _tiny_points() -> tuple[list[V.Point], list[V.Excluded]]:
    pts = [
        point("a1", "src-a", measured=1000.0),
        point("a2", "src-a", measured=2000.0, gpus=8, batch=64.0),
        point("b1", "src-b", measured=500.0, batch=None, primary=False),
    ]
    return pts, [V.Excluded("z", "figures", "not in the catalog")]


def test_validate_prints_each_point_and_the_summaries(monkeypatch, capsys) -> None:
    import argparse

    pts, ex = _tiny_points()
    monkeypatch.setattr(V, "load", lambda: (pts, ex))
    assert V.cli_validate(argparse.Namespace(fit=False, json=False)) == 0
    out = capsys.readouterr().out.splitlines()
    rep = V.report(pts, E.load_fit())
    assert rep["held_out"] is True and rep["fit"]["source"] == E.load_fit().source
    assert rep["primary"] == V.summary(V.predictions(pts[:2], E.load_fit()))
    assert [x["id"] for x in rep["points"]] == ["a1", "a2", "b1"]
    want = [
        f"  {x['source']}: {x['id']}: measured {x['measured']:,.0f}, expected "
        f"{x['expected']:,.0f} ({x['low']:,.0f}-{x['high']:,.0f}), ratio {x['ratio']:.2f} "
        f"[GB300 x {x['gpus']}, {x['band']}, all]"
        for x in rep["points"]
    ]
    assert out == [
        *want,
        "  not validated: figures: z: not in the catalog",
        f"all points: {E.held_out_text(rep['all'])}",
        f"primary sources: {E.held_out_text(rep['primary'])}",
    ]
    assert out[0].startswith("  src-a: a1: measured 1,000, expected ")
    monkeypatch.setattr(V, "load", lambda: ([], []))
    assert V.cli_validate(argparse.Namespace(fit=False, json=False)) == 0
    assert capsys.readouterr().out.splitlines() == [
        "all points: no points",
        "primary sources: no points",
    ]


def test_validate_fit_writes_the_fit_file_and_its_held_out_summary(
    tmp_path, monkeypatch, capsys
) -> None:
    import argparse
    import json

    import yaml

    pts, ex = _tiny_points()
    monkeypatch.setattr(V, "load", lambda: (pts, ex))
    target = tmp_path / "expected-fit.yaml"
    monkeypatch.setattr(E, "FIT_FILE", str(target))  # absolute: data/ is left as it is
    assert V.cli_validate(argparse.Namespace(fit=True, json=True)) == 0
    out = capsys.readouterr().out.splitlines()
    text = target.read_text()
    assert text.startswith("# written by rackbook validate --fit\n")
    doc = yaml.safe_load(text)
    res = V.fit_points(pts)
    assert doc["schema_version"] == 1 and doc["fit"] == res.fit.params()
    assert doc["held_out"] == {k: v.params() for k, v in res.held_out.items()}
    assert set(doc["held_out"]) == {"src-a", "src-b"}
    assert doc["grid"] == {"efficiency": list(V.EFFICIENCIES), "layer_s": list(V.LAYER_S)}
    assert doc["points"] == [{"id": p.id, "source": p.source, "measured": p.measured} for p in pts]
    assert "Regenerate: rackbook validate --fit" in doc["method"]
    fitted = dataclasses.replace(res.fit, source="fitted now", held_out=doc["held_out"])
    rep = V.report(pts, fitted)
    assert doc["validation"] == {"all": rep["all"], "primary": rep["primary"]}
    assert out[0] == (
        f"wrote {target}: efficiency {res.fit.efficiency:g}, floor {res.fit.layer_s * 1e6:g} µs "
        "a layer"
    )
    last = json.loads(out[-1])
    assert last["fit"]["source"] == "fitted now" and last["held_out"] is True
    assert last["excluded"] == [{"id": "z", "source": "figures", "reason": "not in the catalog"}]
    assert [p["fit"] for p in last["points"]] == ["without src-a", "without src-a", "without src-b"]
    assert last["all"] == rep["all"]


def test_refitting_the_mapping_gives_the_stored_fit() -> None:
    """``rackbook validate --fit`` on the shipped mapping reproduces the stored fit file: the
    grid row, the interval from held-out errors, each source's held-out fit."""
    points, _ = V.load()
    res = V.fit_points(points)
    stored = E.load_fit()
    assert res.fit.params() == pytest.approx(stored.params(), rel=1e-9)
    held = {k: v.params() for k, v in res.held_out.items()}
    assert set(held) == set(stored.held_out)
    for src, params in held.items():
        want = {k: stored.held_out[src][k] for k in params}
        assert params == pytest.approx(want, rel=1e-9), src


def test_the_held_out_report_reproduces_the_stored_summary() -> None:
    """Every point predicted again with the stored fit (its own source held out) gives the
    summary the fit file stores: median ratio, share within 2x, share inside the interval."""
    points, _ = V.load()
    fit = E.load_fit()
    rep = V.report(points, fit)
    for key in ("all", "primary"):
        got, want = rep[key], fit.validation[key]
        assert got["points"] == want["points"], key
        for k in ("median_ratio", "within_2x", "inside"):
            assert got[k] == pytest.approx(want[k], rel=1e-9), (key, k)
