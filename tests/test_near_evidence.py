"""The near-evidence reading, bases the physics rules out, ties shown as spreads, and modelled
prices (rackbook.results.evidence, rackbook.results.conclusions): numbers asserted on the
shipped published points."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict

import pandas as pd
import pytest

from rackbook import paths
from rackbook.inputs import claims
from rackbook.results import conclusions as cc
from rackbook.results import evidence as ev


def _basis(e: ev.ClaimEvidence, name: str) -> ev.BasisReading:
    return next(b for b in e.bases if b.name == name)


def test_rack_throughput_near_points_counting_the_cached_prefix():
    """V4.1-Flash on GB300, counting the cached prefix: 104,429 (vLLM, 4 GPUs) to 142,565
    (SGLang, 2 GPUs) tok/s/GPU; 954k per GPU is 6.69-9.14x them, as the rack's total
    0.0929-0.127x."""
    e = ev.claim_evidence("rack-scaling.throughput")
    per_gpu = _basis(e, "per GPU, input + output counting each turn's re-read cached prefix")
    total = _basis(
        e, "a rack total over 72 GPUs, input + output counting each turn's re-read cached prefix"
    )
    for b, scale in ((per_gpu, 1.0), (total, 1 / 72)):
        n = b.near
        assert n is not None and set(n.points) == {
            "figures:inferencex-pr3176.vllm-gb300-c128-total",
            "figures:inferencex-pr3344.dsv41flash-gb300-tp2-c64",
        }
        assert (n.low, n.high) == (104429.47, 142565.09)
        assert n.ratio_low == pytest.approx(954000 * scale / 142565.09)
        assert n.ratio_high == pytest.approx(954000 * scale / 104429.47)
        assert b.verdict == "none published"  # near evidence never decides
    assert per_gpu.near.ratio_low == pytest.approx(6.69, abs=0.005)
    assert total.near.ratio_high == pytest.approx(0.127, abs=0.0005)


def test_physics_rules_out_computed_per_gpu_bases_and_the_headline_avoids_them():
    e = ev.claim_evidence("rack-scaling.throughput")
    out = _basis(e, "per GPU, output tokens")
    assert out.ruled_out and "3.94x the compute ceiling" in out.ruled_out
    assert _basis(e, "per GPU, input + output, cached prefix not counted").ruled_out
    assert not _basis(e, "a rack total over 72 GPUs, output tokens").ruled_out
    assert e.ruled_out == (
        "per GPU, output tokens",
        "per GPU, input + output, cached prefix not counted",
    )
    # main headlined the per-GPU output basis, 1,054x; the headline now leans to the basis the
    # near evidence supports: 7.9x a per-GPU ratio, the node at 954,000 / 7.9 = 120,759
    assert e.closest is not None and e.closest_basis not in e.ruled_out
    assert e.closest_basis == NODE
    assert e.closest.ratio == pytest.approx(954000 / 7.9 / 104429.47)
    assert e.margin.startswith("physics rules out as per GPU, output tokens")
    assert "closest like-for-like (an analogue)" not in e.margin
    # four allowed bases are equally close: all named, the supported one first
    assert "on 4 bases equally close: as the node's throughput per GPU" in e.margin
    for allowed in (
        "as per GPU, input + output counting each turn's re-read cached prefix: 104,429",
        "as a rack total over 72 GPUs, output tokens: 904.8",
        "as a rack total over 72 GPUs, input + output counting each turn's re-read cached "
        "prefix: 104,429 tok/s/GPU, the claim 0.127x",
    ):
        assert allowed in e.margin


NODE = (
    "the node's throughput per GPU (the speed-up read as a per-GPU ratio), input + output "
    "counting each turn's re-read cached prefix"
)


def test_claim_level_near_summary_in_the_headline_json():
    """The top-level bracket is one basis's only (main mixed output-only, uncached and cached
    totals: 412-142,565 tok/s/GPU, 0.093-32x); every basis's own bracket is in per_basis."""
    r = ev.reading("rack-scaling.throughput", registry=claims.load_claims())
    near = asdict(r)["near"]
    assert set(near) >= {"points", "low", "high", "ratio_low", "ratio_high", "per_basis"}
    assert near["basis"] == NODE and near["position"] == "inside"
    assert (near["low"], near["high"]) == (104429.47, 142565.09)
    assert near["ratio_low"] == pytest.approx(954000 / 7.9 / 142565.09)
    assert near["ratio_high"] == pytest.approx(954000 / 7.9 / 104429.47)
    assert "per GPU, output tokens" not in near["bases"]  # ruled out by physics
    per = {b["basis"]: b for b in near["per_basis"]}
    assert set(per) == set(near["bases"]) and len(per) == 4
    for b in per.values():  # each bracket holds one token kind: its unit family and basis
        assert set(b) >= {"basis", "points", "low", "high", "ratio_low", "ratio_high"}
        assert b["low"] <= b["high"]
    out = per["a rack total over 72 GPUs, output tokens"]
    assert out["points"] == ["figures:inferencex-pr3176.vllm-gb300-c128-output"]
    assert out["ratio_low"] == pytest.approx(954000 / 72 / 904.78)
    assert (
        per["per GPU, input + output counting each turn's re-read cached prefix"]["position"]
        == "above"
    )
    assert (
        per["a rack total over 72 GPUs, input + output counting each turn's re-read cached prefix"][
            "position"
        ]
        == "below"
    )


def test_seven_point_nine_read_as_a_per_gpu_ratio():
    """954,000 / 7.9 = 120,759 tok/s/GPU for the node, between the measured V4.1-Flash GB300
    AgentX points (vLLM 104,429 on 4 GPUs, SGLang 142,565 on 2): 0.847x to 1.16x them. The
    7.9 is read from the claims registry, and the node basis never decides (a cross-check)."""
    e = ev.claim_evidence("rack-scaling.throughput")
    node = _basis(e, NODE)
    assert "954,000 / 7.9 = 120,759 tok/s/GPU" in node.conversion
    assert node.verdict == "none published" and not node.decided_on
    assert set(node.near.points) == {
        "figures:inferencex-pr3176.vllm-gb300-c128-total",
        "figures:inferencex-pr3344.dsv41flash-gb300-tp2-c64",
    }
    assert node.near.ratio_low == pytest.approx(120759.49 / 142565.09, rel=1e-6)
    assert node.near.ratio_high == pytest.approx(120759.49 / 104429.47, rel=1e-6)
    # another speed-up moves the node's figure: 954,000 / 9 is 0.744x to 1.02x them
    assert ev.claim_evidence("rack-scaling.throughput", 954000 * 7.9 / 9).near[
        "ratio_high"
    ] == pytest.approx(106000 / 104429.47)


