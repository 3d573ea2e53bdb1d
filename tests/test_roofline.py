"""Roofline arithmetic checked against numbers computed by hand, and the ``kv-bytes`` verb."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from rackbook import paths
from rackbook.cli import main
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import check, roofline


@pytest.fixture(scope="module")
def v41():
    return catalogs.load_model("deepseek-v4.1-flash")


# ------------------------------------------------------------------------------------ KV


@pytest.mark.parametrize(("dtype", "expected"), [("fp4", 890), ("fp8", 1650), ("bf16", 3200)])
def test_kv_bytes_per_token_v41(v41, dtype, expected):
    # 2.5 rows/token x (288 + 68) = 890; x (528 + 132) = 1650; x (1024 + 256) = 3200
    assert roofline.kv_bytes(v41, dtype).bytes_per_token == expected
    assert roofline.kv_rows_per_token(v41) == 2.5


def test_kv_formula_shows_the_arithmetic(v41):
    f = roofline.kv_bytes(v41, "fp4").formula
    assert "1/2 + 1/2 + 1/2 + 1/1 = 2.5" in f and "2.5 x 356 = 890 B" in f


def test_kv_bytes_v3_bf16_is_61_layers_of_576_values():
    v3 = catalogs.load_model("deepseek-v3")
    assert roofline.kv_bytes(v3, "bf16").bytes_per_token == 61 * (512 + 64) * 2 == 70272
    with pytest.raises(InputError, match=r"deepseek-v3.yaml: kv_cache.row_formats.fp4: row"):
        roofline.kv_bytes(v3, "fp4")


def test_kv_rows_come_from_dims_and_formats_not_from_a_typed_total(v41):
    """890 is derived, not copied: head dim 512 and index dim 128, 4-bit values, one scale byte
    per 16 (KV) and per 32 (indexer) values."""
    b = roofline.kv_bytes(v41, "fp4")
    assert b.kv_row_bytes == 512 * 4 / 8 + 512 / 16 == 288
    assert b.indexer_row_bytes == 128 * 4 / 8 + 128 / 32 == 68
    fp8 = roofline.kv_bytes(v41, "fp8")
    assert (fp8.kv_row_bytes, fp8.indexer_row_bytes) == (512 + 512 / 32, 128 + 128 / 32)
    assert "890" not in (paths.DATA / "models" / "deepseek-v4.1-flash.yaml").read_text()


def test_kv_layout_unknown_names_the_relative_figure():
    v4 = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    v4.kv_cache.owning_layers = v4.kv_cache.compression_ratios = None
    v4.kv_cache.relative_to = catalogs.KvRelative(
        model="deepseek-v4.1-flash", factor=4.0, approximate=True
    )
    with pytest.raises(InputError, match=r"compression_ratios: KV layout unknown \(the catalog"):
        roofline.kv_bytes(v4)


def test_v4_flash_kv_indexes_its_csa_layers_only():
    """config.json: layers 2-42 alternate ratio 4 (CSA, indexed) and 128 (HCA). Rows/token =
    21/4 + 20/128 = 5.40625; indexed rows = 21/4 = 5.25. FP8 (vLLM's recipe, FP4 index keys):
    KV 512 + 512/64 = 520 B, index key 64 + 4 = 68 B: 5.40625 x 520 + 5.25 x 68 = 3,168.25 B;
    BF16: 5.40625 x 1,024 + 5.25 x 256 = 6,880 B a token."""
    v4 = catalogs.load_model("deepseek-v4-flash")
    assert roofline.kv_bytes(v4, "fp8").bytes_per_token_exact == Fraction(12673, 4)
    assert roofline.kv_bytes(v4, "bf16").bytes_per_token_exact == 6880
    v3 = catalogs.load_model("deepseek-v3")  # 61 MLA layers x 576 values, one byte each at FP8
    assert roofline.kv_bytes(v3, "fp8").bytes_per_token_exact == 61 * 576 == 35_136


def test_kv_bytes_per_sequence_and_bad_dtype(v41):
    assert roofline.kv_bytes_per_sequence(v41, 855_000) == 855_000 * 890 == 760_950_000
    assert roofline.kv_bytes_per_sequence(v41, 3, "fp8") == 4950
    with pytest.raises(InputError, match="kv_dtype: 'fp16' is not one of fp4, fp8, bf16"):
        roofline.kv_bytes(v41, "fp16")


def test_stored_kv_read_time_128k_to_855k(v41):
    stored = roofline.kv_bytes_per_sequence(v41, 727_000)
    r = roofline.bandwidth_floor_step_s(stored, "gb300")
    # 727,000 x 890 B = 647.03 MB at 8 TB/s = 80.88 us: the STORED bytes, not what a step reads
    assert r.bytes == 647_030_000
    assert r.seconds == pytest.approx(80.87875e-6, rel=1e-12)


def test_sequences_fitting(v41):
    gb300 = catalogs.as_gpu("gb300")
    kw = dict(context=855_000, hbm=gb300.hbm_capacity_bytes, window=False)
    fit = check.capacity(v41, gb300, 1, weights=74.3e9, **kw)
    # (278 GB - 74.3 GB) / 760.95 MB = 267.7 -> 267
    assert fit.sequences == 267 and fit.per_sequence_bytes == 760_950_000
    full = check.capacity(v41, gb300, 1, weights=288e9, **kw)
    assert full.sequences == 0 and full.free_bytes == -10e9


def test_flops_per_token(v41):
    assert roofline.compute_ceiling_tokens_per_s(v41, "gb300").flops_per_token == 32e9
    assert roofline.compute_ceiling_tokens_per_s(v41, "gb300", "prefill").flops_per_token == 16e9


def test_weight_split_by_phase(v41):
    d = roofline.weight_split(v41, "decode")
    # 40 MoE layers x top-6 x 3 x 5120 x 2304 = 8,493,465,600 routed; 16e9 - that dense
    assert d.routed_params == 40 * 6 * 3 * 5120 * 2304 == 8_493_465_600
    assert d.dense_params == 16_000_000_000 - 8_493_465_600
    assert (d.routed_dtype, d.dense_dtype, d.moe_layers) == ("fp4", "fp8", 40)
    p = roofline.weight_split(v41, "prefill")  # a new prefill token passes the 20 encoder layers
    assert p.moe_layers == 20 and p.routed_params == 20 * 6 * 3 * 5120 * 2304
    assert p.dense_params == 8_000_000_000 - 4_246_732_800


def test_mixed_precision_compute_ceilings(v41):
    dec = roofline.compute_ceiling_tokens_per_s(v41, "gb300", "decode")
    # 2 x 8.4935e9 / 15e15 + 2 x 7.5065e9 / 5e15 = 1.13246 + 3.00261 = 4.13507 us -> 241,834
    t = 2 * 8_493_465_600 / 15e15 + 2 * 7_506_534_400 / 5e15
    assert dec.seconds_per_token == pytest.approx(t, rel=1e-12)
    assert round(dec.tokens_per_s) == 241_834 and 954_000 / dec.tokens_per_s == pytest.approx(
        3.945, abs=1e-3
    )
    pre = roofline.compute_ceiling_tokens_per_s(v41, "gb300", "prefill")
    # 2 x 4.2467e9 / 15e15 + 2 x 3.7533e9 / 5e15 = 0.56623 + 1.50131 = 2.06754 us -> 483,667
    assert round(pre.tokens_per_s) == 483_667 and 954_000 / pre.tokens_per_s == pytest.approx(
        1.972, abs=1e-3
    )
    hgx = roofline.compute_ceiling_tokens_per_s(v41, "b300", "decode")
    assert hgx.tokens_per_s == pytest.approx(dec.tokens_per_s * 13.5 / 15, rel=1e-12)  # 0.9x peaks
    rack = roofline.compute_ceiling_tokens_per_s(v41, "gb300", "decode", 72)
    assert rack.tokens_per_s == pytest.approx(72 * dec.tokens_per_s)
    h200 = roofline.compute_ceiling_tokens_per_s(v41, "h200", "decode")
    # no FP4 on Hopper: all 16e9 params at FP8 1.979 PF -> 61,844 tok/s, and it says so
    assert round(h200.tokens_per_s) == round(1.979e15 / 32e9)
    assert any("no fp4 tensor cores" in n for n in h200.notes)
    more = roofline.compute_ceiling_tokens_per_s(v41, "gb300", active_scale=1.2)
    assert more.tokens_per_s == pytest.approx(dec.tokens_per_s / 1.2)


def test_bandwidth_floor():
    s = roofline.bandwidth_floor_step_s(12e9, "b300", 4)
    assert s.seconds == pytest.approx(0.375e-3, rel=1e-12) and s.bytes_per_s == 32e12


def test_context_reads_at_both_ends(v41):
    """The sparse end scans index keys (2.5 rows x 68 B per context token) and reads the top-512
    rows; the dense end reads every row in every consuming layer."""
    r = roofline.decode_kv_reads(v41, 128_000)
    assert r.scan_bytes_per_token == 2.5 * 68 == 170
    # dense: (6 + 6 + 6) consumers of the ratio-2 sources x 1/2 + 20 x 1, x 288 B, + the scan
    assert r.dense_bytes_per_token == (18 / 2 + 20) * 288 + 170 == 8522
    fixed = 38 * 512 * 288 + 4 * 16_384 * 68
    assert r.sparse_bytes == 170 * 128_000 + fixed
    g = roofline.context_growth(v41, "gb300", 128_000, 855_000)
    # 727,000 x 170 B = 123.59 MB at 8 TB/s = 15.45 us; dense 727,000 x 8522 B = 6.196 GB: 774 us
    assert g.sparse_bytes == 727_000 * 170 and g.sparse_ms == pytest.approx(15.44875e-3)
    assert g.dense_bytes == 727_000 * 8522 and g.dense_ms == pytest.approx(0.7744367, rel=1e-6)
    assert 0.6 / g.sparse_ms == pytest.approx(38.8, abs=0.1)  # sequences whose scans add 0.6 ms


def test_distinct_experts_of_a_verify_step():
    # 6 tokens, top-6 of 384: 384 x (1 - (1 - 6/384)^6) = 34.62 experts per layer
    assert roofline.distinct_experts(384, 6, 6) == pytest.approx(34.6227, abs=1e-4)
    assert roofline.distinct_experts(384, 6, 1) == pytest.approx(6.0)
    assert roofline.distinct_experts(384, 6, 0) == 0


def test_active_weights_per_step(v41):
    one = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300")
    # dense 7,506,534,400 params x 1 B (FP8) + 40 x 6 x 18,800,640 B of FP4 experts
    assert one.weight_bytes == pytest.approx(7_506_534_400 + 40 * 6 * 18_800_640, rel=1e-12)
    assert one.weight_bytes == pytest.approx(12_018_688_000, rel=1e-12)
    six = roofline.batch1_decode_ceiling_tokens_per_s(
        v41, "b300", acceptance_length=6, routing="uniform"
    )
    routed = 40 * 34.62270569 * 18_800_640
    assert six.weight_bytes == pytest.approx(7_506_534_400 + routed, rel=1e-9)


def test_routed_expert_size_consistent_with_shapes(v41):
    params = 3 * 5120 * 2304
    # FP4 values (0.5 B) + one UE8M0 scale byte per 32 values
    assert params * (0.5 + 1 / 32) == 18_800_640 == v41.weights.routed_expert_bytes


def test_batch1_decode_ceiling(v41):
    b = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4)
    # 12.0187 GB / 32 TB/s = 0.37558 ms -> 2,662.5 tokens/s
    assert b.step_s == pytest.approx(12_018_688_000 / 32e12)
    assert b.tokens_per_s == pytest.approx(32e12 / 12_018_688_000)
    spec = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, acceptance_length=3.51)
    # a 6-token verify at the fewest bytes: the 6 tokens may all pick the same 6 experts:
    # 7.5065 GB + 40 x 6 x 18.80 MB = 12.0187 GB + 0.52 GB drafter (FP8): 8,958 tokens/s
    bytes_ = 7_506_534_400 + 40 * 6 * 18_800_640 + 520_000_000
    assert spec.verify_tokens == 6 and spec.draft_bytes == 520e6
    assert spec.tokens_per_s == pytest.approx(3.51 * 32e12 / bytes_, rel=1e-8)  # 8,958
    assert 826 / spec.tokens_per_s == pytest.approx(0.0922, abs=1e-3)  # ~9 % of that bound
    # uniform routing's expectation (not a bound): 34.623 experts per layer, 3,297 tokens/s
    uni = roofline.batch1_decode_ceiling_tokens_per_s(
        v41, "b300", 4, acceptance_length=3.51, routing="uniform"
    )
    bytes_ = 7_506_534_400 + 40 * 34.62270569 * 18_800_640 + 520_000_000
    assert uni.tokens_per_s == pytest.approx(3.51 * 32e12 / bytes_, rel=1e-8)
    ctx = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, context_tokens=855_000)
    # the sparse reads plus the sliding window: 40 layers x 128 rows x 528 B (FP8) = 2,703,360 B
    assert ctx.kv_bytes == roofline.decode_kv_reads(v41, 855_000).sparse_bytes + 2_703_360
    with pytest.raises(InputError, match="acceptance_length: must be >= 1"):
        roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, acceptance_length=0.5)


def test_backbone_storage(v41):
    s = roofline.storage(v41)
    # 40 x 384 x 18,800,640 B = 288.78 GB; (552e9 - 40 x 384 x 35,389,440) params x 1 B
    assert s.routed_bytes == 40 * 384 * 18_800_640
    assert s.dense_bytes == 552e9 - 40 * 384 * 35_389_440
    assert s.per_gpu_bytes(4) == s.dense_bytes + s.routed_bytes / 4


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
    assert capsys.readouterr().err.strip() == (
        "error: -: --context: must be an integer from 1 to 100,000,000 (tokens), got '0'"
    )


def test_the_issues_context_numbers_by_hand(v41):
    """Issue 20's figures, from the catalog (data/models/deepseek-v4.1-flash.yaml) by hand.

    Sliding window per decode step: 40 layers x 128 rows x (512 x 8 / 8 + 512 / 32) B = 40 x
    128 x 528 = 2,703,360 B ("about 2.7 MB per sequence per step"). Index scan FLOP per token:
    2 x 64 heads x 128 dims x (1/2 + 1/2 + 1/2 + 1/1) rows per context token = 40,960 FLOP per
    context token: 5.243 GFLOP at 128,000 ("about 5.2") and 35.02 at 855,000 ("35"), against
    2 x 16e9 = 32 GFLOP of GEMMs. The fixed terms add 1.074 G (4 reindex layers x 16,384 rows x
    16,384), 2.550 G (38 layers x 512 rows x 4 x 64 x 512) and 0.671 G (window): 9.538 GFLOP
    at 128,000. Prefill's prefix reads pass the 20 encoder layers: 1.5 x 68 B x 128,000 +
    18 x 512 x 288 B = 15,710,208 B ("about 15.7 MB"), not the 31,819,776 B of all 40 layers.
    """
    from rackbook.physics.roofline import attention_flops, context_reads

    d128, d855 = attention_flops(v41, 128_000), attention_flops(v41, 855_000)
    assert d128.scan == 2 * 64 * 128 * 2.5 * 128_000 == pytest.approx(5.243e9, rel=1e-3)
    assert d855.scan == pytest.approx(35.02e9, rel=1e-3)
    assert (d128.pool, d128.rows, d128.window) == (
        4 * 16_384 * 16_384,
        38 * 512 * 4 * 64 * 512,
        40 * 128 * 4 * 64 * 512,
    )
    assert d128.total == pytest.approx(9_537_847_296)
    p128 = attention_flops(v41, 128_000, "prefill")  # 3 index sources, 18 + 20 layers
    assert (p128.scan, p128.pool) == (2 * 64 * 128 * 1.5 * 128_000, 0)
    assert p128.total == 4_689_231_872
    r = context_reads(v41, 128_000)
    assert r.window == 2_703_360 and r.total == 31_819_776 + 2_703_360
    assert r.total - r.window == roofline.decode_kv_reads(v41, 128_000).sparse_bytes
    pre = context_reads(v41, 128_000, "prefill")
    assert (pre.scan, pre.rows, pre.pool, pre.window) == (13_056_000, 2_654_208, 0, 0)
    assert pre.total == 15_710_208
    assert context_reads(v41, 64).window == 40 * 64 * 528  # a window not yet full
    assert attention_flops(v41, 0).total == 0 and context_reads(v41, 0).total == 0
    # the compute ceiling at 128,000 tokens: 4.13508 us of GEMMs + 9.5378e9 / 5e15 = 6.04265 us
    c = roofline.compute_ceiling_tokens_per_s(v41, "gb300", context=128_000)
    assert c.tokens_per_s == pytest.approx(1 / 6.0426452992e-6)
    assert c.flops_per_token == 32_000_000_000 + 9_537_847_296


# ------------------------------------------------------------------ edges (issue 39, item 7)


def _with(model, part: str, **update):
    """``model`` with fields of one part (``weights``, ``architecture``, ...) replaced."""
    return model.model_copy(update={part: getattr(model, part).model_copy(update=update)})


def test_an_unknown_catalog_field_is_named(v41):
    assert roofline.need(v41, a=3, b__c=5) == [3, 5]
    with pytest.raises(InputError) as err:
        roofline.weight_split(_with(v41, "architecture", hidden_size=None))
    assert (err.value.file, err.value.field) == (v41.file, "architecture.hidden_size")
    assert err.value.problem == "unknown in the model catalog"
    no_head = _with(catalogs.load_model("deepseek-v3"), "architecture", mla=None)
    with pytest.raises(InputError, match=r"deepseek-v3.yaml: architecture.head_dim: unknown"):
        roofline.kv_bytes(no_head, "bf16")


def test_kv_row_bytes_and_the_rounded_token(v41):
    assert roofline.kv_bytes(v41, "fp4").row_bytes == 288 + 68 == 356
    v4 = catalogs.load_model("deepseek-v4-flash")
    fp8 = roofline.kv_bytes(v4, "fp8")  # 3,168.25 B a token: 3,169 rounded up
    assert (fp8.row_bytes, fp8.bytes_per_token) == (520 + 68, 3169)
    assert roofline.kv_bytes_per_sequence(v4, 3, "fp8") == 9505  # 9,504.75 rounded up
    assert roofline.kv_bytes_per_sequence(v4, 4, "fp8") == 12_673


def test_kv_formula_of_many_layers_and_of_some_indexed():
    """Past 8 owning layers the formula gives their count and range, and where only some
    layers carry an index key, their rows apart."""
    v4 = catalogs.load_model("deepseek-v4-flash")
    f = roofline.kv_bytes(v4, "fp8").formula
    assert f.startswith("KV-owning layers: 2..42 (41 layers); rows/token = 41 layers, sum of")
    assert "= 5.40625; row: KV 512 x 8 bit / 8 + 8 x 1 scale B = 520 B; indexer 128" in f
    assert f.endswith("bytes/token = 5.40625 x 520 + 5.25 indexed rows x 68 = 3168.25 B")
    v3 = roofline.kv_bytes(catalogs.load_model("deepseek-v3"), "bf16")
    assert v3.indexer_row_bytes == 0 and "indexer" not in v3.formula  # no index keys
    assert v3.formula.endswith(
        "row: KV 576 x 16 bit / 8 = 1152 B; bytes/token = 61 x 1152 = 70272 B"
    )
    # a model with no attention section indexes every owning layer
    v41 = catalogs.load_model("deepseek-v4.1-flash")
    every = roofline.kv_bytes(v41.model_copy(update={"attention": None}), "fp4")
    assert every.bytes_per_token == 890 and "indexed rows" not in every.formula


def test_kv_layout_unknown_without_a_relative_figure():
    v4 = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    v4.kv_cache.owning_layers = v4.kv_cache.compression_ratios = None
    with pytest.raises(InputError) as err:
        roofline.kv_rows_per_token(v4)
    assert (err.value.field, err.value.problem) == (
        "kv_cache.compression_ratios",
        "KV layout unknown",
    )


def test_window_bytes_of_a_sequence(v41):
    # 40 layers x 128 rows x 528 B (FP8 rows); V4-Flash 43 x 128 x 520; V3 has no window
    assert roofline.window_bytes_per_sequence(v41) == 40 * 128 * 528 == 2_703_360
    v4 = catalogs.load_model("deepseek-v4-flash")
    assert roofline.window_bytes_per_sequence(v4) == 43 * 128 * 520
    assert roofline.window_bytes_per_sequence(catalogs.load_model("deepseek-v3")) == 0
    no_fp8 = v41.model_copy(deep=True)
    no_fp8.kv_cache.row_formats.fp8 = None
    assert roofline.window_bytes_per_sequence(no_fp8) == 0


def test_cli_kv_bytes_says_the_window_is_apart(capsys):
    assert main(["kv-bytes", "deepseek-v4.1-flash", "--context", "1000"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "the fixed-size sliding-window cache is not per-token and is not counted" in out
    assert "per sequence of 1000 tokens: 1000 x 890 B = 890000 B (890 kB)" in out
    assert out[-2:] == ["bytes per token:", "890"]
    assert main(["kv-bytes", "deepseek-v3", "--kv-dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "sliding-window" not in out and out.splitlines()[-1] == "70272"


def test_weight_split_sums_dtypes_and_phases(v41):
    d = roofline.weight_split(v41)
    assert d.active_params == 16_000_000_000 and d.phase == "decode"
    assert d.dense_bytes == 7_506_534_400  # FP8: one byte a parameter
    bf16 = roofline.weight_split(_with(v41, "weights", dense_dtype=None, routed_expert_dtype=None))
    assert (bf16.dense_dtype, bf16.routed_dtype) == ("bf16", "bf16")
    assert bf16.dense_bytes == 2 * 7_506_534_400
    fp8 = roofline.weight_split(_with(v41, "weights", routed_expert_dtype=None))
    assert fp8.routed_dtype == "fp8"
    v3 = catalogs.load_model("deepseek-v3")  # no encoder: prefill passes all 58 MoE layers
    assert roofline.moe_layers(v3, "prefill") == roofline.moe_layers(v3) == 58
    assert (roofline.phase_layers(v41, "prefill"), roofline.phase_layers(v41, "decode")) == (20, 40)
    small = _with(v41, "params", active_decode=8_000_000_000)  # below 8.49 G routed
    with pytest.raises(InputError) as err:
        roofline.weight_split(small)
    assert (err.value.file, err.value.field) == (v41.file, "params.active_decode")
    assert (
        err.value.problem.startswith("smaller than the 8.49")
        and "of 40 MoE layers" in err.value.problem
    )
    roofline.weight_split(_with(v41, "params", active_decode=8_493_465_600))  # dense 0: allowed


def test_expert_and_drafter_bytes_from_the_catalog(v41):
    assert roofline.expert_bytes(v41) == 18_800_640  # the catalog's figure
    assert roofline.draft_bytes(v41) == 520e6
    v3 = catalogs.load_model("deepseek-v3")
    assert roofline.draft_bytes(v3) == 0.0
    assert roofline.expert_bytes(v3) == 3 * 7168 * 2048 == 44_040_192  # FP8: a byte each
    bf16 = _with(v3, "weights", routed_expert_dtype=None, dense_dtype=None)
    assert roofline.expert_bytes(bf16) == 2 * 44_040_192
    dense_fp8 = _with(v3, "weights", routed_expert_dtype=None)
    assert roofline.expert_bytes(dense_fp8) == 44_040_192
    with pytest.raises(InputError, match=r"deepseek-v3.yaml: hidden: unknown in the model"):
        roofline.expert_bytes(_with(v3, "architecture", hidden_size=None))


def test_storage_of_v3_from_its_total(v41):
    """No backbone figure: the 671e9 total; 58 x 256 experts of 44,040,192 B (FP8)."""
    v3 = catalogs.load_model("deepseek-v3")
    s = roofline.storage(v3)
    assert s.routed_bytes == 58 * 256 * 44_040_192 == 653_908_770_816
    assert s.dense_bytes == 671e9 - 653_908_770_816
    assert s.total_bytes == 671e9
    assert s.per_gpu_bytes(8) == s.dense_bytes + 653_908_770_816 / 8
    v41s = roofline.storage(v41)
    assert v41s.total_bytes == v41s.routed_bytes + v41s.dense_bytes == 297_196_032_000
    with pytest.raises(InputError) as err:
        roofline.storage(_with(v3, "params", total=600e9))
    assert (err.value.field, err.value.problem) == ("params.backbone", "below the routed params")
    bf16 = roofline.storage(_with(v3, "weights", dense_dtype=None))  # dense at 2 B a param
    assert bf16.dense_bytes == 2 * (671e9 - 653_908_770_816)


def test_served_formats(v41):
    """V3 lists an NVFP4 checkpoint beside its FP8 one: the fewest bytes (FP4 experts) unless a
    precision is stated; V4.1-Flash lists one format."""
    v3 = catalogs.load_model("deepseek-v3")
    fewest = roofline.served(v3)
    assert (fewest.routed_dtype, fewest.dense_dtype, fewest.stated) == ("fp4", "fp8", False)
    assert fewest.text == (
        "fp4 experts, fp8 dense (nvidia/DeepSeek-V3-0324-NVFP4: the fewest bytes the catalog lists)"
    )
    assert roofline.expert_bytes(fewest.model) == 3 * 7168 * 2048 / 2  # no catalog figure
    fp8 = roofline.served(v3, "fp8")
    assert (fp8.text, fp8.stated) == ("fp8 experts, fp8 dense (as published; stated)", True)
    assert fp8.model is v3  # the published format: the model itself
    bf16 = roofline.served(v3, "bf16")  # not listed: as stated, the published dense dtype
    assert (bf16.routed_dtype, bf16.dense_dtype) == ("bf16", "fp8")
    assert bf16.text == "bf16 experts, fp8 dense (as stated; stated)"
    assert (
        roofline.served(v41).text == "fp4 experts, fp8 dense (as published: the only format listed)"
    )
    # the catalog's FP4 expert bytes (with scales) kept in the native format only
    assert roofline.expert_bytes(roofline.served(v41, "fp4").model) == 18_800_640
    assert roofline.expert_bytes(roofline.served(v41, "fp8").model) == 3 * 5120 * 2304
    with pytest.raises(InputError, match="precision: 'fp16' is not one of fp4, fp8, bf16"):
        roofline.served(v41, "fp16")
    # sizes unknown: ordered by bytes per expert parameter, FP4 still the fewest
    sizeless = _with(v3, "moe", num_routed_experts=None)
    assert roofline.served(sizeless).routed_dtype == "fp4"


def test_context_growth_of_a_batch_over_gpus(v41):
    one = roofline.context_growth(v41, "gb300", 128_000, 855_000)
    four = roofline.context_growth(v41, "gb300", 128_000, 855_000, batch=3, n_gpus=4)
    assert (four.lo, four.hi, four.batch) == (128_000, 855_000, 3)
    assert four.sparse_bytes == 3 * one.sparse_bytes == 3 * 727_000 * 170
    assert four.dense_bytes == 3 * 727_000 * 8522
    assert four.sparse_ms == pytest.approx(1000 * 3 * 727_000 * 170 / 32e12, rel=1e-12)
    assert four.dense_ms == pytest.approx(1000 * 3 * 727_000 * 8522 / 32e12, rel=1e-12)
    r = roofline.decode_kv_reads(v41, 128_000, "fp8")  # index keys 132 B at FP8
    assert (r.context, r.kv_dtype, r.scan_bytes_per_token) == (128_000, "fp8", 2.5 * 132)


def test_attention_of_an_mla_model_without_an_indexer():
    """V3: 61 MLA layers, every row read, 128 heads x (576 + 512) x 2 FLOP a row; no scan, no
    pool, no window."""
    v3 = catalogs.load_model("deepseek-v3")
    f = roofline.attention_flops(v3, 1000)
    assert (f.scan, f.pool, f.window) == (0, 0, 0)
    assert f.rows == 61 * 1000 * 2 * 128 * (576 + 512) == 16_990_208_000
    r = roofline.context_reads(v3, 1000, "decode", "bf16")
    assert (r.scan, r.pool, r.window) == (0, 0, 0)
    assert r.rows == r.dense == 61 * 1000 * 1152


def test_sources_without_consumers_read_their_own_layer():
    """V4-Flash names no consumers: each owning layer's rows are read by that layer alone."""
    v4 = catalogs.load_model("deepseek-v4-flash")
    r = roofline.decode_kv_reads(v4, 1000, "fp8")
    # 21 CSA layers of ratio 4, 20 HCA of 128: 5,406.25 rows of 520 B; 5,250 index keys of 68 B
    assert r.dense_bytes == pytest.approx(5406.25 * 520 + 5250 * 68, rel=1e-12)


def test_compute_ceiling_words_and_context(v41):
    h = roofline.compute_ceiling_tokens_per_s(v41, "h200", context=1000)
    assert h.notes == ("H200 has no fp4 tensor cores: the routed weights run at fp8",)
    attn = roofline.attention_flops(v41, 1000).total
    assert h.seconds_per_token == pytest.approx((32e9 + attn) / 1979e12, rel=1e-12)
    assert h.flops_per_token == round(32e9 + attn)
    assert "attention at 1,000 tokens / 1.979 PFLOP/s (fp8)" in h.formula
    assert h.formula.endswith(
        "x 1 GPU = 56,063 tokens/s (H200 has no fp4 tensor cores: the routed weights run at fp8)"
    )
    g = roofline.compute_ceiling_tokens_per_s(v41, "gb300")
    assert g.notes == () and not g.formula.endswith(")")


def test_distinct_experts_and_verify_counts(v41):
    assert roofline.distinct_experts(384, 6, -1) == 0.0
    assert roofline.distinct_experts(384, 6, 0.5) == pytest.approx(384 * (1 - (378 / 384) ** 0.5))
    assert roofline.distinct_experts(8, 8, 3) == 8.0  # every expert
    assert roofline.verify_count(v41, 1) == 1
    assert roofline.verify_count(v41, 1.5) == 6  # DSpark drafts 5: a verify step carries 6
    assert roofline.verify_count(v41, 6) == 6  # the most a step keeps
    with pytest.raises(InputError) as err:
        roofline.verify_count(v41, 6.5)
    assert (err.value.file, err.value.field) == ("-", "tokens_per_step")
    assert err.value.problem.startswith("6.5 is out of range") and "at most 6" in err.value.problem
    v3 = catalogs.load_model("deepseek-v3")  # no drafter in the catalog: the tokens rounded up
    assert (roofline.verify_count(v3, 2.5), roofline.verify_count(v3, 3)) == (3, 3)


def test_batch_decode_ceiling_of_several_sequences(v41):
    """2 sequences of 1,000 tokens on 4 B300 at 3.51 accepted: 12 tokens verified; the fewest
    experts 6 a layer; each sequence's context read; 2 x 3.51 tokens a step."""
    b = roofline.batch1_decode_ceiling_tokens_per_s(
        v41, "b300", 4, 3.51, context_tokens=1000, batch=2
    )
    kv = roofline.context_reads(v41, 1000).total
    weights = 7_506_534_400 + 40 * 6 * 18_800_640
    assert (b.kv_bytes, b.weight_bytes, b.draft_bytes) == (kv, weights, 520e6)
    assert b.step_s == pytest.approx((weights + 2 * kv + 520e6) / 32e12, rel=1e-12)
    assert b.tokens_per_s == pytest.approx(2 * 3.51 / b.step_s, rel=1e-12)
    assert (
        "(fewest routing of 12 tokens)" in b.formula
        and "2 sequences x 8.686 MB context" in b.formula
    )
    none = roofline.batch1_decode_ceiling_tokens_per_s(
        v41, "b300", 4, context_tokens=1000, kv_dtype=None
    )
    assert none.kv_bytes == 0.0 and none.draft_bytes == 0.0 and none.verify_tokens == 1
    scaled = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, active_scale=1.2)
    assert scaled.weight_bytes == pytest.approx(1.2 * weights, rel=1e-12)
    exactly_one = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, acceptance_length=1)
    assert exactly_one.tokens_per_s == pytest.approx(32e12 / weights, rel=1e-12)
    with pytest.raises(InputError) as err:
        roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300", 4, acceptance_length=0.999)
    assert (err.value.file, err.value.field) == ("-", "acceptance_length")


