"""A reader's own trace is often partial: one engine, one configuration, a single point. Every
chapter's analysis, values, headlines and figures build from any such subset cut from the
shipped traces, and each reading it cannot make is untested with the missing piece named."""

from __future__ import annotations

import dataclasses
import importlib

import matplotlib.pyplot
import pytest

from rackbook import paths
from rackbook.core import traces
from rackbook.results import REGISTRY

matplotlib.use("Agg")

RECORDED = ("decode-parity", "rack-scaling", "prefill-gain", "context-latency", "single-user")


def subset(t: traces.Trace, pids: list[str]) -> traces.Trace:
    """The trace restricted to points ``pids`` (requests, gaps renumbered, server counters)."""
    sub = traces.keep_rows(
        t, t.requests["point_id"].isin(pids).to_numpy(), t.points["point_id"].isin(pids)
    )
    extra = {k: v[v["point_id"].isin(pids)] if "point_id" in v.columns else v
             for k, v in t.extra.items()}  # fmt: skip
    return dataclasses.replace(sub, extra=extra)


def _cases() -> list[tuple[str, str, list[str]]]:
    out = []
    for r in RECORDED:
        t = traces.read_trace(paths.TRACES / r, itl=False)
        pts = [str(p) for p in t.points["point_id"]]
        out += [(r, "first point", pts[:1]), (r, "last point", pts[-1:])]
        for col in ("engine", "config"):
            vals = t.points[col].dropna().unique() if col in t.points.columns else []
            if len(vals) > 1:
                for v in vals:
                    sel = t.points.loc[t.points[col] == v, "point_id"].astype(str).tolist()
                    out.append((r, f"{col} {v}", sel))
    return out


@pytest.mark.parametrize(
    "result,case,pids", _cases(), ids=lambda x: str(x) if isinstance(x, str) else ""
)
def test_a_chapter_builds_from_a_subset(result, case, pids):
    module = REGISTRY[result]
    figures = importlib.import_module(f"rackbook.book.figures.{result.replace('-', '_')}")
    t = subset(traces.read_trace(paths.TRACES / result), pids)
    an = module.analyse(t)
    out = module.outcome(an)
    an.values()
    out.to_dict("trace")
    for make in figures.FIGURES.values():
        matplotlib.pyplot.close(make(an))
    # the shipped traces are CPU stand-ins: every this-run reading stays untested, with a reason
    for r in out.readings:
        if r.reading == "this run":
            assert r.verdict == "untested" and r.reason


def test_a_single_context_is_shown_not_fitted():
    from rackbook.results import context_latency

    t = traces.read_trace(paths.TRACES / "context-latency")
    one = subset(t, [str(t.points["point_id"].iloc[0])])
    an = context_latency.analyse(one)
    assert an.fit.n == 1 and an.measured.pair == "single context"
    reason = context_latency.outcome(an).reading("context-latency.delta", "this run").reason
    assert "one context length" in reason and "record at least two" in reason


def test_rack_scaling_without_its_reference_names_it():
    from rackbook.results import rack_scaling

    t = traces.read_trace(paths.TRACES / "rack-scaling")
    two = subset(t, t.points.loc[t.points["config"] == "2x", "point_id"].astype(str).tolist())
    out = rack_scaling.outcome(rack_scaling.analyse(two))
    reason = out.reading("rack-scaling.speedup", "this run").reason
    assert "one configuration only: no speedup" in reason


def _one_case_per_result() -> list[tuple[str, str, list[str]]]:
    """The smallest subset of each recorded trace: decode-parity's one engine, else its first
    point."""
    seen: dict[str, tuple[str, str, list[str]]] = {}
    for r, case, pids in _cases():
        if r == "decode-parity" and case.startswith("engine"):
            seen[r] = (r, case, pids)
        seen.setdefault(r, (r, case, pids))
    return list(seen.values())


@pytest.mark.slow
@pytest.mark.parametrize(
    "result,case,pids", _one_case_per_result(), ids=lambda x: str(x) if isinstance(x, str) else ""
)
def test_the_notebook_executes_on_a_subset(tmp_path, result, case, pids):
    """The chapter itself (papermill, as `rackbook run RESULT -p trace DIR`) runs on a subset
    and writes its headline, each this-run reading untested with a reason."""
    import json

    from rackbook.book import runner

    sub = tmp_path / "trace"
    traces.write_trace(sub, subset(traces.read_trace(paths.TRACES / result), pids))
    headline, _ = runner.execute_result(
        result,
        parameters={"trace": str(sub)},
        out=tmp_path / "_build" / "executed",
        progress=False,
    )
    doc = json.loads(headline.read_text())
    runs = [r for r in doc["readings"] if r["reading"] == "this run"]
    assert runs and all(r["verdict"] == "untested" and r["reason"] for r in runs)


def test_decode_parity_with_engine_a_only_names_engine_b():
    """A re-runner's vLLM sweep without the offline engine: engine A's points are shown, the
    reading is untested and says how to supply engine B."""
    from rackbook.results import decode_parity

    t = traces.read_trace(paths.TRACES / "decode-parity")
    a = subset(t, t.points.loc[t.points["engine"] == "vllm-serve", "point_id"].astype(str).tolist())
    an = decode_parity.analyse(a)
    assert set(an.table["engine"]) == {"vllm-serve"} and len(an.table) == 6
    run = decode_parity.outcome(an).reading("decode-parity.gap", "this run")
    assert run.verdict == "untested"
    assert run.reason.startswith("no engine-B points (vllm-offline): record an offline engine")
    assert "`rackbook import offline-engine`" in run.reason
