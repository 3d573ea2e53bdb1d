"""``rackbook check``: the physics of any serving claim, against hand calculations, every verdict
it can return, and its one-line errors."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import check

V41 = "deepseek-v4.1-flash"
DECODE_CAP_GB300 = 1 / (2 * 8_493_465_600 / 15e15 + 2 * 7_506_534_400 / 5e15)  # 241,834
PREFILL_CAP_GB300 = 1 / (2 * 4_246_732_800 / 15e15 + 2 * 3_753_267_200 / 5e15)  # 483,667


@pytest.mark.parametrize(
    "ratio,verdict",
    [
        (0.5, "possible"),
        (0.849, "possible"),
        (0.85, "possible"),  # a bound is a bound: no 15 % margin
        (1.0, "possible"),  # exactly at the least time the work can take
        (1.03, "impossible"),  # above 100 % of a peak
        (1.151, "impossible"),
        (float("inf"), "impossible"),
    ],
)
def test_verdict_thresholds(ratio, verdict):
    assert check.physics_verdict(ratio) == verdict


def test_rack_figure_per_gpu_is_impossible_as_computed_tokens():
    c = check.check_claim(V41, "gb300", 72, 954_000)
    assert c.limit == "compute" and c.verdict == "impossible"
    assert c.ceiling_tok_s_per_gpu == pytest.approx(DECODE_CAP_GB300)
    assert c.ratio == pytest.approx(954_000 / DECODE_CAP_GB300)  # 3.94x
    p = check.check_claim(V41, "gb300", 72, 954_000, phase="prefill")
    assert p.ratio == pytest.approx(954_000 / PREFILL_CAP_GB300) and p.verdict == "impossible"


def test_rack_figure_as_the_racks_total_is_possible():
    c = check.check_claim(V41, "gb300", 72, 954_000, per="total")
    assert c.claimed_tok_s_per_gpu == 954_000 / 72 == 13_250
    assert c.verdict == "possible" and c.ratio == pytest.approx(13_250 / DECODE_CAP_GB300)


def test_single_user_at_batch_one_on_four_hgx_b300():
    # one sequence on 4 GPUs: each reads a quarter of 12.0187 GB per step at 8 TB/s
    c = check.check_claim(V41, "b300", 4, 826, per="total", batch=1)
    step = 12_018_688_000 / 4 / 8e12
    assert c.limit == "memory bandwidth"
    assert c.ceiling_tok_s_per_gpu == pytest.approx(1 / step / 4)
    assert c.ratio == pytest.approx(826 / (32e12 / 12_018_688_000), rel=1e-9)  # 0.31
    # the bandwidth reading is not repeated under another name ("batch-1 floor" was a ceiling)
    assert [r.name for r in c.ceilings].count("memory bandwidth") == 1
    assert not any("floor" in r.name for r in c.ceilings)
    # speculation, acceptance 3.51, from the fewest bytes: the 6 verified tokens may all pick
    # the same 6 experts, so a step reads 7.5065 GB dense + 40 x 6 x 18,800,640 B = 4.5122 GB
    # + the 0.52 GB drafter = 12.5387 GB; / 32 TB/s = 391.8 us; 3.51 / 391.8 us = 8,958 tok/s
    step = (7_506_534_400 + 40 * 6 * 18_800_640 + 520_000_000) / 32e12
    s = check.check_claim(V41, "b300", 4, 826, per="total", batch=1, tokens_per_step=3.51)
    assert s.ceiling_tok_s_per_gpu * 4 == pytest.approx(3.51 / step) == pytest.approx(8_958, abs=1)
    assert s.ratio == pytest.approx(826 / 8_958, abs=1e-4) and s.verdict == "possible"
    # 4,000 tok/s single-user with speculation: 0.447x the bound, not impossible (was 1.21x
    # against uniform routing's 3,297)
    four = check.check_claim(V41, "b300", 4, 4000, per="total", batch=1, tokens_per_step=3.51)
    assert four.verdict == "possible" and four.ratio == pytest.approx(4000 / 8_958, abs=1e-4)
    fast = check.check_claim(V41, "b300", 4, 9000, per="total", batch=1, tokens_per_step=3.51)
    assert fast.verdict == "impossible"  # 9,000 > 8,958 tok/s: above the bandwidth bound


def test_batching_gains_from_the_fewest_bytes():
    # 4 users on 4 GB300 (the InferenceX shape, PR 3176, 904.78 tok/s/GPU published): a step
    # reads the dense weights once in all and the fewest experts, 7.5065 + 4.5122 = 12.0187 GB
    # / 32 TB/s = 375.6 us, and yields 4 tokens: 10,650 tok/s in total, 2,662.5 per GPU. The
    # old reading (every GPU re-reading the dense weights, uniform routing) said 671: 1.23x.
    step = (7_506_534_400 + 40 * 6 * 18_800_640) / 32e12
    c = check.check_claim(V41, "gb300", 4, 3304, per="total", batch=4)
    assert c.ceiling_tok_s_per_gpu == pytest.approx(4 / step / 4)  # 2,662.5
    assert c.verdict == "possible" and c.ratio == pytest.approx(826 * step, rel=1e-9)  # 0.310
    one = check.check_claim(V41, "gb300", 4, 3304, per="total", batch=1)
    two = check.check_claim(V41, "gb300", 4, 3304, per="total", batch=2)
    # 1, 2 and 4 users: 665.6, 1,331 and 2,662.5 per GPU (the same bytes, more tokens)
    assert [x.ceiling_tok_s_per_gpu for x in (one, two, c)] == pytest.approx(
        [1 / step / 4, 2 / step / 4, 4 / step / 4]
    )
    # 7,200 sequences on 72 GB300: 12.02 GB / 576 TB/s = 20.9 us per 7,200 tokens: 4.8M tok/s
    # per GPU of bandwidth; compute binds at 241,834: 100,000 per GPU is 0.414x
    big = check.check_claim(V41, "gb300", 72, 100_000, batch=7200)
    assert big.limit == "compute" and big.verdict == "possible"
    assert big.ratio == pytest.approx(100_000 / DECODE_CAP_GB300)


def test_prefill_kv_reads_are_shared_within_a_chunk():
    # 100k new tok/s behind an 855k prefix on one GB300: the 89.86 MB the encoder layers read
    # (1.5 rows x 68 B x 855,000 = 87.21 MB of index keys + 18 x 512 x 288 B = 2.654 MB of
    # rows) is read once per 256-token chunk: 351 kB per new token, 22.79M tok/s; compute
    # binds: 2.068 us + (1.5 x 855,000 x 16,384 + 18 x 512 x 131,072 + 20 x 128 x 131,072)
    # FLOP / 5 PFLOP/s = 2.068 + 4.203 + 0.242 + 0.067 = 6.579 us: 152,000 new tok/s
    c = check.check_claim(V41, "gb300", 72, 100_000, phase="prefill", context=855_000)
    kv = next(r for r in c.ceilings if r.name == "KV read")
    assert kv.tok_s_per_gpu == pytest.approx(8e12 / ((87_210_000 + 2_654_208) / 256), rel=1e-6)
    assert kv.phase == "prefill"
    assert kv.formula.endswith(
        "= 89.86 MB read once per chunk of 256 new tokens = 351 kB per new token; "
        "8 TB/s / 351 kB = 22,789,941 new tokens/s"
    )
    us = 1e6 / PREFILL_CAP_GB300 + (1.5 * 855_000 * 16_384 + 18 * 512 * 131_072) / 5e9
    us += 20 * 128 * 131_072 / 5e9
    assert c.limit == "compute" and c.verdict == "possible"
    assert c.ceiling_tok_s_per_gpu == pytest.approx(1e6 / us, rel=1e-6)  # about 152,000
    assert c.ratio == pytest.approx(0.658, abs=1e-3)


def test_cached_share_threshold_from_the_whole_workload():
    # 954,000 total tok/s per GPU, ISL 100k / OSL 1k, 72 GB300: 944,554.5 input and 9,445.5
    # output tok/s per GPU. Decode at 100,500 tokens binds on compute: 4.135 us + 8.411 GFLOP
    # / 5 PFLOP/s = 5.817 us (171,899/s): 9,445.5 / 171,899 = 0.05495 of the time. A new
    # token's prefix is 50,000 (1 + c) tokens: 2.068 us + (24,576 x 50,000 (1 + c) + 18 x 512
    # x 131,072 + 20 x 128 x 131,072) / 5e15 = 2.6215 + 0.2458 c us; possible when
    # 0.9445545 (1 - c)(2.6215 + 0.2458 c) <= 1 - 0.05495: (1 - c)(2.6215 + 0.2458 c) = 1.0005,
    # c = 0.640 (GEMMs alone, no attention and no decode, said 49.3 %)
    t = check.cached_share_threshold(V41, "gb300", 72, 954_000, counted="total", isl=1e5, osl=1e3)
    assert t.verdict == "undetermined" and t.share == pytest.approx(0.640, abs=0.002)
    assert t.ratio_cached == pytest.approx(9_445.5 / 171_899, rel=1e-3)
    # sufficient: every share above reads possible, just below reads impossible
    kw = dict(counted="total", isl=1e5, osl=1e3)
    for c in (t.share, 0.7, 0.9, 0.99):
        assert check.check_claim(V41, "gb300", 72, 954_000, cached_share=c, **kw).ratio <= 1
    assert check.check_claim(V41, "gb300", 72, 954_000, cached_share=0.63, **kw).ratio > 1
    low = check.cached_share_threshold(V41, "gb300", 72, 13_250, counted="total", isl=1e5, osl=1e3)
    assert (low.verdict, low.share) == ("possible", 0.0)
    high = check.cached_share_threshold(V41, "gb300", 72, 2e7, counted="total", isl=1e5, osl=1e3)
    assert (high.verdict, high.share) == ("impossible", None)


def test_decode_only_total_and_fractional_or_oversized_inputs_are_refused():
    kw = dict(counted="total", isl=1e5, osl=1e3)
    with pytest.raises(InputError, match="GPUs not among the 72"):
        check.check_claim(V41, "gb300", 72, 954_000, phase="decode", **kw)
    with pytest.raises(InputError, match="whole number of sequences"):
        check.check_claim(V41, "gb300", 4, 100, batch=0.5)
    with pytest.raises(InputError, match="keeps at most 6"):
        check.check_claim(V41, "gb300", 4, 100, tokens_per_step=64)


def test_prefill_reason_gives_the_bound_in_its_own_tokens():
    # 1M input tok/s, 60 % cached: 400,000 new against the 361,082 compute ceiling at a
    # 80,000-token prefix (1.108x); in input tokens that is 361,082 / 0.4 = 902,705
    c = check.check_claim(
        V41, "gb300", 72, 1e6, phase="prefill", isl=1e5, osl=1e3, cached_share=0.6
    )
    comp = next(r for r in c.ceilings if r.name == "compute")
    assert c.bounds["prefill"] == comp.tok_s_per_gpu
    assert c.ceiling_tok_s_per_gpu == pytest.approx(comp.tok_s_per_gpu / 0.4)
    assert f"ceiling of {comp.tok_s_per_gpu:,.0f} new input tok/s" in c.reason
    assert f"({comp.tok_s_per_gpu / 0.4:,.0f} input tok/s per GPU)" in c.reason


def test_speculative_compute_line_and_formula_agree():
    c = check.check_claim(V41, "b300", 4, 4000, per="total", batch=1, tokens_per_step=3.51)
    comp = c.ceilings[0]
    # 217,650 verified tokens/s per GPU x 3.51 kept / 6 verified = 127,325
    assert comp.tok_s_per_gpu == pytest.approx(217_650 * 3.51 / 6, rel=1e-4)
    assert comp.formula.endswith(f"= {comp.tok_s_per_gpu:,.0f} tokens/s kept")


def test_long_contexts_make_bandwidth_bind():
    # 72 sequences of 855k tokens on 72 GPUs, one each: a step reads 12.0187 GB of weights (the
    # fewest) + 72 x (170 B x 855,000 + 5,603,328 + 4,456,448 + 2,703,360 = 158,113,136 B) =
    # 11.384 GB: 23.403 GB / 576 TB/s = 40.63 us for 72 tokens: 24,612 tok/s per GPU, below
    # compute at that context (83,000): 13,250 per GPU is 0.538x
    c = check.check_claim(V41, "gb300", 72, 954_000, per="total", batch=72, context=855_000)
    step = (12_018_688_000 + 72 * (170 * 855_000 + 5_603_328 + 4_456_448 + 2_703_360)) / 576e12
    assert c.limit == "memory bandwidth" and c.verdict == "possible"
    assert c.ceiling_tok_s_per_gpu == pytest.approx(1 / step, rel=1e-9)
    assert c.ratio == pytest.approx(13_250 * step, rel=1e-9)  # 0.538


def test_h200_examples_plausible_and_impossible_and_fp4_note():
    ok = check.check_claim(V41, "h200", 8, 3_000)
    assert ok.verdict == "possible"
    assert any("no fp4 tensor cores" in n for n in ok.notes)
    # Hopper runs the FP4 experts at FP8: 1.979 PF / 32 GFLOP = 61,844 tok/s per GPU
    assert ok.ceilings[0].tok_s_per_gpu == pytest.approx(1.979e15 / 32e9)
    bad = check.check_claim(V41, "h200", 8, 100_000)
    assert bad.verdict == "impossible" and bad.ratio == pytest.approx(100_000 / (1.979e15 / 32e9))
    edge = check.check_claim(V41, "h200", 8, 1.979e15 / 32e9)
    assert edge.verdict == "possible"  # at the bound: possible (no margin)


def test_a_model_that_does_not_fit_is_impossible():
    c = check.check_claim(V41, "h200", 1, 10)
    assert c.verdict == "impossible" and c.limit == "memory capacity (weights)"
    assert c.reason.startswith("the weights do not fit") and "sequences per GPU" not in c.reason


def test_speculation_verifies_more_than_it_keeps():
    one = check.check_claim(V41, "gb300", 72, 1000)
    spec = check.check_claim(V41, "gb300", 72, 1000, tokens_per_step=3.51)
    # compute: a 6-token verify keeps 3.51 tokens
    assert spec.ceilings[0].tok_s_per_gpu == pytest.approx(one.ceilings[0].tok_s_per_gpu * 3.51 / 6)


def test_sensitivity_band_brackets_the_ratio():
    b = check.sensitivity(model=V41, gpu="gb300", gpus=72, tok_s=954_000)
    assert b.low < b.high and b.ratio == pytest.approx(954_000 / DECODE_CAP_GB300)
    # compute-bound, at peak: ratio x 0.8 at the low end, x 1.2 at the high end (a band of
    # bounds: no guessed kernel efficiency, which the attainable estimate measures instead)
    assert b.low == pytest.approx(b.ratio * 0.8, rel=1e-9)
    assert b.high == pytest.approx(b.ratio * 1.2, rel=1e-9)
    assert "40-60" not in b.text and "+/-20 % (at peak)" in b.text


@pytest.mark.parametrize(
    "argv,problem",
    [
        (["--model", "gpt-9", "--gpu", "gb300", "--gpus", "1", "--tok-s", "1"], "unknown model"),
        (["--model", V41, "--gpu", "a100", "--gpus", "1", "--tok-s", "1"], "unknown GPU"),
        (["--model", V41, "--gpu", "gb300", "--gpus", "1", "--tok-s", "0"], "--tok-s: must be"),
        (["--model", V41, "--gpu", "gb300", "--gpus", "1", "--tok-s", "-5"], "--tok-s: must be"),
        (["--model", V41, "--gpu", "gb300", "--gpus", "0", "--tok-s", "5"], "gpus"),
        (
            [
                "--model",
                "deepseek-v4-flash",
                "--gpu",
                "gb300",
                "--gpus",
                "8",
                "--tok-s",
                "5",
                "--context",
                "1000",
                "--kv-dtype",
                "fp4",
            ],
            "kv_cache.row_formats.fp4: row format not known",
        ),
        (
            [
                "--model",
                "deepseek-v3",
                "--gpu",
                "gb300",
                "--gpus",
                "8",
                "--tok-s",
                "5",
                "--kv-dtype",
                "fp4",
            ],
            "row format not known",
        ),
    ],
)
def test_cli_errors_are_one_line(run_cli, argv, problem):
    code, out, err = run_cli("check", *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and problem in err


def test_cli_json_is_the_last_line(run_cli):
    code, out, _ = run_cli(
        "check", "--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "954000", "--json",
        "--per", "gpu",
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[0].startswith("954,000 output tok/s per GPU (--per gpu)")
    d = json.loads(out.splitlines()[-1])
    assert set(d) == {"physics", "published", "this_run"}
    assert all({"verdict", "reason"} <= set(v) for v in d.values())
    p = d["physics"]
    assert p["verdict"] == "impossible" and p["limit"] == "compute"
    assert p["ratio"] == pytest.approx(954_000 / DECODE_CAP_GB300)
    assert p["ceiling_tok_s_per_gpu"] == pytest.approx(DECODE_CAP_GB300)
    assert {r["name"] for r in p["readings"]} >= {"compute", "memory bandwidth"}
    assert all(r["formula"] for r in p["readings"])
    assert d["this_run"]["verdict"] == "untested"
    # The one output-token point of V4.1-Flash on GB300 (InferenceX PR 3176) ran with a
    # simulated acceptance length: named with its difference, but it does not decide; no point
    # shares the figure's basis.
    pub = d["published"]
    assert pub["verdict"] == "none published" and pub["decided_on"] == []
    assert "output tokens; per GPU (deployment, 72 GPUs)" in pub["basis"]
    urls = {c["url"]: c for c in pub["closest"]}
    pr = urls["https://github.com/SemiAnalysisAI/InferenceX/pull/3176"]
    assert pr["value"] == pytest.approx(904.78)
    assert pr["mismatch"] == "GPU count: 4 (claim: 72); speculation: simulated (claim: unknown)"


def _points_like(wb, value: float, **changes):
    """One verified published measurement of basis ``wb`` (with ``changes``) at ``value``."""
    import pandas as pd

    stated = {"speculation": "none", "workload": "fixed lengths", "serving": "aggregated"}
    b = wb.replace(**(stated | changes))
    row = {
        "id": "hand:1", "role": "measurement", "value": value, "unit": "output tok/s/GPU",
        "model": b.model, "hardware": b.hardware, "gpus": b.gpu_count, "url": "https://x.test/1",
        "verified": True, "basis": b,
    }  # fmt: skip
    return pd.DataFrame([row])


@pytest.mark.parametrize(
    "value,changes,verdict",
    [
        (1_000.0, {}, "above"),  # 954,000 per GPU against one point of the same basis at 1,000
        (2_000_000.0, {}, "below"),
        (1_000.0, {"speculation": "simulated"}, "none published"),  # a model, not a measurement
        (1_000.0, {"tokens": "input+output"}, "none published"),  # counts other tokens
        (1_000.0, {"model": "deepseek-r1"}, "none published"),
        (1_000.0, {"hardware": "b300"}, "none published"),
        (1_000.0, {"gpu_count": 8}, "none published"),  # 8 GPUs are not the figure's 72
        (1_000.0, {"serving": "disaggregated"}, "above"),  # named, does not decide
    ],
)
def test_only_a_point_of_the_same_basis_decides(monkeypatch, value, changes, verdict):
    from rackbook.results import claim_check, evidence

    wb = claim_check.workload_basis(
        "deepseek-v4.1-flash", "gb300", 72, "output", None, None, None, None
    )
    monkeypatch.setattr(evidence, "published_points", lambda: _points_like(wb, value, **changes))
    # the records rackbook check reads (kept on disk for the shipped data) built afresh
    monkeypatch.setattr(claim_check, "published_per_gpu_points", claim_check.build_per_gpu_points)
    r = claim_check.published_for_workload(wb, 954_000.0)
    assert r["verdict"] == verdict, r["reason"]
    assert r["decided_on"] == ([] if verdict == "none published" else ["hand:1"])
    assert r["closest"][0]["url"] == "https://x.test/1"


def test_counted_total_with_a_cached_share_counts_the_cached_prefix():
    from rackbook.results import claim_check

    b = claim_check.workload_basis(
        "deepseek-v4.1-flash", "gb300", 4, "total", 114_400, 1_000, 0.9, 128
    )
    assert (b.tokens, b.isl, b.osl, b.cached_share, b.concurrency) == (
        "input incl. cached+output", 114_400, 1_000, 0.9, 128,
    )  # fmt: skip
    assert claim_check.workload_basis("m", "gb300", 4, "total", None, None, None, None).tokens == (
        "input+output"
    )


def test_the_agentic_inferencex_point_at_its_own_concurrency():
    """InferenceX AgentX, vLLM, DeepSeek-V4.1-Flash on 4 GB300 at concurrency 128: 104,429.47
    tok/s/GPU counted as input + output, 904.78 of it output (ISL/OSL about 114,400 / 1,000).
    Hand calculation, no prefix cache (the most demanding case):
    output 104,429 x 1,000 / 115,400 = 904.93, input 103,524.07 tok/s per GPU.
    Decode at 114,400 + 500 = 114,900 tokens, 128 sequences: a step reads at the fewest the
    dense weights once, 7,506,534,400 B, 40 x 6 experts x 18,800,640 B = 4,512,153,600 B, and
    128 x (170 x 114,900 + 5,603,328 + 4,456,448 + 2,703,360 = 32,296,136 B) = 4.1339 GB of
    context: 16.1526 GB / 32 TB/s = 504.77 us, so 32 / 504.77 us = 63,395 tok/s per GPU
    (compute at that context 1 / (4.13508 + 9.0013e9 / 5e15 us) = 168,483 is higher).
    Decode share 904.93 / 63,395 = 0.01427 (before: every GPU re-reading the dense weights
    and uniform routing, 3,599.7 and 0.2514).
    Prefill of a new token after 114,400 / 2 = 57,200 tokens, 20 encoder layers: 2.06754 us of
    GEMMs + (1.5 x 57,200 x 16,384 + 18 x 512 x 131,072 + 20 x 128 x 131,072) / 5e15 =
    0.58985 us: 2.65739 us (its reads, 8,488,608 B = 1.061 us, are less). Prefill share
    103,524.07 x 2.65739 us = 0.2751. Together 0.2894: possible at the run's own batch, not
    at an imagined one (before, the free batch of 16,384 decided)."""
    c = check.check_claim(
        V41, "gb300", 4, 104_429, counted="total", isl=114_400, osl=1_000, batch=128
    )
    assert c.phase == "mixed" and c.batch == 128
    assert c.fractions["decode"] == pytest.approx(904.93 / 63_395.4, rel=1e-4)
    assert c.fractions["prefill"] == pytest.approx(103_524.07 * 2.65739e-6, rel=1e-4)
    assert c.ratio == pytest.approx(0.2894, abs=2e-4) and c.verdict == "possible"
    mem = next(r for r in c.ceilings if r.name == "memory bandwidth")
    assert mem.tok_s_per_gpu == pytest.approx(63_395.4, rel=1e-5)


@pytest.mark.parametrize(
    "tok_s,verdict", [(300_000, "possible"), (600_000, "possible"), (650_000, "impossible")]
)
def test_counted_total_shares_the_gpus_time(tok_s, verdict):
    """72 GB300, ISL 8,192, OSL 1,024, half the input cached, 4,608 sequences in flight (64 per
    GPU); the figure counts input + output per GPU. Hand calculation per GPU:
    output = X x 1,024 / 9,216, new input = X x 8,192 / 9,216 x 0.5.
    Decode at 8,192 + 512 = 8,704 tokens: a step reads at the fewest 7,506,534,400 B dense
    once + 40 x 6 experts x 18,800,640 B = 4,512,153,600 B + 4,608 x (170 x 8,704 + 5,603,328
    + 4 x 8,704 x 68 + 2,703,360 = 12,153,856) = 56,004,968,448 B: 68.0237 GB / 576 TB/s =
    118.10 us, so 64 / 118.10 us = 541,929 tok/s of bandwidth; compute binds:
    1 / (4.13508 + 4.14817e9 / 5e15 us) = 201,422.
    Prefill after 8,192 x 0.5 + 8,192 x 0.25 = 6,144 tokens: 2.06754 us + (1.5 x 6,144 x
    16,384 + 18 x 512 x 131,072 + 20 x 128 x 131,072) / 5e15 = 2.40644 us: 415,552 tok/s.
    Ratio = X x (0.11111 / 201,422 + 0.44444 / 415,552) = X x 1.62116e-6: 300,000 -> 0.486,
    600,000 -> 0.973 (possible: no margin), 650,000 -> 1.054 (impossible)."""
    c = check.check_claim(
        V41, "gb300", 72, tok_s, counted="total", isl=8_192, osl=1_024, cached_share=0.5,
        batch=4_608,
    )  # fmt: skip
    assert c.ratio == pytest.approx(tok_s * 1.62116e-6, rel=1e-4) and c.verdict == verdict
    assert c.fractions["decode"] == pytest.approx(tok_s / 9 / 201_422, rel=1e-4)
    assert c.fractions["prefill"] == pytest.approx(tok_s * 4 / 9 / 415_552.0, rel=1e-4)


def test_capacity_names_what_does_not_fit():
    """1,000,000-token sequences on 72 GB300: 0.9 x 288 GB (the nameplate: no reported figure)
    = 259.2 GB, the 297.2 GB of weights / 72 = 4.128 GB a GPU (spread: the least a GPU must
    hold) all held by the 236 GB of Grace memory a GPU; 259.2 GB / (890 B x 1e6 + 2,703,360 B
    window) = 290 per GPU fit; 300 per GPU (21,600) do not: the KV cache, not the weights, and
    never "fits ... = 0 sequences"."""
    c = check.check_claim(V41, "gb300", 72, 1000, context=1_000_000, batch=21_600)
    assert (c.verdict, c.limit) == ("impossible", "memory capacity (KV cache)")
    assert c.reason.startswith("the KV cache does not fit: 21,600 sequences")
    assert "at most 290 per GPU" in c.reason and "= 0 sequences" not in c.reason
    assert 259.2e9 // (890 * 1_000_000 + 2_703_360) == 290
    ok = check.check_claim(V41, "gb300", 72, 1000, context=1_000_000, batch=72 * 290)
    assert ok.verdict == "possible"
    w = check.check_claim(V41, "h200", 1, 10)
    assert w.limit == "memory capacity (weights)" and "= 0 sequences" not in w.reason


@pytest.mark.parametrize(
    "extra,problem",
    [
        (["--context", "1e10"], "--context: must be a number from 0 to 100,000,000 (tokens)"),
        (["--context", "2e6"], "context: 2,000,000 tokens is out of range"),
        (["--batch", "1e12"], "--batch: must be a number from 1 to 10,000,000 (sequences)"),
        (["--concurrency", "inf"], "--concurrency: must be a finite number, got 'inf'"),
        (["--tok-s", "nan"], "--tok-s: must be a finite number"),
        (["--cached-share", "nan"], "--cached-share"),
        (["--cached-share", "1"], "--cached-share: must be a number from 0 to under 1"),
        (["--isl", "1000000", "--osl", "100000"], "out of range"),
        (["--counted", "total"], "total needs --isl and --osl"),
        (["--tokens-per-step", "1e9"], "--tokens-per-step: must be a number from 1 to 64"),
        (["--tokens-per-step", "64"], "so a step keeps at most 6"),  # DSpark drafts 5
        (["--concurrency", "0.5"], "--concurrency: must be a number from 1 to 10,000,000"),
        (
            ["--phase", "decode", "--counted", "total", "--isl", "1000", "--osl", "100"],
            "credits its prefill to GPUs not among the 72",
        ),
        (["--cached-share", "most"], "--cached-share: expected a number from 0 to under 1"),
        (["--batch", "8", "--concurrency", "8"], "not both"),
    ],
)
def test_out_of_range_workloads_are_one_error_line(run_cli, extra, problem):
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "5000", "--per", "gpu"]
    code, out, err = run_cli("check", *argv, *extra)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and problem in err
    assert out == ""


def test_without_per_several_gpus_read_as_their_total_and_say_so(run_cli):
    """ "Our 8 x H200 does 12,000 tok/s" is the eight GPUs' total: without --per a figure over
    several GPUs reads in total (said as assumed in the first line); --per gpu reads each
    GPU's; over one GPU the two agree. One user's 826 tok/s on 4 B300: 826 / 4 = 206.5."""
    argv = ["--model", V41, "--gpu", "b300", "--gpus", "4", "--tok-s", "826", "--batch", "1"]
    _, out, _ = run_cli("check", *argv, "--tokens-per-step", "3.51", "--json")
    first = out.splitlines()[0]
    assert first.startswith("826 output tok/s in total over 4 GPUs (assumed: --per not given")
    assert first.endswith(": 206.5 per GPU")
    d = json.loads(out.splitlines()[-1])["physics"]
    assert d["per"] == "total" and d["per_assumed"] is True
    assert d["claimed_tok_s_per_gpu"] == pytest.approx(206.5)
    _, same, _ = run_cli("check", *argv, "--tokens-per-step", "3.51", "--per", "total")
    assert same.splitlines()[0] == (
        "826 output tok/s in total over 4 GPUs (--per total): 206.5 per GPU"
    )
    # 206.5 / (8,958 / 4 = 2,239.5): 0.0922x the fewest-bytes bound
    assert "physics: possible (206 output tok/s per GPU is 0.092x" in same
    _, each, _ = run_cli("check", *argv, "--tokens-per-step", "3.51", "--per", "gpu")
    assert each.splitlines()[0] == "826 output tok/s per GPU (--per gpu): 826.0 per GPU"
    one = ["--model", V41, "--gpu", "b300", "--gpus", "1", "--tok-s", "826", "--batch", "1"]
    _, out, _ = run_cli("check", *one)
    assert out.splitlines()[0].startswith("826 output tok/s per GPU (one GPU: per GPU and in")


def test_this_run_reads_a_trace(run_cli):
    """The shipped rack-scaling trace ran on CPUs: the this-run reading is untested and says
    where it ran."""
    from rackbook import paths

    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "5000", "--per", "gpu"]
    code, out, _ = run_cli("check", *argv, "--trace", str(paths.TRACES / "rack-scaling"), "--json")
    d = json.loads(out.splitlines()[-1])
    assert code == 0 and d["this_run"]["verdict"] == "untested"
    assert "no trace given" not in d["this_run"]["reason"]


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf")])
def test_a_rate_computed_from_a_trace_that_is_not_positive_is_refused(rate):
    # the one guard left inside check_claim: chapters pass rates they computed, not flags
    with pytest.raises(InputError, match="tok_s: must be a positive number"):
        check.check_claim(V41, "gb300", 8, rate)


def test_the_rules_that_turn_on_the_model_and_the_gpus_hold_exactly_at_their_limits():
    top = catalogs.load_model(V41).architecture.max_context_tokens  # 1,048,576
    at_top = check.check_claim(V41, "gb300", 8, 1, phase="decode", context=top)
    assert at_top.work.decode_context == top
    with pytest.raises(InputError, match="1,048,577 tokens is out of range"):
        check.check_claim(V41, "gb300", 8, 1, phase="decode", context=top + 1)
    with pytest.raises(InputError, match="out of range: .* holds at most 1,048,576"):
        check.check_claim(V41, "gb300", 8, 1, isl=top, osl=1)
    # an ISL or an OSL alone is a decode figure, each up to the model's context
    assert check.check_claim(V41, "gb300", 8, 1, isl=top).phase == "decode"
    assert check.check_claim(V41, "gb300", 8, 1, osl=top).phase == "decode"
    # a batch of 65,536 per GPU may be named (then judged); one more is refused
    most = check.MAX_BATCH * 2
    assert check.check_claim(V41, "gb300", 2, 1, batch=most).batch == most
    with pytest.raises(InputError, match="131,073 sequences is out of range"):
        check.check_claim(V41, "gb300", 2, 1, batch=most + 1)


def test_the_workload_is_one_value_the_check_carries_and_shows_as_a_dict():
    c = check.check_claim(V41, "gb300", 72, 954_000, counted="total", isl=1e5, osl=1e3, batch=720)
    w = c.work
    # 954,000 total = 944,554.5 input + 9,445.5 output; none cached; ISL + OSL / 2 held
    assert w.output_tok_s_per_gpu == pytest.approx(954_000 * 1e3 / 101e3)
    assert w.new_input_tok_s_per_gpu == pytest.approx(954_000 * 1e5 / 101e3)
    assert (w.decode_context, w.prefill_prefix, w.concurrency) == (100_500, 50_000, 720)
    assert c.workload == dataclasses.asdict(w) and c.workload["isl"] == 1e5


def test_a_model_without_a_kv_layout_is_judged_on_compute_and_weights():
    m = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    m.kv_cache.owning_layers = m.kv_cache.compression_ratios = None
    c = check.check_claim(m, "gb300", 8, 1000)
    assert c.verdict == "possible" and any("KV layout unknown" in n for n in c.notes)


def test_a_phase_the_catalog_cannot_judge(tmp_path):
    import yaml

    from rackbook import paths

    raw = yaml.safe_load((paths.DATA / "models" / "deepseek-v4-flash.yaml").read_text())
    raw["params"]["active"] = None
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError, match="params.active_decode: unknown in the model catalog"):
        check.check_claim(str(f), "gb300", 8, 1000)


def _threshold_of(curve, **kw):
    """:func:`check.cached_share_threshold` with the reading ``curve(cached share)`` (prefill only:
    the cheapest check), so each case sets where the figure turns possible."""
    return check.cached_share_threshold(
        V41, "gb300", 8, 1000.0, reading=lambda c: curve(c.work.cached_share), phase="prefill", **kw
    )


def test_cached_share_threshold_on_a_grid_point_is_found_exactly():
    # 40 even shares: 0.5 is the 20th; every share below reads 2x, from it on 0.5x
    t = _threshold_of(lambda s: 2.0 if s < 0.5 else 0.5)
    assert (t.share, t.verdict, t.ratio_uncached, t.ratio_cached) == (0.5, "undetermined", 2.0, 0.5)
    assert "50 %" in t.formula


def test_cached_share_threshold_at_exactly_the_bound_is_possible_at_any_share():
    t = _threshold_of(lambda s: 1.0)  # a bound is a bound: 1.0 is possible
    assert (t.share, t.verdict) == (0.0, "possible")
    over = _threshold_of(lambda s: 1.0 + 1e-9)
    assert (over.share, over.verdict) == (None, "impossible")


def test_cached_share_threshold_reads_all_but_the_last_token_cached_last():
    # the last share tried is 1 - 1e-6 (a share of 1 would leave no new token)
    t = _threshold_of(lambda s: s)
    assert t.ratio_cached == 1 - 1e-6 and t.ratio_uncached == 0.0
    assert (t.share, t.verdict) == (0.0, "possible")


def test_cached_share_threshold_bisects_the_last_crossing_only():
    # impossible below 25 %, and again on [50 %, 51 %): the last crossing (51 %) is the answer,
    # to within the tolerance of 1e-4 from above
    t = _threshold_of(lambda s: 2.0 if s < 0.25 or 0.5 <= s < 0.51 else 0.5)
    assert t.verdict == "undetermined" and 0.51 <= t.share < 0.51 + 1e-4
    # impossible up to 98 %: the crossing lies between the 40th share (97.5 %) and the last
    late = _threshold_of(lambda s: 2.0 if s < 0.98 else 0.5)
    assert late.verdict == "undetermined" and 0.98 <= late.share < 0.98 + 1e-4
    # a share read at exactly the bound while bisecting is possible: the crossing is 28 %
    edge = _threshold_of(lambda s: 2.0 if s < 0.28 else 1.0)
    assert 0.28 <= edge.share < 0.28 + 1e-4


def test_cached_share_threshold_states_the_figure_and_the_verdict():
    kw = dict(reading=lambda c: 0.5, phase="prefill")
    t = check.cached_share_threshold(V41, "gb300", 8, 1_234_567.89, **kw)
    assert t.formula.startswith("1,234,570 tok/s: 0.5x the bound uncached, 0.5x with")  # 6 figures
    assert t.verdict == "possible" and "possible at any cached share" in t.formula
    never = _threshold_of(lambda s: 3.0)
    assert never.verdict == "impossible" and "impossible at any cached share" in never.formula


def test_time_shares_count_only_the_phases_the_workload_has():
    w = check.Workload(output_tok_s_per_gpu=100.0, new_input_tok_s_per_gpu=0.0)
    assert check.time_shares(w, {"decode": 400.0, "prefill": 1000.0}) == {"decode": 0.25}
    both = check.Workload(output_tok_s_per_gpu=100.0, new_input_tok_s_per_gpu=300.0)
    # a phase with no rate takes all the time there is
    assert check.time_shares(both, {"decode": 0.0, "prefill": 600.0}) == {
        "decode": math.inf,
        "prefill": 0.5,
    }


def test_finite_blanks_only_the_named_non_finite_numbers():
    d = {"a": math.inf, "b": math.nan, "c": 1.5, "d": -math.inf}
    assert check.finite(d, ("a", "b", "c")) == {"a": None, "b": None, "c": 1.5, "d": -math.inf}


@pytest.mark.parametrize(
    "ratio,verdict",
    [
        (0.0, "possible"),
        (1.0 + 1e-12, "impossible"),
        (math.nan, "impossible"),
        (-math.inf, "impossible"),
    ],
)
def test_verdict_of_a_ratio_that_is_not_a_number_is_impossible(ratio, verdict):
    assert check.physics_verdict(ratio) == verdict


@pytest.mark.parametrize(
    "start,cap,sizes",
    [
        (1, 5, [1, 2, 4, 5]),
        (1, 4, [1, 2, 4]),
        (1, 1, [1]),
        (3, 20, [3, 6, 12, 20]),
        (1.0, 6.5, [1.0, 2.0, 4.0, 6.5]),
    ],
)
def test_doublings_end_at_the_cap(start, cap, sizes):
    assert check.doublings(start, cap) == sizes


def test_memory_ceiling_per_gpu_and_its_arithmetic():
    # 4 sequences on 4 GB300: 12.0187 GB a step / 32 TB/s = 375.6 us; 4 tokens a step
    m, g = catalogs.as_model(V41), catalogs.as_gpu("gb300")
    step = (7_506_534_400 + 40 * 6 * 18_800_640) / 32e12
    mc = check.memory_ceiling(m, g, 4, 4)
    assert (mc.name, mc.phase) == ("memory bandwidth", "decode")
    assert mc.tok_s_per_gpu == pytest.approx(4 / step / 4, rel=1e-9)
    assert mc.formula.endswith("/ 4 GPUs = 2,663 tok/s per GPU")
    # keeping 3.51 tokens of a 6-token verify: x 3.51 over a step that also reads the drafter
    spec = check.memory_ceiling(m, g, 4, 4, check.Workload(tokens_per_step=3.51, verify_tokens=6))
    step6 = (7_506_534_400 + 40 * 6 * 18_800_640 + 520_000_000) / 32e12
    assert spec.tok_s_per_gpu == pytest.approx(4 * 3.51 / step6 / 4, rel=1e-9)
    # active parameters x 0.8 read 0.8 of the weights
    low = check.memory_ceiling(m, g, 4, 4, active_scale=0.8)
    assert low.tok_s_per_gpu == pytest.approx(mc.tok_s_per_gpu / 0.8, rel=1e-9)


def test_usable_memory_is_nine_tenths_of_what_the_gpu_reports():
    assert check.usable_bytes(catalogs.as_gpu("gb300")) == 0.9 * 288e9  # nameplate: none reported
    assert check.usable_bytes(catalogs.as_gpu("h200")) == 0.9 * 150_754_820_096


def test_narrowest_kv_dtype_is_the_first_precision_with_a_row_format():
    assert check.narrowest_kv_dtype(catalogs.as_model(V41)) == "fp4"
    assert check.narrowest_kv_dtype(catalogs.as_model("deepseek-v3")) == "fp8"
    m = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    none = {"fp4": None, "fp8": None, "bf16": None}
    empty = m.model_copy(deep=True)
    empty.kv_cache.row_formats = m.kv_cache.row_formats.model_copy(update=none)
    assert check.narrowest_kv_dtype(empty) is None  # a table with no format in it
    empty.kv_cache.row_formats = None
    assert check.narrowest_kv_dtype(empty) is None
    m.kv_cache.compression_ratios = None
    assert check.narrowest_kv_dtype(m) is None


def test_capacity_by_hand_spread_dense_and_offloaded():
    """DeepSeek-V4.1-Flash, 100,000-token sequences: 89,000,000 B of KV + 2,703,360 B window =
    91,703,360 B; 0.9 x 288 GB = 259.2 GB usable a GB300; 297,196,032,000 B of weights."""
    m, g = catalogs.as_model(V41), catalogs.as_gpu("gb300")
    per_seq, usable = 91_703_360, 259.2e9
    spread = check.capacity(m, g, 72, context=100_000)  # all weights spread: 4.128 GB a GPU
    assert spread.per_sequence_bytes == per_seq and spread.weights_bytes == 297_196_032_000 / 72
    assert spread.sequences == (usable - 297_196_032_000 / 72) // per_seq == 2_781
    assert spread.free_bytes == usable - 297_196_032_000 / 72
    # dense weights on every GPU (tp 1), KV in 4 groups: 1,947 a GPU, 7,788 on 4
    dp = check.capacity(m, g, 4, context=100_000, tp=1)
    assert dp.weights_bytes == 8_418_201_600 + 288_777_830_400 / 4
    assert dp.sequences == 4 * 1_947 and dp.formula.endswith("= 1,947 sequences per GPU")
    # tp 4: dense weights split 4 ways, every rank holds every sequence: one group
    tp4 = check.capacity(m, g, 4, context=100_000, tp=4)
    assert tp4.weights_bytes == (8_418_201_600 + 288_777_830_400) / 4 and tp4.sequences == 2_016
    # offload: the 4.128 GB go to the 236 GB of Grace memory, all of HBM holds KV
    off = check.capacity(m, g, 72, context=100_000, offload=True)
    assert off.offloaded_bytes == 297_196_032_000 / 72 and off.free_bytes == usable
    assert off.sequences == usable // per_seq == 2_826
    # more weights than the host holds: 236 GB offloaded, 64 GB left in HBM
    big = check.capacity(m, g, 72, context=100_000, weights=300e9, offload=True)
    assert big.offloaded_bytes == 236e9 and big.free_bytes == usable - 64e9
    assert big.sequences == (usable - 64e9) // per_seq and big.what_does_not_fit is None
    # the caller's HBM, weights and most
    assert check.capacity(m, g, 72, context=100_000, hbm=100e9).usable_bytes == 100e9
    assert check.capacity(m, g, 72, context=100_000, hbm=100e9).sequences == 1_045
    assert check.capacity(m, g, 72, context=100_000, weights=50e9).sequences == 2_281
    assert check.capacity(m, g, 72, context=1_000).sequences == check.MAX_BATCH == 65_536
    assert check.capacity(m, g, 72, context=1_000, most=100).sequences == 100
    # no KV dtype: the window alone; no window either: as many as allowed
    assert check.capacity(m, g, 72, context=100_000, kv_dtype=None).per_sequence_bytes == 2_703_360
    bare = check.capacity(m, g, 72, context=100_000, kv_dtype=None, window=False)
    assert (bare.per_sequence_bytes, bare.sequences) == (0.0, check.MAX_BATCH)
    # no context named: a sequence holds its window only
    assert check.capacity(m, g, 72).per_sequence_bytes == 2_703_360
    # a GPU without host memory offloads nothing
    h200 = check.capacity(m, catalogs.as_gpu("h200"), 8, context=1000, offload=True)
    assert h200.offloaded_bytes == 0.0 and h200.weights_bytes == 297_196_032_000 / 8


def test_capacity_at_its_edges_names_what_does_not_fit():
    m, g = catalogs.as_model(V41), catalogs.as_gpu("gb300")
    usable, one = 259.2e9, 3_593_360  # a 1,000-token sequence: 890,000 B KV + 2,703,360 B window
    assert check.capacity(m, g, 72, context=1_000).per_sequence_bytes == one
    full = check.capacity(m, g, 72, context=1_000, weights=usable)  # weights fill the HBM
    assert (full.sequences, full.what_does_not_fit) == (0, "weights")
    short = check.capacity(m, g, 72, context=1_000, weights=usable - 1)  # 1 B left for KV
    assert (short.sequences, short.what_does_not_fit) == (0, "KV cache")
    # no bytes per sequence still needs some room left
    none = check.capacity(m, g, 72, weights=usable, kv_dtype=None, window=False)
    assert (none.sequences, none.what_does_not_fit) == (0, "weights")
    # room for exactly one sequence: it fits
    exact = check.capacity(m, g, 72, context=1_000, weights=1e9, hbm=1e9 + one)
    assert (exact.sequences, exact.what_does_not_fit) == (1, None)
    less = check.capacity(m, g, 72, context=1_000, weights=1e9, hbm=1e9 + one - 1)
    assert (less.sequences, less.what_does_not_fit) == (0, "KV cache")
    # with Grace memory: weights up to HBM + host are held, at it they are not
    at = check.capacity(m, g, 72, context=1_000, weights=usable + 236e9, offload=True)
    assert at.what_does_not_fit == "weights"
    below = check.capacity(m, g, 72, context=1_000, weights=usable + 236e9 - 1, offload=True)
    assert below.what_does_not_fit == "KV cache"
    # the longest sequence must fit too, not only the average one
    long = check.capacity(m, g, 72, context=1_000, longest=300e9 / 890)
    assert long.per_sequence_bytes == one and long.sequences == 0
    assert long.what_does_not_fit == "KV cache"


def test_what_a_figure_counts_sets_its_phase_and_each_phase_s_rate():
    # prefill named: input tokens, no decode, none of the decode readings
    p = check.check_claim(V41, "gb300", 8, 1000.0, phase="prefill")
    assert (p.phase, p.counted, p.limit, p.batch, p.notes) == (
        "prefill",
        "input",
        "compute",
        None,
        [],
    )
    assert (p.work.output_tok_s_per_gpu, p.work.new_input_tok_s_per_gpu) == (0.0, 1000.0)
    assert p.ratio == pytest.approx(1000 / PREFILL_CAP_GB300, rel=1e-9)
    assert [r.name for r in p.ceilings] == ["memory capacity", "compute"]
    # input counted: a prefill figure
    assert check.check_claim(V41, "gb300", 8, 1000.0, counted="input").phase == "prefill"
    # ISL and OSL: both phases; 1,000 output tok/s bring 1,000 x 1,000 / 100 = 10,000 input
    m = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100)
    assert (m.phase, m.counted) == ("mixed", "output")
    w = m.work
    assert (w.output_tok_s_per_gpu, w.new_input_tok_s_per_gpu) == (1000.0, 10_000.0)
    assert (w.decode_context, w.prefill_prefix) == (1000 + 100 / 2, 1000 / 2)
    assert m.fractions == {
        "decode": 1000 / m.bounds["decode"],
        "prefill": 10_000 / m.bounds["prefill"],
    }
    assert m.ratio == sum(m.fractions.values()) and m.ceiling_tok_s_per_gpu == 1000 / m.ratio
    # the larger share names the limit, with its phase
    assert m.fractions["prefill"] > m.fractions["decode"] and m.limit == "prefill compute"
    # one sequence of ISL 100 / OSL 1,000: decode's bandwidth takes most of the time
    dec = check.check_claim(V41, "gb300", 8, 100.0, isl=100, osl=1000, batch=1)
    assert (
        dec.fractions["decode"] > dec.fractions["prefill"]
        and dec.limit == "decode memory bandwidth"
    )
    # input counted: 1,000 input bring 1,000 x 100 / 1,000 = 100 output
    i = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100, counted="input")
    assert (i.work.output_tok_s_per_gpu, i.work.new_input_tok_s_per_gpu) == (100.0, 1000.0)
    # one phase named of a mixed workload: the other's rate is not the GPUs'
    d = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100, phase="decode")
    assert (d.work.output_tok_s_per_gpu, d.work.new_input_tok_s_per_gpu) == (1000.0, 0.0)
    assert d.limit == "compute" and list(d.fractions) == ["decode"]
    pre = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100, phase="prefill")
    assert (pre.work.output_tok_s_per_gpu, pre.work.new_input_tok_s_per_gpu) == (0.0, 1000.0)
    # without both ISL and OSL the other phase's rate is unknown: none is counted
    for kw in (
        dict(phase="mixed"),
        dict(phase="mixed", counted="input"),
        dict(counted="input", isl=1000),
    ):
        w = check.check_claim(V41, "gb300", 8, 1000.0, **kw).work
        counted = w.new_input_tok_s_per_gpu if w.counted == "input" else w.output_tok_s_per_gpu
        other = w.output_tok_s_per_gpu if w.counted == "input" else w.new_input_tok_s_per_gpu
        assert (counted, other) == (1000.0, 0.0)


def test_a_cached_share_moves_the_prefix_and_leaves_the_new_input():
    # half of 1,000 input tokens cached: a new token sits behind 500 + 500 / 2 = 750 tokens;
    # 10,000 input tok/s, 5,000 of them new
    c = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100, cached_share=0.5)
    assert (c.work.prefill_prefix, c.work.new_input_tok_s_per_gpu) == (750.0, 5000.0)
    assert c.work.cached_share == 0.5
    # a context given is the decode context; without ISL it is also the prefill prefix
    ctx = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100, context=3000)
    assert (ctx.work.decode_context, ctx.work.prefill_prefix) == (3000, 500)
    alone = check.check_claim(V41, "gb300", 8, 1000.0, context=3000, batch=4)
    assert (alone.work.decode_context, alone.work.prefill_prefix) == (3000, 3000)


def test_a_total_over_the_gpus_is_divided_among_them():
    c = check.check_claim(V41, "gb300", 8, 8000.0, per="total")
    assert c.claimed_tok_s_per_gpu == 1000.0 and c.work.output_tok_s_per_gpu == 1000.0
    assert c.ratio == pytest.approx(1000 / DECODE_CAP_GB300, rel=1e-9)
    each = check.check_claim(V41, "gb300", 8, 8000.0, per="gpu")
    assert each.claimed_tok_s_per_gpu == 8000.0


@pytest.mark.parametrize(
    "kw,field",
    [
        (dict(counted="total", isl=1000), "counted"),  # no OSL: cannot split
        (dict(counted="total", osl=100), "counted"),
        (dict(phase="prefill", counted="output"), "counted"),
        (dict(phase="decode", counted="input"), "counted"),
        (dict(batch=0), "concurrency"),
        (dict(batch=2.5), "concurrency"),
        (dict(phase="decode", counted="total", isl=1000, osl=100), "phase"),
        (dict(context=2_000_000), "context"),
        (dict(batch=8 * 65_536 + 1), "batch"),
    ],
)
def test_a_workload_that_cannot_be_read_is_refused_by_field(kw, field):
    with pytest.raises(InputError) as e:
        check.check_claim(V41, "gb300", 8, 1000.0, **kw)
    assert (e.value.file, e.value.field) == ("-", field)
    if field == "counted" and "phase" in kw:  # the phase and the tokens it does not count
        assert kw["phase"] in e.value.problem and kw["counted"] in e.value.problem
    if field == "batch":  # 65,536 a GPU at most: 524,288 on 8
        assert e.value.problem.endswith("at most 65,536 per GPU (524,288 on 8 GPUs)")


def test_a_rate_that_is_not_a_number_is_refused():
    with pytest.raises(InputError) as e:
        check.check_claim(V41, "gb300", 8, "1000")  # type: ignore[arg-type]
    assert (e.value.file, e.value.field) == ("-", "tok_s")


def test_a_context_on_a_model_without_a_kv_layout_is_refused_by_its_file():
    m = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    m.kv_cache.owning_layers = m.kv_cache.compression_ratios = None
    for kw in (dict(context=1000), dict(isl=1000, osl=100)):
        with pytest.raises(InputError) as e:
            check.check_claim(m, "gb300", 8, 1000.0, **kw)
        assert (e.value.file, e.value.field) == (m.file, "kv_cache")
        assert "KV layout unknown" in e.value.problem
    # without a context it is judged, on what it has
    c = check.check_claim(m, "gb300", 8, 1000.0)
    assert c.work.kv_dtype is None and not any("no context given" in n for n in c.notes)


def test_no_context_is_said_only_where_decode_reads_one():
    def said(**kw):
        c = check.check_claim(V41, "gb300", 8, 1000.0, **kw)
        return any("no context given" in n for n in c.notes)

    assert said() and said(phase="decode") and said(phase="mixed")
    assert not said(context=1000) and not said(isl=1000, osl=100) and not said(phase="prefill")


def test_best_batch_is_the_first_doubling_whose_bandwidth_reaches_compute():
    # 100,000-token sequences on 4 GB300: 664, 1,325, 2,636, 5,222 tok/s per GPU at 1, 2, 4 and
    # 8 sequences (context reads included)
    m, g = catalogs.as_model(V41), catalogs.as_gpu("gb300")
    w = check.Workload(decode_context=100_000)
    at = [check.memory_ceiling(m, g, 4, b, w).tok_s_per_gpu for b in (1, 2, 4, 8)]
    assert at == pytest.approx([663.99, 1324.70, 2636.41, 5221.59], abs=0.01)
    b, r = check._best_batch(m, g, 4, 1024, 5000.0, w, 1.0)  # compute at 5,000: 8 reaches it
    assert (b, r.tok_s_per_gpu) == (8, at[3]) and r.formula.endswith("(best batch 8)")
    one, r1 = check._best_batch(m, g, 4, 1024, 1.0, w, 1.0)  # one sequence is already enough
    assert (one, r1.tok_s_per_gpu) == (1, at[0])
    # compute never reached: the most that fit, at the workload's context and active scale
    most, rm = check._best_batch(m, g, 4, 1024, 1e9, w, 0.8)
    assert most == 1024 and rm.formula.endswith("(best batch 1,024)")
    assert rm.tok_s_per_gpu == check.memory_ceiling(m, g, 4, 1024, w, 0.8).tok_s_per_gpu


def test_the_reason_names_the_numbers_of_the_binding_reading():
    # mixed: each phase's share of the time, their sum and the workload's ceiling
    m = check.check_claim(V41, "gb300", 8, 1000.0, isl=1000, osl=100)
    f = m.fractions
    assert f"decode {f['decode']:.3g} + prefill {f['prefill']:.3g} = " in m.reason
    assert (
        f"{m.ceiling_tok_s_per_gpu:,.0f} output tok/s per GPU" in m.reason and "GB300" in m.reason
    )
    # decode alone at the best batch: the ceiling is the bound, and the batch is named
    d = check.check_claim(V41, "gb300", 8, 1000.0)
    assert (
        d.ceiling_tok_s_per_gpu == pytest.approx(d.bounds["decode"], rel=1e-12) and d.batch == 512
    )
    assert f"ceiling of {d.bounds['decode']:,.0f} output tok/s per GPU" in d.reason
    assert d.reason.endswith("with 512 sequences decoding together")
    assert f"({d.ceiling_tok_s_per_gpu:,.0f}" not in d.reason
    # prefill: new input tokens, no batch
    p = check.check_claim(V41, "gb300", 8, 1000.0, phase="prefill")
    assert f"prefill compute ceiling of {p.bounds['prefill']:,.0f} new input tok/s" in p.reason
    assert (
        "decoding together" not in p.reason and f"({p.ceiling_tok_s_per_gpu:,.0f}" not in p.reason
    )
    # a model that does not fit: the first note says why; without one, that it does not fit
    w = check.check_claim(V41, "h200", 1, 10)
    assert w.reason == w.notes[0] and w.ratio == math.inf and w.ceiling_tok_s_per_gpu == 0.0
    bare = dataclasses.replace(w, notes=[])
    assert bare.reason == "the model does not fit"


def test_a_figure_that_does_not_fit_reads_capacity_only():
    # 21,600 sequences of 1M tokens on 72 GB300: 290 a GPU fit (see above); no rate is read
    c = check.check_claim(V41, "gb300", 72, 1000, context=1_000_000, batch=21_600)
    assert c.ratio == math.inf and c.batch == 21_600 and c.fractions == {} and c.bounds == {}
    assert [r.name for r in c.ceilings] == ["compute", "memory capacity"]
    assert c.ceilings[1].tok_s_per_gpu == math.inf  # some fit, only not that many
    assert c.notes[0].startswith("the KV cache does not fit: 21,600 sequences")
    assert "need 267.8 GB per GPU" in c.notes[0]  # 300 a GPU x 892,703,360 B
    w = check.check_claim(V41, "h200", 1, 10)
    assert (w.batch, w.ceilings[1].tok_s_per_gpu) == (None, 0.0)  # nothing fits
    assert w.notes[0].endswith("on " + catalogs.as_gpu("h200").name)


def _relative_model(factor: float = 2.0):
    """DeepSeek-V4-Flash with its KV layout given only as ``factor`` x DeepSeek-V4.1-Flash's."""
    m = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    m.kv_cache.compression_ratios = m.kv_cache.owning_layers = None
    m.kv_cache.relative_to = catalogs.KvRelative(model=V41, factor=factor, approximate=True)
    return m