def test_near_points_differ_in_one_stated_difference_and_latency_cells_never_bracket_peaks():
    """is_near: at most one stated difference in the parts that decide (the cookbook's
    output cells differ in GPU count and workload: no longer near rack throughput); a
    low-latency cell never brackets a peak-throughput claim."""
    from rackbook.core import basis as basis_mod
    from rackbook.results import evidence as cmp

    e = ev.claim_evidence("rack-scaling.throughput")
    every = {p for b in e.bases if b.near for p in b.near.points}
    assert not any(p.startswith("sglang-cookbook-v4:") for p in every)
    claim = claims.load_claims().get("rack-scaling.throughput").figure_basis
    cb = claim.replace(tokens="output")
    pt = cb.replace(model="DeepSeek-V4-Flash", gpu_count=4, workload="fixed lengths")
    diffs = cmp.differences(cb, pt, "rack-scaling.throughput")
    dec = [d for d in diffs if d.part in cmp.DECISIVE["rack-scaling.throughput"]]
    assert cmp.stated_differences(cb, dec) == ["gpu_count", "workload"]
    assert not cmp.is_near(cb, pt, diffs, dec)
    one = pt.replace(workload=cb.workload)
    d1 = cmp.differences(cb, one, "rack-scaling.throughput")
    assert cmp.is_near(cb, one, d1, [d for d in d1 if d.part in cmp.DECISIVE[claim_id()]])
    assert basis_mod.UNKNOWN == claim.speculation  # a simulated acceptance is tolerated
    assert cmp.latency_tuned({"id": "sglang-cookbook-v4:gb300/flash/fp4/low-latency/c16"})
    assert cmp.latency_tuned({"id": "x", "concurrency": 18})
    assert not cmp.latency_tuned({"id": "x", "concurrency": 64})


def claim_id() -> str:
    return "rack-scaling.throughput"


def test_single_user_near_points_span_both_statistics():
    """SGLang PR 39068 (853.49 tok/s, one stream, 4 GB300, simulated acceptance 5.5; read
    first-hand: a median over requests) is near on the median basis beside PR 33082's P50
    point (763.4): the claim (826) sits inside them, 0.968x to 1.08x, and that basis is the
    top-level bracket; the mean basis (277 to 456.6) is below the claim."""
    e = ev.claim_evidence("single-user.throughput")
    mean, median = _basis(e, "mean TPOT").near, _basis(e, "median (P50) TPOT").near
    assert mean is not None and median is not None
    assert "figures:sglang-pr39068.v41flash-gb300-bs1" not in mean.points
    assert median.points == (
        "figures:sglang-pr33082.v4flash-gb300-c1-tpot",
        "figures:sglang-pr39068.v41flash-gb300-bs1",
    )
    assert median.unverified == () and median.high == 853.49
    assert median.ratio_low == pytest.approx(826 / 853.49)
    assert median.ratio_high == pytest.approx(826 / (1000 / 1.31))
    assert mean.ratio_low == pytest.approx(1.809, abs=0.001)
    assert e.near is not None and e.near["basis"] == "median (P50) TPOT"
    assert e.near["position"] == "inside" and not e.near["unverified"]
    assert e.near["ratio_low"] == pytest.approx(0.968, abs=0.001)
    assert e.near["ratio_high"] == pytest.approx(1.082, abs=0.001)
    assert [b["basis"] for b in e.near["per_basis"]] == ["mean TPOT", "median (P50) TPOT"]


def test_ties_are_a_spread_never_the_value_nearest_the_claim():
    """MLPerf's four 72-over-8 ratios are equally close: 8.61x to 8.95x, the claim 0.882x to
    0.917x them (main showed only 8.61x, the one nearest 7.9x)."""
    e = ev.claim_evidence("rack-scaling.speedup")
    c = e.closest
    assert c is not None and len(c.tied) == 3
    assert (c.low, c.high) == (pytest.approx(8.6127, abs=1e-4), pytest.approx(8.9536, abs=1e-4))
    assert c.ratio_low == pytest.approx(7.9 / 8.9536, abs=1e-4)
    assert c.ratio_high == pytest.approx(7.9 / 8.6127, abs=1e-4)
    assert "8.61x to 8.95x (4 points equally close)" in e.margin
    # the closest point does not move with the claim's figure
    assert ev.claim_evidence("rack-scaling.speedup", 9.0).closest.id == c.id


def test_modelled_prices_never_make_the_certainty_like_for_like():
    reg = claims.load_claims()
    r = asdict(ev.reading("rack-scaling.cost", registry=reg))
    assert r["verdict"] == "above"
    placed = [b for b in r["by_basis"] if b["verdict"] == "above"]
    assert placed and all(b["modelled"] for b in placed)
    c = cc.conclude(reg.get("rack-scaling.cost"), [r])
    assert c.grade == "physics bounds only"  # modelled price and basis unknown lower it
    assert any(r.startswith("lowered by: modelled price") for r in c.certainty.reasons)
    assert "above every modelled price" in c.text
    # the per-instance reading: $38.96 as one 4-GPU instance-hour, $9.74 per GPU-hour
    inst = next(b for b in r["by_basis"] if b["name"] == "a list price per 4-GPU instance-hour")
    assert inst["closest"]["ratio"] == pytest.approx(38.96 / 4 / 18.00)
    assert inst["near"]["unverified"]  # list prices read second-hand only


def test_near_evidence_raises_the_certainty_and_is_printed():
    """Near points raise the certainty to near evidence; near points on both sides of the
    claim on one basis corroborate it (rack: the node at 120,759, 0.847x to 1.16x; single
    user: 0.968x to 2.98x), never lowering it."""
    reg = claims.load_claims()
    grades = {}
    for cid in ("rack-scaling.throughput", "single-user.throughput"):
        c = cc.conclude(reg.get(cid), [asdict(ev.reading(cid, registry=reg))])
        grades[cid] = c.grade
        assert c.certainty.reasons[0].endswith("near published points")
        assert any(t.startswith("Near evidence, which does not decide") for t in c.sentences)
        assert any(
            r.startswith("corroborated by: near points on both sides") for r in c.certainty.reasons
        )
    assert grades == {
        "rack-scaling.throughput": "near evidence or exact derivation",
        "single-user.throughput": "near evidence or exact derivation",
    }
    c = cc.conclude(
        reg.get("rack-scaling.speedup"),
        [asdict(ev.reading("rack-scaling.speedup", registry=reg))],
    )
    assert c.grade == "physics bounds only" and not any("Near evidence" in t for t in c.sentences)


def test_a_price_must_say_what_it_is(tmp_path):
    src = (paths.DATA / "published" / "figures.yaml").read_text()
    bad = src.replace("    price_kind: ownership-cost model\n", "", 1)
    f = tmp_path / "figures.yaml"
    f.write_text(bad)
    with pytest.raises(Exception, match="price_kind"):
        claims.load_figures(f)


def test_rejected_sources_carry_why():
    reg = claims.load_figures()
    assert reg.rejected and all(r.why and r.url.startswith("https://") for r in reg.rejected)


def test_catalog_prices_say_what_they_are():
    from rackbook.inputs import catalogs
    from rackbook.results import rack_scaling

    kinds = {k: p.kind for k, p in catalogs.load_hardware().prices.items()}
    assert kinds == {
        "gb300-tco-hyperscaler": "ownership-cost model",  # main called it "gb300-rental"
        "gb300-tco-rental-3yr": "modelled rental",
        "gb300-oci-list": "list price",
    }
    figs = {f.id: f.price_kind for f in claims.load_figures().figures if f.price_kind}
    # the same $2.652 is an ownership-cost model's rate in both files
    assert figs["inferencex-tco.gb300-hyperscaler"] == kinds["gb300-tco-hyperscaler"]
    c = rack_scaling.cost_readings(38.96, {"stated": 954000.0})
    assert set(c.cost["basis"]) == {"claim as cost", "ownership-cost model (gb300-tco-hyperscaler)"}
    r = rack_scaling.cost_physics(c, 38.96)
    assert "$9.74 per GPU-hour" in r.reason and "4-GPU instance-hour" in r.reason


