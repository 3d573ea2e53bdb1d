"""``rackbook calibrate``: a decode step's kernels timed with torch on this device (the reference
H200 measurement's :data:`METHOD`), a summary and the calibration folder. Imports no torch."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib.util
import json
import math
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackbook import paths
from rackbook.core import fsio, schema
from rackbook.core.provenance import hardware_inventory, project_commit, repo_relative
from rackbook.errors import InputError

_REFERENCE = paths.DATA / "calibration" / "h200-kernels.reference.json"
_REF_METHOD = json.loads(_REFERENCE.read_text(encoding="utf-8"))["method"]
#: The reference H200 measurement's method (run.json ``method`` of a CUDA calibration).
METHOD: dict[str, str] = {
    k: _REF_METHOD[k] for k in "timing graphs bandwidth dense_gemm".split()
} | {
    "experts": "one routed expert = gate+up [H -> 2I] and down [I -> H] (H = hidden_size, I = "
    "moe_intermediate_size from the model catalog), weights [out, in] row-major; 96 distinct "
    "experts cycled in one graph so weights stream from HBM (L2 is 60 MB); M = tokens routed "
    "to the expert (fp8 pads M below 16 to 16); the two GEMMs only (their inputs random, no "
    "activation between them); FLOPs = 2 M H 3 I; weight bytes = 3 H I x bytes per element",
    "indexer_scan": "one decode token: q [heads, index_head_dim] bf16 against N keys [N, "
    "index_head_dim] bf16: relu(K q^T) [N, heads] then @ w [heads, 1], then top-2048; per "
    "index layer; bytes = the keys",
    "sparse_attention": "one decode token, heads x latent head_dim, gather 2,048 rows from a "
    "pool of N rows, softmax(q g^T / sqrt head_dim) g, bf16",
    "sizes": "N calls per batch chosen so that a batch lasts at least 25 ms (one call timed "
    "after the warm-ups); 1 s of bf16 8192^3 GEMMs before the first timing (clocks up from "
    "idle); nvidia-smi read after the run",
}
CPU_METHOD: dict[str, str] = {
    **{k: v.replace("bf16", "fp32") for k, v in METHOD.items() if k != "graphs"},
    "timing": "wall clock (time.perf_counter); 1 warm-up call, then 3 batches of N calls, "
    "seconds per call = best batch / N",
    "graphs": "none (eager calls: the CPU has no graphs; launch overhead included)",
    "bandwidth": "64 MiB fp32 tensor: read = x.sum(), bytes = tensor size; copy = y.copy_(x), "
    "bytes = 2 x size (DRAM, not HBM)",
    "experts": METHOD["experts"]
    .replace("96 distinct experts cycled in one graph", "2 distinct experts cycled per call")
    .replace("stream from HBM (L2 is 60 MB)", "stream from DRAM")
    .replace("fp8 pads M below 16 to 16", "fp32 on CPU"),
    "dense_gemm": "n x n x n, fp32 and bf16 a@b; fp8 e4m3 via torch._scaled_mm (scale 1.0, "
    "bf16 out) where this CPU torch has it; FLOPs = 2 n^3",
    "sizes": "N calls per batch chosen so that a batch lasts at least 20 ms",
}


TOPK = 2048  # rows the index scan keeps and sparse attention gathers
#: Warm-up calls before timing (CPU: 1), batches timed (the best counts), least s per batch.
WARMUPS, BATCHES = 5, 3
TARGET_BATCH_S = {"cuda": 0.025, "cpu": 0.02}
EXPERTS_CYCLED = {"cuda": 96, "cpu": 2}


@dataclass(frozen=True)
class Case:
    """One timed kernel shape (bytes and FLOPs per call)."""

    family: str
    dtype: str
    size: int
    bytes: float | None
    flops: float | None


WIDTH = {"bf16": 2, "fp8": 1, "fp32": 4}
EXPERT_TOKENS = (1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SCAN_KEYS = (131072, 262144, 524288, 875520)
POOL_ROWS = (131072, 875520)
DENSE_N = (8192, 16384)


def plan(device: str, shapes: Mapping[str, int], *, fp8: bool, quick: bool = False) -> list[Case]:
    """The kernels to time: CUDA the reference's sizes (``quick`` fewer); CPU small, FP32."""
    h, i, ihd = shapes["hidden_size"], shapes["moe_intermediate_size"], shapes["index_head_dim"]
    if device == "cuda":
        main, gemm_dtypes, hbm = "bf16", ["bf16"] + (["fp8"] if fp8 else []), 8 << 30
        dense = {d: [8192] if quick else list(DENSE_N) for d in gemm_dtypes}
        tokens = {d: [1, 128, 4096] if quick else list(EXPERT_TOKENS) for d in gemm_dtypes}
        keys = [SCAN_KEYS[0], SCAN_KEYS[-1]] if quick else list(SCAN_KEYS)
        pools = list(POOL_ROWS)
    else:
        main, hbm = "fp32", 64 << 20
        dense = {"fp32": [256, 512], "bf16": [128]} | ({"fp8": [128]} if fp8 else {})
        tokens = {"fp32": [1, 16] if quick else [1, 4, 16]}
        keys = pools = [16384] if quick else [16384, 65536]
    w = WIDTH[main]
    cases = [Case("hbm_read", main, hbm, hbm, None), Case("hbm_copy", main, hbm, 2 * hbm, None)]
    cases += [Case("dense_gemm", d, n, None, 2.0 * n**3) for d, ns in dense.items() for n in ns]
    cases += [
        Case("expert_gemm", d, m, 3 * h * i * WIDTH[d], 2.0 * m * h * 3 * i)
        for d, ms in tokens.items()
        for m in ms
    ]
    cases += [Case("indexer_scan", main, n, n * ihd * w, None) for n in keys]
    return cases + [Case("sparse_attention", main, n, None, None) for n in pools]


