"""Interactive explorers (rack-scaling, single-user): per setting the physics verdict, ceiling
and expected range as Plotly traces, with a PNG for print. Units: tok/s per GPU counted."""

from __future__ import annotations

import base64
import io
import itertools
import math
from dataclasses import dataclass
from typing import Any

from rackbook.core.units import plural
from rackbook.inputs.claims import load_claims
from rackbook.physics import check, expected

#: The model both explorers check, the rack's GPUs and the rack explorer's cached shares (x).
MODEL, RACK_GPUS = "deepseek-v4.1-flash", 72
RACK_SHARES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 0.98)
#: Plotly's verdict colours (colour-blind safe pair, as the book's matplotlib palette).
COLOURS = {"possible": "#0072B2", "impossible": "#D55E00"}


@dataclass(frozen=True)
class Cell:
    """One explorer setting's readings (tok/s per GPU); ``None`` where it does not fit."""

    setting: dict[str, Any]
    x: float
    claimed: float
    ceiling: float
    verdict: str
    expected: float | None
    low: float | None
    high: float | None


def _cell(c: check.Check, setting: dict[str, Any], x: float, fit: Any) -> Cell:
    exp = low = high = None
    if not c.limit.startswith("memory capacity"):
        e = expected.for_check(c, fit=fit)
        exp, low, high = e.tok_s_per_gpu, e.low, e.high
    ceil = c.ceiling_tok_s_per_gpu
    ceiling = ceil if math.isfinite(ceil) and ceil > 0 else math.nan  # 0: does not fit
    return Cell(setting, x, c.claimed_tok_s_per_gpu, ceiling, c.verdict, exp, low, high)


def _grid(
    claim_id: str, gpu: str, settings: dict[str, tuple], x_name: str, xs: tuple, **fixed: Any
) -> list[Cell]:
    tok_s = load_claims().value(claim_id)
    fit = expected.load_fit()
    cells = []
    for values in itertools.product(*settings.values()):
        setting = dict(zip(settings, values, strict=True))
        kw = {**fixed, **setting}
        gpus = kw.pop("gpus")
        for x in xs:
            c = check.check_claim(MODEL, gpu, gpus, tok_s, **kw, **{x_name: x})
            cells.append(_cell(c, setting, x, fit))
    return cells


def rack_grid() -> list[Cell]:
    """The rack claim on 72 GB300 per tokens counted, what it is per and cached share (``x``)."""
    from rackbook.results.rack_scaling import ASSUMED_ISL, ASSUMED_OSL

    settings = {"counted": ("output", "total"), "per": ("gpu", "total")}
    fixed = {"gpus": RACK_GPUS, "isl": ASSUMED_ISL, "osl": ASSUMED_OSL}
    return _grid("rack-scaling.throughput", "gb300", settings, "cached_share", RACK_SHARES, **fixed)


def single_grid() -> list[Cell]:
    """One stream on B300 per GPU count, context (tokens) and tokens per step (``x``)."""
    settings = {"gpus": (1, 2, 4, 8), "context": (0, 131072, 1048576)}
    xs, fixed = (1.0, 1.5, 2.0, 2.5, 3.0, 3.51, 4.0, 5.0), {"per": "total", "batch": 1}
    return _grid("single-user.throughput", "b300", settings, "tokens_per_step", xs, **fixed)


def _label(setting: dict[str, Any]) -> str:
    if "counted" in setting:
        tokens = "output tokens" if setting["counted"] == "output" else "all tokens incl. cached"
        per = "per GPU" if setting["per"] == "gpu" else f"rack total / {RACK_GPUS}"
        return f"{tokens}, {per}"
    gpus, ctx = plural(setting["gpus"], "GPU"), setting["context"]
    return f"{gpus}, context {ctx:,} tokens" if ctx else f"{gpus}, no context"


def _groups(cells: list[Cell]) -> dict[str, list[Cell]]:
    return {k: list(g) for k, g in itertools.groupby(cells, key=lambda c: _label(c.setting))}


