"""The conclusion sentences and certainty come from the readings: flip a reading and
the sentence (and where it applies, the certainty) changes with it."""

from __future__ import annotations

import pytest

from rackbook.inputs.claims import load_claims
from rackbook.results import conclusions as cc

CLAIM = "rack-scaling.throughput"


def _readings(physics="impossible", published="none published", run="untested", **extra):
    return [
        {
            "claim_id": CLAIM,
            "reading": "physics",
            "verdict": physics,
            "margin": "3.94x the decode ceiling",
            "reason": "as computed tokens per GPU it needs 3.94x the decode ceiling "
            "(a long aside that the sentence quotes); it fits only if at least 74.7 % "
            "were cache hits",
            **extra,
        },
        {
            "claim_id": CLAIM,
            "reading": "published",
            "verdict": published,
            "margin": "-" if published == "none published" else "6.69x the highest published",
            "reason": "954,000 tok/s/GPU against 24 published points [analogues: x]",
        },
        {
            "claim_id": CLAIM,
            "reading": "this run",
            "verdict": run,
            "margin": "-" if run == "untested" else "+2.0%",
            "reason": "recorded on 2-core AMD EPYC, no GPU; the claim needs 72 GB300 GPUs",
        },
    ]


@pytest.fixture(scope="module")
def claim():
    return load_claims().get(CLAIM)


def test_sentence_states_each_reading(claim):
    c = cc.conclude(claim, _readings())
    assert c.sentences[0] == (  # the reason quoted whole, never cut at a clause
        "954,000 tok/s is physically impossible: as computed tokens per GPU it needs 3.94x "
        "the decode ceiling (a long aside that the sentence quotes); it fits only if at "
        "least 74.7 % were cache hits."
    )
    assert c.sentences[1].startswith("No like-for-like measurement is published")
    assert c.sentences[2] == "Not tested on a GB300 NVL72 here."
    assert c.grade == "physics bounds only"


@pytest.mark.parametrize(
    ("flip", "words"),
    [
        ({"physics": "possible"}, "is physically possible"),
        ({"physics": "undetermined"}, "Physics does not settle 954,000 tok/s"),
        ({"published": "within"}, "is within the published like-for-like measurements"),
        ({"published": "above"}, "above every published like-for-like measurement"),
        ({"run": "consistent"}, "measured on a GB300 NVL72 here, it holds (+2.0%)"),
        ({"run": "inconsistent"}, "it does not hold"),
    ],
)
def test_sentence_follows_a_flipped_reading(claim, flip, words):
    before = cc.conclude(claim, _readings()).text
    after = cc.conclude(claim, _readings(**flip)).text
    assert after != before
    assert words.lower() in after.lower()
    assert words.lower() not in before.lower()


def test_certainty_is_the_strongest_evidence(claim):
    assert cc.conclude(claim, _readings()).grade == "physics bounds only"
    assert cc.conclude(claim, _readings(published="below")).grade == "like-for-like published"
    assert cc.conclude(claim, _readings(published="below", run="inconsistent")).grade == (
        "measured on the claim's hardware"
    )


def test_one_sentence_per_basis_and_unknown_fields_ignored(claim):
    rs = _readings(basis="the rack's total over 72 GPUs", colour="blue")
    rs.append({**rs[0], "verdict": "impossible", "basis": "decode tokens per GPU"})
    rs[-1]["reason"] = "3.94x the decode compute ceiling"
    rs[1] = {**rs[1], "verdict": "within", "margin": "1.2x", "closest": "SGLang on GB300 (x)"}
    c = cc.conclude(claim, rs)
    assert c.sentences[0].startswith("As the rack's total over 72 GPUs, 954,000 tok/s is")
    assert c.sentences[1] == (
        "As decode tokens per GPU, it is physically impossible: 3.94x the decode compute ceiling."
    )
    assert c.sentences[2] == "It is within the published like-for-like measurements: 1.2x."
    rs[1] = {**rs[1], "margin": "-"}  # without a margin, the closest point says where it sits
    c = cc.conclude(claim, rs)
    assert "closest like-for-like point: SGLang on GB300" in c.sentences[2]


def test_readings_given_per_basis_name_each_basis(claim):
    """A published reading with ``by_basis`` (one entry per plausible basis): one sentence per
    verdict naming its bases; bases without a published point in one sentence naming the
    closest point; the certainty follows the bases that place the figure."""
    rs = _readings()
    closest = {"source": ["InferenceX", "GB300 x 4", "-"], "value": 104429.5, "unit": "tok/s/GPU",
               "ratio": 9.135}  # fmt: skip
    entries = [
        {"name": "per GPU, output tokens", "verdict": "none published", "margin": "-"},
        {"name": "a rack total over 72 GPUs", "verdict": "none published", "margin": "-"},
    ]
    rs[1] = {**rs[1], "basis": "a; b | c", "closest": closest, "by_basis": entries}
    c = cc.conclude(claim, rs)
    assert c.sentences[1] == (
        "No like-for-like measurement is published on any of its 2 plausible bases (closest, "
        "which does not decide: InferenceX · GB300 x 4: 104,430 tok/s/GPU, the claim 9.13x it)."
    )
    assert c.grade == "physics bounds only"
    entries[1] = {**entries[1], "verdict": "within", "margin": "0.93x the highest"}
    c = cc.conclude(claim, rs)
    assert c.sentences[1] == (
        "No like-for-like measurement is published as \u201cper GPU, output tokens\u201d."
    )
    assert c.sentences[2] == (
        "As \u201ca rack total over 72 GPUs\u201d, it is within the published like-for-like "
        "measurements: 0.93x the highest."
    )
    assert c.grade == "near evidence or exact derivation"  # placed on 1 of 2: one level lower
    assert c.certainty.reasons[-1] == (
        "lowered by: an unknown basis (placed on 1 of its 2 plausible bases)"
    )


def test_readings_of_other_claims_are_ignored(claim):
    other = [{**r, "claim_id": "rack-scaling.speedup", "verdict": "possible"} for r in _readings()]
    c = cc.conclude(claim, _readings() + other[:1])
    assert len(c.sentences) == 3 and "impossible" in c.text


def test_every_claim_of_a_result_concludes():
    reg = load_claims()
    doc = {"result": "eplb-balance", "readings": []}
    for claim in reg.for_result("eplb-balance"):
        for r in ("physics", "published", "this run"):
            verdict = {"physics": "possible", "published": "below", "this run": "untested"}[r]
            doc["readings"].append(
                {
                    "claim_id": claim.id,
                    "reading": r,
                    "verdict": verdict,
                    "margin": "-",
                    "reason": "the synthetic routing model gives it",
                    "synthetic": r == "this run",
                }
            )
    out = cc.conclusions(doc, reg)
    assert [c.claim_id for c in out] == [c.id for c in reg.for_result("eplb-balance")]
    for c in out:
        assert c.sentences[-1] == "Not measured here: this chapter's input is synthetic."
        assert c.grade == "like-for-like published"


