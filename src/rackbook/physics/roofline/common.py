"""What every roofline module shares: the phases, the bytes per parameter of each weight
precision, the checks of arguments and catalog fields (one :class:`InputError` each), and the
bandwidth floor (the least time to read bytes from HBM over some GPUs)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from rackbook.core.units import fmt
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.inputs.catalogs import GpuSpec, ModelSpec

#: The phases a token passes: its prompt's prefill, then decode.
PHASES: tuple[str, ...] = ("prefill", "decode")

#: Bytes per parameter of weights stored at a precision (block scales ignored).
DENSE_BYTES_PER_PARAM: dict[str, Fraction] = {
    "fp4": Fraction(1, 2),
    "fp8": Fraction(1),
    "bf16": Fraction(2),
}


def frac_text(x: Fraction) -> str:
    """An exact fraction as a formula shows it: ``3`` when whole, else ``0.5625`` (``:g``)."""
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


def check_choice(value: str, choices: tuple[str, ...], field: str) -> None:
    """InputError naming ``field`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise InputError("-", field, f"{value!r} is not one of {', '.join(choices)}")


def check_positive(value: float, field: str, *, allow_zero: bool = False) -> None:
    """InputError naming ``field`` unless ``value`` > 0 (>= 0 with ``allow_zero``)."""
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError("-", field, f"must be {'>=' if allow_zero else '>'} 0, got {value}")


def need(model: ModelSpec, **fields: object) -> None:
    """InputError naming the first catalog field that is unknown (None)."""
    for name, value in fields.items():
        if value is None:
            raise InputError(model.file, name.replace("__", "."), "unknown in the model catalog")


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
