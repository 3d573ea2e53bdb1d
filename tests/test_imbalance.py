"""The precomputed expert-imbalance table (:mod:`rackbook.physics.imbalance`) against the EPLB
model it was computed from: exact at its grid points, close between them, live off its EP sizes
and expert counts, and stating its generator and inputs."""

from __future__ import annotations

import json
import math

import pytest

from rackbook import paths
from rackbook.physics import imbalance as imb


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads((paths.DATA / imb.TABLE_FILE).read_text())


def test_the_table_states_its_generator_and_inputs(doc) -> None:
    assert "python -m rackbook.physics.imbalance --write" in doc["generator"]
    assert doc["inputs"]["skew"] == imb.SKEW
    assert doc["inputs"]["layers"] == imb.LAYERS and doc["inputs"]["seed"] == imb.SEED
    assert sorted(doc["experts"]) == sorted(str(e) for e in imb.EXPERTS)
    assert doc["experts"]["384"]["ep"] == list(imb.EP_GRID)
    assert doc["experts"]["256"]["ep"] == [p for p in imb.EP_GRID if p <= 256]
    assert len(doc["log2_assignments"]) == 81  # 2^0 .. 2^20 by 2^(1/4)


@pytest.mark.parametrize(
    "experts,ep,k", [(384, 4, 10), (384, 72, 52), (256, 8, 80), (256, 36, 30), (384, 288, 64)]
)
def test_grid_points_are_the_eplb_model(experts, ep, k) -> None:
    """At a grid point (2^(k/4) assignments) the table holds the model's value (6 digits)."""
    a = 2.0 ** (k / 4)
    assert imb.imbalance(experts, ep, a) == pytest.approx(
        imb.eplb_imbalance(experts, ep, a), rel=2e-6
    )


@pytest.mark.parametrize(
    "experts,ep,a", [(384, 4, 700), (384, 72, 50_000), (256, 8, 3_000), (256, 64, 300_000)]
)
def test_between_grid_points_within_a_quarter_octave_of_the_model(experts, ep, a) -> None:
    """Between grid points the log-linear reading is within 1.25x of the model (the model's one
    draw is itself noisy at few assignments: 2^(1/4) apart it moves up to ~20 %)."""
    r = imb.imbalance(experts, ep, a) / imb.eplb_imbalance(experts, ep, a)
    assert abs(math.log(r)) < math.log(1.25)


def test_an_ep_size_or_expert_count_not_tabled_is_computed_live() -> None:
    # 200 GPUs: 384 experts leave (-384) mod 200 = 16 redundant slots, not smooth in the EP size
    assert 200 not in imb.EP_GRID
    assert imb.imbalance(384, 200, 3000) == imb.eplb_imbalance(384, 200, 3000)
    assert imb.imbalance(160, 8, 3000) == imb.eplb_imbalance(160, 8, 3000)
    # one GPU or nothing routed: balanced
    assert imb.imbalance(384, 1, 3000) == 1.0 == imb.imbalance(384, 8, 0)


def test_the_eplb_model_at_its_edges() -> None:
    """One GPU or nothing routed: balanced; one assignment lands on one of 8 GPUs (8x the mean);
    two GPUs already differ; an EP size past the expert count is the expert count."""
    assert imb.eplb_imbalance(384, 1, 3000) == 1.0 == imb.eplb_imbalance(384, 8, 0)
    assert imb.eplb_imbalance(384, 8, 1) == 8.0
    assert imb.eplb_imbalance(384, 8, 0.4) == 8.0  # rounds up to one assignment
    assert imb.eplb_imbalance(384, 8, 2) < 8.0
    assert imb.eplb_imbalance(384, 2, 3000) > 1.0
    assert imb.eplb_imbalance(8, 16, 100) == imb.eplb_imbalance(8, 8, 100) > 1.0


@pytest.mark.parametrize(
    "x,want",
    [(-1.0, (0, 0.0)), (0.0, (0, 0.0)), (1.0, (0, 0.5)), (2.0, (1, 0.0)), (2.5, (1, 0.25))]
    + [(4.0, (1, 1.0)), (6.0, (1, 1.0))],
)
def test_a_reading_between_grid_points_takes_the_step_around_it(x, want) -> None:
    assert imb._interp([0.0, 2.0, 4.0], x) == want


def test_a_small_grid_rebuilds_the_stored_tables_first_columns(doc, monkeypatch) -> None:
    """``build`` with the grid cut at 2^3 assignments and three EP sizes gives the stored
    table's values there (an EP size past the expert count is left out)."""
    monkeypatch.setattr(imb, "MAX_ASSIGNMENTS", 1 << 3)
    monkeypatch.setattr(imb, "EP_GRID", (4, 72, 256, 288))
    new = imb.build()
    assert new["log2_assignments"] == doc["log2_assignments"][:13]
    assert new["generator"] == doc["generator"] and new["inputs"] == doc["inputs"]
    for experts, eps in (("256", [4, 72, 256]), ("384", [4, 72, 256, 288])):
        stored = doc["experts"][experts]
        assert new["experts"][experts]["ep"] == eps
        for ep, row in zip(eps, new["experts"][experts]["imbalance"], strict=True):
            assert row == stored["imbalance"][stored["ep"].index(ep)][:13]


def test_write_stores_the_table_one_row_a_line(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(imb, "MAX_ASSIGNMENTS", 1 << 1)
    monkeypatch.setattr(imb, "EP_GRID", (4, 8))
    monkeypatch.setattr(paths, "DATA", tmp_path)
    assert imb.main([]) == 0
    assert capsys.readouterr().out == json.dumps(imb.build())[:200] + "\n"
    assert not (tmp_path / imb.TABLE_FILE).exists()
    assert imb.main(["--write"]) == 0
    out = tmp_path / imb.TABLE_FILE
    assert capsys.readouterr().out == f"wrote {out}\n"
    text = out.read_text()
    assert text == imb.dump(imb.build()) and json.loads(text) == imb.build()
    assert imb.dump({"a": [[1, 2], [3]]}) == '{"a":[[1,2],\n[3]]}\n'
