"""The graded certainty (:func:`rackbook.results.conclusions.certainty`) and the decisive finding
(:func:`rackbook.results.conclusions.summarize`): each named reason moves the grade, the shipped
traces give at least three grades, each with reasons, the headline JSON carries them, and no
landing sentence contradicts its chapter."""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import asdict

import pytest

from rackbook import paths
from rackbook.book import chapter
from rackbook.core import traces
from rackbook.inputs.claims import load_claims
from rackbook.results import conclusions as cc
from rackbook.results import conclusions as ct

CLAIM = "single-user.throughput"


def _rs(physics=None, published=None, run=None):
    base = {"claim_id": CLAIM, "margin": "-", "reason": "why"}
    return [
        {**base, "reading": "physics", "verdict": "possible", **(physics or {})},
        {**base, "reading": "published", "verdict": "none published", **(published or {})},
        {**base, "reading": "this run", "verdict": "untested", **(run or {})},
    ]


NEAR = {"points": ["a", "b"], "verified": True, "ratio_low": 1.1, "ratio_high": 3.0}
CLOSEST = {
    "kind": "near",
    "differences": ["hardware: GB300 (claim: B300)"],
    "differing": [{"part": "hardware", "point": "GB300", "claim": "B300"}],
}


def _grade(readings, claim=None):
    return ct.certainty(readings, claim, CLAIM)


def test_physics_bounds_only_is_the_floor():
    c = _grade(_rs())
    assert c.grade == "physics bounds only" and c.reasons[0] == "rests on: physics bounds only"


def test_a_run_on_the_claims_hardware_is_the_top():
    assert _grade(_rs(run={"verdict": "inconsistent"})).level == 4
    assert _grade(_rs(run={"verdict": "untested"})).level == 1


def test_like_for_like_points_give_the_third_level():
    assert _grade(_rs(published={"verdict": "within"})).grade == "like-for-like published"


def test_modelled_price_lowers_it():
    c = _grade(_rs(published={"verdict": "above", "modelled": True}))
    assert c.level == 2 and c.reasons[-1].startswith("lowered by: modelled price")


def test_basis_unknown_lowers_a_placing_on_only_some_bases():
    entries = [{"name": "a", "verdict": "within"}, {"name": "b", "verdict": "none published"}]
    c = _grade(_rs(published={"verdict": "within", "by_basis": entries}))
    assert c.level == 2 and "placed on 1 of its 2" in c.reasons[-1]
    entries[1] = {"name": "b", "verdict": "below"}
    assert _grade(_rs(published={"verdict": "within", "by_basis": entries})).level == 3
    # a basis physics rules out does not count against the placing
    entries[1] = {"name": "b", "verdict": "none published", "ruled_out": "3.94x the ceiling"}
    assert _grade(_rs(published={"verdict": "within", "by_basis": entries})).level == 3


def test_near_points_give_the_second_level_and_name_why_not_higher():
    c = _grade(_rs(published={"near": NEAR, "closest": CLOSEST}))
    assert c.level == 2
    assert c.reasons[1] == "held back by: analogue hardware (GB300, the claim B300)"
    sim = {**CLOSEST, "differing": [{"part": "speculation", "point": "simulated", "claim": "-"}]}
    assert _grade(_rs(published={"near": NEAR, "closest": sim})).reasons[1] == (
        "held back by: simulated acceptance"
    )
    count = {"part": "gpu_count", "point": 4, "claim": "a node, size not stated"}
    how = {"part": "counting", "point": "derived from the rack claim", "claim": None}
    other = {**CLOSEST, "differing": [count, how, {"part": "tokens", "point": "a", "claim": "b"}]}
    assert _grade(_rs(published={"near": NEAR, "closest": other})).reasons[1] == (
        "held back by: another GPU count (4, the claim a node, size not stated), other "
        "counting, another tokens counted (a, the claim b)"
    )


