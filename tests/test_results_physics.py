"""Issue 28, the result chapters' physics: one verdict rule everywhere, cached-share thresholds
from the whole workload, the fewest-bytes speculative bound, the prefill gain read for what
physics can say, the rack chapter's figures on stated bases, and the claims registry stating
only what the write-up states. Hand arithmetic in the comments; catalog figures from
data/hardware.yaml and data/models/deepseek-v4.1-flash.yaml."""

from __future__ import annotations

import pytest

from rackbook import paths
from rackbook.book import chapter
from rackbook.core.traces import read_trace
from rackbook.physics import check, results_bounds
from rackbook.results import decode_parity

MODEL = "deepseek-v4.1-flash"


# ------------------------------------------------------------------- one verdict rule


def test_the_verdict_rule_is_read_from_physics():
    """check.physics_verdict: impossible above 1.0x a bound, possible below 1 - 0.15 = 0.85x."""
    rule = results_bounds.verdict_rule()
    assert (rule.possible_below, rule.impossible_above) == (pytest.approx(0.85), 1.0)
    assert check.physics_verdict(1.001) == "impossible"  # where the old box said "1.15x"


def test_the_flips_box_states_the_rule_check_uses():
    """Every "What would flip it" box: impossible above 1x, never "1.15x"."""

    class Out:
        flips = ["x"]

    box = chapter.flips_box(Out())
    assert "above 1x a bound" in box and "below 0.85x" in box
    assert "1.15" not in box


def test_decode_parity_flip_is_the_bound_itself():
    """The physics flip names the decode ceiling at batch 8 per rank on 64 GB300 ranks
    (5,326 tok/s per GPU, test_decode_parity) as the impossible threshold, not 1.15 x it
    (6,125): check reads 1.01 x the ceiling impossible already."""
    an = decode_parity.analyse(read_trace(paths.TRACES / "decode-parity"))
    out = decode_parity.outcome(an)
    flip = next(f for f in out.flips if f.startswith("physics"))
    lo = an.ceilings.iloc[0]["ceiling_tok_s_per_gpu"]
    assert f"above {lo:,.0f} tok/s per GPU at batch" in flip
    assert f"{1.15 * lo:,.0f}" not in flip
