"""The chapters' explorers (rackbook.book.explorer): their grids read as ``rackbook check``
reads the same inputs, and their HTML loads no script from the network."""

from __future__ import annotations

import base64
import json
import re
from types import SimpleNamespace

import pytest

from rackbook.book import explorer, sphinx_figures
from rackbook.results.rack_scaling import ASSUMED_ISL, ASSUMED_OSL


@pytest.fixture(scope="module")
def rack() -> list[explorer.Cell]:
    return explorer.rack_grid()


@pytest.fixture(scope="module")
def single() -> list[explorer.Cell]:
    return explorer.single_grid()


def _find(cells: list[explorer.Cell], x: float, **setting: object) -> explorer.Cell:
    (cell,) = [c for c in cells if c.x == x and c.setting == setting]
    return cell


def _check(run_cli, *argv: str) -> dict:
    code, out, _ = run_cli("check", "--model", explorer.MODEL, *argv, "--json")
    assert code == 0
    return json.loads(out.splitlines()[-1])["physics"]


def _same(cell: explorer.Cell, phys: dict) -> None:
    assert cell.verdict == phys["verdict"]
    assert cell.claimed == pytest.approx(phys["claimed_tok_s_per_gpu"], rel=1e-9)
    if phys["ceiling_tok_s_per_gpu"]:
        assert cell.ceiling == pytest.approx(phys["ceiling_tok_s_per_gpu"], rel=1e-9)
    exp = phys["expected"]
    if exp["low"] is None:
        assert cell.low is None and cell.high is None
    else:
        assert (cell.low, cell.high) == pytest.approx((exp["low"], exp["high"]), rel=1e-9)


@pytest.mark.parametrize(
    ("counted", "per", "share", "verdict"),
    [
        ("output", "gpu", 0.0, "impossible"),  # 954,000 decode tok/s per GPU
        ("output", "total", 0.0, "impossible"),  # the rack's total / 72, nothing cached
        ("output", "total", 0.85, "possible"),
        ("total", "gpu", 0.0, "impossible"),
        ("total", "gpu", 0.95, "possible"),
    ],
)
def test_rack_grid_reads_as_rackbook_check(rack, run_cli, counted, per, share, verdict):
    cell = _find(rack, share, counted=counted, per=per)
    assert cell.verdict == verdict
    phys = _check(
        run_cli, "--gpu", "gb300", "--gpus", "72", "--tok-s", "954000", "--per", per,
        "--counted", counted, "--isl", str(ASSUMED_ISL), "--osl", str(ASSUMED_OSL),
        "--cached-share", str(share),
    )  # fmt: skip
    _same(cell, phys)


@pytest.mark.parametrize(
    ("gpus", "context", "steps", "verdict"),
    [(1, 0, 1.0, "impossible"), (4, 131072, 3.51, "possible"), (8, 1048576, 1.0, "possible")],
)
def test_single_grid_reads_as_rackbook_check(single, run_cli, gpus, context, steps, verdict):
    cell = _find(single, steps, gpus=gpus, context=context)
    assert cell.verdict == verdict
    assert cell.claimed == pytest.approx(826 / gpus)
    phys = _check(
        run_cli, "--gpu", "b300", "--gpus", str(gpus), "--tok-s", "826", "--per", "total",
        "--batch", "1", "--context", str(context), "--tokens-per-step", str(steps),
    )  # fmt: skip
    _same(cell, phys)


def test_the_grids_move_the_verdict_and_the_range(rack, single):
    """Each explorer has settings on both sides of the bound, and its expected range grows
    with what it moves (cached share; tokens per step)."""
    for cells in (rack, single):
        assert {c.verdict for c in cells} == {"possible", "impossible"}
    line = [c for c in rack if c.setting == {"counted": "total", "per": "total"}]
    assert [c.x for c in line] == list(explorer.RACK_SHARES)
    assert all(a.high < b.high for a, b in zip(line, line[1:], strict=False))
    steps = [c for c in single if c.setting == {"gpus": 4, "context": 0}]
    assert steps[-1].ceiling > 4 * steps[0].ceiling


def test_the_html_loads_no_script_from_the_network():
    b = explorer.bundle(explorer.rack_grid()[:8], "cached share (fraction)", "title")
    html = b["text/html"]
    assert "plotly-graph-div" in html
    assert not re.search(r"<script[^>]*\bsrc=", html)  # Plotly comes from the book's _static
    assert "http://" not in html and "https://" not in html
    assert base64.b64decode(b["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"  # print stand-in


def test_the_extension_serves_plotly_from_static(tmp_path):
    added: list[str] = []
    app = SimpleNamespace(add_js_file=added.append, outdir=str(tmp_path),
                          builder=SimpleNamespace(format="html"))  # fmt: skip
    sphinx_figures._page(app, "p", "page.html", {"body": "<p>no figure</p>"}, None)
    assert added == []
    sphinx_figures._page(app, "p", "page.html", {"body": '<div class="plotly-graph-div">'}, None)
    assert added == ["plotly.min.js"]
    sphinx_figures._copy(app, None)
    js = tmp_path / "_static" / "plotly.min.js"
    assert js.stat().st_size == sphinx_figures.plotly_js().stat().st_size > 1_000_000


def test_single_user_opens_at_the_claims_four_gpus():
    """The page and the print stand-in show 4 GPUs first (the claim's deployment), not the
    1-GPU setting that does not fit."""
    html = explorer.single_bundle()["text/html"]
    assert '"active":6' in html.replace(" ", "")  # 1, 2 GPUs x 3 contexts come before
    labels = re.findall(r'"label":"([^"]+)"', html.replace(": ", ":"))
    assert labels[6] == "4 GPUs, no context" and len(labels) == 12
