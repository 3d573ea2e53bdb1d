#!/usr/bin/env bash
# The prepared device check of `rackbook calibrate` on a CUDA machine (an H200): time the
# kernels, write the calibration folder, and compare it figure by figure with the reference
# H200 measurement (data/calibration/h200-kernels.reference.json), flagging any figure more
# than 15 % off.
#
#   OUT=/some/folder bash env/calibration/h200.sh        # from the checkout's root, or anywhere
#
# Needs a Python with torch (CUDA) and numpy; the folder needs pandas and pyarrow, the catalogs
# PyYAML (pydantic if present: validated). Installs nothing from the internet: where pandas or
# pyarrow are missing it keeps the rows as JSON ($OUT/h200-calibrate.json) for
#   rackbook calibrate --from-json $OUT/h200-calibrate.json -o DIR
# and env/calibration/compare.py, run where they are. The whole CUDA run takes about a minute
# on an H200 (its calibrate step is given 240 s at most). PYTHON picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu QUICK=1: the script's plumbing where there is no GPU
QUICK=${QUICK:+--quick}
OUT=${OUT:-$PWD/.cache/calibration}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,memory.total \
  --format=csv,noheader || echo "h200.sh: nvidia-smi not found"
"$PY" - <<'PY'
import importlib.util as u, sys
print("python", sys.version.split()[0], "|", ", ".join(
    f"{m} {'yes' if u.find_spec(m) else 'MISSING'}"
    for m in ("torch", "numpy", "pandas", "pyarrow", "yaml", "pydantic", "tqdm")))
import torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "device",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NONE")
PY
start=$(date +%s)
rc=0
timeout -s INT 240 "$PY" -m rackbook.cli calibrate --device "$DEVICE" $QUICK -o "$OUT/h200-calibrate" \
  --save-json "$OUT/h200-calibrate.json" 2>"$OUT/calibrate.log" || rc=$?
{ tr '\r' '\n' <"$OUT/calibrate.log" | grep -v '^ *$' | tail -n 25 >&2; } || true
echo "h200.sh: calibrate exit $rc after $(( $(date +%s) - start )) s"
[ "$rc" -eq 0 ] || exit "$rc"
if "$PY" -c "import pandas, pyarrow" 2>/dev/null; then
  status=0
  "$PY" env/calibration/compare.py "$OUT/h200-calibrate" || status=$?
  [ "$status" -le 1 ] || exit "$status"
  echo "h200.sh: compare exit $status (1: some figure off by more than 15 % or not measured)"
else
  echo "h200.sh: pandas/pyarrow missing: compare elsewhere with" \
    "python env/calibration/compare.py $OUT/h200-calibrate.json"
fi
