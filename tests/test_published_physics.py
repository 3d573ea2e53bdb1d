"""A bound is a bound: no verified published measurement reads impossible on its own basis and
workload (its model, GPU, GPU count, tokens counted, ISL/OSL, concurrency, speculation).

Each verified measurement in ``data/published`` whose model and GPU the catalogs hold is read
by :func:`rackbook.physics.check.check_claim` as it was measured. What the basis leaves unknown
is read the most permissive way, since a bound must hold for every workload the basis allows: a
cached share not stated is the threshold reading (impossible only when no share makes it
possible); speculation real or simulated with no acceptance stated keeps the most tokens a step
can verify. A model whose KV layout the catalog lacks is judged on weights and compute only, its
output tokens alone (the context and the prefill it cannot price are left out)."""

from __future__ import annotations

import math

import pytest

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import check
from rackbook.results import evidence

#: Published model names -> catalog ids.
MODELS = {
    "deepseek-v4.1-flash": "deepseek-v4.1-flash",
    "deepseek-v4-flash": "deepseek-v4-flash",
    "deepseek-v4-flash-0731": "deepseek-v4-flash",
    "deepseek-r1": "deepseek-r1",
    "dsr1": "deepseek-r1",
}


def _gpu(hardware: str) -> str | None:
    h = hardware.lower().replace("nvidia", "").strip()
    for gid in ("gb300", "gb200", "b300", "b200", "h200"):
        if h.startswith(gid):
            return gid
    return None


def _cases() -> list[tuple[str, dict]]:
    pts = evidence.published_points()
    pts = pts[(pts["role"] == "measurement") & pts["verified"] & pts["value"].notna()]
    out = []
    for _, p in pts.iterrows():
        b = p["basis"]
        model = MODELS.get(str(p["model"]).lower())
        gpu = _gpu(str(p["hardware"]))
        unit = str(p["unit"])
        if model is None or gpu is None or b is None or not p["gpus"] or p["gpus"] != p["gpus"]:
            continue
        if unit not in ("output tok/s/GPU", "tok/s/GPU", "tok/s per user"):
            continue
        kw: dict = {"model": model, "gpu": gpu, "gpus": int(p["gpus"])}
        conc = b.concurrency
        isl, osl = b.isl, b.osl
        if unit == "tok/s per user":
            if conc is None:
                continue
            # one user's output rate x the users = the deployment's output rate
            kw |= {"tok_s": float(p["value"]) * conc, "per": "total", "counted": "output"}
        elif b.tokens == "output":
            kw |= {"tok_s": float(p["value"]), "per": "gpu", "counted": "output"}
        else:
            if isl is None or osl is None:
                continue  # a total with no ISL/OSL cannot be split into its phases
            kw |= {"tok_s": float(p["value"]), "per": "gpu", "counted": "total"}
        kw |= {"isl": isl, "osl": osl, "batch": conc}
        if b.speculation != "none":
            spec = catalogs.as_model(model).speculative
            kw["tokens_per_step"] = float(spec.draft_tokens + 1) if spec else 1.0
        kw["unknown_share"] = b.cached_share is None
        out.append((str(p["id"]), kw))
    return out


CASES = _cases()


def _read(kw: dict) -> tuple[str, float, str]:
    kw = dict(kw)
    unknown = kw.pop("unknown_share")
    model, gpu, gpus, tok_s = kw.pop("model"), kw.pop("gpu"), kw.pop("gpus"), kw.pop("tok_s")
    m = catalogs.as_model(model)
    if check.narrowest_kv_dtype(m) is None:  # no KV layout: weights and compute, output only
        isl, osl = kw.pop("isl"), kw.pop("osl")
        if kw["counted"] == "total":
            if not (isl and osl):
                return "skipped", math.nan, "no ISL/OSL"
            tok_s = tok_s * osl / (isl + osl)
            kw["counted"] = "output"
        if kw.get("tokens_per_step", 1) > 1 and m.speculative is None:
            kw["tokens_per_step"] = 1.0
    if unknown and kw.get("isl") and kw["counted"] == "total":
        t = check.cached_share_threshold(model, gpu, gpus, tok_s, **kw)
        return t.verdict, t.ratio_cached, t.formula
    c = check.check_claim(model, gpu, gpus, tok_s, **kw)
    return c.verdict, c.ratio, c.reason


def test_enough_published_measurements_are_read():
    # the test cannot pass vacuously: the shipped data hold dozens of such points
    assert len(CASES) >= 40
    models = {kw["model"] for _, kw in CASES}
    assert {"deepseek-v4.1-flash", "deepseek-v4-flash", "deepseek-r1"} <= models


@pytest.mark.parametrize("point,kw", CASES, ids=[c[0] for c in CASES])
def test_no_verified_measurement_reads_impossible(point, kw):
    try:
        verdict, ratio, reason = _read(kw)
    except InputError as exc:  # a point the catalogs cannot price (e.g. a phase unknown)
        pytest.skip(f"{point}: {exc}")
    assert verdict != "impossible", f"{point}: {ratio:.3g}x: {reason}"


def test_measured_engines_reach_at_most_about_the_attainable_estimate():
    """The attainable estimate is a realistic level, not a second bound: engines measured on
    these bases reach up to about 0.87x of it (SGLang's DeepSeek-V4-Flash on 4 B300 at
    concurrency 16, with speculation read at its most permissive), none above 1.25x. An
    estimate far below what engines were measured to reach would call real figures
    unrealistic; this test fails then."""
    from rackbook.physics import attainable

    worst = 0.0
    for point, kw in CASES:
        kw = dict(kw)
        kw.pop("unknown_share")  # uncached: the most demanding reading of a total count
        model, gpu, gpus, tok_s = kw.pop("model"), kw.pop("gpu"), kw.pop("gpus"), kw.pop("tok_s")
        m = catalogs.as_model(model)
        if check.narrowest_kv_dtype(m) is None:
            isl, osl = kw.pop("isl"), kw.pop("osl")
            if kw["counted"] == "total":
                tok_s, kw["counted"] = tok_s * osl / (isl + osl), "output"
            if m.speculative is None:
                kw["tokens_per_step"] = 1.0
        a = attainable.for_check(check.check_claim(model, gpu, gpus, tok_s, **kw))
        assert a.ratio <= 1.25, f"{point}: {a.text}"
        worst = max(worst, a.ratio)
    assert 0.5 < worst < 1.25  # the closest engines come near it: it is not loose either
