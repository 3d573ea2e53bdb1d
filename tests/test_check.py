"""``rackbook check``: the physics of any serving claim, against hand calculations, every verdict
it can return, and its one-line errors."""

from __future__ import annotations

import json

import pytest

from rackbook.errors import InputError
from rackbook.physics import check

V41 = "deepseek-v4.1-flash"
DECODE_CAP_GB300 = 1 / (2 * 8_493_465_600 / 15e15 + 2 * 7_506_534_400 / 5e15)  # 241,834
PREFILL_CAP_GB300 = 1 / (2 * 4_246_732_800 / 15e15 + 2 * 3_753_267_200 / 5e15)  # 483,667


@pytest.mark.parametrize(
    "ratio,verdict",
    [
        (0.5, "possible"),
        (0.849, "possible"),
        (0.85, "undetermined"),
        (1.0, "undetermined"),
        (1.03, "impossible"),  # above 100 % of a peak: no margin makes it undetermined
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
    assert any(r.name == "batch-1 floor" for r in c.readings)
    s = check.check_claim(V41, "b300", 4, 826, per="total", batch=1, tokens_per_step=3.51)
    assert s.ratio == pytest.approx(0.2506, abs=1e-3) and s.verdict == "possible"
    fast = check.check_claim(V41, "b300", 4, 6000, per="total", batch=1, tokens_per_step=3.51)
    assert fast.verdict == "impossible"  # 6000 > 3,297 tok/s: above the bandwidth ceiling


def test_long_contexts_make_bandwidth_bind():
    # 72 sequences of 855k tokens on 72 GPUs: one each; the scans and weights bind, not compute
    c = check.check_claim(V41, "gb300", 72, 954_000, per="total", batch=72, context=855_000)
    assert c.limit == "memory bandwidth" and c.verdict == "impossible"


def test_h200_examples_plausible_and_impossible_and_fp4_note():
    ok = check.check_claim(V41, "h200", 8, 3_000)
    assert ok.verdict == "possible"
    assert any("no fp4 tensor cores" in n for n in ok.notes)
    # Hopper runs the FP4 experts at FP8: 1.979 PF / 32 GFLOP = 61,844 tok/s per GPU
    assert ok.readings[0].tok_s_per_gpu == pytest.approx(1.979e15 / 32e9)
    bad = check.check_claim(V41, "h200", 8, 100_000)
    assert bad.verdict == "impossible" and bad.ratio == pytest.approx(100_000 / (1.979e15 / 32e9))
    edge = check.check_claim(V41, "h200", 8, 1.979e15 / 32e9)
    assert edge.verdict == "undetermined"


def test_a_model_that_does_not_fit_is_impossible():
    c = check.check_claim(V41, "h200", 1, 10)
    assert c.verdict == "impossible" and c.limit == "memory capacity (weights)"
    assert c.reason.startswith("the weights do not fit") and "sequences per GPU" not in c.reason


def test_speculation_verifies_more_than_it_keeps():
    one = check.check_claim(V41, "gb300", 72, 1000)
    spec = check.check_claim(V41, "gb300", 72, 1000, tokens_per_step=3.51)
    # compute: a 6-token verify keeps 3.51 tokens
    assert spec.readings[0].tok_s_per_gpu == pytest.approx(one.readings[0].tok_s_per_gpu * 3.51 / 6)


def test_sensitivity_band_brackets_the_ratio():
    b = check.sensitivity(model=V41, gpu="gb300", gpus=72, tok_s=954_000)
    assert b.low < b.high and b.ratio == pytest.approx(954_000 / DECODE_CAP_GB300)
    # compute-bound: ratio x 0.8 / 0.6 at the low end, x 1.2 / 0.4 at the high end
    assert b.low == pytest.approx(b.ratio * 0.8 / 0.6, rel=1e-9)
    assert b.high == pytest.approx(b.ratio * 1.2 / 0.4, rel=1e-9)


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
            ],
            "KV layout unknown",
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
        "check", "--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "954000", "--json"
    )
    assert code == 0
    assert out.splitlines()[0].startswith("954,000 output tok/s per GPU (assumed: --per not given")
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
    from rackbook.results import evidence, workload

    wb = workload.workload_basis(
        "deepseek-v4.1-flash", "gb300", 72, "output", None, None, None, None
    )
    monkeypatch.setattr(evidence, "published_points", lambda: _points_like(wb, value, **changes))
    r = workload.published_for_workload(wb, 954_000.0)
    assert r.verdict == verdict, r.reason
    assert r.extra["decided_on"] == ([] if verdict == "none published" else ["hand:1"])
    assert r.extra["closest"][0]["url"] == "https://x.test/1"


