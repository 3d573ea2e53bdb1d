"""The kernels ``rackbook calibrate`` times: the plan (a :class:`Case` per shape) and the timing
(method: :data:`rackbook.live.calibrate.METHOD`). Imports no torch."""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rackbook.errors import InputError

#: Rows the index scan keeps and sparse attention gathers (the reference's top-2,048).
TOPK = 2048
#: Warm-up calls before timing (CPU: 1), batches timed (the best counts), least s per batch.
WARMUPS, BATCHES = 5, 3
TARGET_BATCH_S = {"cuda": 0.025, "cpu": 0.02}
#: Distinct experts cycled per call, so that weights stream from memory, not cache.
EXPERTS_CYCLED = {"cuda": 96, "cpu": 2}


@dataclass(frozen=True)
class Case:
    """One timed kernel shape (bytes and FLOPs per call)."""

    family: str
    dtype: str
    size: int
    bytes: float | None
    flops: float | None
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


WIDTH = {"bf16": 2, "fp8": 1, "fp32": 4}
EXPERT_TOKENS = (1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SCAN_KEYS = (131072, 262144, 524288, 875520)
POOL_ROWS = (131072, 875520)
DENSE_N = (8192, 16384)


def plan(device: str, shapes: Mapping[str, int], *, fp8: bool, quick: bool = False) -> list[Case]:
    """The kernels to time, in order: CUDA the reference's sizes (``quick`` fewer); CPU sizes
    that take seconds, FP32 where CUDA times BF16."""
    h, i = shapes["hidden_size"], shapes["moe_intermediate_size"]
    heads, hd, ihd = shapes["num_attention_heads"], shapes["head_dim"], shapes["index_head_dim"]
    cases: list[Case] = []
    if device == "cuda":
        main, gemm_dtypes = "bf16", ["bf16"] + (["fp8"] if fp8 else [])
        hbm = [8 << 30]
        dense = {d: [8192] if quick else list(DENSE_N) for d in gemm_dtypes}
        tokens = {d: [1, 128, 4096] if quick else list(EXPERT_TOKENS) for d in gemm_dtypes}
        keys = [SCAN_KEYS[0], SCAN_KEYS[-1]] if quick else list(SCAN_KEYS)
        pools = list(POOL_ROWS)
    else:
        main = "fp32"
        hbm = [64 << 20]
        dense = {"fp32": [256, 512], "bf16": [128]} | ({"fp8": [128]} if fp8 else {})
        tokens = {"fp32": [1, 16] if quick else [1, 4, 16]}
        keys = [16384] if quick else [16384, 65536]
        pools = [16384] if quick else [16384, 65536]
    w = WIDTH[main]
    for n in hbm:
        cases.append(Case("hbm_read", main, n, n, None, bytes_text(n)))
        cases.append(Case("hbm_copy", main, n, 2 * n, None, bytes_text(n)))
    cases += [
        Case("dense_gemm", d, n, None, 2.0 * n**3, f"{n}^3") for d, ns in dense.items() for n in ns
    ]
    for dtype, ms in tokens.items():
        weights = 3 * h * i * WIDTH[dtype]
        for m in ms:
            label = f"{m} token{'s' * (m != 1)}"
            cases.append(Case("expert_gemm", dtype, m, weights, 2.0 * m * h * 3 * i, label))
    scan = {"heads": heads, "dim": ihd, "topk": TOPK}
    attend = {"heads": heads, "dim": hd, "topk": TOPK}
    cases += [Case("indexer_scan", main, n, n * ihd * w, None, f"{n:,} keys", scan) for n in keys]
    cases += [Case("sparse_attention", main, n, None, None, f"{n:,} rows", attend) for n in pools]
    return cases


def bytes_text(n: float) -> str:
    """A size in bytes in binary units: ``8 GiB``, ``64 MiB``, ``512 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def row(case: Case, seconds: float) -> dict[str, Any]:
    """The kernels.parquet row of ``case`` timed at ``seconds`` per call; ValueError unless
    finite and positive."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{case.family} {case.dtype} {case.size}: time {seconds!r} s")
    as_float = lambda v: None if v is None else float(v)  # noqa: E731
    return {
        "family": case.family,
        "dtype": case.dtype,
        "size": int(case.size),
        "seconds": float(seconds),
        "bytes": as_float(case.bytes),
        "flops": as_float(case.flops),
    }


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

    def time(self, case: Case, cache: dict[str, Any]) -> float:
        """Seconds per call of ``case`` (tensors kept in ``cache`` for the next case)."""
        t = self.torch
        fam, dtype, n = case.family, case.dtype, case.size
        if fam in ("hbm_read", "hbm_copy"):
            if cache.get("hbm_n") != n:
                cache.clear()
                elems = n // WIDTH[dtype]
                x = t.empty(elems, device=self.device, dtype=self.dt(dtype))
                x.normal_(generator=self.gen)
                cache.update(hbm_n=n, x=x, y=t.empty_like(x))
            x, y = cache["x"], cache["y"]
            if fam == "hbm_read":
                return self.timer(lambda: x.sum(dtype=t.float32))
            return self.timer(lambda: y.copy_(x))
        cache.clear()
        if fam == "dense_gemm":
            a, b = self.randn(n, n, dtype=dtype), self.randn(n, n, dtype=dtype)
            mm, bt = self.mm(dtype), b.t()  # FP8: b^T is column-major, as _scaled_mm wants
            return self.timer(lambda: mm(a, bt) if dtype == "fp8" else a @ b)
        if fam == "expert_gemm":
            return self.expert(case)
        if fam == "indexer_scan":
            heads, dim, k = case.extra["heads"], case.extra["dim"], case.extra["topk"]
            keys, q = self.randn(n, dim, dtype=dtype), self.randn(heads, dim, dtype=dtype)
            w = self.randn(heads, 1, dtype=dtype)

            def scan() -> Any:
                return t.topk((t.relu(keys @ q.t()) @ w).view(-1), k)

            return self.timer(self.graphed(scan))
        if fam == "sparse_attention":
            heads, dim, k = case.extra["heads"], case.extra["dim"], case.extra["topk"]
            pool, q = self.randn(n, dim, dtype=dtype), self.randn(heads, dim, dtype=dtype)
            idx = t.randint(0, n, (k,), device=self.device, generator=self.gen)
            scale = 1.0 / math.sqrt(dim)

            def attend() -> Any:
                g = pool[idx]
                return t.softmax(q @ g.t() * scale, dim=-1) @ g

            return self.timer(self.graphed(attend))
        raise ValueError(f"unknown family {fam!r}")

    def expert(self, case: Case) -> float:
        """An expert's gate+up and down GEMMs over :data:`EXPERTS_CYCLED`; s per expert."""
        h, i = self.shapes["hidden_size"], self.shapes["moe_intermediate_size"]
        dtype, m = case.dtype, case.size
        rows = max(m, 16) if dtype == "fp8" else m  # _scaled_mm wants dimensions of 16s
        experts = EXPERTS_CYCLED[self.device]
        w13 = [self.randn(2 * i, h, dtype=dtype) for _ in range(experts)]  # [out, in]
        w2 = [self.randn(h, i, dtype=dtype) for _ in range(experts)]
        x, a = self.randn(rows, h, dtype=dtype), self.randn(rows, i, dtype=dtype)
        mm = self.mm(dtype)
        w13t, w2t = [w.t() for w in w13], [w.t() for w in w2]

        def step() -> None:
            for e in range(experts):
                mm(x, w13t[e])
                mm(a, w2t[e])

        return self.timer(self.graphed(step)) / experts