def test_superseded_points_are_flagged_by_date_and_the_agentx_c1_point_is_a_session():
    """InferenceX PR 3176's rows (2026-09-15) predate the gains vLLM's 2026-10-07 post reports
    (2x at low concurrency, 5.3x at high throughput): flagged where they are shown, by date."""
    e = ev.claim_evidence("single-user.throughput")
    c = e.closest
    assert c is not None and c.id == "figures:inferencex-pr3176.vllm-gb300-c1-tpot"
    assert c.superseded and c.superseded.startswith("2026-10-07:")
    assert "superseded 2026-10-07" in c.text()
    mean = _basis(e, "mean TPOT").near
    assert mean.superseded == ("figures:inferencex-pr3176.vllm-gb300-c1-tpot",)
    assert "1 superseded by a later source" in ev.near_text(mean.as_dict())
    assert "one agent session" in e.reason and "not one stream" in e.reason
    fig = claims.load_figures().get("inferencex-pr3176.vllm-gb300-c1-tpot")
    assert "one AgentX session" in fig.definition
    rack = ev.claim_evidence("rack-scaling.throughput")
    node = next(b for b in rack.bases if b.near and b.name == NODE).near
    assert node.superseded == ("figures:inferencex-pr3176.vllm-gb300-c128-total",)


def test_a_reading_states_the_setup_its_source_states():
    """Issue 36's done-when: a chapter's published reading states the figure, units, GPUs,
    concurrency, lengths, speculation and date its source states (SGLang PR 39068: one
    stream on 4 GB300, 4,096 in / 1,024 out, simulated acceptance 5.5, 2026-09-11), and no
    part the source leaves out (InferenceX's AgentX replay states no lengths)."""
    e = ev.claim_evidence("single-user.throughput")
    text = _basis(e, "median (P50) TPOT").closest.text()
    for part in ("853.5 tok/s per user", "GB300 x 4", "concurrency 1", "4,096 in / 1,024 out",
                 "speculation DSpark (simulated acceptance target 5.5)", "2026-09-11",
                 "https://github.com/sgl-project/sglang/pull/39068"):  # fmt: skip
        assert part in text, part
    agentx = _basis(e, "mean TPOT").closest
    assert agentx.setup.startswith("concurrency 1, speculation DSpark")
    assert " in / " not in agentx.setup and agentx.setup.endswith("2026-09-15")


# ------------------------------------------------------------- the parts a reading rests on


def test_score_model_family_spread_and_latency_cells():
    """score sums the parts' weights (an unweighted part 1); DeepSeek-V4.x-Flash and -Pro are
    one family each; spread's ratios are the figure over each end (None at 0 or a figure not
    finite); a cell is latency-tuned at concurrency 32 or below, or named low-latency."""
    from rackbook.core.basis import Difference

    parts = [Difference("metric", 1), Difference("serving", 1), Difference("xyz", 1)]
    assert ev.score(parts) == 11.5 and ev.score([]) == 0.0
    assert ev.score([Difference("model", 1), Difference("gpus", 1)]) == 7.0
    assert [
        ev.model_family(m)
        for m in ("DeepSeek-V4.1-Flash", "DeepSeek-V4-Flash-0731", "DeepSeek-V4-Pro", "deepseek-r1")
    ] == ["deepseek-flash", "deepseek-flash", "deepseek-pro", "deepseek-r1"]
    assert ev.spread(2.0, [4.0, 1.0]) == dict(low=1.0, high=4.0, ratio_low=0.5, ratio_high=2.0)
    assert ev.spread(float("nan"), [1.0, 4.0]) == dict(
        low=1.0, high=4.0, ratio_low=None, ratio_high=None
    )
    assert ev.spread(2.0, [0.0, 4.0]) == dict(low=0.0, high=4.0, ratio_low=0.5, ratio_high=None)
    assert ev.spread(2.0, [0.0])["ratio_low"] is None
    lt = ev.latency_tuned
    assert lt(pd.Series({"id": "x", "concurrency": 32}))
    assert not lt(pd.Series({"id": "x", "concurrency": 33}))
    assert not lt(pd.Series({"id": "x", "concurrency": pd.NA})) and not lt(pd.Series({}))
    assert lt(pd.Series({"id": "a/low-latency/c64", "concurrency": 64}))


def test_ruled_out_text_and_what_physics_cannot_read():
    r = ev.RuledOut(954000, "decode", 3.944, "compute", 241834.2, "GB300")
    assert r.text() == (
        "954,000 computed decode tok/s per GPU is 3.94x the compute ceiling of 241,834 on GB300"
    )
    reg = claims.load_claims()
    c = reg.get("rack-scaling.throughput")
    per_gpu_out = ev.PLAUSIBLE[c.id][0]
    got = ev.ruled_out(c, per_gpu_out, 954000.0)
    assert got is not None and (got.phase, got.limit, got.gpu) == ("decode", "compute", "GB300")
    assert got.tok_s_per_gpu == 954000.0 and got.ratio == pytest.approx(954000 / 241834, rel=1e-4)
    # the rack total over 72 GPUs: 13,250 per GPU is possible, so nothing rules it out
    assert ev.ruled_out(c, ev.PLAUSIBLE[c.id][4], 954000.0) is None
    # no phase, a figure not finite or not above 0: physics reads nothing
    assert ev.ruled_out(c, ev.PLAUSIBLE[c.id][2], 954000.0) is None
    for v in (float("nan"), 0.0, -1.0, float("inf")):
        assert ev.ruled_out(c, per_gpu_out, v) is None


def test_published_reading_at_the_tolerance_edges_and_in_words():
    pts = pd.DataFrame({"value": [8.61, 8.95], "unit": "x", "url": ["u0", "u1"]})
    pr = ev.published_reading
    assert pr("c", 9.0, pts, tolerance=0.05).verdict == "within"  # exactly at 8.95 + 0.05
    assert pr("c", 9.0001, pts, tolerance=0.05).verdict == "above"
    assert pr("c", 8.56, pts, tolerance=0.05).verdict == "within"  # exactly at 8.61 - 0.05
    assert pr("c", 8.5599, pts, tolerance=0.05).verdict == "below"
    r = pr("c", 9.0, pts, tolerance=0.05)
    assert r.margin == "within the published 8.61x to 8.95x"
    assert r.reason == "9x against 2 published points, 8.61x to 8.95x"
    assert (r.claim_id, r.reading, r.sources) == ("c", "published", ("u0", "u1"))
    one = pr("c", 8.61, pts.iloc[:1])
    assert (one.verdict, one.margin) == ("within", "at the published 8.61x")
    assert one.reason == "8.61x against 1 published point, 8.61x"
    below = pr("c", 4.305, pts)
    assert below.margin == "0.5x the lowest published (8.61x)"
    no_unit = pr("c", 3.0, pd.DataFrame({"value": [1.5]}))
    assert no_unit.margin == "2x the highest published (1.5 )" and no_unit.sources == ()
    unknown = pr("c", float("nan"), pts)
    assert (unknown.verdict, unknown.margin) == ("none published", "-")
    assert unknown.reason == "the value is unknown"
    assert (unknown.claim_id, unknown.reading) == ("c", "published")
    assert pr("c", None, pts).reason == "the value is unknown"
    empty = pr("c", 1.0, pts.iloc[0:0])
    assert empty.reason == "no published point to compare with"
    nan_only = pr("c", 1.0, pd.DataFrame({"value": [float("nan")], "unit": "x", "url": ["u"]}))
    assert nan_only.verdict == "none published"
    second = pr("c", 8.8, pts.assign(verified=[True, False]))
    assert second.reason == (
        "8.8x against 1 published point, 8.61x; 1 second-hand figure NOT VERIFIED, not used"
    )
    assert second.sources == ("u0",) and second.verdict == "above"
    two = pr("c", 8.8, pts.assign(verified=[False, False]))
    assert (
        two.reason
        == "no published point to compare with; 2 second-hand figures NOT VERIFIED, not used"
    )