def test_catalog_edges_of_the_context_arithmetic(v41):
    """Consumers past the last layer are cut at it; a model's own defaults (one GPU, the decode
    phase, the KV dtype given); a one-token draft still reads the drafter; missing counts named."""
    over = v41.model_copy(deep=True)
    over.kv_cache.consumers = [6, 6, 6, 25]  # layer 20 read by 20 layers at most
    assert roofline.decode_kv_reads(over, 128_000).dense_bytes_per_token == 8522
    assert roofline.attention_flops(v41, 128_000).phase == "decode"
    one = roofline.batch1_decode_ceiling_tokens_per_s(v41, "b300")
    assert one.step_s == pytest.approx(12_018_688_000 / 8e12, rel=1e-12)  # one GPU's 8 TB/s
    g = roofline.context_growth(v41, "gb300", 128_000, 855_000, "fp8")
    assert g.sparse_bytes == 727_000 * 2.5 * 132  # FP8 index keys
    mtp1 = _with(v41, "speculative", draft_tokens=1)  # 1.5 kept of 2 verified
    b = roofline.batch1_decode_ceiling_tokens_per_s(mtp1, "b300", acceptance_length=1.5)
    assert (b.verify_tokens, b.draft_bytes) == (2, 520e6)
    with pytest.raises(InputError) as err:
        roofline.phase_layers(_with(v41, "architecture", num_layers=None), "decode")
    assert err.value.field == "architecture.num_layers"
    with pytest.raises(InputError) as err:
        roofline.batch1_decode_ceiling_tokens_per_s(
            _with(v41, "moe", num_routed_experts=None), "b300"
        )
    assert err.value.field == "moe.num_routed_experts"
