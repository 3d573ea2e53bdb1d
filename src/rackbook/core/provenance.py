"""Provenance of a trace (``run.json``): commit, hardware, behaviour-changing environment (secrets
redacted), paths relative to the repository."""

from __future__ import annotations

import contextlib
import datetime as _dt
import getpass
import os
import platform
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from rackbook.core import schema
from rackbook.paths import ROOT

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)

#: What an absolute path inside the repository is written as in provenance.
REPO = "$REPO"


def repo_relative(text: str) -> str:
    """``text`` with paths under the repository as ``$REPO/...`` and the home folder as ``~``."""
    for base in dict.fromkeys((str(ROOT), str(ROOT.resolve()))):
        text = text.replace(base + "/", REPO + "/").replace(base, REPO)
    home = os.path.expanduser("~")
    if home not in ("~", "/"):
        text = text.replace(home + "/", "~/")
    return text


def expand_repo(text: str) -> str:
    """The inverse of :func:`repo_relative` for ``$REPO``."""
    return text.replace(REPO, str(ROOT))


def scrub(obj: Any) -> Any:
    """:func:`repo_relative` applied to every string of a JSON-like object (a copy)."""
    if isinstance(obj, str):
        return repo_relative(obj)
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


def scrub_files(folder: Path) -> list[Path]:
    """Rewrite raw artifacts under ``folder`` with :func:`repo_relative`; the files changed."""
    changed = []
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.suffix in (".json", ".log", ".txt"):
            text = f.read_text(encoding="utf-8", errors="surrogateescape")
            new = repo_relative(text)
            if new != text:
                f.write_text(new, encoding="utf-8", errors="surrogateescape")
                changed.append(f)
    return changed


def _run(*cmd: str, timeout: float = 10) -> str:
    """Stripped stdout of ``cmd`` (OSError or SubprocessError when it cannot run)."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return done.stdout.strip()


def project_commit() -> str:
    """The project's git commit (``+dirty`` when tracked files changed), or ``unknown``."""
    git, tracked = ("git", "-C", str(ROOT)), ("--", ".", ":(exclude)data/traces")  # not traces
    try:
        sha = _run(*git, "rev-parse", "HEAD")
        dirty = _run(*git, "status", "--porcelain", "--untracked-files=no", *tracked)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("+dirty" if dirty else "")) if sha else "unknown"


def hardware_inventory() -> dict[str, Any]:
    """CPU model, logical cores, memory (bytes), host name and GPUs (``nvidia-smi``, if any)."""
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError):
        found = re.search(r"^model name.*?:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = found.group(1).strip() if found else cpu
    mem = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    gpus: list[dict[str, str]] = []
    if shutil.which("nvidia-smi"):
        with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
            query = "--query-gpu=name,memory.total,driver_version"
            for line in _run("nvidia-smi", query, "--format=csv,noheader", timeout=20).splitlines():
                name, memory, driver = (x.strip() for x in line.split(","))
                gpus.append({"name": name, "memory": memory, "driver": driver})
    return {
        "cpu_model": cpu,
        "cpu_cores": os.cpu_count(),
        "memory_bytes": mem,
        "host": platform.node(),
        "hosts": 1,
        "gpus": gpus,
        "machine": platform.machine(),
    }


#: Environment variables (by prefix) that change behaviour, kept in provenance (secrets redacted).
ENV_PREFIXES = ("VLLM_", "HF_", "TRANSFORMERS_", "OMP_", "CUDA_", "RACKBOOK_", "DO_NOT_TRACK")


def new_run_info(
    *,
    kind: str,
    commands: list[str],
    parameters: dict[str, Any],
    engine: dict[str, Any],
    generator: dict[str, Any] | None = None,
    notes: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """A complete ``run.json`` dict with provenance filled in from this machine."""
    run = {
        "schema_version": schema.SCHEMA_VERSION,
        "trace_id": uuid.uuid4().hex[:12],
        "kind": kind,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "project_commit": project_commit(),
        "hardware": hardware_inventory(),
        "engine": engine,
        "commands": commands,
        "parameters": parameters,
        "environment": {
            k: ("<redacted>" if _SECRET_NAME.search(k) else v)
            for k, v in sorted(os.environ.items())
            if k.startswith(ENV_PREFIXES)
        },
        "notes": notes,
        "recorded_by": getpass.getuser() if kind == "recorded" else None,
    }
    return scrub(run | ({} if generator is None else {"generator": generator}) | extra)


def _gpus_text(gpus: list[dict[str, Any]]) -> str:
    """``4 x B300`` (names sorted, each once)."""
    return f"{len(gpus)} x {', '.join(sorted({g.get('name', 'GPU') for g in gpus}))}"


def hardware_label(run: dict[str, Any]) -> str:
    """Where a trace was measured, e.g. ``4 x B300 (declared at import)``."""
    hw = run.get("hardware") or {}
    gpus = hw.get("gpus") or []
    if isinstance(hw.get("declared"), dict) and gpus:
        return f"{_gpus_text(gpus)} (declared at import)"
    server = run.get("server")
    if isinstance(server, dict) and not server.get("same_host"):  # remote endpoints' GPUs
        sg = server.get("gpus") or []
        if not sg:
            return "an endpoint whose GPUs were not declared (RACKBOOK_SERVER_GPUS)"
        return f"{_gpus_text(sg)} (declared for the endpoint)"
    cpu = f"{hw.get('cpu_cores', '?')}-core {hw.get('cpu_model') or 'unknown CPU'}, no GPU"
    hosts = hw.get("hosts") or 1
    return (_gpus_text(gpus) if gpus else cpu) + (f", {hosts} hosts" if hosts > 1 else "")
