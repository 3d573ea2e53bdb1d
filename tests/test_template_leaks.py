"""No generated sentence leaks its template: every sentence generator of the book (each chapter's
readings, flips, headlines and conclusions, the evidence readings of every claim in the
registry, the physics reading of every catalog GPU and model, the generated pages and rerun
cards) is rendered and checked with :func:`wording.leaks` (no "None", "unknown (unknown)",
doubled words, raw catalog ids, bracketed placeholders, "us" for µs, "not stated x 16"). A
physics verdict beside a margin that contradicts it cannot be constructed at all."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

import pytest
from wording import bare_ids, leaks

from rackbook import paths
from rackbook.book import chapter, pages, rerun
from rackbook.core import traces
from rackbook.inputs.catalogs import list_models, load_hardware
from rackbook.inputs.claims import load_claims
from rackbook.results import REGISTRY, evidence, headline
from rackbook.results.conclusions import conclusions, summarize

_OUTCOMES: dict[str, object] = {}


def _outcome(result: str):  # type: ignore[no-untyped-def]
    if result not in _OUTCOMES:
        module = REGISTRY[result]
        an = module.analyse(traces.read_trace(paths.TRACES / result))
        _OUTCOMES[result] = (an, module.outcome(an))
    return _OUTCOMES[result]


def _chapter_texts(result: str) -> Iterator[tuple[str, str]]:
    an, out = _outcome(result)
    for r in out.readings:
        yield f"{r.claim_id} {r.reading}", f"{r.verdict}: {r.margin}. {r.reason}"
        for b in r.by_basis:  # its texts (its closest point is a record, shown by its texts)
            texts = [str(v) for v in b.values() if isinstance(v, str)]
            yield f"{r.claim_id} {r.reading} basis", " ".join(texts)
    for i, f in enumerate(out.flips):
        yield f"{result} flip {i}", f
    for h in out.headlines:
        yield f"headline {h.name}", f"{h.definition} {h.reason}"
    doc = {"result": out.result, "readings": [asdict(r) for r in out.readings]}
    for c in conclusions(doc):
        yield f"conclusion {c.claim_id}", f"{c.text} {c.grade}"
        yield f"certainty {c.claim_id}", f"{c.grade}: {c.certainty.note}"
    for claim in load_claims().for_result(result):
        s = summarize(claim, doc["readings"])
        yield f"landing row {claim.id}", " | ".join(pages.landing_row(claim, s))
    for name, v in an.values().items():
        if isinstance(v, str):
            yield f"{result} value {name}", v
    yield f"{result} verdict table", chapter.readings_box(out)
    yield f"{result} evidence", chapter.evidence_markdown(result)
    yield f"{result} claim card", pages.claim_card(result) + pages.as_published(result)
    yield f"{result} rerun card", rerun.card(result)
    warning = chapter.standin_warning(an.trace.kind, an.hardware, False)
    yield f"{result} warnings", warning + chapter.validity_warning(an.trace)


def _presented_texts(result: str) -> Iterator[tuple[str, str]]:
    """What a reader meets of a chapter, as the presentation layer prints it (the rendered
    Markdown and HTML, no rewriting after): landing rows, conclusion box, verdict table, flips,
    published evidence, headline values, rerun card."""
    an, out = _outcome(result)
    doc = {"result": out.result, "readings": [asdict(r) for r in out.readings]}
    for claim in load_claims().for_result(result):
        s = summarize(claim, doc["readings"])
        yield f"landing row {claim.id}", " | ".join(pages.landing_row(claim, s))
    yield f"{result} conclusion box", chapter.conclusion_markdown(out)
    yield f"{result} verdict table", chapter.readings_box(out)
    yield f"{result} flips", chapter.flips_box(out)
    yield f"{result} evidence", chapter.evidence_markdown(result)
    yield f"{result} headlines", chapter.headlines_box(out)
    yield f"{result} rerun card", rerun.card(result)
    yield f"{result} validity", chapter.validity_warning(an.trace)


@pytest.mark.parametrize("result", paths.RESULTS)
def test_what_a_reader_meets_keeps_the_number_style_and_reader_names(result):
    """Ratios with three figures, no scientific notation, no cents on thousands of dollars,
    "64 %" (never "64.0%"), µs, no raw catalog id as a bare word, claims named by figure."""
    found = []
    for where, text in _presented_texts(result):
        found += [f"{where}: {x}" for x in leaks(text, style=True)]
        found += [f"{where}: bare id: {x}" for x in bare_ids(_prose(text))]
        found += [f"{where}: claim id: {c.id}" for c in load_claims().claims if c.id in text]
        if where.startswith("landing row"):  # a summary-of-findings cell a reader can quote
            found += [f"{where}: {len(c.split())} words" for c in text.split(" | ")
                      if len(c.split()) > 60]  # fmt: skip
    assert found == []


def _prose(text: str) -> str:
    """``text`` without code spans, links' targets and URLs (where ids belong)."""
    import re

    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r"\]\([^)]*\)|<?https?://\S+", " ", text)


