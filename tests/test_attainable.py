"""The attainable estimate (:mod:`rackbook.physics.attainable`): every number against a hand
calculation from the shipped H200 reference calibration (``data/calibration/h200-reference``,
the figures of ``h200-kernels.reference.json``) and the catalogs."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import numpy as np
import pytest

from rackbook.core import calibration
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.physics import attainable as at
from rackbook.physics import check

V41 = "deepseek-v4.1-flash"
STREAM = 4.333553167840999 / 4.8  # HBM read 4.334 TB/s of 4.8: 90.3 %
FP8 = 1450.5308318006275 / 1979  # FP8 8192^3: 1,451 of 1,979 TFLOP/s: 73.3 %
BF16 = 789.0301766123382 / 989  # 80 %
EXPERT_FP8 = 3 * 5120 * 2304  # 35,389,440 B (and params) per expert at FP8
EXPERT_FP4 = 18_800_640  # B per DeepSeek-V4.1-Flash expert (FP4 + scales)


@pytest.fixture(scope="module")
def eff():
    return at.efficiencies()


@pytest.fixture(scope="module")
def v41():
    return catalogs.as_model(V41)


def test_fractions_of_the_data_sheet(eff):
    assert eff.stream == pytest.approx(STREAM, rel=1e-9)
    assert eff.dense == pytest.approx({"fp8": FP8, "bf16": BF16}, rel=1e-9)
    assert eff.hopper and "H200" in eff.label


def test_expert_gemm_keeps_its_fraction_of_the_roofline(eff, v41):
    g = catalogs.as_gpu("gb300")
    # 1 token: roofline 35.39 MB / 4.8 TB/s = 7.373 us, timed 13.867 us (53.2 %); on a GB300
    # the FP4 expert's roofline is 18.80 MB / 8 TB/s = 2.350 us: 2.350 / 0.532 = 4.420 us
    one = 13.867e-6 * (EXPERT_FP4 / 8e12) / (EXPERT_FP8 / 4.8e12)
    assert at.expert_seconds(eff, v41, g, 1) == pytest.approx(one, rel=1e-9)
    # 4,096 tokens: compute on both GPUs: 243.377 us x (FLOP / 15 PF) / (FLOP / 1.979 PF) =
    # 243.377 x 1,979 / 15,000 = 32.11 us (FP4 on Blackwell, at the fraction FP8 reached)
    assert at.expert_seconds(eff, v41, g, 4096) == pytest.approx(243.377e-6 * 1979 / 15000)
    # Hopper has no FP4 tensor cores: FP4 bytes, FP8 peak; 1 token: 13.867 x 18.80 / 35.39
    h = catalogs.as_gpu("h200")
    assert at.expert_seconds(eff, v41, h, 1) == pytest.approx(
        13.867e-6 * EXPERT_FP4 / EXPERT_FP8, rel=1e-9
    )


def test_scan_takes_the_latency_or_the_batch_at_the_best_rate(eff):
    # best rate: 875,520 keys / 311.504 us = 2.8106e9 keys/s; one sequence of 50,000 keys:
    # 119.325 us x 50,000 / 131,072 (proportional below the fewest keys timed) = 45.52 us
    rate = 875_520 / 311.504e-6
    assert at.scan_seconds(eff, 50_000, 1) == pytest.approx(119.325e-6 * 50_000 / 131_072)
    # 64 sequences of 50,000 keys: 3.2e6 keys at 2.8106e9/s = 1,138.5 us
    assert at.scan_seconds(eff, 50_000, 64) == pytest.approx(64 * 50_000 / rate)
    assert at.scan_seconds(eff, 262_144, 1) == pytest.approx(153.171e-6)  # a timed size


def test_decode_step_four_users_on_four_gb300(eff, v41):
    """4 sequences, 4 GB300, no context, dp-ep: each GPU one sequence.
    dense weights 7,506,534,400 B / (0.9028 x 8 TB/s) = 1,039.3 us (their GEMMs, 2 x 7.5065e9
    FLOP / (0.733 x 5 PF) = 4.1 us, are shorter); experts: 4 tokens touch 384 x (1 - (378/384)^4)
    = 23.44 distinct experts a layer, 5.861 per GPU, 24 / 23.44 = 1.024 tokens each: 4.420 us
    each (the 1- and 4-token times, 13.867 and 13.806 us, interpolated: 13.8665): 40 x 5.861 x
    4.420 = 1,036.2 us; NVLink: 40 layers x 1 token x 6 x 3/4 x 5,120 x 3 B / 900 GB/s =
    3.072 us. Step 2,078.6 us: 4 tokens / 2,078.6 us / 4 GPUs = 481.1 tok/s per GPU."""
    g = catalogs.as_gpu("gb300")
    e = at.decode_step(v41, g, 4, 4, eff)
    dense = 7_506_534_400 / (STREAM * 8e12)
    distinct = 384 * (1 - (1 - 6 / 384) ** 4)
    t_exp = (13.867 + (13.806 - 13.867) * (24 / distinct - 1) / 3) * 1e-6
    t_exp *= (EXPERT_FP4 / 8e12) / (EXPERT_FP8 / 4.8e12)
    experts = 40 * distinct / 4 * t_exp
    link = 40 * 6 * 0.75 * 5120 * 3 / 900e9
    assert e.parts == pytest.approx(
        {"dense weights": dense, "experts": experts, "NVLink": link}, rel=1e-9
    )
    assert e.tok_s_per_gpu == pytest.approx(4 / (dense + experts + link) / 4, rel=1e-9)
    assert e.tok_s_per_gpu == pytest.approx(481.1, abs=0.1)


def test_prefill_token_uncached_on_the_rack(eff, v41):
    """A new token on 72 GB300 with no prefix: dense GEMMs 2 x 3,753,267,200 / (0.7330 x
    5 PF) = 2.0482 us; experts 20 layers x 6 x 32.11 us / 4,096 tokens = 0.9407 us; NVLink
    20 x 6 x 71/72 x 5,120 x 3 B / 900 GB/s = 2.0196 us: 5.0085 us, 199,660 new tok/s."""
    g = catalogs.as_gpu("gb300")
    e = at.prefill_token(v41, g, 72, eff)
    want = {
        "dense GEMMs": 2 * 3_753_267_200 / (FP8 * 5e15),
        "experts": 20 * 6 * 243.377e-6 * 1979 / 15000 / 4096,
        "NVLink": 20 * 6 * 71 / 72 * 5120 * 3 / 900e9,
    }
    assert e.parts == pytest.approx(want, rel=1e-9)
    assert e.tok_s_per_gpu == pytest.approx(1 / sum(want.values()), rel=1e-9)


def test_every_reading_words_the_ratio_both_ways():
    # the probe 4 x 826 on 4 GB300: possible against the bound (0.31x), and 826 / 481.1 =
    # 1.72x what measured kernels reach with data-parallel attention: the dense weights bind
    c = check.check_claim(V41, "gb300", 4, 3304, per="total", batch=4)
    a = at.for_check(c)
    assert c.verdict == "possible"
    assert a.ratio == pytest.approx(826 / 481.1, rel=2e-4) and a.binding == "dense weights"
    assert a.text.startswith(
        "826 output tok/s per GPU needs kernels at 172 % of the stream bandwidth measured"
    )
    assert "attention data-parallel + experts expert-parallel on 4 GPUs" in a.text
    assert "measured on Hopper (NVIDIA H200) applied to GB300 (Blackwell)" in a.calibration
    # the rack's total, 13,250 per GPU, is below what measured kernels reach (ratio < 1)
    r = at.for_check(check.check_claim(V41, "gb300", 72, 954_000, per="total"))
    assert r.ratio < 1 and "x what measured kernels reach for this workload" in r.text
    # an H200 figure on an H200 calibration is not labelled as borrowed
    h = at.for_check(check.check_claim(V41, "h200", 8, 3_000))
    assert "applied to" not in h.calibration


def test_one_user_defaults_to_tensor_parallel(eff, v41):
    """1 sequence on 4 B300, acceptance 3.51 (6 verified): tp-ep (dp-ep would leave 3 GPUs
    without a sequence). Dense 7.5065 GB / 4 / (0.9028 x 8 TB/s) = 259.8 us; experts 6 tokens
    touch 34.62 a layer, 8.656 per GPU at 6 x 6 / 34.62 = 1.040 tokens each (4.4198 us): 40 x
    8.656 x 4.4198 = 1,530.3 us; drafter 0.52 GB / 4 / 7.2225 TB/s = 18.0 us; NVLink two
    all-reduces a layer of 6 x 5,120 x 2 B, 2 x 3/4 each way: 40 x 2 x 2 x 0.75 x 61,440 B /
    900 GB/s = 8.19 us. Step 1,816.3 us: 3.51 / 1,816.3 us / 4 = 483.1 tok/s per GPU."""
    c = check.check_claim(V41, "b300", 4, 4000, per="total", batch=1, tokens_per_step=3.51)
    a = at.for_check(c)
    assert "tensor-parallel" in a.deployment and "1 sequence on 4 GPUs" in a.deployment
    e = a.estimates["decode"]
    assert e.parts["dense weights"] == pytest.approx(7_506_534_400 / 4 / (STREAM * 8e12))
    assert e.parts["drafter"] == pytest.approx(520e6 / 4 / (STREAM * 8e12))
    assert e.parts["NVLink"] == pytest.approx(40 * 2 * 2 * 0.75 * 6 * 5120 * 2 / 900e9)
    assert e.tok_s_per_gpu == pytest.approx(483.1, abs=0.2)
    assert a.ratio == pytest.approx(1000 / e.tok_s_per_gpu)  # 2.07x: not reached
    dp = at.for_check(c, deployment="dp-ep")
    assert "data-parallel" in dp.deployment and dp.tok_s_per_gpu < e.tok_s_per_gpu


def test_kv_capacity_limits_the_batch():
    # 1,000,000-token sequences on 72 GB300, dp-ep: (0.9 x 288 GB - 12.43 GB weights per GPU,
    # kept in HBM) / 892.7 MB = 276 per GPU; 280 per GPU do not fit this deployment, though the
    # bound (all weights spread and held in Grace memory: 290 per GPU) lets them through
    c = check.check_claim(V41, "gb300", 72, 100, context=1_000_000, batch=72 * 280)
    assert c.verdict == "possible"
    a = at.for_check(c)
    assert a.ratio == float("inf") and a.tok_s_per_gpu == 0
    assert "measured kernels cannot reach it: the batch does not fit in this deployment" in a.text
    assert "(dense on every GPU, experts spread; each sequence's KV on its GPU): 19,872" in a.text
    n = check.capacity(
        catalogs.as_model(V41), catalogs.as_gpu("gb300"), 72, context=1_000_000, tp=1, most=1e9
    ).sequences
    assert n == 276 * 72 == (259.2e9 - 12_429_004_800) // 892_703_360 * 72


def test_a_cpu_calibration_has_no_fractions(tmp_path):
    cal = calibration.read_calibration()
    run = dict(cal.run, device="cpu", gpu="some CPU", spec=None)
    out = calibration.write_calibration(tmp_path / "cpu", run, cal.kernels)
    with pytest.raises(InputError, match="no data sheet"):
        at.efficiencies(calibration.read_calibration(out))


def test_check_json_carries_the_attainable_reading(run_cli, tmp_path):
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "4", "--tok-s", "3304", "--per", "total"]
    code, out, _ = run_cli("check", *argv, "--concurrency", "4", "--json")
    assert code == 0
    p = json.loads(out.splitlines()[-1])["physics"]
    assert p["verdict"] == "possible"
    a = p["attainable"]
    assert {"tok_s_per_gpu", "ratio", "deployment", "calibration"} <= set(a)
    assert a["ratio"] == pytest.approx(826 / 481.1, rel=2e-4)
    assert "  attainable: 826 output tok/s per GPU needs kernels at 172 %" in out
    # --calibration DIR: a copy of the shipped one reads the same; a CPU one gives none
    shutil.copytree(calibration.SHIPPED, tmp_path / "cal")
    code, out2, _ = run_cli(
        "check", *argv, "--concurrency", "4", "--calibration", str(tmp_path / "cal"), "--json"
    )
    assert json.loads(out2.splitlines()[-1])["physics"]["attainable"]["ratio"] == a["ratio"]
    cal = calibration.read_calibration()
    run = dict(cal.run, device="cpu", gpu="some CPU", spec=None)
    calibration.write_calibration(tmp_path / "cpu", run, cal.kernels)
    code, out3, _ = run_cli(
        "check", *argv, "--concurrency", "4", "--calibration", str(tmp_path / "cpu"), "--json"
    )
    p3 = json.loads(out3.splitlines()[-1])["physics"]
    assert code == 0 and p3["verdict"] == "possible" and p3["attainable"]["ratio"] is None
    assert "attainable: none: no data sheet" in out3


def test_cached_share_unknown_gives_the_threshold(run_cli):
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "72", "--tok-s", "954000", "--per", "gpu"]
    argv += ["--counted", "total", "--isl", "100000", "--osl", "1000"]
    code, out, _ = run_cli("check", *argv, "--cached-share", "unknown", "--json")
    assert code == 0
    p = json.loads(out.splitlines()[-1])["physics"]
    # the bound's threshold, by hand in tests/test_check.py: 64.0 %
    assert p["verdict"] == "undetermined"
    assert p["threshold"]["cached_share"] == pytest.approx(0.640, abs=0.002)
    assert "possible from 64 % of the input cached" in p["reason"]
    t = p["attainable"]["cached_share_threshold"]
    assert t is None or t > p["threshold"]["cached_share"]  # kernels need more cached
    # not given: 0, printed as assumed
    code, out, _ = run_cli("check", *argv)
    assert "cached share 0 % (assumed)" in out
    assert "assumed: no input cached (--cached-share not given" in out


def test_deployment_flag_is_stated(run_cli):
    argv = ["--model", V41, "--gpu", "gb300", "--gpus", "4", "--tok-s", "3304", "--per", "total"]
    code, out, _ = run_cli("check", *argv, "--concurrency", "4", "--deployment", "tp-ep", "--json")
    a = json.loads(out.splitlines()[-1])["physics"]["attainable"]
    assert code == 0 and a["deployment"].startswith(
        "attention tensor-parallel + experts expert-parallel on 4 GPUs (as asked)"
    )
    # tensor-parallel attention reads a quarter of the dense weights per GPU: more than dp-ep
    assert a["tok_s_per_gpu"] > 481.1


def test_the_efficiencies_kept_on_disk_read_back_exactly():
    # what `rackbook check` reads without pandas is the calibration's own numbers, arrays too
    e = at._efficiencies(None)  # noqa: SLF001
    doc = at._to_json(e)  # noqa: SLF001
    assert json.loads(json.dumps(doc)) == doc and doc["stream"] == pytest.approx(0.9, abs=0.01)
    back = at._from_json(doc)  # noqa: SLF001
    assert (back.label, back.dense, back.spec_flops, back.shapes) == (
        e.label, e.dense, e.spec_flops, e.shapes
    )  # fmt: skip
    pairs = [*zip(e.scan + e.attention, back.scan + back.attention, strict=True)]
    pairs += [p for k in e.experts for p in zip(e.experts[k], back.experts[k], strict=True)]
    assert all(b.dtype == np.float64 and np.array_equal(a, b) for a, b in pairs)


# ------------------------------------------------------------------ edges (issue 39, item 7)


def test_the_calibration_read_by_hand():
    """The shipped reference folder read afresh (not the copy kept on disk): the data sheet in
    run.json, the best HBM read and dense GEMM rates against it, both expert curves, the scan and
    attention timings and the shapes they were timed at."""
    e = at._efficiencies(None)  # noqa: SLF001
    assert (e.gpu, e.spec_bw) == ("NVIDIA H200", 4.8e12)
    assert e.label == calibration.read_calibration().label and "H200" in e.label
    assert e.spec_flops == {"bf16": 989e12, "fp8": 1979e12}
    assert e.stream == pytest.approx(STREAM, rel=1e-12)
    assert e.dense == pytest.approx({"fp8": FP8, "bf16": BF16}, rel=1e-12)
    assert set(e.experts) == {"fp8", "bf16"}
    tokens = [1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    for dtype, width, first, last in (("fp8", 1, 13.867, 243.377), ("bf16", 2, 23.944, 436.632)):
        sizes, secs, nbytes, flops = e.experts[dtype]
        assert sizes.tolist() == tokens and nbytes.tolist() == [EXPERT_FP8 * width] * 11
        assert (secs[0], secs[-1]) == pytest.approx((first * 1e-6, last * 1e-6), rel=1e-12)
        assert flops.tolist() == [2 * t * EXPERT_FP8 for t in tokens]
    assert e.scan[0].tolist() == [131_072, 262_144, 524_288, 875_520]
    assert e.scan[1] == pytest.approx([119.325e-6, 153.171e-6, 225.907e-6, 311.504e-6])
    assert e.attention[0].tolist() == [131_072, 875_520]
    assert e.attention[1] == pytest.approx([24.816e-6, 25.12e-6])
    assert e.shapes == calibration.REF_SHAPES
    assert at._to_json(e) == at._to_json(at.efficiencies())  # noqa: SLF001


@pytest.mark.parametrize(
    "family", ["hbm_read", "dense_gemm", "expert_gemm", "indexer_scan", "sparse_attention"]
)
def test_a_calibration_without_a_kernel_family_names_it(tmp_path, family):
    cal = calibration.read_calibration()
    kept = cal.kernels[cal.kernels["family"] != family].reset_index(drop=True)
    out = calibration.write_calibration(tmp_path / "part", cal.run, kept)
    with pytest.raises(InputError) as err:
        at.efficiencies(calibration.read_calibration(out))
    assert (err.value.file, err.value.field) == (str(out), "kernels")
    assert err.value.problem == f"no {family} rows"
    # a calibration not read from a folder is named as such
    with pytest.raises(InputError) as err:
        at.efficiencies(calibration.Calibration(cal.run, kept, None))
    assert (err.value.file, err.value.field) == ("calibration", "kernels")


def test_a_calibration_of_one_expert_dtype_and_one_data_sheet_figure(tmp_path, v41):
    """FP8 expert GEMMs only, and no BF16 figure on the data sheet: the BF16 dense GEMMs have no
    fraction, and every expert reads the FP8 curve."""
    cal = calibration.read_calibration()
    k = cal.kernels
    kept = k[~((k["family"] == "expert_gemm") & (k["dtype"] == "bf16"))].reset_index(drop=True)
    spec = {"hbm_TBps": 4.8, "fp8_dense_TFLOPs": 1979}
    out = calibration.write_calibration(tmp_path / "fp8", dict(cal.run, spec=spec), kept)
    e = at.efficiencies(calibration.read_calibration(out))
    assert e.spec_flops == {"fp8": 1979e12} and set(e.experts) == {"fp8"}
    assert e.dense == pytest.approx({"fp8": FP8}, rel=1e-12)
    bf16 = v41.model_copy(
        update={"weights": v41.weights.model_copy(update={"routed_expert_dtype": "bf16"})}
    )
    assert at.expert_dtypes(e, bf16) == ("bf16", "fp8")


def test_a_cpu_calibration_names_its_data_sheet(tmp_path):
    cal = calibration.read_calibration()
    run = dict(cal.run, device="cpu", gpu="some CPU", spec=None)
    out = calibration.write_calibration(tmp_path / "cpu", run, cal.kernels)
    with pytest.raises(InputError) as err:
        at.efficiencies(calibration.read_calibration(out))
    assert (err.value.file, err.value.field) == (str(out), "run.json.spec")
    assert err.value.problem.startswith("no data sheet (a CPU calibration has none)")


@pytest.mark.parametrize(
    ("gpu", "hopper"),
    [
        ("NVIDIA H100 80GB HBM3", True),
        ("NVIDIA H200", True),
        ("nvidia h800", True),
        ("NVIDIA H20", True),
        ("NVIDIA GH200 480GB", True),
        ("NVIDIA B200", False),
        ("NVIDIA GB300", False),
    ],
)
def test_hopper_parts_by_name(eff, gpu, hopper):
    assert replace(eff, gpu=gpu).hopper is hopper


def test_interpolation_of_a_timed_curve():
    """Proportional below the first size (a time per key or token), linear between sizes, and
    past the last size the last segment's slope (never falling)."""
    xs, ys = np.array([1.0, 2.0, 4.0]), np.array([10.0, 14.0, 30.0])
    interp = at._interp  # noqa: SLF001
    assert [interp(x, xs, ys) for x in (0.5, 1.0, 1.5, 3.0, 4.0, 6.0)] == [
        5.0, 10.0, 12.0, 22.0, 30.0, 46.0
    ]  # fmt: skip
    falling = np.array([10.0, 14.0, 12.0])
    assert (interp(3.0, xs, falling), interp(6.0, xs, falling)) == (13.0, 12.0)
    one_x, one_y = np.array([2.0]), np.array([6.0])
    assert (interp(1.0, one_x, one_y), interp(2.0, one_x, one_y), interp(5.0, one_x, one_y)) == (
        3.0, 6.0, 15.0
    )  # fmt: skip