def bytes_text(n: float) -> str:
    """A size in bytes in binary units: ``8 GiB``, ``64 MiB``, ``512 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def row(case: Case, seconds: float) -> dict[str, Any]:
    """The kernels.parquet row of ``case`` at ``seconds`` per call; ValueError unless > 0."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{case.family} {case.dtype} {case.size}: time {seconds!r} s")
    b, f = (None if v is None else float(v) for v in (case.bytes, case.flops))
    kernel = {"family": case.family, "dtype": case.dtype, "size": int(case.size)}
    return kernel | {"seconds": float(seconds), "bytes": b, "flops": f}


def fp8_available(torch: Any, device: str) -> tuple[bool, str]:
    """Whether ``torch._scaled_mm`` runs FP8 E4M3 here, and why not."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return False, f"torch {torch.__version__} has no float8_e4m3fn/_scaled_mm"
    try:
        a = torch.ones(16, 16, device=device).to(torch.float8_e4m3fn)
        one = torch.ones((), device=device)
        torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        if device == "cuda":
            torch.cuda.synchronize()
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        return False, f"torch._scaled_mm refused FP8 on {device}: {str(exc).splitlines()[0][:160]}"
    return True, ""


class Bench:
    """The kernels of each family as torch calls on one device (tensors made per case)."""

    def __init__(self, torch: Any, device: str, shapes: Mapping[str, int]) -> None:
        self.torch, self.device, self.shapes = torch, device, shapes
        self.gen = torch.Generator(device=device).manual_seed(0)
        self.cache: dict[str, Any] = {}  # the bandwidth tensors, kept for the next case

    def _batch(self, fn: Callable[[], Any], n: int) -> float:
        if self.device == "cuda":
            t = self.torch.cuda
            start, end = t.Event(enable_timing=True), t.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return time.perf_counter() - t0

    def timer(self, fn: Callable[[], Any]) -> float:
        """Seconds per call of ``fn``: warm-ups, then the best of :data:`BATCHES` batches of N."""
        for _ in range(WARMUPS if self.device == "cuda" else 1):
            fn()
        one = max(self._batch(fn, 1), 1e-7)
        n = max(1, min(10_000, math.ceil(TARGET_BATCH_S[self.device] / one)))
        return min(self._batch(fn, n) for _ in range(BATCHES)) / n

    def dt(self, dtype: str) -> Any:
        return self.torch.float32 if dtype == "fp32" else self.torch.bfloat16

    def randn(self, *shape: int, dtype: str) -> Any:
        t = self.torch
        x = t.randn(*shape, device=self.device, dtype=self.dt(dtype), generator=self.gen)
        return x.to(t.float8_e4m3fn) if dtype == "fp8" else x

    def mm(self, dtype: str) -> Callable[[Any, Any], Any]:
        """``a @ b`` in ``dtype``; for FP8 ``b`` must be column-major (a transposed weight)."""
        t = self.torch
        if dtype != "fp8":
            return t.mm
        one = t.ones((), device=self.device)
        return lambda a, b: t._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=t.bfloat16)

    def graphed(self, step: Callable[[], Any]) -> Callable[[], Any]:
        """``step`` captured in one CUDA graph (replayed per call); on CPU ``step`` itself."""
        t = self.torch
        if self.device != "cuda":
            return step
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):  # cuBLAS workspaces and kernels chosen outside the capture
            for _ in range(2):
                step()
        t.cuda.current_stream().wait_stream(side)
        t.cuda.synchronize()
        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            step()
        t.cuda.synchronize()
        return graph.replay

    def time(self, case: Case) -> float:
        """Seconds per call of ``case``."""
        t, cache = self.torch, self.cache
        fam, dtype, n = case.family, case.dtype, case.size
        if fam in ("hbm_read", "hbm_copy"):
            if cache.get("hbm_n") != n:
                cache.clear()
                x = t.empty(n // WIDTH[dtype], device=self.device, dtype=self.dt(dtype))
                x.normal_(generator=self.gen)
                cache.update(hbm_n=n, x=x, y=t.empty_like(x))
            x, y = cache["x"], cache["y"]
            read, copy = (lambda: x.sum(dtype=t.float32)), (lambda: y.copy_(x))
            return self.timer(read if fam == "hbm_read" else copy)
        cache.clear()
        if fam == "dense_gemm":
            a, b = self.randn(n, n, dtype=dtype), self.randn(n, n, dtype=dtype)
            mm, bt = self.mm(dtype), b.t()  # FP8: b^T is column-major, as _scaled_mm wants
            return self.timer(lambda: mm(a, bt) if dtype == "fp8" else a @ b)
        if fam == "expert_gemm":
            return self.expert(case)
        heads = self.shapes["num_attention_heads"]
        if fam == "indexer_scan":
            dim = self.shapes["index_head_dim"]
            keys, q = self.randn(n, dim, dtype=dtype), self.randn(heads, dim, dtype=dtype)
            w = self.randn(heads, 1, dtype=dtype)
            return self.timer(
                self.graphed(lambda: t.topk((t.relu(keys @ q.t()) @ w).view(-1), TOPK))
            )
        dim = self.shapes["head_dim"]  # sparse_attention, the last family (plan)
        pool, q = self.randn(n, dim, dtype=dtype), self.randn(heads, dim, dtype=dtype)
        idx = t.randint(0, n, (TOPK,), device=self.device, generator=self.gen)
        scale = 1.0 / math.sqrt(dim)

        def attend() -> Any:
            g = pool[idx]
            return t.softmax(q @ g.t() * scale, dim=-1) @ g

        return self.timer(self.graphed(attend))

    def expert(self, case: Case) -> float:
        """An expert's gate+up and down GEMMs over :data:`EXPERTS_CYCLED`; s per expert."""
        h, i = self.shapes["hidden_size"], self.shapes["moe_intermediate_size"]
        dtype, experts = case.dtype, EXPERTS_CYCLED[self.device]
        rows = max(case.size, 16) if dtype == "fp8" else case.size  # _scaled_mm: 16s
        w13t = [self.randn(2 * i, h, dtype=dtype).t() for _ in range(experts)]  # [out, in]^T
        w2t = [self.randn(h, i, dtype=dtype).t() for _ in range(experts)]
        x, a = self.randn(rows, h, dtype=dtype), self.randn(rows, i, dtype=dtype)
        mm = self.mm(dtype)

        def step() -> None:
            for e in range(experts):
                mm(x, w13t[e])
                mm(a, w2t[e])

        return self.timer(self.graphed(step)) / experts


