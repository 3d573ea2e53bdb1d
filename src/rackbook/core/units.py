"""Numbers for people, the one formatter of every sentence: SI prefixes, plurals, percentages."""

from __future__ import annotations

import math
import numbers

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def fmt(value: float, unit: str, digits: int = 4) -> str:
    """``value`` with a decimal SI prefix: ``fmt(1.5e16, "FLOP/s") == "15 PFLOP/s"``."""
    scale, prefix = next(((s, p) for s, p in _PREFIXES if abs(value) >= s), (1, ""))
    return f"{value / scale:.{digits}g} {prefix}{unit}"


def eng(value: float, digits: int = 4) -> str:
    """Engineering notation: ``eng(16e9) == "16e9"``, ``eng(890) == "890"``."""
    if value == 0:
        return "0"
    exp = math.floor(math.log10(abs(value)) / 3) * 3
    mant = f"{value / 10**exp:.{digits}g}"
    return f"{mant}e{exp}" if exp else mant


def whole(x: float) -> float | int:
    """``x`` as an int when it is a whole number (``8.0`` -> ``8``), else unchanged: so that
    :func:`plural` and ``:,`` write it with thousands separators, not ``:g``'s exponent."""
    return int(x) if float(x).is_integer() else x


def plural(n: float, word: str, many: str | None = None) -> str:
    """``n word``, plural unless ``n`` is 1 (``many`` if irregular): ``plural(8192, "sequence") ==
    "8,192 sequences"``; integers (numpy's too) in full, other numbers with ``:,g``."""
    text = f"{n:,}" if isinstance(n, numbers.Integral) else f"{n:,g}"
    return f"{text} {word if n == 1 else (many or word + 's')}"


def ratio_text(x: float) -> str:
    """A ratio: ``0.093x`` (three decimals below 1), ``9.14x``, ``1,054x``."""
    if abs(x) >= 100:
        return f"{x:,.0f}x"
    if 0.001 <= abs(x) < 1:
        return f"{x:.3f}".rstrip("0").rstrip(".") + "x"
    return f"{x:.3g}x"


def percent(share: float, digits: int = 1, sign: bool = False) -> str:
    """A share (1 = 100 %) as a percentage with ``digits`` decimals, a trailing ``.0`` dropped:
    ``percent(0.64) == "64 %"``, ``percent(0.857) == "85.7 %"``; ``sign`` writes ``+``."""
    return f"{100 * share:{'+' if sign else ''}.{digits}f}".removesuffix(".0") + " %"


def number(v: float, figures: int | None = None) -> str:
    """A number for a sentence: ``2,173,670`` (never an exponent), 4 figures below 1,000;
    ``figures`` rounds to that many significant figures first (``33,300,000,000``)."""
    v = float(f"{v:.{figures}g}") if figures else v
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.4g}"
