"""The basis of a figure (what a number counts, over what, under which conditions) for claims,
published points and readings; two figures compare only when their bases agree. ``unknown`` is
allowed only in a claim; ``-`` marks a part that does not apply. ``acceptance``: tokens per step."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

UNKNOWN = "unknown"
NA = "-"

#: Which tokens a rate counts.
TOKENS: tuple[str, ...] = (
    "output",  # generated tokens only
    "new input",  # prompt tokens computed in prefill (cache misses)
    "input incl. cached",  # every prompt token, cache hits included
    "input+output",  # prompt (no cached prefix in the workload or counted) plus output
    "input incl. cached+output",  # prompt with each turn's re-read cached prefix, plus output
    "computed",  # tokens the model computed (prefill misses plus decode)
    NA,
    UNKNOWN,
)
#: Which GPUs are counted (the denominator of a per-GPU figure, or the deployment of a total).
GPUS: tuple[str, ...] = (
    "deployment",  # all GPUs of the deployment (prefill and decode pools together)
    "decode pool",
    "prefill pool",
    "replica",  # one replica of a system that runs several
    NA,
    UNKNOWN,
)
#: Speculative decoding: none, real (a draft model or head, acceptance measured), simulated
#: (a synthetic acceptance length: the throughput of a system that does not exist as run).
#: ``real or none``: measured on a real system whose source does not say whether a draft was
#: used (MLPerf's summary.csv), never a simulated acceptance.
SPECULATION: tuple[str, ...] = ("none", "real", "real or none", "simulated", NA, UNKNOWN)
#: What kind of workload produced the figure.
WORKLOADS: tuple[str, ...] = (
    "agentic trace",  # multi-turn, growing contexts, prefix reuse across turns
    "fixed lengths",  # synthetic random prompts of fixed ISL/OSL, no prefix reuse
    "random lengths",  # synthetic random prompts, lengths drawn uniformly up to ISL/OSL caps
    "benchmark dataset",  # a dataset of the benchmark (MLPerf, GSM8K, ...)
    "production traffic",
    "single request",
    NA,
    UNKNOWN,
)

#: Parts whose value is one of a closed set, and the set. ``per``: what the figure is per;
#: ``statistic``: of a latency (or of a speed derived from one); ``rate`` for a throughput over
#: a run (tokens over the measuring time); ``value`` for a count, size or price.
CHOICES: dict[str, tuple[str, ...]] = {
    "tokens": TOKENS,
    "per": ("GPU", "node", "deployment", "user", NA, UNKNOWN),
    "gpus": GPUS,
    "speculation": SPECULATION,
    "serving": ("aggregated", "disaggregated", NA, UNKNOWN),
    "statistic": ("mean", "median", "p90", "p99", "rate", "value", NA, UNKNOWN),
    "workload": WORKLOADS,
}
#: The one part a published point may leave ``unknown`` where its source says nothing (MLPerf's
#: summary.csv does not say whether a system serves aggregated or disaggregated); it states
#: every other part of :data:`CHOICES`.
UNKNOWN_IN_POINTS: tuple[str, ...] = ("serving",)
#: Human names of the parts whose name is not the part itself (``NAMES.get(part, part)``).
NAMES: dict[str, str] = {
    "tokens": "tokens counted",
    "gpus": "GPUs counted",
    "gpu_count": "GPU count",
    "cached_share": "cached share",
}


@dataclass(frozen=True)
class Basis:
    """The basis of one figure (None: not applicable; ``unknown``: a claim is silent)."""

    metric: str
    tokens: str
    per: str
    gpus: str
    gpu_count: int | None
    workload: str
    speculation: str
    statistic: str
    serving: str
    model: str
    hardware: str
    engine: str
    isl: int | None = None
    osl: int | None = None
    context: int | None = None
    cached_share: float | None = None
    concurrency: int | None = None
    counting: str | None = None
    spec_method: str | None = None
    acceptance: float | None = None
    model_version: str | None = None
    engine_version: str | None = None

    def replace(self, **changes: Any) -> Basis:
        """A copy with some parts changed (validated like the original)."""
        return make(dataclasses.asdict(self) | changes, claim=True)

    def short(self, names: Mapping[str, str] | None = None) -> str:
        """One line: ``output tokens; per GPU (deployment, 72 GPUs); ...``, model and hardware by
        their ``names`` where given."""
        names = names or {}
        who = {"deployment": "deployment total", UNKNOWN: "per what: not stated"}.get(
            self.per, f"per {self.per}"
        )  # never "per unknown (unknown)"
        if self.gpus not in (NA, UNKNOWN):
            who += f" ({self.gpus}{f', {self.gpu_count} GPUs' if self.gpu_count else ''})"
        acc = "" if self.acceptance is None else f" (acceptance {self.acceptance:g})"
        hw = names.get(self.hardware, self.hardware)
        parts = [
            self.metric if self.metric != UNKNOWN else "what it measures: not stated",
            f"{self.tokens} tokens" if self.tokens != NA else "",
            who if self.per != NA else "",
            f"workload {self.workload}" if self.workload != NA else "",
            f"speculation {self.speculation}{acc}" if self.speculation != NA else "",
            f"statistic {self.statistic}" if self.statistic not in (NA, "value") else "",
            names.get(self.model, self.model),
            hw if hw != UNKNOWN else "hardware not stated",
            self.engine if self.engine != UNKNOWN else "engine not stated",
        ]
        return "; ".join(p for p in parts if p and p != NA)


FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Basis))
_INTS = ("gpu_count", "isl", "osl", "context", "concurrency")
_FLOATS = ("cached_share", "acceptance")
_TEXTS = ("metric", "model", "hardware", "engine")


def _check_parts(raw: Mapping[str, Any], claim: bool) -> None:
    extra = sorted(set(raw) - set(FIELDS))
    if extra:
        raise ValueError(f"{extra[0]}: unknown basis part (known: {', '.join(FIELDS)})")
    missing = [f for f in (*CHOICES, *_TEXTS, "gpu_count") if f not in raw]
    if missing:
        raise ValueError(f"{missing[0]}: missing basis part")
    for f, allowed in CHOICES.items():
        v = raw[f]
        if v not in allowed:
            raise ValueError(f"{f}: {v!r} is not one of {', '.join(allowed)}")
        if v == UNKNOWN and not claim and f not in UNKNOWN_IN_POINTS:
            why = "'unknown' is allowed only in a claim whose write-up is silent"
            raise ValueError(f"{f}: a published point must state its {NAMES.get(f, f)}; {why}")
    for f in _TEXTS:
        if not isinstance(raw[f], str) or not raw[f].strip():
            raise ValueError(f"{f}: must be a non-empty text")


def _check_numbers(raw: Mapping[str, Any]) -> None:
    for f in _INTS:
        v = raw.get(f)
        if f == "context" and v == 0 and not isinstance(v, bool):
            continue  # no cached prefix (a cold prefill): stated, not missing
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
            raise ValueError(f"{f}: must be a whole number > 0, got {v!r}")
    for f in _FLOATS:
        v = raw.get(f)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{f}: must be a finite number, got {v!r}")
    share = raw.get("cached_share")
    if share is not None and not 0 <= share <= 1:
        raise ValueError(f"cached_share: must be between 0 and 1, got {share!r}")
    acc = raw.get("acceptance")
    if acc is not None and acc < 1:
        raise ValueError(f"acceptance: tokens per step must be >= 1, got {acc!r}")
    if acc is not None and raw["speculation"] not in ("real", "simulated"):
        raise ValueError("acceptance: only with speculation real or simulated")
    if raw["per"] == "GPU" and raw["tokens"] != NA and raw["gpus"] == NA:
        raise ValueError("gpus: a per-GPU token rate must say which GPUs it counts")


def make(raw: Mapping[str, Any], *, claim: bool = False) -> Basis:
    """A validated :class:`Basis` from a mapping; ``ValueError("field: problem")`` otherwise."""
    _check_parts(raw, claim)
    _check_numbers(raw)
    values: dict[str, Any] = {f: raw.get(f) for f in FIELDS}
    values |= {f: float(raw[f]) for f in _FLOATS if raw.get(f) is not None}
    return Basis(**values)


def model_key(model: str) -> str:
    """A model name reduced to family and version (``deepseek-v4.1-flash``...), else lower-cased."""
    m = model.lower().replace(" ", "").replace("_", "-")
    if "v4.1-flash" in m or "v4.1flash" in m:
        return "deepseek-v4.1-flash"
    if "v4-flash" in m:
        return "deepseek-v4-flash-0731" if "0731" in m else "deepseek-v4-flash"
    if "v4-pro" in m:
        return "deepseek-v4-pro"
    if m in ("dsr1",) or "deepseek-r1" in m or "r1/v3" in m or "v3/r1" in m:
        return "deepseek-r1"
    if "kimi" in m and "k3" in m:
        return "kimi-k3"
    return m


#: GPU generations: a difference of generation makes a point an analogue; within one (GB300
#: and B300), the hardware still differs but the point is near. Keys: hardware_key's order.
HARDWARE_CLASS: dict[str, str] = {
    "gb300": "blackwell ultra",
    "gb200": "blackwell",
    "b300": "blackwell ultra",
    "b200": "blackwell",
    "mi355x": "cdna4",
    "mi300x": "cdna3",
    "h100": "hopper",
    "h200": "hopper",
    "h800": "hopper",
}


def hardware_key(hardware: str) -> str:
    """A hardware name reduced to its GPU (``gb300``, ``b300``...), else lower-cased."""
    h = hardware.lower().replace(" ", "").replace("-", "")
    return next((key for key in HARDWARE_CLASS if key in h), h)


def hardware_class(hardware: str) -> str:
    """The GPU generation of a hardware name (:data:`HARDWARE_CLASS`), else its key."""
    k = hardware_key(hardware)
    return HARDWARE_CLASS.get(k, k)


#: Engine name needles -> the engine they name (first match wins).
ENGINES = {"vllm": "vllm", "sglang": "sglang", "tensorrt": "tensorrt-llm", "trt": "tensorrt-llm"}


def engine_key(engine: str) -> str:
    """``vllm`` | ``sglang`` | ``tensorrt-llm`` | ``deepseek`` | other (lower case)."""
    e = engine.lower()
    return next((key for needle, key in ENGINES.items() if needle in e), e)


#: How a part's value is reduced before two bases are compared (others: as they are).
_KEYS = {"model": model_key, "hardware": hardware_key, "engine": engine_key}


@dataclass(frozen=True)
class Difference:
    """One part where a point's basis differs from a claim's (values as shown)."""

    part: str
    point: object
    claim: object = None

    @property
    def text(self) -> str:
        """The sentence: ``hardware: GB300 (claim: B300)``."""
        tail = "" if self.claim is None else f" (claim: {self.claim})"
        return f"{NAMES.get(self.part, self.part)}: {self.point}{tail}"

    def named(self, names: Mapping[str, str]) -> str:
        """:attr:`text` with the point's value by its name in ``names`` (ids to names)."""
        return dataclasses.replace(self, point=names.get(str(self.point), self.point)).text

    def __str__(self) -> str:
        return self.text


def differences(claim: Basis, point: Basis, parts: tuple[str, ...]) -> list[Difference]:
    """The ``parts`` where ``point`` differs from ``claim``; a part the claim leaves unknown, or
    that does not apply, never differs, but speculation does when one side alone is simulated."""
    out = []
    for part in parts:
        cv, pv = getattr(claim, part), getattr(point, part)
        if cv is None or cv == NA or pv == NA:
            continue  # the claim states nothing, or the part does not apply to the point
        if part == "speculation":
            simulated = (pv == "simulated") != (cv == "simulated")
            if not simulated and (cv == UNKNOWN or pv == cv):
                continue
        elif cv == UNKNOWN or (_KEYS[part](cv) == _KEYS[part](pv) if part in _KEYS else cv == pv):
            continue
        shown = "not stated" if pv is None or pv == UNKNOWN else pv  # never "None"
        out.append(Difference(part, shown, cv))
    return out
