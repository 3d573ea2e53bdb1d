"""``rackbook check``: the three readings of a throughput figure for a workload.

- **physics**: :func:`rackbook.physics.check.check_claim` on the workload (possible /
  impossible / undetermined, with the binding limit);
- **published**: the shipped published points (:func:`rackbook.results.evidence.published_points`)
  nearest the workload, like for like first (same model, same GPU, same token count), named with
  their ratio and URL; the verdict is :func:`rackbook.results.evidence.published_reading` over
  the like-for-like points only (``none published`` when there are none). Every call into the
  published evidence goes through :func:`published_for_workload`, the one place to switch to a
  basis-aware selection;
- **this run**: a trace (``--trace DIR``) recorded on the claim's GPU serving its model, its
  largest point's per-GPU rate of the counted tokens within :data:`REL_TOL` of the figure
  (``consistent``), else ``inconsistent``; ``untested`` otherwise.

Units: tokens/s per GPU unless said.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.traces import read_trace
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import check
from rackbook.results import evidence, rack_scaling, verdicts

#: Relative tolerance of the this-run reading.
REL_TOL = 0.10
#: How many published points the output names.
CLOSEST = 3
#: The units of published per-GPU throughput points, by what they count.
_UNIT_COUNTED = {"tok/s/GPU": "total", "output tok/s/GPU": "output", "input tok/s/GPU": "input"}


@dataclass(frozen=True)
class Reading:
    """One reading: its verdict, a one-line reason, and what else it carries (``extra``)."""

    verdict: str
    reason: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reason": self.reason, **self.extra}


def _key(text: object) -> str:
    return str(text).lower().replace(" ", "-").replace("_", "-")


def published_for_workload(
    model: str, gpu: str, counted: str, claimed: float, isl: float | None, osl: float | None
) -> Reading:
    """The published points nearest a workload's figure (tokens/s per GPU): each point's
    mismatches (model, GPU, tokens counted, ISL/OSL), the closest first (fewest mismatches,
    then nearest value; ties by id), and the verdict over the points with none."""
    pts = evidence.published_points()
    pts = pts[pts["unit"].isin(list(_UNIT_COUNTED)) & pts["value"].notna()].copy()
    mkey = _key(model).removeprefix("deepseek-")
    rows = []
    for _, p in pts.iterrows():
        miss = []
        if mkey not in _key(p["model"]):
            miss.append(f"model {p['model']}")
        if _key(gpu) not in _key(p["hardware"]):
            miss.append(f"hardware {p['hardware']}")
        kind = _UNIT_COUNTED[str(p["unit"])]
        if kind != counted:
            miss.append(f"counts {kind} tokens")
        if isl and osl and not (pd.isna(p["isl"]) or pd.isna(p["osl"])):
            if (int(p["isl"]), int(p["osl"])) != (round(isl), round(osl)):
                miss.append(f"ISL/OSL {int(p['isl'])}/{int(p['osl'])}")
        elif isl and osl:
            miss.append("ISL/OSL not stated")
        value = float(p["value"])
        rows.append(
            {
                "id": p["id"],
                "value": value,
                "unit": p["unit"],
                "model": p["model"],
                "hardware": p["hardware"],
                "gpus": None if pd.isna(p["gpus"]) else int(p["gpus"]),
                "ratio": claimed / value,
                "url": p["url"],
                "verified": bool(p["verified"]),
                "mismatch": "; ".join(miss) or "like for like",
                "n_miss": len(miss),
                "dist": abs(math.log(claimed / value)),
            }
        )
    if not rows:
        return Reading("none published", "no published per-GPU throughput point", {"closest": []})
    df = pd.DataFrame(rows).sort_values(["n_miss", "dist", "id"], kind="stable")
    closest = [
        {
            k: r[k]
            for k in ("value", "unit", "model", "hardware", "gpus", "ratio", "url", "mismatch")
        }  # fmt: skip
        for r in df.head(CLOSEST).to_dict("records")
    ]
    like = df[df["n_miss"] == 0]
    best = df.iloc[0]
    near = (
        f"closest: {best['value']:,.6g} {best['unit']} ({best['model']}, {best['hardware']}; "
        f"{best['mismatch']}), the figure is {best['ratio']:.3g}x it, {best['url']}"
    )
    if like.empty:
        return Reading(
            "none published",
            f"no published point of the same model, GPU and token count; {near}",
            {"closest": closest},
        )
    r = evidence.published_reading("workload", claimed, like)
    return Reading(r.verdict, f"{r.reason}; {near}", {"closest": closest})


def this_run(trace_dir: str | None, model: str, gpu: str, counted: str, claimed: float) -> Reading:
    """The this-run reading of the figure from the trace in ``trace_dir`` (None: untested)."""
    if trace_dir is None:
        return Reading("untested", "no trace given (--trace DIR)")
    t = read_trace(Path(trace_dir))
    acc = rack_scaling.token_accounting(t)
    col = {"output": "output", "total": "total", "input": "input"}[counted]
    per_gpu = acc[f"{col}_tok_s_per_gpu"].astype(float)
    if acc.empty or per_gpu.isna().all():
        return Reading("untested", f"{trace_dir}: no point with a GPU count and {col} tokens")
    top = acc.loc[per_gpu.idxmax()]
    key = _key(model).removeprefix("deepseek-")
    testable = verdicts.can_test(t.run, (gpu.upper(),), key)
    what = (
        f"{col} {float(top[f'{col}_tok_s_per_gpu']):,.1f} tok/s per GPU at point {top['point_id']}"
    )
    r = verdicts.run_reading(
        "workload",
        float(top[f"{col}_tok_s_per_gpu"]),
        claimed,
        REL_TOL,
        testable=testable,
        what=what,
        run=t.run,
        needs=f"a recording of {model} on {gpu}",
    )
    return Reading(r.verdict, r.reason)


def readings(args: argparse.Namespace) -> tuple[check.Check, Reading, Reading, Reading]:
    """The three readings of ``rackbook check``'s arguments."""
    if args.batch is not None and args.concurrency is not None:
        raise InputError("-", "--concurrency", "give --concurrency or --batch, not both")
    conc = args.concurrency if args.concurrency is not None else args.batch
    c = check.check_claim(
        args.model,
        args.gpu,
        args.gpus,
        args.tok_s,
        per=args.per or "gpu",
        phase=args.phase,
        batch=conc,
        context=args.context,
        tokens_per_step=args.tokens_per_step,
        kv_dtype=args.kv_dtype,
        counted=args.counted,
        isl=args.isl,
        osl=args.osl,
        cached_share=args.cached_share,
    )
    phys = Reading(
        c.verdict,
        c.reason,
        {
            "limit": c.limit,
            "ratio": c.ratio if math.isfinite(c.ratio) else None,
            "ceiling_tok_s_per_gpu": c.ceiling_tok_s_per_gpu
            if math.isfinite(c.ceiling_tok_s_per_gpu)
            else None,
            "fractions": c.fractions,
            "claimed_tok_s_per_gpu": c.claimed_tok_s_per_gpu,
            "workload": c.workload,
            "readings": [
                {
                    "name": r.name,
                    "phase": r.phase,
                    "tok_s_per_gpu": r.tok_s_per_gpu if math.isfinite(r.tok_s_per_gpu) else None,
                    "formula": r.formula,
                }
                for r in c.readings
            ],
            "notes": c.notes,
        },
    )
    model = catalogs.as_model(args.model)
    pub = published_for_workload(
        model.id, c.gpu, c.counted, c.claimed_tok_s_per_gpu, args.isl, args.osl
    )
    run = this_run(args.trace, model.id, c.gpu, c.counted, c.claimed_tok_s_per_gpu)
    return c, phys, pub, run


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf to None, numpy scalars to Python."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def cli_check(args: argparse.Namespace) -> int:
    """``rackbook check --model M --gpu G --gpus N --tok-s X [workload] [--json]``: the first
    line says what the figure is per (GPU or total; assumed per GPU, and said, when ``--per``
    is not given), then each ceiling, the physics verdict, the closest published points and
    this run; with ``--json`` one object ``{"physics", "published", "this_run"}`` last."""
    c, phys, pub, run = readings(args)
    per = (
        "per GPU (assumed: --per not given; --per total for a figure over all the GPUs)"
        if args.per is None
        else (
            "per GPU (--per gpu)"
            if args.per == "gpu"
            else f"in total over {c.gpus} GPUs (--per total)"
        )
    )
    w = c.workload
    print(f"{args.tok_s:,.6g} {c.counted} tok/s {per}: {c.claimed_tok_s_per_gpu:,.1f} per GPU")
    print(
        f"{c.model} on {c.gpus} x {c.gpu}, phase {c.phase}: output {w['output_tok_s_per_gpu']:,.1f}"
        f" and new input {w['new_input_tok_s_per_gpu']:,.1f} tok/s per GPU; decode context "
        f"{w['decode_context']:,.0f}, prefill prefix {w['prefill_prefix']:,.0f} tokens, cached "
        f"share {w['cached_share']:.1%}, concurrency "
        + ("not given" if w["concurrency"] is None else f"{w['concurrency']:,.0f}")
    )
    for r in c.readings:
        if r.name == "memory capacity":
            shown = "fits" if r.tok_s_per_gpu else "does not fit"
        else:
            shown = f"{r.tok_s_per_gpu:,.0f} tok/s/GPU"
        label = f"{r.phase} {r.name}" if r.phase else r.name
        print(f"  {label}: {shown}  [{r.formula}]")
    for n in c.notes:
        print(f"  note: {n}")
    print(f"physics: {c.verdict} ({c.reason}; limit: {c.limit})")
    print(f"published: {pub.verdict} ({pub.reason})")
    for p in pub.extra.get("closest", []):
        print(
            f"  {p['value']:,.6g} {p['unit']} ({p['model']}, {p['hardware']}, "
            f"{'?' if p['gpus'] is None else int(p['gpus'])} GPUs): figure {p['ratio']:.3g}x; "
            f"{p['mismatch']}; {p['url']}"
        )
    print(f"this run: {run.verdict} ({run.reason})")
    if args.json:
        out = {"physics": phys.to_dict(), "published": pub.to_dict(), "this_run": run.to_dict()}
        print(json.dumps(_clean(out), allow_nan=False))
    return 0
