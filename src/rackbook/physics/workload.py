"""The workload of one figure (:class:`Workload`) and the rules between its values that turn on
the model (its context limit, its drafter) and the GPUs (a batch per GPU)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rackbook.core.units import plural
from rackbook.errors import InputError
from rackbook.inputs.catalogs import ModelSpec

#: Largest batch per GPU searched when the batch is free, and the most one may name.
MAX_BATCH = 1 << 16
#: The most tokens a speculative step may keep.
MAX_TOKENS_PER_STEP = 64
#: What a figure counts: output tokens, input + output, or input tokens (prefill).
COUNTED = ("output", "total", "input")
#: The phases a figure's GPUs run: decode only, prefill only, or both sharing the time.
CHECK_PHASES = ("decode", "prefill", "mixed")


@dataclass(frozen=True)
class Workload:
    """What one figure's GPUs do (tokens, tokens/s per GPU); concurrency None: best batch."""

    counted: str = "output"
    isl: float | None = None
    osl: float | None = None
    decode_context: float = 0.0
    prefill_prefix: float = 0.0
    cached_share: float = 0.0
    concurrency: float | None = None
    tokens_per_step: float = 1.0
    verify_tokens: int = 1
    kv_dtype: str | None = "fp4"
    weights: str = ""
    output_tok_s_per_gpu: float = 0.0
    new_input_tok_s_per_gpu: float = 0.0


def verify_tokens(model: ModelSpec, tokens_per_step: float) -> int:
    """Tokens a verify step carries for ``tokens_per_step`` kept tokens (1 without speculation)."""
    if not (math.isfinite(tokens_per_step) and 1 <= tokens_per_step <= MAX_TOKENS_PER_STEP):
        raise InputError(
            "-",
            "tokens_per_step",
            f"must be a number from 1 to {MAX_TOKENS_PER_STEP}, got {tokens_per_step}",
        )
    if tokens_per_step == 1:
        return 1
    spec = model.speculative
    if spec is not None and tokens_per_step > spec.draft_tokens + 1:
        raise InputError(
            "-",
            "tokens_per_step",
            f"{tokens_per_step:g} is out of range: {model.name}'s {spec.name} drafts "
            f"{spec.draft_tokens} tokens a step, so a step keeps at most {spec.draft_tokens + 1}",
        )
    return max(spec.draft_tokens + 1 if spec else 0, math.ceil(tokens_per_step))


def phase_and_counted(
    phase: str | None, counted: str | None, isl: float | None, osl: float | None, gpus: int
) -> tuple[str, str]:
    """The phase and the tokens counted, defaults filled; InputError for an impossible pair."""
    if counted is None:
        counted = "input" if phase == "prefill" else "output"
    if counted not in COUNTED:
        raise InputError("-", "counted", f"{counted!r} is not one of {', '.join(COUNTED)}")
    if phase is None:
        phase = "mixed" if isl and osl else ("prefill" if counted == "input" else "decode")
    if phase not in CHECK_PHASES:
        raise InputError("-", "phase", f"{phase!r} is not one of {', '.join(CHECK_PHASES)}")
    if counted == "total" and not (isl and osl):
        raise InputError("-", "counted", "total needs --isl and --osl to split input and output")
    if (phase, counted) in (("prefill", "output"), ("decode", "input")):
        raise InputError("-", "counted", f"a {phase} figure does not count {counted} tokens")
    return phase, counted


def longest_sequence(
    m: ModelSpec,
    gpus: int,
    isl: float | None,
    osl: float | None,
    context: float | None,
    batch: float | None,
    phase: str,
    counted: str,
) -> float:
    """Tokens of the longest sequence; InputError past the model's or the batch's limits."""
    most = m.architecture.max_context_tokens
    longest = max((isl or 0) + (osl or 0), context or 0)
    if most is not None and longest > most:
        problem = f"{longest:,.0f} tokens is out of range: {m.name} holds at most {most:,}"
        raise InputError("-", "context", problem)
    if batch is not None and not (float(batch).is_integer() and batch >= 1):
        raise InputError(
            "-", "concurrency", f"must be a whole number of sequences >= 1, got {batch:g}"
        )
    if phase == "decode" and counted == "total":
        raise InputError(
            "-",
            "phase",
            f"a decode-only figure counting input + output tokens per GPU credits the prefill of "
            f"its input to GPUs not among the {gpus:,}: give --phase mixed (these GPUs prefill "
            "too) or --counted output",
        )
    if batch is not None and batch > MAX_BATCH * gpus:
        raise InputError(
            "-",
            "batch",
            f"{batch:,.0f} sequences is out of range: at most {MAX_BATCH:,} per GPU "
            f"({MAX_BATCH * gpus:,} on {plural(gpus, 'GPU')})",
        )
    return longest


def workload(
    claimed: float,
    phase: str,
    counted: str,
    *,
    isl: float | None,
    osl: float | None,
    context: float | None,
    cached_share: float,
    batch: float | None,
    tokens_per_step: float,
    verify: int,
    kv_dtype: str | None,
    weights: str,
) -> Workload:
    """The :class:`Workload` of ``claimed`` ``counted`` tokens/s per GPU."""
    if counted == "output":
        out, inp = claimed, claimed * isl / osl if isl and osl else 0.0
    elif counted == "input":
        inp, out = claimed, claimed * osl / isl if isl and osl else 0.0
    else:
        assert isl and osl
        out, inp = claimed * osl / (isl + osl), claimed * isl / (isl + osl)
    dec_ctx = context if context is not None else ((isl or 0) + (osl or 0) / 2 if isl else 0.0)
    pre_ctx = isl * cached_share + isl * (1 - cached_share) / 2 if isl else context or 0.0
    return Workload(
        counted=counted,
        isl=isl,
        osl=osl,
        decode_context=dec_ctx,
        prefill_prefix=pre_ctx,
        cached_share=cached_share,
        concurrency=batch,
        tokens_per_step=tokens_per_step,
        verify_tokens=verify,
        kv_dtype=kv_dtype,
        weights=weights,
        output_tok_s_per_gpu=0.0 if phase == "prefill" else out,
        new_input_tok_s_per_gpu=0.0 if phase == "decode" else inp * (1 - cached_share),
    )
