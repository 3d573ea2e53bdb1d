"""The hardware and model catalogs: the published figures with their sources, and errors that
name the file, the field path and the problem."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from rackbook import paths
from rackbook.errors import InputError
from rackbook.inputs import catalogs


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of data/ under a temporary repository root, so errors read ``data/...``."""
    shutil.copytree(paths.DATA / "models", tmp_path / "data" / "models")
    shutil.copy(paths.DATA / "hardware.yaml", tmp_path / "data" / "hardware.yaml")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "DATA", tmp_path / "data")
    return tmp_path


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# ------------------------------------------------------------------------------------ values


def test_gpu_figures_are_the_published_dense_figures():
    gb300, b300 = catalogs.gpu("gb300"), catalogs.gpu("b300")
    # GB300 NVL72: 1,080 PF dense FP4, 720 PF FP8 and 360 PF BF16 sparse per 72 GPUs
    assert (gb300.flops("fp4"), gb300.flops("fp8"), gb300.flops("bf16")) == (15e15, 5e15, 2.5e15)
    assert 1080e15 / 72 == gb300.flops("fp4") and 720e15 / 2 / 72 == gb300.flops("fp8")
    # HGX B300: 108 PF dense FP4 and 72 PF FP8 sparse per 8 GPUs: a lower operating point
    assert (b300.flops("fp4"), b300.flops("fp8"), b300.flops("bf16")) == (13.5e15, 4.5e15, 2.25e15)
    assert 108e15 / 8 == b300.flops("fp4")
    assert (gb300.hbm_capacity_bytes, b300.hbm_capacity_bytes) == (278e9, 262.5e9)
    assert gb300.hbm_capacity_bytes_max == b300.hbm_capacity_bytes_max == 288e9
    assert gb300.hbm_bandwidth_bytes_per_s == b300.hbm_bandwidth_bytes_per_s == 8e12
    assert gb300.nvlink_bandwidth_bytes_per_s == 1.8e12
    b200, gb200 = catalogs.gpu("b200"), catalogs.gpu("gb200")
    assert (b200.flops("fp4"), b200.flops("fp8"), b200.flops("bf16")) == (9e15, 4.5e15, 2.25e15)
    assert (gb200.flops("fp4"), gb200.hbm_capacity_bytes) == (10e15, 186e9)
    h200, h100 = catalogs.gpu("h200"), catalogs.gpu("h100-sxm")
    assert (h200.hbm_capacity_bytes, h200.hbm_bandwidth_bytes_per_s) == (141e9, 4.8e12)
    assert (h100.hbm_capacity_bytes, h100.hbm_bandwidth_bytes_per_s) == (80e9, 3.35e12)
    for g in (h200, h100):
        assert g.flops("fp4") is None
        # NVIDIA prints 3,958 / 1,979 TFLOPS with sparsity: dense is half
        assert (g.flops("fp8"), g.flops("bf16")) == (3.958e15 / 2, 1.978e15 / 2)
        assert g.nvlink_bandwidth_bytes_per_s == 0.9e12
        assert g.run_precision("fp4") == "fp8"  # no FP4 tensor cores: FP4 weights run at FP8
    assert gb300.run_precision("fp4") == "fp4"


def test_systems_and_prices():
    rack = catalogs.system("gb300-nvl72")
    assert (rack.gpu, rack.gpus, rack.trays, rack.gpus_per_tray) == ("gb300", 72, 18, 4)
    # the aggregate equals 72 x the per-GPU figure: 72 x 8 TB/s = 576 TB/s
    assert rack.aggregate_hbm_bandwidth_bytes_per_s == 576e12 == 72 * 8e12
    assert rack.nvlink_bandwidth_bytes_per_s == 130e12
    assert (catalogs.system("gb300-tray").gpu, catalogs.system("gb300-tray").gpus) == ("gb300", 4)
    assert (catalogs.system("hgx-b300").gpu, catalogs.system("hgx-b300").gpus) == ("b300", 8)
    assert (catalogs.system("hgx-h200").gpu, catalogs.system("hgx-h200").gpus) == ("h200", 8)
    p = catalogs.price("gb300-tco-hyperscaler")
    assert (p.gpu, p.usd_per_gpu_hour, p.approximate) == ("gb300", 2.652, True)
    assert catalogs.price("gb300-oci-list").usd_per_gpu_hour == 18.0
    t = catalogs.token_price("inferencex-tco-calculator")
    assert (t.usd_per_m_uncached, t.usd_per_m_cached, t.read) == (1.0, 0.1, "2026-12-02")
    assert t.sources[0].endswith("InferenceX-app/blob/main/docs/tco-calculator.md")


