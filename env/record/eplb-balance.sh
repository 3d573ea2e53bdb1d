#!/usr/bin/env bash
# Regenerate the eplb-balance default trace (data/traces/eplb-balance): SYNTHETIC expert loads
# from rackbook.physics.eplb.synthetic_loads, skew calibrated so that static placement at EP 64 (64
# redundant experts) has vLLM balancedness 0.35 (claim eplb-balance.before). Deterministic:
# the same seed gives the same loads (run.json's trace_id, time and commit change).
#
#   bash env/record/eplb-balance.sh                 # defaults (seed 0)
#   bash env/record/eplb-balance.sh --seed 1 OUT    # other options: python -m rackbook.results.eplb_balance -h
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
if [[ $# -eq 0 || "${!#}" == -* ]]; then
  set -- "$@" "$ROOT/data/traces/eplb-balance"
fi
exec "$PY" -m rackbook.results.eplb_balance "$@"
