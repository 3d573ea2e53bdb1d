"""Generated book pages carry numbers computed from data, never typed."""

from __future__ import annotations

import json

from rackbook.book import pages
from rackbook.core import schema
from rackbook.inputs.claims import load_claims


def test_models_page_computes_kv_bytes():
    text = pages.models_page()
    assert "fp4 890 B, fp8 1,650 B, bf16 3,200 B" in text
    assert "384 (6)" in text  # routed experts (top-k) of V4.1-Flash


def test_hardware_page_lists_the_rack():
    text = pages.hardware_page()
    assert "| gb300-nvl72:" in text and "| 72 | 18 x 4 | 576 TB/s |" in text


def test_claims_page_has_every_claim_and_source_status():
    reg = load_claims()
    text = pages.claims_page(reg)
    for c in reg.claims:
        assert f"`{c.id}`" in text
    assert "primary source not located" in text


def test_trace_format_page_is_the_schema():
    text = schema.markdown_reference()
    for table, cols in schema.TABLES.items():
        assert f"## {table}.parquet" in text
        for c in cols:
            assert f"| `{c.name}` | {c.dtype} |" in text


def test_at_a_glance_gives_each_claim_a_verdict_finding_and_plain_grade(tmp_path):
    """One row per claim: the claim, a verdict word, the finding generated from its readings
    (at most 40 words) and a plain certainty grade; the shipped-recordings column its "this
    run" reading (not run when absent); flip a reading and the row changes."""

    def row(words, result="single-user", tag="(chapter 6)"):
        doc = {
            "result": result,
            "headlines": [],
            "readings": [
                {
                    "claim_id": claim.id,
                    "reading": k,
                    "verdict": v,
                    "margin": "-",
                    "reason": f"{k} reason",
                }
                for claim in load_claims().for_result(result)
                for k, v in words.items()
            ],  # fmt: skip
        }
        (tmp_path / f"{result}.json").write_text(json.dumps(doc))
        text = pages.at_a_glance(tmp_path, reference=tmp_path / "none")
        lines = [r for r in text.splitlines() if tag in r]
        return text, lines, [c.strip() for c in lines[0].strip("|").split("|")]

    text, _, cells = row({"physics": "possible", "published": "above", "this run": "untested"})
    assert cells[0].startswith("**826 tok/s**: A specialised decode path")
    assert cells[1] == "**above published**"
    assert cells[2] == (
        "Physically possible: physics reason. Above every published like-for-like measurement."
    )
    assert cells[3] == "**moderate**: like-for-like published figures"
    assert cells[4] == "not run"  # the reference column
    assert "*above published*: above every published" in text  # the verdict key
    _, _, flipped = row({"physics": "impossible", "published": "none published", "this run": "x"})
    assert flipped[1] == "**impossible as stated**"
    assert flipped[2] == "Physically impossible: physics reason. Nothing comparable is published."
    assert flipped[3] == "**high**: a physics bound decides"
    dp = [r for r in text.splitlines() if "(chapter 1)" in r]
    assert len(dp) == 1 and "| not run | - | - | not run |" in dp[0]
    # every claim its own row: 0.35, 0.94 and 97 % in three
    _, lines, cells = row(
        {"physics": "possible", "published": "none published", "this run": "untested"},
        "eplb-balance",
        "(chapter 4)",
    )
    assert len(lines) == 3 and cells[0].startswith("**0.35**: ") and cells[1] == "**plausible**"


def test_at_a_glance_shows_the_readers_this_run_beside_the_shipped_one(tmp_path):
    """A book built from one's own traces: the "your traces" column holds the reader's
    this-run verdicts (``-`` for a chapter that ran on the shipped trace), the shipped column
    the shipped recordings'."""

    def headline(folder, verdict):
        folder.mkdir(exist_ok=True)
        readings = [
            {"claim_id": c.id, "reading": k, "verdict": verdict if k == "this run" else "possible",
             "margin": "-", "reason": "r"}
            for c in load_claims().for_result("single-user")
            for k in ("physics", "published", "this run")
        ]  # fmt: skip
        doc = {"result": "single-user", "headlines": [], "readings": readings}
        (folder / "single-user.json").write_text(json.dumps(doc))

    yours, shipped = tmp_path / "yours", tmp_path / "shipped"
    headline(yours, "inconsistent")
    headline(shipped, "untested")

    def cells(mine):
        text = pages.at_a_glance(yours, reference=shipped, mine=mine)
        head = text.splitlines()[0]
        assert head.endswith("| this run, your traces | this run, shipped recordings |")
        row = next(r for r in text.splitlines() if "(chapter 6)" in r)
        return [c.strip() for c in row.strip("|").split("|")][4:], text

    got, text = cells(["single-user"])
    assert got == ["inconsistent", "untested"]
    assert "*This run, your traces*" in text
    assert cells([])[0] == ["-", "untested"]  # ran on the shipped trace
    plain = pages.at_a_glance(yours, reference=shipped)  # book --out DIR: one column
    assert plain.splitlines()[0].endswith("| certainty | this run, shipped recordings |")


def test_claim_card_states_the_claims_and_as_published_quotes_the_source():
    card = pages.claim_card("context-latency")
    assert "890 B/token" in card and "dropdown" not in card  # the statement, no clutter
    quoted = pages.as_published("context-latency")
    assert "890 B/token" in quoted and "primary source located" in quoted
    assert quoted.count(":::{dropdown} As published") == len(
        pages.load_claims().for_result("context-latency")
    )