def test_sequence_bytes_of_a_layout_given_relative_to_another():
    v41 = catalogs.as_model(V41)
    # 1,000 tokens of DeepSeek-V4.1-Flash: 890,000 B KV + 2,703,360 B window
    assert check.sequence_bytes(v41, 1000, "fp4", relative=False, window=True) == 3_593_360
    assert check.sequence_bytes(v41, 1000, "fp4", relative=True, window=True) == 3_593_360
    assert check.sequence_bytes(v41, 999.5, "fp4", relative=False, window=False) == 890_000  # up
    rel = _relative_model()
    assert check.sequence_bytes(rel, 1000, "fp4", relative=True, window=True) == 2 * 3_593_360
    assert check.sequence_bytes(rel, 1000, "fp4", relative=True, window=False) == 2 * 890_000
    # no KV dtype: a relative reading counts nothing, a plain one the model's own window
    assert check.sequence_bytes(rel, 1000, None, relative=True, window=True) == 0.0
    assert check.sequence_bytes(v41, 1000, None, relative=True, window=True) == 0.0
    assert check.sequence_bytes(v41, 1000, None, relative=False, window=True) == 2_703_360
    with pytest.raises(InputError) as e:  # read as its own, the layout is unknown
        check.sequence_bytes(rel, 1000, "fp4", relative=False, window=True)
    assert e.value.field == "kv_cache.compression_ratios"


