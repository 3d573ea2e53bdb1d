"""The headline contract (rackbook.results.headline): each headline and claim reading refuses
what the book cannot print (a word outside its reading's vocabulary, a reason on two lines, a
physics verdict beside a contradicting ratio), an outcome holds every claim's three readings,
and the headline JSON is written, read back and summarised; the chapter helpers
(rackbook.results.chapter_common) build them."""

from __future__ import annotations

import dataclasses
import json
import math
from types import SimpleNamespace

import pytest

from rackbook.errors import InputError
from rackbook.results import chapter_common, headline
from rackbook.results.headline import ClaimReading, Headline, Outcome

CID = "decode-parity.gap"


def _h(**kw) -> Headline:  # type: ignore[no-untyped-def]
    args = dict(name="n", value=1.5, unit="x", definition="d", claim_id=CID, kind="modelled")
    args |= dict(verdict="possible", reason="why")
    return Headline(**(args | kw))


def _three(claim_id: str = CID) -> list[ClaimReading]:
    return [
        ClaimReading(claim_id, "physics", "possible", "0.5x the ceiling", "p", ratio=0.5),
        ClaimReading(claim_id, "published", "none published", "-", "q"),
        ClaimReading(claim_id, "this run", "untested", "-", "r"),
    ]


def test_a_headline_refuses_what_the_book_cannot_print():
    assert _h().reading == "physics"
    assert _h(kind="published", verdict="within").reading == "published"
    assert _h(kind="synthetic", verdict="consistent", hardware=None).reading == "this run"
    assert _h(kind="measured", verdict="consistent", hardware="GB300").reading == "this run"
    cases = [
        (dict(kind="guess"), "headline n: kind 'guess' not in ('measured', 'modelled', "),
        (dict(verdict="within"), "headline n: verdict 'within' not in ('possible', "),
        (dict(claim_id=None), "headline n: without a claim the verdict is not comparable"),
        (dict(kind="measured", verdict="consistent"), "headline n: measured where?"),
        (dict(value=math.inf), "headline n: value is not finite"),
        (dict(value=math.nan), "headline n: value is not finite"),
        (dict(reason="a\nb"), "headline n: reason must be one line"),
    ]
    for kw, message in cases:
        with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("?", r"\?")):
            _h(**kw)
    assert _h(claim_id=None, verdict=headline.NOT_COMPARABLE).verdict == "not comparable"
    assert _h(verdict=headline.NOT_COMPARABLE).claim_id == CID
    assert _h(value=3, kind="measured", verdict="consistent", hardware="B300").value == 3
    assert _h(value="text").value == "text" and _h(value=None).value is None


def test_a_claim_reading_refuses_other_words_two_lines_and_contradictions():
    with pytest.raises(ValueError, match=r"^c: reading 'guess' not in \('physics', 'published', "):
        ClaimReading("c", "guess", "possible", "-", "r")
    with pytest.raises(ValueError, match=r"^c physics verdict 'within' not in \('possible', "):
        ClaimReading("c", "physics", "within", "-", "r")
    for margin, reason in (("a\nb", "r"), ("-", "a\nb")):
        with pytest.raises(ValueError, match="^c this run: reason or margin on two lines$"):
            ClaimReading("c", "this run", "untested", margin, reason)
    with pytest.raises(ValueError, match=r"^c: physics 'possible' beside '1.5x the ceiling': a "):
        ClaimReading("c", "physics", "possible", "-", "r", ratio=1.5)
    with pytest.raises(ValueError, match=r"^c: physics 'impossible' beside '0.5x the ceiling'"):
        ClaimReading("c", "physics", "impossible", "-", "r", ratio=0.5)
    # the published and this-run readings carry no ceiling: any ratio passes there
    assert ClaimReading("c", "published", "within", "-", "r", ratio=9.0).ratio == 9.0
    assert ClaimReading("c", "physics", "impossible", "-", "r", ratio=1.5).verdict == "impossible"
    assert ClaimReading("c", "physics", "possible", "-", "r", ratio=1.0).ratio == 1.0
    assert ClaimReading("c", "physics", "impossible", "-", "r", ratio=1.0).ratio == 1.0