def test_token_prices_are_read_from_the_catalog(tmp_root):
    """rack-scaling's token revenue follows data/hardware.yaml's token prices (no copy in
    code): 1,000 computed + 500 cached tok/s per GPU at $1 / $0.10 per M = $3.78 per GPU-hour;
    at $2 / $0.50, $9.0."""
    import pandas as pd

    from rackbook.results import rack_scaling

    row = pd.Series({"computed_tok_s_per_gpu": 1000.0, "cached_input_tok_s_per_gpu": 500.0})
    assert rack_scaling.token_revenue(row) == pytest.approx((1000 + 50) * 3600 / 1e6)
    _edit(
        tmp_root / "data" / "hardware.yaml",
        lambda d: d["token_prices"]["inferencex-tco-calculator"].update(
            usd_per_m_uncached=2.0, usd_per_m_cached=0.5
        ),
    )
    assert rack_scaling.token_revenue(row) == pytest.approx((2000 + 250) * 3600 / 1e6)


def test_every_catalog_entry_cites_public_urls_and_no_internal_sheet():
    cat = catalogs.load_hardware()
    for section in ("gpus", "systems", "prices", "token_prices"):
        for key, entry in getattr(cat, section).items():
            assert entry.id == key
            assert entry.sources and all(s.startswith("https://") for s in entry.sources)
    for mid in catalogs.list_models():
        m = catalogs.load_model(mid)
        assert all(s.startswith("https://") for s in m.sources)
        assert m.kv_cache.source.startswith("https://")
    for f in [paths.DATA / "hardware.yaml", *sorted((paths.DATA / "models").glob("*.yaml"))]:
        assert "claims-context" not in f.read_text() and "reference sheet" not in f.read_text()


def test_memory_as_reported_and_grace_and_nic():
    """H200: 143,771 MiB as nvidia-smi reports (the calibration's run.json) = 150,754,820,096
    B, not the 141 GB marketing figure; GB300 without a reported figure keeps its 288 GB
    nameplate; Grace LPDDR5X up to 17 TB per 72-GPU rack = 236 GB a GPU; NICs 800 Gb/s (CX-8)
    = 100 GB/s per GB300, 400 Gb/s (CX-7) = 50 GB/s per H200."""
    assert catalogs.gpu("h200").memory_bytes == 143_771 * 2**20 == 150_754_820_096
    assert "143771 MiB" in (paths.DATA / "calibration/h200-reference/run.json").read_text()
    assert catalogs.gpu("gb300").memory_bytes == 288e9
    assert catalogs.gpu("gb200").host_memory_bytes == catalogs.gpu("gb300").host_memory_bytes
    assert catalogs.gpu("gb300").host_memory_bytes == 236e9 and 17e12 / 72 >= 236e9
    assert catalogs.gpu("h200").host_memory_bytes is None
    assert catalogs.nic_bandwidth("gb300") == 800e9 / 8
    assert catalogs.nic_bandwidth("H200") == 400e9 / 8
    assert catalogs.nic_bandwidth("b300") == 100e9


