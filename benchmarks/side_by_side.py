"""Each target measured beside its peer in one run, alternating, so that a shared and noisy
machine slows both alike; the result is the ratio of each round, then the median.

- ``import``: ``rackbook import vllm-bench`` against ``benchmarks/peer_pandas_import.py`` (the
  15-line pandas script a user would write: ``json``, two DataFrames, two Parquet tables) on a
  100k-request x 128-token detailed vLLM JSON; with ``--baseline`` also the code before.
- ``summarize``: ``rackbook summarize --json`` of a 10M-request trace, against the code in
  ``--baseline`` (a checkout of the commit before this work, run with ``PYTHONPATH``).
- ``book``: ``make book`` in a fresh clone of this checkout (``git clone``, then ``make book``:
  install, execute, build), then again with nothing changed, then with one chapter's trace
  changed (a byte appended to ``data/traces/single-user/run.json``); the same in a fresh clone
  of ``--baseline``, one after the other.

Peak RSS is each child's own ``ru_maxrss`` (``benchmarks/run.py _child``). Usage::

    git -C . worktree add /tmp/rb-base <commit before>   # or: git clone . /tmp/rb-base
    .venv/bin/python benchmarks/side_by_side.py --baseline /tmp/rb-base --only import,summarize
    .venv/bin/python benchmarks/side_by_side.py --baseline /tmp/rb-base --only book
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as rb  # noqa: E402  (benchmarks/run.py: measuring children, inputs, machine)

ROOT, PY, RACKBOOK = rb.ROOT, rb.PY, rb.RACKBOOK


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    """The children's environment: bytecode is cached as Python does by default (and as
    ``make`` does: it unexports PYTHONDONTWRITEBYTECODE, which the project's machines set and
    which would make every measured run compile every module of both checkouts again)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **(extra or {})}