def test_a_claim_without_readings_says_so():
    c = cc.conclusions({"result": "single-user", "readings": []})[0]
    assert c.text == "826 tok/s has not been read yet: run the chapter."


def _split(claim_id=CLAIM):
    """The throughput's readings as the rack chapter makes them: per GPU ruled out, the rack's
    total possible, a per-GPU count with cache hits fitting above a cached share."""
    return [
        {
            "claim_id": claim_id,
            "reading": "physics",
            "verdict": "undetermined",
            "margin": "per GPU as stated: fits only if >= 64 % of the input is cached",
            "condition": {
                "basis": "per GPU as stated",
                "condition": "fits only if >= 64 % of the input is cached",
            },
            "reason": "as computed tokens per GPU it needs 3.94x the decode ceiling and 1.97x the "
            "prefill ceiling; counting cache hits, it fits only once at least 64 % of the input "
            "tokens are prefix-cache hits at ISL 100,000 / OSL 1,000 (a workload assumed here); "
            "as the rack's total (13,250 per GPU) it is possible",
            "on_bases": [
                {
                    "name": "computed tokens per GPU",
                    "verdict": "impossible",
                    "ratio": 3.94,
                    "ceiling": "decode ceiling",
                },
                {"name": "the rack's total", "verdict": "possible", "tok_s_per_gpu": 13250.0},
            ],
            "workload": {"isl": 100000.0, "osl": 1000.0},
        },
        {
            "claim_id": claim_id,
            "reading": "published",
            "verdict": "none published",
            "margin": "-",
            "reason": "none",
            "by_basis": [
                {
                    "name": "per GPU, output tokens",
                    "verdict": "none published",
                    "ruled_out": "954,000 computed decode tok/s per GPU is 3.94x the compute "
                    "ceiling of 241,834 on GB300",
                    "ruled_by": {"ratio": 3.94, "limit": "compute", "gpu": "GB300"},
                },
                {"name": "a rack total over 72 GPUs", "verdict": "none published"},
            ],  # fmt: skip
        },
    ]


def test_summary_states_the_decisive_split_first_with_its_workload(claim):
    s = cc.summarize(claim, _split())
    assert s.word == "depends on what is counted"
    assert s.finding.startswith(
        "Impossible as computed tokens per GPU (3.94x a GB300's decode ceiling) but possible "
        "as the rack's total (13,250 per GPU)"
    )
    assert ">= 64 % of the input is cached (100k-in/1k-out workload assumed)" in s.finding
    assert cc.words(s.finding) <= cc.FINDING_WORDS and s.grade == "very low"


def _nonsense(readings):
    """``readings`` with every sentence rackbook wrote (reasons, margins, ruled-out texts,
    at any depth) replaced by nonsense: only the data fields are left to read."""
    if isinstance(readings, list):
        return [_nonsense(r) for r in readings]
    if not isinstance(readings, dict):
        return readings
    words = ("reason", "margin", "ruled_out")
    return {k: "zzz; qq (x: y)" if k in words else _nonsense(v) for k, v in readings.items()}


def test_the_split_finding_reads_the_data_not_the_sentences(claim):
    """Rewording a reading's sentences cannot change its verdict word, grade or the numbers
    of its finding: they are read from the reading's fields (``on_bases``, ``workload``,
    ``ruled_by``), never parsed back out of its prose."""
    plain, garbled = cc.summarize(claim, _split()), cc.summarize(claim, _nonsense(_split()))
    assert (garbled.word, garbled.grade) == (plain.word, plain.grade)
    assert garbled.finding.startswith(
        "Impossible as computed tokens per GPU (3.94x a GB300's decode ceiling) but possible "
        "as the rack's total (13,250 per GPU)"
    )
    impossible = _nonsense(_split())
    impossible[0]["verdict"] = "impossible"  # the finding names the bases ruled out first
    finding = cc.summarize(claim, impossible).finding
    ruled = "Impossible as \u201cper GPU, output tokens\u201d (3.94x a GB300's compute ceiling);"
    assert finding.startswith(ruled)
    assert "; possible as the rack's total (13,250 per GPU)." in finding


def test_no_shipped_verdict_or_grade_depends_on_the_wording(shipped_chapter):
    """Every shipped claim keeps its verdict word, grade and certainty level when every
    sentence of its readings is replaced by nonsense."""
    from rackbook import paths

    reg = load_claims()
    for result in paths.RESULTS:
        doc = shipped_chapter(result)[1].to_dict("trace")
        for c in reg.for_result(result):
            plain = cc.summarize(c, doc["readings"])
            garbled = cc.summarize(c, _nonsense(doc["readings"]))
            assert (garbled.word, garbled.grade) == (plain.word, plain.grade), c.id
            level = cc.certainty(_nonsense(doc["readings"]), c).level
            assert level == cc.certainty(doc["readings"], c).level, c.id


HEAD = "the node's throughput per GPU (the speed-up read as a per-GPU ratio)"
NODE = f"{HEAD}, input + output counting each turn's re-read cached prefix"


def _supported_split(lo=0.847, hi=1.16):
    """The split readings with near points on the per-GPU-ratio basis (as the rack chapter
    makes them): the figure re-read as 954,000 / 7.9, the claim ``lo``-``hi`` x them."""
    rs = _split()
    pub = rs[1]
    pub["by_basis"].append(
        {"name": NODE, "verdict": "none published", "conversion": "the node's throughput per "
         "GPU is the figure over the speed-up: 954,000 / 7.9 = 120,759 tok/s/GPU",
         "step": "954,000 / 7.9 = 120,759 tok/s/GPU"}
    )  # fmt: skip
    pub["near"] = {"basis": NODE, "head": HEAD, "points": ["a", "b"], "low": 104429.47,
                   "high": 142565.09, "unit": "tok/s/GPU", "ratio_low": lo,
                   "ratio_high": hi}  # fmt: skip
    return rs


def test_summary_names_the_basis_the_near_evidence_supports(claim):
    """Issue 36: where the claim's figure re-read on one named basis lies inside that basis's
    near points, the landing's finding says so second, with the re-read value (7.9x as a
    per-GPU ratio: 120,759 tok/s/GPU) and the ratios; not where the near points sit on one
    side of it, nor on a basis that re-reads nothing."""
    s = cc.summarize(claim, _supported_split())
    assert s.word == "depends on what is counted"
    assert s.finding == (
        "Impossible as computed tokens per GPU (3.94x a GB300's decode ceiling); the evidence "
        "supports the node's throughput per GPU (the speed-up read as a per-GPU ratio), "
        "954,000 / 7.9 = 120,759 tok/s/GPU: 0.847x to 1.16x the 2 near points."
    )
    assert cc.words(s.finding) <= cc.FINDING_WORDS
    # the basis is named by its ``head`` field, never cut out of its name's sentence
    renamed = _supported_split()
    renamed[1]["near"]["head"] = "zzz, qq"
    assert "; the evidence supports zzz, qq, 954,000 / 7.9" in cc.summarize(claim, renamed).finding
    one_side = cc.summarize(claim, _supported_split(1.1, 1.3)).finding
    assert "supports" not in one_side and "possible as the rack's total" in one_side
    rs = _supported_split()
    rs[1]["by_basis"][-1]["conversion"] = ""
    assert "supports" not in cc.summarize(claim, rs).finding