def measure(
    cases: list[Case], torch: Any, device: str, shapes: Mapping[str, int]
) -> list[dict[str, Any]]:
    """kernels.parquet rows of ``cases``, a stderr line each (CUDA: after 1 s of GEMMs)."""
    bench = Bench(torch, device, shapes)
    rows: list[dict[str, Any]] = []
    try:
        if device == "cuda":
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.0:
                for _ in range(10):
                    a @ a
                torch.cuda.synchronize()
        for i, case in enumerate(cases, 1):
            rows.append(row(case, bench.time(case)))
            what = f"{case.family} {case.dtype} {case.size:,}"
            print(f"calibrate: {i}/{len(cases)} {what}", file=sys.stderr, flush=True)
    finally:
        bench.cache.clear()
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


@dataclass(frozen=True)
class Catalog:
    """Model shapes; ``gpus``: id -> name, data sheet (TB/s, TFLOP/s; None: unknown); ``source``."""

    model: str
    shapes: dict[str, int]
    gpus: dict[str, dict[str, Any]]
    source: str


SHEET = ("hbm_TBps", "bf16_dense_TFLOPs", "fp8_dense_TFLOPs")
#: The model shapes a calibration times: ``architecture`` fields, the second ``moe``'s.
SHAPES = tuple(
    "hidden_size moe_intermediate_size num_attention_heads head_dim index_head_dim".split()
)


