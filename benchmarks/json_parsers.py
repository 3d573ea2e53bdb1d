"""How fast the candidate streaming JSON parsers read a detailed vLLM result (issue 39): the
project's reader (:func:`rackbook.core.vllm_json.load_detailed`, orjson on pieces) beside ijson
3.6.0's C backend (yajl2_c), and orjson on the whole file for scale.

Each reader runs in its own child process; CPU seconds (user + sys) and peak RSS come from
``os.wait4`` (MB = 10^6 bytes, interpreter and imports included). The file is the synthetic
result of :func:`streaming.write_result` (numpy ``default_rng(0)``, 128 output tokens).

- ``jsonstream``: the project's reader, every check and bound included (the baseline).
- ``ijson-events``: the least Python any ijson design of the same reader runs per value:
  ``ijson.basic_parse`` events, numbers appended to a list and turned into float64 arrays a
  million at a time, no checks. A full reader (bounds, depth, value budget, field names) only
  adds to it.
- ``ijson-items``: ``ijson.items(f, "itls.item")``, the gaps' rows built in C and turned into
  arrays, the other keys not read: a lower bound of a one-pass ijson reader, which cannot build
  only some keys in C.
- ``orjson-whole``: ``orjson.loads`` of the whole file (what bounded memory replaced).
- ``orjson-slices``: the per-request arrays located in an mmap of the file by their keys (the
  vLLM layout is known: no key text inside strings, ``itls`` ends at its first ``]]``), each
  parsed by one ``orjson.loads`` of its slice and turned into float64 arrays; the other keys
  not read, no checks (a lower bound of a reader that keeps the top-level keys in orjson).

ijson is not in the lock files (it is what is measured): install it into the venv first.

Usage::

    .venv/bin/python -m pip install ijson==3.6.0   # or uv pip install
    .venv/bin/python benchmarks/json_parsers.py --requests 100000 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from streaming import PY, ROOT, write_result

READERS = {
    "jsonstream": """
from rackbook.core import vllm_json
d = vllm_json.load_detailed(PATH)
n = len(d["itls"].values)
""",
    "ijson-events": """
import ijson, numpy as np
vals, parts, n = [], [], 0
with open(PATH, "rb") as f:
    for ev, v in ijson.basic_parse(f, use_float=True, buf_size=1 << 20):
        if ev == "number":
            vals.append(v)
            if len(vals) >= 1 << 20:
                parts.append(np.array(vals))
                vals.clear()
parts.append(np.array(vals))
n = sum(len(p) for p in parts)
""",
    "ijson-items": """
import itertools, ijson, numpy as np
n = 0
with open(PATH, "rb") as f:
    rows = ijson.items(f, "itls.item", use_float=True, buf_size=1 << 20)
    for batch in iter(lambda: list(itertools.islice(rows, 4096)), []):
        n += len(np.fromiter(itertools.chain.from_iterable(batch), np.float64))
""",
    "orjson-whole": """
import orjson
with open(PATH, "rb") as f:
    d = orjson.loads(f.read())
n = sum(len(r) for r in d["itls"])
""",
    "orjson-slices": """
import itertools, mmap, numpy as np, orjson
with open(PATH, "rb") as f:
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    for key in (b"input_lens", b"output_lens", b"ttfts", b"latencies", b"start_times"):
        i = mm.find(b'"' + key + b'": [') + len(key) + 4
        np.asarray(orjson.loads(mm[i : mm.find(b"]", i) + 1]), dtype=np.float64)
    i = mm.find(b'"itls": [') + 8
    rows = orjson.loads(mm[i : mm.find(b"]]", i) + 2])
    lens = np.fromiter(map(len, rows), np.int64, len(rows))
    n = len(np.fromiter(itertools.chain.from_iterable(rows), np.float64, int(lens.sum())))
""",
}


def run(reader: str, path: Path) -> dict[str, object]:
    """One reader in a child: its CPU seconds, wall seconds, peak RSS and the values it read."""
    code = f"PATH = {str(path)!r}\n" + READERS[reader] + "print(n)\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    p = subprocess.Popen([PY, "-c", code], env=env, stdout=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    out = p.stdout.read().decode().strip() if p.stdout else ""
    return {
        "reader": reader,
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "wall_s": round(time.perf_counter() - t0, 2),
        "peak_rss_mb": round(ru.ru_maxrss * 1024 / 1e6),
        "values": int(out) if out.isdigit() else out,
        "rc": os.waitstatus_to_exitcode(status),
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", default="100000", help="sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--dir", type=Path, default=Path("/tmp/rb-bench"))
    a = ap.parse_args(argv)
    for n in (int(x) for x in a.requests.split(",")):
        src = a.dir / f"vllm-stream-{n}.json"
        if not src.exists():
            write_result(src, n)
        for _ in range(a.repeat):  # alternating: each round runs every reader once
            for reader in a.readers.split(","):
                r = run(reader, src)
                r.update(requests=n, file_mb=round(src.stat().st_size / 1e6))
                print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