def test_contradiction_and_ceiling_margin():
    assert headline.ceiling_margin(3.944, "the decode ceiling") == "3.94x the decode ceiling"
    assert headline.ceiling_margin(0.5) == "0.5x the ceiling"
    assert headline.contradiction("possible", None) is None
    assert (
        headline.contradiction("possible", 1.5) == "'1.5x the ceiling': a ratio above the ceiling"
    )
    assert headline.contradiction("undetermined", 1.5) == (
        "'1.5x the ceiling': a ratio above the ceiling"
    )
    assert headline.contradiction("undetermined", 0.5) is None
    assert headline.contradiction("impossible", 0.5) == (
        "'0.5x the ceiling': a ratio below the ceiling"
    )
    assert headline.contradiction("impossible", 2.0) is None
    assert headline.contradiction("possible", 1.0) is None


def test_an_outcome_holds_every_claims_three_readings():
    rs = _three()
    out = Outcome("decode-parity", [_h()], rs, ["flip a"], ["t2", "t1", "t2"], {"k": 1}, "GB300")
    assert out.reading(CID, "published") is rs[1]
    assert headline.by_claim(rs, "this run") == {CID: rs[2]}
    assert headline.by_claim(rs, "nothing") == {}
    with pytest.raises(ValueError, match="^unknown result 'nope'$"):
        Outcome("nope", [], [])
    with pytest.raises(ValueError, match=r"^rack-scaling\.cost: not decode-parity's$"):
        Outcome("decode-parity", [], _three("rack-scaling.cost"))
    with pytest.raises(
        ValueError, match=r"^decode-parity\.gap: readings \['physics', 'published'\]"
    ):
        Outcome("decode-parity", [], rs[:2])
    with pytest.raises(ValueError, match="^decode-parity: a flip on two lines$"):
        Outcome("decode-parity", [], rs, ["a\nb"])
    assert Outcome("decode-parity", [], []).flips == []


def test_the_outcome_as_json_markdown_and_written(tmp_path, monkeypatch):
    rs = _three()
    hs = [
        _h(name="gap", value=1234.5, unit="tok/s", reason="a | b"),
        _h(name="share", value=0.5, unit="1", claim_id=None, verdict="not comparable"),
        _h(name="none", value=None, unit="x", kind="measured", verdict="consistent", hardware="H"),
    ]
    hs[2].claim_id = CID
    out = Outcome("decode-parity", hs, rs, ["f"], ["t2", "t1", "t2"], {"k": 1}, "GB300")
    doc = out.to_dict("src.ipynb")
    assert doc["format"] == headline.FORMAT == 2
    assert (doc["result"], doc["source"], doc["hardware"]) == (
        "decode-parity",
        "src.ipynb",
        "GB300",
    )
    assert doc["trace_ids"] == ["t1", "t2"] and doc["parameters"] == {"k": 1}
    assert doc["flips"] == ["f"] and [h["name"] for h in doc["headlines"]] == [
        "gap",
        "share",
        "none",
    ]
    assert [r["reading"] for r in doc["readings"]] == ["physics", "published", "this run"]
    assert doc["certainty"] and doc["certainty"][0]["claim_id"] == CID
    from dataclasses import asdict

    from rackbook.results.conclusions import certainties

    want = [c.to_dict() for c in certainties("decode-parity", [asdict(r) for r in rs])]
    assert doc["certainty"] == want and doc["headlines"] == [asdict(h) for h in hs]
    assert doc["readings"] == [asdict(r) for r in rs]
    assert doc["created"].endswith("+00:00") and "T" in doc["created"]
    assert out.markdown() == (
        f"- `gap` = **1,234 tok/s** (modelled; the claim {headline._figure(CID)}: *possible*): "
        "a \\| b\n"
        "- `share` = **0.5** (modelled; no claim: *not comparable*): why\n"
        f"- `none` = **not recorded** (measured on H; the claim {headline._figure(CID)}: "
        "*consistent*): why\n"
    )
    monkeypatch.delenv(headline.STAGE_ENV, raising=False)
    p = out.write(tmp_path / "o", "src.ipynb")
    assert p == tmp_path / "o" / "decode-parity.json"
    back = headline.read_result(p)
    assert back["readings"] == json.loads(json.dumps(doc["readings"]))
    assert back["trace_ids"] == ["t1", "t2"] and back["source"] == "src.ipynb"
    assert headline.summary_line(back) == (
        "decode-parity.gap: physics possible, published none published, this run untested"
    )
    monkeypatch.setenv(headline.STAGE_ENV, str(tmp_path / "stage"))
    assert out.write(tmp_path / "o", "s") == tmp_path / "stage" / "decode-parity.json"


