"""``rackbook record SCENARIO`` in .venv-live: per phase ``vllm serve`` on 127.0.0.1 or --endpoint
URLs (what they serve: ``GET /v1/models``), raw artifacts in ``OUT.raw/``, the trace ``OUT``. A
point over 2 % flagged runs once more, then stops (exit 2) unless --accept-invalid."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import urllib.error
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackbook.core import fsio
from rackbook.errors import InputError
from rackbook.inputs.scenarios import Scenario, fit_endpoint, scenario
from rackbook.live import cpus
from rackbook.live import server as server_mod
from rackbook.live.bench import request_timeout_s
from rackbook.live.envfile import api_key, urlopen, vllm_environ
from rackbook.live.recorder import Recorder
from rackbook.live.server import stop_all
from rackbook.paths import resolve

#: ``=1`` acts as --accept-invalid (for harness checks whose notebook path cannot pass the flag).
ACCEPT_INVALID_ENV = "RACKBOOK_ACCEPT_INVALID"


@dataclass(frozen=True)
class ServedModel:
    """An endpoint's first model: served name, what it loaded, context limit (tokens)."""

    id: str
    root: str
    max_model_len: int | None

    def tokenizer(self) -> str:
        """The client's tokenizer: ``root`` if a Hub id or a local folder, else ``id``."""
        r = self.root
        if r and (Path(r).is_dir() or (not r.startswith(("/", ".")) and r.count("/") == 1)):
            return r
        return self.id


def parse_models(url: str, text: str) -> ServedModel:
    where = f"{url}/v1/models"

    def bad(why: str) -> InputError:
        return InputError("--endpoint", where, why)

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON ({exc.msg})") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise bad("lists no model ('data' is empty or missing)")
    mid, mlen, root = (data[0].get(k) for k in ("id", "max_model_len", "root"))
    if not isinstance(mid, str) or not mid:
        raise bad("data[0].id: missing")
    if mlen is not None and (not isinstance(mlen, int) or isinstance(mlen, bool) or mlen <= 0):
        raise bad(f"data[0].max_model_len: not a positive integer ({mlen!r})")
    return ServedModel(mid, root if isinstance(root, str) and root else mid, mlen)


def served_model(url: str, key: str | None = None, timeout_s: float = 30.0) -> ServedModel:
    """What ``url`` serves; :class:`InputError` when it cannot answer in ``timeout_s`` s."""
    try:
        with urlopen(f"{url}/v1/models", key, timeout_s) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        raise InputError("--endpoint", url, f"GET /v1/models answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InputError("--endpoint", url, f"unreachable (GET /v1/models: {reason})") from None
    return parse_models(url, text)


#: The GPUs behind an endpoint: ``"68 x NVIDIA GB300"`` or a file of nvidia-smi CSV lines
#: (name, memory.total, driver_version; one per GPU).
SERVER_GPUS_ENV = "RACKBOOK_SERVER_GPUS"


def declared_gpus(value: str | None) -> list[dict[str, str]]:
    """The GPUs declared by :data:`SERVER_GPUS_ENV` (``[]`` when unset)."""
    text = (value or "").strip()
    if not text:
        return []
    if (path := Path(text)).is_file():
        gpus = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split(",")]
            if not parts[0]:
                why = "no GPU name (expected nvidia-smi CSV: name, memory, driver)"
                raise InputError(path, f"line {n}", why)
            gpus.append(dict(zip(("name", "memory", "driver"), parts, strict=False)))
        if not gpus:
            raise InputError(path, SERVER_GPUS_ENV, "lists no GPU")
        return gpus
    count, sep, name = text.partition(" x ")
    if not sep or not count.strip().isdigit() or int(count) <= 0 or not name.strip():
        why = "expected 'COUNT x NAME' (e.g. '68 x NVIDIA GB300') or a file"
        raise InputError(SERVER_GPUS_ENV, text, why)
    return [{"name": name.strip()} for _ in range(int(count))]


def server_version(url: str, key: str | None = None, timeout_s: float = 10.0) -> str | None:
    """The vLLM version an endpoint reports (``GET /version``), or None if it does not say."""
    try:
        with urlopen(f"{url}/version", key, timeout_s) as resp:
            doc = json.loads(resp.read().decode("utf-8", errors="replace"))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    v = doc.get("version") if isinstance(doc, dict) else None
    return str(v) if v else None


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
    models = {u: served_model(u, key) for u in dict.fromkeys(urls)}
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
    declared = os.environ.get(SERVER_GPUS_ENV)
    server = {
        "same_host": same_host,
        "endpoints": list(models),
        "served_model_name": m.id,
        "model": m.root,
        "max_model_len": m.max_model_len,
        "vllm_version": server_version(urls[0], key),
        "gpus": declared_gpus(declared),
        "gpus_declared_by": SERVER_GPUS_ENV if declared else None,
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