def test_the_decode_compute_reading_keeps_what_a_verify_keeps():
    # DeepSeek-R1 has no drafter: 1.5 tokens kept a step verify 2; 106,943 x 1.5 / 2 = 80,207
    c = check.check_claim("deepseek-r1", "gb300", 8, 1000.0, tokens_per_step=1.5)
    comp = c.ceilings[0]
    assert (comp.name, comp.phase, c.work.verify_tokens) == ("compute", "decode", 2)
    assert comp.tok_s_per_gpu == pytest.approx(80_207.38, abs=0.01)
    assert comp.formula.endswith(
        "verifies 2 tokens and keeps 1.5: 106,943 x 1.5 / 2 = 80,207 tokens/s kept"
    )
    plain = check.check_claim(V41, "gb300", 8, 1000.0).ceilings[0]  # one token: nothing kept apart
    assert plain.phase == "decode" and plain.formula.endswith("= 241,834 tokens/s")


def test_the_longest_sequence_must_fit_not_only_the_average_one():
    """ISL 1,000,000 + OSL 48,576: a sequence holds 1,024,288 tokens on average (914.3 MB) and
    1,048,576 at its end (935.9 MB). An H100 reporting just enough HBM to leave 925.1 MB a GPU
    after 37.15 GB of weights (8 GPUs) holds the average sequence but not its end."""
    m = catalogs.as_model(V41)
    held, longest = 1_024_288, 1_048_576
    per = [check.sequence_bytes(m, t, "fp4", relative=False, window=True) for t in (held, longest)]
    assert per == [914_319_680, 935_936_000]
    weights = 297_196_032_000 / 8
    g = catalogs.as_gpu("h100-sxm").model_copy(update={"hbm_reported_bytes": 42_305_146_489})
    free = check.usable_bytes(g) - weights
    assert per[0] < free < per[1]
    assert check.capacity(m, g, 8, context=held).sequences == 1
    c = check.check_claim(m, g, 8, 10.0, isl=1_000_000, osl=48_576)
    assert (c.verdict, c.limit) == ("impossible", "memory capacity (KV cache)")
    assert "1,048,576 tokens" in c.notes[0]


