"""The shared parts of every chapter's readings (:mod:`rackbook.results.headline`): whether a
trace can test a claim, the "this run" and physics readings of a figure, the published range
reading, and headline values that stay honest when a quantity is unknown.

- A trace tests a claim only when it was recorded (not synthetic or published) on the claim's
  GPUs (``run.json`` ``hardware.gpus[].name``, or ``server.gpus`` declared for remote
  endpoints) serving the claim's model; otherwise its reading is ``untested``, naming the
  hardware it ran on. A CPU run is never called a reproduction, and CPU servers are replicas,
  not GPUs.
- A physics reading compares a claimed rate with a ceiling (:mod:`rackbook.physics.check`),
  and says how far it is from what measured kernels reach (:func:`attainable`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rackbook.core import provenance
from rackbook.physics import attainable as _attainable
from rackbook.physics import expected as _expected
from rackbook.physics.check import Check, physics_verdict
from rackbook.results.headline import ClaimReading, ceiling_margin, untested

#: GPU name fragments (upper case) of the claims' hardware.
BLACKWELL_ULTRA: tuple[str, ...] = ("B300", "GB300")
BLACKWELL: tuple[str, ...] = ("B200", "B300", "GB200", "GB300")
#: What a served model's name must contain for a trace to speak to the claims.
MODEL_KEY = "v4.1-flash"


def gpu_names(run: dict[str, Any]) -> list[str]:
    """Names of the GPUs that served a run: those declared for its endpoints (run.json
    ``server.gpus``) when it was recorded against running servers, else the recording
    machine's inventory (empty on a CPU-only machine)."""
    server = run.get("server")
    if isinstance(server, dict) and not server.get("same_host"):
        return [str(g.get("name", "")) for g in server.get("gpus") or []]
    return [str(g.get("name", "")) for g in (run.get("hardware") or {}).get("gpus") or []]


def on_gpus(run: dict[str, Any], names: tuple[str, ...] = BLACKWELL_ULTRA) -> bool:
    """True when any GPU of the run's inventory has one of ``names`` in its name."""
    return any(n.upper() in g.upper() for g in gpu_names(run) for n in names)


def serves_claim_model(run: dict[str, Any], key: str = MODEL_KEY) -> bool:
    """True when the run's parameters or engine name the claims' model (``v4.1-flash``)."""
    names = json.dumps([run.get("parameters"), run.get("engine")], default=str).lower()
    return key in names


def can_test(
    run: dict[str, Any], gpus: tuple[str, ...] = BLACKWELL_ULTRA, model_key: str = MODEL_KEY
) -> bool:
    """A recorded trace on the claim's GPUs serving the claim's model."""
    return (
        run.get("kind") == "recorded" and on_gpus(run, gpus) and serves_claim_model(run, model_key)
    )


def hardware(run: dict[str, Any]) -> str:
    """Where a trace ran, in the words the readings use (CPU servers are replicas)."""
    return provenance.hardware_label(run)


def run_reading(
    claim_id: str,
    measured: float | None,
    published: float,
    rel_tol: float,
    *,
    testable: bool,
    what: str,
    run: dict[str, Any],
    needs: str,
) -> ClaimReading:
    """The "this run" reading of a measured value against a published one (same unit).

    ``untested`` unless the trace can test the claim (``testable``); then ``consistent`` when
    |measured / published - 1| <= ``rel_tol`` (a fraction), else ``inconsistent``; a value the
    trace does not hold stays ``untested``. ``what`` describes the measured value.
    """
    if not testable:
        return untested(claim_id, f"{hardware(run)} ({what})", needs)
    if measured is None or not math.isfinite(measured):
        return ClaimReading(claim_id, "this run", "untested", "-", f"{what}: unknown in this trace")
    dev = measured / published - 1
    v = "consistent" if abs(dev) <= rel_tol else "inconsistent"
    return ClaimReading(
        claim_id,
        "this run",
        v,
        f"{dev:+.1%}",
        f"{what}, {dev:+.1%} from the published {published:,.4g} (tolerance {rel_tol:.0%})",
    )


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


