#!/usr/bin/env bash
# Regenerate the live single-user trace with real vLLM (CPU build) on the tiny MoE model.
#
#   bash env/record/single-user.sh                        # -> data/traces/single-user (+ .raw/)
#   OUT=/tmp/x bash env/record/single-user.sh -p NAME VALUE  # extra recorder arguments pass through
#
# One server; 32 requests sent one at a time (concurrency 1): 128 prompt tokens, 512 output
# tokens each (ignore-eos): per-token gaps of one stream (32 requests: a median and a spread,
# not an anecdote; about a minute on the pinned CPU engine).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-data/traces/single-user}"
bash env/live/setup.sh >/dev/null
.venv-live/bin/python env/live/tiny_model.py >/dev/null
exec .venv-live/bin/python -m rackbook.cli record single-user -o "$OUT" \
  -p input_len 128 -p output_len 512 -p num_requests 32 -p seed 0 "$@"