def test_highest_list_price_names_the_dearest_listed_price():
    rows = pd.DataFrame(
        {
            "id": ["a", "b", "token-value:x", "c", "d"],
            "price_kind": ["list price", "list price", "list price", "rental", "list price"],
            "unit": ["$/GPU-hour", "$/GPU-hour", "$/GPU-hour", "$/GPU-hour", "$/hour"],
            "value": [10.0, 18.0, 99.0, 50.0, 70.0],
            "hardware": ["GB300", None, "GB300", "GB300", "GB300"],
            "submitter": ["A", "Oracle", "T", "C", "D"],
            "verified": [True, False, True, True, True],
        }
    )
    top = ev.highest_list_price(rows, 36.0)
    assert top == dict(
        value=18.0,
        who="Oracle",
        verified=False,
        ratio=2.0,
        text="highest list price: $18.00/GPU-hour (Oracle, NOT VERIFIED), the claim 2x it",
    )
    mine = ev.highest_list_price(rows.iloc[[0]], None)
    assert mine == dict(
        value=10.0,
        who="A, GB300",
        verified=True,
        ratio=None,
        text="highest list price: $10.00/GPU-hour (A, GB300)",
    )
    assert ev.highest_list_price(rows.iloc[[0]], float("nan"))["ratio"] is None
    assert ev.highest_list_price(rows.iloc[[2, 3, 4]], 1.0) is None
    assert ev.highest_list_price(rows.drop(columns="price_kind"), 1.0) is None


def test_who_names_submitter_hardware_gpus_model_and_engine():
    r = dict(submitter="S", hardware="gb300", gpus=4, model="deepseek-v4.1-flash")
    r["engine"] = "vLLM, nightly"
    assert ev._who(pd.Series(r)) == ("S", "GB300 x 4", "DeepSeek-V4.1-Flash", "vLLM")
    assert ev._who(pd.Series(r | dict(hardware="not stated"))) == (
        "S",
        "4 GPUs",
        "DeepSeek-V4.1-Flash",
        "vLLM",
    )
    assert ev._who(pd.Series(r | dict(hardware="unknown", gpus=None))) == (
        "S",
        "DeepSeek-V4.1-Flash",
        "vLLM",
    )
    assert ev._who(pd.Series(r | dict(gpus=pd.NA, model=None, engine=None))) == ("S", "GB300")
    assert ev._who(pd.Series(r | dict(hardware="Some Rack", model="m"))) == (
        "S",
        "Some Rack x 4",
        "m",
        "vLLM",
    )


def test_closest_and_basis_reading_in_words_and_as_data():
    """A closest point: who, value, a NOT VERIFIED flag, the claim over it, setup and URL, how
    it differs by its kind, superseded by date; the tied spread for a tie; a basis reading's
    line leads with physics' refusal, the verdict, the margin (none for "-" or ""), then the
    evidence; as data, every tuple a list and the ruled-out text beside its reading."""
    from rackbook.core.basis import Difference

    diffs = (Difference("hardware", "gb300", "b300"), Difference("engine", "SGLang", "vLLM"))
    c = ev.Closest(
        "p",
        ("S", "GB300 x 4"),
        904.78,
        "output tok/s/GPU",
        2.0,
        "https://u",
        diffs,
        False,
        "near",
        superseded="2026-10-07: a later post",
        setup="concurrency 1",
    )
    assert c.who == "S · GB300 x 4" and c.span() == "904.8 output tok/s/GPU, the claim 2x it"
    assert c.text() == (
        "S · GB300 x 4: 904.8 output tok/s/GPU (NOT VERIFIED), the claim 2x it (concurrency 1; "
        "https://u); does not decide: differs in hardware: GB300 (claim: b300); engine: SGLang "
        "(claim: vLLM); superseded 2026-10-07"
    )
    d = c.as_dict()
    assert d["differences"] == ["hardware: gb300 (claim: b300)", "engine: SGLang (claim: vLLM)"]
    assert d["differing"] == [
        {"part": "hardware", "point": "gb300", "claim": "b300"},
        {"part": "engine", "point": "SGLang", "claim": "vLLM"},
    ]
    assert (d["source"], d["tied"], d["who"]) == (["S", "GB300 x 4"], [], "S · GB300 x 4")
    assert (d["id"], d["value"], d["ratio"], d["kind"], d["setup"]) == (
        "p",
        904.78,
        2.0,
        "near",
        "concurrency 1",
    )
    tie = ev.Closest(
        "p", ("S",), 8.61, "x", None, "https://u", (), True, "like for like", ("q", "r"), 8.61, 8.95
    )
    assert tie.text() == "S: 8.61x to 8.95x (3 points equally close) (https://u); like for like"
    assert tie.as_dict()["tied"] == ["q", "r"]
    ana = ev.Closest("p", ("S",), 8.61, "x", 0.9, "https://u", diffs[:1], True, "analogue")
    assert ana.text() == (
        "S: 8.61x, the claim 0.9x it (https://u); an analogue, never decides: differs in "
        "hardware: GB300 (claim: b300)"
    )
    mod = ev.Closest("p", ("S",), 3.3, "$/GPU-hour", 2.0, "https://u", diffs[1:], True, "modelled")
    assert mod.text().endswith("(https://u); differs in engine: SGLang (claim: vLLM)")
    ruled = ev.RuledOut(954000, "decode", 3.944, "compute", 241834.2, "GB300")
    br = ev.BasisReading("mean TPOT", "above", "1.2x it", "b", ("p",), ("https://u",), c, "conv")
    br = dataclasses.replace(br, ruled_by=ruled)
    assert br.ruled_out == ruled.text()
    assert br.evidence == "closest: " + c.text()
    assert (
        br.text()
        == f"as mean TPOT: ruled out by physics ({ruled.text()}); above (1.2x it); " + (br.evidence)
    )
    d = br.as_dict()
    assert (d["decided_on"], d["sources"], d["ruled_out"]) == (["p"], ["https://u"], ruled.text())
    assert d["closest"] == c.as_dict() and d["near"] is None
    near = ev.Near("n", ("a",), 5.0, 5.0, "x", 2.0, 2.0, ("model",), ("https://n",))
    plain = ev.BasisReading("as stated", "none published", "-", "b", (), (), None, "", near=near)
    assert (
        plain.evidence
        == "no published point; near evidence: 1 near point, 5x; the claim 2x it "
        + ("(differing in: model)")
    )
    assert plain.text() == "as stated: none published; " + plain.evidence
    assert plain.as_dict()["near"] == near.as_dict() and plain.as_dict()["closest"] is None
    assert near.as_dict() == dict(
        basis="n",
        points=["a"],
        low=5.0,
        high=5.0,
        unit="x",
        ratio_low=2.0,
        ratio_high=2.0,
        differences=["model"],
        urls=["https://n"],
        unverified=[],
        superseded=[],
        head="",
    )
    empty = dataclasses.replace(plain, near=None, margin="")
    assert (
        empty.text() == "as stated: none published; no published point" and empty.ruled_out is None
    )


