"""Roofline arithmetic checked against numbers computed by hand, and the ``kv-bytes`` verb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackbook.cli import main
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import roofline


@pytest.fixture(scope="module")
def v41():
    return catalogs.load_model("deepseek-v4.1-flash")


# ------------------------------------------------------------------------------------ KV


@pytest.mark.parametrize(("dtype", "expected"), [("fp4", 890), ("fp8", 1650), ("bf16", 3200)])
def test_kv_bytes_per_token_v41(v41, dtype, expected):
    # 2.5 rows/token x (288 + 68) = 890; x (528 + 132) = 1650; x (1024 + 256) = 3200
    assert roofline.kv_bytes_per_token(v41, dtype) == expected
    assert roofline.kv_rows_per_token(v41) == 2.5


def test_kv_formula_shows_the_arithmetic(v41):
    f = roofline.kv_bytes(v41, "fp4").formula
    assert "1/2 + 1/2 + 1/2 + 1/1 = 2.5" in f and "2.5 x 356 = 890 B" in f


def test_kv_bytes_v3_bf16_is_61_layers_of_576_values():
    v3 = catalogs.load_model("deepseek-v3")
    assert roofline.kv_bytes_per_token(v3, "bf16") == 61 * (512 + 64) * 2 == 70272
    with pytest.raises(InputError, match=r"deepseek-v3.yaml: kv_cache.row_bytes.fp4: row size"):
        roofline.kv_bytes_per_token(v3, "fp4")


def test_kv_layout_unknown_for_v4_flash():
    v4 = catalogs.load_model("deepseek-v4-flash")
    with pytest.raises(InputError, match="compression_ratios: KV layout unknown .*about 4x"):
        roofline.kv_bytes_per_token(v4)


def test_kv_bytes_per_sequence_and_bad_dtype(v41):
    assert roofline.kv_bytes_per_sequence(v41, 855_000) == 855_000 * 890 == 760_950_000
    assert roofline.kv_bytes_per_sequence(v41, 3, "fp8") == 4950
    with pytest.raises(InputError, match="kv_dtype: 'int8' is not one of fp4, fp8, bf16"):
        roofline.kv_bytes_per_token(v41, "int8")


def test_kv_read_time_128k_to_855k(v41):
    r = roofline.kv_read_time_s(855_000 - 128_000, v41, "b300")
    # 727,000 x 890 B = 647.03 MB; / 8e12 B/s = 80.88 us
    assert r.bytes == 647_030_000
    assert r.seconds == pytest.approx(80.87875e-6, rel=1e-12)
    assert "80.88 us" in r.formula
    assert roofline.kv_read_time_s(727_000, v41, "b300", n_gpus=4).seconds == pytest.approx(
        80.87875e-6 / 4
    )


def test_sequences_fitting(v41):
    fit = roofline.sequences_fitting(v41, "b300", 855_000, weight_bytes_per_gpu=100e9)
    # (288e9 - 100e9) / 760.95e6 = 247.06 -> 247
    assert fit.sequences == 247 and fit.bytes_per_sequence == 760_950_000
    fit = roofline.sequences_fitting(
        v41, "b300", 855_000, weight_bytes_per_gpu=100e9, memory_fraction=0.9
    )
    # (259.2e9 - 100e9) / 760.95e6 = 209.2 -> 209
    assert fit.sequences == 209
    full = roofline.sequences_fitting(v41, "h100-sxm", 1000, weight_bytes_per_gpu=90e9)
    assert full.sequences == 0 and full.free_bytes == -10e9


# ------------------------------------------------------------------------------------ compute


def test_flops_per_token(v41):
    assert roofline.flops_per_token(v41, "decode") == 32e9
    assert roofline.flops_per_token(v41, "prefill") == 16e9
    with pytest.raises(InputError, match="phase: 'verify' is not one of"):
        roofline.flops_per_token(v41, "verify")


def test_compute_ceilings(v41):
    dec = roofline.compute_ceiling_tokens_per_s(v41, "b300", "fp4", "decode")
    assert dec.tokens_per_s == 15e15 / 32e9 == 468_750  # ~469k tok/s/GPU
    assert "468,750 tokens/s" in dec.formula
    pre = roofline.compute_ceiling_tokens_per_s(v41, "b300", "fp4", "prefill")
    assert pre.tokens_per_s == 937_500
    rack = roofline.compute_ceiling_tokens_per_s(v41, "b300", "fp4", "decode", n_gpus=72)
    assert rack.tokens_per_s == 72 * 468_750
    # the claimed 954,000 tok/s "per GPU" is above the per-GPU decode ceiling
    assert 954_000 > dec.tokens_per_s
    with pytest.raises(InputError, match="gpus.h200.dense_flops.fp4: not supported"):
        roofline.compute_ceiling_tokens_per_s(v41, "h200", "fp4", "decode")


# ------------------------------------------------------------------------------------ bandwidth


def test_bandwidth_floor():
    s = roofline.bandwidth_floor_step_s(12e9, "b300", 4)
    assert s.seconds == pytest.approx(0.375e-3, rel=1e-12) and s.bytes_per_s == 32e12


def test_active_weights_catalog_and_derived(v41):
    cat = roofline.active_weight_bytes_per_token(v41)
    assert (cat.method, cat.bytes) == ("catalog", 12e9)
    der = roofline.active_weight_bytes_per_token(v41, moe_layers=40)
    # routed: 40 x 6 x 18.8e6 = 4.512e9 B; routed params 40 x 6 x 3 x 5120 x 2304 = 8,493,465,600
    # dense: (16e9 - 8,493,465,600) x 1 B = 7,506,534,400 B; total 12,018,534,400 B (+0.15 %)
    assert der.method == "derived"
    assert der.routed_bytes == 4_512_000_000
    assert der.dense_bytes == 7_506_534_400
    assert der.bytes == 12_018_534_400
    assert "+0.15 % vs catalog 12 GB" in der.formula


def test_routed_expert_size_consistent_with_shapes(v41):
    # 3 x 5120 x 2304 params x (4 bits + 8-bit scale per 32) / 8 = 18,800,640 B ~ "18.8 MB"
    params = 3 * v41.architecture.hidden_size * v41.moe.moe_intermediate_size
    assert params * (0.5 + 1 / 32) == 18_800_640
    assert v41.weights.routed_expert_bytes == pytest.approx(18_800_640, rel=1e-4)


def test_active_weights_not_derivable_without_catalog_figure():
    v3 = catalogs.load_model("deepseek-v3")
    with pytest.raises(InputError, match="deepseek-v3.yaml: moe.num_moe_layers: unknown"):
        roofline.active_weight_bytes_per_token(v3)


def test_batch1_decode_ceiling(v41):
    b = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4)
    # 12e9 / (4 x 8e12) = 0.375 ms/step -> 2,666.7 tokens/s
    assert b.step_s == pytest.approx(0.375e-3)
    assert b.tokens_per_s == pytest.approx(2666.6667, rel=1e-6)
    spec = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, acceptance_length=3.5)
    assert spec.tokens_per_s == pytest.approx(3.5 * 2666.6667, rel=1e-6)
    ctx = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, context_tokens=855_000)
    # + 760.95 MB of KV: (12e9 + 0.76095e9) / 32e12 = 0.398780 ms
    assert ctx.kv_bytes == 760_950_000
    assert ctx.step_s == pytest.approx(12.76095e9 / 32e12)
    with pytest.raises(InputError, match="acceptance_length: must be >= 1"):
        roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, acceptance_length=0.5)


# ------------------------------------------------------------------------------------ CLI


@pytest.mark.parametrize(("dtype", "expected"), [("fp4", "890"), ("fp8", "1650"), ("bf16", "3200")])
def test_cli_kv_bytes_last_line(capsys, dtype, expected):
    assert main(["kv-bytes", "deepseek-v4.1-flash", "--kv-dtype", dtype]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == expected
    assert len(out) > 1  # an explanation comes first


def test_cli_kv_bytes_json_with_context(capsys):
    assert main(["kv-bytes", "deepseek-v4.1-flash", "--json", "--context", "855000"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert json.loads(last) == {"bytes_per_token": 890, "bytes_per_sequence": 760_950_000}
    assert main(["kv-bytes", "deepseek-v4.1-flash", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {"bytes_per_token": 890}


def test_cli_unknown_model(capsys):
    assert main(["kv-bytes", "gpt-9"]) == 2
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: data/models: model: unknown model")
    assert "deepseek-v4.1-flash" in lines[0] and cap.out == ""


def test_cli_broken_yaml_by_path(capsys, tmp_path: Path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("id: x\nkv_cache: {owning_layers: [2, 8\n")
    assert main(["kv-bytes", str(bad)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {bad}: line ") and "YAML syntax error" in lines[0]


def test_cli_bad_context(capsys):
    assert main(["kv-bytes", "deepseek-v4.1-flash", "--context", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: -: --context: must be > 0, got 0"