def _num(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


#: Plotly styles: the expected range's edges (filled between), the ceiling and the claim.
_EDGE = {"mode": "lines", "line": {"width": 0}}
_LOW = {**_EDGE, "fill": "tonexty", "fillcolor": "rgba(0,158,115,0.25)", "name": "expected range"}
_CEILING = {
    "mode": "lines",
    "line": {"color": "#333333", "dash": "dash"},
    "name": "physics ceiling",
}
_CLAIM = {
    "mode": "lines+markers",
    "name": "the claim",
    "line": {"color": "#777777"},
    "hovertemplate": "%{x}: claim %{y:,.0f} tok/s per GPU, %{text}<extra></extra>",
}


def figure(cells: list[Cell], x_title: str, title: str, first: int = 0) -> Any:
    """A Plotly figure: per setting (dropdown) the claim, ceiling and expected range."""
    import plotly.graph_objects as go

    groups = _groups(cells)
    fig, buttons = go.Figure(), []
    for i, (label, cs) in enumerate(groups.items()):
        marker = {"size": 11, "color": [COLOURS.get(c.verdict, "#777777") for c in cs]}
        claim = {**_CLAIM, "marker": marker, "text": [c.verdict for c in cs]}
        for trace in (
            {"y": [_num(c.high) for c in cs], **_EDGE, "showlegend": False, "hoverinfo": "skip"},
            {"y": [_num(c.low) for c in cs], **_LOW},
            {"y": [_num(c.ceiling) for c in cs], **_CEILING},
            {"y": [c.claimed for c in cs], **claim},
        ):
            fig.add_trace(go.Scatter(x=[c.x for c in cs], visible=i == first, **trace))
        shown = [j // 4 == i for j in range(4 * len(groups))]  # four traces per setting
        buttons.append({"label": label, "method": "update", "args": [{"visible": shown}]})
    menu = {"x": 0, "xanchor": "left", "y": 1.16, "yanchor": "top", "direction": "down"}
    fig.update_layout(
        title={"text": title, "font": {"size": 15}},
        updatemenus=[{"buttons": buttons, **menu, "active": first}],
        xaxis_title=x_title,
        yaxis={"title": "tokens/s per GPU (log)", "type": "log"},
        height=400,
        margin={"t": 110, "l": 70, "r": 20, "b": 60},
        legend={"orientation": "h", "y": -0.2},
        template="simple_white",
    )
    return fig


def _png(cells: list[Cell], x_title: str, title: str, first: int = 0) -> bytes:
    import matplotlib.pyplot as plt

    from rackbook.book import plotting

    label, cs = list(_groups(cells).items())[first]
    heading = f"{title}\n({label}; the web page lets you switch)"
    y = "tokens/s per GPU (log)"
    fig, ax = plotting.axes(x_title, y, heading, figsize=(6.4, 3.6), layout="constrained", log="y")
    ax.title.set_fontsize(9)
    xs = [c.x for c in cs]
    lo = [_num(c.low) or math.nan for c in cs]
    hi = [_num(c.high) or math.nan for c in cs]
    ax.fill_between(xs, lo, hi, color="#009E73", alpha=0.25, label="expected range")
    ax.plot(xs, [c.ceiling for c in cs], "k--", label="physics ceiling")
    ax.plot(xs, [c.claimed for c in cs], color="0.5")
    colours = [COLOURS.get(c.verdict, "0.5") for c in cs]
    claim = "the claim (blue possible, orange impossible)"
    ax.scatter(xs, [c.claimed for c in cs], c=colours, zorder=3, label=claim)
    ax.legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def bundle(
    cells: list[Cell], x_title: str, title: str, first: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A display bundle: ``text/html`` (Plotly, script from ``_static``) and ``image/png``."""
    i = list(_groups(cells)).index(_label(first)) if first else 0
    html = figure(cells, x_title, title, i).to_html(
        full_html=False, include_plotlyjs=False, config={"displaylogo": False}
    )
    png = base64.b64encode(_png(cells, x_title, title, i)).decode("ascii")
    return {"text/html": html, "image/png": png}


def rack_bundle() -> dict[str, Any]:
    title = "The rack figure per GPU of the counted tokens, by reading"
    return bundle(rack_grid(), "cached share of the input tokens (fraction)", title)


def single_bundle() -> dict[str, Any]:
    x_title = "tokens per step (acceptance length; 1 without speculation)"
    title = "The single-user figure per GPU, by GPUs and context"
    return bundle(single_grid(), x_title, title, {"gpus": 4, "context": 0})  # the claim's 4 GPUs
