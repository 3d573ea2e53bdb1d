"""Hostile inputs: every one gets one ``error:`` line, within bounded memory and time, and leaves
nothing written.

Each case runs the installed ``rackbook`` command as a subprocess in a fresh working folder,
with its address space limited to 1 GiB (``RLIMIT_AS``) and a 10 s wall-clock limit, and checks
the exit code (2 bad input, 130 interrupted, 143 terminated), that stderr is exactly one line
starting ``error: `` (no traceback), the text that line must name, and that the working folder
(where every output would go, and the build folder ``RACKBOOK_BUILD``) is exactly as before:
no output, no temporary sibling.

All inputs are made here (hand-made or copied from the shipped traces, then broken).
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import small_result

from rackbook import paths

RACKBOOK = str(Path(sys.executable).with_name("rackbook"))
MEMORY_BYTES = 1 << 30  # 1 GiB address space
#: Not a speed limit (timing goes to benchmarks/; a loaded CI machine runs a command 5x
#: slower): only a guard so that a command that hangs (a FIFO waited on) fails the test
#: instead of blocking the run.
HANG_GUARD_S = 600.0
#: Where tests of other modules' code keep out (the checkout's own build folder).
SHIPPED = paths.TRACES


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def tree(folder: Path) -> dict[str, int]:
    """Every file and folder under ``folder`` (hidden ones too) -> size (-1 for a folder)."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out[str(p.relative_to(folder))] = -2
        else:
            out[str(p.relative_to(folder))] = -1 if p.is_dir() else p.stat().st_size
    return out


