"""Import of large detailed vLLM results, read in bounded memory, beside the code of a baseline
checkout (issue 29): peak RSS and wall time of ``rackbook import vllm-bench``.

The inputs are synthetic (numpy ``default_rng(0)``) and written a block of requests at a time
(:func:`write_result`), so a 1 GB file needs little memory to generate: per-request arrays
(``input_lens``, ``output_lens``, ``ttfts``, ``itls`` of ``output_tokens - 1`` gaps,
``latencies``, ``start_times``, ``errors``) and ``generated_texts`` as ``vllm bench serve
--save-detailed`` writes them. Each import runs as a child; peak RSS is its own ``ru_maxrss``
from ``os.wait4`` (MB = 10^6 bytes), interpreter and imports included. The baseline runs with
``--max-input-mb 2000`` (its default refuses files over 256 MB).

Usage::

    .venv/bin/python benchmarks/streaming.py --baseline /work/main --requests 100000,360000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")
BLOCK = 10_000  # requests generated and written at a time


def _array(values: np.ndarray) -> bytes:
    return orjson.dumps(values.tolist())


def write_result(path: Path, n: int, output_tokens: int = 128, seed: int = 0) -> int:
    """Write a detailed result of ``n`` requests a block at a time; returns its bytes."""
    rng = np.random.default_rng(seed)
    fail = rng.random(n) < 0.001
    out = np.where(fail, 0, output_tokens)
    ttft = np.where(fail, 0.0, rng.lognormal(np.log(0.2), 0.4, n))
    start = np.sort(rng.uniform(0, max(n / 50.0, 1.0), n))
    lat = np.zeros(n)
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "wb") as fh:
        fh.write(b'{"date": "20260101-000000", "backend": "vllm", "model_id": "synthetic", ')
        fh.write(b'"num_prompts": %d, "max_concurrency": 256, ' % n)
        fh.write(b'"input_lens": ' + _array(rng.integers(64, 2048, n)) + b", ")
        fh.write(b'"output_lens": ' + _array(out) + b", ")
        fh.write(b'"ttfts": ' + _array(ttft) + b', "itls": [')
        for lo in range(0, n, BLOCK):
            hi = min(lo + BLOCK, n)
            g = rng.lognormal(np.log(0.02), 0.3, (hi - lo, output_tokens - 1))
            lat[lo:hi] = np.where(fail[lo:hi], 0.0, ttft[lo:hi] + g.sum(axis=1))
            rows = [[] if f else r for f, r in zip(fail[lo:hi], g.tolist(), strict=True)]
            fh.write((b", " if lo else b"") + orjson.dumps(rows)[1:-1])
        fh.write(b'], "generated_texts": [')
        for lo in range(0, n, BLOCK):
            hi = min(lo + BLOCK, n)
            texts = ["" if f else "The answer is 42.\n" * 4 for f in fail[lo:hi]]
            fh.write((b", " if lo else b"") + orjson.dumps(texts)[1:-1])
        errs = ["Timeout (synthetic)" if f else "" for f in fail]
        fh.write(b'], "errors": ' + orjson.dumps(errs))
        fh.write(b', "latencies": ' + _array(lat) + b', "start_times": ' + _array(start))
        dur = float((start + lat).max() - start.min())
        fh.write(
            b', "duration": %r, "completed": %d, "failed": %d}' % (dur, (~fail).sum(), fail.sum())
        )
    tmp.replace(path)
    return path.stat().st_size


def measure(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One child: wall seconds, peak RSS (MB), exit code and its last stderr line."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace").strip().splitlines() if p.stderr else []
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_rss_mb": round(ru.ru_maxrss * 1024 / 1e6),
        "rc": os.waitstatus_to_exitcode(status),
        "stderr": err[-1] if err else "",
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the code before")
    ap.add_argument("--requests", default="100000,360000", help="sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/rb-bench"))
    a = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results = []
    for n in (int(x) for x in a.requests.split(",")):
        src = a.dir / f"vllm-stream-{n}.json"
        if not src.exists():
            write_result(src, n)
        size = src.stat().st_size
        runs: list[tuple[str, list[str], dict[str, str]]] = [
            ("this", [PY, "-m", "rackbook.cli", "import", "vllm-bench", str(src)], env)
        ]
        if a.baseline is not None:
            base_env = {**env, "PYTHONPATH": str(a.baseline / "src")}
            cmd = [PY, "-m", "rackbook.cli", "import", "vllm-bench", "--max-input-mb", "2000"]
            runs.append(("baseline", [*cmd, str(src)], base_env))
        for _ in range(a.repeat):
            for name, cmd, e in runs:
                out = a.dir / f"out-{name}-{n}"
                shutil.rmtree(out, ignore_errors=True)
                r = measure([*cmd, "-o", str(out)], e)
                shutil.rmtree(out, ignore_errors=True)
                r.update(code=name, requests=n, file_mb=round(size / 1e6))
                print(json.dumps(r), flush=True)
                results.append(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