def test_a_price_finding_names_the_token_value_and_the_highest_list_price():
    """$38.96 read as a token value at the API prices ($36.83-41.86, the claim 0.931x-1.06x)
    and the highest list price ($18.00, the claim 2.16x it) in the landing's finding, within
    its 40 words."""
    cost = load_claims().get("rack-scaling.cost")
    tv = "a token value at the model vendor's API prices"
    rs = [
        {"claim_id": cost.id, "reading": "physics", "verdict": "undetermined", "margin": "-",
         "reason": "a price: physics does not bound it"},
        {"claim_id": cost.id, "reading": "published", "verdict": "above",
         "margin": "-", "reason": "-",
         "list_price": {"value": 18.0, "who": "Oracle Cloud, GB300", "verified": False,
                        "ratio": 2.1644},
         "by_basis": [
             {"name": "a rental price", "verdict": "above", "modelled": True,
              "margin": "9.84x the highest published ($3.96/GPU-hour) (modelled prices, not "
              "measurements)"},
             {"name": tv, "verdict": "none published", "conversion": "the figure read as what "
              "the tokens of the rack claim's throughput, per GPU, are worth in an hour"},
         ],
         "near": {"basis": tv, "points": ["h95", "h96"], "low": 36.825, "high": 41.858,
                  "unit": "$/GPU-hour", "ratio_low": 0.931, "ratio_high": 1.058}},
    ]  # fmt: skip
    s = cc.summarize(cost, rs)
    assert s.word == "above published"
    assert (
        "the evidence supports a token value at the model vendor's API prices: 0.931x to "
        "1.06x the 2 near points ($36.83 to $41.86/GPU-hour); 2.16x the highest list price "
        "($18.00/GPU-hour)." in s.finding
    )
    assert s.finding.startswith("As \u201ca rental price\u201d, above every modelled price;")
    assert cc.words(s.finding) <= cc.FINDING_WORDS


@pytest.mark.parametrize(
    ("physics", "published", "run", "word", "grade"),
    [
        ("impossible", "none published", "untested", "impossible as stated", "high"),
        ("possible", "none published", "untested", "plausible", "very low"),
        ("undetermined", "none published", "untested", "unsettled", "very low"),
        ("possible", "within", "untested", "consistent", "moderate"),
        ("possible", "above", "untested", "above published", "moderate"),
        ("possible", "none published", "consistent", "consistent", "high"),
        ("possible", "none published", "inconsistent", "inconsistent", "high"),
    ],
)
def test_summary_word_and_grade_follow_the_readings(claim, physics, published, run, word, grade):
    s = cc.summarize(claim, _readings(physics, published, run))
    assert (s.word, s.grade) == (word, grade)
    assert s.word in cc.VERDICT_WORDS and s.grade in cc.PLAIN_GRADES


def test_within_words_keeps_whole_sentences():
    text = ["one two three.", "four five six seven.", "eight nine ten eleven twelve."]
    assert cc.within_words(text, 8) == "one two three. four five six seven."
    assert cc.within_words(text, 6) == "one two three."
    assert cc.within_words(["a b c d e f."], 3) == "a b c\u2026"


def test_only_analogues_are_named_from_the_closest_points_kind(claim):
    """A published reading with no like-for-like point says "only analogues" where its
    closest point is an analogue (its ``kind``), whatever its reason says."""
    rs = _readings()
    rs[1] = {**rs[1], "reason": "-", "closest": {"kind": "analogue", "who": "x", "value": 1.0}}
    assert "(only analogues, which do not decide)" in cc.conclude(claim, rs).sentences[1]
    rs[1] = {**rs[1], "reason": "analogues", "closest": {**rs[1]["closest"], "kind": "near"}}
    assert "analogues" not in cc.conclude(claim, rs).sentences[1]


def _physics(**fields):
    return {"claim_id": CLAIM, "reading": "physics", "verdict": "possible", **fields}


def _published(**fields):
    return {"claim_id": CLAIM, "reading": "published", "verdict": "none published", **fields}


def test_a_reading_without_reason_margin_or_closest_point_is_its_verdict_alone(claim):
    """No reason, margin or closest point: the clause ends at the verdict (nothing appended);
    a published reading of no points without an analogue says nothing about analogues."""
    assert cc.conclude(claim, [_physics()]).sentences == ("954,000 tok/s is physically possible.",)
    assert cc.conclude(claim, [_published()]).sentences == (
        "No like-for-like measurement is published.",
    )
    analogue = _published(closest={"kind": "analogue", "who": "x"})
    assert cc.conclude(claim, [analogue]).sentences == (
        "No like-for-like measurement is published (only analogues, which do not decide).",
    )
    assert cc.conclude(claim, [_published(verdict="within")]).sentences == (
        "954,000 tok/s is within the published like-for-like measurements.",
    )


@pytest.mark.parametrize(
    ("closest", "shown"),
    [
        (  # its value and the claim over it
            {"who": "SGLang", "value": 1000.0, "unit": "tok/s/GPU", "ratio": 954.0},
            "SGLang: 1,000 tok/s/GPU, the claim 954x it",
        ),
        ({"source": ["", "-", "InferenceX"], "ratio": 2.0}, "InferenceX, the claim 2x it"),
        ({"source": ["A", "B"], "who": "C"}, "A · B"),  # the source named, never ``who``
        ({"source": [], "who": ""}, "a published point"),
    ],
)
def test_the_closest_point_is_named_by_source_else_who_with_value_and_ratio(claim, closest, shown):
    r = _published(verdict="within", closest=closest)
    (sentence,) = cc.conclude(claim, [r]).sentences
    assert sentence == (
        f"954,000 tok/s is within the published like-for-like measurements; closest "
        f"like-for-like point: {shown}."
    )


def test_per_basis_sentences_name_each_basis_by_name_else_basis_else_a_mark(claim):
    """One basis ruled out (named first), a placed basis without a name ("?"), a basis named
    by its ``basis`` with a closest point and no margin (after the first sentence the figure is
    "it"), and a basis without a point."""
    entries = [
        {"name": "a", "verdict": "none published", "ruled_out": "3.94x the ceiling"},
        {"verdict": "within", "margin": "1.2x"},
        {"basis": "b as basis", "verdict": "above", "margin": "-",
         "closest": {"who": "P", "value": 5.0, "unit": "tok/s", "ratio": 2.0}},
        {"verdict": "none published", "margin": "-"},
    ]  # fmt: skip
    assert cc.conclude(claim, [_published(by_basis=entries)]).sentences == (
        "Physics rules out \u201ca\u201d; the published reading is of the other bases.",
        "As \u201c?\u201d, 954,000 tok/s is within the published like-for-like measurements: 1.2x.",
        "As \u201cb as basis\u201d, it is above every published like-for-like measurement; "
        "closest like-for-like point: P: 5 tok/s, the claim 2x it.",
        "No like-for-like measurement is published as \u201c?\u201d.",
    )
    entries[0] = {"verdict": "none published", "ruled_out": "x"}
    assert cc.conclude(claim, [_published(by_basis=entries)]).sentences[0] == (
        "Physics rules out \u201c?\u201d; the published reading is of the other bases."
    )