def catalog_from_specs(model: Any, gpus: Mapping[str, Any], source: str) -> Catalog:
    """A :class:`Catalog` of a ``ModelSpec`` and ``gpus`` (by attribute); InputError: shape <= 0."""
    shapes = {
        k: getattr(model.moe if k.startswith("moe") else model.architecture, k) for k in SHAPES
    }
    for k, v in shapes.items():
        if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
            why = f"the model catalog gives {v!r}: calibrate needs it > 0"
            raise InputError(model.file, k, why)
    sheets = {}
    for gid, g in gpus.items():  # data sheet in TB/s and TFLOP/s
        tera = (g.hbm_bandwidth_bytes_per_s, g.dense_flops.bf16, g.dense_flops.fp8)
        sheets[gid] = {"name": g.name} | {
            k: None if v is None else float(v) / 1e12 for k, v in zip(SHEET, tera, strict=True)
        }
    return Catalog(model.id, {**shapes, "index_topk": TOPK}, sheets, source)


class _Yaml(dict):
    __getattr__ = dict.get


def catalog_from_yaml(model: str, data: Path = paths.DATA) -> Catalog:
    """:func:`catalog_from_specs` on data/ read by PyYAML, unvalidated (no pydantic); any case."""
    import yaml

    files = {p.stem.lower(): p for p in (data / "models").glob("*.yaml")}
    key = model.lower().split("/")[-1]
    if key not in files:
        why = f"unknown model {model!r}; known: {', '.join(sorted(files))}"
        raise InputError(data / "models", "model", why)

    def read(path: Path) -> Any:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        return json.loads(json.dumps(doc, default=str), object_hook=_Yaml)

    m = _Yaml(read(files[key]) | {"file": str(files[key])})
    how = "data/models and data/hardware.yaml read with PyYAML (pydantic missing: not validated)"
    return catalog_from_specs(m, read(data / "hardware.yaml").gpus, how)


def match_gpu(device_name: str, gpus: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Catalog id of the chip in ``device_name`` (NVIDIA H200: h200); None: PCIe/NVL or unknown."""
    words = re.split(r"[\s_\-/]+", device_name.upper())
    chips = [w for w in words if re.fullmatch(r"G?[A-Z]\d{3}[A-Z]?", w)]
    if not chips or {"PCIE", "NVL"} & set(words):  # another product, another data sheet
        return None
    return next((gid for gid in gpus if gid.split("-")[0].upper() == chips[0]), None)


def device_spec(device_name: str, catalog: Catalog) -> dict[str, Any] | None:
    """run.json ``spec``: the matched GPU's data sheet and catalog id, or None."""
    if (gid := match_gpu(device_name, catalog.gpus)) is None:
        return None
    return {k: catalog.gpus[gid][k] for k in SHEET} | {"catalog": gid}


def _rate(r: Mapping[str, Any], what: str, sheet: float | None) -> str:
    of = {"expert_gemm": " of weights", "indexer_scan": " of keys"}.get(r["family"], "")
    of = of if what == "bytes" else ""
    unit, small = ("TB/s", "GB/s") if what == "bytes" else ("TFLOP/s", "GFLOP/s")
    rate = r[what] / r["seconds"] / 1e12
    text = f"{rate:,.4g}" if what == "flops" else f"{rate:.3g}"
    text = f"{text} {unit}" if rate >= 0.1 else f"{rate * 1e3:.3g} {small}"
    share = f"{100 * rate / sheet:.0f} % of {sheet:,.4g} {unit}" if sheet else "no data sheet"
    return f"{text}{of}, {share}"


def _us(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e3:.4g} ms" if seconds < 1 else f"{seconds:.4g} s"


def summary(rows: Iterable[Mapping[str, Any]], spec: Mapping[str, Any] | None) -> list[str]:
    """Per family and dtype, the rate (TB/s, TFLOP/s or s per call) and share of ``spec``."""
    spec = spec or {}
    hbm = spec.get("hbm_TBps")
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["dtype"]), []).append(r)
    out = []
    for (fam, dtype), rs in groups.items():
        rs = sorted(rs, key=lambda r: r["size"])
        peak = spec.get(f"{dtype}_dense_TFLOPs")
        if fam in ("hbm_read", "hbm_copy"):
            r = max(rs, key=lambda r: r["bytes"] / r["seconds"])
            lines = [(bytes_text(r["size"]), _rate(r, "bytes", hbm))]
        elif fam == "dense_gemm":
            r = max(rs, key=lambda r: r["flops"] / r["seconds"])
            lines = [(f"{r['size']}^3", _rate(r, "flops", peak))]
        elif fam == "expert_gemm":  # the smallest (weights streamed) and the best (FLOPs)
            lo, hi = rs[0], max(rs, key=lambda r: r["flops"] / r["seconds"])
            lines = [(f"{lo['size']:,} tok", f"{_us(lo['seconds'])}, {_rate(lo, 'bytes', hbm)}")]
            if hi is not lo:
                flops = f"{_us(hi['seconds'])}, {_rate(hi, 'flops', peak)}"
                lines.append((f"{hi['size']:,} tok", flops))
        elif fam == "indexer_scan":
            r = rs[-1]
            lines = [(f"{r['size']:,} keys", f"{_us(r['seconds'])}, {_rate(r, 'bytes', hbm)}")]
        else:
            lines = [(f"{r['size']:,} rows", _us(r["seconds"])) for r in rs]
        name = f"{fam} {dtype}".strip()
        out += [f"  {name:<22} {size:>14}  {text}" for size, text in lines]
    return out


