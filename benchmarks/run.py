"""Time and size trace processing (a benchmark, not a test); results go to a JSON file.

Each measured command runs as a child process; wall time is ``time.perf_counter`` around it and
peak RSS is the child's own ``ru_maxrss`` from ``os.wait4``. Before each heavy step the script
waits while a live vLLM recording runs on the machine (``pgrep -af`` of
:data:`BUSY`), so neither distorts the other. Inputs are generated on demand under ``--dir``
(default /tmp/rb-bench, never the repository) by ``benchmarks/generate.py``.

Usage::

    .venv/bin/python benchmarks/run.py [--only import,summarize,itl-heavy,book] \\
        [--sizes 1000000,2000000,5000000,10000000] [--repeat 3] [-o benchmarks/results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")
RACKBOOK = str(ROOT / ".venv" / "bin" / "rackbook")
GEN = [PY, str(ROOT / "benchmarks" / "generate.py")]
BUSY = "vllm serve|rackbook.live|rackbook.cli record|EngineCore"


def wait_idle() -> None:
    """Sleep while a live recording (vLLM server or rackbook.live) runs on this machine."""
    while True:
        out = subprocess.run(["pgrep", "-af", BUSY], capture_output=True, text=True).stdout
        mine = [ln for ln in out.splitlines() if ln.split()[0] != str(os.getpid())]
        mine = [ln for ln in mine if "pgrep" not in ln]
        if not mine:
            return
        print(f"waiting: live recording running ({mine[0][:80]})", file=sys.stderr, flush=True)
        time.sleep(60)


def measure(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd`` once the machine is free of recordings; wall seconds and its stdout."""
    wait_idle()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, cwd=ROOT, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    lines = p.stdout.strip().splitlines() or [""]
    return {"wall_s": round(wall, 3), "last_line": lines[-1], "stdout": p.stdout}


def run_measured(cmd: list[str]) -> dict[str, Any]:
    """:func:`measure` through ``benchmarks/run.py _child``, which wait4s its own child so the
    peak RSS is that command's alone."""
    r = measure([PY, __file__, "_child", *cmd])
    child = json.loads(r["last_line"])
    if child["rc"] != 0:
        raise SystemExit(f"failed ({child['rc']}): {' '.join(cmd)}")
    child["cmd"] = " ".join(cmd)
    child["stdout"] = r["stdout"]
    return child


def _child(cmd: list[str]) -> int:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=ROOT, text=True)
    out = p.stdout.read() if p.stdout else ""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    print(out, end="")
    res = {
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(ru.ru_maxrss * 1024 / 1e6, 1),
        "user_s": round(ru.ru_utime, 2),
        "sys_s": round(ru.ru_stime, 2),
        "rc": rc,
        "last_line": (out.strip().splitlines() or [""])[-1][:300],
    }
    print(json.dumps(res))
    return 0


def machine() -> dict[str, Any]:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem = next(
        int(ln.split()[1]) * 1024
        for ln in Path("/proc/meminfo").read_text().splitlines()
        if ln.startswith("MemTotal")
    )
    vers = subprocess.run(
        [
            PY,
            "-c",
            "import numpy, pandas, pyarrow, orjson, sys; print(sys.version.split()[0], "
            "numpy.__version__, pandas.__version__, pyarrow.__version__, orjson.__version__)",
        ],
        capture_output=True,
        text=True,
    ).stdout.split()
    return {
        "cpu_model": cpu,
        "logical_cores": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "kernel": platform.release(),
        "python": vers[0] if vers else None,
        "numpy": vers[1] if len(vers) > 1 else None,
        "pandas": vers[2] if len(vers) > 2 else None,
        "pyarrow": vers[3] if len(vers) > 3 else None,
        "orjson": vers[4] if len(vers) > 4 else None,
    }


