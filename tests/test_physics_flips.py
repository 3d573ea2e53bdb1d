"""Every physics reading can come out each way: edits of a temporary copy of data/claims.yaml
flip them, and the shipped registry keeps its verdicts.

Hand numbers (GB300 in a GB300 NVL72, DeepSeek-V4.1-Flash, data/hardware.yaml and
data/models/deepseek-v4.1-flash.yaml): decode compute ceiling 1 / (2 x 8.4935e9 / 15e15 +
2 x 7.5065e9 / 5e15) = 241,834 tok/s per GPU; prefill (20 encoder layers) 1 / (2 x 4.2467e9 /
15e15 + 2 x 3.7533e9 / 5e15) = 483,667.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rackbook import paths
from rackbook.core.traces import read_trace
from rackbook.inputs.claims import load_claims
from rackbook.results import REGISTRY

#: Physics verdicts of the shipped registry on the shipped traces (after issue 20).
SHIPPED = {
    "decode-parity.gap": "undetermined",
    "rack-scaling.throughput": "undetermined",
    "rack-scaling.speedup": "undetermined",  # on the throughput's basis (issue 28)
    "rack-scaling.cost": "undetermined",
    "prefill-gain.gain": "undetermined",  # no baseline throughput published (issue 28)
    "eplb-balance.before": "possible",
    "eplb-balance.after": "possible",
    "eplb-balance.recovered": "undetermined",
    "context-latency.kv-bytes": "possible",
    "context-latency.delta": "possible",
    "context-latency.delta-pct": "possible",
    "single-user.throughput": "possible",
}


def _registry(tmp_path: Path, claim_id: str, **fields: object):
    """A temporary copy of data/claims.yaml with ``fields`` of ``claim_id`` replaced."""
    raw = yaml.safe_load((paths.DATA / "claims.yaml").read_text(encoding="utf-8"))
    (claim,) = [c for c in raw["claims"] if c["id"] == claim_id]
    claim.update(fields)
    f = tmp_path / "claims.yaml"
    f.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return load_claims(f)


def _physics(result: str, registry=None) -> dict[str, object]:
    an = REGISTRY[result].analyse(read_trace(paths.TRACES / result), registry=registry)
    return {r.claim_id: r for r in an.readings if r.reading == "physics"}


@pytest.mark.parametrize("result", ["rack-scaling", "prefill-gain", "single-user"])
def test_shipped_physics_verdicts_are_unchanged(result):
    got = {k: v.verdict for k, v in _physics(result).items()}
    assert got == {k: v for k, v in SHIPPED.items() if k.startswith(result)}


def test_rack_throughput_above_what_any_cached_share_gives_is_impossible(tmp_path):
    """Counted cache hits cost no GEMM, but each request's new tokens still scan the prefix:
    the most counted tok/s per GPU any share gives is about 3.33e10 (requests of 1,048,576
    tokens, all cached but one new input token and one output token; see
    physics.results_bounds.cached_ceiling). 1e11 tok/s per GPU is above it: impossible on every
    per-GPU reading, where the shipped 954,000 reads undetermined (it fits with >= 64.0 % of
    the input tokens cached at ISL 100,000 / OSL 1,000)."""
    r = _physics("rack-scaling", _registry(tmp_path, "rack-scaling.throughput", value=1e11))
    t = r["rack-scaling.throughput"]
    assert t.verdict == "impossible" and "no cached share reaches it" in t.reason


def test_rack_throughput_5m_per_gpu(tmp_path):
    """5,000,000 tok/s per GPU: 20.7x the decode ceiling and 10.3x the prefill ceiling as
    computed tokens, so impossible as computed tokens; counting cache hits on the whole
    workload (ISL 100,000 / OSL 1,000, assumed) it needs at least 95.0 % of the input tokens
    cached (the prefill GEMMs alone gave 1 - 483,667 / 5,000,000 = 90.3 %, necessary only), a
    share physics does not rule out (InferenceX's agentic totals run near 99 % re-read
    prefix), so the reading stays undetermined while the share is unpublished; with a
    published share of 80 % it is impossible (3.08x the GPUs' time)."""
    reg = _registry(tmp_path, "rack-scaling.throughput", value=5_000_000)
    t = _physics("rack-scaling", reg)["rack-scaling.throughput"]
    assert t.margin == "per GPU as stated: fits only if >= 95 % of the input is cached"
    assert "20.7x the decode ceiling" in t.reason
    assert "10.3x the prefill ceiling" in t.reason
    assert t.verdict == "undetermined" and "at least 95 %" in t.reason
    from rackbook.results import rack_scaling

    an = rack_scaling.analyse(
        read_trace(paths.TRACES / "rack-scaling"), rack_scaling.Params(cached_share=0.8), reg
    )
    t = next(x for x in an.readings if x.claim_id == "rack-scaling.throughput")
    assert t.verdict == "impossible" and "= 3.08x the time" in t.reason


@pytest.mark.parametrize("cost", [2.65, 0.01, 38.96, 10_000.0])
def test_a_cost_never_reads_impossible(tmp_path, cost):
    """$2.65 per GPU-hour (about the catalog's GB300 rental) read "impossible" as token
    revenue; a price is not a physics quantity: undetermined at any figure."""
    r = _physics("rack-scaling", _registry(tmp_path, "rack-scaling.cost", value=cost))
    c = r["rack-scaling.cost"]
    assert c.verdict == "undetermined" and c.margin == "not a physics quantity"


@pytest.mark.parametrize(
    "baseline,verdict",
    [(None, "undetermined"), (200_000.0, "possible"), (240_000.0, "impossible")],
)
def test_prefill_gain_flips(baseline, verdict):
    """A gain has no bound without the baseline's throughput (undetermined); a published
    baseline decides it against the 332,736 new tok/s bound on one GB300 behind 128,000 cached
    tokens: 200,000 x 1.44 = 288,000 (0.866x) possible, 240,000 x 1.44 = 345,600 (1.04x)
    impossible."""
    from rackbook.results import prefill_gain

    an = prefill_gain.analyse(
        read_trace(paths.TRACES / "prefill-gain"), prefill_gain.Params(baseline_tok_s=baseline)
    )
    r = next(x for x in an.readings if x.reading == "physics")
    assert r.verdict == verdict


@pytest.mark.parametrize(
    "value,verdict", [(7_300, "possible"), (8_950, "possible"), (9_000, "impossible")]
)
def test_above_a_peak_is_impossible_whatever_the_margin(tmp_path, value, verdict):
    """The single-user bound on 4 x B300 at 3.51 tokens per step, fewest bytes, is 8,957.88
    tok/s: 9,000 is 100.5 % of it, impossible (a bound is the least time: no margin, where a
    15 % one read it undetermined); 8,950 is 99.9 % and 7,300 81 %, possible."""
    reg = _registry(tmp_path, "single-user.throughput", value=value)
    assert _physics("single-user", reg)["single-user.throughput"].verdict == verdict
