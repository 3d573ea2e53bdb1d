"""What a running vLLM endpoint serves (``GET /v1/models``), and the GPUs declared behind it."""

from __future__ import annotations

import json
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from rackbook.errors import InputError
from rackbook.live.envfile import urlopen


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