def test_the_differences_are_read_from_their_fields_not_their_sentences():
    """Issue 39: a near point's differences are read from their fields (part, the point's
    value, the claim's), never parsed back out of the sentence rackbook wrote: the sentence
    replaced by nonsense leaves the grade, level and every reason as they were."""
    plain = _grade(_rs(published={"near": NEAR, "closest": CLOSEST}))
    garbled = {**CLOSEST, "differences": ["zzz (claim: qq)", "speculation: simulated"]}
    c = _grade(_rs(published={"near": NEAR, "closest": garbled}))
    assert (c.grade, c.level, c.reasons, c.note) == (plain.grade, 2, plain.reasons, plain.note)
    assert c.note == (
        "rests on 2 near published points; held back by analogue hardware (GB300, the claim B300)"
    )
    # and a reason's words that hold a colon keep it: the label alone becomes a phrase
    assert ct.Certainty("x", 1, (("held back by", "a: b"),)).note == "held back by a: b"


def test_near_points_read_second_hand_do_not_count():
    c = _grade(_rs(published={"near": {**NEAR, "verified": False}}))
    assert c.level == 1 and "NOT VERIFIED" in c.reasons[-1]


def _basis_near(name, lo, hi):
    return {"basis": name, "points": ["p"], "ratio_low": lo, "ratio_high": hi}


def test_near_points_on_both_sides_of_the_claim_on_one_basis_corroborate_it():
    """A claim inside its near points on one basis is corroboration: it never lowers the
    grade (main lowered it: 'the claim 0.09x to 32x the near points')."""
    one = {**NEAR, "ratio_low": 0.968, "ratio_high": 2.98, "basis": "mean TPOT"}
    c = _grade(_rs(published={"near": one}))
    assert c.level == 2 and c.reasons[-1] == (
        "corroborated by: near points on both sides of the claim as mean TPOT (the claim "
        "0.968x to 2.98x them)"
    )
    # an older reading without per_basis is one basis
    assert (
        _grade(_rs(published={"near": {**NEAR, "ratio_low": 0.09, "ratio_high": 32.0}})).level == 2
    )


def test_adding_a_point_near_the_claim_never_lowers_the_grade():
    """Single user: near points at 1.08x to 2.98x; a point at 0.97x of the claim (SGLang PR
    39068, 853 tok/s) added to the same basis never lowers
    the grade (a point on a basis of its own is judged with that basis: see
    test_basis_uncertainty_is_judged_per_basis)."""
    before = [_basis_near("mean TPOT", 1.08, 2.98), _basis_near("median (P50) TPOT", 1.08, 1.08)]
    base = _grade(_rs(published={"near": {**NEAR, "per_basis": before}})).level
    for lo in (0.97, 1.0, 1.5, 3.5):
        widened = [
            _basis_near("mean TPOT", min(lo, 1.08), max(lo, 2.98)),
            before[1],
        ]
        c = _grade(_rs(published={"near": {**NEAR, "per_basis": widened}}))
        assert c.level >= base, lo


def test_basis_uncertainty_is_judged_per_basis():
    """Lowered only where the claim is above every near point of one basis and below every one
    of another; one side on every basis does not lower; each basis's own bracket is read."""
    split = [_basis_near("per GPU", 6.69, 9.14), _basis_near("rack total", 0.093, 0.127)]
    c = _grade(_rs(published={"near": {**NEAR, "per_basis": split}}))
    assert c.level == 1 and c.reasons[-1] == (
        "lowered by: an unknown basis (the claim above every near point as per GPU, below "
        "every one as rack total)"
    )
    same = [_basis_near("per GPU", 6.69, 9.14), _basis_near("rack total", 14.6, 14.6)]
    assert _grade(_rs(published={"near": {**NEAR, "per_basis": same}})).level == 2
    inside = [*split, _basis_near("node", 0.847, 1.16)]
    c = _grade(_rs(published={"near": {**NEAR, "per_basis": inside}}))
    assert c.level == 2 and "as node (the claim 0.847x to 1.16x them)" in c.reasons[-1]