def test_the_free_batch_is_read_at_the_workload_s_context_and_said():
    m, g = catalogs.as_model(V41), catalogs.as_gpu("gb300")
    c = check.check_claim(V41, "gb300", 4, 1000.0, context=100_000)
    mem = next(r for r in c.ceilings if r.name == "memory bandwidth")
    assert (
        c.batch == 1024
        and mem.tok_s_per_gpu == check.memory_ceiling(m, g, 4, 1024, c.work).tok_s_per_gpu
    )
    assert mem.tok_s_per_gpu == pytest.approx(192_770.45, abs=0.01)  # 100,000 tokens read a step
    assert any("(1,024 sequences on 4 GPUs)" in n for n in c.notes)
    named = check.check_claim(V41, "gb300", 4, 1000.0, context=100_000, batch=1024)
    assert not any("concurrency not given" in n for n in named.notes)


def test_active_parameters_scale_every_reading_they_enter():
    # prefill at no prefix is all GEMMs: x 0.8 the parameters, x 0.8 the time
    p1 = check.check_claim(V41, "gb300", 8, 1000.0, phase="prefill")
    p8 = check.check_claim(V41, "gb300", 8, 1000.0, phase="prefill", active_scale=0.8)
    assert p8.ratio == pytest.approx(0.8 * p1.ratio, rel=1e-12)
    comp = p1.ceilings[1]
    assert (comp.name, comp.phase) == ("compute", "prefill")
    assert comp.formula.endswith("= 483,667 tokens/s")
    # one named sequence on 4 GPUs reads the weights: x 0.8 the bytes, x 0.8 the time
    b1 = check.check_claim(V41, "gb300", 4, 100.0, batch=1)
    b8 = check.check_claim(V41, "gb300", 4, 100.0, batch=1, active_scale=0.8)
    assert b1.limit == "memory bandwidth" and b8.ratio == pytest.approx(0.8 * b1.ratio, rel=1e-12)


