"""The published points as rows (:data:`POINT_COLUMNS`): the published traces' rows, figures
converted or derived from them (MLPerf ratios, vLLM's prefill-TTFT table, token value at list
prices) and ``figures.yaml``'s, each in the unit of the claim it bears on, with its basis.
Units: the claim's own; ``tok/s/GPU`` per GPU; ``tok/s per user`` = 1000 / TPOT in ms."""

from __future__ import annotations

import dataclasses
import email
import functools
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.core import jsliteral, traces
from rackbook.core.units import plural, ratio_text
from rackbook.inputs import claims as claims_registry
from rackbook.inputs import loader

T = TypeVar("T")
#: Shipped published traces (folders under data/published/): MLPerf Inference v6.1 DeepSeek-R1
#: token-rate rows, SGLang cookbook DeepSeek-V4 cells.
SHIPPED = ("mlperf-v6.1-dsr1", "sglang-cookbook-v4")


PER_GPU, PER_USER = "tok/s/GPU", "tok/s per user"


def per_gpu_unit(tokens: str) -> str:
    """A per-GPU throughput's unit by the tokens counted: ``output``/``input`` or total."""
    prefix = {"output": "output ", "new input": "input ", "input incl. cached": "input "}
    return prefix.get(tokens, "") + PER_GPU


def unit_family(unit: str) -> str:
    """Units differing only in the tokens they name (``output tok/s/GPU``) are one family."""
    return PER_GPU if unit.endswith(PER_GPU) else unit


#: Columns of :func:`published_points`, in order.
POINT_COLUMNS: list[str] = (
    "id claim_id result kind role used value unit as_published verified submitter system "
    "hardware gpus model precision engine engine_version scenario isl osl concurrency "
    "speculative tok_s_per_gpu tok_s_per_user url date quote notes source comparable basis "
    "conversion price_kind superseded"
).split()


def number_text(v: float) -> str:
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}" if a >= 10_000 else f"{v:,.1f}".removesuffix(".0")
    return f"{v:.4g}"


def value_text(v: float, unit: str) -> str:
    """``v`` with its unit: ``8.95x``, ``$3.96/GPU-hour``, ``11,056 tok/s/GPU``, ``0.9919``."""
    if unit == "x":
        return ratio_text(v)
    if unit.startswith("$/"):
        return f"${v:,.2f}/{unit[2:]}"
    if unit == "1":
        return f"{v:.4g}"
    if unit == "%":
        return f"{v:.3g} %"
    return f"{number_text(v)} {unit}"


def span_text(lo: float, hi: float, unit: str) -> str:
    """``lo`` to ``hi`` in ``unit`` (:func:`value_text`; one value where they agree)."""
    one = value_text(lo, unit)
    return one if lo == hi else f"{one} to {value_text(hi, unit)}"


def claim_over(lo: float, hi: float, them: str = "them") -> str:
    """``the claim 0.883x to 0.917x them`` (one ratio where they agree)."""
    ratio = ratio_text(lo) if lo == hi else f"{ratio_text(lo)} to {ratio_text(hi)}"
    return f"the claim {ratio} {them}"


def point_value(c: Mapping[str, Any]) -> str:
    """A closest point's value or its tied spread: ``8.61x to 8.95x (4 points equally close)``."""
    tied, lo, hi, unit = c.get("tied") or (), c.get("low"), c.get("high"), str(c.get("unit") or "")
    if tied and lo is not None and hi is not None and lo != hi:
        return f"{span_text(lo, hi, unit)} ({len(tied) + 1} points equally close)"
    v = c.get("value")
    return value_text(v, unit) if isinstance(v, (int, float)) else ""


def point_ratio(c: Mapping[str, Any]) -> str:
    """``, the claim 0.883x to 0.917x them`` (``it`` for one point)."""
    lo, hi = c.get("ratio_low"), c.get("ratio_high")
    if not isinstance(c.get("ratio"), (int, float)):
        return ""
    if c.get("tied") and lo is not None and hi is not None and lo != hi:
        return ", " + claim_over(lo, hi)
    return ", " + claim_over(c["ratio"], c["ratio"], "it")


