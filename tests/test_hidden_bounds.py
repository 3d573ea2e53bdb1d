"""Bounds over what a figure does not state (issue 35): the least bytes the model is served with,
memory as the GPU reports it discounted once, sequences held at ISL + OSL / 2 on average,
weights offloaded to Grace memory, and ``--model FILE`` honoured by every reading.

Every number is worked by hand in the test's docstring from the catalogs:
DeepSeek-R1/V3 (61 layers, 58 MoE layers x 256 experts, expert 3 x 7168 x 2048 = 44,040,192
params; 671e9 total, 37e9 active): routed params 58 x 256 x 44,040,192 = 653,908,770,816,
dense 671e9 - that = 17,091,229,184. At NVFP4 (nvidia/DeepSeek-R1-NVFP4: FP4 experts, FP8
rest) an expert is 22,020,096 B: stored 326,954,385,408 + 17,091,229,184 = 344,045,614,592 B;
at FP8 671,000,000,000 B. MLA KV at FP8: 61 x 576 = 35,136 B a token.
"""

from __future__ import annotations

import json

import pytest
import yaml

from rackbook import paths
from rackbook.inputs import catalogs
from rackbook.physics import attainable, check, roofline

EXPERT = 3 * 7168 * 2048  # 44,040,192 params a DeepSeek-R1 expert
NVFP4_TOTAL = 58 * 256 * EXPERT // 2 + 17_091_229_184  # 344,045,614,592 B
H200_USABLE = 0.9 * 143_771 * 2**20  # 0.9 x 150,754,820,096 B = 135,679,338,086.4 B


def test_the_least_bytes_the_model_is_served_with():
    """No precision stated: R1 at its NVFP4 checkpoint (344.0 GB, not FP8's 671 GB); stated
    FP8: the native FP8 weights (671e9 B: FP8 stores a byte a parameter)."""
    r1 = catalogs.load_model("deepseek-r1")
    least = roofline.served(r1)
    assert (least.routed_dtype, least.dense_dtype, least.stated) == ("fp4", "fp8", False)
    assert roofline.expert_bytes(least.model) == EXPERT / 2 == 22_020_096
    assert roofline.storage(least.model).total_bytes == NVFP4_TOTAL == 344_045_614_592
    fp8 = roofline.served(r1, "fp8")
    assert fp8.stated and roofline.storage(fp8.model).total_bytes == 671_000_000_000
    # V4.1-Flash ships FP4 experts only: its catalog bytes (scales included) stay
    v41 = catalogs.load_model("deepseek-v4.1-flash")
    assert roofline.expert_bytes(roofline.served(v41).model) == 18_800_640


def test_nvfp4_runs_are_counted_at_fp4_expert_bytes_and_a_stated_precision_tightens():
    """One R1 sequence on 8 GB300, no context: a step reads the dense weights once (37e9 -
    58 x 8 x 44,040,192 = 16,565,350,912 B at FP8) and 58 x 8 experts: at FP4 x 22,020,096 B =
    10,217,324,544 B, total 26,782,675,456 B / (8 x 8 TB/s) = 418.48 us: 298.7 tok/s per GPU;
    at FP8 37e9 B / 64 TB/s = 578.1 us: 216.2 tok/s per GPU. 250 tok/s per GPU is possible
    for an NVFP4 run, impossible for the FP8 weights."""
    fp4_bound = 64e12 / 26_782_675_456 / 8
    fp8_bound = 64e12 / 37e9 / 8
    c = check.check_claim("deepseek-r1", "gb300", 8, 250, batch=1)
    assert c.bounds["decode"] == pytest.approx(fp4_bound, rel=1e-9)
    assert c.verdict == "possible" and c.workload["weights"].startswith("fp4 experts")
    s = check.check_claim("deepseek-r1", "gb300", 8, 250, batch=1, precision="fp8")
    assert s.bounds["decode"] == pytest.approx(fp8_bound, rel=1e-9)
    assert s.verdict == "impossible" and "stated" in s.workload["weights"]


