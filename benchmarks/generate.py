"""Seeded generators of large synthetic inputs for the benchmarks (written on demand, e.g. /tmp).

The numbers are synthetic (numpy ``default_rng(seed)``), shaped like real runs but reproducing
no claim; they exist only to time and size trace processing.

- ``vllm-json``: a ``vllm bench serve --save-result --save-detailed`` JSON: per-request arrays
  (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``latencies``, ``start_times``,
  ``errors``; seconds) with full-precision floats as Python's ``json`` writes them. ``.gz``
  output is gzip-compressed.
- ``parquet-trace``: a trace folder (:mod:`rackbook.core.schema`: run.json, requests, itl and
  points Parquet tables, zstd, 1Mi-row row groups) written chunk by chunk, so memory stays at
  one chunk whatever the size.

Usage::

    .venv/bin/python benchmarks/generate.py vllm-json -n 100000 --output-tokens 128 \\
        -o /tmp/rb-bench/vllm-100k.json
    .venv/bin/python benchmarks/generate.py parquet-trace -n 10000000 --gaps 3 --points 8 \\
        -o /tmp/rb-bench/trace-10M
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rackbook.core import provenance, schema

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is pinned in the book env
    orjson = None

GENERATOR = "benchmarks/generate.py"
#: Share of requests that fail (error text, no tokens), as a real run may have.
FAIL_RATE = 0.001
CHUNK = 1 << 20  # rows per written chunk and Parquet row group


def _requests(rng: np.random.Generator, n: int, output_tokens: int) -> dict[str, np.ndarray]:
    """Per-request columns (seconds, tokens) of ``n`` requests; gaps are drawn separately."""
    fail = rng.random(n) < FAIL_RATE
    out = np.where(fail, 0, output_tokens).astype(np.int64)
    return {
        "input": rng.integers(64, 2048, n),
        "output": out,
        "ttft": np.where(fail, 0.0, rng.lognormal(np.log(0.2), 0.4, n)),
        "start": np.sort(rng.uniform(0, max(n / 50.0, 1.0), n)),
        "fail": fail,
    }


def vllm_json(path: Path, n: int, output_tokens: int, seed: int) -> dict[str, Any]:
    """Write a detailed vLLM result of ``n`` requests with ``output_tokens`` each (so
    ``output_tokens - 1`` gaps); returns sizes."""
    rng = np.random.default_rng(seed)
    r = _requests(rng, n, output_tokens)
    gaps = max(output_tokens - 1, 0)
    g = rng.lognormal(np.log(0.02), 0.3, (n, gaps))
    lat = np.where(r["fail"], 0.0, r["ttft"] + g.sum(axis=1))
    itls = [[] if f else row for f, row in zip(r["fail"], g.tolist(), strict=True)]
    d = {
        "date": "20260101-000000",
        "backend": "vllm",
        "model_id": "synthetic",
        "num_prompts": n,
        "request_rate": "inf",
        "max_concurrency": 256,
        "duration": float((r["start"] + lat).max() - r["start"].min()),
        "completed": int((~r["fail"]).sum()),
        "failed": int(r["fail"].sum()),
        "input_lens": r["input"].tolist(),
        "output_lens": r["output"].tolist(),
        "ttfts": r["ttft"].tolist(),
        "itls": itls,
        "latencies": lat.tolist(),
        "start_times": r["start"].tolist(),
        "errors": ["Timeout (synthetic)" if f else "" for f in r["fail"]],
        "generator": {"name": GENERATOR, "seed": seed},
    }
    data = orjson.dumps(d) if orjson is not None else json.dumps(d).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(gzip.compress(data, compresslevel=6) if path.suffix == ".gz" else data)
    tmp.replace(path)
    return {"requests": n, "gaps": int(sum(len(x) for x in itls)), "bytes": path.stat().st_size}


def _schema(table: str) -> pa.Schema:
    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
    }
    return pa.schema([pa.field(c.name, types[c.dtype]) for c in schema.TABLES[table]])


def parquet_trace(path: Path, n: int, gaps: int, points: int, seed: int) -> dict[str, Any]:
    """Write a trace folder of ``n`` requests (``gaps + 1`` output tokens each) over ``points``
    contiguous sweep points; returns sizes."""
    rng = np.random.default_rng(seed)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    per_point = -(-n // points)
    pids = [f"p{i}" for i in range(points)]
    req_w = pq.ParquetWriter(tmp / "requests.parquet", _schema("requests"), compression="zstd")
    itl_w = pq.ParquetWriter(tmp / "itl.parquet", _schema("itl"), compression="zstd")
    itl_rows = 0
    for lo in range(0, n, CHUNK):
        m = min(CHUNK, n - lo)
        r = _requests(rng, m, gaps + 1)
        rows = np.arange(lo, lo + m)
        pidx = rows // per_point
        ok = ~r["fail"]
        # gaps in blocks of at most CHUNK values (the same random stream as one draw)
        step = max(1, CHUNK // max(gaps, 1))
        gsum = np.zeros(m)
        for a in range(0, m, step):
            b = min(a + step, m)
            g = rng.lognormal(np.log(0.02), 0.3, (b - a, gaps))
            gsum[a:b] = g.sum(axis=1)
            keep = np.repeat(ok[a:b], gaps)
            itl = pa.table(
                {
                    "request_row": np.repeat(rows[a:b], gaps)[keep].astype(np.int64),
                    "itl_s": g.reshape(-1)[keep],
                },
                schema=_schema("itl"),
            )
            itl_w.write_table(itl, row_group_size=CHUNK)
            itl_rows += itl.num_rows
        lat = np.where(ok, r["ttft"] + gsum, 0.0)
        pid = pa.DictionaryArray.from_arrays(pa.array(pidx, pa.int32()), pa.array(pids))
        req = {
            "request_id": pc.binary_join_element_wise(
                pc.cast(pid, pa.string()), "/", pa.array(rows).cast(pa.string()), ""
            ),
            "point_id": pid.cast(pa.string()),
            "engine": pa.array(np.full(m, "vllm-serve", dtype=object), pa.string()),
            "config": pa.array(np.full(m, "default", dtype=object), pa.string()),
            "batch_size": pa.nulls(m, pa.int64()),
            "concurrency": pa.array(256 * (1 + pidx % 4), pa.int64()),
            "decode_ranks": pa.nulls(m, pa.int64()),
            "context_tokens": pa.nulls(m, pa.int64()),
            "start_time_s": r["start"] + lo / 50.0,
            "ttft_s": r["ttft"],
            "e2el_s": lat,
            "prompt_tokens": r["input"].astype(np.int64),
            "cached_prompt_tokens": pa.nulls(m, pa.int64()),
            "output_tokens": r["output"],
            "success": ok,
            "error": pa.array(np.where(ok, "", "Timeout (synthetic)").astype(object), pa.string()),
        }
        req_w.write_table(pa.table(req, schema=_schema("requests")), row_group_size=CHUNK)
    req_w.close()
    itl_w.close()
    durations = [max(min(per_point, n - i * per_point), 1) / 50.0 for i in range(points)]
    pts = {
        "point_id": pids,
        "engine": ["vllm-serve"] * points,
        "config": ["default"] * points,
        "batch_size": pa.nulls(points, pa.int64()),
        "concurrency": [256 * (1 + i % 4) for i in range(points)],
        "decode_ranks": pa.nulls(points, pa.int64()),
        "context_tokens": pa.nulls(points, pa.int64()),
        "window_start_s": [0.0] * points,
        "duration_s": durations,
        "num_gpus": pa.nulls(points, pa.int64()),
        "source": [GENERATOR] * points,
    }
    pq.write_table(pa.table(pts, schema=_schema("points")), tmp / "points.parquet")
    run = provenance.new_run_info(
        kind="synthetic",
        commands=[" ".join(sys.argv)],
        parameters={"requests": n, "gaps_per_request": gaps, "points": points},
        engine={"name": "none (synthetic)", "version": None},
        generator={"name": GENERATOR, "seed": seed},
        notes="synthetic benchmark input for timing trace processing; reproduces no claim",
    )
    (tmp / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    size = sum(f.stat().st_size for f in path.iterdir())
    return {"requests": n, "gaps": itl_rows, "bytes": size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    j = sub.add_parser("vllm-json", help="detailed vLLM bench result JSON (.gz: gzip)")
    j.add_argument("-n", type=int, required=True, help="requests")
    j.add_argument("--output-tokens", type=int, default=128)
    j.add_argument("--seed", type=int, default=0)
    j.add_argument("-o", "--output", type=Path, required=True)
    t = sub.add_parser("parquet-trace", help="trace folder with Parquet tables")
    t.add_argument("-n", type=int, required=True, help="requests")
    t.add_argument("--gaps", type=int, default=3, help="ITL gaps per successful request")
    t.add_argument("--points", type=int, default=8)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.what == "vllm-json":
        info = vllm_json(a.output, a.n, a.output_tokens, a.seed)
    else:
        info = parquet_trace(a.output, a.n, a.gaps, a.points, a.seed)
    print(json.dumps({"output": str(a.output), **info}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
