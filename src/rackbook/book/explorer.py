"""Interactive explorers (rack-scaling, single-user): per setting the physics verdict,
ceiling and expected range, precomputed as Plotly traces, with a PNG for print. Units:
tokens/s per GPU of the counted tokens."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import Any

from rackbook.inputs.claims import load_claims
from rackbook.physics import check, expected

#: The rack claim (data/claims.yaml) and the single-user claim.
RACK_CLAIM_ID = "rack-scaling.throughput"
SINGLE_CLAIM_ID = "single-user.throughput"
MODEL = "deepseek-v4.1-flash"
RACK_GPU, RACK_GPUS = "gb300", 72
SINGLE_GPU = "b300"
#: Settings of the rack explorer: tokens counted, what the figure is per, cached share (x).
RACK_COUNTED: tuple[str, ...] = ("output", "total")
RACK_PER: tuple[str, ...] = ("gpu", "total")
RACK_SHARES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 0.98)
#: Settings of the single-user explorer: GPUs, context (tokens), tokens per step (x).
SINGLE_GPUS: tuple[int, ...] = (1, 2, 4, 8)
SINGLE_CONTEXTS: tuple[int, ...] = (0, 131072, 1048576)
SINGLE_STEPS: tuple[float, ...] = (1.0, 1.5, 2.0, 2.5, 3.0, 3.51, 4.0, 5.0)
#: The single-user setting shown first: the claim's four GPUs, no context.
SINGLE_FIRST: dict[str, Any] = {"gpus": 4, "context": 0}
#: Plotly's verdict colours (colour-blind safe pair, as the book's matplotlib palette).
COLOURS = {"possible": "#0072B2", "impossible": "#D55E00"}


@dataclass(frozen=True)
class Cell:
    """One explorer setting's readings (tok/s per GPU of the counted tokens); ``None`` where
    the figure does not fit in memory."""

    setting: dict[str, Any]
    x: float
    claimed: float
    ceiling: float
    verdict: str
    expected: float | None
    low: float | None
    high: float | None


def _cell(c: check.Check, setting: dict[str, Any], x: float, fit: Any) -> Cell:
    """The cell of a :class:`rackbook.physics.check.Check` with its expected range."""
    exp = low = high = None
    if not c.limit.startswith("memory capacity"):
        e = expected.for_check(c, fit=fit)
        exp, low, high = e.tok_s_per_gpu, e.low, e.high
    ceil = c.ceiling_tok_s_per_gpu
    ceiling = ceil if math.isfinite(ceil) and ceil > 0 else math.nan  # 0: does not fit
    return Cell(setting, x, c.claimed_tok_s_per_gpu, ceiling, c.verdict, exp, low, high)


def rack_grid() -> list[Cell]:
    """The rack explorer's grid: the rack claim on 72 GB300 per tokens counted, per and
    cached share of the input (``x``)."""
    from rackbook.results.rack_scaling import ASSUMED_ISL, ASSUMED_OSL

    tok_s = load_claims().value(RACK_CLAIM_ID)
    fit = expected.load_fit()
    cells = []
    for counted in RACK_COUNTED:
        for per in RACK_PER:
            for share in RACK_SHARES:
                c = check.check_claim(
                    MODEL, RACK_GPU, RACK_GPUS, tok_s, per=per, counted=counted,
                    isl=ASSUMED_ISL, osl=ASSUMED_OSL, cached_share=share,
                )  # fmt: skip
                cells.append(_cell(c, {"counted": counted, "per": per}, share, fit))
    return cells


def single_grid() -> list[Cell]:
    """The single-user explorer's grid: one stream per GPU count, context and tokens per
    step (``x``)."""
    tok_s = load_claims().value(SINGLE_CLAIM_ID)
    fit = expected.load_fit()
    cells = []
    for gpus in SINGLE_GPUS:
        for ctx in SINGLE_CONTEXTS:
            for tps in SINGLE_STEPS:
                c = check.check_claim(
                    MODEL, SINGLE_GPU, gpus, tok_s, per="total", batch=1, context=ctx,
                    tokens_per_step=tps,
                )  # fmt: skip
                cells.append(_cell(c, {"gpus": gpus, "context": ctx}, tps, fit))
    return cells


def _label(setting: dict[str, Any]) -> str:
    if "counted" in setting:
        tokens = "output tokens" if setting["counted"] == "output" else "all tokens incl. cached"
        per = "per GPU" if setting["per"] == "gpu" else f"rack total / {RACK_GPUS}"
        return f"{tokens}, {per}"
    n, ctx = setting["gpus"], setting["context"]
    gpus = f"{n} GPU" if n == 1 else f"{n} GPUs"
    return f"{gpus}, context {ctx:,} tokens" if ctx else f"{gpus}, no context"


def _groups(cells: list[Cell]) -> dict[str, list[Cell]]:
    out: dict[str, list[Cell]] = {}
    for c in cells:
        out.setdefault(_label(c.setting), []).append(c)
    return out


def _num(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def figure(cells: list[Cell], x_title: str, title: str, first: int = 0) -> Any:
    """A Plotly figure of ``cells``: per setting (dropdown), the claimed rate (points coloured
    by verdict), the ceiling (line) and the expected range (band) against ``x``; log y."""
    import plotly.graph_objects as go

    groups = _groups(cells)
    fig = go.Figure()
    per_group = 4
    for i, (_, cs) in enumerate(groups.items()):
        xs = [c.x for c in cs]
        vis = i == first
        fig.add_trace(go.Scatter(x=xs, y=[_num(c.high) for c in cs], mode="lines",
                                 line={"width": 0}, showlegend=False, hoverinfo="skip",
                                 visible=vis))  # fmt: skip
        fig.add_trace(go.Scatter(x=xs, y=[_num(c.low) for c in cs], mode="lines",
                                 line={"width": 0}, fill="tonexty",
                                 fillcolor="rgba(0,158,115,0.25)", name="expected range",
                                 visible=vis))  # fmt: skip
        fig.add_trace(go.Scatter(x=xs, y=[_num(c.ceiling) for c in cs], mode="lines",
                                 line={"color": "#333333", "dash": "dash"},
                                 name="physics ceiling", visible=vis))  # fmt: skip
        fig.add_trace(go.Scatter(
            x=xs, y=[c.claimed for c in cs], mode="lines+markers", name="the claim",
            line={"color": "#777777"}, visible=vis,
            marker={"size": 11, "color": [COLOURS.get(c.verdict, "#777777") for c in cs]},
            text=[c.verdict for c in cs],
            hovertemplate="%{x}: claim %{y:,.0f} tok/s per GPU, %{text}<extra></extra>",
        ))  # fmt: skip
    buttons = []
    for i, label in enumerate(groups):
        shown = [j // per_group == i for j in range(per_group * len(groups))]
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
    """The print stand-in: the first setting's panel drawn by matplotlib (PNG bytes)."""
    import matplotlib.pyplot as plt

    label, cs = list(_groups(cells).items())[first]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    xs = [c.x for c in cs]
    lo = [_num(c.low) or math.nan for c in cs]
    hi = [_num(c.high) or math.nan for c in cs]
    ax.fill_between(xs, lo, hi, color="#009E73", alpha=0.25, label="expected range")
    ax.plot(xs, [c.ceiling for c in cs], "k--", label="physics ceiling")
    ax.plot(xs, [c.claimed for c in cs], color="0.5")
    ax.scatter(xs, [c.claimed for c in cs], c=[COLOURS.get(c.verdict, "0.5") for c in cs],
               zorder=3, label="the claim (blue possible, orange impossible)")  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel(x_title)
    ax.set_ylabel("tokens/s per GPU (log)")
    ax.set_title(f"{title}\n({label}; the web page lets you switch)", fontsize=9)
    ax.legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def bundle(
    cells: list[Cell], x_title: str, title: str, first: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A display bundle: ``text/html`` (Plotly, script from ``_static``) and ``image/png``;
    ``first``: the setting shown first."""
    i = list(_groups(cells)).index(_label(first)) if first else 0
    html = figure(cells, x_title, title, i).to_html(
        full_html=False, include_plotlyjs=False, config={"displaylogo": False}
    )
    png = base64.b64encode(_png(cells, x_title, title, i)).decode("ascii")
    return {"text/html": html, "image/png": png}


def rack_bundle() -> dict[str, Any]:
    """The rack-scaling explorer's display bundle (:func:`rack_grid`)."""
    return bundle(rack_grid(), "cached share of the input tokens (fraction)",
                  "The rack figure per GPU of the counted tokens, by reading")  # fmt: skip


def single_bundle() -> dict[str, Any]:
    """The single-user explorer's display bundle (:func:`single_grid`)."""
    return bundle(single_grid(), "tokens per step (acceptance length; 1 without speculation)",
                  "The single-user figure per GPU, by GPUs and context", SINGLE_FIRST)  # fmt: skip