def cli(
    work: Path,
    argv: list[str],
    *,
    signal_after: tuple[int, float, str] | None = None,
    sent: list[int] | None = None,
):
    """Run ``rackbook ARGV`` in ``work`` under the limits; (exit code, stdout, stderr, seconds).

    ``signal_after`` (signal, delay, pattern): send the signal ``delay`` seconds after a file
    matching the glob ``pattern`` (relative to ``work``; "" for none) appears; the signal is
    appended to ``sent`` if it was sent (the run had not ended first)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACKBOOK_")}
    env |= {"RACKBOOK_BUILD": str(work / "_build"), "PYTHONHASHSEED": "0", "COLUMNS": "100"}
    if (work / "fake-venv").is_dir():  # a live env half set up (see fake_live_venv)
        env["RACKBOOK_LIVE_VENV"] = str(work / "fake-venv")
    env["OPENBLAS_NUM_THREADS"] = "1"  # OpenBLAS reserves memory per thread: keep under 1 GiB
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [RACKBOOK, *argv],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=_limit,
        start_new_session=True,
    )
    try:
        if signal_after is not None:
            sig, delay, marker = signal_after
            while marker and not any(work.glob(marker)) and proc.poll() is None:
                if time.monotonic() - t0 > HANG_GUARD_S:
                    break
                time.sleep(0.005)
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
                if sent is not None:
                    sent.append(sig)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"rackbook {argv} ran past {HANG_GUARD_S} s; stderr tail: {err[-500:]}")
    return proc.returncode, out, err, time.monotonic() - t0


# --------------------------------------------------------------------------------------------
# inputs


def write(work: Path, name: str, data: str | bytes) -> str:
    p = work / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data, encoding="utf-8")
    return name


def deep_json(depth: int = 200_000) -> str:
    return "[" * depth + "]" * depth


def alias_bomb(levels: int = 9) -> str:
    """A YAML "billion laughs": each level a list of nine aliases of the one before."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join(f"*a{i - 1}" for _ in range(9))
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append(f"batch_sizes: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def copy_trace(work: Path, result: str, name: str | None = None) -> Path:
    dst = work / (name or result)
    shutil.copytree(SHIPPED / result, dst)
    return dst


def edit_run(trace: Path, **fields) -> None:
    run = json.loads((trace / "run.json").read_text())
    run.update(fields)
    (trace / "run.json").write_text(json.dumps(run))


def empty_trace(work: Path, name: str = "empty") -> str:
    """A valid trace folder with no requests (the all-empty-lists vLLM JSON, as a trace)."""
    t = copy_trace(work, "single-user", name)
    for table in ("requests", "itl", "points"):
        tab = pq.read_table(t / f"{table}.parquet")
        pq.write_table(tab.slice(0, 0), t / f"{table}.parquet")
    return name


def partial_decode_parity(work: Path) -> str:
    """The shipped decode-parity trace without its batch-256 points."""
    t = copy_trace(work, "decode-parity", "partial")
    pts = pq.read_table(t / "points.parquet").to_pandas()
    keep = pts[pts["batch_size"] != 256]["point_id"]
    assert len(keep) < len(pts)
    req = pq.read_table(t / "requests.parquet").to_pandas()
    gone_rows = ~req["point_id"].isin(keep)
    assert gone_rows.any()
    return "partial"


def fifo(work: Path, name: str) -> str:
    os.mkfifo(work / name)
    return name


def sparse(work: Path, name: str, size: int) -> str:
    with open(work / name, "wb") as fh:
        fh.truncate(size)
    return name


VALID = json.dumps(small_result())


def gzip_bomb(work: Path, name: str, mb: int = 600) -> str:
    """A small gzip file that inflates to ``mb`` MB of spaces."""
    with gzip.open(work / name, "wb", compresslevel=9) as fh:
        block = b" " * (1 << 20)
        for _ in range(mb):
            fh.write(block)
    return name


def parquet_loads(work: Path, name: str, layer: int) -> str:
    pq.write_table(
        pa.table({"layer": [0, layer], "expert": [0, 0], "tokens": [1.0, 1.0]}), work / name
    )
    return name


def points_column(trace: Path, column: str, value: int) -> None:
    """Set one column of a trace's points table to ``value`` on every row."""
    t = pq.read_table(trace / "points.parquet")
    i = t.schema.get_field_index(column)
    t = t.set_column(i, column, pa.array([value] * t.num_rows, type=t.schema.field(column).type))
    pq.write_table(t, trace / "points.parquet")


def fake_live_venv(work: Path) -> str:
    """A live env whose set-up stopped half-way: python and vllm there, rackbook not."""
    for exe in ("python", "vllm"):
        write(work, f"fake-venv/bin/{exe}", "#!/bin/sh\nexit 1\n")
    return "record"


def symlink(work: Path, name: str, target: str) -> str:
    (work / name).symlink_to(target)
    return name


def big_result(n: int = 200_000) -> str:
    """A valid vLLM result with ``n`` requests of 20 gaps each (seconds to import)."""
    return json.dumps(
        small_result(
            completed=n,
            failed=0,
            max_concurrency=64,
            input_lens=[100] * n,
            output_lens=[21] * n,
            ttfts=[0.1] * n,
            itls=[[0.01] * 20] * n,
            latencies=[0.3] * n,
            start_times=[i / n for i in range(n)],  # within the 2 s the result lasted
            errors=[""] * n,
        )
    )


CHECK = ["check", "--model", "deepseek-v4.1-flash", "--gpu", "h200", "--gpus", "8"]


def check_model(model: str) -> list[str]:
    """``rackbook check`` of 1 tok/s on 8 H200 for ``model``."""
    return ["check", "--model", model, "--gpu", "h200", "--gpus", "8", "--tok-s", "1"]


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[Path], list[str]]  # builds the inputs in the working folder, returns argv
    names: tuple[str, ...] = ()  # texts the error line must contain
    code: int = 2
    signal_after: tuple[int, float, str] | None = None


def C(id: str, make, *names: str, code: int = 2, signal_after=None) -> Case:  # noqa: N802
    return Case(id, make, names, code, signal_after)