@pytest.mark.parametrize("result", paths.RESULTS)
def test_no_chapter_sentence_leaks_its_template(result):
    texts = _chapter_texts(result)  # as written: no rewriter stands between them and a page
    found = [f"{where}: {leak}" for where, text in texts for leak in leaks(text, style=True)]
    assert found == []


def test_no_evidence_reading_of_any_registry_claim_leaks():
    found = []
    for c in load_claims().claims:
        e = evidence.claim_evidence(c.id)
        texts = [e.reason, str(e.margin), c.figure_basis.short()]
        texts += [b.text() for b in e.bases] + [b.basis for b in e.bases]
        found += [f"{c.id}: {leak}" for t in texts for leak in leaks(t)]
    assert found == []


@pytest.mark.parametrize("per", ["gpu", "total"])
def test_no_physics_reading_of_any_catalog_gpu_or_model_leaks(per):
    from rackbook.physics import check

    found = []
    for model in list_models():
        for gpu in load_hardware().gpus:
            for tok_s in (100.0, 1e5, 1e7):
                c = check.check_claim(model, gpu, 8, tok_s, per=per)
                texts = [c.reason, *c.notes] + [f"{r.name}: {r.formula}" for r in c.ceilings]
                found += [f"{model} {gpu} {tok_s:g}: {x}" for t in texts for x in leaks(t)]
    assert found == []


#: A workload that prints the mixed phase and the attainable estimate (Hopper fractions applied
#: to a Blackwell GPU name the GPU too), and one for a model whose KV layout is unknown.
_MIXED = ("--counted", "total", "--isl", "8000", "--osl", "1000")
#: (model, GPU, workload) of the check-output test: every catalog GPU and every catalog model.
_CHECKED = [("deepseek-v4.1-flash", g, _MIXED) for g in ("gb300", "b300", "gb200", "b200",
            "h200", "h100-sxm")] + [("deepseek-v3", "gb300", _MIXED),
                                    ("deepseek-v4-flash", "h200", ())]  # fmt: skip


@pytest.mark.parametrize(("model", "gpu", "workload"), _CHECKED)
def test_check_output_names_gpus_and_models_by_display_name(run_cli, model, gpu, workload):
    """``rackbook check``'s workload, physics and attainable lines (all before ``basis:``, whose
    fields are the basis's own ids) name the GPU and model as the catalog displays them."""
    argv = ("--model", model, "--gpu", gpu, "--gpus", "8", "--tok-s", "90000", *workload)
    code, out, _ = run_cli("check", *argv)
    assert code == 0
    physics = out.split("\nbasis:")[0]
    assert physics.count("\n") >= 5 and "\n  attainable:" in physics
    assert bare_ids(physics) == []


def test_a_bare_catalog_id_is_found():
    ids = {"gb300", "deepseek-v3"}
    assert bare_ids("deepseek-v3 on 72 x gb300, phase mixed", ids) == [
        "deepseek-v3 on 72 x gb300, phase mixed",
        "deepseek-v3 on 72 x gb300, phase mixed",
    ]
    clean = "DeepSeek-V3 on 72 x GB300 (a gb300-nvl72 rack, https://x.org/gb300/deepseek-v3.1)"
    assert bare_ids(clean, ids) == []