def test_rerun_cost_from_the_cluster_sweeps():
    """Each row is the rerun card's sweep of the generated params file (not the CPU trace)."""
    from rackbook.book import rerun

    text = rerun.cost_table()
    rows = {r: (h, sw) for r, h, sw in rerun.cost_rows()}
    h, sw = rows["single-user"]
    row = next(r for r in text.splitlines() if r.startswith("| single-user"))
    assert row == (
        f"| single-user | 1 | 32 | {sw.prefill_tokens:,} | {sw.output_tokens:,} "
        f"| 4 (1) | {sw.wall_min:.0f} min | {sw.gpu_hours:.1f} |"
    )
    pg = next(r for r in text.splitlines() if r.startswith("| prefill-gain"))
    assert "| 136 (2) |" in pg  # baseline and changed deployments of 68 GPUs
    assert "no claim's own figure" in text and "**all chapters**" in text


def test_no_internal_sheet_is_cited_anywhere():
    """Readers cannot open the project's internal reference sheet: no book page, notebook,
    data file, recipe or module may cite it (cite the public source, or say "not located")."""
    from rackbook import paths

    found = []
    for folder in ("book", "notebooks", "data", "env", "src"):
        for f in (paths.ROOT / folder).rglob("*"):
            if f.is_file() and f.suffix in {".md", ".ipynb", ".yaml", ".yml", ".py", ".sh", ".txt"}:
                text = f.read_text(encoding="utf-8", errors="replace").lower()
                if "claims-context" in text or "reference sheet" in text:
                    found.append(str(f.relative_to(paths.ROOT)))
    assert found == [], found


def test_bibliography_has_one_entry_per_source():
    """Every cited URL reaches the references, once (a URL with and without its trailing slash
    is one source: a repeated BibTeX key fails the strict build)."""
    import re

    bib = pages.bibliography()
    keys = re.findall(r"@misc\{([^,]+),", bib)
    assert len(keys) == len(set(keys)) >= 30
    for url in pages.data_urls():
        assert pages.bib_key(url) in keys


def test_bibliography_gives_title_organisation_date_and_marks_aggregators():
    bib = pages.bibliography()
    entries = [e for e in bib.split("\n\n") if e.startswith("@misc")]
    for e in entries:
        assert "  title = {{" in e and "  author = {{" in e and "  date = {" in e, e
        assert "title = {{http" not in e and "title = {{github.com" not in e.lower(), e
        if any(a in e for a in pages.AGGREGATORS):  # an aggregator is never cited unmarked
            assert "secondary source" in e, e
    pr = next(e for e in entries if "vllm-project/vllm/pull/50647" in e)
    assert "title = {{vllm-project/vllm pull request \\#50647}}" in pr
    meta = pages.source_meta("https://aiposthub.cc/5152", {}, {})
    assert meta["secondary"] and meta["org"] == "AI Post Hub"
    assert meta["title"].startswith("Report of DeepSeek: Day 6")
    primary = pages.source_meta(pages.PRIMARY_OF["https://aiposthub.cc/5152"][0], {}, {})
    assert not primary["secondary"] and primary["org"] == "deepseek-ai"
    dated = pages.source_meta("https://lmsys.org/blog/2025-05-05-large-scale-ep", {}, {})
    assert (dated["org"], dated["date"]) == ("LMSYS (SGLang team)", "2025-05-05")


def test_the_landing_page_says_first_where_the_claims_come_from():
    """The claims come from a secondary French article attributing them to vLLM, its primary
    source not located as of the build date; the title promises a check, not a reproduction."""
    import datetime

    from rackbook import paths

    note = pages.source_note(today=datetime.date(2026, 12, 4))
    assert "secondary source, a French article" in note and "attributes them to vLLM" in note
    assert "not located as of 2026-12-04, this build's date" in note
    assert "[890 B/token](https://huggingface.co/papers/2609.19969)" in note  # the one confirmed
    # vLLM's own posts on the model are cited as related primary texts, never as "none exists"
    assert "(https://vllm.ai/blog/2026-10-07-deepseek-v41-flash)" in note
    assert "(https://vllm.ai/blog/2026-09-08-vllm-agentx)" in note
    assert "carry none of the write-up's" in note and "post was not located" not in note
    intro = (paths.ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    title = next(line for line in intro.splitlines() if line.startswith("# "))
    assert "checked" in title and "reproduc" not in intro.split("```{include}")[0]
    assert intro.index("generated/source-note.md") < intro.index("generated/at-a-glance.md")
    config = (paths.ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "reproduced" not in config


def test_params_cells_move_after_the_evidence():
    from rackbook.book.build import PROVENANCE_HEADING, params_after_provenance

    def md(text):
        return {"cell_type": "markdown", "metadata": {}, "source": [text]}

    params = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": ["x = 1"]}
    injected = {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": []}
    shown = {"cell_type": "code", "metadata": {}, "source": ["display(...)"]}
    cells = [md("# T"), params, injected, md("## Definitions"), md(PROVENANCE_HEADING), shown]
    cells.append(md("## Rerun it"))
    out = params_after_provenance(cells)
    order = [id(c) for c in out]
    assert order.index(id(params)) == order.index(id(shown)) + 1
    assert order.index(id(injected)) == order.index(id(params)) + 1
    assert order.index(id(params)) > order.index(id(cells[3]))  # after the definitions
    assert params_after_provenance(cells[:4]) == cells[:4]  # no provenance section: unchanged