def test_exact_derivation_gives_the_second_level_and_a_primary_text_confirms_it():
    """A primary text stating a derived figure confirms it without making it "like-for-like
    published" beside a published reading of "none published" (main graded 890 B/token so);
    with a published placing it raises the grade."""
    kv = load_claims().get("context-latency.kv-bytes")  # a primary text located
    derived = {"value": 890, "unit": "B/token", "from": "the model card", "exact": True}
    assert _grade(_rs(physics={"derived": derived})).level == 2  # no claim: no primary
    c = _grade(_rs(physics={"derived": derived}), kv)
    assert c.level == 2 and c.reasons[-1].startswith("confirmed by: a primary text")
    assert c.grade != "like-for-like published"
    placed = _rs(physics={"derived": derived}, published={"verdict": "within"})
    c = _grade(placed, kv)
    assert c.level == 4 - 0 and c.reasons[-1].startswith("raised by: a primary text")
    assert _grade(_rs(physics={"derived": {**derived, "exact": False}}), kv).level == 1
    unlocated = load_claims().get("context-latency.delta")
    assert _grade(_rs(physics={"derived": derived}), unlocated).level == 2


def test_only_analogues_and_a_synthetic_input_are_named():
    c = _grade(_rs(published={"closest": {"kind": "analogue"}}, run={"synthetic": True}))
    assert c.reasons[1:] == (
        "held back by: analogues only",
        "held back by: a synthetic input",
    )


_OUTCOMES: dict[str, object] = {}


def _outcome(result: str):  # type: ignore[no-untyped-def]
    if result not in _OUTCOMES:
        module = importlib.import_module(f"rackbook.results.{result.replace('-', '_')}")
        _OUTCOMES[result] = module.outcome(module.analyse(traces.read_trace(paths.TRACES / result)))
    return _OUTCOMES[result]


def test_shipped_traces_give_graded_certainties_with_reasons_in_the_headline_json(tmp_path):
    grades = {}
    for result in paths.RESULTS:
        doc = json.loads(_outcome(result).write(tmp_path, "trace").read_text())
        assert doc["format"] == 2
        ids = [c.id for c in load_claims().for_result(result)]
        assert [c["claim_id"] for c in doc["certainty"]] == ids
        for c in doc["certainty"]:
            assert c["grade"] in ct.GRADES and c["reasons"], c
            grades[c["claim_id"]] = c["grade"]
    # two grades at least: the 890 B/token is an exact derivation a primary text confirms, not a
    # published measurement, so nothing shipped reads "like-for-like published" any more
    assert len(set(grades.values())) >= 2, grades
    assert grades["context-latency.kv-bytes"] == "near evidence or exact derivation"
    assert grades["single-user.throughput"] == "near evidence or exact derivation"
    assert grades["rack-scaling.throughput"] == "near evidence or exact derivation"


_RATIO = re.compile(r"\d[\d,]*(?:\.\d+)?x")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@pytest.mark.parametrize("result", paths.RESULTS)
def test_no_landing_finding_contradicts_its_chapter(result):
    """The landing row's finding (also the chapter's conclusion box) against the chapter's
    readings in words (the box's "Each reading in words", one sentence per reading) from the
    same headline: the same physics word (impossible only where the chapter rules a basis out
    or finds it impossible, and always where it rules one out; "does not settle" only where it
    is undetermined), the same evidence word, and each ratio and number of the finding in the
    chapter's sentences or the readings they come from."""
    out = _outcome(result)
    doc = {"result": result, "readings": [asdict(r) for r in out.readings]}
    box = chapter.conclusion_markdown(out)
    for c in cc.conclusions(doc):
        s = cc.summarize(load_claims().get(c.claim_id), doc["readings"])  # the box's words
        f, words = s.finding.lower(), c.text.lower()
        assert chapter._md_cell(s.finding) in box
        assert chapter._md_cell(c.text) in box
        mine = {r["reading"]: r for r in doc["readings"] if r["claim_id"] == c.claim_id}
        source = c.text + json.dumps(list(mine.values()), ensure_ascii=False)
        if mine["published"].get("ruled_out"):  # the chapter rules a basis out: so does the row
            assert f.startswith("impossible as") and "physics rules out" in words, c.claim_id
        if f.startswith("impossible"):
            assert "rules out" in words or "physically impossible" in words, c.claim_id
        if "physics does not settle" in f:
            assert mine["physics"]["verdict"] == "undetermined", c.claim_id
            assert "physics does not settle" in words, c.claim_id
        if "physically possible" in f:
            assert mine["physics"]["verdict"] == "possible", c.claim_id
            assert "physically possible" in words, c.claim_id
        for word in ("above every", "below every", "within every"):
            if word in f:
                assert word.split()[0] in words, (c.claim_id, word)
        if "near published point" in f:
            assert "near evidence" in words, c.claim_id
        for x in _RATIO.findall(s.finding) + _NUMBER.findall(s.finding):
            assert x in source, (c.claim_id, x)


