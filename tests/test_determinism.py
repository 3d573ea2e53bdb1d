"""The same numbers on every machine: nothing the book shows may depend on the reader's CPU.

Three checks:
- every sort in ``src/`` names a stable kind (numpy's default sort is an introsort whose order of
  equal keys depends on which SIMD implementation it dispatches: AVX-512, AVX2 or scalar), and
  ``value_counts`` is never left to order its ties;
- the EPLB policy's tie-breaks, by hand on examples small enough to check on paper;
- all six chapters' headline values recomputed on the shipped traces with numpy's runtime SIMD
  dispatch narrowed to the baseline (``NPY_DISABLE_CPU_FEATURES`` naming every dispatched feature
  this CPU has) equal the default run's, so a CPU with other SIMD features gives the same figures.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rackbook import paths
from rackbook.physics import eplb

SRC = paths.ROOT / "src" / "rackbook"
STABLE_KINDS = {"stable", "mergesort"}


# --------------------------------------------------------------------------------------------
# Every sort is stable
# --------------------------------------------------------------------------------------------


def _unstable_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, call)`` of sorts without a stable ``kind`` and ``value_counts`` left to sort."""
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        kw = {k.arg: k.value for k in node.keywords}
        if name in {"argsort", "sort", "sort_values", "sort_index"}:
            kind = kw.get("kind")
            if not (isinstance(kind, ast.Constant) and kind.value in STABLE_KINDS):
                bad.append((node.lineno, name))
        elif name == "value_counts":
            flag = kw.get("sort")
            if not (isinstance(flag, ast.Constant) and flag.value is False):
                bad.append((node.lineno, name))
    return bad


def test_every_sort_in_src_is_stable() -> None:
    bad = []
    for f in sorted(SRC.rglob("*.py")):
        for line, call in _unstable_calls(ast.parse(f.read_text(), str(f))):
            bad.append(f"{f.relative_to(paths.ROOT)}:{line}: {call} without a stable kind")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "code",
    [
        "np.argsort(-w)",
        "np.argsort(w, kind='quicksort')",
        "x.sort()",
        "df.sort_values('a')",
        "df.sort_index()",
        "s.value_counts()",
    ],
)
def test_the_stable_sort_check_catches(code: str) -> None:
    assert _unstable_calls(ast.parse(code)), code


@pytest.mark.parametrize(
    "code",
    ["np.argsort(-w, kind='stable')", "df.sort_values('a', kind='stable')", "sorted(xs)"],
)
def test_the_stable_sort_check_passes(code: str) -> None:
    assert not _unstable_calls(ast.parse(code)), code


# --------------------------------------------------------------------------------------------
# EPLB tie-breaks, by hand
# --------------------------------------------------------------------------------------------


def test_packing_breaks_equal_weights_by_item_id_and_equal_packs_by_pack_index() -> None:
    # Weights 3, 3, 2, 2 into 2 packs of 2. Order by weight, ties by id: 0, 1, 2, 3.
    # Item 0 -> pack 0 (both empty: the first); item 1 -> pack 1 (0 < 3); item 2 -> pack 0
    # (3 = 3: the first); item 3 -> pack 1 (the only one not full). An order 1, 0, 3, 2 (another
    # order of the ties) would give packs 1, 0, 1, 0: the same pack weights, other experts.
    pack, rank = eplb.balanced_packing(np.array([[3.0, 3.0, 2.0, 2.0]], dtype=np.float32), 2)
    assert pack.tolist() == [[0, 1, 0, 1]]
    assert rank.tolist() == [[0, 0, 1, 1]]
    # Weights 1, 5, 1, 5, 1, 1 into 3 packs of 2. Order: 1, 3 (fives by id), then 0, 2, 4, 5.
    # 1 -> p0, 3 -> p1, 0 -> p2 (weights 5, 5, 0), 2 -> p2 (p2 = 1 is lightest), p2 is full;
    # 4 -> p0 (5 = 5: the first), 5 -> p1.
    pack, _ = eplb.balanced_packing(np.array([[1, 5, 1, 5, 1, 1]], dtype=np.float32), 3)
    assert pack.tolist() == [[2, 0, 2, 1, 0, 1]]


def test_replication_gives_the_extra_replica_to_the_first_of_equally_hot_experts() -> None:
    # Loads 4, 4, 1 with one redundant slot: experts 0 and 1 tie at 4 per replica; the first
    # (expert 0) gets it. A second slot then goes to expert 1 (4 > 2 = 4 / 2).
    phy2log, cnt = eplb.replicate_experts(np.array([[4.0, 4.0, 1.0]], dtype=np.float32), 4)
    assert phy2log.tolist() == [[0, 1, 2, 0]]
    assert cnt.tolist() == [[2, 1, 1]]
    phy2log, _ = eplb.replicate_experts(np.array([[4.0, 4.0, 1.0]], dtype=np.float32), 5)
    assert phy2log.tolist() == [[0, 1, 2, 0, 1]]


def test_placement_does_not_depend_on_the_input_order_of_equal_items() -> None:
    # All-equal loads: every order is a tie, so the placement is the identity packing.
    phy2log, _, _ = eplb.rebalance_experts(np.ones((1, 8)), 8, 1, 1, 4)
    assert phy2log.tolist() == [[0, 4, 1, 5, 2, 6, 3, 7]]


# --------------------------------------------------------------------------------------------
# All six chapters' headlines with numpy's SIMD dispatch narrowed
# --------------------------------------------------------------------------------------------

_FEATURES = """
import json
import numpy as np
try:
    from numpy._core import _multiarray_umath as m
except ImportError:  # numpy < 2
    from numpy.core import _multiarray_umath as m
on = [k for k in m.__cpu_dispatch__ if m.__cpu_features__.get(k)]
print(json.dumps(on))
"""

_HEADLINES = """
import json
from rackbook.core import traces
from rackbook import paths
from rackbook.results import REGISTRY
out = {}
for r, m in REGISTRY.items():
    d = m.outcome(m.analyse(traces.read_trace(paths.TRACES / r))).to_dict("trace")
    d.pop("created")
    out[r] = d
print(json.dumps(out, sort_keys=True, allow_nan=True))
"""


def _python(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_headlines_equal_with_numpy_simd_dispatch_narrowed_to_the_baseline() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    enabled = json.loads(_python(_FEATURES, env))
    if not enabled:
        pytest.skip("numpy dispatches no SIMD feature beyond its baseline on this CPU")
    narrow = {**env, "NPY_DISABLE_CPU_FEATURES": " ".join(enabled)}
    assert json.loads(_python(_FEATURES, narrow)) == [], "the features were not disabled"
    default = json.loads(_python(_HEADLINES, env))
    narrowed = json.loads(_python(_HEADLINES, narrow))
    assert set(default) == set(paths.RESULTS)
    for result in paths.RESULTS:  # as JSON text: NaN equals NaN there
        assert json.dumps(narrowed[result], sort_keys=True) == json.dumps(
            default[result], sort_keys=True
        ), f"{result} moves with numpy's SIMD dispatch"
    # the figure of issue 19: one EPLB value everywhere
    eplb_value = {h["name"]: h["value"] for h in default["eplb-balance"]["headlines"]}
    assert eplb_value["balancedness_eplb"] == 0.8953