def test_model_entries():
    assert catalogs.list_models() == [
        "deepseek-r1",
        "deepseek-v3",
        "deepseek-v4-flash",
        "deepseek-v4.1-flash",
    ]
    m = catalogs.load_model("deepseek-v4.1-flash")
    a = m.architecture
    assert (a.num_layers, a.num_encoder_layers, a.num_decoder_layers) == (40, 20, 20)
    assert (a.hidden_size, a.num_attention_heads, a.head_dim, a.index_head_dim) == (
        5120,
        64,
        512,
        128,
    )
    assert (a.sliding_window, a.vocab_size, a.max_context_tokens) == (128, 129280, 1048576)
    assert (m.moe.num_shared_experts, m.moe.num_routed_experts, m.moe.experts_per_token) == (
        1,
        384,
        6,
    )
    assert m.moe.moe_intermediate_size == 2304
    assert (m.params.backbone, m.params.engram) == (552e9, 196e9)
    assert (m.active_params("prefill"), m.active_params("decode")) == (8e9, 16e9)
    assert m.kv_cache.owning_layers == [2, 8, 14, 20]
    assert m.kv_cache.compression_ratios == [2, 2, 2, 1]
    assert m.kv_cache.consumers == [6, 6, 6, 20]  # layers 2-7, 8-13, 14-19, 20-39
    assert m.moe.num_moe_layers == 40 and m.moe.num_moe_layers_source.startswith("https://")
    assert m.attention is not None and m.attention.index_topk == 512
    assert m.speculative is not None and m.speculative.draft_tokens == 5
    assert m.file == "data/models/deepseek-v4.1-flash.yaml"

    v4 = catalogs.load_model("deepseek-v4-flash")
    assert (v4.params.total, v4.active_params("decode"), v4.architecture.num_layers) == (
        284e9,
        13e9,
        43,
    )
    assert v4.architecture.num_encoder_layers is None  # unknown stays null
    # config.json: layers 2-42 alternate CSA (ratio 4, indexed) and HCA (ratio 128)
    assert v4.kv_cache.owning_layers == list(range(2, 43))
    assert v4.kv_cache.compression_ratios[:3] == [4, 128, 4]
    assert v4.weights.routed_expert_dtype == "fp4"
    assert v4.weights.routed_expert_bytes == 3 * 4096 * 2048 // 2 + 3 * 4096 * 2048 // 32

    v3 = catalogs.load_model("deepseek-v3")
    assert (v3.params.total, v3.active_params("prefill"), v3.architecture.num_layers) == (
        671e9,
        37e9,
        61,
    )
    assert (v3.moe.num_routed_experts, v3.moe.num_shared_experts, v3.moe.experts_per_token) == (
        256,
        1,
        8,
    )
    assert v3.architecture.mla is not None
    assert (v3.architecture.mla.kv_lora_rank, v3.architecture.mla.qk_rope_head_dim) == (512, 64)
    for mid in catalogs.list_models():
        assert catalogs.load_model(mid).sources


# ------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["gpus"]["b300"].update(hbm_bandwidth_bytes_per_s=0),
            "gpus.b300.hbm_bandwidth_bytes_per_s: 0 is outside the physical range",
        ),
        (
            lambda d: d["gpus"]["h200"].update(colour="green"),
            "gpus.h200.colour: unknown field",
        ),
        (  # GB where bytes are due
            lambda d: d["gpus"]["h200"].update(hbm_capacity_bytes=141),
            "gpus.h200.hbm_capacity_bytes: 141 is outside the physical range 1e+09 to 4e+12 "
            "bytes per GPU",
        ),
        (  # Gb/s where bytes/s are due
            lambda d: d["systems"]["hgx-h200"].update(nic_bandwidth_bytes_per_s_per_gpu=4e14),
            "systems.hgx-h200.nic_bandwidth_bytes_per_s_per_gpu: 4e+14 is outside the physical",
        ),
        (
            lambda d: d["gpus"]["h200"].pop("hbm_reported_source"),
            "gpus.h200.hbm_reported_source: hbm_reported_bytes needs a source",
        ),
        (
            lambda d: d["gpus"]["b200"]["dense_flops"].pop("fp4"),
            "gpus.b200.dense_flops.fp4: field required",
        ),
        (
            lambda d: d["systems"]["hgx-b300"].update(gpu="b900"),
            "systems.hgx-b300.gpu: unknown GPU 'b900'",
        ),
        (
            lambda d: d["systems"]["gb300-nvl72"].update(trays=17),
            "systems.gb300-nvl72: trays x gpus_per_tray = 17 x 4 != gpus = 72",
        ),
        (
            lambda d: d["prices"]["gb300-tco-hyperscaler"].update(usd_per_gpu_hour="cheap"),
            "prices.gb300-tco-hyperscaler.usd_per_gpu_hour: input should be a valid number",
        ),
        (
            lambda d: d["token_prices"]["inferencex-tco-calculator"].update(usd_per_m_cached=1.5),
            "token_prices.inferencex-tco-calculator: usd_per_m_cached must be below",
        ),
        (
            lambda d: d["token_prices"]["inferencex-tco-calculator"].update(read="December"),
            "token_prices.inferencex-tco-calculator.read: string should match pattern",
        ),
    ],
)
def test_hardware_errors_name_file_and_field(tmp_root, change, expected):
    _edit(tmp_root / "data" / "hardware.yaml", change)
    with pytest.raises(InputError) as info:
        catalogs.load_hardware()
    assert str(info.value).startswith(f"data/hardware.yaml: {expected}")
    assert "\n" not in str(info.value)


