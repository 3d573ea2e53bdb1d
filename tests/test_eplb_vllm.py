"""rackbook.physics.eplb.rebalance_experts against vLLM's own DefaultEplbPolicy.rebalance_experts.

Where the vLLM side runs:
- in this interpreter when ``vllm`` and ``torch`` are importable here;
- otherwise in a subprocess of the live interpreter (``$RACKBOOK_LIVE_PYTHON``, else
  ``.venv-live/bin/python`` of the checkout), arrays exchanged as JSON on stdin/stdout;
- skipped, with the reason shown, when neither is available.

To stay fast (no ``import vllm``: its package ``__init__`` files pull in the config system and
torch.distributed) vLLM's ``vllm/distributed/eplb/policy/{abstract,default}.py`` are loaded by
path under a stand-in parent package; they need only torch and numpy. If that layout is not
found, the runner falls back to ``from vllm.distributed.eplb.policy import DefaultEplbPolicy``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rackbook.live.envfile import live_python
from rackbook.physics import eplb

_RUNNER = r"""
import importlib
import importlib.util
import os
import sys
import types


def _policy():
    spec = importlib.util.find_spec("vllm")
    if spec is not None and spec.submodule_search_locations:
        root = list(spec.submodule_search_locations)[0]
        pdir = os.path.join(root, "distributed", "eplb", "policy")
        if os.path.isfile(os.path.join(pdir, "default.py")):
            pkg = types.ModuleType("_rackbook_vllm_eplb_policy")
            pkg.__path__ = [pdir]
            sys.modules[pkg.__name__] = pkg
            mod = importlib.import_module(pkg.__name__ + ".default")
            return mod.DefaultEplbPolicy, os.path.join(pdir, "default.py")
    from vllm.distributed.eplb.policy import DefaultEplbPolicy

    return DefaultEplbPolicy, "vllm.distributed.eplb.policy"


class _StableNumpy:
    # numpy as vLLM's policy module sees it, except that argsort orders ties by index.

    def __init__(self, np):
        self._np = np

    def __getattr__(self, name):
        return getattr(self._np, name)

    def argsort(self, a, axis=-1, kind=None, order=None):
        return self._np.argsort(a, axis=axis, kind="stable", order=order)


def _phy2log(policy, cases):
    import torch

    out = []
    for case in cases:
        dtype = torch.int64 if case["integer"] else torch.float64
        weight = torch.tensor(case["weight"], dtype=dtype)
        phy2log = policy.rebalance_experts(
            weight, case["num_replicas"], case["num_groups"], case["num_nodes"], case["num_ranks"]
        )
        out.append(phy2log.tolist())
    return out


def run(payload):
    policy, where = _policy()
    module = sys.modules[policy.__module__]
    shipped = _phy2log(policy, payload["cases"])
    np = module.np
    module.np = _StableNumpy(np)
    try:
        stable = _phy2log(policy, payload["cases"])
    finally:
        module.np = np
    return {"phy2log": shipped, "phy2log_stable": stable, "policy_file": where}