def or_none(v: object, cast: Callable[[Any], T]) -> T | None:
    """``cast(v)``, or None for None, NA and NaN."""
    return None if v is None or pd.isna(v) else cast(v)  # type: ignore[call-overload]


text_or_none = functools.partial(or_none, cast=str)
int_or_none = functools.partial(or_none, cast=int)
float_or_none = functools.partial(or_none, cast=float)


@functools.lru_cache(maxsize=4)
def trace_points(root: str) -> pd.DataFrame:
    frames = [
        traces.read_trace(Path(root) / n, itl=False).extra["published_points"].assign(source=n)
        for n in SHIPPED
    ]
    return pd.concat(frames, ignore_index=True)


@functools.lru_cache(maxsize=4)
def registries(root: str) -> tuple[claims_registry.Registry, claims_registry.FigureRegistry]:
    reg = claims_registry.load_claims(Path(root) / "claims.yaml")
    return reg, claims_registry.load_figures(Path(root) / "published" / "figures.yaml", reg)


_DEFAULTS = dict.fromkeys(POINT_COLUMNS) | dict(role="measurement", verified=True, kind="published")


def setup_text(r: pd.Series) -> str:
    """A point's setup as stated: ``concurrency 1, 4,096 in / 1,024 out, speculation X, date``."""
    conc, isl, osl = (int_or_none(r.get(k)) for k in ("concurrency", "isl", "osl"))
    parts = [f"concurrency {conc:,}" if conc is not None else ""]
    parts.append(f"{isl:,} in / {osl:,} out" if isl and osl else "")
    spec = text_or_none(r.get("speculative"))
    parts.append("" if spec in (None, "not stated") else f"speculation {spec}")
    parts.append(text_or_none(r.get("date")) or "")
    return ", ".join(p for p in parts if p)


#: Columns a point takes as its source states them.
_AS_STATED = (
    "submitter system hardware model precision engine engine_version speculative url date"
).split()


def _from_trace_row(r: pd.Series) -> dict[str, object]:
    conc = int_or_none(r["concurrency"])
    single = r["source"] == "sglang-cookbook-v4" and conc == 1
    b = trace_row_basis(r, per_user=single)
    value = float(r["tok_s_per_user"]) if single else float(r["tok_s_per_gpu"])
    unit = PER_USER if single else per_gpu_unit(b.tokens)
    if single:
        stat = text_or_none(r["latency_statistic"]) or "median"
        shown = f"{stat} TPOT {r[f'tpot_{stat}_s'] * 1000:.3g} ms"
    elif r["per_gpu_basis"].startswith("computed"):
        shown = f"{number_text(float(r['tok_s_total']))} tok/s on {int(r['gpus'])} GPUs"
    else:
        shown = value_text(value, unit)
    row = {k: r[k] for k in (*_AS_STATED, "scenario", "notes", "source")}
    row |= {k: int_or_none(r[k]) for k in ("gpus", "isl", "osl", "concurrency")}
    row |= dict(id=f"{r['source']}:{r['point_id']}", value=value, unit=unit, as_published=shown)
    row["claim_id"] = "single-user.throughput" if single else "rack-scaling.throughput"
    row |= dict(tok_s_per_gpu=float(r["tok_s_per_gpu"]), basis=b)
    return _DEFAULTS | row | {"tok_s_per_user": float_or_none(r["tok_s_per_user"])}


def trace_row_basis(r: pd.Series, per_user: bool = False) -> basis_mod.Basis:
    """A trace row's basis: per GPU, or with ``per_user`` one user's decode speed (1000 / TPOT)."""
    spec = str(r["speculation_kind"])
    b: dict[str, Any] = dict(metric="throughput", per="GPU", statistic="rate")
    b["tokens"] = str(r["tokens_counted"])
    if per_user:
        stat = text_or_none(r["latency_statistic"]) or "-"
        b = dict(metric="per-user decode speed", tokens="output", per="user", statistic=stat)
    b |= {k: str(r[k]) for k in ("workload", "model", "hardware", "engine")}
    b |= {k: int_or_none(r[k]) for k in ("isl", "osl", "concurrency")}
    b |= dict(gpus=str(r["gpus_counted"]), gpu_count=int_or_none(r["gpus"]), speculation=spec)
    b["serving"] = text_or_none(r["serving"]) or basis_mod.UNKNOWN  # the source does not say
    b["engine_version"] = text_or_none(r["engine_version"])
    b["spec_method"] = text_or_none(r["speculative"]) if spec in ("real", "simulated") else None
    return basis_mod.make(b)