def test_scan_past_the_largest_size_timed_runs_at_the_best_rate(eff):
    """Keys past 875,520 are read at the best rate; a curve whose best rate is not its last
    point shows that the rate, not the last segment, is used past it."""
    rate = 875_520 / 311.504e-6
    assert at.scan_seconds(eff, 2_000_000, 1) == pytest.approx(2_000_000 / rate, rel=1e-12)
    # sizes 100 and 200 keys at 1 and 4 s: best rate 100 keys/s
    e = replace(eff, scan=(np.array([100.0, 200.0]), np.array([1.0, 4.0])))
    assert at.scan_seconds(e, 200, 1) == 4.0  # the time of a size timed
    assert at.scan_seconds(e, 300, 1) == 3.0  # 300 keys at 100 keys/s, not 4 + 3 x 1
    assert at.scan_seconds(e, 150, 1) == 2.5
    assert at.scan_seconds(e, 150, 3) == 4.5  # 450 keys at 100 keys/s: more than one's 2.5


def test_expert_dtype_and_the_curve_it_reads(eff, v41):
    def fmt(routed, dense="fp8"):
        w = v41.weights.model_copy(
            update={
                "routed_expert_dtype": routed,
                "dense_dtype": dense,
                "routed_expert_bytes": None,
            }
        )
        return v41.model_copy(update={"weights": w})

    assert at.expert_dtypes(eff, v41) == ("fp4", "fp8")  # no FP4 curve: FP8's
    assert at.expert_dtypes(eff, fmt("bf16")) == ("bf16", "bf16")
    assert at.expert_dtypes(eff, fmt(None)) == ("fp8", "fp8")  # the dense dtype
    assert at.expert_dtypes(eff, fmt(None, None)) == ("bf16", "bf16")
    only_bf16 = replace(eff, experts={"bf16": eff.experts["bf16"]})
    assert at.expert_dtypes(only_bf16, v41) == ("fp4", "bf16")
    bf16_first = replace(eff, experts={"bf16": eff.experts["bf16"], "fp8": eff.experts["fp8"]})
    assert at.expert_dtypes(bf16_first, v41) == ("fp4", "fp8")  # FP8's whatever the order
    # BF16 experts on an H200: 1 token, 13.867 -> 23.944 us timed; the roofline the same bytes
    # on the same GPU: the timing itself
    h = catalogs.as_gpu("h200")
    assert at.expert_seconds(eff, fmt("bf16"), h, 1) == pytest.approx(23.944e-6, rel=1e-9)
    # and 4,096 tokens, compute-bound at BF16's peak (989 TFLOP/s) on both: 436.632 us
    assert at.expert_seconds(eff, fmt("bf16"), h, 4096) == pytest.approx(436.632e-6, rel=1e-9)


