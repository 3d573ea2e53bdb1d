"""Issue 28, the result chapters' physics: one verdict rule everywhere, cached-share thresholds
from the whole workload, the fewest-bytes speculative bound, the prefill gain read for what
physics can say, the rack chapter's figures on stated bases, and the claims registry stating
only what the write-up states. Hand arithmetic in the comments; catalog figures from
data/hardware.yaml and data/models/deepseek-v4.1-flash.yaml."""

from __future__ import annotations

import math

import pytest
from conftest import edited_registry

from rackbook import paths
from rackbook.book import chapter
from rackbook.core.traces import read_trace
from rackbook.core.units import ratio_text
from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims
from rackbook.physics import check, results_bounds
from rackbook.results import decode_parity

MODEL = "deepseek-v4.1-flash"


# ------------------------------------------------------------------- one verdict rule


def test_the_verdict_rule_is_read_from_physics():
    """check.physics_verdict (issue 28: every bound is a bound, no margin): impossible above
    1.0x, possible at or below; the rule's words say the same."""
    rule = results_bounds.verdict_rule()
    assert rule.impossible_above == 1.0
    assert check.physics_verdict(1.001) == "impossible"  # where the old box said "1.15x"
    assert check.physics_verdict(0.85) == "possible"  # where the old margin said undetermined
    assert "possible* at or below it" in rule.text and "margin" not in rule.text


def test_a_bound_has_no_margin_at_its_boundary():
    """A figure exactly at the ceiling is possible; one a hair (one ulp) above it impossible,
    in check.physics_verdict and in what the headline refuses as a contradiction."""
    from rackbook.results import headline

    hair = math.nextafter(1.0, math.inf)
    assert check.physics_verdict(1.0) == "possible"
    assert check.physics_verdict(hair) == "impossible"
    assert check.physics_verdict(math.nan) == "impossible"
    assert headline.contradiction("possible", 1.0) is None
    assert headline.contradiction("possible", hair) is not None
    assert headline.contradiction("impossible", hair) is None
    assert headline.contradiction("impossible", math.nextafter(1.0, 0.0)) is not None


def test_the_flips_box_states_the_rule_check_uses():
    """Every "What would flip it" box: impossible above 1x, never "1.15x"."""

    class Out:
        flips = ["x"]

    box = chapter.flips_box(Out())
    assert "*impossible* above 1x a bound" in box and "*possible* at or below it" in box
    assert "1.15" not in box and "0.85" not in box


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


# ------------------------------------------------------------------- speculative bound


def test_single_user_speculative_bound_is_the_fewest_bytes(tmp_path):
    """4 x B300 at 3.51 tokens per step: (12,018,688,000 B + 520 MB drafter) / 32 TB/s =
    0.391834 ms, 3.51 / 0.391834 ms = 8,958 tok/s (uniform routing gave 3,297, not a bound);
    4,000 tok/s is 0.447x of it, possible. The 3.51 is InferenceX's, and the reason says so."""
    from rackbook.results import single_user

    reg = edited_registry({"single-user.throughput": lambda c: c.update(value=4000.0)})
    an = single_user.analyse(read_trace(paths.TRACES / "single-user"), registry=reg)
    assert an.reading("speculation")["ceiling_tok_s"] == pytest.approx(8957.875, rel=1e-6)
    r = single_user.outcome(an).reading("single-user.throughput", "physics")
    assert r.verdict == "possible" and r.margin == "45 % of the ceiling"
    assert "InferenceX's measured acceptance length, not the claim's" in r.reason


# ------------------------------------------------------------------- cached-share threshold


def test_cached_share_threshold_is_sufficient_and_agrees_with_check():
    """954,000 total tok/s per GPU on 72 GB300 at ISL 100,000 / OSL 1,000: per GPU 944,554
    input and 9,446 output tok/s; the new input tokens' prefill (GEMMs + attention over a
    prefix of 100,000 x (1 + s) / 2) plus the decode (0.055 of the time) fill the GPUs at
    s = 64.0 %, not the 1 - 483,667 / 954,000 = 49.3 % of the prefill GEMMs alone. The
    chapter's share is check.cached_share_threshold's; just above it `rackbook check` reads
    possible, just below impossible; at 57 % it reads 1.18x, where the book said "possible if
    >= 56.9 %"."""
    from rackbook.results import rack_scaling

    r = rack_scaling.throughput_readings(954_000, 72, MODEL, "gb300").set_index("reading")
    share = r.loc["per-gpu-with-cached", "min_cached_share"]
    assert share == pytest.approx(0.640, abs=1e-3)

    def ratio(s: float) -> float:
        return check.check_claim(
            MODEL, "gb300", 72, 954_000, counted="total", isl=100_000, osl=1_000, cached_share=s
        ).ratio

    assert ratio(share + 0.002) < 1 < ratio(share - 0.002)
    assert all(ratio(s) < 1 for s in (0.7, 0.8, 0.9, 0.99))  # sufficient: every larger share
    assert ratio(0.57) == pytest.approx(1.18, abs=0.005)