def _near(basis: str, lo: float, hi: float, points=("a",), unverified=()) -> ev.Near:
    return ev.Near(basis, points, 1.0, 2.0, "x", lo, hi, (), (), unverified=unverified)


def test_near_summary_prefers_a_verified_bracket_holding_the_figure():
    """At the top: the first basis whose near points hold the figure, verified ones before a
    bracket of second-hand points only; else the preferred basis; else the first. Ruled-out
    bases and bases without near points are left out."""
    from types import SimpleNamespace as NS

    below, above = _near("below", 0.5, 0.9), _near("above", 1.1, 1.5)
    second = _near("second", 0.9, 1.1, unverified=("a",))
    inside = _near("inside", 0.9, 1.1, points=("a", "b"), unverified=("b",))
    out = _near("out", 0.9, 1.1)
    brs = [
        NS(near=below, ruled_out=None),
        NS(near=None, ruled_out=None),
        NS(near=second, ruled_out=None),
        NS(near=out, ruled_out="physics"),
        NS(near=inside, ruled_out=None),
        NS(near=above, ruled_out=None),
    ]
    s = ev.near_summary(brs, prefer="above")
    assert s["basis"] == "inside" and s["position"] == "inside" and s["verified"] is True
    assert s["bases"] == ["below", "second", "inside", "above"]
    assert [b["basis"] for b in s["per_basis"]] == s["bases"]
    assert [b["position"] for b in s["per_basis"]] == ["below", "inside", "inside", "above"]
    assert "differences" not in s and "urls" not in s and s["points"] == ["a", "b"]
    only_second = ev.near_summary([brs[0], brs[2]], prefer="below")
    assert only_second["basis"] == "second" and only_second["verified"] is False
    preferred = ev.near_summary([brs[0], brs[5]], prefer="above")
    assert preferred["basis"] == "above" and preferred["position"] == "above"
    assert ev.near_summary([brs[0], brs[5]], prefer="none of them")["basis"] == "below"
    assert ev.near_summary([brs[0], brs[5]])["basis"] == "below"
    assert ev.near_summary([brs[1], brs[3]]) is None and ev.near_summary([]) is None


def _reading(name: str, closest: ev.Closest | None, near: ev.Near | None = None):
    return ev.BasisReading(name, "none published", "-", "b", (), (), closest, "", near=near)


def test_top_names_the_bases_whose_closest_points_are_closest():
    """The bases whose closest point scores least (a verified one before a second-hand one at
    the same score), one holding the figure in its near points first, ties kept in order; the
    margin names the kind, and each basis where several are equally close."""
    from rackbook.core.basis import Difference

    def close(value, diffs=(), verified=True, kind="near", modelled=False):
        return ev.Closest(
            "p", ("S",), value, "x", 2.0, "u", diffs, verified, kind, modelled=modelled
        )

    far = close(9.0, (Difference("metric", "m"),))
    a = _reading("a", close(1.0, (Difference("engine", "e"),)))
    b = _reading("b", close(2.0, (Difference("serving", "s"),)))
    c = _reading("c", close(3.0, (Difference("engine", "e"),)), near=_near("c", 0.9, 1.1))
    d = _reading("d", close(4.0, (Difference("engine", "e"),), verified=False))
    top, words = ev._top([_reading("x", far), a, c, d, _reading("none", None)])
    assert [t.name for t in top] == ["c", "a"]
    assert words == (
        "closest published point (near, does not decide), on 2 bases equally close: as c: 3x, "
        "the claim 2x it; as a: 1x, the claim 2x it"
    )
    top, words = ev._top([a, b])
    assert [t.name for t in top] == ["b"]
    assert words == "closest published point (near, does not decide): 2x, the claim 2x it"
    top, words = ev._top([d])
    assert [t.name for t in top] == ["d"]
    assert ev._top([_reading("m", close(3.3, modelled=True, kind="like for like"))])[1] == (
        "closest published figure (a modelled price, not a measurement): 3.3x, the claim 2x it"
    )
    assert ev._top([_reading("l", close(3.3, kind="like for like"))])[1].startswith(
        "closest like-for-like point: 3.3x"
    )
    assert ev._top([_reading("an", close(3.3, kind="analogue"))])[1].startswith(
        "closest published analogue (never decides): 3.3x"
    )
    assert ev._top([_reading("none", None)]) == ([], "-") and ev._top([]) == ([], "-")


def test_near_analogue_and_stated_differences_on_a_basis():
    """is_near: never across metric, tokens or per, at most one stated decisive difference, the
    same model family (a point of no model passes), the same GPU generation unless either side
    leaves the hardware open; is_analogue: another metric, tokens, per or model, or another
    GPU generation; stated differences skip model and hardware, and speculation the claim
    leaves unknown."""
    from rackbook.core.basis import Difference

    cid = "single-user.throughput"
    cb = claims.load_claims().get(cid).figure_basis  # B300, speculation unknown

    def read(point):
        diffs = ev.differences(cb, point, cid)
        return diffs, [d for d in diffs if d.part in ev.DECISIVE[cid]]

    gb300 = cb.replace(hardware="gb300", engine="SGLang")
    diffs, dec = read(gb300)
    assert [d.part for d in diffs] == ["hardware", "engine"] and ev.stated_differences(
        cb, dec
    ) == []
    assert ev.is_near(cb, gb300, diffs, dec) and not ev.is_analogue(cb, gb300, dec)
    b200 = cb.replace(hardware="B200")
    diffs, dec = read(b200)
    assert not ev.is_near(cb, b200, diffs, dec) and ev.is_analogue(cb, b200, dec)
    one = cb.replace(gpu_count=8)
    diffs, dec = read(one)
    assert ev.stated_differences(cb, dec) == ["gpu_count"] and ev.is_near(cb, one, diffs, dec)
    two = cb.replace(gpu_count=8, concurrency=4)
    diffs, dec = read(two)
    assert ev.stated_differences(cb, dec) == ["gpu_count", "concurrency"]
    assert not ev.is_near(cb, two, diffs, dec)
    pro = cb.replace(model="DeepSeek-V4-Pro")
    diffs, dec = read(pro)
    assert not ev.is_near(cb, pro, diffs, dec) and ev.is_analogue(cb, pro, dec)
    sib = cb.replace(model="DeepSeek-V4-Flash")
    diffs, dec = read(sib)
    assert ev.is_near(cb, sib, diffs, dec) and ev.is_analogue(cb, sib, dec)
    per = cb.replace(per="GPU")
    diffs, dec = read(per)
    assert not ev.is_near(cb, per, diffs, dec) and ev.is_analogue(cb, per, dec)
    for other in (cb.replace(metric="throughput"), cb.replace(tokens="input+output")):
        diffs, dec = read(other)
        assert len(ev.stated_differences(cb, dec)) <= 1  # near but for the quantity
        assert not ev.is_near(cb, other, diffs, dec)
    assert ev.is_near(cb, cb.replace(hardware="-", model="-"), [], [])
    assert ev.is_near(cb.replace(hardware="unknown"), b200, [], [])
    assert not ev.is_analogue(cb, cb, [])
    spec = [Difference("speculation", "real", "none"), Difference("model", "m")]
    assert ev.stated_differences(cb, spec) == []
    assert ev.stated_differences(cb.replace(speculation="none"), spec) == ["speculation"]
    # the cost compares metric, hardware and per only: a price depends on no model or GPU count
    cost = claims.load_claims().get("rack-scaling.cost").figure_basis
    assert [d.part for d in ev.differences(cost, cb, "rack-scaling.cost")] == ["hardware", "per"]