def converted_rows(r: pd.Series) -> list[dict[str, object]]:
    """A trace row re-read as output tokens per GPU (id suffix ``#output``), if it can be."""
    if r["source"] == "sglang-cookbook-v4" and int_or_none(r["concurrency"]) == 1:
        return []
    out_gpu = float_or_none(r["output_tok_s_per_gpu"])
    if out_gpu is None:
        return []
    value, rule = out_gpu, "output per GPU as published (metrics.output_tput_per_gpu)"
    if r["source"] == "sglang-cookbook-v4":
        rule = "output = total x osl / (isl + osl) (the cookbook's derivation undone)"
    elif r["workload"] == "agentic trace":  # InferenceX AgentX divides by all the run's GPUs
        rule = "output per GPU as published (AgentX: over all the run's GPUs)"
    elif r["serving"] == "disaggregated":
        dec, gpus = int_or_none(r["decode_gpus"]), int_or_none(r["gpus"])
        if dec is None or gpus is None:
            return []
        value, rule = out_gpu * dec / gpus, "output per GPU of the deployment = output per "
        rule += f"decode GPU x {dec} decode / {gpus} GPUs"
    row = _from_trace_row(r)
    row |= dict(id=f"{row['id']}#output", value=value, unit=per_gpu_unit("output"), conversion=rule)
    row["as_published"] = f"{number_text(float(r['tok_s_per_gpu']))} total tok/s/GPU, converted"
    row["basis"] = dataclasses.replace(row["basis"], tokens="output")  # type: ignore[type-var]
    return [row]


#: MLPerf system sizes set against each other for the rack/node ratio (GPUs).
RACK_GPUS, NODE_GPUS = 72, 8


def mlperf_ratios(points: pd.DataFrame) -> list[dict[str, object]]:
    """``Result(72) / Result(8)`` of each MLPerf submitter, hardware, model and scenario."""
    ml = points[points["source"] == "mlperf-v6.1-dsr1"]
    out = []
    for (sub, hw, model, scen), g in ml.groupby(["submitter", "hardware", "model", "scenario"]):
        rack, node = (g[g["gpus"] == n] for n in (RACK_GPUS, NODE_GPUS))
        if len(rack) != 1 or len(node) != 1:
            continue
        r, n = rack.iloc[0], node.iloc[0]
        ratio = float(r["tok_s_total"]) / float(n["tok_s_total"])
        b = dataclasses.replace(trace_row_basis(r), metric="rack/node throughput ratio")
        b = dataclasses.replace(b, per="deployment", counting=f"{RACK_GPUS} GPUs over {NODE_GPUS}")
        shown = f"{number_text(float(r['tok_s_total']))} / {number_text(float(n['tok_s_total']))}"
        row = {k: r[k] for k in ("precision", "engine", "engine_version", "url", "date", "source")}
        row |= dict(submitter=sub, hardware=hw, gpus=RACK_GPUS, model=model, scenario=scen)
        row |= dict(value=ratio, unit="x", as_published=f"{shown} tok/s", basis=b, notes=_RATIO)
        row["id"] = f"mlperf-v6.1-dsr1:{sub}/{scen}/{RACK_GPUS}v{NODE_GPUS}"
        row |= dict(claim_id="rack-scaling.speedup", system=f"{r['system']} vs {n['system']}")
        out.append(_DEFAULTS | row)
    return out


_RATIO = (
    "ratio of two published rows computed here: 72 GPUs over 8 (two 4-GPU GB300 trays); linear "
    "would be 9x. MLPerf does not say whether the 72-GPU system serves as one deployment or as "
    "independent replicas (e.g. 9 of 8 GPUs): as replicas the ratio counts replicas"
)


