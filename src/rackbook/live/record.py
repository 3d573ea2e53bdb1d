"""``rackbook record SCENARIO`` in .venv-live: per phase ``vllm serve`` on 127.0.0.1 (or --endpoint
URLs, in phase order), raw artifacts in ``OUT.raw/``, the trace ``OUT`` at the end. A point over
2 % flagged runs once more, then stops (exit 2) unless --accept-invalid, as a failed point does."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from rackbook.core import fsio
from rackbook.errors import InputError
from rackbook.inputs.scenarios import Scenario, fit_endpoint, scenario
from rackbook.live import cpus, endpoint
from rackbook.live import server as server_mod
from rackbook.live.bench import request_timeout_s
from rackbook.live.envfile import api_key, vllm_environ
from rackbook.live.recorder import Recorder
from rackbook.live.server import stop_all
from rackbook.paths import resolve

#: ``=1`` acts as --accept-invalid (for harness checks whose notebook path cannot pass the flag).
ACCEPT_INVALID_ENV = "RACKBOOK_ACCEPT_INVALID"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rackbook.live.record", description=__doc__)
    p.add_argument("scenario")
    p.add_argument("--endpoint", action="append", default=[], help="server URL (repeatable)")
    p.add_argument("--serve", default=None, help="extra `vllm serve` flags (one string)")
    p.add_argument("-o", "--output", default=None, help="trace folder")
    p.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE")
    )
    p.add_argument("--resume", action="store_true", help="keep finished points, run the rest")
    p.add_argument(
        "--accept-invalid",
        action="store_true",
        help="keep points whose requests fail the validity checks (run.json accepted_invalid); "
        f"also set by {ACCEPT_INVALID_ENV}=1",
    )
    p.add_argument("--no-progress", action="store_true")
    return p


def record(args: argparse.Namespace) -> Path:
    """Record ``args.scenario`` as the CLI's ``record`` verb describes."""
    params = dict(args.parameter)
    timeout_s = request_timeout_s()  # a bad value stops here, before any server starts
    for url in args.endpoint:
        if not url.startswith(("http://", "https://")):
            raise InputError("--endpoint", url, "expected an http:// or https:// URL")
    sc = scenario(args.scenario, params, check=not args.endpoint)
    server = None
    if args.endpoint:
        sc, server = attach(sc, [u.rstrip("/") for u in args.endpoint], params)
    out = resolve(args.output or f"data/traces/live/{sc.name}")
    rec = Recorder(
        sc,
        out,
        endpoints=list(args.endpoint),
        serve_extra=shlex.split(args.serve or ""),
        resume=args.resume,
        progress=not args.no_progress,
        accept_invalid=args.accept_invalid or os.environ.get(ACCEPT_INVALID_ENV) == "1",
    )
    rec.server = server
    rec.info["request_timeout_s"] = timeout_s
    fsio.check_output_folder(out, "-o")  # refused before any server starts, locked throughout
    with fsio.output_lock(out, "-o"):
        fsio.check_replaceable(out, "trace", "-o")
        fsio.check_replaceable(rec.raw, "raw", "-o")
        return rec.run()


def attach(
    sc: Scenario, urls: list[str], params: dict[str, str]
) -> tuple[Scenario, dict[str, Any]]:
    """The scenario fitted to running endpoints (model and context limit from ``/v1/models``
    unless ``-p`` sets them; all must serve one model), and run.json's ``server`` about them."""
    key = api_key()
    models = {u: endpoint.served_model(u, key) for u in dict.fromkeys(urls)}
    ids = sorted({m.id for m in models.values()})
    if len(ids) > 1:
        raise InputError("--endpoint", ", ".join(models), f"serve different models: {ids}")
    m = next(iter(models.values()))
    lens = [x.max_model_len for x in models.values()]
    loopback = ("127.0.0.1", "localhost", "::1")
    same_host = all(urllib.parse.urlsplit(u).hostname in loopback for u in models)
    sc = fit_endpoint(
        sc,
        params,
        model=m.tokenizer(),
        served_model_name=m.id,
        max_model_len=min(lens) if all(lens) else None,  # type: ignore[type-var]
        same_host=same_host,
    )
    declared = os.environ.get(endpoint.SERVER_GPUS_ENV)
    server = {
        "same_host": same_host,
        "endpoints": list(models),
        "served_model_name": m.id,
        "model": m.root,
        "max_model_len": m.max_model_len,
        "vllm_version": endpoint.server_version(urls[0], key),
        "gpus": endpoint.declared_gpus(declared),
        "gpus_declared_by": endpoint.SERVER_GPUS_ENV if declared else None,
    }
    return sc, server


def _terminated(signum: int, _frame: object) -> None:
    server_mod.RECEIVED.append(signum)
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    for k, v in vllm_environ().items():  # env/live/vllm.env for this process too
        os.environ.setdefault(k, v)
    os.environ.setdefault(cpus.ENV, "auto")  # so run.json environment names the layout setting
    key = api_key()
    if key:  # vLLM's bench client reads OPENAI_API_KEY; never a flag, never written
        os.environ["OPENAI_API_KEY"] = key
    args = build_parser().parse_args(argv)
    # SIGTERM ends the run as Ctrl-C does; once a server starts, live.server's handler takes over
    signal.signal(signal.SIGTERM, _terminated)
    try:
        out = record(args)
    except InputError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    except BaseException as exc:
        # a signal may surface as another exception (an import half done): same handling
        ctrl_c = isinstance(exc, KeyboardInterrupt)
        if not (ctrl_c or server_mod.RECEIVED):
            raise
        stop_all()
        if ctrl_c or server_mod.RECEIVED[0] == signal.SIGINT:
            sys.stderr.write("error: -: -: interrupted (servers stopped)\n")
            return 130
        sys.stderr.write("error: -: -: terminated by SIGTERM (servers stopped)\n")
        return 128 + signal.SIGTERM
    print(out, flush=True)  # the trace path, last line of stdout (rackbook.live.record_trace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