def ensure(path: Path, gen_args: list[str]) -> dict[str, Any]:
    """Generate an input unless it is already there; returns the generator's report."""
    info = path.with_name(path.name + ".info.json")
    if path.exists() and info.exists():
        return json.loads(info.read_text())
    wait_idle()
    t0 = time.perf_counter()
    out = subprocess.run([*GEN, *gen_args, "-o", str(path)], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    rep["generate_s"] = round(time.perf_counter() - t0, 1)
    info.write_text(json.dumps(rep))
    return rep


STAGES = r"""
import json, sys, time
from pathlib import Path
t = {}
def lap(name, t0):
    t[name] = round(time.perf_counter() - t0, 3)
    return time.perf_counter()
src, out = Path(sys.argv[1]), Path(sys.argv[2])
t0 = time.perf_counter()
raw = src.read_bytes()
t0 = lap("read_bytes", t0)
if sys.argv[3] == "stdlib":
    json.loads(raw)
    t0 = lap("parse_stdlib_json", t0)
    print(json.dumps(t)); raise SystemExit
import orjson
orjson.loads(raw)
t0 = lap("parse_orjson", t0)
del raw
from rackbook.core.importers import vllm_bench
from rackbook.core import jsonstream
from rackbook.core import provenance
from rackbook.core import traces
t0 = time.perf_counter()
d = jsonstream.load(src)
t0 = lap("load_json", t0)
tr = vllm_bench.vllm_bench_frames(src, data=d)
t0 = lap("vllm_bench_frames", t0)
del d
tr.run = provenance.new_run_info(kind="synthetic", commands=[], parameters={}, engine={},
                             generator={"name": "benchmarks/generate.py", "seed": 0})
t0 = time.perf_counter()
traces.write_trace(out, tr)
t0 = lap("write_trace", t0)
traces.read_trace(out)
t0 = lap("read_trace", t0)
print(json.dumps(t))
"""


def bench_import(d: Path, repeat: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for name in ("vllm-100k.json", "vllm-100k.json.gz"):
        src = d / name
        res[name] = {"input": ensure(src, ["vllm-json", "-n", "100000", "--output-tokens", "128"])}
        runs = [
            run_measured(
                [
                    RACKBOOK,
                    "import",
                    "vllm-bench",
                    str(src),
                    "-o",
                    str(d / "imp-100k"),
                    "--kind",
                    "synthetic",
                ]
            )
            for _ in range(repeat)
        ]
        res[name]["runs"] = runs
    src = d / "vllm-100k.json"
    for parser in ("orjson", "stdlib"):
        r = measure([PY, "-c", STAGES, str(src), str(d / "imp-stages"), parser])
        res[f"stages_{parser}"] = json.loads(r["last_line"])
    return res


def bench_summarize(d: Path, sizes: list[int], repeat: int, gaps: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for n in sizes:
        tdir = d / f"trace-{n}-g{gaps}"
        info = ensure(tdir, ["parquet-trace", "-n", str(n), "--gaps", str(gaps), "--points", "8"])
        runs = [run_measured([RACKBOOK, "summarize", str(tdir), "--json"]) for _ in range(repeat)]
        res[str(n)] = {"input": info, "runs": runs}
    return res


def bench_book() -> dict[str, Any]:
    """``make book`` on an installed .venv: total, and the per-result lines it prints."""
    setup = subprocess.run(["make", "setup"], cwd=ROOT, capture_output=True, text=True)
    if setup.returncode:
        raise SystemExit(f"make setup failed:\n{setup.stderr[-2000:]}")
    r = run_measured(["make", "book"])
    lines = r["stdout"].splitlines()[:-1]
    r["lines"] = [ln for ln in lines if re.search(r"\d+(\.\d+)?\s*s\b", ln)][-40:]
    return r


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        return _child(argv[1:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path("/tmp/rb-bench"))
    ap.add_argument("--only", default="import,summarize,itl-heavy,book")
    ap.add_argument("--sizes", default="1000000,2000000,5000000,10000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "benchmarks" / "results.json")
    a = ap.parse_args(argv)
    a.dir.mkdir(parents=True, exist_ok=True)
    results = json.loads(a.output.read_text()) if a.output.exists() else {}
    results["machine"] = machine()
    only = a.only.split(",")
    if "import" in only:
        results["import"] = bench_import(a.dir, a.repeat)
    if "summarize" in only:
        sizes = [int(x) for x in a.sizes.split(",")]
        results["summarize"] = bench_summarize(a.dir, sizes, a.repeat, gaps=3)
    if "itl-heavy" in only:
        results["summarize_itl_heavy"] = bench_summarize(a.dir, [1_000_000], a.repeat, gaps=127)
    if "book" in only:
        results["book"] = bench_book()
    for section in results.values():  # keep the file small: no full stdout
        _strip(section)
    # no machine's absolute path in the committed results: the bench folder and the repository
    text = json.dumps(results, indent=1).replace(str(a.dir), "$BENCH").replace(str(ROOT), "$REPO")
    a.output.write_text(text + "\n")
    print(json.dumps(results, indent=1))
    return 0


def _strip(obj: Any) -> None:
    if isinstance(obj, dict):
        obj.pop("stdout", None)
        for v in obj.values():
            _strip(v)
    elif isinstance(obj, list):
        for v in obj:
            _strip(v)


if __name__ == "__main__":
    raise SystemExit(main())
