"""Published readings compare like with like (rackbook.results.evidence): a point decides only on
its claim's basis, each plausible basis is read on its own, registry edits flip the readings,
conversions follow their stated rules, and the headline files carry the sources, the basis and
the closest point."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rackbook import paths
from rackbook.core import basis
from rackbook.core.traces import read_trace
from rackbook.inputs import claims
from rackbook.results import evidence, rack_scaling, single_user

#: A published figure of exactly rack-scaling.throughput's basis on its cached-prefix reading:
#: V4.1-Flash on a 72-GPU GB300 NVL72 under vLLM, agentic, real speculation, input + output
#: counting the re-read cached prefix, per GPU of the deployment.
RACK_POINT = {
    "id": "test.rack-like-for-like",
    "claim": "rack-scaling.throughput",
    "role": "measurement",
    "value": 954000.0,
    "unit": "tok/s/GPU",
    "definition": "test point of the claim's basis",
    "model": "DeepSeek-V4.1-Flash",
    "hardware": "GB300 NVL72",
    "gpus": 72,
    "engine": "vLLM",
    "concurrency": 4096,
    "speculative": "DSpark",
    "submitter": "test",
    "url": "https://example.org/rack",
    "read": "2026-12-03",
    "quote": "test",
    "verified": True,
    "basis": {
        "metric": "throughput",
        "tokens": "input incl. cached+output",
        "per": "GPU",
        "gpus": "deployment",
        "workload": "agentic trace",
        "speculation": "real",
        "statistic": "rate",
        "serving": "disaggregated",
    },
}
CACHED = "per GPU, input + output counting each turn's re-read cached prefix"
RACK_TOTAL_CACHED = (
    "a rack total over 72 GPUs, input + output counting each turn's re-read cached prefix"
)

#: One user's speed of exactly single-user.throughput's basis on its median reading.
USER_POINT = {
    "id": "test.user-like-for-like",
    "claim": "single-user.throughput",
    "role": "measurement",
    "value": 826.0,
    "unit": "tok/s per user",
    "definition": "test point of the claim's basis",
    "model": "DeepSeek-V4.1-Flash",
    "hardware": "B300",
    "gpus": 4,
    "engine": "vLLM",
    "concurrency": 1,
    "speculative": "DSpark",
    "submitter": "test",
    "url": "https://example.org/user",
    "read": "2026-12-03",
    "quote": "test",
    "verified": True,
    "basis": {
        "metric": "per-user decode speed",
        "tokens": "output",
        "per": "user",
        "gpus": "deployment",
        "workload": "fixed lengths",
        "speculation": "real",
        "statistic": "median",
        "serving": "aggregated",
    },
}


@pytest.fixture
def data_with(tmp_path, monkeypatch):
    """A copy of data/claims.yaml and data/published/ with extra figures; paths.DATA points at
    it for the test (the evidence caches are keyed by the folder)."""

    shipped = paths.DATA

    def _make(*figures: dict) -> Path:
        root = tmp_path / f"data{len(list(tmp_path.iterdir()))}"
        root.mkdir()
        shutil.copy(shipped / "claims.yaml", root / "claims.yaml")
        shutil.copytree(shipped / "published", root / "published")
        reg = yaml.safe_load((root / "published" / "figures.yaml").read_text())
        reg["figures"] += [dict(f) for f in figures]
        (root / "published" / "figures.yaml").write_text(
            yaml.safe_dump(reg, sort_keys=False, allow_unicode=True)
        )
        monkeypatch.setattr(paths, "DATA", root)
        return root

    return _make


@pytest.mark.parametrize(
    "published,verdict",
    [(954000.0, "within"), (900000.0, "above"), (1_000_000.0, "below")],
)
def test_a_point_of_the_claims_basis_flips_rack_throughput(data_with, published, verdict):
    """One published figure of the claim's exact basis decides its reading on that basis (954k
    within its tolerance of 500 tok/s; 900k: above; 1M: below) and on the rack-total reading of
    the same tokens (954,000 / 72 = 13,250 per GPU: below), nowhere else. The combined verdict
    is the bases' common one, else depends on basis."""
    data_with(RACK_POINT | {"value": published})
    e = evidence.claim_evidence("rack-scaling.throughput")
    by = {b.name: b for b in e.bases}
    assert by[CACHED].verdict == verdict
    assert by[CACHED].decided_on == ("figures:test.rack-like-for-like",)
    assert by[CACHED].closest.kind == "like for like" and not by[CACHED].closest.differences
    assert by[CACHED].closest.ratio == pytest.approx(954000.0 / published)
    total = by[RACK_TOTAL_CACHED]
    assert total.verdict == "below" and total.closest.ratio == pytest.approx(13250 / published)
    others = {b.verdict for n, b in by.items() if n not in (CACHED, RACK_TOTAL_CACHED)}
    assert others == {"none published"}
    assert e.verdict == (verdict if verdict == "below" else evidence.DEPENDS)
    assert e.sources == ("https://example.org/rack",)
    assert e.closest.url == "https://example.org/rack"


