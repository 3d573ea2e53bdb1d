"""The three readings of eplb-balance's claims (balancedness before and after EPLB, the share
recovered): physics, and this run's where the trace can test them."""

from __future__ import annotations

import math
from typing import Any

from rackbook.core.units import percent
from rackbook.physics import eplb
from rackbook.results import chapter_common as common
from rackbook.results import headline, verdicts
from rackbook.results.eplb_balance.synthetic import RECOVERED, Spec, calibrate


def model_skew(run: dict[str, Any], static: float, ep_size: int, redundant: int) -> float:
    """Skew for the model sweeps: the synthetic trace's own, else one calibrated to the
    measured ``static`` balancedness at ``ep_size`` and ``redundant``."""
    gen = run.get("generator") or {}
    if run.get("kind") == "synthetic" and "skew" in gen:
        return float(gen["skew"])
    return float(calibrate(Spec(ep_size=ep_size, redundant=redundant), target=static)["skew"])


def kind_of(run: dict[str, Any]) -> str:
    """Headline kind for values computed from a trace: ``synthetic`` or ``measured``."""
    return "measured" if run.get("kind") == "recorded" else "synthetic"


def balancedness_physics(
    claim_id: str, claimed: float, ep_size: int, note: str
) -> headline.ClaimReading:
    """vLLM's balancedness lies between 1 / n (every token on one of n EP ranks) and 1:
    ``possible`` inside, ``impossible`` outside, n = ``ep_size`` (assumed; the reason gives
    the fewest ranks the figure clears); ``note`` adds what the routing model says."""
    lo = 1 / ep_size
    ok = lo <= claimed <= 1
    fewest = math.ceil(1 / claimed) if claimed > 0 else None
    ranks = (
        f"the write-up does not state the EP ranks: {ep_size} is assumed here (the "
        "chapter's ep_size)"
        + (
            f"; the figure clears the floor of any EP size of at least {fewest} ranks"
            if fewest is not None and claimed <= 1
            else ""
        )
    )
    return common.reading(
        claim_id,
        "physics",
        "possible" if ok else "impossible",
        f"{claimed:g} {'in' if ok else 'outside'} [1/{ep_size}, 1]",
        [f"balancedness must lie between 1/{ep_size} = {lo:.3g} and 1 ({ranks})", note],
    )


def recovered_physics(
    before: float, after: float, recovered_pct: float, tol_pct: float, ep_size: int
) -> headline.ClaimReading:
    """Does "recovers ``recovered_pct`` % of uniform routing's potential" follow from before
    and after? ``possible`` when the gap closed or the ratio to uniform gives it within
    ``tol_pct``; ``undetermined`` when only a free reference in [after, 1] can; else
    ``impossible``."""
    gap = 100 * eplb.fraction_recovered_gap(before, after)
    ratio = 100 * eplb.fraction_of_uniform(after)
    needed = after / (recovered_pct / 100)
    if min(abs(gap - recovered_pct), abs(ratio - recovered_pct)) <= tol_pct:
        v, why = "possible", "one fixed reading gives it"
    elif after <= needed <= 1:
        v = "undetermined"
        why = f"it needs uniform routing to score {needed:.3f} per step, which the batch decides"
    else:
        v, why = "impossible", f"no reading gives it (uniform would need {needed:.3f})"
    clauses = [
        f"from {before:g} and {after:g}: {percent(gap / 100)} of the gap closed, "
        f"{percent(ratio / 100)} of uniform",
        f"neither is {recovered_pct:g} % within {tol_pct:g}" if v != "possible" else "",
        why,
    ]
    return common.reading(
        RECOVERED, "physics", v, f"gap {percent(gap / 100)}, ratio {percent(ratio / 100)}", clauses
    )


def run_reading(
    run: dict[str, Any], claim_id: str, value: float, tolerance: float, claimed: float, unit: str
) -> headline.ClaimReading:
    """This run's reading of one value against its claim: ``consistent`` / ``inconsistent``
    only for a recording on Blackwell GPUs serving DeepSeek-V4.1-Flash with EPLB; a synthetic
    trace, or any other recording (vLLM on CPU refuses ``--enable-eplb``), is ``untested``."""
    u = unit
    cal = (run.get("generator") or {}).get("calibration") or {}
    if run.get("kind") == "synthetic":
        why = (
            f"the synthetic routing model was calibrated to give {claimed:g}{u}: an input"
            if cal.get("target_claim") == claim_id
            else f"a synthetic routing model predicts {value:.3g}{u}, no measured EPLB run"
        )
        return headline.ClaimReading(claim_id, "this run", "untested", "-", why, synthetic=True)
    if not verdicts.can_test(run, verdicts.BLACKWELL):
        needs = "EPLB on Blackwell GPUs serving DeepSeek-V4.1-Flash"
        return verdicts.untested(claim_id, run, f"{value:.3g}{u}", needs)
    ok = abs(value - claimed) <= tolerance
    return headline.ClaimReading(
        claim_id,
        "this run",
        "consistent" if ok else "inconsistent",
        f"{value - claimed:+.3g}{u}",
        f"measured {value:.3g}{u} against {claimed:g}{u} (tolerance {tolerance:g}{u})",
    )