# ------------------------------------------------------------------- EPLB floor


def test_eplb_floor_states_the_assumed_ranks():
    """Balancedness >= 1 / n for n EP ranks; the write-up gives no n: the chapter's 64 is an
    assumption, and 0.35 clears the floor of any EP size of at least ceil(1 / 0.35) = 3."""
    from rackbook.results import eplb_balance

    r = eplb_balance.balancedness_physics("eplb-balance.before", 0.35, 64, "x")
    assert r.verdict == "possible"
    assert "does not state the EP ranks: 64 is assumed here" in r.reason
    assert "any EP size of at least 3 ranks" in r.reason
    # on 2 ranks the floor is 1/2 = 0.5, above 0.35: impossible
    assert eplb_balance.balancedness_physics("eplb-balance.before", 0.35, 2, "x").verdict == (
        "impossible"
    )


# ------------------------------------------------------------------- registry and rerun card


def test_single_user_rerun_card_reads_the_claims_gpu():
    """The single-user claim is on 4 B300; its card's parameters held it to gb300."""
    from rackbook.book import rerun

    card = rerun.card("single-user")
    assert "gpu_id: b300" in card and "gpu_id: gb300" not in card


def test_registry_states_only_what_the_write_up_states():
    """The write-up says vLLM *can* split prefill and decode over GPU groups, not that the
    +35-44 % was measured on a prefill pool; it gives the EPLB index in its decode paragraph
    without saying it was measured during decode."""
    from rackbook.inputs.claims import load_claims

    reg = load_claims()
    gain = reg.get("prefill-gain.gain")
    assert gain.basis["serving"] == "unknown" and gain.basis["gpus"] == "unknown"
    assert "separate GPU pools" not in gain.metric.measured
    for cid in ("eplb-balance.before", "eplb-balance.after", "eplb-balance.recovered"):
        c = reg.get(cid)
        assert "during decode" not in c.statement and "during decode" not in c.metric.tokens_counted


# ------------------------------------------------------------------- attainable readings


def _physics_reading(result: str):
    from rackbook.results import REGISTRY

    mod = REGISTRY[result]
    out = mod.outcome(mod.analyse(read_trace(paths.TRACES / result)))
    return out, [r for r in out.readings if r.reading == "physics"]


@pytest.mark.parametrize("result", ["rack-scaling", "single-user", "decode-parity", "prefill-gain"])
def test_throughput_physics_readings_say_what_measured_kernels_reach(result):
    """Each throughput-based physics reading carries the attainable estimate with its
    deployment and calibration (physics.attainable, the shipped H200 calibration), in the
    headline JSON too; where the figure is a rate, ratio = figure / what kernels reach."""
    out, rs = _physics_reading(result)
    a = rs[0].attainable
    assert a is not None and a["tok_s_per_gpu"] > 0
    assert "expert-parallel" in a["deployment"] and "H200" in a["calibration"]
    assert "measured kernels reach" in a["text"] or "what they reach" in a["text"]
    doc = out.to_dict("trace")
    assert any(r.get("attainable") for r in doc["readings"])


def test_rack_total_and_single_user_ratios():
    """13,250 tok/s per GPU (954,000 / 72) against what the kernels reach on 72 GB300 with
    data-parallel attention; 826 tok/s on 4 B300 = 206.5 per GPU against one stream's
    estimate: the ratio is the figure over the estimate, and below 1 (the figures do not need
    kernels faster than measured)."""
    _, rs = _physics_reading("rack-scaling")
    t = next(r for r in rs if r.claim_id == "rack-scaling.throughput").attainable
    rack = t["rack_total"]
    assert rack["ratio"] == pytest.approx(13_250 / rack["tok_s_per_gpu"], rel=1e-9)
    assert rack["ratio"] < 1 and "13,250 output tok/s per GPU is" in rack["text"]
    # per GPU as stated, at the least cached share the bound allows (64.0 %), the kernels
    # measured are too slow: it needs more than 100 % of what they reach
    assert t["ratio"] > 1 and "needs kernels at" in t["text"]
    _, rs = _physics_reading("single-user")
    s = rs[0].attainable
    assert s["ratio"] == pytest.approx(826 / 4 / s["tok_s_per_gpu"], rel=1e-9) and s["ratio"] < 1