def measure(
    cases: list[Case], torch: Any, device: str, shapes: Mapping[str, int]
) -> list[dict[str, Any]]:
    """Time every case in order (a progress bar on stderr); the kernels.parquet rows. CUDA: 1 s
    of BF16 8192^3 GEMMs first, so that the clocks are up from idle."""
    bench = Bench(torch, device, shapes)
    rows: list[dict[str, Any]] = []
    cache: dict[str, Any] = {}
    bar = progress_bar(len(cases), True)
    try:
        if device == "cuda":
            bar.set_description("spin-up")
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.0:
                for _ in range(10):
                    a @ a
                torch.cuda.synchronize()
        for case in cases:
            bar.set_description(f"{case.family} {case.dtype} {case.label}".strip())
            rows.append(row(case, bench.time(case, cache)))
            bar.update(1)
    finally:
        bar.close()
        cache.clear()
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


class _Lines:
    """A progress 'bar' of plain lines (no terminal, or no tqdm)."""

    def __init__(self, total: int, on: bool) -> None:
        self.total, self.done, self.on, self.desc = total, 0, on, ""

    def set_description(self, desc: str) -> None:
        self.desc = desc

    def update(self, n: int) -> None:
        self.done += n
        if self.on:
            print(f"calibrate: {self.done}/{self.total} {self.desc}", file=sys.stderr, flush=True)

    def close(self) -> None:
        return None


def progress_bar(total: int, on: bool) -> Any:
    """Progress on stderr when ``on``: tqdm on a terminal, else a line per kernel."""
    try:  # a file, a pipe or a closed stream is no terminal
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        terminal = False
    if not on or not terminal or importlib.util.find_spec("tqdm") is None:
        return _Lines(total, on)
    from tqdm import tqdm

    return tqdm(total=total, unit="kernel", file=sys.stderr, dynamic_ncols=True)


def import_torch() -> Any:
    """torch, or the one-line error that says to run from the live env."""
    if importlib.util.find_spec("torch") is None:
        why = "not installed here: run .venv-live/bin/rackbook calibrate (make live-setup)"
        raise InputError(sys.executable, "torch", why)
    import torch

    return torch