def test_the_rack_row_says_impossible_per_gpu_not_undecided():
    out = _outcome("rack-scaling")
    doc = {"result": "rack-scaling", "readings": [asdict(r) for r in out.readings]}
    found = cc.summarize(load_claims().get("rack-scaling.throughput"), doc["readings"]).finding
    assert found.startswith("Impossible as computed tokens per GPU (3.94x")
    assert "physics does not settle" not in found.lower()
    assert "the evidence supports the node's throughput per GPU" in found


def test_the_finding_follows_each_reading():
    claim = load_claims().get(CLAIM)

    def finding(rs):
        return cc.summarize(claim, rs).finding

    base = finding(_rs(physics={"margin": "9% of the ceiling"}))
    assert base == "Physically possible: 9% of the ceiling. Nothing comparable is published."
    near = {"near": NEAR, "closest": {**CLOSEST, "ratio": 1.81, "value": 456.6, "unit": "tok/s"}}
    assert finding(_rs(published=near)).endswith(
        "The closest near published point is a published point: 456.6 tok/s, the claim 1.81x it."
    )
    either = {"near": {**NEAR, "ratio_low": 0.5, "basis": "mean TPOT"}, "closest": near["closest"]}
    assert finding(_rs(published=either)).endswith(
        "The claim is 0.5x to 3x the 2 near published points, on both sides of it as mean TPOT."
    )
    run = finding(_rs(run={"verdict": "consistent", "margin": "+1.0%"}))
    assert "Measured on B300 GPUs here, it holds (+1.0%)." in run
    derived = {"value": 826, "unit": "tok/s", "from": "the data sheet", "exact": True}
    derived["how"] = "2 x 413"
    assert finding(_rs(physics={"derived": derived})).startswith(
        "Exactly what the data sheet give (826 tok/s: 2 x 413)."
    )


def _garbled_differences(doc):
    """``doc`` with every closest point's difference sentences, at any depth, replaced by
    nonsense (their fields, ``differing``, kept)."""
    if isinstance(doc, (list, tuple)):
        return [_garbled_differences(x) for x in doc]
    if not isinstance(doc, dict):
        return doc
    out = {k: _garbled_differences(v) for k, v in doc.items()}
    if "differences" in out and "differing" in out:
        out["differences"] = ["zzz: qq (claim: x)" for _ in out["differences"]]
    return out


def test_no_shipped_certainty_depends_on_the_differences_sentences(shipped_chapter):
    """Issue 39: every shipped claim keeps its grade, level and reasons when the sentences
    of its closest points' differences are replaced by nonsense; some of them name those
    differences, so the fields are what is read."""
    named = 0
    for result in paths.RESULTS:
        readings = shipped_chapter(result)[1].to_dict("trace")["readings"]
        garbled = _garbled_differences(readings)
        assert garbled != readings
        for plain, new in zip(
            ct.certainties(result, readings), ct.certainties(result, garbled), strict=True
        ):
            assert (new.grade, new.level, new.reasons) == (plain.grade, plain.level, plain.reasons)
            held = ("held back by: analogue hardware", "held back by: another")
            named += any(r.startswith(held) for r in plain.reasons)
    assert named >= 3


def test_a_difference_prints_whole_numbers_with_separators() -> None:
    """Issue 37's number style: prefill-gain's closest point (cold prefill) against the
    claim's 128,000 cached tokens reads "(0, the claim 128,000)", never "128000"."""
    d = {"part": "context", "point": "0", "claim": "128000"}
    assert ct._difference(d).endswith("(0, the claim 128,000)")
    assert ct._difference({"part": "stat", "point": "median", "claim": "rate"}).endswith(
        "(median, the claim rate)"
    )