def test_mismatch_and_scale_in_words_and_numbers():
    reg = claims.load_claims()
    c = reg.get("single-user.throughput")
    assert ev.mismatch({"basis": None}, c) == "no basis"
    assert ev.mismatch({"basis": c.figure_basis}, c) == "same basis as the claim"
    other = c.figure_basis.replace(hardware="gb300", engine="SGLang")
    assert ev.mismatch({"basis": other}, c) == (
        "differs from the claim in: hardware: GB300 (claim: B300); engine: SGLang (claim: vLLM)"
    )
    node = ev.PLAUSIBLE["rack-scaling.throughput"][3]
    assert ev.scale_of(node) == 1 / 7.9  # divided by the speed-up claim's figure
    assert ev.scale_of(dataclasses.replace(node, scale=2.0)) == 2 / 7.9
    assert ev.scale_of(ev.PLAUSIBLE["rack-scaling.throughput"][4]) == 1 / 72
    assert ev.scale_of(ev.PLAUSIBLE["rack-scaling.cost"][2]) == 0.25
    no_figure = dataclasses.replace(node, divide_by="prefill-gain.gain")  # a range: no value
    assert math.isnan(ev.scale_of(no_figure))


def test_reading_is_the_claim_evidence_as_a_claim_reading():
    """reading: the figure given, else the registry's, else the claim's own; its closest point
    with the basis it was read on, each basis by name, the highest list price, as data."""
    from types import SimpleNamespace

    reg = claims.load_claims()
    e = ev.claim_evidence("rack-scaling.cost", 3.0)
    r = ev.reading("rack-scaling.cost", 3.0, registry=reg)
    assert r.verdict == e.verdict == ev.DEPENDS and r.reading == "published"
    assert (r.margin, r.reason, r.sources, r.near, r.ruled_out) == (
        e.margin,
        e.reason,
        e.sources,
        e.near,
        e.ruled_out,
    )
    assert r.closest == e.closest.as_dict() | {"basis": e.closest_basis}
    assert r.closest["basis"] == e.closest_basis is not None
    assert r.basis == " | ".join(f"as {b.name}: {b.basis}" for b in e.bases)
    assert r.basis.startswith("as a rental price: rental price per GPU-hour; per GPU; ")
    assert r.by_basis == tuple(b.as_dict() for b in e.bases)
    assert r.list_price == e.list_price and r.list_price["value"] == 18.0
    assert ev.reading("rack-scaling.cost").verdict == "above"  # the claim's own $38.96
    fake = SimpleNamespace(get=lambda cid: SimpleNamespace(value=3.0))
    assert ev.reading("rack-scaling.cost", registry=fake).verdict == ev.DEPENDS
    assert ev.reading("rack-scaling.cost", 50.0, registry=fake).verdict == "above"
    none = ev.reading("context-latency.delta")
    assert none.closest is None and none.verdict == "none published"


def _point(pid: str, value: float, basis, **kw) -> dict:  # type: ignore[no-untyped-def]
    row = dict(id=pid, value=value, unit="tok/s per user", url=f"https://{pid}", basis=basis)
    row |= dict(role="measurement", verified=True, gpus=4, submitter=f"S{pid}", hardware="b300")
    row |= dict(model="deepseek-v4.1-flash", engine="vLLM", concurrency=1, isl=None, osl=None)
    row |= dict(speculative=None, date="2026-01-01", superseded=None, price_kind=None)
    return row | kw


def test_basis_readings_on_made_up_points_decide_only_like_for_like_verified_ones():
    """single-user.throughput read per statistic: on the median basis a verified point of its
    exact basis decides (826 is 1.03x the 800 published); a second-hand one of the mean basis
    is like for like but decides nothing; a GB300 point is near; context rows and rows without a
    basis are never read; each basis takes only the points of its own statistic."""
    c = claims.load_claims().get("single-user.throughput")
    med, mean = (c.figure_basis.replace(statistic=s) for s in ("median", "mean"))
    pts = pd.DataFrame(
        [
            _point("p1", 800.0, med),
            _point("p2", 900.0, mean, verified=False),
            _point("p3", 1.0, med, role="context"),
            _point("p4", 2.0, None),
            _point("p5", 850.0, med.replace(hardware="gb300"), hardware="gb300"),
            _point(
                "p6",
                700.0,
                mean.replace(hardware="gb300", engine="SGLang"),
                hardware="gb300",
                engine="SGLang",
                superseded="2026-02-01: later",
            ),
        ]
    )
    mean_r, med_r = ev._basis_readings(c, 826.0, pts)
    assert (med_r.name, med_r.verdict, med_r.decided_on, med_r.sources) == (
        "median (P50) TPOT",
        "above",
        ("p1",),
        ("https://p1",),
    )
    assert med_r.margin == "1.03x the highest published (800 tok/s per user)"
    assert med_r.basis == med.short() and not med_r.modelled and med_r.step == ""
    assert (med_r.closest.id, med_r.closest.kind, med_r.closest.ratio) == (
        "p1",
        "like for like",
        826 / 800,
    )
    assert med_r.closest.tied == () and med_r.closest.source == (
        "Sp1",
        "B300 x 4",
        "DeepSeek-V4.1-Flash",
        "vLLM",
    )
    assert med_r.near.points == ("p5",) and (med_r.near.low, med_r.near.high) == (850.0, 850.0)
    assert med_r.near.differences == ("hardware",) and med_r.near.urls == ("https://p5",)
    assert med_r.near.ratio_low == med_r.near.ratio_high == 826 / 850
    assert (mean_r.verdict, mean_r.margin, mean_r.decided_on) == ("none published", "-", ())
    assert (mean_r.closest.id, mean_r.closest.kind, mean_r.closest.verified) == (
        "p2",
        "near",
        False,
    )
    assert mean_r.closest.ratio == 826 / 900
    n = mean_r.near
    assert (n.points, n.low, n.high, n.unverified, n.superseded) == (
        ("p2", "p6"),
        700.0,
        900.0,
        ("p2",),
        ("p6",),
    )
    assert n.differences == ("hardware", "engine") and n.urls == ("https://p2", "https://p6")
    assert (n.basis, n.head, n.unit) == ("mean TPOT", "mean TPOT", "tok/s per user")
    assert (n.ratio_low, n.ratio_high) == (826 / 900, 826 / 700)
    assert mean_r.ruled_by is None and med_r.ruled_by is None
    # no figure: nothing placed, the closest point kept without a ratio
    unknown = ev._basis_readings(c, None, pts)[1]
    assert unknown.verdict == "none published" and unknown.closest.ratio is None
    assert unknown.closest.ratio_low is None and unknown.closest.id == "p1"
    # a tolerance of 30 tok/s holds 826 within 800
    assert ev._basis_readings(c, 826.0, pts, tolerance=30.0)[1].verdict == "within"
    assert ev._basis_readings(c, 826.0, pts, tolerance=25.0)[1].verdict == "above"
    # two points as close: a tie, the spread of both and the setup only where they share it
    twin = _point("p0", 810.0, med, concurrency=2)
    tied = ev._basis_readings(c, 826.0, pd.concat([pts, pd.DataFrame([twin])]))[1].closest
    assert (tied.id, tied.tied, tied.low, tied.high) == ("p0", ("p1",), 800.0, 810.0)
    assert (tied.ratio_low, tied.ratio_high, tied.setup) == (826 / 810, 826 / 800, "")
    assert med_r.closest.setup == "concurrency 1, 2026-01-01"