def test_expert_seconds_below_the_fewest_tokens_and_at_other_shapes(eff, v41):
    """Under one token the one-token time; a model of other shapes scales by its roofline against
    the shapes timed, and a calibration that names no shapes is taken at the model's own."""
    g = catalogs.as_gpu("gb300")
    one = at.expert_seconds(eff, v41, g, 1)
    assert at.expert_seconds(eff, v41, g, 0.25) == pytest.approx(one, rel=1e-12)
    v3 = catalogs.as_model("deepseek-v3")  # FP8 experts of 3 x 7,168 x 2,048 = 44,040,192 B
    h = catalogs.as_gpu("h200")
    # 1 token: bandwidth-bound both: 13.867 us x 44.04 MB / 35.39 MB
    assert at.expert_seconds(eff, v3, h, 1) == pytest.approx(
        13.867e-6 * 44_040_192 / EXPERT_FP8, rel=1e-9
    )
    # 4,096 tokens: compute-bound both: 243.377 us x FLOP(v3) / FLOP(timed shapes)
    assert at.expert_seconds(eff, v3, h, 4096) == pytest.approx(
        243.377e-6 * 44_040_192 / EXPERT_FP8, rel=1e-9
    )
    # no shapes: the curve taken as timed at V3's shapes: the times as they stand
    bare = replace(eff, shapes={})
    assert at.expert_seconds(bare, v3, h, 1) == at.expert_seconds(eff, v3, h, 1)  # bytes timed
    assert at.expert_seconds(bare, v3, h, 4096) == pytest.approx(243.377e-6, rel=1e-9)