def test_bases_all_ruled_out_or_one_basis_alone_read_as_no_published_point(claim):
    """Every basis ruled out: no "rules out" sentence (nothing else is read); one basis
    without a point: no count of bases."""
    gone = [
        {"name": "a", "verdict": "none published", "ruled_out": "x"},
        {"name": "b", "verdict": "none published", "ruled_out": "y"},
    ]
    assert cc.conclude(claim, [_published(by_basis=gone)]).sentences == (
        "No like-for-like measurement is published on any of its 2 plausible bases.",
    )
    one = [{"name": "only", "verdict": "none published"}]
    assert cc.conclude(claim, [_published(by_basis=one)]).sentences == (
        "No like-for-like measurement is published.",
    )


def test_two_placed_bases_name_the_figure_once(claim):
    entries = [
        {"name": "a", "verdict": "within", "margin": "1.2x"},
        {"name": "b", "verdict": "below", "margin": "0.5x"},
    ]
    assert cc.conclude(claim, [_published(by_basis=entries)]).sentences == (
        "As \u201ca\u201d, 954,000 tok/s is within the published like-for-like measurements: 1.2x.",
        "As \u201cb\u201d, it is below every published like-for-like measurement: 0.5x.",
    )


def test_a_basis_is_named_up_to_sixty_characters_without_a_separator(claim):
    rs = [_physics(basis="x" * 60), _physics(basis="y" * 61), _physics(basis="a; b")]
    rs.append(_physics(basis="a | b"))
    assert cc.conclude(claim, rs).sentences == (
        f"As {'x' * 60}, 954,000 tok/s is physically possible.",
        *["It is physically possible."] * 3,
    )


def test_readings_without_a_claim_id_count_and_other_kinds_follow_in_name_order(claim):
    rs = [
        {"reading": "physics", "verdict": "possible"},
        {"claim_id": CLAIM, "reading": "zeta", "verdict": "odd"},
        {"claim_id": CLAIM, "reading": "alpha", "verdict": "odd"},
    ]
    assert cc.conclude(claim, rs).sentences == (
        "954,000 tok/s is physically possible.",
        "The alpha reading is odd.",
        "The zeta reading is odd.",
    )


def test_conclusions_take_the_result_from_the_first_readings_claim():
    """A headline JSON without ``result``: the result is the first reading's claim's prefix
    (its three claims in registry order); without readings either, a refusal naming the
    claims file and the field."""
    from rackbook.errors import InputError

    got = cc.conclusions({"readings": ["not a reading", _physics()]})
    assert [c.claim_id for c in got] == [CLAIM, "rack-scaling.speedup", "rack-scaling.cost"]
    assert got[0].sentences == ("954,000 tok/s is physically possible.",)
    second = {**_physics(), "claim_id": "single-user.throughput"}
    assert [c.claim_id for c in cc.conclusions({"readings": [second, _physics()]})] == [
        "single-user.throughput"
    ]
    with pytest.raises(InputError, match="claims.yaml: result: unknown result 'None'"):
        cc.conclusions({})
    assert [c.claim_id for c in cc.conclusions({"result": "single-user"})] == [
        "single-user.throughput"
    ]


SU = "single-user.throughput"  # 826 tok/s on B300 GPUs (4)


def _su(physics=None, published=None, run=None):
    base = {"claim_id": SU, "margin": "-", "reason": "why"}
    return [
        {**base, "reading": "physics", "verdict": "possible", **(physics or {})},
        {**base, "reading": "published", "verdict": "none published", **(published or {})},
        {**base, "reading": "this run", "verdict": "untested", **(run or {})},
    ]


_ATT = {"tok_s_per_gpu": 1000.0, "ratio": 0.5, "deployment_name": "tensor-parallel on 4 GPUs"}
_NOTHING = "Nothing comparable is published."


