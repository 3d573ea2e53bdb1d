"""The shared parts of every chapter's readings. A trace tests a claim only when recorded on the
claim's GPUs (``server.gpus`` declared for remote endpoints) serving the claim's model; otherwise
its reading is ``untested``, naming the hardware it ran on."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from rackbook.core import provenance
from rackbook.core.units import percent
from rackbook.physics import attainable as _attainable
from rackbook.physics import expected as _expected
from rackbook.physics.check import Check
from rackbook.results.headline import ClaimReading

#: GPU name fragments (upper case) of the claims' hardware; what a served model's name contains.
BLACKWELL_ULTRA: tuple[str, ...] = ("B300", "GB300")
BLACKWELL: tuple[str, ...] = ("B200", "B300", "GB200", "GB300")
MODEL_KEY = "v4.1-flash"


def gpu_names(run: dict[str, Any]) -> list[str]:
    """The GPUs that served a run: ``server.gpus`` of a remote endpoint, else the inventory."""
    server = run.get("server")
    if isinstance(server, dict) and not server.get("same_host"):
        return [str(g.get("name", "")) for g in server.get("gpus") or []]
    return [str(g.get("name", "")) for g in (run.get("hardware") or {}).get("gpus") or []]


def on_gpus(run: dict[str, Any], names: tuple[str, ...] = BLACKWELL_ULTRA) -> bool:
    return any(n.upper() in g.upper() for g in gpu_names(run) for n in names)


def can_test(
    run: dict[str, Any], gpus: tuple[str, ...] = BLACKWELL_ULTRA, model_key: str = MODEL_KEY
) -> bool:
    """A recorded trace on the claim's GPUs whose parameters or engine name the model."""
    names = json.dumps([run.get("parameters"), run.get("engine")], default=str).lower()
    return run.get("kind") == "recorded" and on_gpus(run, gpus) and model_key in names


def untested(claim_id: str, run: dict[str, Any], what: str, needs: str) -> ClaimReading:
    """The "this run" reading of a trace that cannot test the claim."""
    why = f"recorded on {provenance.hardware_label(run)} ({what}); the claim needs {needs}"
    return ClaimReading(claim_id, "this run", "untested", "-", why)


def parameters(p: Any, names: str, **resolved: Any) -> dict[str, Any]:
    """The headline JSON's ``parameters``: fields ``names`` of ``p``, ``resolved`` ones replaced."""
    out = {k: resolved[k] if k in resolved else getattr(p, k) for k in names.split()}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


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
    against: str = "the published",
) -> ClaimReading:
    """``consistent`` when |measured / published - 1| <= ``rel_tol`` (a fraction), else
    ``inconsistent``; ``untested`` when not ``testable`` or the value is unknown (``against``:
    whose figure ``published`` is)."""
    if not testable:
        return untested(claim_id, run, what, needs)
    if measured is None or not math.isfinite(measured):
        return ClaimReading(claim_id, "this run", "untested", "-", f"{what}: unknown in this trace")
    dev = measured / published - 1
    shown = percent(dev, sign=True)
    why = f"{what}, {shown} from {against} {published:,.4g} (tolerance {percent(rel_tol, 0)})"
    return within(claim_id, dev, 0.0, rel_tol, shown, why)


def within(
    claim_id: str, value: float, claimed: float, tolerance: float, margin: str, reason: str
) -> ClaimReading:
    """``consistent`` when |value - claimed| <= ``tolerance`` (the claim's unit)."""
    v = "consistent" if abs(value - claimed) <= tolerance else "inconsistent"
    return ClaimReading(claim_id, "this run", v, margin, reason)


@dataclass(frozen=True)
class RangeVerdict:
    """A measured gain against a published range (fractions): verdict, inside, overlaps."""

    verdict: str
    inside: bool
    overlaps: bool
    text: str


def number(x: Any, digits: int = 4) -> float | int | None:
    """A headline value: ``x`` rounded to ``digits`` decimals, ints kept, None when unknown."""
    if isinstance(x, int):
        return int(x)
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
    """What measured kernels reach for a check (tok/s per GPU), with ``expected``: what real
    deployments reach (tok/s per GPU, interval, ratio; the stored fit; none past memory)."""
    a, lead = _attainable.for_check(c), f"{what}: " if what else ""
    d = a.to_dict() | {"text": lead + a.text}
    keys = "tok_s_per_gpu ratio deployment deployment_name calibration binding text".split()
    out = {k: d[k] for k in keys}
    keys = "tok_s_per_gpu low high ratio deployment".split()
    if c.limit.startswith("memory capacity"):
        return out | {"expected": dict.fromkeys(keys) | {"text": ""}}
    fit = _expected.load_fit()
    e = _expected.for_check(c, fit=fit)
    d = e.to_dict() | {"text": lead + e.text(fit.validation_text)}
    return out | {"expected": {k: d[k] for k in (*keys, "text")}}