def test_counted_total_with_a_cached_share_counts_the_cached_prefix():
    from rackbook.results import workload

    b = workload.workload_basis(
        "deepseek-v4.1-flash", "gb300", 4, "total", 114_400, 1_000, 0.9, 128
    )
    assert (b.tokens, b.isl, b.osl, b.cached_share, b.concurrency) == (
        "input incl. cached+output", 114_400, 1_000, 0.9, 128,
    )  # fmt: skip
    assert workload.workload_basis("m", "gb300", 4, "total", None, None, None, None).tokens == (
        "input+output"
    )


def test_the_agentic_inferencex_point_at_its_own_concurrency():
    """InferenceX AgentX, vLLM, DeepSeek-V4.1-Flash on 4 GB300 at concurrency 128: 104,429.47
    tok/s/GPU counted as input + output, 904.78 of it output (ISL/OSL about 114,400 / 1,000).
    Hand calculation, no prefix cache (the most demanding case):
    output 104,429 x 1,000 / 115,400 = 904.93, input 103,524.07 tok/s per GPU.
    Decode at 114,400 + 500 = 114,900 tokens, 32 sequences per GPU: a step per GPU reads the
    dense weights 7,506,534,400 B, the experts 40 x 384 x (1 - (63/64)^128) = 40 x 332.84 x
    18,800,640 / 4 = 62.58 GB, and 32 x (170 x 114,900 + 5,603,328 + 4,456,448 + 2,703,360)
    = 1.0335 GB of context: 71.12 GB / 8 TB/s = 8.890 ms, so 32 / 8.890 ms = 3,599.7 tok/s
    per GPU (compute at that context 1 / (4.13508 + 9.0013e9 / 5e15 us) = 168,483 is higher).
    Decode share 904.93 / 3,599.7 = 0.2514.
    Prefill of a new token after 114,400 / 2 = 57,200 tokens, 20 encoder layers: 2.06754 us of
    GEMMs + (1.5 x 57,200 x 16,384 + 18 x 512 x 131,072 + 20 x 128 x 131,072) / 5e15 =
    0.58985 us: 2.65739 us (its reads, 8,488,608 B = 1.061 us, are less). Prefill share
    103,524.07 x 2.65739 us = 0.2751. Together 0.5265: possible at the run's own batch, not
    at an imagined one (before, the free batch of 16,384 decided)."""
    c = check.check_claim(
        V41, "gb300", 4, 104_429, counted="total", isl=114_400, osl=1_000, batch=128
    )
    assert c.phase == "mixed" and c.batch == 128
    assert c.fractions["decode"] == pytest.approx(904.93 / 3_599.7, rel=1e-4)
    assert c.fractions["prefill"] == pytest.approx(103_524.07 * 2.65739e-6, rel=1e-4)
    assert c.ratio == pytest.approx(0.5265, abs=2e-4) and c.verdict == "possible"
    mem = next(r for r in c.readings if r.name == "memory bandwidth")
    assert mem.tok_s_per_gpu == pytest.approx(3_599.7, rel=1e-4)


