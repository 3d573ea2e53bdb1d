"""The hardware and model catalogs (``data/hardware.yaml``, ``data/models/*.yaml``), validated on
load; a problem is one InputError naming file, field path and problem. Units: bytes, bytes/s,
FLOP/s, parameters, tokens, US dollars per GPU-hour; an unknown figure is ``None``."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Literal, Self, TypeVar, get_args

from pydantic import AfterValidator, Field, PrivateAttr, model_validator

from rackbook import paths
from rackbook.errors import InputError
from rackbook.inputs import loader
from rackbook.inputs.loader import Strict, field_error

Precision = Literal["fp4", "fp8", "bf16"]
T = TypeVar("T")
PRECISIONS: tuple[str, ...] = get_args(Precision)

PosInt = Annotated[int, Field(gt=0)]
Url = Annotated[str, Field(pattern=r"^https?://\S+$")]
Urls = Annotated[list[Url], Field(min_length=1)]
NonNegInt = Annotated[int, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
Text = Annotated[str, Field(min_length=1)]


def _in_range(lo: float, hi: float, unit: str) -> AfterValidator:
    """A value within [``lo``, ``hi``] ``unit`` (``lo`` > 0): outside is a typo or a wrong unit."""

    def check(v: float) -> float:
        if not lo <= v <= hi:
            raise ValueError(
                f"{v:,g} is outside the physical range {lo:g} to {hi:g} {unit} (a wrong unit?)"
            )
        return v

    return AfterValidator(check)


MemBytes = Annotated[int, _in_range(1e9, 4e12, "bytes per GPU")]
HbmBw = Annotated[float, _in_range(1e11, 1e14, "bytes/s per GPU")]
GpuFlops = Annotated[float, _in_range(1e12, 1e17, "FLOP/s per GPU")]
LinkBw = Annotated[float, _in_range(1e9, 1e13, "bytes/s per GPU")]
ParamCount = Annotated[int, _in_range(1e6, 1e14, "parameters")]
Dim = Annotated[int, _in_range(1, 1 << 20, "values")]
Layers = Annotated[int, _in_range(1, 1000, "layers")]


class _Sourced(Strict):
    """An entry whose figures in :attr:`SOURCED` (value field -> source field) need a source."""

    SOURCED: ClassVar[dict[str, str]] = {}

    @model_validator(mode="after")
    def _sourced(self) -> Self:
        for value, source in self.SOURCED.items():
            if getattr(self, value) is not None and not getattr(self, source):
                raise field_error(source, f"{value} needs a source")
        return self


class _Entry(_Sourced):
    """A hardware catalog entry: its id (the key it is listed under), name and sources."""

    id: str = ""
    name: Text
    sources: Urls


class ByPrecision(Strict, Generic[T]):
    """One entry per precision (dense FLOP/s per GPU, KV row formats); ``None`` where absent."""

    fp4: T | None
    fp8: T | None
    bf16: T | None


class GpuSpec(_Entry):
    """One GPU (bytes, bytes/s; NVLink bidirectional). ``hbm_reported_bytes``: nvidia-smi's
    memory.total; ``host_memory_bytes``: CPU memory over a coherent link (Grace LPDDR5X)."""

    hbm_capacity_bytes: MemBytes
    hbm_capacity_bytes_max: MemBytes | None = None
    hbm_reported_bytes: MemBytes | None = None
    hbm_reported_source: Url | None = None
    host_memory_bytes: MemBytes | None = None
    host_memory_source: Url | None = None
    hbm_bandwidth_bytes_per_s: HbmBw
    dense_flops: ByPrecision[GpuFlops]
    nvlink_bandwidth_bytes_per_s: LinkBw | None
    notes: str | None = None
    SOURCED = dict(hbm_reported_bytes="hbm_reported_source", host_memory_bytes="host_memory_source")

    @property
    def memory_bytes(self) -> int:
        """Bytes an engine's memory fraction applies to: reported, else nameplate, else usable."""
        return self.hbm_reported_bytes or self.hbm_capacity_bytes_max or self.hbm_capacity_bytes

    @property
    def label(self) -> str:
        """The GPU as a sentence names it: its id in capitals (``GB300``)."""
        return self.id.upper()

    def flops(self, precision: str) -> float | None:
        """Dense FLOP/s at ``precision`` (fp4|fp8|bf16), ``None`` if absent."""
        return getattr(self.dense_flops, precision)

    def run_precision(self, precision: str) -> str:
        """The precision ``precision`` weights compute at here: it, else the next wider one."""
        for p in PRECISIONS[PRECISIONS.index(precision) :]:
            if self.flops(p) is not None:
                return p
        raise InputError("-", f"gpus.{self.id}.dense_flops", f"no precision from {precision} up")