def test_cached_share_threshold_states_the_first_and_last_readings():
    t = _threshold_of(lambda s: 3.0 if s == 0 else (1.5 if s < 0.99 else 0.5))
    assert t.formula.startswith("1,000 tok/s: 3x the bound uncached, 0.5x with all but")
    assert (t.ratio_uncached, t.ratio_cached) == (3.0, 0.5)


def test_capacity_shows_its_arithmetic_in_each_case():
    m, g, h = catalogs.as_model(V41), catalogs.as_gpu("gb300"), catalogs.as_gpu("h200")
    fits = check.capacity(m, g, 72, context=100_000).formula
    for part in (
        "0.9 x 288 GB HBM - 4.128 GB weights per GPU",
        "/ 91.7 MB per sequence of 100,000 tokens",
    ):
        assert part in fits
    assert fits.endswith("= 2,781 sequences per GPU") and "reports" not in fits  # nameplate HBM
    # the H200 reports its HBM (150.8 GB); the memory figure used is said
    assert (
        "0.9 x 150.8 GB HBM (as the GPU reports it) - 37.15 GB"
        in check.capacity(m, h, 8, context=1000).formula
    )
    assert check.capacity(m, g, 72, context=100_000, hbm=100e9).formula.startswith(
        "(100 GB HBM - 4.128 GB"
    )
    off = check.capacity(m, g, 72, context=100_000, offload=True).formula
    assert "- 0 B weights per GPU in HBM, 4.128 GB of them offloaded to 236 GB of host" in off
    # the weights do not fit: all spread, or the experts spread under TP; with the host's memory
    assert check.capacity(m, h, 2, context=1000, tp=2).formula.startswith(
        "the weights do not fit: 148.6 GB per GPU (2 GPUs, experts spread) > 135.7 GB usable"
    )
    host = check.capacity(m, g, 1, context=1000, weights=600e9, offload=True).formula
    assert "600 GB per GPU (1 GPU, all weights spread) > 259.2 GB usable" in host
    assert host.endswith("+ 236 GB of host (Grace) memory")
    assert not check.capacity(m, h, 1).formula.endswith("of host (Grace) memory")
    # the KV cache does not fit: the one sequence, and what was left of the HBM
    kv = check.capacity(m, g, 72, context=1000, weights=259.2e9 - 1).formula
    assert kv.startswith("the KV cache does not fit: one sequence of 1,000 tokens needs 3.593 MB")
    assert kv.endswith("more than the 1 B per GPU left after 259.2 GB of weights in HBM")
    long = check.capacity(m, g, 72, context=1000, weights=300e9, offload=True, longest=300e9 / 890)
    assert long.formula.endswith(
        "left after 64 GB of weights in HBM, 236 GB of them offloaded to 236 GB of host (Grace) "
        "memory"
    )