def _measured(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """One child run: wall, CPU and peak RSS (through run.py's ``_child``)."""
    rb.wait_idle()
    p = subprocess.run(
        [PY, str(ROOT / "benchmarks" / "run.py"), "_child", *cmd],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(env),
    )
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise SystemExit(f"failed ({res['rc']}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return res


def _baseline(base: Path | None) -> tuple[list[str], dict[str, str]] | None:
    """The command prefix and environment that run ``rackbook`` from the baseline's source."""
    if base is None:
        return None
    env = {"PYTHONPATH": str(base / "src"), "RACKBOOK_ROOT": str(base)}
    return [PY, "-m", "rackbook.cli"], env


def _ratios(rounds: list[dict[str, Any]], a: str, b: str, what: str) -> dict[str, Any]:
    r = [x[a][what] / x[b][what] for x in rounds]
    return {"median": round(statistics.median(r), 3), "all": [round(v, 3) for v in r]}


def _summary(rounds: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in names:
        walls = [x[n]["wall_s"] for x in rounds]
        rss = [x[n]["peak_rss_mb"] for x in rounds]
        cpu = [round(x[n]["user_s"] + x[n]["sys_s"], 2) for x in rounds]
        out[n] = {
            "wall_s_median": round(statistics.median(walls), 2),
            "wall_s_all": walls,
            "cpu_s_median": round(statistics.median(cpu), 2),
            "cpu_s_all": cpu,
            "peak_rss_mb_max": max(rss),
        }
    return out


def bench_import(d: Path, repeat: int, base: Path | None) -> dict[str, Any]:
    src = d / "vllm-100k.json"
    info = rb.ensure(src, ["vllm-json", "-n", "100000", "--output-tokens", "128"])
    cmds: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "rackbook": (
            [RACKBOOK, "import", "vllm-bench", str(src), "-o", str(d / "imp-new")]
            + ["--kind", "synthetic"],
            None,
        ),
        "pandas_script": (
            [PY, str(ROOT / "benchmarks" / "peer_pandas_import.py"), str(src), str(d / "peer")],
            None,
        ),
    }
    bl = _baseline(base)
    if bl:
        cmds["baseline"] = (
            [*bl[0], "import", "vllm-bench", str(src), "-o", str(d / "imp-base")]
            + ["--kind", "synthetic"],
            bl[1],
        )
    rounds = []
    for i in range(repeat):
        order = list(cmds) if i % 2 == 0 else list(reversed(cmds))
        rounds.append({n: _measured(*cmds[n]) for n in order})
        print(f"import round {i + 1}: {json.dumps(rounds[-1])}", file=sys.stderr, flush=True)
    res = {"input": info, "runs": _summary(rounds, list(cmds))}
    res["ratio_wall_rackbook_over_pandas"] = _ratios(rounds, "rackbook", "pandas_script", "wall_s")
    if bl:
        res["ratio_wall_rackbook_over_baseline"] = _ratios(rounds, "rackbook", "baseline", "wall_s")
    return res


def bench_summarize(d: Path, repeat: int, base: Path | None, n: int) -> dict[str, Any]:
    tdir = d / f"trace-{n}-g3"
    info = rb.ensure(tdir, ["parquet-trace", "-n", str(n), "--gaps", "3", "--points", "8"])
    cmds: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "rackbook": ([RACKBOOK, "summarize", str(tdir), "--json"], None)
    }
    bl = _baseline(base)
    if bl:
        cmds["baseline"] = ([*bl[0], "summarize", str(tdir), "--json"], bl[1])
    for k in cmds:  # once each, unmeasured: bytecode cached, trace files in the page cache
        _measured(*cmds[k])
    rounds = []
    for i in range(repeat):
        order = list(cmds) if i % 2 == 0 else list(reversed(cmds))
        load = os.getloadavg()[0]
        rounds.append({k: _measured(*cmds[k]) for k in order} | {"load_1min": load})
        print(f"summarize round {i + 1}: {json.dumps(rounds[-1])}", file=sys.stderr, flush=True)
    res = {"input": info, "runs": _summary(rounds, list(cmds))}
    if bl:
        res["ratio_wall_rackbook_over_baseline"] = _ratios(rounds, "rackbook", "baseline", "wall_s")
        docs = []
        for cmd, env in cmds.values():  # once more, unmeasured, for the full output
            p = subprocess.run(cmd, capture_output=True, text=True, env=_env(env), check=True)
            docs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        res["same_medians_and_percentiles"] = _same_order_stats(docs[0], docs[1])
    return res


def _same_order_stats(a: Any, b: Any) -> bool:
    """True when every median_* and p*_ figure is equal in both summaries (means and stds may
    differ in the last bits)."""
    if isinstance(a, dict):
        return all(
            _same_order_stats(a[k], b[k])
            if isinstance(a[k], (dict, list))
            else (a[k] == b[k] or not (k.startswith("median_") or k.startswith("p")))
            for k in a
        )
    if isinstance(a, list):
        return all(_same_order_stats(x, y) for x, y in zip(a, b, strict=True))
    return True


def _timed(cmd: list[str], cwd: Path) -> dict[str, Any]:
    rb.wait_idle()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"failed in {cwd}: {' '.join(cmd)}\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    return {"wall_s": round(wall, 2)}


def bench_book(d: Path, base: Path | None) -> dict[str, Any]:
    """Fresh clone + make book, unchanged make book, one trace changed: this checkout's HEAD,
    then the baseline's."""
    out: dict[str, Any] = {}
    for name, repo in (("rackbook", ROOT), ("baseline", base)):
        if repo is None:
            continue
        clone = d / f"book-{name}"
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        head = ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"]
        commit = subprocess.run(head, capture_output=True, text=True).stdout.strip()
        r: dict[str, Any] = {"commit": commit}
        r["fresh_clone_make_book"] = _timed(["make", "book"], clone)
        r["unchanged_make_book"] = _timed(["make", "book"], clone)
        with (clone / "data" / "traces" / "single-user" / "run.json").open("a") as f:
            f.write("\n")
        r["one_trace_changed_make_book"] = _timed(["make", "book"], clone)
        out[name] = r
        print(f"book {name}: {json.dumps(r)}", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/rb-bench"))
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the code before")
    ap.add_argument("--only", default="import,summarize,book")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--requests", type=int, default=10_000_000, help="summarize: trace size")
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "benchmarks" / "side-by-side.json")
    a = ap.parse_args(argv)
    a.dir.mkdir(parents=True, exist_ok=True)
    results = json.loads(a.output.read_text()) if a.output.exists() else {}
    results["machine"] = rb.machine()
    results["machine"]["load_average_at_start"] = list(os.getloadavg())
    only = a.only.split(",")
    if "import" in only:
        results["import"] = bench_import(a.dir, a.repeat, a.baseline)
    if "summarize" in only:
        results["summarize"] = bench_summarize(a.dir, a.repeat, a.baseline, a.requests)
    if "book" in only:
        results["book"] = bench_book(a.dir, a.baseline)
    results["machine"]["load_average_at_end"] = list(os.getloadavg())
    text = json.dumps(results, indent=1)
    for p, name in ((a.dir, "$BENCH"), (ROOT, "$REPO")):
        text = text.replace(str(p), name)
    if a.baseline:
        text = text.replace(str(a.baseline), "$BASELINE")
    a.output.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
