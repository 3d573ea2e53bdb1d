"""The ``rackbook`` command line: parses, dispatches, and turns every way out into one ``error:``
line. Exit codes: 0 done; 2 bad input; 1 a bug (traceback in the log file the line names);
128 + the signal's number when stopped (130 SIGINT, 143 SIGTERM)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rackbook import STOP_SIGNALS, __version__, limits, params, paths
from rackbook.core import importers
from rackbook.errors import InputError, Terminated, one_line, write_log


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors follow the project's one-line ``error:`` rule (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        flag, sep, problem = message.partition(": ")
        line = f"{self.prog}: arguments: {message}"
        if flag.startswith("argument ") and sep:
            line = f"-: {flag.removeprefix('argument ')}: {problem}"
        sys.stderr.write(f"error: {one_line(line)}\n")
        raise SystemExit(2)


def _model_arg(text: str) -> str:
    """A ``--model`` value: an id or Hugging Face name as given, a file path made absolute."""
    from rackbook.inputs import catalogs

    if catalogs.catalog_model_id(text) is not None or not catalogs.looks_like_path(text):
        return text
    return os.path.abspath(text)


#: One ``add_argument`` call: its flags and keywords.
Arg = tuple[tuple[str, ...], dict[str, Any]]


def arg(flags: str, help: str, spec: params.Spec | None = None, **kw: Any) -> Arg:
    """Space-separated ``flags``, ``help``, ``add_argument`` keywords; ``spec`` reads a number."""
    return tuple(flags.split()), {**kw, "help": help, **({"type": spec} if spec else {})}


def switch(flags: str, help: str) -> Arg:
    """An on/off flag (``store_true``)."""
    return arg(flags, help, action="store_true")


class Verb:
    """One verb: help, the module (under ``rackbook``) whose ``cli_VERB`` runs it (imported when it
    runs), its arguments, whether it needs the checkout."""

    def __init__(self, help: str, module: str, *args: Arg, checkout: bool = True) -> None:
        self.help, self.module, self.args, self.checkout = help, module, args, checkout


JSON_LAST = switch("--json", "print one JSON object last")
JSON_INSTEAD = switch("--json", "print one JSON object instead")
EXECUTED = arg("--out", "where executed results live")
KINDS, TOKENS, ints, num = params.KINDS, params.TOKENS, params.INT, params.NUM
GPUS, SEQS = ints(1, 1_048_576, "GPUs"), num(1, limits.BOUNDS["batch"], "sequences")
TOK0, TOK1 = num(0, TOKENS, "tokens"), num(1, TOKENS, "tokens")
SHARE = num(0, 1, "fraction", hi_open=True, choices=("unknown",))
PHASES = ["decode", "prefill", "mixed"]
#: ``--force`` and ``--jobs`` of the verbs that execute chapters (``run``, ``book``).
SPEED = (
    switch("--force", "execute every chapter, even unchanged ones, and rebuild all pages"),
    arg("-j --jobs", "chapters executed at once (default: cores)", ints(1, 1024, "chapters")),
)
PARAMETERS: dict[str, Any] = dict(nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
MODEL_HELP = (
    "model id in data/models/ (any case), its Hugging Face name org/NAME, or a model YAML "
    "file (relative to the working directory)"
)

#: verb -> its declaration, in the order ``rackbook --help`` lists them.
VERBS: dict[str, Verb] = {
    "import": Verb(
        "convert a benchmark result into a trace folder",
        "cli",
        arg("format", "input format", choices=list(importers.REGISTRY)),
        arg(
            "input",
            "vllm bench serve JSON (--save-result --save-detailed), offline-engine JSON, "
            "InferenceX rows (JSON), MLPerf summary.csv or SGLang's benchmarks .jsx",
        ),
        arg("-o --output", "trace folder to write", required=True),
        switch("--force", "replace a trace rackbook wrote at --output"),
        arg("--model", "mlperf: keep only this Model's rows"),
        arg("--engine", "offline-engine: engine label (default: the file's)"),
        arg("--source-url", "published: the source file's URL"),
        arg("--source-date", "published: date, YYYY-MM-DD"),
        arg(
            "--label",
            "scenario key on every request row (repeatable)",
            action="append",
            type=params.label,
            default=[],
            metavar="KEY=VALUE",
        ),
        arg("--kind", "vllm-bench: trace kind", choices=["recorded", "published", "synthetic"]),
        arg("--gpu", "vllm-bench: GPU id in data/hardware.yaml (with --gpus)", metavar="ID"),
        arg("--gpus", "vllm-bench: GPUs that served it", GPUS, metavar="N"),
        checkout=False,
    ),
    "summarize": Verb(
        "vLLM-defined metrics of a trace",
        "cli",
        arg("trace", "trace folder"),
        JSON_LAST,
        checkout=False,
    ),
    "run": Verb(
        "execute a result's notebook with papermill",
        "book.runner",
        arg("result", "result name, or 'all'"),
        arg("--source", "trace (default) or live", choices=["trace", "live"]),
        arg("--params-file", "YAML mapping of notebook parameters", metavar="FILE"),
        arg("-p --parameter", "notebook parameter (repeatable)", **PARAMETERS),
        arg("--out", "output folder (default _build/executed)"),
        *SPEED,
    ),
    "list": Verb(
        "results, their claims and the latest verdicts", "book.runner", EXECUTED, JSON_INSTEAD
    ),
    "catalog": Verb(
        "the models and GPUs that check and kv-bytes know", "inputs.catalogs", JSON_INSTEAD
    ),
    "book": Verb(
        "build the HTML book from executed notebooks",
        "book.build",
        EXECUTED,
        arg("--traces", "a folder of your own traces: execute every result on them first"),
        arg("--reuse", "with --traces: results already executed on the shipped traces"),
        arg("--html", "HTML folder (default _build/html)", metavar="DIR"),
        switch("--strict", "warnings are errors (-W -n)"),
        *SPEED,
    ),
    "kv-bytes": Verb(
        "global KV-cache bytes per token of a model",
        "physics.roofline",
        arg("model", MODEL_HELP, type=_model_arg),
        arg("--kv-dtype", "KV-cache dtype (default fp4)", choices=params.KV_DTYPES, default="fp4"),
        JSON_LAST,
        arg("--context", "also print bytes per sequence", ints(1, TOKENS, "tokens")),
    ),
    "check": Verb(
        "the three readings of a throughput figure for a workload",
        "results.claim_check",
        arg("--model", MODEL_HELP, required=True, type=_model_arg),
        arg("--gpu", "GPU id in data/hardware.yaml", required=True),
        arg("--gpus", "GPUs serving the claim", GPUS, required=True),
        arg("--tok-s", "claimed tokens per second", num(1e-6, 1e12, "tokens/s"), required=True),
        arg("--per", "per GPU or total (default total; one GPU: gpu)", choices=["gpu", "total"]),
        arg("--counted", "input + output needs --isl, --osl", choices=["output", "total"]),
        arg("--isl", "input tokens per request", TOK1),
        arg("--osl", "output tokens per request", TOK1),
        arg("--context", "tokens per decoding sequence (default ISL + OSL / 2, else 0)", TOK0),
        arg("--cached-share", "input share from the prefix cache (0-1, or unknown)", SHARE),
        arg("--concurrency", "sequences in flight over all GPUs (default: the best fit)", SEQS),
        arg("--batch", "the same as --concurrency", SEQS),
        arg("--tokens-per-step", "tokens per decode step", num(1, 64, "tokens"), default=1.0),
        arg("--phase", "default: mixed with --isl and --osl, else decode", choices=PHASES),
        arg("--trace", "a trace folder for the this-run reading"),
        arg("--kv-dtype", "KV storage (narrowest)", choices=params.KV_DTYPES),
        arg("--precision", "routed experts' dtype (default: smallest)", choices=params.KV_DTYPES),
        arg("--engine", "serving engine of the figure (recorded in the basis)"),
        arg("--speculation", "speculative decoding: none or the method", metavar="METHOD"),
        arg("--calibration", "calibration folder (default: the shipped H200 one)"),
        arg("--deployment", "attention dp or tp, experts ep", choices=["dp-ep", "tp-ep"]),
        arg("--tpot-ms", "TPOT limit the figure met (ms)", num(1e-3, 1e6, "ms")),
        arg("--ttft-s", "TTFT limit the figure met (s)", num(1e-6, 1e6, "s")),
        JSON_LAST,
    ),
    "validate": Verb(
        "the expected throughput against every published measurement",
        "results.validation",
        JSON_LAST,
        switch("--fit", "refit on the published points (expected-fit.yaml) first"),
    ),
    "eplb": Verb(
        "balancedness before and after EPLB for expert loads",
        "physics.eplb",
        arg("loads", 'JSON {"loads": [[tokens per expert] per layer]} or Parquet'),
        arg("--ep-size", "expert-parallel ranks (GPUs)", KINDS["ep_size"], required=True),
        arg("--redundant", "redundant expert replicas", KINDS["redundant"], default=0),
        arg("--groups", "expert groups", KINDS["groups"], default=1),
        arg("--nodes", "nodes", KINDS["nodes"], default=1),
        JSON_LAST,
        checkout=False,
    ),
    "record": Verb(
        "record a scenario from real vLLM servers (live mode: make live-setup)",
        "live",
        arg("scenario", "the scenario to record", choices=list(paths.RESULTS)),
        arg("--endpoint", "vLLM server URL (repeatable)", action="append", default=[]),
        arg("--serve", "arguments for `vllm serve` to start one"),
        arg("-o --output", "trace folder (default data/traces/live/SCENARIO)"),
        arg("-p --parameter", "scenario parameter (repeatable; lists: a,b)", **PARAMETERS),
        switch("--resume", "keep the points finished in --output; record the rest"),
        switch("--accept-invalid", "keep points failing validity (RACKBOOK_ACCEPT_INVALID=1)"),
        switch("--no-progress", "no progress bars"),
    ),
    "calibrate": Verb(
        "time the model's kernels with torch on this device (a calibration folder)",
        "cli",
        arg("--device", "default cuda", choices=["cuda", "cpu"]),
        arg("-o --output", "calibration folder to write"),
        arg("--model", "catalog model timed", default="deepseek-v4.1-flash"),
        switch("--quick", "fewer sizes (a smoke run)"),
        arg("--save-json", "also write the rows as JSON", metavar="FILE"),
        arg("--from-json", "write -o DIR from a --save-json file", metavar="FILE"),
    ),
    "recipes": Verb(
        "generate cluster recipes from the topology file",
        "cluster.recipes",
        arg("--topology", "topology YAML (default env/cluster/topology.yaml)"),
        arg("-o --output", "recipes folder (default env/cluster/generated)"),
    ),
}
#: ``--max-input-mb``, an option of every verb.
MAX_INPUT = arg(
    "--max-input-mb",
    f"largest input file read (default {limits.DEFAULT_MAX_INPUT_MB:g} MB)",
    num(0, 1e9, "MB", lo_open=True),  # MB, 10**6 bytes: at most a petabyte
    default=limits.DEFAULT_MAX_INPUT_MB,
    metavar="MB",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb, from :data:`VERBS`."""
    p = _Parser(prog="rackbook", description="The rackbook command line.")
    p.add_argument("--version", action="version", version=f"rackbook {__version__}")
    sub = p.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for name, verb in VERBS.items():
        s = sub.add_parser(name, help=verb.help, description=verb.help)
        for flags, kw in (*verb.args, MAX_INPUT):
            s.add_argument(*flags, **kw)
    return p