def test_the_check_carries_what_it_read():
    c = check.check_claim(
        V41, "gb300", 8, 1000.0, kv_dtype="fp8", precision="fp8", tokens_per_step=3.51,
        context=1000, batch=8,
    )  # fmt: skip
    assert (c.model, c.gpu, c.gpus, c.model_name, c.gpu_label) == (
        V41, "gb300", 8, "DeepSeek-V4.1-Flash", "GB300",
    )  # fmt: skip
    assert c.spec is not None and c.spec.weights.routed_expert_dtype == "fp8"  # as stated
    assert c.gpu_spec is not None and c.gpu_spec.id == "gb300"
    w = c.work
    assert (w.kv_dtype, w.tokens_per_step, w.verify_tokens, w.concurrency) == ("fp8", 3.51, 6, 8)
    assert w.weights.startswith("fp8 experts, fp8 dense")
    # FP8 rows are wider than FP4: more bytes a step, a lower bandwidth ceiling
    fp8 = check.check_claim(V41, "gb300", 8, 1000.0, kv_dtype="fp8", context=1000, batch=8)
    fp4 = check.check_claim(V41, "gb300", 8, 1000.0, context=1000, batch=8)
    assert (
        fp4.work.kv_dtype == "fp4" and fp8.ceilings[2].tok_s_per_gpu < fp4.ceilings[2].tok_s_per_gpu
    )