class SystemSpec(_Entry):
    """A group of identical GPUs (a rack, a tray, a board); NIC bandwidth per GPU each way."""

    gpu: Text
    gpus: PosInt
    trays: PosInt | None
    gpus_per_tray: PosInt | None
    aggregate_hbm_bandwidth_bytes_per_s: PosFloat | None
    nvlink_bandwidth_bytes_per_s: PosFloat | None
    nic_bandwidth_bytes_per_s_per_gpu: LinkBw | None = None
    nic_source: Url | None = None
    SOURCED = {"nic_bandwidth_bytes_per_s_per_gpu": "nic_source"}

    @model_validator(mode="after")
    def _trays_multiply(self) -> SystemSpec:
        trays, per = self.trays, self.gpus_per_tray
        if trays is not None and per is not None and trays * per != self.gpus:
            raise ValueError(f"trays x gpus_per_tray = {trays} x {per} != gpus = {self.gpus}")
        return self


#: What a price is (as figures.yaml's ``price_kind``): published, or a cost model's rate.
PriceKind = Literal["list price", "rental contract", "ownership-cost model", "modelled rental"]


class PriceSpec(_Entry):
    """A price of one GPU-hour (US dollars) and what it is."""

    kind: PriceKind
    gpu: Text
    usd_per_gpu_hour: PosFloat
    approximate: bool = False
    notes: str | None = None


class TokenPriceSpec(_Entry):
    """A cost calculator's prices (US dollars per million tokens), read on ``read``."""

    usd_per_m_uncached: PosFloat
    usd_per_m_cached: Annotated[float, Field(ge=0)]
    read: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    notes: str | None = None

    @model_validator(mode="after")
    def _cached_below_uncached(self) -> TokenPriceSpec:
        if not self.usd_per_m_cached < self.usd_per_m_uncached:
            raise ValueError("usd_per_m_cached must be below usd_per_m_uncached")
        return self


class HardwareCatalog(Strict):
    schema_version: Literal[1]
    gpus: dict[str, GpuSpec]
    systems: dict[str, SystemSpec]
    prices: dict[str, PriceSpec] = {}
    token_prices: dict[str, TokenPriceSpec] = {}
    _file: str = PrivateAttr(default="-")

    @model_validator(mode="after")
    def _ids_and_gpus(self) -> HardwareCatalog:
        for section in ("gpus", "systems", "prices", "token_prices"):
            for key, entry in getattr(self, section).items():
                if entry.id and entry.id != key:
                    raise field_error(f"{section}.{key}.id", f"{entry.id!r} differs from key")
                entry.id = key
                if isinstance(entry, SystemSpec | PriceSpec) and entry.gpu not in self.gpus:
                    problem = f"unknown GPU {entry.gpu!r}; known: {', '.join(sorted(self.gpus))}"
                    raise field_error(f"{section}.{key}.gpu", problem)
        return self


class Mla(Strict):
    kv_lora_rank: Dim
    qk_rope_head_dim: Dim