def test_dense_flops_falls_back_fp8_then_the_best(eff):
    g = catalogs.as_gpu("gb300")
    assert at.dense_flops(eff, g, "fp8") == pytest.approx(FP8 * 5e15, rel=1e-12)
    assert at.dense_flops(eff, g, "bf16") == pytest.approx(BF16 * 2.5e15, rel=1e-12)
    assert at.dense_flops(eff, g, "fp4") == pytest.approx(FP8 * 15e15, rel=1e-12)  # FP8's share
    only_bf16 = replace(eff, dense={"bf16": 0.5})
    assert at.dense_flops(only_bf16, g, "fp4") == pytest.approx(0.5 * 15e15, rel=1e-12)
    assert at.dense_flops(only_bf16, catalogs.as_gpu("h200"), "fp4") == pytest.approx(
        0.5 * 1979e12, rel=1e-12
    )  # no FP4 on Hopper: FP8's peak


def test_nvlink_domain_is_the_largest_system_of_the_gpu():
    assert (at.nvlink_domain("gb300"), at.nvlink_domain("h200")) == (72, 8)
    assert at.nvlink_domain("no-such-gpu") is None


def test_decode_step_reads_the_context(eff, v41):
    """4 sequences of 128,000 tokens on 4 GB300. Index scan: the four index sources hold
    64,000 x 3 + 128,000 keys, each below the fewest keys timed (131,072 in 119.325 us):
    119.325 us x 320,000 / 131,072 = 291.32 us on the H200, x 4.8 / 8 TB/s = 174.79 us.
    Attention: 40 layers x 24.816 us (flat below the sizes timed) x 0.6 = 595.58 us, more than
    the context bytes read (512 rows x 38 consumers x 288 B + 4 x 16,384 candidates x 68 B +
    the window 2,703,360 B = 12,763,136 B: 1.77 us). tp-ep: the dense weights and the scan a
    quarter each, and two all-reduces of 4 tokens a layer in place of dispatch + combine."""
    g = catalogs.as_gpu("gb300")
    w = check.Workload(decode_context=128_000)
    dense = 7_506_534_400 / (STREAM * 8e12)
    experts = at.decode_step(v41, g, 4, 4, eff).parts["experts"]  # no context: as above
    scan = 119.325e-6 * 320_000 / 131_072 * 0.6
    att = 40 * 24.816e-6 * 0.6
    dp = at.decode_step(v41, g, 4, 4, eff, w)
    link = 40 * 6 * 0.75 * 5120 * 3 / 900e9
    want = {"dense weights": dense, "experts": experts, "index scan": scan, "attention": att}
    assert dp.parts == pytest.approx(want | {"NVLink": link}, rel=1e-9)
    assert dp.tok_s_per_gpu == pytest.approx(4 / sum(dp.parts.values()) / 4, rel=1e-12)
    tp = at.decode_step(v41, g, 4, 4, eff, w, "tp-ep")
    allreduce = 40 * 2 * 2 * 0.75 * 4 * 5120 * 2 / 900e9
    want |= {"dense weights": dense / 4, "index scan": scan / 4, "NVLink": allreduce}
    assert tp.parts == pytest.approx(want, rel=1e-9)
    # without a KV dtype no context is read
    bare = at.decode_step(v41, g, 4, 4, eff, replace(w, kv_dtype=None))
    assert set(bare.parts) == {"dense weights", "experts", "NVLink"}


