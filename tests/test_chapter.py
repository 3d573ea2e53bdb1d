"""What a chapter takes from :mod:`rackbook.book.chapter`: glued values as plain Python numbers,
Markdown tables for print, the verdict table, the flips and headline dropdowns, the warnings,
the conclusion and the published-points table."""

from __future__ import annotations

from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rackbook.book import chapter
from rackbook.physics.results_bounds import verdict_rule
from rackbook.results.headline import ClaimReading, Headline, Outcome


def _reading(reading: str, verdict: str, **kw) -> ClaimReading:  # type: ignore[no-untyped-def]
    kw.setdefault("margin", "-")
    kw.setdefault("reason", f"why {reading}")
    return ClaimReading("decode-parity.gap", reading, verdict, **kw)


def _outcome(flips: list[str] | None = None) -> Outcome:
    readings = [
        _reading("physics", "possible", margin="0.5x the ceiling", reason="a < b & c",
                 attainable={"ratio": 0.123, "text": "kernels reach <2x>"}),
        _reading("published", "within", basis="output tokens per GPU"),
        _reading("this run", "untested", reason="a CPU stand-in"),
    ]  # fmt: skip
    heads = [
        Headline(name="max_decode_gap", value=1.5, unit="%", definition="largest gap",
                 kind="measured", hardware="2 x CPU", claim_id="decode-parity.gap",
                 verdict="untested", reason="a CPU stand-in"),
    ]  # fmt: skip
    return Outcome("decode-parity", heads, readings, flips or [])


def test_glue_values_glues_plain_python_numbers_without_display(monkeypatch):
    glued = []
    monkeypatch.setattr("myst_nb.glue", lambda n, v, display: glued.append((n, v, display)))
    chapter.glue_values({"n": np.int64(7), "x": np.float64(0.5), "s": "text"})
    assert glued == [("n", 7, False), ("x", 0.5, False), ("s", "text", False)]
    assert [type(v) for _, v, _ in glued] == [int, float, str]  # format specs apply to them
    assert f"{glued[0][1]:,.0f}" == "7"


def test_table_markdown_formats_escapes_and_keeps_only_the_columns_named():
    df = pd.DataFrame(
        {"tok_s": [12345.6, None], "label": ["a|b", "$5"], "hidden": [1, 2]}, index=[9, 8]
    )
    md = chapter.table_markdown(df, {"tok_s": ("tok/s", ",.0f"), "label": ("what", "")})
    assert md.splitlines() == [
        "| tok/s | what |",
        "|---:|---|",
        "| 12,346 | a\\|b |",
        "| nan | \\$5 |",  # a missing number: shown as read, never a crash
    ]
    assert "hidden" not in md and "9" not in md  # neither other columns nor the index
    # a value its spec cannot format is shown as text
    assert "| n/a |" in chapter.table_markdown(pd.DataFrame({"v": ["n/a"]}), {"v": ("v", ",.0f")})


def test_readings_table_one_row_per_claim_one_cell_per_reading():
    html = chapter.readings_box(_outcome())
    assert html.count("<tr><td><strong>&lt; 6 %</strong></td>") == 1  # the figure, not an id
    assert html.count("<td data-label=") == 3
    assert [html.index(t) for t in ("Physics", "Published evidence", "This run")] == sorted(
        html.index(t) for t in ("Physics", "Published evidence", "This run")
    )
    assert "<strong>possible</strong>" in html and "0.5x the ceiling" in html
    assert "kernel sum: 0.123x what measured kernels reach" in html  # 3 figures
    why = "why</summary>a &lt; b &amp; c<br>Attainable (kernel sum): kernels reach &lt;2x&gt;"
    assert why in html
    assert "as output tokens per GPU: <strong>within</strong>" in html  # a short basis named
    # the same table from the headline JSON as read (a mapping), and the old name
    doc = {"result": "decode-parity", "readings": [asdict(r) for r in _outcome().readings]}
    assert chapter.readings_box(doc) == html == chapter.readings_box(_outcome())


