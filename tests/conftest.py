"""Shared test helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from rackbook.cli import main

# CI explores the same examples on every run (no flaky failures); locally they vary.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

FIXTURES = Path(__file__).parent / "fixtures"


def small_result(**overrides: Any) -> dict[str, Any]:
    """A hand-made detailed vLLM result: 3 requests (one failed), values easy to check by hand."""
    d: dict[str, Any] = {
        "duration": 2.0,
        "completed": 2,
        "failed": 1,
        "max_concurrency": 2,
        "input_lens": [10, 20, 30],
        "output_lens": [4, 2, 0],
        "ttfts": [0.1, 0.2, 0.0],
        "itls": [[0.1, 0.2, 0.3], [0.4], []],
        "latencies": [0.7, 0.6, 0.0],
        "start_times": [100.0, 100.5, 101.0],
        "errors": ["", "", "boom"],
    }
    d.update(overrides)
    return d


@pytest.fixture
def write_json(tmp_path: Path):
    def _write(obj: Any, name: str = "result.json") -> Path:
        p = tmp_path / name
        p.write_text(json.dumps(obj))
        return p

    return _write


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""

    def _run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run


def synthetic_run(name: str = "hand-made test", seed: int = 0) -> dict[str, Any]:
    """``run.json`` of a hand-made test trace (kind synthetic, with generator and seed)."""
    from rackbook.core.provenance import new_run_info

    return new_run_info(
        kind="synthetic",
        commands=[],
        parameters={},
        engine={},
        generator={"name": name, "seed": seed},
    )


def synthetic_trace(frames: list, server_metrics: Any = None) -> Any:
    """Validated trace from per-point frames (``vllm_bench_frames``) with a synthetic run and,
    optionally, a ``server_metrics`` table."""
    from rackbook.core.traces import concat, validate

    t = concat(frames, synthetic_run())
    if server_metrics is not None:
        t.extra["server_metrics"] = server_metrics
    return validate(t)