def test_a_point_of_another_basis_never_decides(data_with):
    """The same figure on 8 GPUs, with a simulated acceptance, or of another model version is
    shown but decides nothing: no mixed bases."""
    for change in (
        {"gpus": 8},
        {"basis": RACK_POINT["basis"] | {"speculation": "simulated"}},
        {"model": "DeepSeek-V4-Flash-0731"},
    ):
        data_with(RACK_POINT | change)
        e = evidence.claim_evidence("rack-scaling.throughput")
        assert e.verdict == "none published", change
        assert not any(b.decided_on for b in e.bases), change


def test_bases_that_disagree_read_depends_on_basis(data_with):
    """A point of the cached-prefix basis at 954k (within) and one of the output basis at 1M
    (below): each basis is read on its own points and the combined verdict says they differ."""
    out = RACK_POINT | {
        "id": "test.rack-output",
        "value": 1_000_000.0,
        "basis": RACK_POINT["basis"] | {"tokens": "output"},
    }
    data_with(RACK_POINT, out)
    e = evidence.claim_evidence("rack-scaling.throughput")
    by = {b.name: b.verdict for b in e.bases}
    assert by[CACHED] == "within" and by["per GPU, output tokens"] == "below"
    assert e.verdict == evidence.DEPENDS
    # read as the rack's total (954,000 / 72 = 13,250 per GPU): below both points
    assert by["a rack total over 72 GPUs, output tokens"] == "below"


@pytest.mark.parametrize(
    "published,verdict", [(826.0, "within"), (700.0, "above"), (900.0, "below")]
)
def test_a_point_of_the_claims_basis_flips_single_user(data_with, published, verdict):
    """A median single-user speed of V4.1-Flash on 4 B300 with real speculation decides the
    median reading; the mean reading keeps its closest (vLLM on 4 GB300, 1.81x)."""
    data_with(USER_POINT | {"value": published})
    e = evidence.claim_evidence("single-user.throughput")
    by = {b.name: b for b in e.bases}
    assert by["median (P50) TPOT"].verdict == verdict
    assert by["mean TPOT"].verdict == "none published"
    assert by["mean TPOT"].closest.ratio == pytest.approx(826 / (1000 / 2.19))
    assert e.verdict == verdict and e.closest.id == "figures:test.user-like-for-like"


def test_no_reading_decides_on_mixed_bases():
    """On the shipped evidence, every point a reading decides on agrees with the claim's named
    basis in every decisive part, and all of them share one token kind, GPU counting, metric
    and statistic."""
    reg = claims.load_claims()
    pts = evidence.published_points().set_index("id")
    decided = 0
    for c in reg.claims:
        e = evidence.claim_evidence(c.id)
        named = dict((p.name, b) for p, b in evidence.claim_bases(c))
        for br in e.bases:
            if not br.decided_on:
                continue
            bases = [pts.loc[i, "basis"] for i in br.decided_on]
            keys = {(b.tokens, b.per, b.gpus, b.metric, b.statistic) for b in bases}
            assert len(keys) == 1, (c.id, br.name, keys)
            for b in bases:
                diffs = basis.differences(named[br.name], b, evidence.DECISIVE[c.id])
                assert not diffs, (c.id, br.name, diffs)
            decided += len(bases)
    assert decided == 3  # the InferenceX rental and ownership prices