def test_h200_v3_with_fp8_kv_is_accepted_and_hbm_is_discounted_once():
    """DeepSeek-V3 on 8 H200 with --kv-dtype fp8 (refused before: BF16 MLA rows only). Usable
    HBM = 0.9 x 143,771 MiB = 135,679,338,086.4 B (not 0.9 x a 141 GB figure already usable);
    weights 344,045,614,592 / 8 = 43,005,701,824 B a GPU; free 92,673,636,262.4 B. Sequences
    hold ISL + OSL / 2 = 1,000 + 500 = 1,500 tokens on average x 35,136 B = 52,704,000 B:
    floor(92,673,636,262.4 / 52,704,000) = 1,758 sequences a GPU (at full ISL + OSL, 2,000
    tokens, only 1,318)."""
    assert check.usable_bytes(catalogs.gpu("h200")) == pytest.approx(H200_USABLE, rel=1e-12)
    c = check.check_claim(
        "deepseek-v3", "h200", 8, 1000, counted="total", isl=1000, osl=1000, kv_dtype="fp8"
    )
    assert c.verdict == "possible" and c.workload["kv_dtype"] == "fp8"
    cap = check.capacity(
        roofline.served(catalogs.load_model("deepseek-v3")).model,
        catalogs.gpu("h200"),
        8,
        context=1500,
        longest=2000,
        kv_dtype="fp8",
    )
    free = H200_USABLE - NVFP4_TOTAL / 8
    assert cap.sequences == int(free // (1500 * 35_136)) == 1758
    assert int(free // (2000 * 35_136)) == 1318
    assert "1,758 sequences per GPU" in next(
        r.formula for r in c.ceilings if r.name == "memory capacity"
    )


def test_gb200_two_gpu_prefill_instance_fits_with_grace_memory():
    """R1 at FP8 (671e9 B) on a 2-GPU GB200 prefill instance: 335.5e9 B a GPU, more than the
    0.9 x 189,471 MiB = 178,807,268,966.4 B of HBM, but 236e9 B of it go to Grace LPDDR5X (17 TB
    per 72-GPU rack): 99.5e9 B stay in HBM, 79,307,268,966.4 B are left for KV. On 2 B200 (no
    Grace; 0.9 x 183,359 MiB = 173,039,262,105.6 B) the same weights do not fit."""
    kw = dict(phase="prefill", counted="input", isl=2048, osl=1, precision="fp8")
    c = check.check_claim("deepseek-r1", "gb200", 2, 10_000, **kw)
    assert c.verdict == "possible"
    cap = check.capacity(
        roofline.served(catalogs.load_model("deepseek-r1"), "fp8").model,
        catalogs.gpu("gb200"),
        2,
        context=2048.5,
        kv_dtype="fp8",
        offload=True,
    )
    assert (cap.weights_bytes, cap.offloaded_bytes) == (335.5e9, 236e9)
    assert cap.usable_bytes == pytest.approx(0.9 * 189_471 * 2**20, rel=1e-12)
    left = 0.9 * 189_471 * 2**20 - 99.5e9
    assert cap.sequences == int(left // (2049 * 35_136))
    b = check.check_claim("deepseek-r1", "b200", 2, 10_000, **kw)
    assert b.verdict == "impossible" and b.limit == "memory capacity (weights)"
    # at NVFP4 (344.0 GB / 2 = 172.0 GB a GPU) it fits in a B200's HBM alone
    kw.pop("precision")
    assert check.check_claim("deepseek-r1", "b200", 2, 10_000, **kw).verdict == "possible"


def _model_file(tmp_path, **changes):
    raw = yaml.safe_load((paths.DATA / "models" / "deepseek-v4.1-flash.yaml").read_text())
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        raw[section][key] = value
    f = tmp_path / "model.yaml"
    f.write_text(yaml.safe_dump(raw))
    return str(f)


def test_a_model_file_keeping_a_catalog_id_is_read_from_the_file(tmp_path):
    """A file that keeps the id deepseek-v4.1-flash but activates 24e9 parameters in decode
    (not 16e9): the bound and the attainable estimate both read the file. Four sequences on 4
    GB300, no context, each touching the same 6 experts at the least: dense 24e9 -
    40 x 6 x 3 x 5120 x 2304 = 15,506,534,400 B (FP8) + 40 x 6 x 18,800,640 = 4,512,153,600 B
    = 20,018,688,000 B / 32 TB/s = 625.6 us: 4 tokens / 625.6 us / 4 GPUs = 1,598.5 tok/s per
    GPU (the catalog's 16e9: 2,662)."""
    f = _model_file(tmp_path, **{"params.active_decode": 24_000_000_000})
    kw = dict(batch=4)
    cat = check.check_claim("deepseek-v4.1-flash", "gb300", 4, 100, **kw)
    own = check.check_claim(f, "gb300", 4, 100, **kw)
    assert own.model == cat.model == "deepseek-v4.1-flash"
    routed = 40 * 6 * 3 * 5120 * 2304  # 8,493,465,600 params
    step = ((24e9 - routed) + 40 * 6 * 18_800_640) / (4 * 8e12)
    assert own.bounds["decode"] == pytest.approx(4 / step / 4, rel=1e-9)
    assert cat.bounds["decode"] > own.bounds["decode"]
    a_cat, a_own = attainable.for_check(cat), attainable.for_check(own)
    assert a_own.tok_s_per_gpu < a_cat.tok_s_per_gpu
    work = check.Workload(concurrency=4, output_tok_s_per_gpu=100, kv_dtype=own.work.kv_dtype)
    direct = attainable.estimate(catalogs.load_model(f), "gb300", 4, work, claimed=100)
    assert a_own.tok_s_per_gpu == pytest.approx(direct.tok_s_per_gpu, rel=1e-12)


def test_a_model_file_with_a_new_id_gives_every_reading(tmp_path, run_cli):
    f = _model_file(tmp_path, **{"params.active_decode": 24_000_000_000})
    raw = yaml.safe_load(open(f).read())
    raw["id"], raw["name"] = "my-flash", "My-Flash"
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(raw))
    code, out, err = run_cli("check", "--model", f, "--gpu", "gb300", "--gpus", "4",
                             "--tok-s", "100", "--concurrency", "4", "--json")  # fmt: skip
    assert code == 0, err
    phys = json.loads(out.strip().splitlines()[-1])["physics"]
    assert phys["verdict"] == "possible" and phys["attainable"]["tok_s_per_gpu"] > 0


def test_precision_flag_states_the_experts_dtype(run_cli):
    """``--precision fp8`` reads R1's FP8 weights: one sequence on 8 GB300 reaches at most
    64 TB/s / 37e9 B / 8 = 216.2 tok/s per GPU (NVFP4: 298.7), so 250 is impossible; not given,
    the assumed line names the NVFP4 checkpoint."""
    argv = ["check", "--model", "deepseek-r1", "--gpu", "gb300", "--gpus", "8", "--tok-s", "250",
            "--per", "gpu", "--concurrency", "1", "--json"]  # fmt: skip
    code, out, _ = run_cli(*argv, "--precision", "fp8")
    phys = json.loads(out.strip().splitlines()[-1])["physics"]
    assert code == 0 and phys["verdict"] == "impossible"
    assert phys["ceiling_tok_s_per_gpu"] == pytest.approx(64e12 / 37e9 / 8, rel=1e-9)
    assert not any(a.startswith("weights at") for a in phys["assumed"])
    code, out, _ = run_cli(*argv)
    phys = json.loads(out.strip().splitlines()[-1])["physics"]
    assert code == 0 and phys["verdict"] == "possible"
    assert any("nvidia/DeepSeek-R1-NVFP4" in a for a in phys["assumed"])
