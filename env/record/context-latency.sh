#!/usr/bin/env bash
# Regenerate the live context-latency trace with real vLLM (CPU build) on the tiny MoE model.
#
#   bash env/record/context-latency.sh                        # -> data/traces/context-latency (+ .raw/)
#   OUT=/tmp/x bash env/record/context-latency.sh -p NAME VALUE  # extra recorder arguments pass through
#
# One server (max-model-len 4096) kept up; per context length L one point of 4 requests of
# L prompt tokens and 128 output tokens at concurrency 1 (requests.context_tokens = L); 8
# requests per point so that a point keeps enough valid requests to fit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-data/traces/context-latency}"
bash env/live/setup.sh >/dev/null
.venv-live/bin/python env/live/tiny_model.py >/dev/null
exec .venv-live/bin/python -m rackbook.cli record context-latency -o "$OUT" \
  -p context_lengths 128,256,512,1024,2048,3584 -p output_len 128 -p concurrency 1 -p num_requests 8 -p seed 0 "$@"