@pytest.mark.parametrize(
    ("readings", "word", "finding", "grade", "why"),
    [
        (_su(), "plausible", f"Physically possible: why. {_NOTHING}", "very low",
         "no comparable published point"),
        (  # a reason of 20 words is quoted, of 21 not
            _su(physics={"reason": " ".join(["w"] * 20)}), "plausible",
            f"Physically possible: {' '.join(['w'] * 20)}. {_NOTHING}", "very low",
            "no comparable published point",
        ),
        (_su(physics={"reason": " ".join(["w"] * 21)}), "plausible",
         f"Physically possible. {_NOTHING}", "very low", "no comparable published point"),
        (  # what measured kernels reach: the ratio, else the rate; never the deployment here
            _su(physics={"attainable": _ATT}), "plausible",
            f"Physically possible: why; 0.5x what measured kernels reach. {_NOTHING}",
            "very low", "no comparable published point",
        ),
        (_su(physics={"attainable": {**_ATT, "ratio": None}}), "plausible",
         f"Physically possible: why; measured kernels reach 1,000 tok/s per GPU. {_NOTHING}",
         "very low", "no comparable published point"),
        (_su(physics={"attainable": {**_ATT, "brief": "its brief"}}), "plausible",
         f"Physically possible: why; its brief. {_NOTHING}", "very low",
         "no comparable published point"),
        (  # what real deployments reach comes before what kernels reach
            _su(physics={"attainable": {**_ATT, "expected": {
                "tok_s_per_gpu": 1000.0, "low": 490.0, "high": 1830.0, "ratio": 2.0}}}),
            "plausible",
            "Physically possible: why; claim above what real deployments reach (~1,000, "
            f"490-1,830 tok/s/GPU: 2x). {_NOTHING}", "very low", "no comparable published point",
        ),
        (_su(physics={"derived": {"value": 826.5, "from": None}}), "plausible",
         f"The specifications give 826.5, not the claim's figure. {_NOTHING}", "very low",
         "no comparable published point"),
        (_su(physics={"derived": {"value": 12.34567, "unit": "GB", "from": "the card"}}),
         "plausible", f"The card give 12.35 GB, not the claim's figure. {_NOTHING}", "very low",
         "no comparable published point"),
        (_su(physics={"derived": {"value": 826, "exact": True}}), "exact",
         f"Exactly what the specifications give (826). {_NOTHING}", "low",
         "no comparable published point"),
        (_su(physics={"verdict": "impossible", "margin": "2x the ceiling"}),
         "impossible as stated", f"Physically impossible: 2x the ceiling. {_NOTHING}", "high",
         "a physics bound decides"),
        (_su(physics={"verdict": "undetermined"}), "unsettled",
         f"Physics does not settle it: why. {_NOTHING}", "very low",
         "no comparable published point"),
        (  # the condition and its workload (8,192 not a whole thousand; 1,000 is)
            _su(physics={"verdict": "undetermined", "workload": {"isl": 8192, "osl": 1000},
                         "condition": {"basis": "per GPU", "condition": "fits if cached"}}),
            "unsettled",
            f"Per GPU, it fits if cached (8,192-in/1k-out workload assumed). {_NOTHING}",
            "very low", "no comparable published point",
        ),
        (_su(physics={"verdict": "undetermined",
                      "condition": {"basis": "per GPU", "condition": "fits if cached"}}),
         "unsettled", f"Per GPU, it fits if cached. {_NOTHING}", "very low",
         "no comparable published point"),
        (_su(published={"verdict": "below", "margin": "0.5x the lowest"}), "below published",
         "Physically possible: why. Below every published like-for-like measurement (0.5x the "
         "lowest).", "moderate", "like-for-like published figures"),
        (_su(published={"verdict": "within", "basis": "per GPU", "margin": "1.1x"}),
         "consistent", "Physically possible: why. As per GPU, within the published like-for-like "
         "measurements (1.1x). Not tested on B300 GPUs here.", "moderate",
         "like-for-like published figures"),
        (  # the modelled-price note is cut from the margin
            _su(published={"verdict": "above", "modelled": True,
                           "margin": "2x (modelled prices, not measurements)"}),
            "above published", "Physically possible: why. Above every modelled price (2x).",
            "low", "modelled price (a cost model's rates, not a listed price)",
        ),
        (  # physics that does not settle it is left out beside a placing
            _su(physics={"verdict": "undetermined"},
                published={"verdict": "within", "margin": "1x"}),
            "consistent", "Within the published like-for-like measurements (1x). Not tested on "
            "B300 GPUs here.", "moderate", "like-for-like published figures",
        ),
        (
            _su(published={"near": {"points": ["a", "b"], "verified": False,
                                    "ratio_low": 1.2, "ratio_high": 1.5}}),
            "plausible", "Physically possible: why. The claim is 1.2x to 1.5x the 2 near "
            "published points, NOT VERIFIED.", "very low",
            "near points read only second-hand (NOT VERIFIED)",
        ),
        (
            _su(published={"closest": {"kind": "near", "ratio": 1.5, "value": 5.0,
                                       "unit": "tok/s", "verified": False}}),
            "plausible", "Physically possible: why. The closest near published point is a "
            "published point: 5 tok/s, the claim 1.5x it (NOT VERIFIED).", "very low",
            "physics bounds only",
        ),
        (  # one near point, on one side: the closest point is named, not a span
            _su(published={
                "closest": {"kind": "near", "ratio": 1.5, "value": 5.0, "unit": "tok/s"},
                "near": {"points": ["a"], "verified": True, "ratio_low": 1.5,
                         "ratio_high": 1.5}}),
            "plausible", "Physically possible: why. The closest near published point is a "
            "published point: 5 tok/s, the claim 1.5x it.", "low", "1 near published points",
        ),
        (
            _su(run={"verdict": "inconsistent", "margin": "-20 %"},
                published={"verdict": "within", "margin": "1x"}),
            "inconsistent", "Physically possible: why. Within the published like-for-like "
            "measurements (1x). Measured on B300 GPUs here, it does not hold (-20 %).", "high",
            "a run on the claim's hardware (-20 %)",
        ),
    ],
)  # fmt: skip
def test_the_landing_row_of_each_kind_of_reading(readings, word, finding, grade, why):
    """The landing's row (verdict word, finding within 40 words, plain grade, why) for one
    reading of each kind against the single-user claim (826 tok/s on 4 B300)."""
    s = cc.summarize(load_claims().get(SU), readings)
    assert (s.claim_id, s.word, s.finding, s.grade, s.why) == (SU, word, finding, grade, why)


def test_a_claim_without_readings_is_not_graded():
    s = cc.summarize(load_claims().get(SU), _su()[:0] + [{**_su()[0], "claim_id": "x.y"}])
    assert (s.word, s.finding, s.grade, s.why) == (
        "not run",
        "Not read yet: run the chapter.",
        "not graded",
        "",
    )


def test_the_why_names_what_lowered_the_grade_before_what_held_it_back():
    entries = [{"name": "a", "verdict": "above", "margin": "2x"},
               {"name": "b", "verdict": "above", "margin": "3x"},
               {"name": "c", "verdict": "none published"}]  # fmt: skip
    rs = _su(published={"verdict": "above", "by_basis": entries}, run={"synthetic": True})
    s = cc.summarize(load_claims().get(SU), rs)
    assert (s.word, s.grade) == ("above published", "low")
    assert s.why == "an unknown basis (placed on 2 of its 3 plausible bases)"
    assert s.finding == (
        "Physically possible: why. As \u201ca\u201d or \u201cb\u201d, above every published "
        "like-for-like measurement (2x)."
    )
    held = cc.summarize(load_claims().get(SU), _su(run={"synthetic": True}))
    assert held.why == "no comparable published point"  # held back before "rests on"


def test_the_conclusion_names_a_deployment_other_than_the_default():
    claim = load_claims().get(SU)
    first = cc.conclude(claim, _su(physics={"attainable": _ATT})).sentences[0]
    assert first == (
        "826 tok/s is physically possible: why; 0.5x what measured kernels reach "
        "(tensor-parallel on 4 GPUs)."
    )
    default = {**_ATT, "deployment_name": "attention data-parallel + experts on 4 GPUs"}
    first = cc.conclude(claim, _su(physics={"attainable": default})).sentences[0]
    assert first == "826 tok/s is physically possible: why; 0.5x what measured kernels reach."


def test_certainty_as_a_dict_and_per_result_in_registry_order():
    c = cc.certainty(_su(published={"verdict": "above", "modelled": True}), claim_id=SU)
    assert c.to_dict() == {
        "claim_id": SU, "grade": "near evidence or exact derivation", "level": 2,
        "reasons": ["rests on: like-for-like published figures",
                    "lowered by: modelled price (a cost model's rates, not a listed price)"],
    }  # fmt: skip
    rs = [
        {"claim_id": "rack-scaling.cost", "reading": "physics", "verdict": "possible"},
        {"claim_id": CLAIM, "reading": "physics", "verdict": "impossible"},
        {"claim_id": CLAIM, "reading": "this run", "verdict": "consistent", "margin": "+1 %"},
    ]
    got = cc.certainties("rack-scaling", rs)  # the speed-up has no reading: left out
    assert [(c.claim_id, c.level) for c in got] == [(CLAIM, 4), ("rack-scaling.cost", 1)]
    assert got[0].reasons == ("rests on: a run on the claim's hardware (+1 %)",)