def test_the_landing_conclusions_carry_the_expected_ratio_not_the_kernel_sum():
    """Issue 35: the realism yardstick quoted in a finding is what real deployments are
    expected to reach (its ratio and interval), not the kernel sum; without an expected
    reading the kernel sum's ratio stays."""
    from rackbook.results import conclusions

    out, rs = _physics_reading("single-user")
    e = rs[0].attainable["expected"]
    assert e["low"] <= e["tok_s_per_gpu"] <= e["high"]
    assert e["ratio"] == pytest.approx(826 / 4 / e["tok_s_per_gpu"], rel=1e-9)
    doc = out.to_dict("trace")
    s = conclusions.summarize(load_claims().get("single-user.throughput"), doc["readings"])
    want = (
        f"; claim above what real deployments reach (~{e['tok_s_per_gpu']:,.0f}, "
        f"{e['low']:,.0f}-{e['high']:,.0f} tok/s/GPU: {ratio_text(e['ratio'])})"
    )
    assert want in s.finding and "measured kernels" not in s.finding
    doc = out.to_dict("trace")
    for r in doc["readings"]:
        if isinstance(r.get("attainable"), dict):
            r["attainable"].pop("expected", None)
    (bare,) = conclusions.conclusions(doc)
    assert "x what measured kernels reach (attention tensor-parallel" in bare.text


def test_context_latency_says_what_measured_kernels_add():
    """One sequence on 4 GB300 (tensor-parallel attention): the estimate's step at 128,000
    and 855,000 tokens; the claimed 0.6 ms is its difference's ratio, and the implied step
    (100 x 0.6 / 7 = 8.57 ms) is set against the estimate's step at 128,000."""
    _, rs = _physics_reading("context-latency")
    by = {r.claim_id: r.attainable for r in rs}
    d = by["context-latency.delta"]
    assert d["ratio"] == pytest.approx(0.6e-3 / d["added_s"], rel=1e-9) and d["added_s"] > 0
    pct = by["context-latency.delta-pct"]
    assert pct["ratio"] == pytest.approx(60 / 7 * 1e-3 / pct["step_lo_s"], rel=1e-9)
    assert "tensor-parallel" in pct["deployment"]


def test_compute_ceiling_written_out_in_latex():
    """GB300 decode: 1 / (2 x 8.493e9 / 15e15 + 2 x 7.507e9 / 5e15) = 241,834 tok/s per GPU,
    written with the numbers it divides (FP4 experts, FP8 dense); on an H200 (no FP4) the
    experts run at FP8's 1.979e15."""
    t = results_bounds.compute_ceiling_latex("deepseek-v4.1-flash", "gb300", "decode")
    assert r"\dfrac{2 \times 8.49 \times 10^{9}}{15 \times 10^{15}}" in t
    assert r"\dfrac{2 \times 7.51 \times 10^{9}}{5 \times 10^{15}}" in t
    assert t.startswith(r"C_\text{decode} = \frac{1}") and "= 241{,}834" in t
    h = results_bounds.compute_ceiling_latex("deepseek-v4.1-flash", "h200", "prefill")
    assert r"{1.98 \times 10^{15}}" in h and h.startswith(r"C_\text{prefill}")