def test_attention_gives_way_to_the_context_reads_at_338_sequences_a_gpu(eff, v41):
    """dp-ep, 128,000 tokens: 12,763,136 B a sequence at 0.9028 x 8 TB/s = 1.767 us against
    the 595.58 us of attention a step: 337 sequences a GPU are attention-bound, 338 read more."""
    g = catalogs.as_gpu("gb300")
    w = check.Workload(decode_context=128_000)
    per_seq = 12_763_136 / (STREAM * 8e12)
    at337 = at.decode_step(v41, g, 4, 4 * 337, eff, w).parts
    at338 = at.decode_step(v41, g, 4, 4 * 338, eff, w).parts
    assert "context reads" not in at337 and at337["attention"] == pytest.approx(
        40 * 24.816e-6 * 0.6
    )
    assert "attention" not in at338 and at338["context reads"] == pytest.approx(338 * per_seq)
    # 338 sequences scan at the best rate: 338 x 320,000 keys / 2.8106e9 keys/s x 0.6
    rate = 875_520 / 311.504e-6
    assert at338["index scan"] == pytest.approx(338 * 320_000 / rate * 0.6, rel=1e-9)


def test_one_gpu_has_no_nvlink_and_a_drafter_reads_its_weights(eff, v41):
    g = catalogs.as_gpu("gb300")
    one = at.decode_step(v41, g, 1, 1, eff)
    assert set(one.parts) == {"dense weights", "experts"}
    assert one.tok_s_per_gpu == pytest.approx(1 / sum(one.parts.values()), rel=1e-12)
    # dp-ep, 6 tokens verified a step keeping 3.51: the drafter's 0.52 GB on each GPU
    w = check.Workload(verify_tokens=6, tokens_per_step=3.51)
    spec = at.decode_step(v41, g, 4, 4, eff, w)
    assert spec.parts["drafter"] == pytest.approx(520e6 / (STREAM * 8e12), rel=1e-9)
    assert spec.tok_s_per_gpu == pytest.approx(4 * 3.51 / 4 / sum(spec.parts.values()))
    # one token a step drafts nothing
    assert "drafter" not in at.decode_step(v41, g, 4, 4, eff, replace(w, verify_tokens=1)).parts


def test_prefill_token_behind_a_prefix(eff, v41):
    """One GB300 (no NVLink), a 128,000-token prefix: attention FLOP of a prefill token
    4,689,231,872 (tests/test_roofline.py) / (0.733 x 5 PF) = 1.2795 us; the prefix's caches
    (15,710,208 B through the 20 encoder layers) read once per chunk of 256 new tokens at
    0.9028 x 8 TB/s: 8.50 ns."""
    g = catalogs.as_gpu("gb300")
    w = check.Workload(prefill_prefix=128_000)
    e = at.prefill_token(v41, g, 1, eff, w)
    want = {
        "dense GEMMs": 2 * 3_753_267_200 / (FP8 * 5e15),
        "experts": 20 * 6 * 243.377e-6 * 1979 / 15000 / 4096,
        "attention FLOP": 4_689_231_872 / (FP8 * 5e15),
        "context reads": 15_710_208 / 256 / (STREAM * 8e12),
    }
    assert e.parts == pytest.approx(want, rel=1e-9)
    assert e.tok_s_per_gpu == pytest.approx(1 / sum(want.values()), rel=1e-12)
    assert e.batch is None and e.phase == "prefill"
    bare = at.prefill_token(v41, g, 1, eff, replace(w, kv_dtype=None))
    assert set(bare.parts) == {"dense GEMMs", "experts", "attention FLOP"}