class Architecture(Strict):
    num_layers: Layers | None
    num_encoder_layers: Layers | None
    num_decoder_layers: Layers | None
    hidden_size: Dim | None
    num_attention_heads: Dim | None
    head_dim: Dim | None
    index_head_dim: Dim | None
    sliding_window: Dim | None
    vocab_size: Annotated[int, _in_range(1, 1e7, "tokens")] | None
    max_context_tokens: Annotated[int, _in_range(1, 1 << 27, "tokens")] | None
    mla: Mla | None


class Moe(Strict):
    """Mixture of experts; ``num_moe_layers``: layers with routed experts (sourced)."""

    num_shared_experts: Annotated[int, Field(ge=0, le=64)] | None
    num_routed_experts: Annotated[int, _in_range(1, 65536, "experts")] | None
    experts_per_token: Annotated[int, _in_range(1, 1024, "experts")] | None
    moe_intermediate_size: Dim | None
    num_moe_layers: Layers | None
    num_moe_layers_source: Url | None = None


class Params(Strict):
    """Parameter counts; ``active`` serves a phase whose own figure is ``None``."""

    total: ParamCount | None
    backbone: ParamCount | None
    engram: ParamCount | None
    active: ParamCount | None
    active_prefill: ParamCount | None
    active_decode: ParamCount | None
    source: Url | None = None


class ServedWeights(Strict):
    """Another published format of the weights (a quantized checkpoint)."""

    routed_expert_dtype: Precision
    dense_dtype: Precision
    checkpoint: Text
    source: Url


class Weights(_Sourced):
    """Weight dtypes, bytes per routed expert (scales included), bytes a batch-1 decode step
    streams (sourced), other served formats."""

    routed_expert_dtype: Precision | None
    routed_expert_bytes: Annotated[int, _in_range(1e3, 1e11, "bytes")] | None
    dense_dtype: Precision | None
    decode_active_weight_bytes: PosInt | None
    decode_active_weight_bytes_source: Url | None
    source: Url | None = None
    served: list[ServedWeights] = []
    SOURCED = {"decode_active_weight_bytes": "decode_active_weight_bytes_source"}


class RowFormat(Strict):
    """A KV row part: ``bits`` per value, plus ``scale_bytes`` per ``scale_group`` values."""

    bits: Literal[4, 8, 16]
    scale_group: PosInt | None
    scale_bytes: NonNegInt

    def bytes_for(self, values: int) -> Fraction:
        """Bytes of ``values`` values in this format (scales included)."""
        data = Fraction(values * self.bits, 8)
        if self.scale_group is None:
            return data
        return data + Fraction(math.ceil(values / self.scale_group) * self.scale_bytes)


class RowFormats(Strict):
    kv: RowFormat
    indexer: RowFormat


class KvRelative(Strict):
    model: Text
    factor: PosFloat
    approximate: bool


class KvCache(Strict):
    """Global KV layout: owning layers, compression ratios (r: 1/r row per token), readers of
    each source's rows, row formats per storage dtype."""

    owning_layers: list[NonNegInt] | None
    compression_ratios: list[PosInt] | None
    consumers: list[PosInt] | None = None
    row_formats: ByPrecision[RowFormats] | None
    relative_to: KvRelative | None
    source: Url

    @model_validator(mode="after")
    def _lengths(self) -> KvCache:
        layers, ratios = self.owning_layers, self.compression_ratios
        if (layers is None) != (ratios is None):
            raise ValueError("owning_layers and compression_ratios must both be given or null")
        if layers is not None and ratios is not None and len(layers) != len(ratios):
            raise ValueError(f"{len(layers)} owning_layers but {len(ratios)} compression_ratios")
        if self.consumers is not None and len(self.consumers) != len(layers or []):
            raise ValueError(f"{len(self.consumers)} consumers for {len(layers or [])} layers")
        return self


