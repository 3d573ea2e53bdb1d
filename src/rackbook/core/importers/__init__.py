"""Importers of other tools' results and published measurements: :data:`REGISTRY` declares every
format of ``rackbook import``, one module each; :func:`write` makes the trace. Standard library
only (the CLI lists formats without pandas)."""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from rackbook.errors import InputError

if TYPE_CHECKING:
    from rackbook.core import traces


@dataclass(frozen=True)
class DeclaredGpus:
    """GPUs declared with ``--gpu ID --gpus N``, recorded in ``run.json`` as declared."""

    id: str  # catalog id, e.g. b300
    label: str  # as a reader names it, e.g. B300
    name: str  # the catalog's description
    count: int  # GPUs that served the benchmark
    catalog: str  # the catalog file it was looked up in (e.g. data/hardware.yaml)


@dataclass(frozen=True)
class Options:
    """What an import takes beside file and output (per :class:`Format`'s ``options``)."""

    labels: Mapping[str, str] = field(default_factory=dict)  # vllm-bench: scenario keys
    kind: str | None = None  # vllm-bench: recorded (default), published or synthetic
    engine: str | None = None  # offline-engine: engine label (default: the file's)
    model: str | None = None  # mlperf: keep only this Model's rows
    source_url: str | None = None  # published: the source file's URL
    source_date: str | None = None  # published: the date it was read, YYYY-MM-DD
    command: str | None = None  # the command line recorded (default: the rackbook import one)
    hardware: DeclaredGpus | None = None  # vllm-bench: --gpu ID --gpus N, as declared


@dataclass(frozen=True)
class Format:
    """One format ``rackbook import`` reads."""

    name: str  # on the command line
    module: str  # its module in this package
    what: str  # the file it reads (the engine label's ``what`` in a published trace)
    kind: str | None  # the trace kind it always writes; None: the file or --kind says
    options: tuple[str, ...]  # the Options fields it takes

    def importer(self) -> ModuleType:
        """Its module: ``FORMAT``, ``read`` (the trace) and ``summary`` (what is printed after
        ``wrote OUT:``); a published one's from ``read_points`` by :func:`.points.reader`."""
        return importlib.import_module(f"{__name__}.{self.module}")


#: Every format, by its name on the command line.
_PUBLISHED = ("source_url", "source_date")
# fmt: off
REGISTRY: dict[str, Format] = {
    f.name: f
    for f in (
        Format("vllm-bench", "vllm_bench", "vllm bench serve --save-result --save-detailed JSON",
               None, ("labels", "kind", "hardware")),
        Format("offline-engine", "offline_engine",
               "an offline engine's fixed-batch results (rackbook-offline-engine JSON)",
               None, ("engine",)),
        Format("inferencex", "inferencex", "InferenceX (SemiAnalysis) API rows",
               "published", _PUBLISHED),
        Format("mlperf", "mlperf", "MLPerf Inference summary.csv",
               "published", ("model", *_PUBLISHED)),
        Format("sglang-cookbook", "sglang_cookbook", "SGLang cookbook deepseek-v4-benchmarks.jsx",
               "published", _PUBLISHED),
    )
}
# fmt: on

#: Option fields -> their flag on the command line.
FLAGS = {
    o: "--" + o.replace("_", "-") for o in ("kind", "engine", "model", "source_url", "source_date")
}
FLAGS |= {"labels": "--label", "hardware": "--gpu"}


def get(fmt: str, path: Path | str = "-") -> Format:
    """The registered format ``fmt``; an unknown one is an InputError naming ``path``."""
    if fmt not in REGISTRY:
        raise InputError(path, "format", f"unknown {fmt!r}; expected one of {', '.join(REGISTRY)}")
    return REGISTRY[fmt]


#: Labels that name the scenario (``--label KEY=VALUE``); any other column of a trace's
#: requests, gaps or points table is measured, and a label never replaces it.
SCENARIO_LABELS = frozenset(
    "engine config point_id batch_size concurrency decode_ranks context_tokens num_gpus".split()
)


def check_options(fmt: str, path: Path | str, options: Options) -> None:
    """One InputError naming the flag for an option that does not fit the format, a label that
    names a measured column, or a ``--source-date`` not YYYY-MM-DD or after today (UTC + 1 day)."""
    import datetime as dt

    from rackbook.core import schema

    f, date = get(fmt, path), options.source_date
    if date is not None and not schema.is_date(date):
        raise InputError(path, "--source-date", f"{date!r} is not a date YYYY-MM-DD")
    today = dt.datetime.now(dt.UTC).date()
    if date is not None and dt.date.fromisoformat(date) > today + dt.timedelta(days=1):
        problem = f"{date} is in the future (today is {today.isoformat()})"
        raise InputError(path, "--source-date", problem)
    columns = {c.name for t in ("requests", "itl", "points") for c in schema.TABLES[t]}
    taken = sorted(set(options.labels) & (columns - SCENARIO_LABELS))
    if taken:
        scenario = ", ".join(sorted(SCENARIO_LABELS))
        problem = f"is a measured field, never a label (labels name the scenario: {scenario})"
        raise InputError(path, f"--label {taken[0]}", problem)
    for opt in ("engine", "labels", "kind", "model", "source_url", "source_date", "hardware"):
        value = getattr(options, opt)
        if value is None or value == {} or opt in f.options or value == f.kind:
            continue
        taking = ", ".join(name for name, g in REGISTRY.items() if opt in g.options)
        why = f"not for {fmt} (the file says it)" if "engine" in f.options else ""
        raise InputError(path, FLAGS[opt], why or f"only for {taking}, not {fmt}")


def command_line(fmt: str, path: Path | str, output: Path | str, options: Options) -> str:
    """The ``rackbook import`` command line of an import (recorded in ``run.json``)."""
    argv = ["rackbook", "import", fmt, str(path), "-o", str(output)]
    for opt in ("model", "source_url", "source_date", "engine"):
        value = getattr(options, opt)
        if value is not None:
            argv += [FLAGS[opt], value]
    if options.hardware is not None:
        argv += ["--gpu", options.hardware.id, "--gpus", str(options.hardware.count)]
    return shlex.join(argv)


def read(fmt: str, path: Path | str, output: Path | str, options: Options) -> traces.Trace:
    """The file of format ``fmt`` as a trace in memory (``output`` only named)."""
    path = Path(path)
    check_options(fmt, path, options)
    command = options.command or command_line(fmt, path, output, options)
    return get(fmt, path).importer().read(path, options, command)


def write(
    fmt: str, path: Path | str, output: Path | str, options: Options | None = None
) -> traces.Trace:
    """Import ``path`` into a trace folder at ``output`` atomically; the trace as written."""
    from rackbook.core import traces  # pandas: loaded when an import runs, not to parse flags

    t = read(fmt, path, output, options or Options())
    traces.write_trace(output, t, source=path)
    return t


def summary(fmt: str, trace: traces.Trace) -> str:
    """What ``rackbook import`` prints after ``wrote OUT:`` for a trace of format ``fmt``."""
    return get(fmt).importer().summary(trace)