def physics_reading(claim_id: str, claimed: float, ceiling: float, what: str) -> ClaimReading:
    """The physics reading of ``claimed`` against a ``ceiling`` in the same unit (the verdict
    of :func:`rackbook.physics.check.physics_verdict` on their ratio)."""
    ratio = claimed / ceiling if ceiling > 0 else math.inf
    v = physics_verdict(ratio)
    shown = ceiling_margin(ratio)
    finite = ratio if math.isfinite(ratio) else None
    return ClaimReading(claim_id, "physics", v, shown, f"{what}: {shown}", ratio=finite)


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


def attainable(c: Check, what: str = "") -> dict[str, Any]:
    """The attainable reading of a :class:`rackbook.physics.check.Check`
    (:func:`rackbook.physics.attainable.for_check`, the default deployment and the shipped
    calibration) for a :class:`rackbook.results.headline.ClaimReading`: ``tok_s_per_gpu``
    (what measured kernels reach, tokens/s per GPU), ``ratio`` (the figure over it),
    ``deployment``, ``calibration``, ``binding`` and ``text`` (one line, ``what`` before it:
    the basis it is read on)."""
    a = _attainable.for_check(c)
    d = a.to_dict()
    return {
        "tok_s_per_gpu": d["tok_s_per_gpu"],
        "ratio": d["ratio"],
        "deployment": d["deployment"],
        "calibration": d["calibration"],
        "binding": d["binding"],
        "text": (f"{what}: " if what else "") + a.text,
        "expected": expected(c, what),
    }


def expected(c: Check, what: str = "") -> dict[str, Any]:
    """The expected reading of a :class:`rackbook.physics.check.Check`
    (:func:`rackbook.physics.expected.for_check` with the stored fit): ``tok_s_per_gpu`` (what
    real deployments reach, tokens/s per GPU), ``low``, ``high``, ``ratio`` (the figure over
    it), ``deployment`` and ``text`` (one sentence with the held-out validation; ``what``
    before it). A figure that does not fit has none (None values)."""
    keys = ("tok_s_per_gpu", "low", "high", "ratio", "deployment")
    if c.limit.startswith("memory capacity"):
        return dict.fromkeys(keys) | {"text": ""}
    fit = _expected.load_fit()
    e = _expected.for_check(c, fit=fit)
    d = e.to_dict()
    return {k: d[k] for k in keys} | {
        "text": (f"{what}: " if what else "") + e.text(fit.validation_text)
    }


def placement(d: Mapping[str, Any]) -> str:
    """Where a claim sits against an expected reading as stored (:func:`expected`): ``below`` /
    ``within`` / ``above`` what real deployments reach (its ``ratio``, claim over expected,
    against the interval ``low`` / ``high`` over ``tok_s_per_gpu``), "" without one.

    Expected 1,000 (490-1,830) tok/s per GPU, claim 2,000 (ratio 2): above."""
    exp, low, high, ratio = (d.get(k) for k in ("tok_s_per_gpu", "low", "high", "ratio"))
    if not all(isinstance(x, (int, float)) for x in (exp, low, high, ratio)) or not exp or exp <= 0:
        return ""
    claim = ratio * exp
    return "below" if claim < low else "above" if claim > high else "within"


def brief(d: Mapping[str, Any], validation: str = "") -> str:
    """The expected reading in one short line for a readings table: the claim's place
    (:func:`placement`) against what real deployments reach, the range (tokens/s per GPU) and
    the claim's multiple, then the model's held-out error ``validation``
    (:attr:`rackbook.physics.expected.Fit.validation_text`); "" without an expected rate.

    ``claim above what real deployments reach (~1,000, 490-1,830 tok/s/GPU: 2x)``."""
    where = placement(d)
    if not where:
        return ""
    line = (
        f"claim {where} what real deployments reach (~{d['tok_s_per_gpu']:,.0f}, "
        f"{d['low']:,.0f}-{d['high']:,.0f} tok/s/GPU: {d['ratio']:.3g}x)"
    )
    return line + (f"; model error: {validation}" if validation else "")
