"""The bandwidth floor: the least time to read a number of bytes from HBM over some GPUs (and
the context read of a decode step at that rate)."""

from __future__ import annotations

from dataclasses import dataclass

from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec
from rackbook.physics.roofline.common import (
    check_positive,
    frac_text,
)
from rackbook.physics.roofline.kv import (
    kv_bytes,
    kv_bytes_per_sequence,
)
from rackbook.physics.units import fmt


@dataclass(frozen=True)
class Step:
    """Time to stream ``bytes`` once from HBM at the aggregate bandwidth of the GPUs."""

    seconds: float
    bytes: float
    bytes_per_s: float
    formula: str

    def __float__(self) -> float:
        return self.seconds


def bandwidth_floor_step_s(nbytes: float, hw: GpuSpec | str, n_gpus: int = 1) -> Step:
    """Lower bound on a step's time: ``nbytes`` / (n_gpus x HBM bytes/s), in seconds
    (assumes the bytes are spread evenly over the GPUs)."""
    g = catalogs.as_gpu(hw)
    check_positive(nbytes, "bytes", allow_zero=True)
    check_positive(n_gpus, "n_gpus")
    bw = n_gpus * g.hbm_bandwidth_bytes_per_s
    s = nbytes / bw
    formula = (
        f"{fmt(nbytes, 'B')} / ({n_gpus} x {fmt(g.hbm_bandwidth_bytes_per_s, 'B/s')}) "
        f"= {s * 1e6:,.4g} µs"
    )
    return Step(s, nbytes, bw, formula)


def kv_read_time_s(
    extra_tokens: int,
    model: ModelSpec,
    hw: GpuSpec | str,
    kv_dtype: str = "fp4",
    n_gpus: int = 1,
) -> Step:
    """Seconds to stream the STORED global KV of ``extra_tokens`` tokens once from HBM across
    ``n_gpus`` GPUs' bandwidth (bytes stored, not the bytes a sparse step reads: see
    :func:`decode_kv_reads`)."""
    check_positive(extra_tokens, "extra_tokens", allow_zero=True)
    extra = kv_bytes_per_sequence(model, extra_tokens, kv_dtype)
    step = bandwidth_floor_step_s(extra, hw, n_gpus)
    per_tok = frac_text(kv_bytes(model, kv_dtype).bytes_per_token_exact)
    formula = f"{extra_tokens} tokens x {per_tok} B = {fmt(extra, 'B')}; {step.formula}"
    return Step(step.seconds, step.bytes, step.bytes_per_s, formula)