def test_summary_line_keeps_the_claims_order():
    doc = {"readings": [dict(claim_id="b", reading="physics", verdict="possible")]}
    doc["readings"] += [dict(claim_id="a", reading="physics", verdict="impossible")]
    doc["readings"] += [dict(claim_id="b", reading="this run", verdict="untested")]
    assert (
        headline.summary_line(doc)
        == "b: physics possible, this run untested; a: physics impossible"
    )


def test_read_result_refuses_each_bad_file(tmp_path):
    p = tmp_path / "r.json"
    with pytest.raises(InputError, match=r"r\.json: -: no headline JSON: run the result first$"):
        headline.read_result(p)
    bad = [
        ("[1]", r"r\.json: -: must be a JSON object, got list"),
        ('{"headlines": {}, "readings": []}', r"r\.json: headlines: must be a list, got dict"),
        ('{"readings": []}', r"r\.json: headlines: missing"),
        ('{"headlines": [], "readings": "x"}', r"r\.json: readings: must be a list, got str"),
        ('{"headlines": []}', r"r\.json: readings: missing"),
        ('{"headlines": [], "readings": [3]}', r"readings\[0\]: needs claim_id, reading, verdict"),
    ]
    for text, message in bad:
        p.write_text(text)
        with pytest.raises(InputError, match=message):
            headline.read_result(p)
    ok = {"headlines": [], "readings": [dict(claim_id="c", reading="r", verdict="v")]}
    p.write_text(
        json.dumps(ok | {"readings": ok["readings"] + [dict(ok["readings"][0], reason="")]})
    )
    with pytest.raises(
        InputError, match=r"r\.json: readings\[0\]: needs claim_id, reading, verdict, reason"
    ):
        headline.read_result(p)
    ok["readings"][0]["reason"] = "why"
    p.write_text(json.dumps(ok))
    assert headline.read_result(p) == ok


def test_values_cells_and_figures_as_printed():
    fv = headline._fmt_value
    assert [fv(999.94), fv(1000.4), fv(-1500.0), fv(0.000123456), fv(12345)] == [
        "999.9",
        "1,000",
        "-1,500",
        "0.0001235",
        "12,345",
    ]
    assert [fv(True), fv(None), fv("abc")] == ["True", "not recorded", "abc"]
    assert fv(12345.6) == "12,346" and fv(-332700.0) == "-332,700"  # never 1.235e+04
    bare = Outcome("decode-parity", [_h(unit="")], _three())
    assert "= **1.5** (modelled;" in bare.markdown()
    assert headline.cell("a|b$c") == "a\\|b\\$c" and headline.cell(3) == "3"
    assert headline._figure("single-user.throughput") == "826 tok/s"
    assert headline._figure("no-such.claim") == "no-such.claim"


def test_params_take_the_notebook_cells_names_and_extras():
    P = headline.params("decode-parity", extra_flag=3)
    p = P()
    assert p.extra_flag == 3 and isinstance(p, headline.Params) and P.__name__ == "Params"
    from rackbook.params import cell_defaults

    cell = cell_defaults("decode-parity")
    assert cell and {f.name for f in dataclasses.fields(P)} == set(cell) | {"extra_flag"}
    with pytest.raises(Exception, match="cannot assign"):
        p.extra_flag = 4
    lists = {k: v for k, v in vars(p).items() if isinstance(v, (list, tuple))}
    assert all(isinstance(v, tuple) for v in lists.values())
    q = P.from_mapping({"extra_flag": 5, "not_a_field": 1})
    assert q.extra_flag == 5 and not hasattr(q, "not_a_field")


# ----------------------------------------------------------------------------- chapter_common