"""

_MAIN = "\nimport json, sys\njson.dump(run(json.load(sys.stdin)), sys.stdout)\n"

# (logical experts, groups, nodes, ranks, redundant); branch = hierarchical iff groups % nodes == 0
_CONFIGS = [
    (16, 4, 2, 4, 0),  # hierarchical, 2 nodes
    (16, 4, 2, 4, 4),
    (32, 8, 4, 8, 8),
    (64, 8, 2, 8, 16),
    (24, 6, 3, 6, 6),
    (16, 1, 1, 4, 0),  # hierarchical with one group on one node
    (48, 1, 1, 8, 8),
    (24, 3, 2, 4, 0),  # global: 3 groups over 2 nodes
    (24, 3, 2, 4, 4),
    (30, 5, 2, 6, 6),
    (64, 4, 3, 8, 8),
    (32, 2, 4, 8, 0),  # global: 2 groups over 4 nodes
    (32, 2, 4, 8, 8),
]


def _cases() -> list[dict]:
    rng = np.random.default_rng(20261024)
    cases = []
    kinds = ("ties", "zipf", "float", "sparse", "zipf")
    for i in range(65):
        experts, groups, nodes, ranks, redundant = _CONFIGS[i % len(_CONFIGS)]
        layers = 1 + i % 4
        kind = kinds[i % len(kinds)]
        if kind == "ties":  # small integers: many equal loads, exercises tie-breaking
            w = rng.integers(0, 4, size=(layers, experts))
        elif kind == "zipf":
            w, _ = eplb.synthetic_loads(layers, experts, 5000, 1.2, seed=i)
            w = w[0]
        elif kind == "float":
            w = rng.random((layers, experts)) * 100.0
        else:  # sparse: most experts idle, a few hot
            w = rng.integers(0, 1000, size=(layers, experts)) * (
                rng.random((layers, experts)) < 0.2
            )
        integer = kind != "float"
        cases.append(
            {
                "kind": kind,
                "weight": w.astype(np.int64 if integer else np.float64).tolist(),
                "integer": integer,
                "num_replicas": experts + redundant,
                "num_groups": groups,
                "num_nodes": nodes,
                "num_ranks": ranks,
            }
        )
    return cases


def _have(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _vllm_phy2log(cases: list[dict]) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """vLLM's placements as shipped, then with its argsort made stable (ties by index)."""
    payload = {"cases": cases}
    if _have("vllm") and _have("torch"):
        ns: dict = {}
        exec(compile(_RUNNER, "<vllm eplb runner>", "exec"), ns)
        res = ns["run"](payload)
        where = "in-process"
    else:
        live = os.environ.get("RACKBOOK_LIVE_PYTHON") or str(live_python())
        if not Path(live).is_file():
            pytest.skip(
                f"vLLM's EPLB policy is not importable here and the live env is missing ({live}):"
                " run `make live-setup` (or set RACKBOOK_LIVE_PYTHON) to check bit for bit"
            )
        proc = subprocess.run(
            [live, "-c", _RUNNER + _MAIN],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, f"vLLM runner failed in {live}:\n{proc.stderr[-3000:]}"
        res = json.loads(proc.stdout)
        where = f"subprocess {live}"
    shipped, stable = (
        [np.asarray(p, dtype=np.int64) for p in res[key]] for key in ("phy2log", "phy2log_stable")
    )
    return shipped, stable, f"{where}: {res['policy_file']}"


@pytest.fixture(scope="module")
def compared() -> list[tuple[dict, np.ndarray, np.ndarray, np.ndarray]]:
    """(case, ours, vLLM with a stable argsort, vLLM as shipped) per case."""
    cases = _cases()
    theirs, theirs_stable, where = _vllm_phy2log(cases)
    print(f"vLLM policy from {where}")
    ours = [
        eplb.rebalance_experts(
            c["weight"], c["num_replicas"], c["num_groups"], c["num_nodes"], c["num_ranks"]
        )[0]
        for c in cases
    ]
    return list(zip(cases, ours, theirs_stable, theirs, strict=True))


def test_cases_cover_both_branches_and_redundancy() -> None:
    cases = _cases()
    assert len(cases) >= 50
    branches = {eplb.eplb_branch(c["num_groups"], c["num_nodes"]) for c in cases}
    assert branches == {"hierarchical", "global"}
    redundant = {c["num_replicas"] > len(c["weight"][0]) for c in cases}
    assert redundant == {True, False}
    multi_node_hier = [
        c for c in cases if c["num_nodes"] > 1 and c["num_groups"] % c["num_nodes"] == 0
    ]
    assert multi_node_hier


def test_rank_loads_and_replica_counts_match_vllm(compared) -> None:
    for i, (case, ours, theirs, _) in enumerate(compared):
        w = np.asarray(case["weight"], dtype=np.float64)
        experts = w.shape[1]
        assert theirs.shape == ours.shape == (w.shape[0], case["num_replicas"]), i
        np.testing.assert_array_equal(
            eplb.replica_counts(ours, experts), eplb.replica_counts(theirs, experts), f"case {i}"
        )
        ranks = case["num_ranks"]
        np.testing.assert_allclose(
            eplb.rank_loads_from_placement(w, ours, ranks),
            eplb.rank_loads_from_placement(w, theirs, ranks),
            rtol=1e-12,
            atol=1e-9,
            err_msg=f"case {i}",
        )


def test_placement_identical_to_vllm_with_ties_by_index(compared) -> None:
    """The same steps in the same order: with vLLM's argsort made stable (equal weights by
    ascending index, as ours), even the slot order agrees, ties included."""
    for i, (_, ours, theirs, _) in enumerate(compared):
        np.testing.assert_array_equal(ours, theirs, f"case {i}")


def test_placement_identical_to_vllm_as_shipped_without_ties(compared) -> None:
    """Where no two weights are equal (random floats) the order of ties cannot matter, so ours
    equals vLLM's policy as shipped, whose unstable np.argsort orders ties by the CPU's SIMD sort
    (see rackbook.physics.eplb)."""
    floats = [(i, c, o, t) for i, (c, o, _, t) in enumerate(compared) if c["kind"] == "float"]
    assert len(floats) >= 10
    for i, case, ours, theirs in floats:
        assert len(np.unique(case["weight"])) == np.size(case["weight"]), f"case {i} has ties"
        np.testing.assert_array_equal(ours, theirs, f"case {i}")