def test_the_batch_that_fits_a_deployment_exactly(v41):
    """1,000,000-token sequences on 72 GB300, dp-ep: 276 a GPU fit (tests above): 19,872
    sequences are estimated, 19,873 do not fit and read as unreachable."""
    w = check.Workload(decode_context=1_000_000, concurrency=19_872, output_tok_s_per_gpu=100)
    fits = at.estimate(V41, "gb300", 72, w, claimed=100)
    e = fits.estimates["decode"]
    assert e.batch == 19_872 and e.tok_s_per_gpu > 0 and fits.notes == ()
    assert fits.ratio == pytest.approx(100 / e.tok_s_per_gpu, rel=1e-12)
    over = at.estimate(V41, "gb300", 72, replace(w, concurrency=19_873), claimed=100)
    e = over.estimates["decode"]
    assert (e.phase, e.tok_s_per_gpu, e.parts, e.batch) == ("decode", 0.0, {}, 19_873)
    assert e.formula.endswith(
        "(dense on every GPU, experts spread; each sequence's KV on its GPU): 19,872 sequences"
    )
    assert (over.ratio, over.tok_s_per_gpu, len(over.notes)) == (math.inf, 0.0, 1)
    assert over.notes[0].startswith("the batch does not fit in this deployment")
    assert over.notes[0].endswith(": 19,872 sequences")
    # the weights alone overfill one H200: no batch at all
    h = at.estimate(V41, "h200", 1, replace(w, concurrency=None, decode_context=0), claimed=100)
    assert h.ratio == math.inf and h.estimates["decode"].tok_s_per_gpu == 0
    assert "the batch does not fit in this deployment: the weights do not fit" in h.text
    assert (h.to_dict()["ratio"], h.to_dict()["tok_s_per_gpu"]) == (None, 0.0)  # JSON: no inf


def test_without_a_batch_the_best_one_tried(eff, v41):
    """No concurrency: batches 4, 8, ... doubled up to what fits (262,144, the cap of 65,536 a
    GPU) are tried; the best is 131,072 (the last, larger, batch is slower per GPU)."""
    w = check.Workload(output_tok_s_per_gpu=100)
    a = at.estimate(V41, "gb300", 4, w, claimed=100)
    e = a.estimates["decode"]
    g = catalogs.as_gpu("gb300")
    sizes = check.doublings(4.0, 262_144)
    rates = [at.decode_step(v41, g, 4, b, eff, w).tok_s_per_gpu for b in sizes]
    assert e.batch == 131_072 == sizes[rates.index(max(rates))] and rates[-1] < max(rates)
    assert e.tok_s_per_gpu == max(rates)
    assert e.formula.endswith("262,144 sequences)") and "(the best batch within " in e.formula


def test_the_deployment_assumed(v41):
    """Fewer sequences than GPUs: tensor-parallel attention; as many or more, or none given:
    data-parallel; a deployment given is kept."""
    w = check.Workload(output_tok_s_per_gpu=100)
    three = at.estimate(V41, "gb300", 4, replace(w, concurrency=3), claimed=100)
    assert three.deployment_name.startswith("attention tensor-parallel")
    assert three.deployment.endswith("(assumed: 3 sequences on 4 GPUs)")
    four = at.estimate(V41, "gb300", 4, replace(w, concurrency=4), claimed=100)
    assert four.deployment_name == "attention data-parallel + experts expert-parallel on 4 GPUs"
    assert four.deployment.endswith("(assumed: the default for this model on a rack)")
    asked = at.estimate(V41, "gb300", 4, replace(w, concurrency=1), claimed=100, deployment="dp-ep")
    assert (
        asked.deployment.startswith("attention data-parallel") and "(as asked)" in asked.deployment
    )
    assert asked.estimates["decode"].batch == 1


def test_more_gpus_than_one_nvlink_domain_are_noted():
    w = check.Workload(concurrency=73 * 4, output_tok_s_per_gpu=100)
    assert at.estimate(V41, "gb300", 72, replace(w, concurrency=72 * 4), claimed=100).notes == ()
    (note,) = at.estimate(V41, "gb300", 73, w, claimed=100).notes
    assert note.startswith("73 GPUs span more than one NVLink domain of 72")


def test_a_blackwell_calibration_is_not_called_borrowed(tmp_path):
    cal = calibration.read_calibration()
    b = calibration.Calibration(dict(cal.run, gpu="NVIDIA B300"), cal.kernels, cal.path)
    w = check.Workload(concurrency=4, output_tok_s_per_gpu=100)
    a = at.estimate(V41, "gb300", 4, w, claimed=100, calibration=b)
    assert a.calibration == at.efficiencies(b).label and "B300" in a.calibration


def test_phases_share_the_gpus_time(v41):
    """prefill only: one estimate; mixed: the shares of both phases add up."""
    w = check.Workload(
        output_tok_s_per_gpu=100, new_input_tok_s_per_gpu=1000, prefill_prefix=1000,
        decode_context=2000, concurrency=8,
    )  # fmt: skip
    pre = at.estimate(V41, "gb300", 4, w, claimed=1000, phase="prefill")
    assert set(pre.estimates) == {"prefill"}
    p = pre.estimates["prefill"].tok_s_per_gpu
    assert pre.ratio == pytest.approx(1000 / p, rel=1e-12)
    assert pre.tok_s_per_gpu == pytest.approx(1000 / pre.ratio, rel=1e-12)
    mixed = at.estimate(V41, "gb300", 4, w, claimed=1100, phase="mixed")
    d = mixed.estimates["decode"].tok_s_per_gpu
    assert mixed.shares == pytest.approx({"decode": 100 / d, "prefill": 1000 / p}, rel=1e-12)
    assert mixed.ratio == pytest.approx(100 / d + 1000 / p, rel=1e-12)
    # nothing counted: no share, no ratio
    none = at.estimate(V41, "gb300", 4, check.Workload(concurrency=4), claimed=100)
    assert (none.ratio, none.tok_s_per_gpu, none.shares) == (0.0, math.inf, {})


def _reading(ratio: float, estimates: dict, shares: dict, notes: tuple = ()) -> at.Attainable:
    return at.Attainable(
        tok_s_per_gpu=500 / ratio if ratio else math.inf,
        ratio=ratio,
        deployment="D",
        calibration="C",
        claimed_tok_s_per_gpu=500.0,
        counted="output",
        estimates=estimates,
        notes=notes,
        shares=shares,
    )


def test_the_binding_part_weighs_each_phase_by_its_share():
    dec = at.Estimate("decode", 1.0, {"dense weights": 1.0, "experts": 3.0}, 4, "")
    pre = at.Estimate("prefill", 1.0, {"dense GEMMs": 2.0, "NVLink": 2.0}, None, "")
    est = {"decode": dec, "prefill": pre}
    # experts 0.5 x 3/4 = 0.375 against 0.6 x 2/4 = 0.3
    assert _reading(2.0, est, {"decode": 0.5, "prefill": 0.6}).binding == "experts"
    # experts 0.2 x 3/4 = 0.15 against 0.3 twice: the first of equals
    assert _reading(2.0, est, {"decode": 0.2, "prefill": 0.6}).binding == "dense GEMMs"
    # a phase without a share counts whole: 0.75 against 0.3
    assert _reading(2.0, est, {"prefill": 0.6}).binding == "experts"
    empty = at.Estimate("decode", 0.0, {}, 9, "")
    assert _reading(2.0, {"decode": empty}, {}).binding == ""