class Attention(Strict):
    """Sparse attention: index-source layers keep ``index_topk`` rows; ``reindex_layers``
    rescore ``candidate_rows``; the rest reuse a choice."""

    index_sources: list[NonNegInt]
    index_topk: PosInt
    reindex_layers: NonNegInt
    candidate_rows: NonNegInt
    source: Url


class Speculative(Strict):
    """The model's own speculative decoder: draft tokens per round, active parameters."""

    name: Text
    draft_tokens: PosInt
    draft_active_params: PosInt
    draft_dtype: Precision
    source: Url


class ModelSpec(Strict):
    schema_version: Literal[1]
    id: Text
    name: Text
    released: str | None
    sources: Urls
    architecture: Architecture
    moe: Moe
    params: Params
    weights: Weights
    kv_cache: KvCache
    attention: Attention | None = None
    speculative: Speculative | None = None
    _file: str = PrivateAttr(default="-")

    @property
    def file(self) -> str:
        """The file this entry was loaded from, as errors show it."""
        return self._file

    def active_params(self, phase: str) -> int | None:
        """Active parameters per token in ``phase`` (prefill|decode), else the generic figure."""
        own = {"prefill": self.params.active_prefill, "decode": self.params.active_decode}[phase]
        return own if own is not None else self.params.active


def load_hardware(path: str | Path | None = None) -> HardwareCatalog:
    """Load and validate the hardware catalog (default ``data/hardware.yaml``)."""
    return loader.load(HardwareCatalog, paths.DATA / "hardware.yaml" if path is None else path)


def _folded(entries: dict[str, Any], key: str) -> str:
    """The catalog key ``key`` stands for: ids are case-insensitive (H200 is h200)."""
    return {k.lower(): k for k in entries}.get(key.lower(), key)


def _required(model: type[Strict]) -> str:
    return ", ".join(k for k, f in model.model_fields.items() if f.is_required())


def _lookup(section: str, what: str, key: str, path: str | Path | None = None) -> Any:
    cat = load_hardware(path)
    entries, shown = getattr(cat, section), cat._file
    key = _folded(entries, key)
    if key not in entries:
        fields = _required(get_args(HardwareCatalog.model_fields[section].annotation)[1])
        problem = f"unknown {what}; known: {', '.join(sorted(entries))}; to add one, add an entry "
        problem += f"under {section}: in {shown} with the fields {fields}"
        raise InputError(shown, f"{section}.{key}", problem)
    return entries[key]


#: Look-ups by id (any case), each ``(id, path=None)``: e.g. ``gpu("b300")``,
#: ``system("gb300-nvl72")``, ``price("gb300-tco-hyperscaler")``.
gpu: Callable[..., GpuSpec] = functools.partial(_lookup, "gpus", "GPU")
system: Callable[..., SystemSpec] = functools.partial(_lookup, "systems", "system")
price: Callable[..., PriceSpec] = functools.partial(_lookup, "prices", "price")
token_price: Callable[..., TokenPriceSpec] = functools.partial(
    _lookup, "token_prices", "token price"
)


def nic_bandwidth(gpu_id: str, path: str | Path | None = None) -> float | None:
    """The most NIC bandwidth per GPU (bytes/s each way) a system of ``gpu_id`` lists; else None."""
    cat = load_hardware(path)
    key = _folded(cat.gpus, gpu_id)
    found = [s.nic_bandwidth_bytes_per_s_per_gpu for s in cat.systems.values() if s.gpu == key]
    return max((f for f in found if f is not None), default=None)


def list_models(directory: str | Path | None = None) -> list[str]:
    """Model ids in the catalog folder (file stems of ``data/models/*.yaml``), sorted."""
    d = paths.DATA / "models" if directory is None else paths.resolve(directory)
    return sorted(p.stem for p in d.glob("*.yaml"))