def test_yaml_syntax_error_and_top_level_type(tmp_root):
    hw = tmp_root / "data" / "hardware.yaml"
    hw.write_text("gpus:\n  b300: [1, 2\n")
    with pytest.raises(InputError) as info:
        catalogs.load_hardware()
    msg = str(info.value)
    assert msg.startswith("data/hardware.yaml: line ") and "YAML syntax error" in msg
    hw.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match=r"^data/hardware.yaml: \(top level\): expected a mapping"):
        catalogs.load_hardware()


def test_unknown_ids_list_the_known_ones():
    with pytest.raises(
        InputError,
        match="gpus.a100: unknown GPU; known: b200, b300, gb200, gb300, h100-sxm, h200, h800",
    ):
        catalogs.gpu("a100")
    with pytest.raises(InputError, match="systems.dgx: unknown system; known: gb200-nvl72, gb3"):
        catalogs.system("dgx")
    with pytest.raises(InputError) as info:
        catalogs.load_model("deepseek-r2")
    assert str(info.value).startswith(
        "data/models: model: unknown model 'deepseek-r2'; "
        "known: deepseek-r1, deepseek-v3, deepseek-v4-flash, deepseek-v4.1-flash; to add it, "
        "write data/models/deepseek-r2.yaml with the fields schema_version, id, name, released,"
    )


def test_unknown_ids_say_how_to_add_one():
    """A newcomer's id: the file to add it to and the fields it needs; a Hugging Face id is
    read as an id, not as a path."""
    with pytest.raises(InputError) as info:
        catalogs.gpu("mi300x")
    assert "add an entry under gpus: in data/hardware.yaml with the fields name," in str(info.value)
    assert "hbm_bandwidth_bytes_per_s" in str(info.value)
    assert catalogs.is_hf_id("Qwen/Qwen3-235B-A22B")
    assert not catalogs.looks_like_path("Qwen/Qwen3-235B-A22B")
    assert catalogs.looks_like_path("models/mine.yaml") and catalogs.looks_like_path("./a/b")
    with pytest.raises(InputError) as info:
        catalogs.load_model("Qwen/Qwen3-235B-A22B")
    text = str(info.value)
    assert "unknown model 'Qwen/Qwen3-235B-A22B' (a Hugging Face id)" in text
    assert "write data/models/qwen3-235b-a22b.yaml with the fields" in text and "kv_cache" in text


def test_model_errors_name_file_and_field(tmp_root):
    path = tmp_root / "data" / "models" / "deepseek-v4.1-flash.yaml"
    _edit(path, lambda d: d["kv_cache"].update(compression_ratios=[2, 2, 1]))
    with pytest.raises(InputError) as info:
        catalogs.load_model("deepseek-v4.1-flash")
    assert str(info.value) == (
        "data/models/deepseek-v4.1-flash.yaml: kv_cache: 4 owning_layers but 3 compression_ratios"
    )
    _edit(path, lambda d: d["moe"].update(experts_per_token=-6))
    with pytest.raises(InputError, match=r"yaml: moe.experts_per_token: -6 is outside the phys"):
        catalogs.load_model("deepseek-v4.1-flash")


def test_model_id_must_match_file_name(tmp_root):
    models = tmp_root / "data" / "models"
    shutil.copy(models / "deepseek-v3.yaml", models / "other.yaml")
    with pytest.raises(InputError, match=r"other.yaml: id: 'deepseek-v3' differs from the file"):
        catalogs.load_model("other")
    # by path, any id is accepted
    assert catalogs.load_model("data/models/other.yaml").id == "deepseek-v3"


def test_sourced_weight_figure_needs_its_source(tmp_root):
    path = tmp_root / "data" / "models" / "deepseek-v4.1-flash.yaml"
    _edit(path, lambda d: d["weights"].update(decode_active_weight_bytes=12_000_000_000))
    field = "weights.decode_active_weight_bytes_source"
    with pytest.raises(InputError, match=f"{field}: decode_active_weight_bytes needs a source"):
        catalogs.load_model("deepseek-v4.1-flash")


def test_a_source_must_be_a_url(tmp_root):
    _edit(
        tmp_root / "data" / "hardware.yaml",
        lambda d: d["gpus"]["h200"].update(sources=["NVIDIA H200 datasheet (URL not given)"]),
    )
    with pytest.raises(InputError, match=r"gpus.h200.sources\[0\]|gpus.h200.sources.0"):
        catalogs.load_hardware()