def test_prefix_read_model_is_its_two_floors() -> None:
    """Per new token: the prefix's reads over ``reuse_tokens`` on the GPUs' bandwidth, against
    attention and weight compute split over the GPUs; tokens/s is 1 / the slower."""
    from rackbook.inputs import catalogs
    from rackbook.physics import roofline

    m, g = catalogs.as_model("deepseek-v4.1-flash"), catalogs.as_gpu("gb300")
    for kv, n, reuse in (("fp4", 1, 1), ("fp8", 2, 4)):
        got = results_bounds.prefix_read_model(
            m, g, 128_000, kv_dtype=kv, n_gpus=n, reuse_tokens=reuse
        )
        reads = roofline.context_reads(m, 128_000, "prefill", kv)
        sparse = roofline.bandwidth_floor_step_s(reads.total / reuse, g, n)
        dense = roofline.bandwidth_floor_step_s(reads.dense / reuse, g, n)
        comp = roofline.compute_ceiling_tokens_per_s(m, g, "prefill", n, context=128_000)
        assert got.prefix_tokens == 128_000
        assert got.sparse_bytes_per_new_token == sparse.bytes
        assert got.dense_read_s == dense.seconds and got.sparse_read_s == sparse.seconds
        assert got.compute_s_per_new_token == comp.seconds_per_token / n
        assert got.tokens_per_s == 1 / max(sparse.seconds, comp.seconds_per_token / n)
        assert got.dense_tokens_per_s == 1 / max(dense.seconds, comp.seconds_per_token / n)
        assert got.bound == (
            "KV read" if sparse.seconds >= got.compute_s_per_new_token else "compute"
        )
    with pytest.raises(InputError) as exc:
        results_bounds.prefix_read_model(m, g, 128_000, reuse_tokens=0)
    assert (exc.value.file, exc.value.field) == ("-", "reuse_tokens")
    assert exc.value.problem == "must be >= 1, got 0"


def test_removable_share_is_one_minus_the_encoder_layers_time() -> None:
    from rackbook.inputs import catalogs
    from rackbook.physics import roofline

    m, g = catalogs.as_model("deepseek-v4.1-flash"), catalogs.as_gpu("gb300")
    share, how = results_bounds.removable_share(m)
    assert (share, how) == results_bounds.removable_share(m, "gb300", 128_000, "fp4")
    t_after = 1 / results_bounds.prefix_read_model(m, g, 128_000).tokens_per_s
    r = roofline.context_reads(m, 128_000, "decode", "fp4")
    comp = roofline.compute_ceiling_tokens_per_s(m, g, "decode", context=128_000)
    t_all = max(
        comp.seconds_per_token, roofline.bandwidth_floor_step_s(r.total - r.window, g).seconds
    )
    assert share == 1 - t_after / t_all
    assert how.startswith(f"1 - {t_after * 1e6:.4g} µs (encoder layers) / {t_all * 1e6:.4g} µs")
    assert results_bounds.removable_share(m, kv_dtype="fp8")[0] != share


def test_context_compute_growth_and_the_collective_budget() -> None:
    from rackbook.inputs import catalogs
    from rackbook.physics import roofline

    m, g = catalogs.as_model("deepseek-v4.1-flash"), catalogs.as_gpu("gb300")
    extra = roofline.attention_flops(m, 855_000).total - roofline.attention_flops(m, 128_000).total
    peak = g.flops(g.run_precision(roofline.weight_split(m, "decode").dense_dtype))
    one = results_bounds.context_compute_growth_s(m, g, 128_000, 855_000)
    assert one == extra / peak > 0
    assert results_bounds.context_compute_growth_s(m, g, 128_000, 855_000, batch=3) == 3 * one
    assert results_bounds.collective_budget_us(0.003, 0.001, 40) == pytest.approx(50.0)
    assert results_bounds.collective_budget_us(0.003, 0.001, 1) == pytest.approx(2000.0)
    with pytest.raises(InputError) as exc:
        results_bounds.collective_budget_us(0.003, 0.001, 0)
    assert (exc.value.file, exc.value.field, exc.value.problem) == (
        "-",
        "moe_layers",
        "must be >= 1, got 0",
    )


def test_the_cached_ceiling_reads_the_whole_context_at_one_token_claimed() -> None:
    """One output token behind the model's longest context less one, all but one token cached,
    one token/s claimed; a model without a longest context is refused naming the field."""
    from rackbook.inputs import catalogs

    m = catalogs.as_model("deepseek-v4.1-flash")
    c = results_bounds.cached_ceiling(m, "gb300", 72)
    isl = m.architecture.max_context_tokens - 1
    assert (c.workload["counted"], c.workload["isl"], c.workload["osl"]) == ("total", isl, 1)
    assert c.workload["cached_share"] == (isl - 1) / isl and c.claimed_tok_s_per_gpu == 1.0
    bare = m.model_copy(
        update={"architecture": m.architecture.model_copy(update={"max_context_tokens": None})}
    )
    with pytest.raises(InputError) as exc:
        results_bounds.cached_ceiling(bare, "gb300", 72)
    assert (exc.value.file, exc.value.field, exc.value.problem) == (
        str(m.file),
        "architecture.max_context_tokens",
        "unknown in the model catalog",
    )
