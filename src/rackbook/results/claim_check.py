"""``rackbook check``: the physics, published and this-run readings of a throughput figure for
a workload (tokens/s per GPU unless said). pandas, the published tables and traces are imported
only where a reading needs them (benchmarks/check_speed.py)."""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import orjson

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core.units import percent, ratio_text
from rackbook.errors import InputError
from rackbook.inputs import catalogs, loader
from rackbook.physics import check

#: Relative tolerance of the this-run reading; how many published points the output names.
REL_TOL, CLOSEST = 0.10, 3
NUMPY = orjson.OPT_SERIALIZE_NUMPY


#: Parts in which a published point must agree with the workload to decide (an unstated part
#: never differs); parts named and counted in its distance but not deciding.
DECIDING_PARTS = tuple("metric tokens per model hardware gpu_count speculation isl osl".split())
NOTED_PARTS: tuple[str, ...] = ("serving",)


def workload_basis(
    model: str,
    gpu: str,
    gpus: int,
    counted: str,
    isl: float | None,
    osl: float | None,
    cached_share: float | None,
    concurrency: float | None,
    engine: str | None = None,
    speculation: str | None = None,
) -> basis_mod.Basis:
    """The basis of ``rackbook check``'s figure (per GPU of ``gpus``; the cached prefix counted
    with a share above 0); what the flags do not state is ``unknown``."""
    share = float(cached_share) if cached_share is not None else None
    tokens = "input incl. cached+output" if share else "input+output"
    tokens = "output" if counted == "output" else tokens

    def whole(x: float | None) -> int | None:
        return round(x) if x is not None and math.isfinite(x) and x >= 1 else None

    b: dict[str, Any] = dict(metric="throughput", tokens=tokens, per="GPU", gpus="deployment")
    b |= dict(gpu_count=int(gpus), statistic="rate", model=model, hardware=gpu, cached_share=share)
    b |= dict(workload=basis_mod.UNKNOWN, serving=basis_mod.UNKNOWN, isl=whole(isl), osl=whole(osl))
    b["engine"] = engine.strip() if engine and engine.strip() else basis_mod.UNKNOWN
    b["concurrency"] = whole(concurrency)
    m = (speculation or "").strip().lower()  # a word other than none/real/simulated: a method
    kind = m in ("none", "real", "simulated")
    b["speculation"] = m if kind else "real" if m else basis_mod.UNKNOWN
    b["spec_method"] = None if kind or not m else m
    return basis_mod.make(b, claim=True)


def basis_text(wb: basis_mod.Basis) -> str:
    """:meth:`Basis.short` naming the draft method beside the speculation: ``real (eagle)``."""
    spec = f"{wb.speculation} ({wb.spec_method})" if wb.spec_method else wb.speculation
    return replace(wb, speculation=spec).short()


_POINT_FIELDS = ("id", "value", "unit", "model", "hardware", "gpus", "url", "verified", "role")


def build_per_gpu_points() -> dict[str, Any]:
    """The per-GPU throughput points (not context) as JSON records, and the parts' ``weights``."""
    from rackbook.results import evidence

    pts, out = evidence.published_points(), []
    per_gpu = pts["unit"].astype(str).str.endswith(evidence.PER_GPU) & pts["value"].notna()
    for p in pts[per_gpu & (pts["role"] != "context")].to_dict("records"):
        if isinstance(b := p["basis"], basis_mod.Basis):
            rec = {k: p[k] for k in _POINT_FIELDS} | dict(value=float(p["value"]), basis=asdict(b))
            rec |= dict(verified=bool(p["verified"]), gpus=evidence.int_or_none(p["gpus"]))
            out.append(orjson.loads(orjson.dumps(rec, option=NUMPY)))  # NaN: null
    return {"points": out, "weights": evidence.WEIGHTS}


def published_per_gpu_points() -> dict[str, Any]:
    """:func:`build_per_gpu_points`, cached on disk (read with json, never importing pandas)."""
    data = paths.DATA
    published = sorted(p for p in (data / "published").rglob("*") if p.is_file())
    files = [data / "claims.yaml", *published]
    return loader.derived("published-per-gpu", files, build_per_gpu_points)