def _from_figure(f: claims_registry.Figure) -> dict[str, object]:
    value, unit = f.value, f.unit
    if f.claim == "single-user.throughput" and f.unit == "ms":
        value, unit = 1000.0 / f.value, PER_USER
    elif unit.endswith(PER_GPU):  # the tokens counted are named by the basis
        unit = per_gpu_unit(f.figure_basis.tokens)
    same = [k for k in _AS_STATED if k != "system"] + "gpus isl osl concurrency quote".split()
    row = {k: getattr(f, k) for k in (*same, "notes", "role", "verified", "price_kind")}
    row["superseded"] = f.superseded
    row |= dict(id=f"figures:{f.id}", claim_id=f.claim, value=value, unit=unit)
    row |= dict(as_published=value_text(f.value, f.unit), basis=f.figure_basis)
    row |= dict(tok_s_per_gpu=value if unit_family(unit) == PER_GPU else None)
    return _DEFAULTS | row | dict(tok_s_per_user=f.tok_s_per_user, source="figures.yaml")


#: vLLM's DeepSeek-V4.1-Flash prefill-TTFT table (verbatim excerpt) and its source file.
PREFILL_TABLE = "data/published/sources/vllm-dsv41-prefill-ttft.js"
PREFILL_SOURCE = "data/published/sources/vllm-dsv41-prefill-ttft-SOURCE.txt"


_TTFT = Annotated[float, Field(gt=0, strict=True)]  # ms