def test_workload_basis_keeps_what_the_flags_state_and_marks_the_rest_unknown():
    """Sizes below one token or not finite are not stated (``None``); sizes round to whole
    tokens; an engine of blanks is unknown; a speculation word other than none / real /
    simulated is a draft method (real speculation); a cached share of 0 counts no prefix."""
    from rackbook.results import claim_check

    b = claim_check.workload_basis(
        "DeepSeek-V4.1-Flash", "GB300", 8, "total", 1000.5, 0.5, 0.25, math.inf,
        engine="  vLLM 0.11 ", speculation=" EAGLE ",
    )  # fmt: skip
    assert (b.tokens, b.isl, b.osl, b.concurrency, b.cached_share) == (
        "input incl. cached+output", 1000, None, None, 0.25,
    )  # fmt: skip
    assert (b.engine, b.speculation, b.spec_method) == ("vLLM 0.11", "real", "eagle")
    assert (b.gpu_count, b.per, b.metric, b.statistic) == (8, "GPU", "throughput", "rate")
    assert (b.workload, b.serving, b.model, b.hardware) == (
        "unknown", "unknown", "DeepSeek-V4.1-Flash", "GB300",
    )  # fmt: skip
    assert claim_check.basis_text(b) == (
        "throughput; input incl. cached+output tokens; per GPU (deployment, 8 GPUs); workload "
        "unknown; speculation real (eagle); statistic rate; DeepSeek-V4.1-Flash; GB300; vLLM 0.11"
    )
    b = claim_check.workload_basis(
        "m", "g", 8, "output", 1.0, math.nan, 0.9, 1.49, engine="  ", speculation="Simulated"
    )
    assert (b.tokens, b.isl, b.osl, b.concurrency, b.engine) == ("output", 1, None, 1, "unknown")
    assert (b.speculation, b.spec_method) == ("simulated", None)
    b = claim_check.workload_basis("m", "g", 8, "total", None, None, 0.0, None, speculation="none")
    assert (b.tokens, b.cached_share, b.speculation, b.spec_method) == (
        "input+output", 0.0, "none", None,
    )  # fmt: skip
    assert claim_check.basis_text(b).endswith(
        "speculation none; statistic rate; m; g; engine not stated"
    )
    b = claim_check.workload_basis("m", "g", 8, "total", None, None, None, None)
    assert (b.speculation, b.spec_method, b.cached_share) == ("unknown", None, None)


def test_a_published_point_reads_as_one_line():
    from rackbook.results import claim_check

    p = dict(value=1234567.891, unit="tok/s", model="M", hardware="H", mismatch="like for like")
    assert claim_check.point_text(p | dict(gpus=None, ratio=None, url="u")) == (
        "1.23457e+06 tok/s (M, H, ? GPUs): figure no ratio; like for like; u"
    )
    assert claim_check.point_text(p | dict(value=0.5, gpus=4.0, ratio=2.5, url="u")) == (
        "0.5 tok/s (M, H, 4 GPUs): figure 2.5x; like for like; u"
    )


@pytest.mark.parametrize(
    ("per", "gpus", "of", "text"),
    [
        (None, 1, "gpu", "per GPU (one GPU: per GPU and in total agree)"),
        ("gpu", 1, "gpu", "per GPU (--per gpu)"),
        ("gpu", 8, "gpu", "per GPU (--per gpu)"),
        ("total", 1, "total", "in total over 1 GPUs (--per total)"),
        ("total", 8, "total", "in total over 8 GPUs (--per total)"),
        (None, 2, "total", "in total over 2 GPUs (assumed: --per not given;"),
    ],
)
def test_per_reads_several_gpus_as_their_total_unless_told(per, gpus, of, text):
    import argparse

    from rackbook.results import claim_check

    args = argparse.Namespace(per=per, gpus=gpus)
    assert claim_check.per_of(args) == of
    assert claim_check.per_text(args, gpus).startswith(text)


_RACK = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "954000", "--per", "total"]
_TOTAL = [*_RACK, "--counted", "total", "--isl", "8192", "--osl", "1024"]


@pytest.mark.parametrize(
    ("extra", "assumed", "second_line_tail"),
    [
        (  # nothing stated but the sizes: each default named
            [],
            [
                "phase mixed (--phase not given)",
                "no input cached (--cached-share not given; 'unknown' for the threshold)",
                "decode context ISL + OSL / 2 = 8,704 tokens",
                "no speculative decoding (--tokens-per-step 1)",
                "KV cache stored in fp4 (the narrowest; --kv-dtype)",
                "weights at fp4 experts, fp8 dense (as published: the only format listed) "
                "(--precision)",
            ],
            "cached share 0 % (assumed), concurrency not given",
        ),
        (  # prefill: no decode context, no speculation assumed
            ["--phase", "prefill"],
            [
                "no input cached (--cached-share not given; 'unknown' for the threshold)",
                "KV cache stored in fp4 (the narrowest; --kv-dtype)",
                "weights at fp4 experts, fp8 dense (as published: the only format listed) "
                "(--precision)",
            ],
            "cached share 0 % (assumed), concurrency not given",
        ),
        (  # everything stated but the phase
            ["--cached-share", "0.5", "--concurrency", "4608", "--kv-dtype", "fp8",
             "--precision", "fp8", "--tokens-per-step", "2", "--context", "9000"],
            ["phase mixed (--phase not given)"],
            "cached share 50 %, concurrency 4,608",
        ),
        (
            ["--cached-share", "unknown"],
            [
                "phase mixed (--phase not given)",
                "decode context ISL + OSL / 2 = 8,704 tokens",
                "no speculative decoding (--tokens-per-step 1)",
                "KV cache stored in fp4 (the narrowest; --kv-dtype)",
                "weights at fp4 experts, fp8 dense (as published: the only format listed) "
                "(--precision)",
            ],
            "cached share unknown (readings at 0 %), concurrency not given",
        ),
    ],
)  # fmt: skip
def test_each_default_the_check_took_is_named(run_cli, extra, assumed, second_line_tail):
    """Each default ``rackbook check`` took for a flag left out, printed and in the JSON; the
    cached share said as assumed, as given, or as unknown (read at the threshold)."""
    code, out, _ = run_cli("check", *_TOTAL, *extra, "--json")
    lines = out.splitlines()
    assert code == 0 and lines[0] == (
        "954,000 total tok/s in total over 72 GPUs (--per total): 13,250.0 per GPU"
    )
    assert lines[1].endswith(second_line_tail)
    assert [x.removeprefix("  assumed: ") for x in lines if x.startswith("  assumed: ")] == assumed
    phys = json.loads(lines[-1])["physics"]
    assert phys["assumed"] == assumed and phys["per"] == "total" and phys["per_assumed"] is False


def test_the_printed_ceilings_say_whether_the_figure_fits(run_cli):
    """One GB300 holding no weights' share: the capacity line says "fits"; one H200 cannot hold
    297.2 GB of weights: "does not fit", the physics line names the limit."""

    def lines(*argv: str) -> list[str]:
        code, out, _ = run_cli("check", *argv)
        assert code == 0
        return out.splitlines()

    rack = lines(*_TOTAL)
    assert any(x.startswith("  memory capacity: fits  [") for x in rack)
    assert any(x.startswith("  decode compute: 201,422 tok/s/GPU  [") for x in rack)
    one = lines("--model", V41, "--gpu", "h200", "--gpus", "1", "--tok-s", "10")
    assert any(
        x.startswith("  memory capacity: does not fit  [the weights do not fit") for x in one
    )
    assert "  expected: none: the figure does not fit" in one
    assert "  attainable: none: the figure does not fit" in one
    assert one[-1] == "this run: untested (no trace given (--trace DIR))"
    physics = next(x for x in one if x.startswith("physics: "))
    assert physics.startswith("physics: impossible (the weights do not fit")
    assert physics.endswith("; limit: memory capacity (weights))")


_FIXTURE = Path(__file__).parent / "fixtures" / "vllm-bench-v41-flash" / "synthetic-c8.json"


@pytest.fixture(scope="module")
def declared_trace(tmp_path_factory):
    """The synthetic vLLM benchmark (32 requests, 2,048 output tokens in 6.451855 s) imported
    as run on 4 B300: 317.43 output tok/s, 79.357 per GPU; and imported without ``--gpu``."""
    from rackbook.cli import main

    root = tmp_path_factory.mktemp("declared")
    assert main(["import", "vllm-bench", str(_FIXTURE), "-o", str(root / "t"), "--gpu", "b300",
                 "--gpus", "4"]) == 0  # fmt: skip
    assert main(["import", "vllm-bench", str(_FIXTURE), "-o", str(root / "u")]) == 0
    return root


PER_GPU = 2048 / 6.451855 / 4  # 79.357 output tok/s per GPU