@pytest.mark.parametrize(
    ("ratio", "where"),
    [(0.4999, "below"), (0.5, "within"), (2.0, "within"), (2.0001, "above")],
)
def test_placement_holds_the_interval_edges_inside(ratio, where):
    """Expected 1,024 tok/s/GPU in [512, 2,048]: a claim at 512 or 2,048 is within, a hair
    past either end outside; the brief without a validation ends at the ratio."""
    d = {"tok_s_per_gpu": 1024.0, "low": 512.0, "high": 2048.0, "ratio": ratio}
    assert cc.placement(d) == where
    assert cc.brief(d) == (
        f"claim {where} what real deployments reach (~1,024, 512-2,048 tok/s/GPU: "
        f"{cc.ratio_text(ratio)})"
    )


def test_placement_needs_a_positive_expected_rate_and_four_numbers():
    d = {"tok_s_per_gpu": 1000.0, "low": 490.0, "high": 1830.0, "ratio": 1.0}
    assert cc.placement(d) == "within"
    for bad in ({"tok_s_per_gpu": 0.0}, {"tok_s_per_gpu": -1.0}, {"low": None}, {"high": "x"},
                {"ratio": None}):  # fmt: skip
        assert cc.placement(d | bad) == "" and cc.brief(d | bad) == ""


_RULED = [
    {"name": "per GPU", "verdict": "none published", "ruled_out": "x",
     "ruled_by": {"ratio": 3.94, "limit": "compute", "gpu": "GB300"}},
    {"name": "per node", "verdict": "none published", "ruled_out": "x",
     "ruled_by": {"ratio": 2.0, "limit": "compute", "gpu": "GB300"}},
    {"verdict": "none published", "ruled_out": "x",
     "ruled_by": {"ratio": None, "limit": "memory"}},
    {"name": "total", "verdict": "none published"},
]  # fmt: skip
_ON_BASES = [
    {"name": "the total", "verdict": "possible", "tok_s_per_gpu": 13250.0},
    {"name": "unrated", "verdict": "possible", "tok_s_per_gpu": None},  # no rate: not named
    {"name": "x", "verdict": "impossible", "tok_s_per_gpu": 5.0},
]
_IMPOSSIBLE = (
    "Impossible as \u201cper GPU\u201d (3.94x a GB300's compute ceiling) or as \u201cper "
    "node\u201d (2x) or as \u201c?\u201d"
)


def test_the_bases_physics_rules_out_lead_the_finding_each_place_named_once():
    """Three bases ruled out (the second on the same GPU's ceiling, the third without a
    ratio), one possible (with its rate): "but possible as" beside an undetermined reading;
    "; possible as" after an impossible one; a ceiling the physics reading names itself
    (``on_bases`` with a ``ceiling``) in place of the published bases."""
    su = load_claims().get(SU)
    phys = {"verdict": "undetermined", "margin": "fits if 64 % cached", "on_bases": _ON_BASES}
    s = cc.summarize(su, _su(physics=phys, published={"by_basis": _RULED}))
    assert (s.word, s.grade) == ("depends on what is counted", "very low")
    assert s.finding == f"{_IMPOSSIBLE} but possible as the total (13,250 per GPU)."
    s = cc.summarize(
        su, _su(physics={**phys, "verdict": "impossible"}, published={"by_basis": _RULED})
    )
    assert (s.word, s.grade, s.why) == ("impossible as stated", "high", "a physics bound decides")
    assert s.finding == f"{_IMPOSSIBLE}; possible as the total (13,250 per GPU). {_NOTHING}"
    own = [{"name": "per GPU", "ratio": 3.94, "ceiling": "decode ceiling"}]
    s = cc.summarize(su, _su(physics={**phys, "on_bases": own}, published={"by_basis": _RULED}))
    assert s.finding == "Impossible as per GPU (3.94x a B300's decode ceiling)."
    # a run on the claim's hardware decides the word; the undetermined margin follows the bases
    run = {"verdict": "consistent", "margin": "+1 %"}
    s = cc.summarize(su, _su(physics=phys, published={"by_basis": _RULED}, run=run))
    assert s.word == "consistent" and s.finding.startswith(
        f"{_IMPOSSIBLE}; fits if 64 % cached; possible as the total (13,250 per GPU)."
    )


def test_impossible_names_each_place_once_in_a_row():
    bases = [("a", 2.0, "GB300", "c"), ("b", 3.0, "GB300", "c"), ("d", None, "", "m"),
             ("e", 1.5, "", "m"), ("f", 1.25, "", "m")]  # fmt: skip
    assert cc._impossible(bases) == (
        "impossible as a (2x a GB300's c) or as b (3x) or as d or as e (1.5x the m) or as f (1.25x)"
    )
    assert cc._impossible([]) == ""


def _token_value(lo=0.9, hi=1.0, **near):
    tv = "token value"
    return {
        "verdict": "none published",
        "by_basis": [{"name": tv, "verdict": "none published", "conversion": "c"}],
        "near": {"basis": tv, "points": ["a", "b", "c"], "low": 1000.0, "high": 2000.4,
                 "unit": "tok/s", "ratio_low": lo, "ratio_high": hi, **near},
        "list_price": {"ratio": 2.5, "value": 1234.5},
    }  # fmt: skip


def test_the_supported_basis_needs_near_points_on_both_sides_of_the_claim():
    """A claim 0.9x to 1x its 3 near points on a re-read basis (1 is inside, its edge
    included) is supported; 0.9x to 0.99x, no points, or no ratio is not. Without a step the
    span follows in the basis's unit; the highest list price follows as a ratio in dollars."""
    both = "the evidence supports token value: 0.9x to 1x the 3 near points (1,000 to 2,000 tok/s)"
    lp = "; 2.5x the highest list price ($1,234.50/GPU-hour)"
    assert cc.supported_basis(_token_value()) == both + lp
    assert cc.supported_basis(_token_value(1.0, 1.0)) == both.replace("0.9x to 1x", "1x") + lp
    assert cc.supported_basis(_token_value(1.0001, 1.5)) == ""
    assert cc.supported_basis(_token_value(0.9, 0.99)) == ""
    assert cc.supported_basis(_token_value(points=[])) == ""
    assert cc.supported_basis(_token_value(None)) == ""
    assert cc.supported_basis(_token_value() | {"list_price": {}}) == both
    assert cc.supported_basis(_token_value(basis="other")) == ""  # no entry re-reads it
    s = cc.summarize(load_claims().get(SU), _su(published=_token_value()))
    assert s.finding == f"Physically possible: why; {both}{lp}."


