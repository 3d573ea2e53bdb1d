"""The issue-29 hostile inputs at their reported sizes, each run as a child of this checkout:
exit code, its one line, wall and CPU seconds and peak RSS (``os.wait4``, MB = 10^6 bytes).

Shapes (written under ``--dir``, default /tmp/rb-bench/hostile): a vLLM JSON whose ``ttfts``
holds 60M floats (240 MB); an InferenceX JSON of empty objects (180 MB); a headline JSON for
``rackbook list`` with 200 MB of readings; an EPLB JSON of 30M cells; an MLPerf CSV with a
200 MB field. Usage::

    .venv/bin/python benchmarks/hostile_sizes.py [--baseline CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streaming import PY, measure  # noqa: E402

HEADER = (
    "Organization,Availability,Division,SystemName,Platform,Model,Scenario,Result,"
    "accelerator_model_name,total_accelerators,Location,framework,version,Units,"
    "weight_data_types\n"
)


def _write(path: Path, *parts: bytes, repeat: tuple[bytes, int] | None = None) -> Path:
    if path.exists():
        return path
    with open(path, "wb") as fh:
        fh.write(parts[0])
        if repeat is not None:
            block, n = repeat
            for _ in range(n):
                fh.write(block)
        for p in parts[1:]:
            fh.write(p)
    return path


def cases(d: Path) -> list[tuple[str, list[str]]]:
    d.mkdir(parents=True, exist_ok=True)
    res = d / "results"
    res.mkdir(exist_ok=True)
    floats = b"0.123456789,"  # 12 bytes: 20M per block of 240 MB / 12
    vllm = _write(
        d / "vllm-60M-floats.json",
        b'{"duration": 1.0, "input_lens": [1], "output_lens": [1], "ttfts": [',
        b'0.1], "itls": [[]], "latencies": [1.0], "errors": [""]}',
        repeat=(floats * 1_000_000, 20),
    )
    ix = _write(d / "inferencex-empty.json", b"[", b"{}]", repeat=(b"{}," * 1_000_000, 60))
    reading = json.dumps(
        {"claim_id": "c", "reading": "physics", "verdict": "possible", "reason": "r" * 40}
    ).encode()
    _write(
        res / "decode-parity.json",
        b'{"result": "decode-parity", "headlines": [], "readings": [',
        reading + b"]}",
        repeat=((reading + b",") * 10_000, 200),
    )
    row = b"[" + b"1," * 5_999 + b"1],"
    eplb = _write(d / "eplb-30M.json", b'{"loads": [', b"[1]]}", repeat=(row, 5_000))
    csv = _write(
        d / "mlperf-field.csv",
        HEADER.encode() + b"Acme,available,closed,",
        b",rack,deepseek-r1,Offline,1,GB300,8,x,vllm,1,Tokens/s,fp4\n",
        repeat=(b"R" * 1_000_000, 200),
    )
    url = ["--source-url", "https://x.org"]
    return [
        ("vllm 60M floats", ["import", "vllm-bench", str(vllm), "-o", str(d / "o1")]),
        ("inferencex empty objects", ["import", "inferencex", str(ix), "-o", str(d / "o2"), *url]),
        ("headline for list", ["list", "--out", str(res)]),
        ("eplb 30M cells", ["eplb", str(eplb), "--ep-size", "8"]),
        ("csv 200 MB field", ["import", "mlperf", str(csv), "-o", str(d / "o3"), *url]),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/rb-bench/hostile"))
    ap.add_argument("--baseline", type=Path, default=None)
    a = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    codes = [("this", env)]
    if a.baseline is not None:
        codes.append(("baseline", {**env, "PYTHONPATH": str(a.baseline / "src")}))
    for name, args in cases(a.dir):
        for code, e in codes:
            r = measure([PY, "-m", "rackbook.cli", *args], e)
            for o in ("o1", "o2", "o3"):
                shutil.rmtree(a.dir / o, ignore_errors=True)
            r.update(case=name, code=code)
            print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