def test_readings_cell_leads_with_the_bound_then_the_expected_range():
    """A cell: the bound's verdict, then the claim against what real deployments reach (with
    the fit's held-out error), then the kernel sum; the reason's lines in the same order."""
    from rackbook.physics.expected import load_fit

    exp = {"tok_s_per_gpu": 1000.0, "low": 490.0, "high": 1830.0, "ratio": 2.5,
           "deployment": "dp-ep", "text": "real deployments reach ~1,000"}  # fmt: skip
    out = Outcome("decode-parity", [], [
        _reading("physics", "possible", margin="0.5x the bound",
                 attainable={"ratio": 0.9, "text": "kernels", "expected": exp}),
        _reading("published", "within"), _reading("this run", "untested"),
    ])  # fmt: skip
    html = chapter.readings_box(out)
    cell = html.split('<td data-label="Physics">')[1]
    bound, above, kernels = (
        cell.index("<strong>possible</strong>"),
        cell.index("claim above what real deployments reach (~1,000, 490-1,830 tok/s/GPU: 2.5x)"),
        cell.index("kernel sum: 0.9x what measured kernels reach"),
    )
    assert bound < above < kernels
    error = load_fit().validation_text  # written in the book's spacing: "78 %"
    assert f"model error: {error}" in cell and "inside the interval" in cell
    assert " % of " in error and "%" not in error.replace(" % ", "")
    assert cell.index("Expected: real deployments") < cell.index("Attainable (kernel sum)")


def test_a_long_basis_is_left_to_the_reason():
    long = "output tokens; per GPU; " * 4
    out = Outcome("decode-parity", [], [
        _reading("physics", "possible"), _reading("published", "within", basis=long),
        _reading("this run", "untested"),
    ])  # fmt: skip
    assert "as output tokens" not in chapter.readings_box(out)


@pytest.mark.parametrize(
    ("flips", "title"),
    [([], "(0 thresholds)"), (["x > 1"], "(1 threshold)"), (["a", "b|c"], "(2 thresholds)")],
)
def test_flips_box_counts_its_thresholds(flips, title):
    box = chapter.flips_box(_outcome(flips))
    assert box.startswith(f":::{{dropdown}} What would flip it {title}\n")
    bullets = [line[2:] for line in box.splitlines() if line.startswith("- ")]
    assert bullets == ([f.replace("|", "\\|") for f in flips] or ["nothing short of a new trace"])
    assert f"one verdict rule: {verdict_rule().text}." in box


def test_headlines_box_names_the_json_and_the_count():
    box = chapter.headlines_box(_outcome())
    assert box.startswith(
        ":::{dropdown} The 1 headline values this chapter writes (`decode-parity.json`)"
    )
    assert "max_decode_gap" in box and box.endswith(":::\n")


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("synthetic", "a synthetic input"),
        ("published", "numbers transcribed from a publication"),
        ("recorded", "a recording on 2 x CPU"),
    ],
)
def test_standin_warning_names_what_the_trace_is(kind, says):
    w = chapter.standin_warning(kind, "2 x CPU", testable=False)
    assert w.startswith(":::{warning}\n") and says in w and "**untested**" in w
    assert chapter.standin_warning(kind, "2 x CPU", testable=True) == ""


def test_validity_warning_only_when_requests_were_left_out():
    screening = SimpleNamespace(flagged=3, text=lambda: "3 of 40 requests left out.")
    w = chapter.validity_warning(SimpleNamespace(screening=screening))
    assert w.startswith(":::{warning}\n") and "Measurement validity: 3 of 40 requests" in w
    assert chapter.validity_warning(SimpleNamespace(screening=None)) == ""
    clean = SimpleNamespace(flagged=0, text=lambda: "")
    assert chapter.validity_warning(SimpleNamespace(screening=clean)) == ""


def test_conclusion_markdown_states_the_finding_first_the_claim_after():
    md = chapter.conclusion_markdown(_outcome())
    assert md.startswith("::::{admonition} What this chapter concludes\n:class: rb-conclusion\n")
    first = md.splitlines()[2]  # the finding, in bold, with its verdict word
    assert first.startswith("**< 6 % — consistent. Physically possible: 0.5x the ceiling; ")
    assert "0.123x what measured kernels reach" in first and first.endswith("**<br>")
    assert "The claim: vLLM's decode throughput" in md and md.count("Certainty: moderate") == 1
    words = md.split(":::{dropdown} Each reading in words, and why this certainty\n")[1]
    assert "is physically possible: a < b & c;" in words
    empty = chapter.conclusion_markdown({"result": "decode-parity", "readings": []})
    assert "**< 6 % — not run. Not read yet: run the chapter.**" in empty


def test_folded_puts_markdown_in_a_dropdown():
    assert chapter.folded("More", "\n- a\n") == "::::{dropdown} More\n- a\n::::\n"


def test_evidence_markdown_tables_each_claims_points():
    md = chapter.evidence_markdown("rack-scaling")
    claims = [line for line in md.splitlines() if line.startswith(("**954,000", "**7.9x", "**\\$"))]
    assert len(claims) >= 2 and all("published reading **" in c for c in claims)
    header = "| source | system | as published | value | basis | used | differs from the claim in |"
    assert md.count(header) >= 1
    assert "not stated x" not in md and "| nan" not in md