def catalog_model_id(name: str) -> str | None:
    """The catalog id ``name`` stands for, any case: the id or a Hugging Face ``org/ID``."""
    known = {m.lower(): m for m in list_models()}
    key = name.lower()
    if key.count("/") == 1 and not key.endswith((".yaml", ".yml")):
        org, key = key.split("/")
        if not org or org in (".", ".."):
            return None
    return known.get(key)


#: A Hugging Face model id: ``org/NAME`` (letters, digits, ``-``, ``_``, ``.``; 96 at most each).
HF_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def is_hf_id(text: str) -> bool:
    """``text`` is shaped like a Hugging Face id (``Qwen/Qwen3-235B-A22B``) and names no file."""
    if not HF_ID.fullmatch(text) or text.lower().endswith((".yaml", ".yml")):
        return False
    try:
        return not Path(text).exists()
    except (OSError, ValueError):
        return False


def looks_like_path(text: str) -> bool:
    """A model argument that names a file, not a catalog id or a Hugging Face id."""
    if is_hf_id(text):
        return False
    return "/" in text or "\\" in text or text.endswith((".yaml", ".yml"))


def load_model(id_or_path: str | Path) -> ModelSpec:
    """A model entry by catalog id (any case), Hugging Face name or path to a YAML file."""
    text = str(id_or_path)
    if not isinstance(id_or_path, Path):
        text = catalog_model_id(text) or text
    if isinstance(id_or_path, Path) or looks_like_path(text):
        return loader.load(ModelSpec, text)
    known = list_models()
    if text not in known:
        shown = loader.display_path(paths.DATA / "models")
        what = " (a Hugging Face id)" if is_hf_id(text) else ""
        slug = text.rsplit("/", 1)[-1].lower()
        new = f"{shown}/{slug}.yaml" if re.fullmatch(r"[\w.-]{1,96}", slug) else f"{shown}/ID.yaml"
        problem = f"unknown model {text!r}{what}; known: {', '.join(known) or '(none)'}; to add "
        problem += f"it, write {new} with the fields {_required(ModelSpec)} (copy a known model's "
        raise InputError(shown, "model", problem + "file and change what differs)")
    spec = loader.load(ModelSpec, paths.DATA / "models" / f"{text}.yaml")
    if spec.id != text:
        raise InputError(spec.file, "id", f"{spec.id!r} differs from the file name {text!r}")
    return spec


def as_model(model: ModelSpec | str | Path) -> ModelSpec:
    """``model`` itself if already loaded, else :func:`load_model` of its id or path."""
    return model if isinstance(model, ModelSpec) else load_model(model)


def as_gpu(hw: GpuSpec | str) -> GpuSpec:
    """``hw`` itself if already loaded, else the catalog GPU with that id (:func:`gpu`)."""
    return hw if isinstance(hw, GpuSpec) else gpu(hw)


def display_names() -> dict[str, str]:
    """Each GPU and model id of ``paths.DATA``'s catalogs -> its name (``gb300``: ``GB300``)."""
    return _display_names(paths.DATA)


@functools.lru_cache(maxsize=4)
def _display_names(data: Path) -> dict[str, str]:
    hw = data / "hardware.yaml"
    gpus = {g: spec.label for g, spec in load_hardware(hw).gpus.items()} if hw.is_file() else {}
    return gpus | {m: load_model(m).name for m in list_models(data / "models")}


def cli_catalog(args: Any) -> int:
    """``rackbook catalog [--json]``: the models, GPUs and systems that check and kv-bytes know."""
    hw, models = load_hardware(), {m: load_model(m) for m in list_models()}
    sections: dict[str, dict[str, Any]] = {"models": models, "gpus": hw.gpus, "systems": hw.systems}
    doc = {k: [{"id": i, "name": v[i].name} for i in sorted(v)] for k, v in sections.items()}
    if args.json:
        print(json.dumps(doc))
        return 0
    for section, rows in doc.items():
        print(f"{section} ({len(rows)}):")
        for r in rows:
            print(f"  {r['id']:<24} {r['name']}")
    return 0