CASES: list[Case] = [
    # ---- size, type and nesting of input files (import, every format)
    C(
        "import-dev-zero",
        lambda w: ["import", "vllm-bench", "/dev/zero", "-o", "t"],
        "/dev/zero",
        "not a regular file",
    ),
    C(
        "import-fifo",
        lambda w: ["import", "vllm-bench", fifo(w, "r.json"), "-o", "t"],
        "r.json",
        "not a regular file",
    ),
    C("import-folder", lambda w: ["import", "vllm-bench", ".", "-o", "t"], "is a folder"),
    C(
        "import-missing",
        lambda w: ["import", "vllm-bench", "nope.json", "-o", "t"],
        "nope.json",
        "does not exist",
    ),
    C(
        "import-too-large",
        lambda w: ["import", "vllm-bench", sparse(w, "big.json", 17 << 30), "-o", "t"],
        "big.json",
        "--max-input-mb",
    ),
    C(
        "import-over-raised-limit",
        lambda w: [
            "import",
            "vllm-bench",
            "--max-input-mb",
            "0.0001",
            write(w, "r.json", VALID),
            "-o",
            "t",
        ],
        "r.json",
        "limit 0.0001 MB",
    ),
    C(
        "import-deep-json",
        lambda w: ["import", "vllm-bench", write(w, "d.json", deep_json()), "-o", "t"],
        "d.json",
        "nested deeper than",
    ),
    C(
        "import-empty-lists",
        lambda w: [
            "import",
            "vllm-bench",
            write(
                w,
                "e.json",
                json.dumps(
                    small_result(
                        input_lens=[],
                        output_lens=[],
                        ttfts=[],
                        itls=[],
                        latencies=[],
                        start_times=[],
                        errors=[],
                        completed=0,
                        failed=0,
                    )
                ),
            ),
            "-o",
            "t",
        ],
        "e.json",
        "no requests",
    ),
    C(
        "import-binary",
        lambda w: ["import", "vllm-bench", write(w, "b.json", bytes(range(256))), "-o", "t"],
        "b.json",
    ),
    C(
        "import-newline-name",
        lambda w: ["import", "vllm-bench", "a\nb.json", "-o", "t"],
        "does not exist",
    ),
    C(
        "import-huge-count",
        lambda w: [
            "import",
            "vllm-bench",
            write(w, "n.json", json.dumps(small_result(max_concurrency=10**12))),
            "-o",
            "t",
        ],
        "max_concurrency",
        "at most",
    ),
    C(
        "offline-batch-1e12",
        lambda w: [
            "import",
            "offline-engine",
            write(
                w,
                "o.json",
                json.dumps(
                    {
                        "format": "rackbook-offline-engine",
                        "schema_version": 1,
                        "engine": "x",
                        "engine_version": "1",
                        "model": "m",
                        "hardware": {"gpu_id": "h200", "gpu_count": 8},
                        "rows": [
                            {
                                "batch_size": 1e12,
                                "input_tokens": 8,
                                "output_tokens": 8,
                                "decode_s": 1.0,
                            }
                        ],
                    }
                ),
            ),
            "-o",
            "t",
        ],
        "o.json",
        "batch_size",
        "at most",
    ),
    C(
        "offline-ranks-1e9",
        lambda w: [
            "import",
            "offline-engine",
            write(
                w,
                "o.json",
                json.dumps(
                    {
                        "format": "rackbook-offline-engine",
                        "schema_version": 1,
                        "engine": "x",
                        "engine_version": "1",
                        "model": "m",
                        "hardware": {"gpu_id": "h200", "gpu_count": 8},
                        "rows": [
                            {
                                "batch_size": 8,
                                "decode_ranks": 10**9,
                                "input_tokens": 8,
                                "output_tokens": 8,
                                "decode_s": 1.0,
                            }
                        ],
                    }
                ),
            ),
            "-o",
            "t",
        ],
        "o.json",
        "at most",
    ),
    C(
        "offline-gpus-1e9",
        lambda w: [
            "import",
            "offline-engine",
            write(
                w,
                "o.json",
                json.dumps(
                    {
                        "format": "rackbook-offline-engine",
                        "schema_version": 1,
                        "engine": "x",
                        "engine_version": "1",
                        "model": "m",
                        "hardware": {"gpu_id": "h200", "gpu_count": 10**9},
                        "rows": [
                            {
                                "batch_size": 8,
                                "input_tokens": 8,
                                "output_tokens": 8,
                                "decode_s": 1.0,
                            }
                        ],
                    }
                ),
            ),
            "-o",
            "t",
        ],
        "o.json",
        "gpu_count",
        "at most",
    ),
    C(
        "offline-deep-json",
        lambda w: ["import", "offline-engine", write(w, "d.json", deep_json()), "-o", "t"],
        "d.json",
        "nested deeper than",
    ),
    C(
        "inferencex-deep-json",
        lambda w: ["import", "inferencex", write(w, "d.json", deep_json()), "-o", "t"],
        "d.json",
        "nested deeper than",
    ),
    C(
        "inferencex-dev-zero",
        lambda w: ["import", "inferencex", "/dev/zero", "-o", "t"],
        "not a regular file",
    ),
    C(
        "mlperf-latin1-bom",
        lambda w: [
            "import",
            "mlperf",
            write(w, "s.csv", b"\xef\xbb\xbfModel,Result\ndeepseek-r1,caf\xe9\n"),
            "-o",
            "t",
            "--model",
            "deepseek-r1",
        ],
        "s.csv",
        "byte 0xe9 on line 2",
    ),
    C(
        "mlperf-too-large",
        lambda w: ["import", "mlperf", sparse(w, "s.csv", 17 << 30), "-o", "t"],
        "s.csv",
        "--max-input-mb",
    ),
    C(
        "sglang-fifo",
        lambda w: ["import", "sglang-cookbook", fifo(w, "b.jsx"), "-o", "t"],
        "not a regular file",
    ),
    # ---- where output goes
    C(
        "import-out-proc",
        lambda w: ["import", "vllm-bench", write(w, "r.json", VALID), "-o", "/proc/x"],
        "/proc/x",
    ),
    C(
        "import-out-exists",
        lambda w: [
            copy_trace(w, "single-user", "t") and "import",
            "vllm-bench",
            write(w, "r.json", VALID),
            "-o",
            "t",
        ],
        "t",
        "--force",
    ),
    C(
        "import-out-under-file",
        lambda w: ["import", "vllm-bench", write(w, "r.json", VALID), "-o", "r.json/t"],
        "is a file",
    ),
    C("recipes-out-proc", lambda w: ["recipes", "-o", "/proc/x"], "/proc/x"),
    C("run-out-proc", lambda w: ["run", "single-user", "--out", "/proc/x"], "/proc/x"),
    # ---- numeric flags: nan, inf, bounds
    C(
        "check-tps-nan",
        lambda w: [*CHECK, "--tok-s", "3000", "--tokens-per-step", "nan"],
        "--tokens-per-step",
        "finite",
    ),
    C(
        "check-tps-inf",
        lambda w: [*CHECK, "--tok-s", "3000", "--tokens-per-step", "inf"],
        "--tokens-per-step",
        "finite",
    ),
    C("check-toks-nan", lambda w: [*CHECK, "--tok-s", "nan"], "--tok-s", "finite"),
    C("check-toks-neg-inf", lambda w: [*CHECK, "--tok-s", "-inf"], "--tok-s"),
    C("check-toks-1e400", lambda w: [*CHECK, "--tok-s", "1e400"], "--tok-s", "finite"),
    C(
        "check-gpus-1e9",
        lambda w: [
            "check",
            "--model",
            "deepseek-v4.1-flash",
            "--gpu",
            "h200",
            "--gpus",
            "1000000000",
            "--tok-s",
            "1",
        ],
        "--gpus",
        "from 1 to 1,048,576",
    ),
    C(
        "check-batch-1e12",
        lambda w: [*CHECK, "--tok-s", "1", "--batch", str(10**12)],
        "--batch",
        "from 1 to 10,000,000",
    ),
    C(
        "check-context-1e15",
        lambda w: [*CHECK, "--tok-s", "1", "--context", str(10**15)],
        "--context",
        "to 100,000,000",
    ),
    C(
        "check-model-path",
        lambda w: [
            "check",
            "--model",
            "/etc/passwd",
            "--gpu",
            "h200",
            "--gpus",
            "8",
            "--tok-s",
            "1",
        ],
        "etc/passwd",
        "expected a mapping",
    ),
    C(
        "check-model-file-relative-to-cwd",
        lambda w: [
            "check",
            "--model",
            write(w, "mine.yaml", "just text\n"),
            "--gpu",
            "h200",
            "--gpus",
            "8",
            "--tok-s",
            "1",
        ],
        "mine.yaml",
        "expected a mapping",
    ),  # fmt: skip
    C(
        "kv-bytes-context-huge",
        lambda w: ["kv-bytes", "deepseek-v4.1-flash", "--context", str(10**30)],
        "--context",
        "to 100,000,000",
    ),
    C(
        "eplb-redundant-1e8",
        lambda w: [
            "eplb",
            str(SHIPPED / "eplb-balance/expert_load.parquet"),
            "--ep-size",
            "8",
            "--redundant",
            "100000000",
        ],
        "--redundant",
        "to 65,536",
    ),
    C(
        "eplb-ep-size-1e9",
        lambda w: [
            "eplb",
            str(SHIPPED / "eplb-balance/expert_load.parquet"),
            "--ep-size",
            "1000000000",
        ],
        "--ep-size",
        "to 100,000",
    ),
    C("eplb-folder", lambda w: ["eplb", ".", "--ep-size", "8"], "is a folder"),
    C("eplb-dev-zero", lambda w: ["eplb", "/dev/zero", "--ep-size", "8"], "not a regular file"),
    C(
        "eplb-deep-json",
        lambda w: ["eplb", write(w, "l.json", '{"loads": ' + deep_json() + "}"), "--ep-size", "8"],
        "l.json",
        "nested deeper than",
    ),
    C(
        "eplb-too-many-experts",
        lambda w: [
            "eplb",
            write(w, "l.json", json.dumps({"loads": [[1] * 2_000_000]})),
            "--ep-size",
            "8",
        ],
        "l.json",
        "at most",
    ),
    # ---- YAML: alias bombs, nesting, special files
    C(
        "params-alias-bomb",
        lambda w: ["run", "eplb-balance", "--params-file", write(w, "p.yaml", alias_bomb())],
        "p.yaml",
        "alias",
    ),
    C(
        "params-deep-yaml",
        lambda w: [
            "run",
            "eplb-balance",
            "--params-file",
            write(w, "p.yaml", "a: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        ],
        "p.yaml",
        "nested",
    ),
    C(
        "params-dev-zero",
        lambda w: ["run", "eplb-balance", "--params-file", "/dev/zero"],
        "not a regular file",
    ),
    C(
        "params-too-large",
        lambda w: ["run", "eplb-balance", "--params-file", sparse(w, "p.yaml", 3 << 30)],
        "p.yaml",
        "--max-input-mb",
    ),
    C(
        "topology-alias-bomb",
        lambda w: ["recipes", "--topology", write(w, "t.yaml", alias_bomb()), "-o", "gen"],
        "t.yaml",
        "alias",
    ),
    C(
        "topology-fifo",
        lambda w: ["recipes", "--topology", fifo(w, "t.yaml"), "-o", "gen"],
        "not a regular file",
    ),
    # ---- traces a chapter cannot read
    C(
        "run-trace-missing",
        lambda w: ["run", "single-user", "-p", "trace", "nope"],
        "nope",
        "does not exist",
    ),
    C(
        "run-single-user-on-eplb",
        lambda w: ["run", "single-user", "-p", "trace", str(copy_trace(w, "eplb-balance").name)],
        "eplb-balance",
        "scenario",
    ),
    C(
        "run-single-user-on-published",
        lambda w: [
            "run",
            "single-user",
            "-p",
            "trace",
            str(SHIPPED.parent / "published" / "mlperf-v6.1-dsr1"),
        ],
        "mlperf-v6.1-dsr1",
        "published",
    ),
    C(
        "run-single-user-on-empty",
        lambda w: ["run", "single-user", "-p", "trace", empty_trace(w)],
        "empty",
        "no requests",
    ),
    C(
        "run-schema-99",
        lambda w: [
            edit_run(copy_trace(w, "single-user", "s99"), schema_version=99) or "run",
            "single-user",
            "-p",
            "trace",
            "s99",
        ],
        "s99",
        "schema_version",
    ),
    C(
        "summarize-schema-99",
        lambda w: [
            edit_run(copy_trace(w, "single-user", "s99"), schema_version=99) or "summarize",
            "s99",
        ],
        "s99",
        "schema_version",
    ),
    C("summarize-empty", lambda w: ["summarize", empty_trace(w)], "empty", "no requests"),
    C(
        "summarize-deep-run-json",
        lambda w: [write(w, "tr/run.json", deep_json()) and "summarize", "tr"],
        "run.json",
        "nested deeper than",
    ),
    C(
        "summarize-fifo-run-json",
        lambda w: [(w / "tr").mkdir() or fifo(w, "tr/run.json") and "summarize", "tr"],
        "run.json",
        "not a regular file",
    ),
    C("summarize-file", lambda w: ["summarize", write(w, "x.json", VALID)], "x.json"),
    C(
        "book-reuse-missing",
        lambda w: [
            "book",
            "--traces",
            str(copy_trace(w, "single-user", "mine/single-user").parent.name),
            "--reuse",
            "nope",
            "--html",
            "html",
        ],
        "nope",
        "--reuse",
    ),
    C(
        "book-one-corrupt",
        lambda w: [
            [copy_trace(w, r, f"mine/{r}") for r in ("single-user", "context-latency")]
            and write(w, "mine/context-latency/requests.parquet", b"PAR1garbage")
            and "book",
            "--traces",
            "mine",
            "--out",
            "yours",
            "--html",
            "html",
        ],
        "context-latency",
        "requests.parquet",
    ),
    C(
        "book-reuse-corrupt-json",
        lambda w: [
            copy_trace(w, "single-user", "mine/single-user")
            and write(w, "done/decode-parity.ipynb", "{}")
            and write(w, "done/decode-parity.json", "{not json")
            and "book",
            "--traces",
            "mine",
            "--reuse",
            "done",
            "--out",
            "yours",
            "--html",
            "html",
        ],
        "decode-parity.json",
        "not valid JSON",
    ),
    C("record-unknown-scenario", lambda w: ["record", "nosuch", "-o", "t"], "nosuch"),
    # ---- more of the same kinds
    C(
        "import-gzip-bomb",
        lambda w: ["import", "vllm-bench", gzip_bomb(w, "r.json.gz"), "-o", "t"],
        "r.json.gz",
        "decompresses to over",
    ),
    C(
        "import-symlink-to-dev-zero",
        lambda w: ["import", "vllm-bench", symlink(w, "r.json", "/dev/zero"), "-o", "t"],
        "not a regular file",
    ),
    C(
        "import-out-symlink-loop",
        lambda w: ["import", "vllm-bench", write(w, "r.json", VALID), "-o", symlink(w, "o", "o")],
        "error: o: ",
        "symbolic link",
    ),
    C(
        "eplb-parquet-layer-1e9",
        lambda w: ["eplb", parquet_loads(w, "l.parquet", 10**9), "--ep-size", "8"],
        "l.parquet",
        "at most",
    ),
    C(
        "run-param-redundant-1e8",
        lambda w: ["run", "eplb-balance", "-p", "redundant", "100000000"],
        "parameter redundant",
        "to 65,536",
    ),
    C(
        "run-param-list-2000",
        lambda w: ["run", "eplb-balance", "-p", "ep_sizes", str(list(range(1, 2001)))],
        "parameter ep_sizes",
        "at most 1,000",
    ),
    C(
        "run-param-nan",
        lambda w: ["run", "eplb-balance", "-p", "ep_size", ".nan"],
        "parameter ep_size",
        "expected an integer",
    ),
    C(
        "params-yaml-5mb",
        lambda w: [
            "run",
            "eplb-balance",
            "--params-file",
            write(w, "p.yaml", "skews: [" + "0.5, " * 1_000_000 + "0.5]\n"),
        ],
        "p.yaml",
        "limit 4 MB",
    ),  # fmt: skip
    C(
        "topology-deep-yaml",
        lambda w: [
            "recipes",
            "--topology",
            write(w, "t.yaml", "a: " + "[" * 50_000 + "]" * 50_000),
            "-o",
            "gen",
        ],
        "t.yaml",
        "nested",
    ),  # fmt: skip
    C(
        "summarize-garbage-parquet",
        lambda w: [
            copy_trace(w, "single-user", "g")
            and write(w, "g/requests.parquet", b"PAR1x")
            and "summarize",
            "g",
        ],
        "requests.parquet",
    ),  # fmt: skip
    C(
        "book-html-under-file",
        lambda w: ["book", "--html", write(w, "f.txt", "x") + "/html"],
        "is a file",
    ),
    C(
        "kv-bytes-unknown-model",
        lambda w: ["kv-bytes", "gpt-9"],
        "unknown model",
    ),
    C(
        "check-unknown-gpu",
        lambda w: [
            "check",
            "--model",
            "deepseek-v4.1-flash",
            "--gpu",
            "tpu9",
            "--gpus",
            "8",
            "--tok-s",
            "1",
        ],
        "unknown GPU",
    ),  # fmt: skip
    C(
        "run-param-list-string-entry",
        lambda w: ["run", "decode-parity", "-p", "batch_sizes", "[8, 1e400]"],
        "parameter batch_sizes[1]",
        "expected an integer",
    ),
    C(
        "summarize-expert-load-trace",
        lambda w: ["summarize", str(SHIPPED / "eplb-balance")],
        "no requests",
        "rackbook eplb",
    ),
    C(
        "record-half-set-up-live-env",
        lambda w: [fake_live_venv(w), "single-user", "-o", "t"],
        "fake-venv",
        "rackbook is not installed",
    ),
    # ---- interrupts: the one line, the documented code, nothing left
    *[
        C(
            f"run-{sig.name.lower()}",
            lambda w: ["run", "rack-scaling", "--out", "o"],
            f"{word} ({sig.name})",
            code=128 + sig,
            signal_after=(sig, 0.3, "o/.rack-scaling.ipynb.*.tmp/rack-scaling.ipynb"),
        )
        for sig, word in (
            (signal.SIGTERM, "terminated"),
            (signal.SIGINT, "interrupted"),
            (signal.SIGHUP, "hung up"),
            (signal.SIGQUIT, "quit"),
        )
    ],
    C(
        "run-all-sigint",
        lambda w: ["run", "all", "--force", "-j", "2", "--out", "o"],
        "interrupted (SIGINT)",
        code=130,
        signal_after=(signal.SIGINT, 0.3, "o/.*.ipynb.*.tmp/*.ipynb"),
    ),
    C(
        "sigterm-while-importing",
        lambda w: ["import", "vllm-bench", write(w, "r.json", big_result()), "-o", "t"],
        "SIGTERM",
        code=143,
        # during the imports (the package's own handler) or in the verb: one line either way;
        # an import of seconds, so that 0.3 s never lands in the interpreter's shutdown
        signal_after=(signal.SIGTERM, 0.3, ""),
    ),
    # ---- internal errors of the past, by kind: each one line now
    C("check-toks-denormal", lambda w: [*CHECK, "--tok-s", "5e-324"], "--tok-s", "subnormal"),
    C(
        "check-max-input-mb-1e308",
        lambda w: [*CHECK, "--tok-s", "1", "--max-input-mb", "1e308"],
        "--max-input-mb",
    ),
    C(
        "params-complex-key",
        lambda w: ["run", "eplb-balance", "--params-file", write(w, "p.yaml", "? [a, b]\n: 1\n")],
        "p.yaml",
        "mapping key",
    ),
    C(
        "params-symlink-loop",
        lambda w: ["run", "eplb-balance", "--params-file", symlink(w, "p.yaml", "p.yaml")],
        "p.yaml",
        "symbolic links",
    ),
    C(
        "check-model-symlink-loop",
        lambda w: check_model("./" + symlink(w, "m.yaml", "m.yaml")),
        "m.yaml",
    ),  # fmt: skip
    C(
        "check-trace-published",
        lambda w: [
            *CHECK,
            "--tok-s",
            "1",
            "--trace",
            str(SHIPPED.parent / "published" / "mlperf-v6.1-dsr1"),
        ],
        "--trace",
        "published trace",
    ),  # fmt: skip
    C(
        "check-trace-eplb",
        lambda w: [*CHECK, "--tok-s", "1", "--trace", str(SHIPPED / "eplb-balance")],
        "--trace",
        "no requests",
    ),
    C(
        "run-hardware-gpus-string",
        lambda w: [
            edit_run(copy_trace(w, "single-user", "s"), hardware={"gpus": "eight"}) or "run",
            "single-user",
            "-p",
            "trace",
            "s",
            "--out",
            "o",
        ],
        "run.json.hardware.gpus",
        "must be a list",
    ),
    C(
        "run-param-show-layer",
        lambda w: ["run", "eplb-balance", "-p", "show_layer", "4000"],
        "parameter show_layer",
    ),
    C(
        "run-param-empty-list",
        lambda w: ["run", "decode-parity", "-p", "batch_sizes", "[]"],
        "parameter batch_sizes",
    ),
    C(
        "run-param-kv-dtype",
        lambda w: ["run", "prefill-gain", "-p", "kv_dtype", "int3"],
        "parameter kv_dtype",
        "fp4",
    ),
    C("run-jobs-zero", lambda w: ["run", "all", "-j", "0"], "--jobs"),
    C(
        "eplb-nodes-1000",
        lambda w: [
            "eplb",
            str(SHIPPED / "eplb-balance/expert_load.parquet"),
            "--ep-size",
            "8",
            "--nodes",
            "1000",
        ],
        "--nodes",
    ),
    C(
        "import-label-negative",
        lambda w: [
            "import",
            "vllm-bench",
            write(w, "r.json", VALID),
            "-o",
            "t",
            "--label",
            "concurrency=-5",
        ],
        "concurrency",
    ),
    C(
        "check-hf-id-not-in-catalog",
        lambda w: check_model("Qwen/Qwen3-235B-A22B"),
        "Hugging Face id",
        "data/models/qwen3-235b-a22b.yaml",
    ),
    C(
        "import-sigterm",
        lambda w: ["import", "vllm-bench", write(w, "r.json", big_result()), "-o", "t"],
        "terminated",
        code=143,
        # While the output's temporary sibling exists (the trace half-written), not after a
        # fixed delay: on a quiet machine the import ends within 1.5 s, and the race was lost.
        signal_after=(signal.SIGTERM, 0.0, ".t.*.tmp"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = case.make(work)
    before, names = tree(work), {p.name for p in work.iterdir()}
    for _ in range(10):  # a run that ends before its signal is sent is retried, not judged
        sent: list[int] = []
        code, out, err, took = cli(work, argv, signal_after=case.signal_after, sent=sent)
        if case.signal_after is None or sent:
            break
        for p in work.iterdir():
            if p.name in names:
                continue
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
    else:
        pytest.fail("the signal found the run ended every time: the case tested nothing")
    assert code == case.code, (code, err[-2000:])
    assert err.startswith("error: "), err[-2000:]
    assert err.count("\n") == 1 and err.endswith("\n"), err[-2000:]
    assert "Traceback" not in err
    for name in case.names:
        assert name in err, (name, err)
    assert tree(work) == before, set(tree(work).items()) ^ set(before.items())


#: The project's own files and names, through every verb: each works (exit 0) under the limits.
OWN = [
    ["summarize", str(SHIPPED.parent / "published" / "mlperf-v6.1-dsr1"), "--json"],
    ["summarize", str(SHIPPED.parent / "published" / "sglang-cookbook-v4")],
    ["summarize", str(SHIPPED / "single-user")],
    ["eplb", str(SHIPPED / "eplb-balance/expert_load.parquet"), "--ep-size", "64",
     "--redundant", "64"],
    ["check", "--model", "deepseek-ai/DeepSeek-V4.1-Flash", "--gpu", "H200", "--gpus", "8",
     "--tok-s", "3000"],
    ["kv-bytes", "DeepSeek-V4.1-Flash", "--kv-dtype", "fp8"],
    ["catalog", "--json"],
    ["list", "--json"],
]  # fmt: skip


@pytest.mark.parametrize("argv", OWN, ids=[" ".join(a[:2]).rsplit("/", 1)[-1] for a in OWN])
def test_own_files_work_with_every_verb(argv: list[str], tmp_path: Path) -> None:
    code, out, err, _ = cli(tmp_path, argv)
    assert code == 0, err
    assert err == ""
    if "--json" in argv:
        json.loads(out.strip().splitlines()[-1])
    assert list(tmp_path.iterdir()) == []


def test_at_least_fifty_cases() -> None:
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)
