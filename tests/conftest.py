"""Shared test helpers, and the one executed book every notebook test shares.

The suite never writes into the reader's ``_build``: unless ``RACKBOOK_BUILD`` is set (the
Makefile sets it), the build folder is a temporary one for the whole session. The notebooks
execute once per session (:func:`executed`): the nbmake run of ``make test`` leaves its executed
set in ``RACKBOOK_TEST_EXECUTED``, which the own-book and browser tests reuse; without it, the
fixture executes every result once.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

# before rackbook is imported: rackbook.paths reads it once
os.environ.setdefault(
    "RACKBOOK_BUILD", str(Path(tempfile.mkdtemp(prefix="rackbook-test-")) / "_build")
)
# Under pytest-xdist each worker builds into its own folder, <build>/../workers/<worker>/_build:
# two workers never write one book, one executed set or one cache at once.
if _worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["RACKBOOK_BUILD"] = str(
        Path(os.environ["RACKBOOK_BUILD"]).parent / "workers" / _worker / "_build"
    )

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from rackbook import STOP_SIGNALS  # noqa: E402
from rackbook.cli import main  # noqa: E402

# CI explores the same examples on every run (no flaky failures); locally they vary.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """Every test leaves SIGINT's and SIGTERM's handlers as it found them: a handler left
    installed (or SIG_IGN) changes how later tests in the same process see Ctrl-C."""
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    yield
    changed = {}
    for sig, old in before.items():
        now = signal.getsignal(sig)
        if now is not old:
            changed[sig.name] = now
            signal.signal(sig, old)
    assert not changed, f"the test left signal handlers installed: {changed}"


@pytest.fixture(scope="session")
def executed(tmp_path_factory) -> Path:
    """Every result executed once on the shipped traces: the folder of executed notebooks and
    headline JSONs (``RACKBOOK_TEST_EXECUTED`` when the nbmake run made it, else made here)."""
    from rackbook.book import runner

    given = os.environ.get("RACKBOOK_TEST_EXECUTED")
    if given:
        folder = Path(given)
        missing = [
            r
            for r in runner.available_results()
            if not ((folder / f"{r}.ipynb").is_file() and (folder / f"{r}.json").is_file())
        ]
        assert not missing, f"RACKBOOK_TEST_EXECUTED={folder} lacks {missing}"
        return folder
    out = tmp_path_factory.mktemp("executed")
    for r in runner.available_results():
        runner.execute_result(r, "trace", {}, out, progress=False)
    return out


_SHIPPED: dict[str, tuple[Any, Any]] = {}


def edited_registry(edits: dict[str, Any], name: str = "edited") -> Any:
    """A copy of the claims registry (``data/claims.yaml``), read as from file ``name``, with
    ``edits[claim_id](claim)`` applied in place to each named claim's fields."""
    import copy

    from rackbook.inputs.claims import load_claims, parse_claims

    raw = copy.deepcopy(load_claims().model_dump(mode="python"))
    for c in raw["claims"]:
        if c["id"] in edits:
            edits[c["id"]](c)
    return parse_claims(raw, name)


def headline_rows(headlines: Any) -> list[tuple[Any, ...]]:
    """Each headline as (name, value, unit, kind, verdict, claim id): a chapter's headlines
    compared in full as one list."""
    return [(h.name, h.value, h.unit, h.kind, h.verdict, h.claim_id) for h in headlines]


def analyse_shipped(result: str) -> Any:
    """The analysis of ``result`` on its shipped trace with its notebook's default parameters,
    computed afresh at each call (what a mutation run needs: a kept copy would hide a mutant)."""
    from rackbook import paths
    from rackbook.core.traces import read_trace
    from rackbook.params import cell_defaults
    from rackbook.results import REGISTRY

    plugin, defaults = REGISTRY[result], cell_defaults(result)
    trace = read_trace(paths.resolve(defaults["trace"]))
    return plugin.analyse(trace, plugin.Params.from_mapping(defaults))


def chapter_on_shipped_trace(result: str) -> tuple[Any, Any]:
    """(analysis, outcome) of ``result`` on its shipped trace with its notebook's default
    parameters, what the chapter computes (once per process: kept)."""
    from rackbook.results import REGISTRY

    if result not in _SHIPPED:
        an = analyse_shipped(result)
        _SHIPPED[result] = an, REGISTRY[result].outcome(an)
    return _SHIPPED[result]


@pytest.fixture(scope="session")
def shipped_chapter():
    """:func:`chapter_on_shipped_trace` (a test must not change what it returns)."""
    return chapter_on_shipped_trace


@pytest.fixture(scope="session")
def built_book(executed) -> Path:
    """The HTML book built once from the shared executed set (strict: warnings fail)."""
    from rackbook.book import build

    return build.build_book(executed, strict=True).parent


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The live tests' tiny random-weight MoE model folder (written once per session)."""
    import subprocess

    from rackbook.live.envfile import live_python
    from rackbook.paths import ROOT, TINY_MODEL

    r = subprocess.run(
        [str(live_python()), str(ROOT / "env/live/tiny_model.py"), "-o", str(TINY_MODEL)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return TINY_MODEL


@pytest.fixture(scope="session")
def held_server(tmp_path_factory, tiny_model):
    """One tiny vLLM server held for the whole session (``livehelp.hold_server``), shared by
    the live tests that need only a running server: starting vLLM takes 25-35 s on two cores
    (three processes import torch and vLLM one after another), an idle one about 1 % of a
    core. Tests of how the recorder starts and stops its own servers still start them."""
    from livehelp import hold_server

    yield from hold_server(tiny_model, tmp_path_factory.mktemp("held-server"))


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