@pytest.mark.parametrize(
    ("per_basis", "change", "reason"),
    [
        (  # above on one basis (unnamed), below on another
            [{"ratio_low": 2.0, "ratio_high": 3.0}, {"basis": "b", "ratio_low": 0.1,
                                                    "ratio_high": 0.5}, "not a basis"],
            -1, ("lowered by", "an unknown basis (the claim above every near point as its "
                 "basis, below every one as b)"),
        ),
        (  # a point at the claim (1x) is on both sides of it
            [{"ratio_low": 0.5, "ratio_high": 1.0}], 0,
            ("corroborated by", "near points on both sides of the claim as its basis (the "
             "claim 0.5x to 1x them)"),
        ),
        ([{"ratio_low": 1.0, "ratio_high": 3.0, "basis": "z"}], 0,
         ("corroborated by", "near points on both sides of the claim as z (the claim 1x to 3x "
          "them)")),
        ([{"ratio_low": 1.01, "ratio_high": 3.0}], 0, None),  # one side only: no move
        ([{"ratio_low": 0.1, "ratio_high": 0.99}], 0, None),
    ],
)  # fmt: skip
def test_near_points_per_basis_move_the_grade(per_basis, change, reason):
    assert cc._near_bases({"per_basis": per_basis}) == (change, reason)


@pytest.mark.parametrize(
    ("hardware", "gpus", "named"),
    [
        ("GB300 NVL72", 72, "a GB300 NVL72"),
        ("GB300 NVL72", None, "a GB300 NVL72"),  # no count: the system
        ("A100", 72, "an A100"),
        ("e-rack", None, "an e-rack"),
        ("B300", 4, "B300 GPUs"),
        ("B300", 73, "B300 GPUs"),
        (None, 4, "the claim's hardware"),
        ("", 72, "the claim's hardware"),
    ],
)
def test_the_claims_hardware_is_named_with_its_article_or_as_gpus(claim, hardware, gpus, named):
    scope = claim.scope.model_copy(update={"hardware": hardware, "gpu_count": gpus})
    other = claim.model_copy(update={"scope": scope})
    run = {"claim_id": CLAIM, "reading": "this run", "verdict": "untested", "margin": " - "}
    assert cc.conclude(other, [run]).sentences == (f"Not tested on {named} here.",)


def _near(lo, hi, **fields):
    return {"points": ["a", "b"], "verified": True, "ratio_low": lo, "ratio_high": hi,
            "basis": "mean TPOT", **fields}  # fmt: skip


_POINT = {"kind": "near", "ratio": 1.5, "value": 5.0, "unit": "tok/s"}


@pytest.mark.parametrize(
    ("published", "tail"),
    [
        ({"near": _near(1.0, 2.0)}, "The claim is 1x to 2x the 2 near published points, on "
         "both sides of it as mean TPOT."),  # a point at the claim is on both sides of it
        ({"near": _near(0.5, 1.0)}, "The claim is 0.5x to 1x the 2 near published points, on "
         "both sides of it as mean TPOT."),
        ({"near": _near(1.2, 1.5)}, "The claim is 1.2x to 1.5x the 2 near published points."),
        ({"near": _near(None, 1.5), "closest": _POINT}, "The closest near published point is "
         "a published point: 5 tok/s, the claim 1.5x it."),  # no span without both ratios
        ({"near": {**_near(0.5, 2.0), "points": []}}, _NOTHING),
        ({"closest": {**_POINT, "kind": "analogue"}}, _NOTHING),  # analogues never decide
    ],
)  # fmt: skip
def test_the_near_points_finding_spans_them_or_names_the_closest(published, tail):
    s = cc.summarize(load_claims().get(SU), _su(published=published))
    assert s.finding == f"Physically possible: why. {tail}"


def test_a_physics_reading_without_reason_or_margin_is_its_verdict():
    su = load_claims().get(SU)
    assert cc.summarize(su, _su(physics={"reason": None})).finding == (
        f"Physically possible. {_NOTHING}"
    )
    assert cc.conclude(su, _su(physics={"basis": "X-Y"})).sentences[0] == (
        "As X-Y, 826 tok/s is physically possible: why."  # only ";" and "|" drop a basis
    )


_RUN = {"verdict": "consistent", "margin": "+1 %"}


@pytest.mark.parametrize(
    ("published", "run", "finding"),
    [
        (  # a ruled-out basis never places the figure, even with a placing verdict
            {"by_basis": [{"name": "a", "verdict": "within", "ruled_out": "x"},
                          {"name": "b", "verdict": "below", "margin": "0.5x"}]}, _RUN,
            "Impossible as \u201ca\u201d. Below every published like-for-like measurement "
            "(0.5x). Measured on B300 GPUs here, it holds (+1 %).",
        ),
        (  # only named bases are named
            {"verdict": "within", "by_basis": [{"verdict": "within", "margin": "1x"},
                                               {"name": "b", "verdict": "within"}]}, None,
            "Physically possible: why. As \u201cb\u201d, within the published like-for-like "
            "measurements (1x). Not tested on B300 GPUs here.",
        ),
        (  # one basis: nothing to tell apart, not named
            {"verdict": "within", "by_basis": [{"name": "a", "verdict": "within",
                                                "margin": "1x"}]}, None,
            "Physically possible: why. Within the published like-for-like measurements (1x). "
            "Not tested on B300 GPUs here.",
        ),
        (  # a ceiling without a GPU is "the" ceiling
            {"by_basis": [{"name": "a", "verdict": "none published", "ruled_out": "x",
                           "ruled_by": {"ratio": 2.0, "limit": "compute"}},
                          {"name": "b", "verdict": "none published"}]}, None,
            "Impossible as \u201ca\u201d (2x the compute ceiling).",
        ),
    ],
)  # fmt: skip
def test_the_published_placing_names_the_bases_that_place_it(published, run, finding):
    s = cc.summarize(load_claims().get(SU), _su(published=published, run=run))
    assert s.finding == finding


def test_a_summary_without_a_physics_or_published_reading_still_has_a_word():
    su = load_claims().get(SU)
    without_physics = cc.summarize(su, _su()[1:])
    assert (without_physics.word, without_physics.grade) == ("unsettled", "very low")
    only_physics = cc.summarize(su, _su()[:1])
    assert (only_physics.word, only_physics.finding) == ("plausible", "Physically possible: why.")


def test_a_claim_without_hardware_whose_bases_physics_rules_out_names_the_ceiling():
    """Issue 39: a claim that states no hardware (decode-parity's gap) with a basis ruled out
    read "the decode ceiling"; the landing's summary raised IndexError."""
    c = load_claims().get("decode-parity.gap")
    rs = [
        {"claim_id": c.id, "reading": "physics", "verdict": "undetermined",
         "on_bases": [{"name": "per GPU", "ratio": 3.94, "ceiling": "decode ceiling"},
                      {"name": "a", "verdict": "possible", "tok_s_per_gpu": 10.0},
                      {"name": "b", "verdict": "possible", "tok_s_per_gpu": 2000.0}]},
        {"claim_id": c.id, "reading": "published", "verdict": "none published",
         "by_basis": [{"name": "a", "verdict": "none published", "ruled_out": "x"},
                      {"name": "b", "verdict": "none published"}]},
    ]  # fmt: skip
    s = cc.summarize(c, rs)
    assert (s.word, s.grade) == ("depends on what is counted", "very low")
    assert s.finding == (
        "Impossible as per GPU (3.94x the decode ceiling) but possible as a (10 per GPU) but "
        "possible as b (2,000 per GPU)."
    )