#: Signal that ended the run (one interrupting library code may surface as another error).
_signalled: list[int] = []


def _on_signal(signum: int, _frame: object) -> None:
    if _signalled:  # a second signal while unwinding: let cleanup finish
        return
    _signalled.append(signum)
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)


def _fail(message: str, code: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"error: {one_line(message)}\n")
        sys.stderr.flush()
    return code


#: How each stop signal ends the line.
SIGNAL_WORDS = dict(
    zip(STOP_SIGNALS, ("interrupted", "terminated", "hung up", "quit"), strict=True)
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; returns the exit code (module docstring). Every way out is one line."""
    _signalled.clear()
    handlers: dict[int, Any] = {}
    with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
        handlers = {sig: signal.signal(sig, _on_signal) for sig in STOP_SIGNALS}
    try:
        return _dispatch(argv)
    except SystemExit as exc:  # a usage error (its line written), --help, --version
        return exc.code if isinstance(exc.code, int) else 2
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)
        limits.set_max_input_mb(None)


def parse(
    argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None
) -> argparse.Namespace:
    """The command line read and checked before any work (usage error: ``SystemExit(2)``)."""
    args = (parser or build_parser()).parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as given (record's re-exec)
    params.check_args(args)
    if args.verb == "run" and args.parameter:
        given = params.read_pairs(args.parameter)
        params.check_given(args.result, given, f"notebooks/{args.result}.ipynb")
    return args


def cli_calibrate(args: argparse.Namespace) -> int:
    """``rackbook calibrate`` (raw catalog without pydantic)."""
    from rackbook.live import calibrate

    def catalog() -> calibrate.Catalog:
        try:
            from rackbook.inputs import catalogs
        except ImportError:
            return calibrate.catalog_from_yaml(args.model)
        model, gpus = catalogs.load_model(_model_arg(args.model)), catalogs.load_hardware().gpus
        return calibrate.catalog_from_specs(model, gpus, "rackbook.inputs.catalogs")

    return calibrate.cli_calibrate(args, catalog)


def cli_import(args: argparse.Namespace) -> int:
    """``rackbook import FORMAT FILE -o TRACE``: options checked, the output folder locked once
    replaceable (``--force``; never the input), then the format's importer writes it."""
    from rackbook.core import fsio

    given = {k: getattr(args, k) for k in ("kind", "engine", "model", "source_url", "source_date")}
    if args.gpu is not None:  # with --gpus (params.check_args): looked up in the catalog
        from rackbook.inputs import catalogs

        g, shown = catalogs.gpu(args.gpu), catalogs.load_hardware()._file
        given["hardware"] = importers.DeclaredGpus(g.id, g.label, g.name, int(args.gpus), shown)
    options = importers.Options(labels=dict(args.label), **given)
    importers.check_options(args.format, args.input, options)
    out = fsio.check_output_folder(Path(args.output), "-o")
    with fsio.output_lock(out, "-o"):
        if Path(args.input).is_file():  # else the importer says what it is
            fsio.refuse_overlap({"-o": out}, {"input": args.input})
        fsio.check_replaceable(out, "trace", "-o")
        if not args.force and (fsio.marked_kind(out) or (out / "run.json").is_file()):
            raise InputError(out, "-o", "a trace exists there: add --force to replace it")
        t = importers.write(args.format, args.input, args.output, options)
        print(f"wrote {args.output}: {importers.summary(args.format, t)}")
    return 0


def cli_summarize(args: argparse.Namespace) -> int:
    """``rackbook summarize TRACE [--json]``; no requests is an error unless published."""
    import json

    from rackbook.core import summary, traces

    path = Path(args.trace)
    run = traces.read_run(path)
    if traces.table_rows(path, "requests") == 0:
        if run.get("kind") == "published" and (path / "published_points.parquet").is_file():
            doc = summary.published_summary(path, run)
            print(summary.format_published_summary(path, doc))
            if args.json:
                print(json.dumps(doc, allow_nan=False))
            return 0
        loads = path / "expert_load.parquet"
        why = f"this trace holds expert loads (`rackbook eplb {loads} --ep-size N` reads them)"
        why = why if loads.is_file() else "an empty trace has no metrics"
        raise InputError(path, "requests.parquet", f"no requests: {why}")
    s = summary.summarize_path(args.trace)
    text = json.dumps(s.to_dict(), allow_nan=False, default=str) if args.json else None
    print(text or summary.format_summary(s))
    return 0


#: Errors of the input, not bugs: (type, text its message holds, the line).
BAD_INPUT: tuple[tuple[type[BaseException], str, str], ...] = (
    (RecursionError, "", "-: -: input nested too deeply to read (RecursionError)"),
    (MemoryError, "", "-: -: out of memory: the input is too large for this machine"),
    (OSError, "", "-: open files: too many open files (ulimit -n): raise the limit"),
    (UnicodeError, "", "-: -: a name or text that is not valid UTF-8 ({reason})"),
    (ValueError, "null byte", "-: -: a path holding a NUL byte ({exc})"),
    (RuntimeError, "Symlink loop", "-: -: {exc}: a symbolic link that points at itself"),
)


def _dispatch(argv: Sequence[str] | None) -> int:
    try:
        args = parse(argv)
        limits.set_max_input_mb(args.max_input_mb)
        limits.check_open_files()
        verb = VERBS[args.verb]
        if verb.checkout:
            paths.require_checkout()
        handler = "cli_" + args.verb.replace("-", "_")
        return int(getattr(importlib.import_module(f"rackbook.{verb.module}"), handler)(args) or 0)
    except BaseException as exc:
        if _signalled or isinstance(exc, (KeyboardInterrupt, Terminated)):
            sig = signal.Signals(next(iter(_signalled), getattr(exc, "signum", signal.SIGINT)))
            name = f"{SIGNAL_WORDS.get(sig, 'stopped')} ({sig.name})"
            return _fail(f"-: -: {name}; nothing half-written was left", 128 + sig)
        if isinstance(exc, SystemExit):
            raise
        if isinstance(exc, InputError):
            return _fail(str(exc), 2)
        if isinstance(exc, BrokenPipeError):
            return 2
        if isinstance(exc, OSError) and exc.errno != errno.EMFILE:
            return _fail(str(InputError(exc.filename, "-", exc.strerror or str(exc))), 2)
        for kind, holds, line in BAD_INPUT:
            if isinstance(exc, kind) and holds in str(exc):
                return _fail(line.format(exc=exc, reason=getattr(exc, "reason", exc)), 2)
        log = write_log("error", "".join(traceback.format_exception(exc)))
        why = f"internal error {type(exc).__name__}: {exc} (a bug; traceback in {log})"
        return _fail(f"-: -: {why}", 1)


if __name__ == "__main__":
    raise SystemExit(main())
