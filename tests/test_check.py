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
        (["--model", V41, "--gpu", "gb300", "--gpus", "1", "--tok-s", "0"], "must be a positive"),
        (["--model", V41, "--gpu", "gb300", "--gpus", "1", "--tok-s", "-5"], "must be a positive"),
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
    d = json.loads(out.splitlines()[-1])
    assert d["verdict"] == "impossible" and d["limit"] == "compute"
    assert d["ratio"] == pytest.approx(954_000 / DECODE_CAP_GB300)
    assert d["ceiling_tok_s_per_gpu"] == pytest.approx(DECODE_CAP_GB300)
    assert {r["name"] for r in d["readings"]} >= {"compute", "memory bandwidth"}
    assert all(r["formula"] for r in d["readings"])


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