def test_stated_conversions():
    """The cookbook's derived totals back to output (exact) and InferenceX's output split to
    output per GPU of a disaggregated deployment, each a point of its own with its rule."""
    p = evidence.published_points("rack-scaling").set_index("id")
    cb = p.loc["sglang-cookbook-v4:b300/flash/fp4/balanced/c64#output"]
    assert cb["value"] == pytest.approx(3812 * 1024 / (8192 + 1024))
    assert cb["basis"].tokens == "output" and "undone" in cb["conversion"]
    total = p.loc["sglang-cookbook-v4:b300/flash/fp4/balanced/c64"]
    assert total["basis"].tokens == "input+output" and pd.isna(total["conversion"])
    # no conversion of a row without the split, nor of one user's speed
    assert not any(i.endswith("#output") and "/c1#" in i for i in p.index)


def test_headline_files_carry_sources_basis_and_closest(tmp_path):
    """The published reading in each headline JSON names the basis it decided on, the URLs of
    the points it used, its closest like-for-like point (value, ratio, URL) and each named
    basis's reading."""
    an = rack_scaling.analyse(read_trace(paths.TRACES / "rack-scaling"))
    doc = json.loads(rack_scaling.outcome(an).write(tmp_path, "trace").read_text())
    pub = {r["claim_id"]: r for r in doc["readings"] if r["reading"] == "published"}
    cost = pub["rack-scaling.cost"]
    assert cost["verdict"] == "above" and cost["sources"]
    assert all(u.startswith("https://github.com/SemiAnalysisAI/") for u in cost["sources"])
    assert [b["name"] for b in cost["by_basis"]] == [
        "a rental price",
        "a list (on-demand) price",
        "a list price per 4-GPU instance-hour",
        "an ownership cost",
        "a token value at the model vendor's API prices",
    ]
    assert "rental price per GPU-hour" in cost["basis"]
    th = pub["rack-scaling.throughput"]
    assert len(th["by_basis"]) == 7 and th["closest"]["url"].startswith("https://")
    # the headline closest point is on a basis physics allows (counting the cached prefix),
    # not the per-GPU output basis physics rules out (954,000 / 904.78 = 1,054x): the node's
    # per-GPU throughput when 7.9x is a per-GPU ratio, 954,000 / 7.9 = 120,759
    assert th["closest"]["ratio"] == pytest.approx(954000 / 7.9 / 104429.47)
    assert th["ruled_out"] == [
        "per GPU, output tokens",
        "per GPU, input + output, cached prefix not counted",
    ]
    near = th["near"]
    assert near["low"] == pytest.approx(104429.47)
    assert near["high"] == pytest.approx(142565.09)
    assert near["ratio_low"] == pytest.approx(954000 / 7.9 / 142565.09)
    assert near["ratio_high"] == pytest.approx(954000 / 7.9 / 104429.47)
    assert len(near["per_basis"]) == 4
    for b in th["by_basis"]:
        assert b["closest"]["url"].startswith("https://") and b["closest"]["ratio"] > 0
    an = single_user.analyse(read_trace(paths.TRACES / "single-user"))
    doc = json.loads(single_user.outcome(an).write(tmp_path, "trace").read_text())
    su = next(r for r in doc["readings"] if r["reading"] == "published")
    assert su["closest"]["id"] == "figures:inferencex-pr3176.vllm-gb300-c1-tpot"
    assert su["closest"]["ratio"] == pytest.approx(1.81, abs=0.005)
    assert "statistic mean" in su["basis"] and "statistic median" in su["basis"]
