"""The hardware and model catalogs (``data/hardware.yaml``, ``data/models/*.yaml``).

Both are validated on load with pydantic (unknown fields are errors). Any problem, including a
YAML syntax error or a wrong top-level type, raises :class:`~rackbook.errors.InputError` naming the
file, the field path (``gpus.b300.hbm_bandwidth_bytes_per_s``) and the problem.

Units: bytes, bytes/s, FLOP/s, parameter counts, tokens, US dollars per GPU-hour (see the
comments at the top of each data file). Unknown figures are ``None``, never guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from rackbook import paths
from rackbook.errors import InputError
from rackbook.inputs import loader

Precision = Literal["fp4", "fp8", "bf16"]
PRECISIONS: tuple[str, ...] = ("fp4", "fp8", "bf16")

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
Text = Annotated[str, Field(min_length=1)]


_Strict = loader.Strict


# --------------------------------------------------------------------------------------------
# hardware


class DenseFlops(_Strict):
    """Dense (non-sparse) FLOP/s per GPU by precision; ``None`` where the GPU lacks it."""

    fp4: PosFloat | None
    fp8: PosFloat | None
    bf16: PosFloat | None


class GpuSpec(_Strict):
    """One GPU. Capacities in bytes, bandwidths in bytes/s (NVLink: bidirectional)."""

    id: str = ""
    name: Text
    hbm_capacity_bytes: PosInt
    hbm_capacity_bytes_max: PosInt | None = None
    hbm_bandwidth_bytes_per_s: PosFloat
    dense_flops: DenseFlops
    nvlink_bandwidth_bytes_per_s: PosFloat | None
    notes: str | None = None
    source: Text

    def flops(self, precision: str) -> float | None:
        """Dense FLOP/s at ``precision`` (fp4|fp8|bf16), ``None`` if absent."""
        return getattr(self.dense_flops, precision)


class SystemSpec(_Strict):
    """A group of identical GPUs (a rack, a tray, an HGX board). Bandwidths in bytes/s."""

    id: str = ""
    name: Text
    gpu: Text
    gpus: PosInt
    trays: PosInt | None
    gpus_per_tray: PosInt | None
    aggregate_hbm_bandwidth_bytes_per_s: PosFloat | None
    nvlink_bandwidth_bytes_per_s: PosFloat | None
    source: Text

    @model_validator(mode="after")
    def _trays_multiply(self) -> SystemSpec:
        if self.trays is not None and self.gpus_per_tray is not None:
            if self.trays * self.gpus_per_tray != self.gpus:
                raise ValueError(
                    f"trays x gpus_per_tray = {self.trays} x {self.gpus_per_tray} "
                    f"!= gpus = {self.gpus}"
                )
        return self


class PriceSpec(_Strict):
    """A price seen for renting one GPU, in US dollars per GPU-hour."""

    id: str = ""
    name: Text
    gpu: Text
    usd_per_gpu_hour: PosFloat
    approximate: bool = False
    source: Text


class HardwareCatalog(_Strict):
    schema_version: Literal[1]
    gpus: dict[str, GpuSpec]
    systems: dict[str, SystemSpec]
    prices: dict[str, PriceSpec] = {}


# --------------------------------------------------------------------------------------------
# models


class Mla(_Strict):
    kv_lora_rank: PosInt
    qk_rope_head_dim: PosInt


class Architecture(_Strict):
    """Shapes. Lengths in tokens."""

    num_layers: PosInt | None
    num_encoder_layers: PosInt | None
    num_decoder_layers: PosInt | None
    hidden_size: PosInt | None
    num_attention_heads: PosInt | None
    head_dim: PosInt | None
    index_head_dim: PosInt | None
    sliding_window: PosInt | None
    vocab_size: PosInt | None
    max_context_tokens: PosInt | None
    mla: Mla | None


class Moe(_Strict):
    num_shared_experts: NonNegInt | None
    num_routed_experts: PosInt | None
    experts_per_token: PosInt | None
    moe_intermediate_size: PosInt | None
    num_moe_layers: PosInt | None


class Params(_Strict):
    """Parameter counts. ``active`` is used for a phase whose own figure is ``None``."""

    total: PosInt | None
    backbone: PosInt | None
    engram: PosInt | None
    active: PosInt | None
    active_prefill: PosInt | None
    active_decode: PosInt | None


class Weights(_Strict):
    """Weight storage: dtypes, bytes per routed expert, bytes streamed per batch-1 decode step."""

    routed_expert_dtype: Precision | None
    routed_expert_bytes: PosInt | None
    dense_dtype: Precision | None
    decode_active_weight_bytes: PosInt | None
    decode_active_weight_bytes_source: str | None

    @model_validator(mode="after")
    def _sourced(self) -> Weights:
        if (
            self.decode_active_weight_bytes is not None
            and not self.decode_active_weight_bytes_source
        ):
            raise ValueError("decode_active_weight_bytes needs decode_active_weight_bytes_source")
        return self


class RowBytes(_Strict):
    """Bytes of one KV row: compressed KV plus indexer key."""

    kv: NonNegInt
    indexer: NonNegInt

    @property
    def total(self) -> int:
        return self.kv + self.indexer


class KvRowBytes(_Strict):
    fp4: RowBytes | None
    fp8: RowBytes | None
    bf16: RowBytes | None


class KvRelative(_Strict):
    model: Text
    factor: PosFloat
    approximate: bool


class KvCache(_Strict):
    """Global KV layout: the layers that own it, their compression ratios, row sizes per dtype."""

    owning_layers: list[NonNegInt] | None
    compression_ratios: list[PosInt] | None
    row_bytes: KvRowBytes | None
    relative_to: KvRelative | None
    source: Text

    @model_validator(mode="after")
    def _lengths(self) -> KvCache:
        layers, ratios = self.owning_layers, self.compression_ratios
        if (layers is None) != (ratios is None):
            raise ValueError("owning_layers and compression_ratios must both be given or null")
        if layers is not None and ratios is not None and len(layers) != len(ratios):
            raise ValueError(f"{len(layers)} owning_layers but {len(ratios)} compression_ratios")
        return self


class ModelSpec(_Strict):
    schema_version: Literal[1]
    id: Text
    name: Text
    released: str | None
    sources: Annotated[list[Text], Field(min_length=1)]
    architecture: Architecture
    moe: Moe
    params: Params
    weights: Weights
    kv_cache: KvCache
    _file: str = PrivateAttr(default="-")

    @property
    def file(self) -> str:
        """The file this entry was loaded from, as errors show it."""
        return self._file

    def active_params(self, phase: str) -> int | None:
        """Active parameters per token in ``phase`` (prefill|decode), else the generic figure."""
        own = {"prefill": self.params.active_prefill, "decode": self.params.active_decode}[phase]
        return own if own is not None else self.params.active


# --------------------------------------------------------------------------------------------
# loading


def _hardware_path(path: str | Path | None) -> Path:
    return paths.DATA / "hardware.yaml" if path is None else paths.resolve(path)


def load_hardware(path: str | Path | None = None) -> HardwareCatalog:
    """Load and validate the hardware catalog (default ``data/hardware.yaml``)."""
    p = _hardware_path(path)
    shown = loader.display_path(p)
    cat = loader.validate(HardwareCatalog, loader.read_yaml(p), shown)
    for section in ("gpus", "systems", "prices"):
        for key, entry in getattr(cat, section).items():
            if entry.id and entry.id != key:
                raise InputError(shown, f"{section}.{key}.id", f"{entry.id!r} differs from key")
            entry.id = key
    for section in ("systems", "prices"):
        for key, entry in getattr(cat, section).items():
            if entry.gpu not in cat.gpus:
                raise InputError(
                    shown,
                    f"{section}.{key}.gpu",
                    f"unknown GPU {entry.gpu!r}; known: {', '.join(sorted(cat.gpus))}",
                )
    return cat


def _lookup(section: str, what: str, key: str, path: str | Path | None) -> Any:
    cat = load_hardware(path)
    entries = getattr(cat, section)
    if key not in entries:
        raise InputError(
            loader.display_path(_hardware_path(path)),
            f"{section}.{key}",
            f"unknown {what}; known: {', '.join(sorted(entries))}",
        )
    return entries[key]


def gpu(id: str, path: str | Path | None = None) -> GpuSpec:
    """The GPU ``id`` (e.g. ``b300``) from the hardware catalog."""
    return _lookup("gpus", "GPU", id, path)


def system(id: str, path: str | Path | None = None) -> SystemSpec:
    """The system ``id`` (e.g. ``gb300-nvl72``) from the hardware catalog."""
    return _lookup("systems", "system", id, path)


def price(id: str, path: str | Path | None = None) -> PriceSpec:
    """The price ``id`` (e.g. ``gb300-rental``) from the hardware catalog."""
    return _lookup("prices", "price", id, path)


def models_dir() -> Path:
    return paths.DATA / "models"


def list_models(directory: str | Path | None = None) -> list[str]:
    """Model ids in the catalog folder (file stems of ``data/models/*.yaml``), sorted."""
    d = models_dir() if directory is None else paths.resolve(directory)
    return sorted(p.stem for p in d.glob("*.yaml"))


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith((".yaml", ".yml"))


def load_model(id_or_path: str | Path) -> ModelSpec:
    """Load a model entry by catalog id (``deepseek-v4.1-flash``) or by path to a YAML file."""
    text = str(id_or_path)
    if isinstance(id_or_path, Path) or _looks_like_path(text):
        return _model_file(paths.resolve(text))
    known = list_models()
    if text not in known:
        raise InputError(
            loader.display_path(models_dir()),
            "model",
            f"unknown model {text!r}; known: {', '.join(known) or '(none)'}",
        )
    spec = _model_file(models_dir() / f"{text}.yaml")
    if spec.id != text:
        raise InputError(spec.file, "id", f"{spec.id!r} differs from the file name {text!r}")
    return spec


def _model_file(p: Path) -> ModelSpec:
    shown = loader.display_path(p)
    spec = loader.validate(ModelSpec, loader.read_yaml(p), shown)
    spec._file = shown
    return spec


def as_model(model: ModelSpec | str | Path) -> ModelSpec:
    """``model`` itself if already loaded, else :func:`load_model` of its id or path."""
    return model if isinstance(model, ModelSpec) else load_model(model)


def as_gpu(hw: GpuSpec | str) -> GpuSpec:
    """``hw`` itself if already loaded, else the catalog GPU with that id (:func:`gpu`)."""
    return hw if isinstance(hw, GpuSpec) else gpu(hw)
