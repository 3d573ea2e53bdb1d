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


# Each documented threshold at and just past its value (a mutated constant or comparison fails).


def _offline_row0(e2el, ttft, tokens):
    t = _t("clean-offline")
    t.requests.loc[0, ["e2el_s", "ttft_s", "output_tokens"]] = [e2el, ttft, tokens]
    return V.check_requests(t)


def test_burst_needs_more_than_eight_tokens():
    """Decode 0.1 % of e2el: 8 tokens is no burst (BURST_MIN_TOKENS), 9 is."""
    assert V.BURST_MIN_TOKENS == 8
    assert not _offline_row0(1.0, 0.999, 8).loc[0, "burst"]
    c = _offline_row0(1.0, 0.999, 9)
    assert c.loc[0, "burst"] and not c.loc[1:, "burst"].any()
    assert "burst: decode window 0.1 % of e2el for 9 tokens (< 10 %)" in c.loc[0, "reason"]


def test_burst_share_is_strictly_below_ten_percent():
    """(10 - 9) / 10 is exactly 0.10: not a burst; 0.0999 is."""
    assert not _offline_row0(10.0, 9.0, 32).loc[0, "burst"]
    assert _offline_row0(10.0, 9.001, 32).loc[0, "burst"]


def _gaps_row0(values):
    t = _t("clean-offline")
    other = t.itl[t.itl["request_row"] != 0]
    mine = pd.DataFrame({"request_row": 0, "itl_s": values}).astype(t.itl.dtypes.to_dict())
    t.itl = pd.concat([mine, other], ignore_index=True)
    return V.check_requests(t)


def test_tiny_gaps_need_two_gaps():
    assert V.MIN_GAPS == 2
    assert not _gaps_row0([5e-7]).loc[0, "tiny_gaps"]
    c = _gaps_row0([5e-7, 5e-7])
    assert c.loc[0, "tiny_gaps"] and not c.loc[1:, "tiny_gaps"].any()


def test_clock_resolution_is_strict_and_named():
    """A median of exactly 1 us is read against the engine step; below it, the clock is named."""
    at = _gaps_row0([1e-6, 1e-6]).loc[0]
    assert at["tiny_gaps"] and "vs engine step" in at["reason"]
    below = _gaps_row0([9.9e-7, 9.9e-7]).loc[0]
    assert below["tiny_gaps"] and "median 0.99 µs below the clock's resolution" in below["reason"]


def test_tiny_gaps_at_a_tenth_of_the_engine_step():
    """No server counters: the engine step is the point's median TPOT."""
    r = _t("clean-offline").requests
    ref = float(np.median((r["e2el_s"] - r["ttft_s"]) / (r["output_tokens"] - 1)))
    assert V.MIN_GAP_SHARE == 0.10
    assert not _gaps_row0([ref * 0.1001] * 3).loc[0, "tiny_gaps"]
    c = _gaps_row0([ref * 0.0999] * 3).loc[0]
    assert c["tiny_gaps"] and f"vs engine step {ref * 1e3:.4g} ms" in c["reason"]


def _generated(server_delta, fail_first=False):
    t = _t("clean-prefill")
    sm = t.extra["server_metrics"].copy()
    gen = (sm["metric"] == "vllm:generation_tokens_total") & (sm["phase"] == "after")
    sm.loc[gen, "value"] = 9.0 + server_delta  # before: 9; the client counted 96
    t.extra["server_metrics"] = sm
    if fail_first:
        t.requests.loc[0, "success"] = False
    return V.check_requests(t)


def test_token_mismatch_slack_is_half_a_percent():
    """96 client tokens: servers' 96.4 is within 0.5 % of the larger, 96.5 is not; 95.5 (a
    client excess of 0.5 over 96) is not either."""
    assert V.TOKEN_MISMATCH_REL == 0.005
    assert not _generated(96.4)["token_mismatch"].any()
    assert _generated(96.5)["token_mismatch"].all()
    assert _generated(95.5)["token_mismatch"].all()


