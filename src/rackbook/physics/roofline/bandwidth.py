"""The bandwidth floor: the least time to read a number of bytes from HBM over some GPUs."""

from __future__ import annotations

from dataclasses import dataclass

from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec
from rackbook.physics.roofline.common import check_positive
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