def test_claim_evidence_margins_in_full():
    """The claim-level margin: the bases physics rules out, named with commas and a last
    "and"; the closest point; the near evidence; the highest list price, each after "; "; a
    claim's tolerance holds a figure at a published point's edge."""
    su = ev.claim_evidence("single-user.throughput")
    assert su.margin == (
        "closest published point (near, does not decide): 456.6 tok/s per user, the claim "
        "1.81x it; near evidence, which does not decide (the same quantity on a sibling model or "
        "GPU): 2 near points, 763.4 tok/s per user to 853.5 tok/s per user; the claim 0.968x to "
        "1.08x them as median (P50) TPOT (one of 2 bases with near points)"
    )
    cost = ev.claim_evidence("rack-scaling.cost")
    assert cost.margin.startswith(
        "closest published figure (a modelled price, not a measurement), on 2 bases equally "
        "close: as a rental price: $3.96/GPU-hour, the claim 9.84x it; as an ownership cost: "
        "$2.65/GPU-hour to $3.30/GPU-hour (2 points equally close), the claim 11.8x to 14.7x "
        "them; near evidence, which does not decide"
    )
    assert cost.margin.endswith(
        "(one of 3 bases with near points); highest list price: $18.00/GPU-hour (Oracle Cloud "
        "(price list, as compiled by callgideon), GB300, NOT VERIFIED), the claim 2.16x it"
    )
    rules = "physics rules out as per GPU, output tokens"
    one = ev.claim_evidence("rack-scaling.throughput", 300000.0)
    assert one.ruled_out == ("per GPU, output tokens",)
    assert one.margin.startswith(f"{rules}; closest published point (near, does not decide), on 4")
    two = ev.claim_evidence("rack-scaling.throughput").margin
    assert two.startswith(f"{rules} and as per GPU, input + output, cached prefix not counted; cl")
    four = ev.claim_evidence("rack-scaling.throughput", 5e7)
    assert len(four.ruled_out) == 4
    assert four.margin.startswith(
        f"{rules}, as per GPU, input + output, cached prefix not counted, as a rack total over 72 "
        "GPUs, output tokens and as a rack total over 72 GPUs, input + output, cached prefix not "
        "counted; closest published point"
    )
    # the cost's tolerance is half a cent: $3.964 is within the $3.96 rental price, $3.966 not
    rental = {b.name: b.verdict for b in ev.claim_evidence("rack-scaling.cost", 3.964).bases}
    assert rental["a rental price"] == "within"
    rental = {b.name: b.verdict for b in ev.claim_evidence("rack-scaling.cost", 3.966).bases}
    assert rental["a rental price"] == "above"


def test_a_claim_read_on_one_basis_leads_with_its_deciding_margin(monkeypatch):
    """A claim with one named basis that a verified point of its basis decides: the margin
    leads with that basis's margin, then the closest point; its verdict is that basis's."""
    c = claims.load_claims().get("single-user.throughput")
    median = ev.PLAUSIBLE[c.id][1]
    monkeypatch.setitem(ev.PLAUSIBLE, c.id, (median,))
    shipped = ev.published_points

    def points(result=None):  # type: ignore[no-untyped-def]
        df = shipped(result)
        like = df[df["id"] == "figures:sglang-pr39068.v41flash-gb300-bs1"].copy()
        like["id"], like["value"] = "test:like", 800.0
        like["basis"] = [c.figure_basis.replace(statistic="median")]
        return pd.concat([df, like], ignore_index=True)

    monkeypatch.setattr(ev, "published_points", points)
    e = ev.claim_evidence(c.id)
    (b,) = e.bases
    assert (e.verdict, b.verdict, b.decided_on) == ("above", "above", ("test:like",))
    assert b.margin == "1.03x the highest published (800 tok/s per user)"
    assert e.margin.startswith(f"{b.margin}; closest like-for-like point: 800 tok/s per user, ")
    assert e.reason.startswith(
        "the write-up names neither the statistic of its speed nor whether its speculation ran "
    )
    assert f"basis: {b.basis}: as median (P50) TPOT: above (1.03x" in e.reason
    assert e.sources == b.sources and e.closest_basis == median.name


def test_claim_evidence_reason_leads_with_the_note_then_each_basis():
    """The reason: the chapter's note for the claim (none for eplb-balance.before), how many
    bases it is read on or its one basis, then each basis's line after " | ", the bases physics
    rules out last."""
    sp = ev.claim_evidence("rack-scaling.speedup")
    a, b = sp.bases
    assert sp.claim_id == "rack-scaling.speedup" and sp.list_price is None
    assert sp.reason == (
        ev.READING_NOTES["rack-scaling.speedup"]
        + "; basis unknown in a part that matters, read on 2 named bases: "
        + a.text()
        + " | "
        + b.text()
    )
    assert a.text().startswith(
        "as node = one 4-GPU GB300 compute tray (linear scaling would be 18x): none published; "
        "closest: NVIDIA · NVIDIA GB300 x 72"
    )
    before = ev.claim_evidence("eplb-balance.before")
    (only,) = before.bases
    assert "eplb-balance.before" not in ev.READING_NOTES
    assert before.reason == f"basis: {only.basis}: {only.text()}"
    th = ev.claim_evidence("rack-scaling.throughput")
    assert th.reason.startswith(
        ev.READING_NOTES["rack-scaling.throughput"]
        + "; basis unknown in a part that matters, read on 7 named bases: as per GPU, input + "
        "output counting each turn's re-read cached prefix: none published"
    )
    last_two = [b for b in th.bases if b.ruled_out]
    assert [b.name for b in last_two] == [
        "per GPU, output tokens",
        "per GPU, input + output, cached prefix not counted",
    ]
    assert th.reason.endswith(" | " + last_two[0].text() + " | " + last_two[1].text())
    assert th.reason.count(" | ") == 6