def point_text(p: dict[str, Any]) -> str:
    """``value unit (model, hardware, N GPUs): figure 1.2x; mismatch; url``."""
    gpus = "?" if p["gpus"] is None else int(p["gpus"])
    ratio = "no ratio" if p["ratio"] is None else ratio_text(p["ratio"])
    return (
        f"{p['value']:,.6g} {p['unit']} ({p['model']}, {p['hardware']}, {gpus} GPUs): "
        f"figure {ratio}; {p['mismatch']}; {p['url']}"
    )


def published_for_workload(wb: basis_mod.Basis, claimed: float) -> dict[str, Any]:
    """The published points nearest a workload's figure (tok/s per GPU), closest first."""
    doc, rows = published_per_gpu_points(), []
    for p in doc["points"]:
        b = basis_mod.Basis(**p["basis"])
        deciding = basis_mod.differences(wb, b, DECIDING_PARTS)
        diffs = deciding + basis_mod.differences(wb, b, NOTED_PARTS)
        why = [d.text for d in diffs]
        if p["role"] == "analogue":
            why.insert(0, "an analogue")
        elif not p["verified"]:
            why.append("not verified first-hand")
        value, like = p["value"], not deciding and p["role"] == "measurement" and p["verified"]
        row = p | dict(basis=b.short(), ratio=claimed / value if value > 0 else None, like=like)
        row["mismatch"] = "; ".join(why) or "like for like"
        far = sum(doc["weights"].get(d.part, 1.0) for d in diffs) + (p["role"] != "measurement")
        dist = abs(math.log(claimed / value)) if value > 0 else math.inf
        rows.append(((far, not p["verified"], dist, str(p["id"])), row))
    if not rows:
        none = "no published per-GPU throughput point"
        return dict(verdict="none published", reason=none, closest=[], basis=basis_text(wb))
    ranked = [r for _, r in sorted(rows, key=lambda kr: kr[0])]
    keys = ("value", "unit", "model", "hardware", "gpus", "ratio", "url", "basis", "mismatch")
    closest = [{k: r[k] for k in keys} for r in ranked[:CLOSEST]]
    near = f"closest: {point_text(closest[0])}"
    like = [r for r in ranked if r["like"]]
    extra = {"closest": closest, "basis": basis_text(wb), "decided_on": [r["id"] for r in like]}
    if not like:
        none = f"no verified published measurement of the same basis ({basis_text(wb)}); {near}"
        return dict(verdict="none published", reason=none) | extra
    import pandas as pd  # the rare like-for-like case: the book's reading of them

    from rackbook.results import evidence

    r = evidence.published_reading("workload", claimed, pd.DataFrame(like))
    return dict(verdict=r.verdict, reason=f"{r.reason}; {near}") | extra


def this_run(
    trace_dir: str | None, model: str, gpu: str, counted: str, claimed: float
) -> dict[str, Any]:
    """The this-run reading of the figure from the trace in ``trace_dir`` (None: untested)."""
    if trace_dir is None:
        return dict(verdict="untested", reason="no trace given (--trace DIR)")
    from rackbook.core.traces import read_trace
    from rackbook.results import rack_scaling, verdicts

    t = read_trace(Path(trace_dir))
    acc, column = rack_scaling.token_accounting(t), f"{counted}_tok_s_per_gpu"
    if acc.empty or column not in acc or acc[column].isna().all():
        return dict(
            verdict="untested",
            reason=f"{trace_dir}: no point with a GPU count and {counted} tokens (rackbook import "
            "vllm-bench FILE -o DIR --gpu ID --gpus N declares the GPUs a benchmark ran on)",
        )
    top = acc.loc[acc[column].astype(float).idxmax()]
    key = model.lower().replace(" ", "-").replace("_", "-").removeprefix("deepseek-")
    rate = float(top[column])
    kw: dict[str, Any] = dict(testable=verdicts.can_test(t.run, (gpu.upper(),), key), run=t.run)
    kw["what"] = f"{counted} {rate:,.1f} tok/s per GPU at point {top['point_id']}"
    kw["needs"] = f"a recording of {model} on {gpu}"
    r = verdicts.run_reading("workload", rate, claimed, REL_TOL, against="the figure's", **kw)
    return dict(verdict=r.verdict, reason=r.reason)


