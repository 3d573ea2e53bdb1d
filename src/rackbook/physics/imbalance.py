"""Expert-parallel imbalance: the busiest GPU's routed load over the mean, precomputed."""

from __future__ import annotations

import argparse
import bisect
import functools
import json
import math
from typing import Any

from rackbook import paths
from rackbook.errors import InputError

TABLE_FILE = "derived/eplb-imbalance.json"
#: EPLB model inputs: layers drawn, seed, and the skew calibrated on the claim
#: ``eplb-balance.before`` (``data/traces/eplb-balance/run.json`` generator.skew).
LAYERS = 8
SEED = 0
SKEW = 0.5300668803974986
#: Most assignments drawn (larger counts read the last grid point: the imbalance has settled).
MAX_ASSIGNMENTS = 1 << 20
#: Expert counts tabled (the catalog's models: 256 for DeepSeek-V3/R1/V4-Flash, 384 for V4.1).
EXPERTS = (256, 384)
#: EP sizes tabled: each up to an NVL72's 72, then the multiples deployments use (others live).
EP_GRID = (*range(2, 73), 96, 128, 144, 192, 256, 288, 384)
#: Assignments tabled: 2^(k x LOG2_STEP) up to MAX_ASSIGNMENTS (:func:`expected._bucket`'s grid).
LOG2_STEP = 0.25


def eplb_imbalance(num_experts: int, ep: int, assignments: float) -> float:
    """Busiest GPU's routed load over the mean (>= 1) from the EPLB model, 1 / balancedness."""
    from rackbook.physics import eplb

    if ep <= 1 or assignments <= 0:
        return 1.0
    ep = min(ep, num_experts)
    redundant = (-num_experts) % ep or ep
    n = max(1, int(round(min(assignments, MAX_ASSIGNMENTS))))
    loads, _ = eplb.synthetic_loads(LAYERS, num_experts, n, SKEW, SEED, windows=2)
    r = eplb.evaluate(loads[0], ep, redundant, eval_loads=loads[1])
    return 1.0 / max(float(r["balancedness_eplb"]), 1e-9)


def build(experts: tuple[int, ...] = EXPERTS) -> dict[str, Any]:
    """The table document: generator, inputs, and per expert count the imbalance by EP size."""
    grid = [i * LOG2_STEP for i in range(round(math.log2(MAX_ASSIGNMENTS) / LOG2_STEP) + 1)]
    tables = {}
    for e in experts:
        eps = [p for p in EP_GRID if p <= e]
        tables[str(e)] = {
            "ep": eps,
            "imbalance": [[round(eplb_imbalance(e, p, 2.0**x), 6) for x in grid] for p in eps],
        }
    return {
        "generator": "python -m rackbook.physics.imbalance --write "
        "(rackbook.physics.imbalance.eplb_imbalance: eplb.synthetic_loads + eplb.evaluate)",
        "inputs": {
            "layers": LAYERS,
            "seed": SEED,
            "skew": SKEW,
            "windows": 2,
            "redundant": "(-experts) mod ep, else ep",
        },
        "log2_assignments": grid,
        "experts": tables,
    }


@functools.cache
def table() -> dict[str, Any]:
    """The stored table (``data/derived/eplb-imbalance.json``), read once; {} when absent."""
    p = paths.DATA / TABLE_FILE
    if not p.exists():
        return {}
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        return {"x": doc["log2_assignments"], "experts": doc["experts"]}
    except (KeyError, ValueError) as exc:
        raise InputError(p, "experts", f"not an imbalance table: {exc}") from None


def _interp(xs: list[float], x: float) -> tuple[int, float]:
    i = min(max(bisect.bisect_right(xs, x) - 1, 0), len(xs) - 2)  # the ends held flat
    return i, min(max((x - xs[i]) / (xs[i + 1] - xs[i]), 0.0), 1.0)


@functools.lru_cache(maxsize=4096)
def imbalance(num_experts: int, ep: int, assignments: float) -> float:
    """:func:`eplb_imbalance` read from the table, log-interpolated (computed when absent)."""
    if ep <= 1 or assignments <= 0:
        return 1.0
    ep = min(ep, num_experts)
    t = table()
    rows = t.get("experts", {}).get(str(num_experts))
    if rows is None or ep not in rows["ep"]:
        return eplb_imbalance(num_experts, ep, assignments)
    vals = rows["imbalance"][rows["ep"].index(ep)]
    j, v = _interp(t["x"], math.log2(min(assignments, MAX_ASSIGNMENTS)))
    return math.exp((1 - v) * math.log(vals[j]) + v * math.log(vals[j + 1]))


def dump(doc: dict[str, Any]) -> str:
    """The table as JSON text, one EP size's row a line."""
    text = json.dumps(doc, separators=(",", ":"))
    return text.replace("],[", "],\n[") + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m rackbook.physics.imbalance --write``: recompute and store the table."""
    from rackbook.core import fsio

    ap = argparse.ArgumentParser(prog="python -m rackbook.physics.imbalance")
    ap.add_argument("--write", action="store_true", help=f"write data/{TABLE_FILE}")
    args = ap.parse_args(argv)
    doc = build()
    if args.write:
        out = paths.DATA / TABLE_FILE
        fsio.atomic_write_text(out, dump(doc))  # makes the folder
        print(f"wrote {out}")
    else:
        print(json.dumps(doc)[:200])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
