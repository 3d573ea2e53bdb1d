"""How fast ``rackbook check`` answers, warm (issue 35, item 7): a benchmark, not a test.

Each command runs as a child process (``python -m rackbook.cli check ...``) once to warm the
caches Python keeps on disk (bytecode: ``PYTHONDONTWRITEBYTECODE`` is removed from the child's
environment, as the Makefile does), then ``--repeat`` times; the output is the median and the
least wall time, the median CPU (user + sys of the child, from ``os.wait4``), and whether the
command imported pandas (``-X importtime`` of one more run). Nothing is written but the JSON
with ``--json FILE``.

Usage::

    .venv/bin/python benchmarks/check_speed.py --repeat 5
    .venv/bin/python benchmarks/check_speed.py --repeat 5 --json /tmp/check-speed.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The commands timed: the README's example, a mixed workload with a threshold, a published
#: model read from the catalog, and one with --json.
COMMANDS: dict[str, list[str]] = {
    "rack 954k total, ISL 100k": [
        "--model", "deepseek-v4.1-flash", "--gpu", "gb300", "--gpus", "72", "--tok-s", "954000",
        "--counted", "total", "--isl", "100000", "--osl", "1000",
    ],
    "H200 3000 per GPU": [
        "--model", "deepseek-ai/DeepSeek-V4.1-Flash", "--gpu", "H200", "--gpus", "8",
        "--tok-s", "3000", "--per", "gpu",
    ],
    "R1 on 8 B200 --json": [
        "--model", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--tok-s", "2000",
        "--counted", "total", "--isl", "1024", "--osl", "1024", "--concurrency", "256",
        "--json",
    ],
}  # fmt: skip


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(argv: list[str], extra: tuple[str, ...] = ()) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + sys) and stderr of one child run."""
    cmd = [sys.executable, *extra, "-m", "rackbook.cli", "check", *argv]
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, err = p.communicate()
    wall = time.perf_counter() - t0
    # the child has been reaped by communicate(); its CPU is in RUSAGE_CHILDREN deltas
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()[-400:]}")
    return wall, 0.0, err


def measure(argv: list[str], repeat: int) -> dict[str, object]:
    """Median and least wall, median CPU, and whether pandas was imported."""
    run_once(argv)  # warm: bytecode written, OS file cache filled
    walls, cpus = [], []
    for _ in range(repeat):
        before = os.times()
        wall, _, _ = run_once(argv)
        after = os.times()
        walls.append(wall)
        cpus.append(
            (after.children_user - before.children_user)
            + (after.children_system - before.children_system)
        )
    _, _, imports = run_once(argv, ("-X", "importtime"))
    pandas = any(line.rstrip().endswith("| pandas") for line in imports.splitlines())
    return {
        "wall_median_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "cpu_median_s": statistics.median(cpus),
        "imports_pandas": pandas,
        "repeat": repeat,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    args = ap.parse_args()
    out = {}
    load = os.getloadavg()[0]
    for name, argv in COMMANDS.items():
        r = measure(argv, args.repeat)
        out[name] = r
        print(
            f"{name}: wall median {r['wall_median_s']:.3f} s (least {r['wall_min_s']:.3f} s), "
            f"CPU {r['cpu_median_s']:.3f} s, pandas imported: {r['imports_pandas']}"
        )
    print(f"load average at the start: {load:.1f} on {os.cpu_count()} cores")
    if args.json:
        Path(args.json).write_text(json.dumps({"load": load, "commands": out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