def assumed(args: argparse.Namespace, c: check.Check) -> list[str]:
    """Each default ``rackbook check`` took for what the flags left out, in words."""
    out = []  # --per is said in the first line
    if args.counted is None:
        out.append(f"{c.counted} tokens counted (--counted not given)")
    if args.phase is None:
        out.append(f"phase {c.phase} (--phase not given)")
    if args.cached_share is None and c.phase != "decode" and args.isl:
        out.append("no input cached (--cached-share not given; 'unknown' for the threshold)")
    if args.context is None and c.phase != "prefill" and args.isl:
        out.append(f"decode context ISL + OSL / 2 = {c.workload['decode_context']:,.0f} tokens")
    if args.tokens_per_step == 1 and c.phase != "prefill":
        out.append("no speculative decoding (--tokens-per-step 1)")
    if args.kv_dtype is None and c.workload.get("kv_dtype"):
        out.append(f"KV cache stored in {c.workload['kv_dtype']} (the narrowest; --kv-dtype)")
    if args.precision is None and c.workload.get("weights"):
        out.append(f"weights at {c.workload['weights']} (--precision)")
    return out


def _estimates(args: argparse.Namespace, c: check.Check, threshold: bool) -> dict[str, Any]:
    """The attainable and expected readings (JSON fields, ``*_text`` lines; the expected with
    the stored fit's held-out validation); none where the figure does not fit or a calibration
    has no data sheet."""
    from rackbook.physics import attainable, expected

    cal = None
    if args.calibration:
        from rackbook.core.calibration import read_calibration

        cal = read_calibration(args.calibration)
    att = dict.fromkeys(("tok_s_per_gpu", "ratio", "deployment", "calibration"))
    exp = dict.fromkeys(("tok_s_per_gpu", "low", "high", "ratio", "deployment")) | {"terms": {}}
    why = "none: the figure does not fit" if c.limit.startswith("memory capacity") else ""
    fit, kw = expected.load_fit(), dict[str, Any](calibration=cal, deployment=args.deployment)
    try:
        if not why:
            a = attainable.for_check(c, **kw)
            e = expected.for_check(c, fit=fit, tpot_ms=args.tpot_ms, ttft_s=args.ttft_s, **kw)
    except InputError as exc:
        if cal is None or exc.field != "run.json.spec":
            raise
        why, att["calibration"] = f"none: {exc.problem}", cal.label
    if why:
        return dict(attainable=att, attainable_text=why, expected=exp, expected_text=why)
    out: dict[str, Any] = dict(attainable=a.to_dict(), attainable_text=a.text)
    out |= dict(expected=e.to_dict() | {"validation": fit.validation})
    out["expected_text"] = e.text(fit.validation_text)
    if threshold:
        kw |= _check_kwargs(args)
        t = attainable.cached_share_threshold(args.model, args.gpu, args.gpus, args.tok_s, **kw)
        out["attainable"]["cached_share_threshold"] = t
        reach = f"from {percent(t)} of the input cached" if t else "uncached"
        reach = "do not reach it at any cached share" if t is None else f"reach it {reach}"
        out["attainable_text"] += f" at the bound's threshold share; measured kernels {reach}"
    return out


def per_of(args: argparse.Namespace) -> str:
    """``--per``, else ``total`` over several GPUs ("our 8 x H200 does 12,000 tok/s"), ``gpu``."""
    return args.per or ("total" if args.gpus > 1 else "gpu")


def per_text(args: argparse.Namespace, gpus: int) -> str:
    if args.per == "gpu" or (args.per is None and gpus == 1):
        how = "(--per gpu)" if args.per else "(one GPU: per GPU and in total agree)"
        return f"per GPU {how}"
    if args.per == "total":
        return f"in total over {gpus} GPUs (--per total)"
    return (
        f'in total over {gpus} GPUs (assumed: --per not given; "{gpus} x GPU does X tok/s" '
        "reads as their total; --per gpu for a figure each GPU serves)"
    )


def _check_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    conc = args.concurrency if args.concurrency is not None else args.batch
    names = "phase context tokens_per_step kv_dtype counted isl osl precision".split()
    return {k: getattr(args, k) for k in names} | {"per": per_of(args), "batch": conc}