def test_with_failed_requests_only_a_client_excess_counts():
    """The servers also counted the failed request's tokens: fewer on the client is no
    mismatch then, more is."""
    tokens = float(_t("clean-prefill").requests["output_tokens"].iloc[1:].sum())
    c = _generated(tokens + 50, fail_first=True)
    assert not c["token_mismatch"].any()
    c = _generated(tokens - 5, fail_first=True)
    assert c.loc[1:, "token_mismatch"].all() and not c.loc[0, "token_mismatch"]


def test_a_point_needs_three_valid_requests():
    t = _t("clean-offline")
    t.requests.loc[3:, "success"] = False
    assert V.point_validity(t).iloc[0]["enough"]  # rows 0-2
    t.requests.loc[2, "success"] = False
    row = V.point_validity(t).iloc[0]
    assert not row["enough"] and row["reason"] == "2 valid requests (< 3)"


@pytest.mark.parametrize("n, acceptable", [(50, True), (49, False)])
def test_one_flagged_in_fifty_is_acceptable(n, acceptable):
    t = _t("clean-offline")
    pid = str(t.points["point_id"].iloc[0])
    flagged = np.arange(n) == 0
    checks = pd.DataFrame(
        {
            "point_id": pid,
            "success": True,
            "flagged": flagged,
            "valid": ~flagged,
            "burst": flagged,
            "tiny_gaps": False,
            "token_mismatch": False,
            "reason": np.where(flagged, "burst: x", ""),
        }
    )
    row = V.point_validity(t, checks).iloc[0]
    assert (row["flagged"], row["valid"], row["burst"]) == (1, n - 1, 1)
    assert row["flagged_share"] == pytest.approx(1 / n) and bool(row["acceptable"]) is acceptable
    said = f"1 of {n} requests flagged (2 %, at most 2 % allowed: 1 burst); first: burst: x"
    assert row["reason"] == ("" if acceptable else said)


def test_engine_step_counters_are_tried_in_order():
    """The first histogram with both sum and a positive count gives the step (s)."""
    (s1, c1), (s2, c2) = V.ENGINE_STEP_COUNTERS
    assert V._engine_step_s({s1: 0.3, c1: 100.0, s2: 0.5, c2: 100.0}) == pytest.approx(0.003)
    assert V._engine_step_s({s1: 0.3, c1: 0.0, s2: 0.5, c2: 100.0}) == pytest.approx(0.005)
    assert V._engine_step_s({s1: 0.3, s2: 0.5, c2: 100.0}) == pytest.approx(0.005)
    assert V._engine_step_s({s1: float("nan"), c1: 5.0, s2: 0.5, c2: 100.0}) == pytest.approx(0.005)
    assert np.isnan(V._engine_step_s({c1: 5.0}))


def test_reasons_join_with_semicolons_and_say_milliseconds():
    c = V.check_requests(_t("single-user"))
    assert "tokens (< 10 %); tiny gaps: median " in c.loc[1, "reason"]  # a burst with tiny gaps
    row = V.point_validity(_t("single-user")).iloc[0]
    assert row["reason"].endswith("; 0 valid requests (< 3)")
    r = _t("clean-offline").requests
    ref = float(np.median((r["e2el_s"] - r["ttft_s"]) / (r["output_tokens"] - 1)))
    why = _gaps_row0([ref * 0.05] * 3).loc[0, "reason"]
    assert why == f"tiny gaps: median {ref * 0.05e3:.4g} ms vs engine step {ref * 1e3:.4g} ms"


def test_a_point_of_failed_requests_has_no_flagged_share():
    t = _t("clean-offline")
    t.requests["success"] = False
    row = V.point_validity(t).iloc[0]
    assert (row["successful"], row["flagged"], row["flagged_share"]) == (0, 0, 0.0)
    assert row["acceptable"] and not row["enough"]
