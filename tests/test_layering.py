"""The trace-mode core never imports the live harness, vLLM or torch: reading the book and CI's
trace mode need none of them."""

from __future__ import annotations

import subprocess
import sys

from rackbook import paths

PKG = paths.ROOT / "src" / "rackbook"
CORE = sorted(
    ".".join(p.relative_to(PKG).with_suffix("").parts)
    for p in PKG.rglob("*.py")
    if p.stem != "__main__" and "live" not in p.relative_to(PKG).parts
)


def test_core_modules_import_no_live_code():
    code = (
        "import importlib, sys\n"
        f"for m in {CORE!r}: importlib.import_module('rackbook.' + m.removesuffix('.__init__'))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('rackbook.live', 'vllm', 'torch'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert "core.traces" in CORE and "cli" in CORE and len(CORE) > 20