@pytest.mark.parametrize(
    "tok_s,verdict", [(100_000, "possible"), (250_000, "undetermined"), (280_000, "impossible")]
)
def test_counted_total_shares_the_gpus_time(tok_s, verdict):
    """72 GB300, ISL 8,192, OSL 1,024, half the input cached, 4,608 sequences in flight (64 per
    GPU); the figure counts input + output per GPU. Hand calculation per GPU:
    output = X x 1,024 / 9,216, new input = X x 8,192 / 9,216 x 0.5.
    Decode at 8,192 + 512 = 8,704 tokens: a step reads 7,506,534,400 B dense + 40 x ~384
    experts x 18,800,640 B / 72 = 4,010,803,200 B + 64 x (170 x 8,704 + 5,603,328 + 4 x 8,704
    x 68 + 2,703,360 = 12,153,856) = 777,846,784 B: 12.2952 GB / 8 TB/s = 1.53690 ms, so
    64 / 1.53690 ms = 41,642 tok/s (compute: 1 / (4.13508 + 4.14817e9 / 5e15 us) = 201,422).
    Prefill after 8,192 x 0.5 + 8,192 x 0.25 = 6,144 tokens: 2.06754 us + (1.5 x 6,144 x
    16,384 + 18 x 512 x 131,072 + 20 x 128 x 131,072) / 5e15 = 2.40644 us: 415,552 tok/s.
    Ratio = X x (0.11111 / 41,642 + 0.44444 / 415,552) = X x 3.73775e-6: 100,000 -> 0.374
    (possible), 250,000 -> 0.934 (undetermined), 280,000 -> 1.047 (impossible: above 100 %)."""
    c = check.check_claim(
        V41, "gb300", 72, tok_s, counted="total", isl=8_192, osl=1_024, cached_share=0.5,
        batch=4_608,
    )  # fmt: skip
    assert c.ratio == pytest.approx(tok_s * 3.73775e-6, rel=1e-4) and c.verdict == verdict
    assert c.fractions["decode"] == pytest.approx(tok_s / 9 / 41_642.3, rel=1e-4)
    assert c.fractions["prefill"] == pytest.approx(tok_s * 4 / 9 / 415_552.0, rel=1e-4)


def test_capacity_names_what_does_not_fit():
    """1,000,000-token sequences on 72 GB300: (278 GB x 0.9 - 12.43 GB weights) / (890 B x
    1e6 + 2,703,360 B window) = 266 per GPU fit; 300 per GPU (21,600) do not: the KV cache,
    not the weights, and never "fits ... = 0 sequences"."""
    c = check.check_claim(V41, "gb300", 72, 1000, context=1_000_000, batch=21_600)
    assert (c.verdict, c.limit) == ("impossible", "memory capacity (KV cache)")
    assert c.reason.startswith("the KV cache does not fit: 21,600 sequences")
    assert "at most 266 per GPU" in c.reason and "= 0 sequences" not in c.reason
    ok = check.check_claim(V41, "gb300", 72, 1000, context=1_000_000, batch=72 * 266)
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
        (["--batch", "8", "--concurrency", "8"], "not both"),
    ],
)
def test_out_of_range_workloads_are_one_error_line(run_cli, extra, problem):
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "5000", "--per", "gpu"]
    code, out, err = run_cli("check", *argv, *extra)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and problem in err
    assert out == ""


def test_the_per_gpu_default_is_said_and_total_divides(run_cli):
    """One user's 826 tok/s on 4 B300 read per GPU is 4 x 826 of GPU work: the first line
    says which reading it is; --per total reads 826 / 4 = 206.5 per GPU."""
    argv = ["--model", V41, "--gpu", "b300", "--gpus", "4", "--tok-s", "826", "--batch", "1"]
    _, out, _ = run_cli("check", *argv, "--tokens-per-step", "3.51")
    assert "(assumed: --per not given" in out.splitlines()[0]
    _, out, _ = run_cli("check", *argv, "--tokens-per-step", "3.51", "--per", "total")
    assert (
        out.splitlines()[0] == "826 output tok/s in total over 4 GPUs (--per total): 206.5 per GPU"
    )
    assert "physics: possible (206 tok/s per GPU is 0.251x" in out


def test_this_run_reads_a_trace(run_cli):
    """The shipped rack-scaling trace ran on CPUs: the this-run reading is untested and says
    where it ran."""
    from rackbook import paths

    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "5000", "--per", "gpu"]
    code, out, _ = run_cli("check", *argv, "--trace", str(paths.TRACES / "rack-scaling"), "--json")
    d = json.loads(out.splitlines()[-1])
    assert code == 0 and d["this_run"]["verdict"] == "untested"
    assert "no trace given" not in d["this_run"]["reason"]


def test_input_errors_from_the_function():
    with pytest.raises(InputError, match="phase"):
        check.check_claim(V41, "gb300", 1, 5, phase="train")
    with pytest.raises(InputError, match="tokens_per_step"):
        check.check_claim(V41, "gb300", 1, 5, tokens_per_step=0.5)


def test_a_model_without_a_kv_layout_is_judged_on_compute_and_weights():
    c = check.check_claim("deepseek-v4-flash", "gb300", 8, 1000)
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