def test_near_reading_names_parts_by_name_and_keeps_latency_cells_off_peaks():
    """A near point differing in GPU count is named "GPU count"; a low-latency cell near the
    rack's peak throughput is left out there, and kept for a claim that is not a peak."""
    from rackbook.core.basis import Difference

    cid = "rack-scaling.throughput"
    c = claims.load_claims().get(cid)
    plaus, cb = ev.claim_bases(c)[2]  # per GPU, counting the cached prefix
    point = cb.replace(gpu_count=4)
    diff = [Difference("gpu_count", 4, 72)]
    row = pd.Series(
        dict(id="x:gb300/low-latency/c64", value=1000.0, unit="tok/s/GPU", url="https://x")
        | dict(role="measurement", verified=True, basis=point, concurrency=64, superseded=None)
    )
    assert ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(row, diff, diff)], cb, cid) is None
    n = ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(row, diff, diff)], cb, "other.claim")
    assert n.differences == ("GPU count",) and n.points == ("x:gb300/low-latency/c64",)
    assert (n.low, n.high, n.ratio_low, n.ratio_high, n.unit) == (
        1000.0,
        1000.0,
        2.0,
        2.0,
        "tok/s/GPU",
    )
    peak = row.copy()
    peak["id"] = "x:gb300/max-throughput/c64"
    n = ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(peak, diff, diff)], cb, cid)
    assert n.points == ("x:gb300/max-throughput/c64",) and n.head == plaus.head == "per GPU"
    # like for like and verified: it decides, so it is no near point
    assert ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(peak, [], [])], cb, cid) is None
    # another unit family, or not a measurement: never near
    other = peak.copy()
    other["unit"] = "tok/s per user"
    assert ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(other, diff, diff)], cb, cid) is None
    ana = peak.copy()
    ana["role"] = "analogue"
    assert ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(ana, diff, diff)], cb, cid) is None
    out = peak.copy()
    out["unit"] = "output tok/s/GPU"  # one family with tok/s/GPU
    assert (
        ev.near_reading(plaus, 2000.0, "tok/s/GPU", [(out, diff, diff)], cb, cid).unit
        == "tok/s/GPU"
    )


def test_a_claim_of_one_stated_basis_reads_as_stated():
    (only,) = ev.claim_evidence("eplb-balance.before").bases
    assert only.name == "as stated" and only.text().startswith("as stated: none published; ")


def test_candidates_take_node_scale_points_and_mark_cross_checks():
    """The node reading (at most 8 GPUs, a cross-check) takes points of a stated size up to 8
    GPUs, each marked "a node, size not stated" in GPU count; the token-value reading marks
    each point as derived from the rack claim; context rows are never candidates."""
    reg = claims.load_claims()
    c = reg.get("rack-scaling.throughput")
    node, ncb = ev.claim_bases(c)[3]
    assert node.max_gpus == 8 and node.cross_check
    rows = []
    for pid, gpus in (("none", pd.NA), ("sixteen", 16), ("eight", 8), ("four", 4)):
        rows.append(_point(pid, 100.0, ncb, gpus=gpus, unit="tok/s/GPU"))
    rows.append(_point("ctx", 100.0, ncb, gpus=4, role="context", unit="tok/s/GPU"))
    got = ev._candidates(c, node, ncb, pd.DataFrame(rows))
    assert [r["id"] for r, _, _ in got] == ["eight", "four"]
    (r, diffs, dec), _ = got
    assert diffs == dec == [ev.Difference("gpu_count", 8, "a node, size not stated")]
    assert diffs[0].text == "GPU count: 8 (claim: a node, size not stated)"
    cost = reg.get("rack-scaling.cost")
    value, vcb = ev.claim_bases(cost)[4]
    assert value.cross_check and value.max_gpus is None
    pts = pd.DataFrame([_point("tv", 40.0, vcb, gpus=pd.NA, unit="$/GPU-hour")])
    ((_, diffs, dec),) = ev._candidates(cost, value, vcb, pts)
    assert diffs[0].text == "counting: derived from the rack claim at published prices"
    assert diffs[0] is dec[0] and len(diffs) == 1


def test_basis_readings_scale_the_tolerance_and_mark_modelled_margins():
    """Per named basis: the tolerance scaled as the figure is (an instance-hour's price over 4
    GPUs: $0.04 becomes $0.01), a point that is not a measurement decides nothing even when
    verified, a latency cell is never near the rack's peak, the node's step in numbers, and a
    margin resting on modelled prices says so."""
    reg = claims.load_claims()
    cost = reg.get("rack-scaling.cost")
    inst, icb = ev.claim_bases(cost)[2]
    assert ev.scale_of(inst) == 0.25
    price = _point("lp", 10.02, icb, unit="$/GPU-hour", gpus=pd.NA)
    reads = ev._basis_readings(cost, 40.0, pd.DataFrame([price]), tolerance=0.04)
    by = {b.name: b for b in reads}
    assert by[inst.name].verdict == "below"  # 10.00 < 10.02 - 0.01
    reads = ev._basis_readings(cost, 40.0, pd.DataFrame([price]), tolerance=0.08)
    assert {b.name: b for b in reads}[inst.name].verdict == "within"  # 10.02 - 0.02
    c = reg.get("single-user.throughput")
    med = c.figure_basis.replace(statistic="median")
    pts = pd.DataFrame([_point("p1", 800.0, med), _point("an", 801.0, med, role="analogue")])
    (_, r) = ev._basis_readings(c, 826.0, pts)
    assert r.decided_on == ("p1",) and r.verdict == "above"
    assert (r.closest.id, r.closest.kind, r.closest.tied) == ("an", "analogue", ("p1",))
    assert ev._basis_readings(c, 800.5, pts)[1].verdict == "above"  # no tolerance by default
    th = reg.get("rack-scaling.throughput")
    plaus, cb = ev.claim_bases(th)[2]
    near = cb.replace(gpu_count=4)
    for pid, want in (("x/low-latency/c64", None), ("x/peak/c64", ("x/peak/c64",))):
        row = _point(pid, 1e5, near, gpus=4, concurrency=64, unit="tok/s/GPU")
        got = ev._basis_readings(th, 954000.0, pd.DataFrame([row]))[2]
        assert got.name == plaus.name and (got.near.points if got.near else None) == want
    shipped = ev.claim_evidence("rack-scaling.throughput")
    node = next(b for b in shipped.bases if b.name == NODE)
    assert node.step == "954,000 / 7.9 = 120,759 tok/s/GPU"
    assert all(b.step == "" for b in shipped.bases if b.name != NODE)
    rental = next(
        b for b in ev.claim_evidence("rack-scaling.cost").bases if b.name == "a rental price"
    )
    assert (
        rental.margin
        == "9.84x the highest published ($3.96/GPU-hour) (modelled prices, not measurements)"
    )
    assert rental.modelled and rental.decided_on


def test_a_verified_point_is_closer_than_a_second_hand_one_and_physics_needs_a_scope():
    from types import SimpleNamespace as NS

    c = claims.load_claims().get("single-user.throughput")
    med = c.figure_basis.replace(statistic="median")
    pts = pd.DataFrame([_point("a-second", 700.0, med, verified=False), _point("b", 800.0, med)])
    r = ev._basis_readings(c, 826.0, pts)[1]
    assert (r.closest.id, r.closest.verified, r.closest.tied) == ("b", True, ())
    th = claims.load_claims().get("rack-scaling.throughput")
    per_gpu_out = ev.PLAUSIBLE[th.id][0]
    assert ev.ruled_out(th, per_gpu_out, 954000.0) is not None
    for scope in (
        dict(model="DeepSeek-V4.1-Flash", hardware="GB300 NVL72", gpu_count=None),
        dict(model="DeepSeek-V4.1-Flash", hardware=None, gpu_count=72),
        dict(model=None, hardware="GB300 NVL72", gpu_count=72),
    ):
        assert ev.ruled_out(NS(scope=NS(**scope)), per_gpu_out, 954000.0) is None, scope