@pytest.mark.parametrize(
    ("model", "counted", "claimed", "verdict", "reason"),
    [
        ("DeepSeek V4.1_Flash", "output", PER_GPU, "consistent",  # the model's name normalised
         "output 79.4 tok/s per GPU at point synthetic-c8, +0 % from the figure's 79.36 "
         "(tolerance 10 %)"),
        ("deepseek-v4.1-flash", "output", PER_GPU / 0.9001, "consistent",
         "output 79.4 tok/s per GPU at point synthetic-c8, -10 % from the figure's 88.16 "
         "(tolerance 10 %)"),
        ("deepseek-v4.1-flash", "output", PER_GPU / 0.8999, "inconsistent",
         "output 79.4 tok/s per GPU at point synthetic-c8, -10 % from the figure's 88.18 "
         "(tolerance 10 %)"),
        ("deepseek-v4.1-flash", "output", PER_GPU / 1.0999, "consistent",
         "output 79.4 tok/s per GPU at point synthetic-c8, +10 % from the figure's 72.15 "
         "(tolerance 10 %)"),
        ("deepseek-v4.1-flash", "output", PER_GPU / 1.1001, "inconsistent",
         "output 79.4 tok/s per GPU at point synthetic-c8, +10 % from the figure's 72.14 "
         "(tolerance 10 %)"),
        ("deepseek-v4.1-flash", "total", PER_GPU, "inconsistent",  # 34,816 tokens counted
         "total 1,349.1 tok/s per GPU at point synthetic-c8, +1600 % from the figure's 79.36 "
         "(tolerance 10 %)"),
        ("deepseek-v4-flash", "output", PER_GPU, "untested",
         "recorded on 4 x B300 (declared at import) (output 79.4 tok/s per GPU at point "
         "synthetic-c8); the claim needs a recording of deepseek-v4-flash on b300"),
    ],
)  # fmt: skip
def test_this_run_reads_the_top_rate_against_the_figure(
    declared_trace, model, counted, claimed, verdict, reason
):
    """The this-run reading: the trace's highest rate per GPU of the counted tokens against
    the figure, within 10 % (``REL_TOL``) consistent; another model untested, naming the
    hardware the trace declares."""
    from rackbook.results import claim_check

    got = claim_check.this_run(str(declared_trace / "t"), model, "b300", counted, claimed)
    assert got == {"verdict": verdict, "reason": reason}


def test_this_run_without_a_gpu_count_or_a_trace_is_untested(declared_trace):
    from rackbook.results import claim_check

    bare = str(declared_trace / "u")
    assert claim_check.this_run(bare, "deepseek-v4.1-flash", "b300", "output", PER_GPU) == {
        "verdict": "untested",
        "reason": f"{bare}: no point with a GPU count and output tokens (rackbook import "
        "vllm-bench FILE -o DIR --gpu ID --gpus N declares the GPUs a benchmark ran on)",
    }
    assert claim_check.this_run(None, "m", "g", "output", 1.0) == {
        "verdict": "untested", "reason": "no trace given (--trace DIR)"
    }  # fmt: skip


def _record(wb, pid, value, role="measurement", verified=True, **changes):
    """One published per-GPU point as ``rackbook check`` stores it (JSON), of basis ``wb``
    stated (with ``changes``)."""
    from dataclasses import asdict

    stated = {"speculation": "none", "workload": "fixed lengths", "serving": "aggregated"}
    b = wb.replace(**(stated | changes))
    return {
        "id": pid, "value": value, "unit": "output tok/s/GPU", "model": b.model,
        "hardware": b.hardware, "gpus": b.gpu_count, "url": f"https://x.test/{pid}",
        "verified": verified, "role": role, "basis": asdict(b),
    }  # fmt: skip


def test_published_points_rank_like_for_like_then_verified_then_nearest(monkeypatch):
    """1,000 tok/s per GPU on 72 GB300 against five stored points: the like-for-like verified
    measurement (1,200: serving is named, never deciding) decides and comes first; then the
    one not verified first-hand, then the analogue (one part further); another model (4) and
    another GPU count (2, at 0 tok/s: no ratio) are further still. Without the deciding point
    none is published and the reason names the closest."""
    from rackbook.results import claim_check, evidence

    wb = claim_check.workload_basis("deepseek-v4.1-flash", "gb300", 72, "output", *[None] * 4)
    points = [
        _record(wb, "a", 2000.0, role="analogue", verified=False),
        _record(wb, "u", 1500.0, verified=False),
        _record(wb, "m", 900.0, model="deepseek-r1"),
        _record(wb, "z", 0.0, gpu_count=8),
        _record(wb, "s", 1200.0, serving="disaggregated"),
    ]
    doc = {"points": points, "weights": evidence.WEIGHTS}
    monkeypatch.setattr(claim_check, "published_per_gpu_points", lambda: doc)
    r = claim_check.published_for_workload(wb, 1000.0)
    assert (r["verdict"], r["decided_on"]) == ("below", ["s"])
    assert [(c["url"][-1], c["mismatch"]) for c in r["closest"]] == [
        ("s", "like for like"), ("u", "not verified first-hand"), ("a", "an analogue"),
    ]  # fmt: skip
    assert [c["ratio"] for c in r["closest"]] == [1000 / 1200, 1000 / 1500, 0.5]
    assert r["reason"].startswith("1,000 output tok/s/GPU against 1 published point")
    assert r["reason"].endswith(
        "; closest: 1,200 output tok/s/GPU (deepseek-v4.1-flash, gb300, 72 GPUs): figure "
        "0.833x; like for like; https://x.test/s"
    )
    assert r["basis"] == claim_check.basis_text(wb)
    doc["points"] = points[:4]
    r = claim_check.published_for_workload(wb, 1000.0)
    assert (r["verdict"], r["decided_on"]) == ("none published", [])
    assert r["reason"] == (
        f"no verified published measurement of the same basis ({claim_check.basis_text(wb)}); "
        "closest: 1,500 output tok/s/GPU (deepseek-v4.1-flash, gb300, 72 GPUs): figure 0.667x; "
        "not verified first-hand; https://x.test/u"
    )
    doc["points"] = points[2:4]
    (z, m) = claim_check.published_for_workload(wb, 1000.0)["closest"]
    assert (z["ratio"], z["mismatch"]) == (None, "GPU count: 8 (claim: 72)")
    assert (m["ratio"], m["mismatch"]) == (
        1000 / 900,
        "model: deepseek-r1 (claim: deepseek-v4.1-flash)",
    )
    doc["points"] = []
    assert claim_check.published_for_workload(wb, 1000.0) == {
        "verdict": "none published", "reason": "no published per-GPU throughput point",
        "closest": [], "basis": claim_check.basis_text(wb),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("tok_s", "verdict", "share", "kernels"),
    [
        (954_000, "undetermined", 0.640, " at the bound's threshold share; measured kernels "
         "reach it from 93.4 % of the input cached"),
        (3_000_000, "undetermined", 0.902, " at the bound's threshold share; measured kernels "
         "do not reach it at any cached share"),
        (13_250, "possible", 0.0, ""),  # no cache needed: no threshold to read kernels at
        (20_000_000, "impossible", None, ""),
    ],
)  # fmt: skip
def test_an_unknown_cached_share_is_read_at_the_bounds_threshold(
    run_cli, tok_s, verdict, share, kernels
):
    """``--cached-share unknown`` (ISL 100k / OSL 1k, input + output per GPU on 72 GB300):
    the physics verdict is the threshold's; where a share above 0 is needed, what measured
    kernels reach is read at that share too."""
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", str(tok_s), "--per",
            "gpu", "--counted", "total", "--isl", "100000", "--osl", "1000"]  # fmt: skip
    code, out, _ = run_cli("check", *argv, "--cached-share", "unknown", "--json")
    p = json.loads(out.splitlines()[-1])["physics"]
    assert code == 0 and p["verdict"] == verdict
    got = p["threshold"]["cached_share"]
    assert got == (None if share is None else pytest.approx(share, abs=1e-3))
    assert p["reason"].startswith(f"{tok_s:,} tok/s: ")
    assert (p["attainable_text"].endswith(kernels) if kernels else "threshold" not in
            p["attainable_text"])  # fmt: skip
    threshold = p["attainable"].get("cached_share_threshold")
    assert (threshold is not None) == ("from 93.4 %" in kernels)


def test_a_calibration_without_a_data_sheet_gives_no_estimate(run_cli, tmp_path):
    """``--calibration`` of a CPU run (no data sheet): neither the attainable nor the expected
    reading, each saying why, the calibration named; the physics reading is unchanged."""
    from rackbook.core import calibration

    cal = calibration.read_calibration()
    run = dict(cal.run, device="cpu", gpu="some CPU", spec=None)
    label = calibration.read_calibration(
        calibration.write_calibration(tmp_path / "cpu", run, cal.kernels)
    ).label
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "4", "--tok-s", "3304", "--per", "total"]
    code, out, _ = run_cli("check", *argv, "--concurrency", "4", "--json")
    plain = json.loads(out.splitlines()[-1])["physics"]
    code, out, _ = run_cli(
        "check", *argv, "--concurrency", "4", "--calibration", str(tmp_path / "cpu"), "--json"
    )
    p = json.loads(out.splitlines()[-1])["physics"]
    assert code == 0 and (p["verdict"], p["ratio"]) == (plain["verdict"], plain["ratio"])
    assert p["attainable"] == {
        "tok_s_per_gpu": None, "ratio": None, "deployment": None, "calibration": label,
    }  # fmt: skip
    assert p["expected"] == dict.fromkeys(
        ("tok_s_per_gpu", "low", "high", "ratio", "deployment")) | {"terms": {}}  # fmt: skip
    assert p["attainable_text"] == p["expected_text"]
    assert p["attainable_text"].startswith("none: ") and "no data sheet" in p["attainable_text"]
    assert plain["attainable"]["calibration"] != label and plain["expected"]["validation"]


def test_the_stored_per_gpu_points_are_the_published_throughputs_not_context():
    """The records ``rackbook check`` reads (cached on disk, read back with json) are a fresh
    build: every per-GPU throughput point with a value, as JSON types, its basis whole; the
    points kept for context (a prefill rate among them) are left out."""
    from rackbook.core import basis as basis_mod
    from rackbook.results import claim_check, evidence

    doc = claim_check.build_per_gpu_points()
    assert claim_check.published_per_gpu_points() == doc
    assert doc["weights"] == evidence.WEIGHTS and len(doc["points"]) >= 50
    pts = evidence.published_points()
    per_gpu = pts["unit"].astype(str).str.endswith("tok/s/GPU")
    context = set(pts.loc[per_gpu & (pts["role"] == "context"), "id"])
    assert "figures:vllm-blog-gb200.prefill-per-gpu" in context
    ids = [p["id"] for p in doc["points"]]
    assert len(ids) == len(set(ids)) and not context & set(ids)
    assert set(pts.loc[per_gpu & (pts["role"] != "context"), "id"]) == set(ids)
    for p in doc["points"]:
        assert set(p) == {*claim_check._POINT_FIELDS, "basis"}
        assert p["unit"].endswith("tok/s/GPU") and p["role"] in ("measurement", "analogue")
        assert type(p["value"]) is float and math.isfinite(p["value"])
        assert type(p["verified"]) is bool and (p["gpus"] is None or type(p["gpus"]) is int)
        assert basis_mod.Basis(**p["basis"]).model == p["model"]
    assert any(p["gpus"] is None for p in doc["points"])