class PrefillCell(BaseModel):
    """One cell of the prefill-TTFT table: TTFT in ms with replay off, eager, CUDA graphs."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    prompt: str = Field(alias="p")
    off_ms: _TTFT = Field(alias="off")
    eager_ms: _TTFT = Field(alias="eager")
    graph_ms: _TTFT = Field(alias="graph")
    cfg: str = ""
    gpus: int = 0

    @property
    def gain_pct(self) -> float:
        """Gain in % of replay with CUDA graphs over replay off: off / graph - 1."""
        return (self.off_ms / self.graph_ms - 1.0) * 100.0


class _Panel(BaseModel):
    cfg: str = Field(pattern=r"^[A-Z]+[1-9][0-9]*$")
    rows: list[PrefillCell] = Field(min_length=1)


class _PrefillTable(loader.Strict):
    DATA: list[_Panel] = Field(min_length=1)


def load_prefill_table(path: str | Path | None = None) -> list[PrefillCell]:
    """The cells of the prefill-TTFT table (default :data:`PREFILL_TABLE`); InputError if bad."""
    p = paths.resolve(path or PREFILL_TABLE)
    shown = loader.display_path(p)
    data = jsliteral.parse_js_export(p.read_text(encoding="utf-8"), "DATA", shown)
    table = loader.validate(_PrefillTable, {"DATA": data}, shown)
    n = {t.cfg: int(re.sub("[A-Z]", "", t.cfg)) for t in table.DATA}  # TP4: 4 GPUs
    return [c.model_copy(update=dict(cfg=t.cfg, gpus=n[t.cfg])) for t in table.DATA for c in t.rows]


def source_fields(path: str | Path) -> dict[str, str]:
    """The ``key: value`` fields of a SOURCE.txt (mail-header syntax: indented lines continue)."""
    msg = email.message_from_string(paths.resolve(path).read_text(encoding="utf-8"))
    return {k: " ".join(v.split()) for k, v in msg.items()}


def prefill_rows(data: str) -> list[dict[str, object]]:
    """The prefill-TTFT table as points of prefill-gain.gain (%), per configuration and prompt."""
    root = Path(data) / "published" / "sources"
    src = source_fields(root / Path(PREFILL_SOURCE).name)
    same = dict(model="DeepSeek-V4.1-Flash", hardware="GB200", engine="vLLM")
    basis: dict[str, Any] = dict(metric="relative prefill throughput gain", per="-", context=0)
    basis |= dict(tokens="new input", gpus="deployment", workload="fixed lengths", speculation="-")
    basis |= dict(statistic="median", serving="aggregated") | same
    common = _DEFAULTS | same | dict(unit="%", concurrency=1, claim_id="prefill-gain.gain")
    common |= dict(submitter="vLLM (Inferact and the vLLM team)", url=src.get("source"))
    common |= dict(date=src.get("date", "").split(" ")[0] or None, conversion=_PREFILL_RULE)
    common["source"] = Path(PREFILL_TABLE).name
    out = []
    for c in load_prefill_table(root / Path(PREFILL_TABLE).name):
        off, eager, graph = c.off_ms, c.eager_ms, c.graph_ms
        row: dict[str, object] = dict(id=f"vllm-dsv41-prefill-ttft:{c.cfg}/{c.prompt}")
        row |= dict(value=c.gain_pct, gpus=c.gpus, system=f"{c.cfg}, {c.prompt} prompt")
        row["as_published"] = f"TTFT {number_text(off)} ms off, {number_text(graph)} ms graphs"
        row["quote"] = f'{{ p: "{c.prompt}", off: {off:g}, eager: {eager:g}, graph: {graph:g} }}'
        row["notes"] = (
            f"{c.cfg}: single request, prefix caching off, median of 3 runs on GB200; replay on "
            f"with an eager decoder: {(off / eager - 1) * 100:+.1f} %"
        )
        out.append(common | row | {"basis": basis_mod.make(basis | {"gpu_count": c.gpus})})
    return out


_PREFILL_RULE = (
    "gain on the same new tokens = TTFT replay off (off) / TTFT replay + decoder CUDA graphs "
    "(graphs) - 1 (one request: its rate is its tokens over its TTFT)"
)


#: The figures the token-value basis reads (figures.yaml ids) and the claims it joins.
TOKEN_VALUE = {
    "hit": "deepseek-api.v41flash-cache-hit-offpeak",
    "miss": "deepseek-api.v41flash-cache-miss-offpeak",
    "output": "deepseek-api.v41flash-output-offpeak",
    "input_tokens": "vllm-agentx-post.median-input",
    "output_tokens": "vllm-agentx-post.median-output",
    "hit_shares": ("vllm-agentx-post.prefix-cache-hit", "vllm-agentx-post.theoretical-hit"),
}
THROUGHPUT_CLAIM, COST_CLAIM = "rack-scaling.throughput", "rack-scaling.cost"


def token_value_per_gpu_hour(
    tok_s_per_gpu: float,
    output_share: float,
    hit_share: float,
    usd_per_m: tuple[float, float, float],
) -> float:
    """US dollars per GPU-hour the tokens are worth: ``tok_s_per_gpu`` x 3600 / 1e6 M tokens,
    ``output_share`` output, ``hit_share`` of input cached; ``usd_per_m`` = (hit, miss, output)
    $ per million tokens."""
    hit, miss, out = usd_per_m
    per_m = output_share * out + (1 - output_share) * (hit_share * hit + (1 - hit_share) * miss)
    return tok_s_per_gpu * 3600 / 1e6 * per_m


def token_value_rows(data: str) -> list[dict[str, object]]:
    """The rack claim's throughput in $/GPU-hour at DeepSeek's off-peak API prices, per hit rate."""
    reg, figs = registries(data)
    g = {k: figs.get(v) for k, v in TOKEN_VALUE.items() if isinstance(v, str)}
    prices = (g["hit"].value, g["miss"].value, g["output"].value)
    n_in, n_out = g["input_tokens"].value, g["output_tokens"].value
    out_share = n_out / (n_in + n_out)
    tok_s = float(reg.get(THROUGHPUT_CLAIM).value or 0.0)
    basis: dict[str, Any] = dict(metric="token value per GPU-hour", per="GPU")
    basis["tokens"] = "input incl. cached+output"
    basis |= dict(gpus="deployment", gpu_count=None, workload="agentic trace", speculation="-")
    basis |= dict(statistic="value", serving="-", model="DeepSeek-V4.1-Flash", hardware="-")
    b = basis_mod.make(basis | {"engine": "-"})
    miss, out = g["miss"], []
    for hid in TOKEN_VALUE["hit_shares"]:
        h = figs.get(hid)
        row: dict[str, object] = dict(url=miss.url, date=miss.date, quote=miss.quote)
        row["model"] = "DeepSeek-V4.1-Flash"
        row |= dict(id=f"token-value:{THROUGHPUT_CLAIM}/hit{h.value:g}", claim_id=COST_CLAIM)
        row["value"] = token_value_per_gpu_hour(tok_s, out_share, h.value / 100, prices)
        row["as_published"] = (
            f"{number_text(tok_s)} tok/s/GPU at ${prices[0]:g} / ${prices[1]:g} / "
            f"${prices[2]:g} per M (hit / miss / output)"
        )
        row["verified"] = all(f.verified for f in (*g.values(), h))
        row["submitter"] = "DeepSeek API list prices x AgentX mix (computed here)"
        row["notes"] = (
            f"output share {n_out:g} / ({n_in:g} + {n_out:g}); cache hits {h.value:g} % of input "
            f"({h.url}); off-peak prices (peak: twice)"
        )
        row |= dict(unit="$/GPU-hour", source="figures.yaml", basis=b, price_kind="list price")
        out.append(_DEFAULTS | row | {"conversion": _TOKEN_VALUE_RULE})
    return out


_TOKEN_VALUE_RULE = (
    "value = tok/s/GPU x 3600 / 1e6 x (output share x output price + input share x (hit share x "
    "hit price + miss share x miss price))"
)


def load_rows(data: str) -> pd.DataFrame:
    """Every published point under ``data`` (``comparable`` and ``used`` left to the reading)."""
    reg, figs = registries(data)
    raw = trace_points(str(Path(data) / "published"))
    rows = [x for _, r in raw.iterrows() for x in (_from_trace_row(r), *converted_rows(r))]
    rows += [*mlperf_ratios(raw), *prefill_rows(data), *token_value_rows(data)]
    rows += [_from_figure(f) for f in figs.figures]
    df = pd.DataFrame(rows, columns=POINT_COLUMNS).astype({"value": float, "verified": bool})
    df["result"] = [reg.get(c).result for c in df["claim_id"]]
    for c in ("gpus", "isl", "osl", "concurrency"):
        df[c] = pd.array([int_or_none(v) for v in df[c]], dtype="Int64")
    return df


#: What a published margin resting on cost models' prices ends with (evidence writes it).
MODELLED_NOTE = " (modelled prices, not measurements)"


NEAR_LEAD = "near evidence, which does not decide (the same quantity on a sibling model or GPU): "


def as_basis(name: str) -> str:
    return name if name.startswith("as ") else f"as {name}"


def side(lo: object, hi: object) -> str:
    """``inside`` (points on both sides, or at it), ``above``, ``below`` or ``-`` (no ratios)."""
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return "-"
    return "above" if lo > 1 else "below" if hi < 1 else "inside"


def near_text(near: Mapping[str, Any] | None, lead: str = NEAR_LEAD) -> str:
    """Near points (a :class:`Near`'s dict, or :func:`near_summary`) as one clause: how many,
    flags, spread, the claim over them, their differences, the basis among several."""
    if not near or not near.get("points"):
        return ""
    pts = near["points"]
    unv, old = (len(near.get(k) or []) for k in ("unverified", "superseded"))
    flag = f", {unv} of them NOT VERIFIED" if unv else ""
    flag += f", {old} superseded by a later source" if old else ""
    span = span_text(float(near["low"]), float(near["high"]), str(near["unit"]))
    out = f"{lead}{plural(len(pts), 'near point')}{flag}, {span}"
    lo, hi = near.get("ratio_low"), near.get("ratio_high")
    if isinstance(lo, float) and isinstance(hi, float):
        out += "; " + claim_over(lo, hi, "it" if len(pts) == 1 or lo == hi else "them")
    out += f" (differing in: {', '.join(near['differences'])})" if near.get("differences") else ""
    nb = len(near.get("bases") or [])
    if nb > 1:
        out += f" {as_basis(str(near['basis']))} (one of {nb} bases with near points)"
    return out