def test_no_generated_page_leaks():
    generated = {
        "claims": pages.claims_page(),
        "hardware": pages.hardware_page(),
        "models": pages.models_page(),
        "check examples": pages.check_page(),
        "source note": pages.source_note(),
        "rerun deployment": rerun.deployment(),
        "rerun cost": rerun.cost_table(),
        "validation": pages.validation_markdown(pages.validation_report()),
        "parameters (YAML defaults)": pages.parameters_page(),
    }
    found = [f"{page}: {leak}" for page, text in generated.items() for leak in leaks(text)]
    assert found == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("the claim; context: None (claim: 128000)", "None"),
        ("output tokens; per unknown (unknown); workload", "unknown (unknown)"),
        ("the figures are possible and possible.", "doubled"),
        ("one sequence on 4 GPUs (b300) cannot step faster", "catalog id"),
        ("As [a rental price] or [an ownership cost], it is above", "placeholder"),
        ("sparse reads add at least 15.4 us (2.6 %)", "microseconds"),
        ("vLLM (pull request) · not stated x 16 · Kimi K3", "not stated"),
        ("the speedup is {speedup}", "placeholder"),
        ("a value of nan tok/s", "NaN"),
        ("per GPU, 2.17367e+06 tok/s", "scientific"),
        ("the claim 0.0929x to 32.1x them", "significant"),
        ("revenue $343.44 to $3,434.40", "cents"),
        ("fits once 64.0% of the input is cached", "percentage"),
        ("the ceiling is 332,736; with reuse it rises to 332,736 (compute)", "itself"),
        ("another quantity; to be settled in the notebook.", "notebook"),
        ("the median gap is about 5,935 us: bursts", "microseconds"),
    ],
)
def test_each_leak_is_found(text, kind):
    found = leaks(text, style=True)
    assert found and any(kind.lower() in f.lower() for f in found), found


@pytest.mark.parametrize(
    "text",
    [
        "See [the source](https://example.org) for 15.4 µs per step.",
        "Both possible; as the rack's total it is 13,250 tok/s per GPU on a GB300.",
        "a `None` default in code, and “per GPU, output tokens” quoted",
    ],
)
def test_clean_text_passes(text):
    assert leaks(text) == []


@pytest.mark.parametrize(
    ("verdict", "ratio"), [("undetermined", 3.94), ("possible", 1.41), ("impossible", 0.125)]
)
def test_a_contradictory_physics_pair_cannot_be_made(verdict, ratio):
    margin = headline.ceiling_margin(ratio, "the decode ceiling")
    with pytest.raises(ValueError, match="beside '.*': a ratio (above|below) the ceiling"):
        headline.ClaimReading(
            "rack-scaling.throughput", "physics", verdict, margin, "why", ratio=ratio
        )


@pytest.mark.parametrize(
    ("verdict", "ratio", "margin"),
    [
        ("impossible", 3.94, "3.94x the decode ceiling"),
        ("possible", 4.14e-05, "4.14e-05x the decode ceiling"),
        ("possible", 1.0, "1x the decode ceiling"),  # at the bound: possible (no margin)
        ("undetermined", None, "fits only if >= 49% of tokens are cache hits"),
    ],
)
def test_a_consistent_physics_pair_is_made(verdict, ratio, margin):
    if ratio is not None:
        assert headline.ceiling_margin(ratio, "the decode ceiling") == margin
    r = headline.ClaimReading(
        "rack-scaling.throughput", "physics", verdict, margin, "why", ratio=ratio
    )
    assert (r.margin, r.ratio) == (margin, ratio)


def test_one_verdict_rule_everywhere():
    """The book states one verdict rule: a bound has no margin. No prose page, notebook or
    figure module speaks of a modelling margin or a band around a ceiling; nor writes "us"
    after a glued number, defers to "the notebook" or says re-recorded traces have no burst
    rows (chapters 1 and 2 count some)."""
    import re

    stale = re.compile(
        r"modelling margin|within \d+ ?% of the ceiling|grey band|`\s?us\b|"
        r"to be settled in the notebook|have no burst rows",
        re.I,
    )
    files = [*paths.ROOT.glob("book/*.md"), *paths.ROOT.glob("notebooks/*.ipynb")]
    files.append(paths.ROOT / "data/claims.yaml")
    files += list((paths.ROOT / "src/rackbook/book").rglob("*.py"))
    found = [f"{f.name}: {m.group(0)}" for f in files for m in stale.finditer(f.read_text())]
    assert found == []
    assert "a bound has no margin" in (paths.ROOT / "book/glossary.md").read_text().replace(
        "\n  ", " "
    ).replace("A bound", "a bound")
