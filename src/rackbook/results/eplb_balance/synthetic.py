"""eplb-balance's SYNTHETIC default trace: the routing model calibrated to the claim's "before",
written with its provenance by ``python -m rackbook.results.eplb_balance`` (env/record)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.importers.points import empty_table
from rackbook.core.provenance import new_run_info
from rackbook.core.traces import Trace, read_run, write_trace
from rackbook.errors import InputError
from rackbook.inputs.claims import Registry, load_claims
from rackbook.physics import eplb

BEFORE = "eplb-balance.before"
AFTER = "eplb-balance.after"
RECOVERED = "eplb-balance.recovered"
#: The command that regenerates the default trace (recorded in run.json).
RECORD_COMMAND = "bash env/record/eplb-balance.sh"
#: The claim whose value the synthetic skew is calibrated to.
CALIBRATION_CLAIM = BEFORE


@dataclass(frozen=True)
class Spec:
    """The synthetic default trace's layout (topology.yaml's decode DEP64), batch per rank,
    decode steps drawn and seed."""

    model: str = "deepseek-v4.1-flash"
    ep_size: int = 64
    redundant: int = 64
    batch_per_rank: int = 64
    windows: int = 12
    seed: int = 0


@dataclass(frozen=True)
class Shape:
    """MoE layers, routed experts and experts per token of a model."""

    num_layers: int
    num_experts: int
    top_k: int


def model_shape(model: str = "deepseek-v4.1-flash") -> Shape:
    """The MoE shape from the model catalog; every layer where ``moe.num_moe_layers`` is null."""
    from rackbook.inputs.catalogs import load_model

    m = load_model(model)
    layers = m.moe.num_moe_layers or m.architecture.num_layers
    if not layers or not m.moe.num_routed_experts or not m.moe.experts_per_token:
        raise InputError(m.file, "moe", "the model catalog lacks layers, experts or top-k")
    return Shape(int(layers), int(m.moe.num_routed_experts), int(m.moe.experts_per_token))


def tokens_per_step(batch_per_rank: int, ep_size: int, top_k: int) -> int:
    """Token-expert assignments per MoE layer in one decode step: batch x ranks x top-k."""
    return int(batch_per_rank) * int(ep_size) * int(top_k)


def redundant_for(ep_size: int, num_experts: int, extra_per_rank: int = 1) -> int:
    """Redundant experts giving every rank ``ceil(experts / ep) + extra_per_rank`` slots."""
    return int(ep_size) * (math.ceil(num_experts / ep_size) + int(extra_per_rank)) - num_experts


def calibrate(
    spec: Spec = Spec(), target: float | None = None, registry: Registry | None = None
) -> dict[str, Any]:
    """Skew at which static placement scores ``target`` (default: the claim's) on one step."""
    shape = model_shape(spec.model)
    tgt = float((registry or load_claims()).value(CALIBRATION_CLAIM) if target is None else target)
    return eplb.calibrate_skew(
        tgt,
        spec.ep_size,
        num_layers=shape.num_layers,
        num_experts=shape.num_experts,
        tokens_per_layer=tokens_per_step(spec.batch_per_rank, spec.ep_size, shape.top_k),
        seed=spec.seed,
        redundant=spec.redundant,
        windows=1,
    )


_KEYS = ("window", "layer", "expert")


def loads_table(loads: np.ndarray) -> pd.DataFrame:
    """``(windows, layers, experts)`` tokens as the trace's ``expert_load`` table."""
    arr = np.asarray(loads)
    idx = {k: i.ravel().astype(np.int64) for k, i in zip(_KEYS, np.indices(arr.shape), strict=True)}
    return pd.DataFrame(idx | {"tokens": arr.ravel().astype(np.float64)})


def build_default_trace(spec: Spec = Spec()) -> Trace:
    """The SYNTHETIC default trace: ``spec.windows`` steps drawn at the calibrated skew."""
    shape = model_shape(spec.model)
    cal = calibrate(spec)
    n = tokens_per_step(spec.batch_per_rank, spec.ep_size, shape.top_k)
    loads, meta = eplb.synthetic_loads(
        shape.num_layers, shape.num_experts, n, cal["skew"], spec.seed, spec.windows
    )
    window = "one decode forward pass (engine step)"
    run = new_run_info(
        kind="synthetic",
        commands=[RECORD_COMMAND],
        parameters=asdict(spec) | asdict(shape) | {"tokens_per_step": n, "window": window},
        engine={"name": "none", "version": None},
        generator={
            "name": eplb.SYNTHETIC_GENERATOR,
            "seed": spec.seed,
            "skew": cal["skew"],
            "calibrated": True,
            "calibration": {
                "quantity": "vLLM balancedness of static placement, one decode step (window 0)",
                "target": cal["target"],
                "target_claim": CALIBRATION_CLAIM,
                "achieved": cal["balancedness_static"],
                "ep_size": spec.ep_size,
                "redundant": spec.redundant,
            },
            "model": meta["note"],
        },
        notes=(
            "SYNTHETIC routing, not measured: no DeepSeek-V4.1-Flash routing statistics are "
            "public. Zipf-like popularity per layer over a seeded permutation, multinomial "
            f"draws per decode step; skew calibrated so that static placement at EP "
            f"{spec.ep_size} ({spec.redundant} redundant) has balancedness {cal['target']:g} "
            f"(claim {CALIBRATION_CLAIM}). Balance after EPLB is a prediction of this model."
        ),
    )
    extra = {"expert_load": loads_table(loads)}
    return Trace(run, empty_table("requests"), empty_table("itl"), empty_table("points"), extra)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rackbook.results.eplb_balance OUT [--seed N] ...``: write the trace."""
    ap = argparse.ArgumentParser(
        prog="python -m rackbook.results.eplb_balance", description=__doc__
    )
    ap.add_argument("out", help="trace folder to write")
    for f in fields(Spec):  # --model, --ep-size, ... with Spec's defaults
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    a = ap.parse_args(argv)
    spec = Spec(**{f.name: getattr(a, f.name) for f in fields(Spec)})
    try:
        path = write_trace(a.out, build_default_trace(spec))
    except InputError as err:
        print(f"error: {err}")
        return 2
    gen = read_run(path)["generator"]
    print(
        f"wrote {path}: skew {gen['skew']:.6f}, static balancedness "
        f"{gen['calibration']['achieved']:.4f} (target {gen['calibration']['target']:g})"
    )
    return 0
