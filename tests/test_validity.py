"""The validity checks (rackbook.core.validity) on real rows cut from the traces shipped before
the live harness was fixed (tests/fixtures/validity/README.md), and on clean rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES

from rackbook.core import validity as V
from rackbook.core.summary import format_summary, summarize
from rackbook.core.traces import read_trace

FIX = FIXTURES / "validity"


def _t(name):
    return read_trace(FIX / name)


def test_single_user_bursts_are_flagged_with_their_numbers():
    t = _t("single-user")
    c = V.check_requests(t)
    # rows 1 and 2: TTFT 1.625 s of 1.628 s and 1.862 s of 1.863 s for 512 tokens
    assert list(c["burst"]) == [False, True, True, False]
    assert c.loc[1, "decode_share"] == pytest.approx((1.627539 - 1.625480) / 1.627539, abs=1e-4)
    assert c.loc[1, "decode_share"] < 0.002
    # all four streams got their tokens in bunches: median gap ~ 3 us against the engine's
    # 3.0 ms per token (vllm:inter_token_latency_seconds over the point)
    assert c["tiny_gaps"].all()
    assert c["reference_step_s"].iloc[0] == pytest.approx(3.010e-3, rel=1e-3)
    assert (c["median_gap_s"] < 1e-5).all()
    assert not c["valid"].any() and not c["token_mismatch"].any()
    assert "burst: decode window 0.1 % of e2el for 512 tokens" in c.loc[1, "reason"]
    pv = V.point_validity(t)
    row = pv.iloc[0]
    assert (row["requests"], row["valid"], row["flagged"], row["burst"]) == (4, 0, 4, 2)
    assert row["flagged_share"] == 1.0 and not row["enough"] and not row["acceptable"]
    assert "4 of 4 requests flagged" in row["reason"] and "0 valid requests (< 3)" in row["reason"]
    assert V.valid_requests(t).empty


def test_context_latency_one_point_usable_one_not():
    pv = V.point_validity(_t("context-latency")).set_index("point_id")
    assert pv.loc["ctx-128", ["valid", "flagged", "burst", "tiny_gaps"]].tolist() == [3, 1, 0, 1]
    assert pv.loc["ctx-128", "flagged_share"] == 0.25
    assert pv.loc["ctx-128", "enough"] and not pv.loc["ctx-128", "acceptable"]
    assert pv.loc["ctx-256", ["valid", "flagged", "burst"]].tolist() == [0, 4, 3]
    assert not pv.loc["ctx-256", "enough"]


def test_rack_scaling_partial_bursts():
    t = _t("rack-scaling")
    pv = V.point_validity(t).iloc[0]
    assert (pv["requests"], pv["valid"], pv["burst"], pv["flagged"]) == (32, 11, 5, 21)
    assert pv["flagged_share"] == pytest.approx(21 / 32)
    v = V.valid_requests(t)
    assert len(v) == 11 and set(v.index) <= set(t.requests.index)
    # the valid rows decode for most of their life; the bursts do not
    c = V.check_requests(t)
    assert (c.loc[v.index, "decode_share"] > 0.3).all()
    assert (c.loc[c["burst"], "decode_share"] < 0.1).all()


@pytest.mark.parametrize("name, n", [("clean-prefill", 24), ("clean-offline", 16)])
def test_clean_rows_pass(name, n):
    t = _t(name)
    c = V.check_requests(t)
    assert c["valid"].all() and len(c) == n and (c["reason"] == "").all()
    pv = V.point_validity(t).iloc[0]
    assert pv["flagged_share"] == 0.0 and pv["enough"] and pv["acceptable"] and pv["reason"] == ""
    assert V.refusal(t, str(pv["point_id"])) is None
    assert len(V.valid_requests(t)) == n


def test_few_output_tokens_are_not_bursts():
    """prefill-gain asks for 4 tokens: decode is a small share of e2el, yet not a burst."""
    c = V.check_requests(_t("clean-prefill"))
    assert (c["decode_share"] < 0.5).any()
    assert not c["burst"].any()


def test_offline_reference_is_the_points_median_tpot():
    t = _t("clean-offline")
    c = V.check_requests(t)
    r = t.requests
    tpot = (r["e2el_s"] - r["ttft_s"]) / (r["output_tokens"] - 1)
    assert c["reference_step_s"].iloc[0] == pytest.approx(float(np.median(tpot)))


def test_gaps_below_clock_resolution_flagged():
    t = _t("clean-offline")
    t.itl = t.itl.assign(itl_s=np.where(t.itl["request_row"] == 0, 5e-7, t.itl["itl_s"]))
    c = V.check_requests(t)
    assert c["tiny_gaps"].tolist() == [True] + [False] * 15
    assert "below the clock's resolution" in c.loc[0, "reason"]


def test_token_mismatch_flags_the_whole_point():
    t = _t("clean-prefill")
    sm = t.extra["server_metrics"].copy()
    gen = (sm["metric"] == "vllm:generation_tokens_total") & (sm["phase"] == "after")
    sm.loc[gen, "value"] += 10  # the servers generated 10 tokens the client never saw
    t.extra["server_metrics"] = sm
    c = V.check_requests(t)
    assert c["token_mismatch"].all() and not c["valid"].any()
    assert (
        "client counted 96 output_tokens, servers' vllm:generation_tokens 106" in c.loc[0, "reason"]
    )
    # within the 0.5 % slack: not flagged (96 vs 96.4 does not occur, so use prompts)
    sm2 = _t("clean-prefill").extra["server_metrics"].copy()
    pr = (sm2["metric"] == "vllm:prompt_tokens_total") & (sm2["phase"] == "after")
    sm2.loc[pr, "value"] += 1  # 1 of 55,298 prompt tokens
    t2 = _t("clean-prefill")
    t2.extra["server_metrics"] = sm2
    assert not V.check_requests(t2)["token_mismatch"].any()


def test_failed_requests_are_neither_valid_nor_flagged():
    t = _t("clean-prefill")
    t.requests.loc[0, "success"] = False
    c = V.check_requests(t)
    assert (
        not c.loc[0, "valid"] and not c.loc[0, "flagged"] and c.loc[0, "reason"] == "failed request"
    )
    pv = V.point_validity(t).iloc[0]
    assert (pv["successful"], pv["valid"], pv["flagged_share"]) == (23, 23, 0.0)


def test_refusal_names_counts_and_first_reason():
    why = V.refusal(_t("single-user"), "single-user")
    assert why.startswith(
        "4 of 4 requests flagged (100 %, at most 2 % allowed: 2 burst, 4 tiny_gaps)"
    )
    assert "first: " in why
    # one flagged request in 50 is tolerated, one in 49 is not
    assert V.MAX_FLAGGED_SHARE == 0.02


def test_summarize_keeps_vllm_figures_and_adds_validity():
    t = _t("single-user")
    s = summarize(t).to_dict()
    assert s["completed"] == 4 and s["total_output_tokens"] == 2048  # all rows, as vLLM
    assert s["valid_requests"] == 0 and s["flagged_share"] == 1.0
    p = s["points"][0]
    assert p["valid_requests"] == 0 and p["flagged_share"] == 1.0
    text = format_summary(summarize(t))
    assert "Valid requests                       0" in text and "100.0%" in text
    c = summarize(_t("context-latency")).to_dict()
    assert c["valid_requests"] == 3 and c["flagged_share"] == pytest.approx(5 / 8)
    assert [p["valid_requests"] for p in c["points"]] == [3, 0]


def test_empty_trace_has_the_columns():
    t = _t("clean-prefill")
    t.requests = t.requests.iloc[:0]
    t.itl = t.itl.iloc[:0]
    t.points = t.points.iloc[:0]
    t.extra = {}
    assert list(V.point_validity(t).columns) == list(V.POINT_COLUMNS)
    assert V.check_requests(t).empty and isinstance(V.valid_requests(t), pd.DataFrame)


def test_points_accepted_when_recorded_keep_their_flagged_requests_and_say_so():
    """``record --accept-invalid`` lists points in run.json's ``accepted_invalid``: the analysis
    keeps their flagged requests (the live suite's tiny-model traces on a loaded machine are
    all flagged; dropping them left the chapter nothing) and the warning says they are kept."""
    t = _t("context-latency")
    plain, s = V.valid_trace(t)
    assert "ctx-256" in s.dropped_points and s.kept_flagged == 0
    assert "ctx-256" not in set(plain.points["point_id"])
    assert "KEPT" not in s.text() and "left out of every figure" in s.text()
    t.run["accepted_invalid"] = ["ctx-256"]
    kept, s2 = V.valid_trace(t)
    assert s2.flagged == s.flagged and s2.accepted_points == ("ctx-256",)
    assert s2.kept_flagged == 4 and "ctx-256" not in s2.dropped_points
    assert (kept.requests["point_id"] == "ctx-256").sum() == 4
    assert "4 of them are KEPT" in s2.text() and "(ctx-256)" in s2.text()
    # the other point's flagged request is still left out
    assert (kept.requests["point_id"] == "ctx-128").sum() == 3
    assert f"{s.flagged - 4} are left out" in s2.text()
