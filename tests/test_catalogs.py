"""The hardware and model catalogs: values as the reference sheet gives them, and errors that
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


def test_gpu_figures_are_the_reference_sheet_values():
    b300 = catalogs.gpu("b300")
    assert b300.hbm_capacity_bytes == 288e9
    assert b300.hbm_bandwidth_bytes_per_s == 8e12
    assert (b300.flops("fp4"), b300.flops("fp8"), b300.flops("bf16")) == (15e15, 5e15, 2.5e15)
    assert b300.nvlink_bandwidth_bytes_per_s == 1.8e12
    b200 = catalogs.gpu("b200")
    assert (b200.hbm_capacity_bytes, b200.hbm_capacity_bytes_max) == (180e9, 192e9)
    assert (b200.flops("fp4"), b200.flops("fp8"), b200.flops("bf16")) == (9e15, 4.5e15, 2.25e15)
    h200, h100 = catalogs.gpu("h200"), catalogs.gpu("h100-sxm")
    assert (h200.hbm_capacity_bytes, h200.hbm_bandwidth_bytes_per_s) == (141e9, 4.8e12)
    assert (h100.hbm_capacity_bytes, h100.hbm_bandwidth_bytes_per_s) == (80e9, 3.35e12)
    for g in (h200, h100):
        assert g.flops("fp4") is None
        assert (g.flops("fp8"), g.flops("bf16")) == (1.98e15, 0.99e15)
        assert g.nvlink_bandwidth_bytes_per_s == 0.9e12


def test_systems_and_prices():
    rack = catalogs.system("gb300-nvl72")
    assert (rack.gpu, rack.gpus, rack.trays, rack.gpus_per_tray) == ("b300", 72, 18, 4)
    # the sheet's aggregate equals 72 x the per-GPU figure: 72 x 8 TB/s = 576 TB/s
    assert rack.aggregate_hbm_bandwidth_bytes_per_s == 576e12 == 72 * 8e12
    assert rack.nvlink_bandwidth_bytes_per_s == 130e12
    assert catalogs.system("gb300-tray").gpus == 4
    assert catalogs.system("hgx-b300").gpus == 8
    assert (catalogs.system("hgx-h200").gpu, catalogs.system("hgx-h200").gpus) == ("h200", 8)
    p = catalogs.price("gb300-rental")
    assert (p.gpu, p.usd_per_gpu_hour, p.approximate) == ("b300", 2.65, True)


def test_every_hardware_entry_has_a_source_and_its_id():
    cat = catalogs.load_hardware()
    for section in ("gpus", "systems", "prices"):
        for key, entry in getattr(cat, section).items():
            assert entry.id == key
            assert entry.source.strip()


def test_model_entries():
    assert catalogs.list_models() == ["deepseek-v3", "deepseek-v4-flash", "deepseek-v4.1-flash"]
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
    assert m.file == "data/models/deepseek-v4.1-flash.yaml"

    v4 = catalogs.load_model("deepseek-v4-flash")
    assert (v4.params.total, v4.active_params("decode"), v4.architecture.num_layers) == (
        284e9,
        13e9,
        43,
    )
    assert v4.architecture.num_attention_heads is None  # unknown stays null
    assert v4.kv_cache.relative_to is not None and v4.kv_cache.relative_to.factor == 4

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
            "gpus.b300.hbm_bandwidth_bytes_per_s: must be > 0",
        ),
        (
            lambda d: d["gpus"]["h200"].update(colour="green"),
            "gpus.h200.colour: unknown field",
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
            lambda d: d["prices"]["gb300-rental"].update(usd_per_gpu_hour="cheap"),
            "prices.gb300-rental.usd_per_gpu_hour: input should be a valid number",
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
        InputError, match="gpus.a100: unknown GPU; known: b200, b300, h100-sxm, h200"
    ):
        catalogs.gpu("a100")
    with pytest.raises(InputError, match="systems.dgx: unknown system; known: gb300-nvl72"):
        catalogs.system("dgx")
    with pytest.raises(InputError) as info:
        catalogs.load_model("deepseek-r1")
    assert str(info.value) == (
        "data/models: model: unknown model 'deepseek-r1'; "
        "known: deepseek-v3, deepseek-v4-flash, deepseek-v4.1-flash"
    )


def test_model_errors_name_file_and_field(tmp_root):
    path = tmp_root / "data" / "models" / "deepseek-v4.1-flash.yaml"
    _edit(path, lambda d: d["kv_cache"].update(compression_ratios=[2, 2, 1]))
    with pytest.raises(InputError) as info:
        catalogs.load_model("deepseek-v4.1-flash")
    assert str(info.value) == (
        "data/models/deepseek-v4.1-flash.yaml: kv_cache: 4 owning_layers but 3 compression_ratios"
    )
    _edit(path, lambda d: d["moe"].update(experts_per_token=-6))
    with pytest.raises(InputError, match=r"yaml: moe.experts_per_token: must be > 0"):
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
    _edit(path, lambda d: d["weights"].update(decode_active_weight_bytes_source=None))
    with pytest.raises(InputError, match="weights: decode_active_weight_bytes needs"):
        catalogs.load_model("deepseek-v4.1-flash")
