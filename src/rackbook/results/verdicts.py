"""What a measured or modelled number says about a published claim: whether the trace's
hardware can speak to it, the verdict words of :data:`rackbook.results.headline.VERDICTS`, and
headline
values that stay honest when a quantity is unknown.

- A *measured* value tests a claim only when the trace ran on the claim's GPUs (names in the
  run's hardware inventory, ``run.json`` ``hardware.gpus[].name``); otherwise its verdict is
  ``not reproduced``: it shows the method, not the claim.
- A *modelled* reading of a claim (roofline arithmetic) is ``consistent`` when physics allows it
  and ``inconsistent`` when it needs more than the hardware's peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rackbook.core import provenance

#: GPU name fragments (upper case) of the claims' hardware.
BLACKWELL_ULTRA: tuple[str, ...] = ("B300", "GB300")
BLACKWELL: tuple[str, ...] = ("B200", "B300", "GB200", "GB300")


def gpu_names(run: dict[str, Any]) -> list[str]:
    """Names of the GPUs in a run's hardware inventory (empty on a CPU-only machine)."""
    return [str(g.get("name", "")) for g in (run.get("hardware") or {}).get("gpus") or []]


def on_gpus(run: dict[str, Any], names: tuple[str, ...] = BLACKWELL_ULTRA) -> bool:
    """True when any GPU of the run's inventory has one of ``names`` in its name."""
    return any(n.upper() in g.upper() for g in gpu_names(run) for n in names)


def stand_in(run: dict[str, Any], target: str) -> str:
    """One-line reason for a stand-in measurement, e.g. ``measured on 2-core ..., no GPU, not
    on a GB300 NVL72``."""
    return f"measured on {provenance.hardware_label(run)}, not on {target}"


def against_value(
    measured: float | None,
    published: float,
    rel_tol: float,
    comparable: bool,
    what: str,
    target: str,
    run: dict[str, Any],
) -> tuple[str, str]:
    """Verdict of a measured value against a published one (same unit).

    Not comparable hardware -> ``not reproduced``; unknown or non-finite value -> ``not
    comparable``; otherwise ``consistent`` when |measured / published - 1| <= ``rel_tol``
    (a fraction), else ``inconsistent``. The reason starts with ``what``.
    """
    if not comparable:
        return "not reproduced", f"{what}; {stand_in(run, target)}"
    if measured is None or not math.isfinite(measured):
        return "not comparable", f"{what}; the value is unknown in this trace"
    dev = measured / published - 1
    v = "consistent" if abs(dev) <= rel_tol else "inconsistent"
    return v, f"{what}; {dev:+.1%} from the published {published:,.4g} (tolerance {rel_tol:.0%})"


@dataclass(frozen=True)
class RangeVerdict:
    """A measured gain against a published range [low, high] (fractions).

    ``verdict``: ``inside`` (the point estimate is in the range), ``consistent`` (it is not,
    but the interval overlaps the range), ``below`` / ``above`` (the whole interval is).
    """

    verdict: str
    inside: bool
    overlaps: bool
    text: str


def gain_verdict(
    v: RangeVerdict, comparable: bool, target: str, run: dict[str, Any]
) -> tuple[str, str]:
    """Verdict of a measured gain against a published range (:func:`rackbook.results.prefill_gain.
    verdict_range`): ``inside`` or an overlapping interval -> ``consistent``, ``below`` /
    ``above`` -> ``inconsistent``; hardware that cannot speak to the claim -> ``not
    reproduced``."""
    if not comparable:
        return "not reproduced", f"{v.text}; {stand_in(run, target)}"
    return ("consistent" if v.verdict in ("inside", "consistent") else "inconsistent"), v.text


def reading_verdicts(readings: pd.DataFrame) -> pd.DataFrame:
    """Verdict and one-line reason for each row of
    :func:`rackbook.results.rack_scaling.claim_readings`.

    survives True -> ``consistent``; False -> ``inconsistent``; unknown (the reading fits only
    if enough counted tokens were cache hits) -> ``consistent`` with that condition as reason.
    Columns: reading, verdict, reason.
    """
    rows = []
    for r in readings.itertuples():
        if pd.isna(r.survives):
            v = "consistent"
            why = (
                f"possible only if at least {r.min_cached_share:.1%} of counted tokens were "
                "prefix-cache hits (share not published)"
            )
        elif r.survives:
            v = "consistent"
            why = f"{r.ratio:.3g}x the GPU's peak FLOP/s: within physics"
        else:
            v = "inconsistent"
            why = f"{r.ratio:.3g}x the GPU's peak FLOP/s: more than the hardware can compute"
        rows.append({"reading": r.reading, "verdict": v, "reason": why})
    return pd.DataFrame(rows)


def fits_verdict(fits: bool) -> str:
    """``consistent`` if a figure fits under a physical ceiling, else ``inconsistent``."""
    return "consistent" if bool(fits) else "inconsistent"


def number(x: Any, digits: int = 4) -> float | int | None:
    """A headline value: ``x`` rounded to ``digits`` decimals, ints kept, None when unknown
    (None, NA, NaN, infinite)."""
    if x is None or x is pd.NA:
        return None
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return round(f, digits) if math.isfinite(f) else None


def text(x: Any, spec: str = ",.0f", unknown: str = "unknown") -> str:
    """``format(x, spec)``, or ``unknown`` for None / NA / NaN (for glued prose)."""
    v = number(x, 12)
    return unknown if v is None else format(v, spec)
