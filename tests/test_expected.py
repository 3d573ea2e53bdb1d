"""The expected throughput (:mod:`rackbook.physics.expected`): each term against a number worked
by hand, and the issue-35 properties (one user on 72 GB300 vs 4; FP4 vs BF16 index keys at long
context; a 6-token verify never cheaper than plain decode).

Hand numbers use the shipped H200 calibration: stream 4.3337 / 4.8 TB/s = 0.9028 of HBM; dense
FP8 0.7330 and BF16 0.7978 of peak; GB300: 8 TB/s, 288 GB HBM (0.9 of it usable), 900 GB/s
NVLink each way, one NVLink domain of 72 GPUs (the NVL72); DeepSeek-V4.1-Flash: 7.5065e9 dense
params (FP8, 1 B), 40 MoE layers, top-6 of 384 experts, hidden 5,120.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import attainable, roofline
from rackbook.physics import expected as E
from rackbook.physics.check import Workload

FLASH = "deepseek-v4.1-flash"
#: A fit with no floor and calibrated kernels, so terms are the kernel arithmetic alone.
BARE = E.Fit(efficiency=1.0, layer_s=0.0, log_low=-0.5, log_high=0.5)


def decoding(**kw: object) -> Workload:
    """A decode workload of 1 output token/s per GPU (so the expected rate is 1 / ratio)."""
    return Workload(output_tok_s_per_gpu=1.0, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def eff() -> attainable.Efficiencies:
    return attainable.efficiencies()


@pytest.fixture(scope="module")
def gb300() -> catalogs.GpuSpec:
    return catalogs.as_gpu("gb300")


@pytest.fixture(scope="module")
def flash() -> catalogs.ModelSpec:
    return catalogs.as_model(FLASH)


def test_scan_time_is_bandwidth_bound_at_the_stream_fraction(eff, gb300, flash) -> None:
    # 100,000 tokens: index keys of sources with ratios 2, 2, 2, 1 -> 2.5 x 100,000 keys;
    # FP4 key 128 x 0.5 B + 4 scale bytes = 68 B -> 17.0 MB; BF16 128 x 2 B = 256 B -> 64.0 MB
    assert roofline.context_reads(flash, 100_000, "decode", "fp4").scan == 17_000_000
    assert roofline.context_reads(flash, 100_000, "decode", "bf16").scan == 64_000_000
    # 17.0e6 / (0.90282 x 8e12) = 2.3537 us; 64.0e6 / (0.90282 x 8e12) = 8.8611 us
    assert E.scan_time(eff, gb300, 17e6, 0) == pytest.approx(2.3537e-6, rel=1e-4)
    assert E.scan_time(eff, gb300, 64e6, 0) == pytest.approx(8.8611e-6, rel=1e-4)
    # FLOP-bound: 1e12 FLOP / (0.79781 x 2.5e15 BF16) = 501.4 us
    flops = 1e12 / (eff.dense["bf16"] * gb300.flops("bf16"))
    assert E.scan_time(eff, gb300, 0, 1e12) == pytest.approx(flops)


def test_expert_time_is_monotone_in_tokens(eff, gb300, flash) -> None:
    # the calibrated curve is not: 6.40 us at 192 tokens, 4.09 us at 512
    raw = [attainable.expert_seconds(eff, flash, gb300, n) for n in (192, 512)]
    assert raw[0] > raw[1]
    sizes = [1, 2, 6, 16, 64, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192]
    times = [E.expert_time(eff, flash, gb300, n) for n in sizes]
    assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    # at 192 tokens: the 512-token time (4.093 us), the least at or above it
    assert times[sizes.index(192)] == pytest.approx(raw[1])


def test_imbalance_from_the_eplb_model() -> None:
    assert E.imbalance(384, 1, 1000) == 1.0
    few = E.imbalance(384, 4, 6)  # 6 assignments over 4 GPUs: mean 1.5, the busiest holds >= 2
    assert few >= 2 / 1.5
    many = E.imbalance(384, 72, E._bucket(6 * 4096))
    assert 1.0 < many < few


def test_network_inside_and_beyond_one_nvlink_domain(gb300, flash) -> None:
    # one token a GPU, dispatch + combine 3 B a value: 6 x 5,120 x 3 = 92,160 B a MoE layer;
    # 72 GPUs (one domain): 71/72 of it over 900e9 B/s: 40 x 92,160 x 71/72 / 900e9 = 4.0391 us
    assert E._network(flash, gb300, 72, 1, 1.0, 40) == pytest.approx(4.0391e-6, rel=1e-4)
    # 144 GPUs: 71/144 over NVLink, 72/144 over the NIC at 100e9 B/s:
    # 40 x 92,160 x (71/144 / 900e9 + 72/144 / 100e9) = 20.4516 us
    assert E._network(flash, gb300, 144, 1, 1.0, 40) == pytest.approx(20.4516e-6, rel=1e-4)


def test_dense_and_floor_terms(eff, gb300, flash) -> None:
    fit = E.Fit(1.0, 100e-6, 0.0, 0.0)
    s = E.decode_step(flash, gb300, 4, 1, eff, fit, tp=1)
    # one sequence: 7.5065e9 B / (0.90282 x 8e12) = 1.03930 ms (reading beats its GEMMs)
    assert s.parts["dense"] == pytest.approx(7.5065344e9 / (eff.stream * 8e12), rel=1e-6)
    assert s.parts["dense"] == pytest.approx(1.0393e-3, rel=1e-4)
    assert s.parts["latency floor"] == pytest.approx(40 * 100e-6)  # 40 layers x 100 us
    tp4 = E.decode_step(flash, gb300, 4, 1, eff, fit, tp=4)
    assert tp4.parts["dense"] == pytest.approx(s.parts["dense"] / 4)


def test_capacity_by_hand(gb300, flash) -> None:
    # the bound's usable HBM: 0.9 x 288e9 B (nameplate; no reported figure) = 259.2e9 B;
    # (259.2e9 - 8.4182e9 dense - 288.78e9 routed / 4) / (89.0e6 KV + 2.70336e6 window)
    # = 178.59e9 / 91.703e6 = 1,947 a GPU, 7,788 on 4
    assert E.capacity(flash, gb300, 4, 1, 100_000, "fp4") == 7788
    # tp 4 spreads the dense weights but every rank holds every sequence's KV: one group
    assert E.capacity(flash, gb300, 4, 4, 100_000, "fp4") == (
        (288e9 * 0.9 - 8.4182016e9 / 4 - 288.7778304e9 / 4) // (89e6 + 2_703_360)
    )


def one_user(gpus: int) -> float:
    r = E.expected(FLASH, "gb300", gpus, decoding(concurrency=1), claimed=1.0)
    return r.tok_s_per_gpu * gpus  # the one user's tokens/s


def test_one_user_on_72_gb300_within_1_5x_of_4() -> None:
    assert one_user(72) <= 1.5 * one_user(4)


def test_fp4_and_bf16_index_keys_differ_at_long_context() -> None:
    w = Workload(output_tok_s_per_gpu=1000.0, concurrency=256, decode_context=100_000)
    fp4 = E.expected(FLASH, "gb300", 4, w, claimed=1000.0)
    bf16 = E.expected(FLASH, "gb300", 4, replace(w, kv_dtype="bf16"), claimed=1000.0)
    assert w.kv_dtype == "fp4"
    # BF16 keys are 256 B against 68 B: the scan takes longer (up to 3.76x where bandwidth binds)
    scan = bf16.terms["decode"]["index scan"] / fp4.terms["decode"]["index scan"]
    assert 1.5 < scan <= 256 / 68 + 1e-9
    assert fp4.tok_s_per_gpu > 1.02 * bf16.tok_s_per_gpu


@pytest.mark.parametrize("batch", [1, 4, 64, 1024])
def test_a_6_token_verify_never_costs_less_than_plain_decode(eff, gb300, flash, batch) -> None:
    fit = E.load_fit()
    plain = E.decode_step(flash, gb300, 4, batch, eff, fit, Workload(verify_tokens=1))
    six = E.decode_step(flash, gb300, 4, batch, eff, fit, Workload(verify_tokens=6))
    assert six.seconds >= plain.seconds
    assert six.parts["experts"] >= plain.parts["experts"]


def test_tpot_limit_caps_the_batch() -> None:
    free = E.expected(FLASH, "gb300", 4, decoding(concurrency=4096), claimed=1.0)
    step = free.terms["decode"]["step"] * 1e3
    capped = E.expected(
        FLASH, "gb300", 4, decoding(concurrency=4096), claimed=1.0, tpot_ms=step / 2
    )
    assert capped.batch is not None and free.batch is not None and capped.batch < free.batch
    assert capped.terms["decode"]["step"] * 1e3 <= step / 2
    assert "TPOT" in capped.batch_text


def test_best_deployment_is_at_least_each_one() -> None:
    w = decoding(concurrency=4)
    best = E.expected(FLASH, "gb300", 4, w, claimed=1.0).tok_s_per_gpu
    for dep in ("dp-ep", "tp-ep"):
        assert best >= E.expected(FLASH, "gb300", 4, w, claimed=1.0, deployment=dep).tok_s_per_gpu


def test_precision_sets_the_expert_bytes() -> None:
    v3 = catalogs.as_model("deepseek-v3")
    fp4 = roofline.served(v3, "fp4").model
    # 3 x 7,168 x 2,048 x 0.5 B = 22.02 MB (FP8: 44.04 MB)
    assert roofline.expert_bytes(fp4) == pytest.approx(3 * 7168 * 2048 * 0.5, rel=0.1)
    assert roofline.expert_bytes(v3) == 3 * 7168 * 2048
    assert math.isclose(roofline.expert_bytes(fp4) * 2, roofline.expert_bytes(v3), rel_tol=0.1)


def test_check_prints_and_returns_the_expected_reading(run_cli) -> None:
    import json

    code, out, _ = run_cli(
        "check", "--model", FLASH, "--gpu", "b300", "--gpus", "4", "--tok-s", "826",
        "--per", "total", "--concurrency", "1", "--tokens-per-step", "3.51", "--tpot-ms", "50",
        "--json",
    )  # fmt: skip
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("  expected: "))
    assert "real deployments reach ~" in line and "the claim is" in line
    e = json.loads(out.splitlines()[-1])["physics"]["expected"]
    assert set(e) >= {"tok_s_per_gpu", "low", "high", "ratio", "deployment", "terms"}
    assert e["low"] < e["tok_s_per_gpu"] < e["high"]
    # the ratio is the figure per GPU (826 / 4 = 206.5) over the expected rate
    assert e["ratio"] == pytest.approx(206.5 / e["tok_s_per_gpu"], rel=1e-9)
    assert e["batch"] == 1


def test_check_refuses_a_bad_tpot(run_cli) -> None:
    code, _, err = run_cli(
        "check", "--model", FLASH, "--gpu", "b300", "--gpus", "4", "--tok-s", "826",
        "--tpot-ms", "-1",
    )  # fmt: skip
    assert code == 2 and err.startswith("error:") and "--tpot-ms" in err


def test_littles_law_sets_the_decoding_batch_in_check() -> None:
    from rackbook.physics import check

    c = check.check_claim(FLASH, "gb300", 4, 1000.0, isl=8192, osl=1024, batch=16)
    # 16 clients, OSL 1,024, TTFT 2 s, TPOT 50 ms: 16 x 51.15 / 53.15 = 15.398 decoding
    e = E.for_check(c, tpot_ms=50, ttft_s=2)
    assert e.batch == pytest.approx(E.littles_law(16, 1024, 2, 0.05))
    assert e.batch == pytest.approx(15.398, rel=1e-4)
    assert "derived" in e.batch_text
    assert E.for_check(c).batch == 16  # without the latencies: the clients


def test_an_unreachable_tpot_limit_is_said() -> None:
    # the fitted floor alone is 40 layers x layer_s: no batch meets a TPOT below it
    floor_ms = 40 * E.load_fit().layer_s * 1e3
    e = E.expected(FLASH, "gb300", 4, decoding(), claimed=1.0, tpot_ms=floor_ms / 2)
    assert e.tok_s_per_gpu == 0 and "TPOT limit" in e.notes[-1]
    assert "none expected" in e.text()
    d = e.to_dict()  # JSON-ready: the infinite ratio as None, the notes a list
    assert d["ratio"] is None and d["tok_s_per_gpu"] == 0 and d["notes"] == list(e.notes)


def test_a_model_file_reaches_the_expected_reading(tmp_path) -> None:
    """A file keeping the catalog id but activating 24e9 parameters in decode (not 16e9): the
    expected reading reads the check's own model entry, not the catalog's. Dense params = active
    - 40 MoE layers x 6 experts x 3 x 5,120 x 2,304 = 24e9 - 8,493,465,600 = 15,506,534,400
    (catalog: 7,506,534,400); at 4 sequences on 4 GB300 (dp-ep) the dense read is bandwidth-bound,
    so the dense terms are in the ratio 15,506,534,400 / 7,506,534,400 = 2.0657."""
    import yaml

    from rackbook import paths
    from rackbook.physics import check

    raw = yaml.safe_load((paths.DATA / "models" / f"{FLASH}.yaml").read_text())
    raw["params"]["active_decode"] = 24_000_000_000
    f = tmp_path / "model.yaml"
    f.write_text(yaml.safe_dump(raw))
    cat = check.check_claim(FLASH, "gb300", 4, 100, batch=4)
    own = check.check_claim(str(f), "gb300", 4, 100, batch=4)
    e_cat = E.for_check(cat, deployment="dp-ep")
    e_own = E.for_check(own, deployment="dp-ep")
    dense = e_own.terms["decode"]["dense"] / e_cat.terms["decode"]["dense"]
    assert dense == pytest.approx(15_506_534_400 / 7_506_534_400, rel=1e-6)
    assert e_own.tok_s_per_gpu < e_cat.tok_s_per_gpu


def test_expected_reads_the_bounds_usable_memory_and_served_format(gb300) -> None:
    """One capacity model: the HBM is the bound's (0.9 x the HBM as reported); one served
    format: DeepSeek-R1 with no stated precision is read at NVFP4 experts by both."""
    from rackbook.physics import check

    r1 = catalogs.as_model("deepseek-r1")
    c = check.check_claim("deepseek-r1", "gb300", 8, 1000, batch=8)
    assert c.spec is not None and c.spec.weights.routed_expert_dtype == "fp4"
    assert roofline.served(r1, None).model.weights.routed_expert_dtype == "fp4"
    # 8 GB300, dp-ep (tp 1): (0.9 x 288e9 - 17.1 GB dense - 326.9 GB routed / 8) / one sequence
    st = roofline.storage(c.spec)
    free = check.usable_bytes(gb300) - st.dense_bytes - st.routed_bytes / 8
    per_seq = roofline.kv_bytes_per_sequence(c.spec, 4096, "fp8")
    assert E.capacity(c.spec, gb300, 8, 1, 4096, "fp8") == (free // per_seq) * 8


def test_placement_and_brief_read_the_claim_against_the_interval() -> None:
    from rackbook.results.conclusions import brief, placement

    # expected 1,000 tok/s/GPU in [490, 1,830]: a claim of 2,000 is above, 400 below, 1,000
    # within; the brief names the place, the range and the multiple
    d = {"tok_s_per_gpu": 1000.0, "low": 490.0, "high": 1830.0}
    assert placement(d | {"ratio": 2.0}) == "above"
    assert placement(d | {"ratio": 0.4}) == "below"
    assert placement(d | {"ratio": 1.0}) == "within"
    assert placement({"tok_s_per_gpu": None, "ratio": None}) == ""
    assert brief(d | {"ratio": 2.0}, "v") == (
        "claim above what real deployments reach (~1,000, 490-1,830 tok/s/GPU: 2x); model error: v"
    )
    assert brief({}) == ""


def test_held_out_text_gives_the_numbers_of_the_summary() -> None:
    s = {"points": 10, "median_ratio": 0.95, "within_2x": 0.8, "inside": 0.7}
    text = E.held_out_text(s)
    assert "0.95" in text and "80 % of 10 published points" in text and "70 % inside" in text
    assert "inside" not in E.held_out_text({k: v for k, v in s.items() if k != "inside"})
    assert E.held_out_text({"points": 0}) == E.held_out_text({}) == ""
    assert E.Fit(1.0, 0.0, 0.0, 0.0).validation_text == ""
    assert E.Fit(1.0, 0.0, 0.0, 0.0, validation={"all": s}).validation_text == text


def test_load_fit_reads_the_file_else_the_prior(tmp_path) -> None:
    import yaml

    prior = E.load_fit(tmp_path / "none.yaml")
    assert (prior.efficiency, prior.layer_s, prior.source) == (1.0, E.ANCHOR_LAYER_S, "prior")
    assert (prior.log_low, prior.log_high) == (-math.log(2), math.log(2))  # x/ 2
    assert E.ANCHOR_LAYER_S == 1 / 125 / 61
    fit = {"efficiency": 2, "layer_s": 1e-4, "log_low": -0.5, "log_high": 0.25}
    doc = {"fit": fit, "held_out": {"src": dict(fit, efficiency=3)}, "validation": {"all": {}}}
    f = tmp_path / "fit.yaml"
    f.write_text(yaml.safe_dump(doc))
    got = E.load_fit(f)
    assert got.params() == {"efficiency": 2.0, "layer_s": 1e-4, "log_low": -0.5, "log_high": 0.25}
    assert got.held_out == {
        "src": {"efficiency": 3.0, "layer_s": 1e-4, "log_low": -0.5, "log_high": 0.25}
    }
    assert got.validation == {"all": {}} and got.source.endswith("fit.yaml")
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump({"fit": fit}))
    assert (E.load_fit(bare).held_out, E.load_fit(bare).validation) == ({}, {})
    for bad in (
        {"fit": {k: v for k, v in fit.items() if k != "log_high"}},
        {"fit": dict(fit, efficiency="x")},
    ):
        f.write_text(yaml.safe_dump(bad))
        with pytest.raises(InputError) as e:
            E.load_fit(f)
        assert e.value.field == "fit" and e.value.file.endswith("fit.yaml")


def test_bucket_rounds_to_quarter_powers_of_two() -> None:
    # 2^(round(4 log2 x) / 4): 100 -> 2^(27 / 4) = 107.6 -> 108; below 1 -> 1
    assert [E._bucket(x) for x in (0.5, 1, 2, 3, 100, 1000, 1024)] == [1, 1, 2, 3, 108, 1024, 1024]


def test_deployment_names_and_the_nic_of_a_gpu() -> None:
    assert [E.deployment_name(t, g) for t, g in ((1, 8), (8, 8), (4, 8), (1, 1))] == [
        "dp-ep", "tp-ep", "hybrid tp4", "dp-ep",
    ]  # fmt: skip
    assert (E._nic_of("gb300"), E._nic_of("h200")) == (100e9, 50e9)
    assert E._nic_of("no-such-gpu") == 50e9  # the catalog's least


def test_littles_law_counts_the_clients_decoding() -> None:
    # 16 clients, OSL 1,024, TTFT 2 s, TPOT 50 ms: 16 x 51.15 / (2 + 51.15)
    assert E.littles_law(16, 1024, 2, 0.05) == pytest.approx(16 * 51.15 / 53.15, rel=1e-12)
    assert E.littles_law(16, 1, 2, 0.05) == 0.0  # one output token: no decode stage
    assert E.littles_law(16, 0, 0, 0.05) == 16  # no time at all: every client
    assert E.littles_law(16, 2, 0, 0.05) == 16  # no TTFT: every client decodes


def test_expected_text_and_dict() -> None:
    e = E.Expected(1000.0, 500.0, 2000.0, 2.0, "dp-ep on 4 GPUs", {}, 4.0, "", ("a", "b"))
    assert "~1,000 (500-2,000)" in e.text() and "dp-ep on 4 GPUs" in e.text()
    assert e.text("v").endswith("; validation: v") and "validation" not in e.text()
    d = e.to_dict()
    assert d["notes"] == ["a", "b"] and (d["tok_s_per_gpu"], d["ratio"], d["batch"]) == (
        1000.0,
        2.0,
        4.0,
    )
    none = E.Expected(0.0, 0.0, 0.0, math.inf, "none", {}, notes=("why",))
    assert none.text() == "real deployments: none expected (why)"
    assert "(why)" not in E.Expected(math.inf, 0.0, 0.0, math.inf, "none", {}).text()
    assert "none expected" in E.Expected(math.inf, 0.0, 0.0, math.inf, "none", {}).text()
    assert E.Expected(-1.0, 0.0, 0.0, 1.0, "x", {}).text().startswith("real deployments: none")


@pytest.mark.parametrize(
    "args,facts",
    [
        ((None, None, 512.0, 512.0, None), ("512 sequences", "best batch", "KV capacity")),
        ((16.0, None, 16.0, 1000.0, None), ("16 sequences", "concurrency 16")),
        ((16.0, None, 16.0, 1000.0, 50.0), ("16 sequences", "concurrency 16", "within TPOT 50 ms")),
        ((16.0, None, 8.0, 1000.0, 50.0), ("8 sequences", "concurrency 16", "TPOT limit")),
        ((16.0, None, 8.0, 8.0, 50.0), ("8 sequences", "concurrency 16", "KV capacity")),
        (
            (15.4, 15.4, 8.0, 1000.0, 50.0),
            ("8 sequences", "15.4 decoding", "derived", "TPOT limit"),
        ),
    ],
)
def test_batch_text_names_what_set_the_batch(args, facts) -> None:
    """The batch, where it came from, and what capped it (only that: TPOT or KV capacity)."""
    text = E._batch_text(*args)
    assert text.startswith(facts[0]) and all(f in text for f in facts)
    causes = ("TPOT limit", "KV capacity", "within TPOT")
    named = {c for c in causes if any(c in f for f in facts)}
    assert {c for c in causes if c in text} == named


def test_network_adds_the_attention_all_reduce_under_tp(gb300, flash) -> None:
    assert E._network(flash, gb300, 1, 1, 1.0, 40) == 0.0  # one GPU: nothing crosses a link
    # tp 8 on 8 GB300, one token: dispatch + combine 1/8 x 6 x 5,120 x 3 B over 7/8 of the
    # 900 GB/s links a MoE layer, and per layer 2 all-reduces of 2 x 7/8 x 5,120 x 2 B
    moe = 40 * (6 * 5120 * 3 / 8) * (7 / 8) / 900e9
    ar = 40 * 2 * 2 * (7 / 8) * 5120 * 2 / 900e9
    assert E._network(flash, gb300, 8, 8, 1.0, 40) == pytest.approx(moe + ar, rel=1e-12)
    assert E._network(flash, gb300, 8, 1, 1.0, 40) == pytest.approx(
        40 * 6 * 5120 * 3 * (7 / 8) / 900e9
    )


def test_decode_step_overlaps_the_network_only_with_two_sequences_a_group(
    eff, gb300, flash
) -> None:
    w = Workload(decode_context=10_000)
    many = E.decode_step(flash, gb300, 8, 64, eff, BARE, w, tp=1)
    kernels = sum(v for k, v in many.parts.items() if k not in ("network", "latency floor"))
    assert set(many.parts) == {
        "dense",
        "attention",
        "context",
        "index scan",
        "experts",
        "network",
        "latency floor",
    }
    assert many.seconds == pytest.approx(max(kernels, many.parts["network"]), rel=1e-12)
    assert many.tok_s_per_gpu == pytest.approx(64 / 8 / many.seconds, rel=1e-12)
    one = E.decode_step(flash, gb300, 8, 1, eff, BARE, Workload(), tp=1)  # one sequence: in turn
    assert set(one.parts) == {"dense", "experts", "network", "latency floor"}
    assert one.seconds == pytest.approx(
        one.parts["dense"] + one.parts["experts"] + one.parts["network"]
    )
    tp = E.decode_step(flash, gb300, 8, 64, eff, BARE, w, tp=8)  # tp over all GPUs: in turn
    tp_kernels = sum(v for k, v in tp.parts.items() if k not in ("network", "latency floor"))
    assert tp.deployment == "tp-ep"
    assert tp.seconds == pytest.approx(tp_kernels + tp.parts["network"], rel=1e-12)
    # the fit's efficiency scales the kernels, its floor adds a time per layer (and drafter layer)
    fit = E.Fit(2.0, 1e-5, 0.0, 0.0)
    slow = E.decode_step(flash, gb300, 8, 1, eff, fit, Workload(), tp=1)
    assert slow.parts["latency floor"] == pytest.approx(40 * 1e-5)
    assert slow.seconds == pytest.approx(
        2 * (one.parts["dense"] + one.parts["experts"]) + one.parts["network"] + 40e-5
    )
    spec = E.decode_step(
        flash, gb300, 8, 1, eff, fit, Workload(verify_tokens=6, tokens_per_step=3.51), tp=1
    )
    assert spec.parts["latency floor"] == pytest.approx(45 * 1e-5)  # 40 layers + 5 drafts
    assert spec.parts["drafter"] == pytest.approx(5 * 520e6 / (eff.stream * 8e12), rel=1e-9)
    assert spec.tok_s_per_gpu == pytest.approx(3.51 / 8 / spec.seconds, rel=1e-12)


def test_prefill_token_overlaps_kernels_and_network(eff, gb300, flash) -> None:
    p = E.prefill_token(flash, gb300, 8, eff, BARE, Workload(prefill_prefix=10_000))
    kernels = sum(v for k, v in p.parts.items() if k not in ("network", "latency floor"))
    assert (p.deployment, p.batch) == ("dp-ep", 8192.0)
    assert p.seconds == pytest.approx(max(kernels, p.parts["network"]), rel=1e-12)
    assert p.tok_s_per_gpu == 1 / p.seconds
    # one token's dispatch and combine: 6 x 5,120 x 3 B over 7/8 of the links, 20 prefill layers
    assert p.parts["network"] == pytest.approx(20 * 6 * 5120 * 3 * (7 / 8) / 900e9)
    bare = E.prefill_token(flash, gb300, 8, eff, BARE, Workload())
    assert set(bare.parts) == {"dense", "experts", "network", "latency floor"}
    fit = E.Fit(1.0, 1e-4, 0.0, 0.0)  # the floor: 20 prefill layers a chunk of 8,192 tokens
    floor = E.prefill_token(flash, gb300, 8, eff, fit, Workload()).parts["latency floor"]
    assert floor == pytest.approx(20 * 1e-4 / 8192)


def test_expected_prefill_reads_one_token_and_warns_past_the_ttft() -> None:
    w = Workload(new_input_tok_s_per_gpu=1000.0, prefill_prefix=10_000)
    e = E.expected(FLASH, "gb300", 8, w, claimed=1000.0, phase="prefill", fit=BARE)
    token = e.terms["prefill"]["token"]
    assert e.ratio == pytest.approx(1000 * token, rel=1e-12) and e.tok_s_per_gpu == pytest.approx(
        1 / token
    )
    assert (e.low, e.high) == pytest.approx(
        (e.tok_s_per_gpu * math.exp(-0.5), e.tok_s_per_gpu * math.exp(0.5))
    )
    assert (e.deployment, e.batch, e.notes) == ("dp-ep on 8 GPUs", None, ())
    # a request's prefill: 2 x its prefix x a token's time over the 8 GPUs
    alone = 2 * 10_000 * token / 8
    assert (
        E.expected(
            FLASH, "gb300", 8, w, claimed=1000.0, phase="prefill", fit=BARE, ttft_s=alone
        ).notes
        == ()
    )
    late = E.expected(
        FLASH, "gb300", 8, w, claimed=1000.0, phase="prefill", fit=BARE, ttft_s=alone * 0.99
    )
    assert len(late.notes) == 1 and "TTFT" in late.notes[0]


def test_expected_refuses_a_deployment_it_cannot_place() -> None:
    w = decoding(concurrency=8)
    for gpus, dep in ((8, "hybrid"), (144, "tp-ep")):  # 144 GPUs span two NVLink domains
        with pytest.raises(InputError) as e:
            E.expected(FLASH, "gb300", gpus, w, claimed=1.0, deployment=dep)
        assert (e.value.file, e.value.field) == ("-", "deployment")
    six = E.expected(FLASH, "gb300", 6, decoding(concurrency=6), claimed=1.0, deployment="tp-ep")
    assert (six.deployment, six.batch) == ("tp-ep on 6 GPUs", 6.0)


def test_expected_where_nothing_fits_or_the_kv_layout_is_unknown() -> None:
    none = E.expected(FLASH, "h200", 1, decoding(), claimed=1.0)
    assert (none.tok_s_per_gpu, none.ratio, none.deployment, none.terms) == (
        0.0,
        math.inf,
        "none",
        {},
    )
    assert none.notes == ("no deployment holds the weights and one sequence's KV",)
    m = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    m.kv_cache.owning_layers = m.kv_cache.compression_ratios = None
    ctx = E.expected(m, "gb300", 8, decoding(decode_context=1000, concurrency=8), claimed=1.0)
    assert len(ctx.notes) == 1 and "not counted" in ctx.notes[0]
    assert E.expected(m, "gb300", 8, decoding(concurrency=8), claimed=1.0).notes == ()


def test_context_of_a_layout_given_relative_to_another(flash) -> None:
    rel = catalogs.load_model("deepseek-v4-flash").model_copy(deep=True)
    rel.kv_cache.compression_ratios = rel.kv_cache.owning_layers = None
    rel.kv_cache.relative_to = catalogs.KvRelative(model=FLASH, factor=2.0, approximate=True)
    own = E._context(flash, 1000.0, "decode", "fp4")
    assert all(x > 0 for x in own)
    assert E._context(rel, 1000.0, "decode", "fp4") == tuple(2.0 * x for x in own)
    assert E._context(rel, 1000.0, "decode", None) == (0.0, 0.0, 0.0, 0.0)
    assert E._context(flash, 0.0, "decode", "fp4") == (0.0, 0.0, 0.0, 0.0)
    assert E._context(flash, 1000.0, "decode", None) == (0.0, 0.0, 0.0, 0.0)
    # the relative model's notes say how its context was costed
    e = E.expected(rel, "gb300", 8, decoding(decode_context=1000, concurrency=8), claimed=1.0)
    assert len(e.notes) == 1 and "2x DeepSeek-V4.1-Flash's (approximate)" in e.notes[0]


def _linear_step(seconds_per_sequence: float):
    """A decode step taking ``seconds_per_sequence`` x the batch (to read the TPOT search)."""
    return lambda b: E.Step("dp-ep", b, {}, seconds_per_sequence * b, 0.0)


def test_tpot_batch_is_the_largest_batch_within_the_limit() -> None:
    # 1 ms a sequence, 10 ms TPOT: 10 sequences; keeping 2 tokens a step: 20
    assert E._tpot_batch(_linear_step(1e-3), 100, 10.0, 1.0) == 10
    assert E._tpot_batch(_linear_step(1e-3), 100, 10.0, 2.0) == 20
    assert E._tpot_batch(_linear_step(1e-3), 100, 2.0, 1.0) == 2
    assert E._tpot_batch(_linear_step(1e-3), 100, 1.0, 1.0) == 1  # exactly at the limit
    assert E._tpot_batch(_linear_step(1e-3), 100, 0.5, 1.0) == 0.0  # not even one
    # 1 us a sequence, 1 ms: 1,000, found to within 2 % from below
    big = E._tpot_batch(_linear_step(1e-6), 4096, 1.0, 1.0)
    assert 980 <= big <= 1000


def test_for_check_derives_at_least_one_decoding_sequence() -> None:
    from rackbook.physics import check

    # OSL 1: no decode stage, Little's law gives 0 decoding: one is read
    c = check.check_claim(FLASH, "gb300", 4, 1000.0, isl=8192, osl=1, batch=16)
    e = E.for_check(c, tpot_ms=50, ttft_s=2)
    assert e.batch == 1.0 and "derived" in e.batch_text
    # without a TTFT (or a TPOT) the clients' concurrency is the batch
    assert E.for_check(c, tpot_ms=50).batch == 16 and E.for_check(c, ttft_s=2).batch == 16
    assert e.fit == E.load_fit().source and E.for_check(c, fit=BARE).fit == "prior"


def test_dense_gemms_and_attention_by_hand_where_compute_binds(eff, gb300, flash) -> None:
    """At 4,096 sequences on 4 GPUs the dense GEMMs outlast the dense-weight read: 2 x dense
    parameters / tp x tokens / FLOP/s; attention is tokens x its FLOPs / tp at bf16; a prefill
    token is 2 x the dense parameters and its attention, both at the GPU's FLOP/s."""
    split = roofline.weight_split(flash, "decode")
    flops = attainable.dense_flops(eff, gb300, split.dense_dtype)
    bf16 = attainable.dense_flops(eff, gb300, "bf16")
    stream = eff.stream * gb300.hbm_bandwidth_bytes_per_s
    w = Workload(decode_context=10_000, verify_tokens=2, tokens_per_step=1.5)
    a_flops = E._context(flash, 10_000.0, "decode", w.kv_dtype)[3]
    assert a_flops > 0
    for tp in (1, 2, 4):
        s = E.decode_step(flash, gb300, 4, 4096, eff, BARE, w, tp=tp)
        toks = 4096 / (4 // tp) * 2  # sequences of the busiest group x verified tokens
        gemm = 2 * split.dense_params / tp * toks / flops
        assert gemm > split.dense_bytes / tp / stream  # compute binds at this batch
        assert s.parts["dense"] == pytest.approx(gemm, rel=1e-12)
        assert s.parts["attention"] == pytest.approx(toks * a_flops / tp / bf16, rel=1e-12)
    pre = roofline.weight_split(flash, "prefill")
    work = Workload(prefill_prefix=100_000)
    p = E.prefill_token(flash, gb300, 4, eff, BARE, work)
    p_flops = E._context(flash, 100_000.0, "prefill", work.kv_dtype)[3]
    dense = 2 * pre.dense_params / attainable.dense_flops(eff, gb300, pre.dense_dtype)
    assert p.parts["dense"] == pytest.approx(dense, rel=1e-12)
    assert p.parts["attention"] == pytest.approx(p_flops / bf16, rel=1e-12)