def test_the_reading_in_words_at_and_past_one():
    dec = {"decode": at.Estimate("decode", 400.0, {"experts": 2.0, "dense weights": 1.0}, 4, "f")}
    at_one = _reading(1.0, dec, {"decode": 1.0})
    assert at_one.text == (
        "500 output tok/s per GPU is 1x what measured kernels reach for this workload (500) (D; C)"
    )
    past = _reading(1.25, dec, {"decode": 1.25})
    assert past.text.startswith(
        "500 output tok/s per GPU needs kernels at 125 % of the expert-GEMM"
    )
    assert past.text.endswith("what they reach for this workload (400) (D; C)")
    odd = {"decode": at.Estimate("decode", 400.0, {"something": 1.0}, 4, "f")}
    assert "at 125 % of the something measured" in _reading(1.25, odd, {}).text
    assert _reading(math.inf, dec, {}, ("first", "last")).text.endswith(
        "cannot reach it: last (D; C)"
    )
    assert "cannot reach it: no attainable estimate (D; C)" in _reading(math.inf, dec, {}).text
    d = past.to_dict()
    assert (d["tok_s_per_gpu"], d["ratio"], d["binding"], d["notes"]) == (
        400.0,
        1.25,
        "experts",
        [],
    )
    assert (d["deployment"], d["calibration"], d["text"]) == ("D", "C", past.text)
    assert d["phases"] == {
        "decode": {
            "tok_s_per_gpu": 400.0, "batch": 4, "seconds": {"experts": 2.0, "dense weights": 1.0},
            "formula": "f",
        }
    }  # fmt: skip


def test_the_least_cached_share_kernels_reach():
    """954,000 total tok/s a GPU on 72 GB300 at 100,000 in / 1,000 out: the bound allows it
    from 64 % cached; measured kernels from 93.4 %: 20 even shares tried, the crossing between
    0.90 and 0.95 bisected to under 0.001: 0.90 + 43/64 x 0.05."""
    kw = dict(per="gpu", counted="total", isl=100_000, osl=1_000)
    assert at.cached_share_threshold(V41, "gb300", 72, 954_000, **kw) == 0.93359375
    # tensor-parallel attention on the rack: not at any share
    assert at.cached_share_threshold(V41, "gb300", 72, 954_000, deployment="tp-ep", **kw) is None
    # the weights overfill one H200: never, though the kernels alone would prefill 100 tok/s
    pre = dict(phase="prefill", isl=1000, osl=100)
    assert at.for_check(check.check_claim(V41, "h200", 1, 100, **pre)).ratio < 0.01
    assert at.cached_share_threshold(V41, "h200", 1, 100, **pre) is None


def test_the_least_cached_share_reads_the_calibration_given(tmp_path):
    cal = calibration.read_calibration()
    run = dict(cal.run, device="cpu", gpu="some CPU", spec=None)
    cpu = calibration.read_calibration(
        calibration.write_calibration(tmp_path / "c", run, cal.kernels)
    )
    with pytest.raises(InputError, match="run.json.spec: no data sheet"):
        at.cached_share_threshold(V41, "gb300", 4, 1000, calibration=cpu, batch=4)


def test_dense_gemms_bind_from_254_tokens_a_gpu(eff, v41):
    """The dense weights' read, 7.5065 GB / (0.9028 x 8 TB/s) = 1,039.3 us, against their GEMMs,
    2 x 7.5065e9 FLOP a token / (0.733 x 5 PF) = 4.0965 us a token: 253 tokens a GPU read,
    254 compute (1,040.5 us). tp-ep: a quarter of both, over all 4 GPUs' tokens."""
    g = catalogs.as_gpu("gb300")
    read, gemm = 7_506_534_400 / (STREAM * 8e12), 2 * 7_506_534_400 / (FP8 * 5e15)
    below = at.decode_step(v41, g, 4, 4 * 253, eff).parts
    above = at.decode_step(v41, g, 4, 4 * 254, eff).parts
    assert "dense GEMMs" not in below and below["dense weights"] == pytest.approx(read)
    assert "dense weights" not in above and above["dense GEMMs"] == pytest.approx(254 * gemm)
    tp_below = at.decode_step(v41, g, 4, 253, eff, deployment="tp-ep").parts
    tp_above = at.decode_step(v41, g, 4, 254, eff, deployment="tp-ep").parts
    assert tp_below["dense weights"] == pytest.approx(read / 4)
    assert tp_above["dense GEMMs"] == pytest.approx(254 * gemm / 4)


def test_fewer_sequences_than_gpus_each_on_its_own_gpu(eff, v41):
    """dp-ep, 2 sequences of 128,000 tokens on 4 GB300: a busy GPU serves and reads one."""
    g = catalogs.as_gpu("gb300")
    e = at.decode_step(v41, g, 4, 2, eff, check.Workload(decode_context=128_000))
    assert e.parts["index scan"] == pytest.approx(119.325e-6 * 320_000 / 131_072 * 0.6)
    assert e.parts["NVLink"] == pytest.approx(40 * 6 * 0.75 * 5120 * 3 / 900e9)
    assert e.tok_s_per_gpu == pytest.approx(2 / 4 / sum(e.parts.values()), rel=1e-12)


def test_scan_between_the_last_two_sizes_timed(eff):
    # 700,000 keys: 225.907 us + (311.504 - 225.907) x 175,712 / 351,232 = 268.73 us, slower
    # than the best rate's 249.06 us
    want = 225.907e-6 + (311.504e-6 - 225.907e-6) * (700_000 - 524_288) / (875_520 - 524_288)
    assert at.scan_seconds(eff, 700_000, 1) == pytest.approx(want, rel=1e-12)