def readings(
    args: argparse.Namespace,
) -> tuple[check.Check, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The three readings of ``rackbook check``'s arguments."""
    if args.trace is not None:
        from rackbook.results import registry

        registry.check_trace(None, args.trace, "--trace")
    share_arg, kw = args.cached_share, _check_kwargs(args)
    unknown, t = share_arg == "unknown", None
    known = None if share_arg is None or unknown else float(share_arg)
    if unknown:
        t = check.cached_share_threshold(args.model, args.gpu, args.gpus, args.tok_s, **kw)
    share = (t.share if t else known) or 0.0
    c = check.check_claim(args.model, args.gpu, args.gpus, args.tok_s, cached_share=share, **kw)
    verdict, reason = (t.verdict, t.formula) if t else (c.verdict, c.reason)
    extra = _estimates(args, c, t is not None and bool(share))
    extra["threshold"] = t and dict(
        cached_share=t.share, ratio_uncached=t.ratio_uncached, ratio_cached=t.ratio_cached
    )
    extra |= {"assumed": assumed(args, c), "per": per_of(args), "per_assumed": args.per is None}
    facts = "limit ratio ceiling_tok_s_per_gpu fractions claimed_tok_s_per_gpu workload".split()
    extra |= {k: getattr(c, k) for k in facts}  # a non-finite ratio prints as null
    ceiling = ("name", "phase", "tok_s_per_gpu", "formula")
    extra["readings"] = [{k: getattr(r, k) for k in ceiling} for r in c.ceilings]
    phys = dict(verdict=verdict, reason=reason) | extra | {"notes": c.notes}
    model, gpu = catalogs.as_model(args.model), catalogs.as_gpu(c.gpu).label
    sizes = (args.isl, args.osl, known, kw["batch"], args.engine, args.speculation)
    wb = workload_basis(model.name, gpu, args.gpus, c.counted, *sizes)
    pub = published_for_workload(wb, c.claimed_tok_s_per_gpu)
    run = this_run(args.trace, model.id, c.gpu, c.counted, c.claimed_tok_s_per_gpu)
    return c, phys, pub, run


def cli_check(args: argparse.Namespace) -> int:
    """``rackbook check``: what the figure is per, each ceiling, the three readings (``--json``)."""
    c, phys, pub, run = readings(args)
    per = per_text(args, c.gpus)
    w = c.workload
    share = f"cached share {percent(w['cached_share'])}"
    share += " (assumed)" if args.cached_share is None else ""
    if args.cached_share == "unknown":
        share = f"cached share unknown (readings at {percent(w['cached_share'])})"
    print(f"{args.tok_s:,.6g} {c.counted} tok/s {per}: {c.claimed_tok_s_per_gpu:,.1f} per GPU")
    print(
        f"{c.model_name} on {c.gpus} x {c.gpu_label}, phase {c.phase}: output "
        f"{w['output_tok_s_per_gpu']:,.1f}"
        f" and new input {w['new_input_tok_s_per_gpu']:,.1f} tok/s per GPU; decode context "
        f"{w['decode_context']:,.0f}, prefill prefix {w['prefill_prefix']:,.0f} tokens, {share}, "
        "concurrency " + ("not given" if w["concurrency"] is None else f"{w['concurrency']:,.0f}")
    )
    for a in phys["assumed"]:
        print(f"  assumed: {a}")
    for r in c.ceilings:
        shown = f"{r.tok_s_per_gpu:,.0f} tok/s/GPU"
        if r.name == "memory capacity":
            shown = "fits" if r.tok_s_per_gpu else "does not fit"
        label = f"{r.phase} {r.name}" if r.phase else r.name
        print(f"  {label}: {shown}  [{r.formula}]")
    for n in c.notes:
        print(f"  note: {n}")
    print(f"physics: {phys['verdict']} ({phys['reason']}; limit: {c.limit})")
    print(f"  expected: {phys['expected_text']}")
    print(f"  attainable: {phys['attainable_text']}")
    print(f"basis: {pub.get('basis')}")
    print(f"published: {pub['verdict']} ({pub['reason']})")
    for p in pub.get("closest", []):
        print(f"  {point_text(p)}")
    print(f"this run: {run['verdict']} ({run['reason']})")
    if args.json:
        out = {"physics": phys, "published": pub, "this_run": run}
        print(orjson.dumps(out, option=NUMPY).decode())  # NaN, infinity: null
    return 0