def test_chapter_helpers_build_readings_headlines_and_the_outcome():
    r = chapter_common.reading(CID, "this run", "untested", "-", ["a", "", "b"], ratio=2.0)
    assert (r.reason, r.ratio, r.reading) == ("a; b", 2.0, "this run")
    m = chapter_common.modelled(CID, "gap", 6.0, "%", "the gap", "possible", "why")
    assert (m.kind, m.claim_id, m.verdict, m.reason, m.unit) == (
        "modelled",
        CID,
        "possible",
        "why",
        "%",
    )
    assert (m.name, m.value, m.definition) == ("gap", 6.0, "the gap")
    rows = [(r, "a", 1.0, "x", "what a"), ("unclaimed why", "b", 2, "1", "what b")]
    hs = chapter_common.headlines(rows, kind="measured", hardware="GB300", trace_ids=["t"])
    assert [(h.name, h.claim_id, h.verdict, h.reason) for h in hs] == [
        ("a", CID, "untested", "a; b"),
        ("b", None, "not comparable", "unclaimed why"),
    ]
    assert [(h.value, h.unit, h.definition) for h in hs] == [
        (1.0, "x", "what a"),
        (2, "1", "what b"),
    ]
    assert all(h.kind == "measured" and h.hardware == "GB300" and h.trace_ids == ["t"] for h in hs)
    physics = _three()[0]
    assert chapter_common.headlines([(physics, "a", 1.0, "x", "w")])[0].kind == "modelled"
    a = SimpleNamespace(
        hardware="GB300", trace=SimpleNamespace(trace_id="tid"), x=SimpleNamespace(y=7)
    )
    a.z = 3
    assert chapter_common.glue(a, "one=x.y z") == {"one": 7, "z": 3}
    assert chapter_common.where(a) == dict(kind="measured", hardware="GB300", trace_ids=["tid"])
    assert chapter_common.where(a, "modelled") == dict(
        kind="modelled", hardware=None, trace_ids=["tid"]
    )


def test_a_chapter_screens_its_trace_and_its_outcome_reports_the_named_parameters():
    """Chapter: the notebook cell's defaults without params, the registry's claims without one,
    the trace screened unless not SCREENED, the hardware label; outcome: the parameters named
    (resolved ones replaced, tuples as lists), the trace's id unless others are given."""
    from rackbook import paths
    from rackbook.core import traces
    from rackbook.core.provenance import hardware_label
    from rackbook.inputs.claims import load_claims

    trace = traces.read_trace(paths.DATA / "traces" / "decode-parity")

    class Ch(chapter_common.Chapter):
        PARAMS = headline.params("decode-parity", extra=(1, 2))

        def analyse(self, p, reg, **kw):  # type: ignore[no-untyped-def]
            self.seen = (p, reg, kw)
            self.readings = _three()

    a = Ch(trace, flag=1)
    assert a.params == Ch.PARAMS() and a.seen[0] is a.params and a.seen[2] == {"flag": 1}
    assert a.seen[1].ids == load_claims().ids and a.hardware == hardware_label(trace.run)
    assert a.hardware and len(a.trace.requests) <= len(trace.requests)
    assert a.trace is not trace  # screened: the valid requests' copy
    reg = load_claims()
    b = Ch(trace, Ch.PARAMS(extra=(3,)), reg)
    assert b.params.extra == (3,) and b.seen[1] is reg
    Ch.SCREENED = False
    assert Ch(trace).trace is trace
    out = chapter_common.outcome("decode-parity", a, [], ["f"], "extra", gone=1)
    assert out.parameters == {"extra": [1, 2]} and out.trace_ids == [trace.trace_id]
    assert out.headlines == [] and out.result == "decode-parity"
    assert (out.readings, out.hardware, out.flips) == (a.readings, a.hardware, ["f"])
    out = chapter_common.outcome("decode-parity", a, [], [], "extra", ["x"], extra="resolved")
    assert out.parameters == {"extra": "resolved"} and out.trace_ids == ["x"]
    with pytest.raises(NotImplementedError):
        chapter_common.Chapter.analyse(a, a.params, reg)


def test_chapter_readings_put_the_published_evidence_between_physics_and_the_run():
    from rackbook.inputs.claims import load_claims
    from rackbook.results import evidence

    reg = load_claims()
    p, _, run = _three()
    got = chapter_common.readings(reg, (p, run))
    assert [r.reading for r in got] == ["physics", "published", "this run"]
    assert got[0] is p and got[2] is run
    assert got[1] == evidence.reading(CID, registry=reg)


def test_chapter_readings_read_the_published_figure_from_the_registry_given():
    from rackbook.results import evidence

    cid = "rack-scaling.cost"
    p = ClaimReading(cid, "physics", "possible", "-", "p")
    run = ClaimReading(cid, "this run", "untested", "-", "r")
    fake = SimpleNamespace(get=lambda c: SimpleNamespace(value=3.0))
    got = chapter_common.readings(fake, (p, run))[1]
    assert got.verdict == evidence.DEPENDS  # $3.00, not the claim's own $38.96 (above)