def test_tensor_parallel_capacity_holds_every_sequence_on_every_gpu():
    """tp-ep, 1,000,000-token sequences on 4 GB300: all weights spread, 297.2 GB / 4 = 74.3 GB a
    GPU; (259.2 - 74.3) GB / 892.7 MB = 207 sequences in all (each on every GPU): 207 fit,
    208 do not. Without a batch, at most 65,536 (the cap of one GPU's, not 4 x)."""
    w = check.Workload(decode_context=1_000_000, concurrency=207, output_tok_s_per_gpu=10)
    fits = at.estimate(V41, "gb300", 4, w, claimed=10, deployment="tp-ep")
    assert fits.notes == () and fits.estimates["decode"].tok_s_per_gpu > 0
    (note,) = at.estimate(
        V41, "gb300", 4, replace(w, concurrency=208), claimed=10, deployment="tp-ep"
    ).notes
    assert "(all weights spread; every GPU holds every sequence's compressed KV)" in note
    assert note.endswith(
        "= 207 sequences per GPU (all weights spread; every GPU holds every "
        "sequence's compressed KV): 207 sequences"
    )
    free = at.estimate(
        V41, "gb300", 4, check.Workload(output_tok_s_per_gpu=10), claimed=10, deployment="tp-ep"
    )
    assert free.estimates["decode"].batch == 65_536
    assert free.estimates["decode"].formula.startswith("attention tensor-parallel")


def test_speculative_tokens_count_in_the_dense_gemms(eff, v41):
    """dp-ep, 50 sequences a GPU verifying 6 tokens each: 300 tokens a GPU, past 254: the dense
    GEMMs bind at 300 x 4.0965 us."""
    g = catalogs.as_gpu("gb300")
    w = check.Workload(verify_tokens=6, tokens_per_step=3.51)
    e = at.decode_step(v41, g, 4, 4 * 50, eff, w)
    assert e.parts["dense GEMMs"] == pytest.approx(300 * 2 * 7_506_534_400 / (FP8 * 5e15))


def test_only_the_index_sources_are_scanned(eff):
    """V4-Flash: 41 owning layers, the 21 CSA layers (ratio 4) indexed: 21 scans of 32,000 keys
    at 128,000 tokens, 119.325 us x 32,000 / 131,072 each, x 0.6; its 43 layers' attention."""
    v4 = catalogs.as_model("deepseek-v4-flash")
    w = check.Workload(decode_context=128_000, kv_dtype="fp8")
    e = at.decode_step(v4, catalogs.as_gpu("gb300"), 4, 4, eff, w)
    assert e.parts["index scan"] == pytest.approx(21 * 119.325e-6 * 32_000 / 131_072 * 0.6)
    assert e.parts["attention"] == pytest.approx(43 * 24.816e-6 * 0.6)


def test_context_reads_at_the_kv_dtype_of_the_workload(eff, v41):
    """FP8 rows (528 B) and index keys (132 B): 338 sequences a GPU read 38 x 512 x 528 + 4 x
    16,384 x 132 + 2,703,360 B each; a prefill token behind 128,000 tokens 1.5 x 128,000 x 132
    + 18 x 512 x 528 = 30,210,048 B once per 256."""
    g = catalogs.as_gpu("gb300")
    w = check.Workload(decode_context=128_000, kv_dtype="fp8")
    per_seq = 38 * 512 * 528 + 4 * 16_384 * 132 + 2_703_360
    e = at.decode_step(v41, g, 4, 4 * 338, eff, w)
    assert e.parts["context reads"] == pytest.approx(338 * per_seq / (STREAM * 8e12))
    p = at.prefill_token(v41, g, 1, eff, check.Workload(prefill_prefix=128_000, kv_dtype="fp8"))
    assert p.parts["context reads"] == pytest.approx(30_210_048 / 256 / (STREAM * 8e12))


def test_exactly_one_sequence_fits():
    """DeepSeek-V3 (671 GB at FP8) spread over 5 H200: 134.2 GB a GPU of 135.68 usable leaves
    1.48 GB: one sequence of 30,000 tokens (35,136 B a token at FP8: 1.05 GB) fits."""
    w = check.Workload(decode_context=30_000, kv_dtype="fp8", output_tok_s_per_gpu=1)
    for c in (1, None):
        a = at.estimate(
            "deepseek-v3", "h200", 5, replace(w, concurrency=c), claimed=1, deployment="tp-ep"
        )
        assert a.notes == () and a.estimates["decode"].batch == 1 and math.isfinite(a.ratio)


def test_the_gpu_given_not_its_catalog_entry():
    """A GB300 with twice the HBM bandwidth (16 TB/s): the dense weights read in half the time."""
    g = catalogs.as_gpu("gb300")
    fast = g.model_copy(update={"hbm_bandwidth_bytes_per_s": 16e12})
    c = check.check_claim(V41, fast, 4, 3304, per="total", batch=4)
    e = at.for_check(c).estimates["decode"]
    assert e.parts["dense weights"] == pytest.approx(7_506_534_400 / (STREAM * 16e12))


def test_nvlink_between_two_gpus_and_none_without_it(eff, v41):
    """2 GB300, dp-ep, one sequence each: 40 layers x 6 x 1/2 x 5,120 x 3 B / 900 GB/s a
    direction; 6 tokens verified a step send 6 times that. A GPU with no NVLink sends nothing."""
    g = catalogs.as_gpu("gb300")
    two = at.decode_step(v41, g, 2, 2, eff)
    assert two.phase == "decode" and two.batch == 2
    assert two.parts["NVLink"] == pytest.approx(40 * 6 * 0.5 * 5120 * 3 / 900e9)
    w = check.Workload(verify_tokens=2, tokens_per_step=1.5)
    spec = at.decode_step(v41, g, 2, 2, eff, w)
    assert spec.parts["NVLink"] == pytest.approx(2 * 40 * 6 * 0.5 * 5120 * 3 / 900e9)
    assert spec.parts["drafter"] == pytest.approx(520e6 / (STREAM * 8e12))  # 2 verified
    alone = g.model_copy(update={"nvlink_bandwidth_bytes_per_s": None})
    assert "NVLink" not in at.decode_step(v41, alone, 2, 2, eff).parts


def test_a_model_without_index_keys_scans_nothing(eff):
    """DeepSeek-V3 (MLA, no indexer): context read, no index scan."""
    v3 = catalogs.as_model("deepseek-v3")
    w = check.Workload(decode_context=30_000, kv_dtype="fp8")
    e = at.decode_step(v3, catalogs.as_gpu("h200"), 8, 8, eff, w)
    assert "index scan" not in e.parts and e.parts["attention"] > 0


def test_the_decode_formula_carries_the_numbers(eff, v41):
    e = at.decode_step(v41, catalogs.as_gpu("gb300"), 4, 4, eff)
    assert (
        "4 sequences on 4 GPUs at 0 tokens of context: step = dense weights 1,039 us" in e.formula
    )
    assert "= 2,079 us; 4 x 1 tokens / step / 4 = 481 tok/s per GPU" in e.formula
    assert e.formula.endswith("(23.44 experts a layer touched, 1.02 tokens each)")