SMI_FIELDS = "name,driver_version,clocks.sm,clocks.mem,power.limit,memory.total"


def nvidia_smi() -> str | None:
    """``nvidia-smi``'s :data:`SMI_FIELDS` line for GPU 0; None without it."""
    cmd = ["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader", "-i", "0"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def calibrate(
    device: str, catalog: Catalog, *, quick: bool, command: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Measure every family on ``device``: (run.json, rows); InputError without torch/device."""
    if importlib.util.find_spec("torch") is None:
        why = "not installed here: run .venv-live/bin/rackbook calibrate (make live-setup)"
        raise InputError(sys.executable, "torch", why)
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        why = f"torch {torch.__version__} sees no CUDA device (use --device cpu to exercise the "
        raise InputError("--device", "cuda", why + "benchmarks here)")
    notes: list[str] = []
    fp8, why = fp8_available(torch, device)
    if not fp8:
        notes.append(f"FP8 skipped: {why}.")
    t0 = time.monotonic()
    rows = measure(
        plan(device, catalog.shapes, fp8=fp8, quick=quick), torch, device, catalog.shapes
    )
    wall = time.monotonic() - t0
    if device == "cuda":
        gpu, sms = torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0)
        smi = nvidia_smi() or f"{gpu} (nvidia-smi not found)"
        if (spec := device_spec(gpu, catalog)) is None:
            notes.append(f"{gpu!r} is not in data/hardware.yaml: no data sheet to compare with.")
        driver = smi.split(",")[1].strip() if smi.count(",") >= 5 else None
        hw = {"gpu": gpu, "hardware": f"{smi}; {sms.multi_processor_count} SMs", "spec": spec}
    else:
        inv, driver = hardware_inventory(), None
        mem, cpu = inv.get("memory_bytes"), inv.get("cpu_model") or "unknown CPU"
        memory = f", {mem / 2**30:.0f} GiB memory" if mem else ""
        notes.append(
            "CPU calibration: exercises the benchmarks (DRAM, not HBM; FP32 where CUDA times "
            "BF16, no graphs); its fractions say nothing of a GPU."
        )
        hw = {"gpu": cpu, "hardware": f"{cpu}, {inv.get('cpu_cores')} cores{memory}", "spec": None}
    notes.append(
        f"Shapes from {catalog.model} ({catalog.source}); top-{TOPK} rows as the "
        f"reference measurement; {len(rows)} kernels timed in {wall:.0f} s"
        f"{' (--quick: fewer sizes)' if quick else ''}."
    )
    versions = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda if device == "cuda" else None,
        "driver": driver,
        "python": sys.version.split()[0],
        "threads": torch.get_num_threads() if device == "cpu" else None,
    }
    run = {  # the calibration's run.json (kind recorded)
        "schema_version": schema.SCHEMA_VERSION,
        "content": "calibration",
        "kind": "recorded",
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "project_commit": project_commit(),
        "device": device,
        **hw,  # gpu, hardware, spec
        "versions": versions,
        "shapes": dict(catalog.shapes),
        "method": dict(METHOD if device == "cuda" else CPU_METHOD),
        "commands": [repo_relative(command)],
        "notes": " ".join(notes),
    }
    return run, rows


def cli_calibrate(args: argparse.Namespace, catalog: Callable[[], Catalog]) -> int:
    """``rackbook calibrate``: ``-o`` checked and locked before any kernel runs (or --from-json)."""
    output = None if args.output is None else Path(args.output).absolute()
    saved = None if args.save_json is None else Path(args.save_json).absolute()
    if args.from_json is not None:
        if output is None or saved is not None or args.quick or args.device is not None:
            raise InputError(args.from_json, "--from-json", "takes only -o DIR (the folder)")
    elif output is None and saved is None:
        raise InputError("-", "-o", "give the calibration folder to write (-o DIR)")
    if saved is not None:
        fsio.check_new_file(saved, "--save-json")
    if output is not None:  # the folder is replaced whole: no input or other output inside it
        inputs = {"--from-json": args.from_json, "--save-json": saved}
        fsio.refuse_overlap({"-o": output}, {k: v for k, v in inputs.items() if v is not None})
        fsio.check_output_folder(output, "-o")
    with contextlib.ExitStack() as stack:
        if output is not None:
            stack.enter_context(fsio.output_lock(output, "-o"))
            fsio.check_replaceable(output, "calibration", "-o")
        if args.from_json is not None:
            from rackbook.core.calibration import read_saved, write_calibration

            assert output is not None  # --from-json takes -o DIR (checked above)
            print(write_calibration(output, *read_saved(args.from_json)))
            return 0
        return _measure_and_write(args, catalog(), output, saved)


def _measure_and_write(
    args: argparse.Namespace, cat: Catalog, output: Path | None, saved: Path | None
) -> int:
    lack = [m for m in ("pandas", "pyarrow") if importlib.util.find_spec(m) is None]
    missing = (", ".join(lack) or None) if output is not None else None
    if missing and saved is None:
        why = f"{missing} not installed here, so the folder cannot be written: add --save-json "
        why += "FILE and convert it with rackbook calibrate --from-json FILE -o DIR where they are"
        raise InputError("-", "-o", why)
    command = "rackbook " + shlex.join(args.argv)  # as given (cli.parse)
    run, rows = calibrate(args.device or "cuda", cat, quick=args.quick, command=command)
    try:
        if saved is not None:
            fsio.atomic_write_json(saved, {"run": run, "kernels": rows}, "--save-json")
        print(f"calibration of {run['gpu']} ({_sheet_text(run['spec'])}):")
        print("\n".join(summary(rows, run["spec"])))
        if not run["spec"]:
            print(NO_ATTAINABLE)
        if output is not None and missing:
            how = f"convert it with rackbook calibrate --from-json {saved} -o {output}"
            print(f"calibrate: {missing} missing here: wrote only {saved}; {how}", file=sys.stderr)
        elif output is not None:
            import pandas as pd

            from rackbook.core import calibration

            cols = [c.name for c in schema.CALIBRATION_KERNELS]
            print(calibration.write_calibration(output, run, pd.DataFrame(rows, columns=cols)))
    except BaseException:  # interrupted or failed: no --save-json file left of this run
        if saved is not None:
            with contextlib.suppress(OSError):
                saved.unlink()
        raise
    if saved is not None:
        print(saved)
    return 0


NO_ATTAINABLE = (
    "This gives no attainable estimate: the device (a CPU, or a GPU not in the catalog) has no "
    "data sheet in data/hardware.yaml to scale, so `rackbook check --calibration` reports none."
)


def _sheet_text(spec: Mapping[str, Any] | None) -> str:
    if not spec:
        return "no data sheet: shares not given"
    parts = [f"catalog {spec.get('catalog')}", f"{spec['hbm_TBps']:g} TB/s"]
    peaks = (("bf16_dense_TFLOPs", "BF16"), ("fp8_dense_TFLOPs", "FP8"))
    return ", ".join(parts + [f"{v:,.0f} TFLOP/s {n}" for k, n in peaks if (v := spec.get(k))])