def test_near_points_decide_an_unsettled_finding_in_place_of_nothing_published():
    near = {"points": ["a", "b"], "verified": True, "ratio_low": 1.2, "ratio_high": 1.5}
    rs = _su(physics={"verdict": "undetermined"}, published={"near": near})
    s = cc.summarize(load_claims().get(SU), rs)
    assert (s.word, s.finding) == (
        "unsettled",
        "Physics does not settle it: why. The claim is 1.2x to 1.5x the 2 near published points.",
    )


def _placed_and_supported(margin="2x", run=None, physics=None):
    """Placed above on basis "a" (``margin``); the 2 near points on a re-read basis bracket
    the claim (0.9x to 1x): the finding's head and the supported basis, within 40 words."""
    tv = "token value"
    published = {
        "verdict": "above",
        "by_basis": [{"name": "a", "verdict": "above", "margin": margin},
                     {"name": tv, "verdict": "none published", "conversion": "c"}],
        "near": {"basis": tv, "points": ["p", "q"], "low": 1000.0, "high": 2000.0,
                 "unit": "tok/s", "ratio_low": 0.9, "ratio_high": 1.0},
    }  # fmt: skip
    return cc.summarize(load_claims().get(SU), _su(physics, published, run)).finding


_SUPPORTS = (
    "the evidence supports token value: 0.9x to 1x the 2 near points (1,000 to 2,000 tok/s)."
)


def test_the_supported_basis_follows_the_longest_head_that_fits_in_forty_words():
    """The placing with its margin where the whole finding keeps within 40 words (17 words
    of margin: exactly 40), else the placing without it; a run on the claim's hardware is
    the head where there is one; a head that never fits is cut at 40 words."""
    head = "As \u201ca\u201d, above every published like-for-like measurement"
    assert _placed_and_supported() == f"{head} (2x); {_SUPPORTS}"
    at_forty = _placed_and_supported(" ".join(["w"] * 17))
    assert cc.words(at_forty) == 40 and at_forty.startswith(f"{head} (w w")
    assert _placed_and_supported(" ".join(["w"] * 18)) == f"{head}; {_SUPPORTS}"
    run = {"verdict": "consistent", "margin": "+1 %"}
    assert _placed_and_supported(run=run) == (
        f"Measured on B300 GPUs here, it holds (+1 %); {_SUPPORTS}"
    )
    long = cc.summarize(
        load_claims().get(SU),
        _su(physics={"margin": " ".join(["m"] * 35)},
            published={**_token_value(), "verdict": "none published", "list_price": {}}),
    )  # fmt: skip
    assert long.finding == (
        f"Physically possible: {' '.join(['m'] * 35)}; the evidence supports\u2026"
    )


def test_a_summary_reads_readings_without_a_claim_id_as_the_claims():
    su = load_claims().get(SU)
    rs = [{k: v for k, v in r.items() if k != "claim_id"} for r in _su()]
    s = cc.summarize(su, rs)
    assert (s.claim_id, s.word, s.grade) == (SU, "plausible", "very low")
    none = cc.summarize(su, [])
    assert (none.claim_id, none.word) == (SU, "not run")
    no_physics = cc.summarize(su, _su(published={"verdict": "within", "margin": "1x"})[1:])
    assert no_physics.finding == (
        "Within the published like-for-like measurements (1x). Not tested on B300 GPUs here."
    )


def test_within_words_counts_the_limit_in_and_trims_the_cut_clause():
    text = ["one two three.", "four five six seven."]
    assert cc.within_words(text, 7) == "one two three. four five six seven."  # 7 of 7
    assert cc.within_words(["a b, c d."], 2) == "a b\u2026"
    assert cc.within_words(["a BX c d."], 2) == "a BX\u2026"
    assert cc.within_words([]) == ""


def test_the_landing_grade_counts_a_primary_text_and_the_why_names_the_lowering_first():
    """890 B/token (a primary text located) derived exactly and placed within published
    points: raised to "high"; near points held back by analogue hardware and lowered by an
    unknown basis: the why names the lowering (its reasons came in the other order)."""
    kv = load_claims().get("context-latency.kv-bytes")
    base = {"claim_id": kv.id, "margin": "-", "reason": "why"}
    derived = {"value": 890, "unit": "B/token", "from": "the model card", "exact": True}
    rs = [
        {**base, "reading": "physics", "verdict": "possible", "derived": derived},
        {**base, "reading": "published", "verdict": "within", "margin": "1x"},
    ]
    assert cc.summarize(kv, rs).grade == "high"
    split = [{"basis": "x", "ratio_low": 2.0, "ratio_high": 3.0},
             {"basis": "y", "ratio_low": 0.1, "ratio_high": 0.5}]  # fmt: skip
    closest = {"kind": "near", "differing": [{"part": "hardware", "point": "GB300",
                                              "claim": "B300"}]}  # fmt: skip
    near = {"points": ["a", "b"], "verified": True, "per_basis": split}
    rs = _su(published={"near": near, "closest": closest})
    labels = [label for label, _ in cc.certainty(rs, claim_id=SU).why]
    assert labels == ["rests on", "held back by", "lowered by"]
    s = cc.summarize(load_claims().get(SU), rs)
    assert s.why == "an unknown basis (the claim above every near point as x, below every one as y)"


def test_a_difference_is_named_by_its_part_and_only_speculation_reads_simulated():
    assert cc._difference({"part": "workload", "point": "simulated", "claim": "real"}) == (
        "another workload (simulated, the claim real)"
    )
    assert cc._difference({"part": "foo", "point": "a", "claim": "b"}) == (
        "another foo (a, the claim b)"
    )


def test_kernels_without_a_deployment_name_name_none():
    su = load_claims().get(SU)
    r = _su(physics={"attainable": {"ratio": 0.5}})[:1]
    assert cc.conclude(su, r).sentences == (
        "826 tok/s is physically possible: why; 0.5x what measured kernels reach.",
    )


def test_bases_are_named_up_to_three_then_two_and_a_count(claim):
    q = [f"\u201c{n}\u201d" for n in "abcde"]
    assert cc._names(list("abc")) == f"{q[0]}, {q[1]} or {q[2]}"
    assert cc._names(list("abcde")) == f"{q[0]}, {q[1]} or 3 other bases"
    assert cc._names(list("ab")) == f"{q[0]} or {q[1]}"
    c = cc.conclude(claim, _readings())
    assert (c.claim_id, c.result, c.figure, c.statement) == (
        CLAIM, "rack-scaling", "954,000 tok/s", claim.statement,
    )  # fmt: skip
