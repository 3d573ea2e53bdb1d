"""What every roofline module shares: the phases, the bytes per parameter of each weight
precision, and the checks of arguments and catalog fields (one :class:`InputError` each)."""

from __future__ import annotations

from fractions import Fraction

from rackbook.errors import InputError
from rackbook.inputs.catalogs import ModelSpec

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
