#!/usr/bin/env bash
# Regenerate the live prefill-gain trace with real vLLM (CPU build) on the tiny MoE model.
#
#   bash env/record/prefill-gain.sh                        # -> data/traces/prefill-gain (+ .raw/)
#   OUT=/tmp/x bash env/record/prefill-gain.sh -p NAME VALUE  # extra recorder arguments pass through
#
# Two servers one after the other: config A (--max-num-batched-tokens 64) and config B
# (--max-num-batched-tokens 2048), prefix caching on. Each gets the shared 2048-token prefix once,
# then 240 requests of prefix + 256 new tokens at concurrency 1 (TTFT: new-token prefill rate);
# 240 so that each server's measured window outweighs its start-up warm-up (duty cycle >= 0.85).
# The claim's three changes are GPU features; this CPU stand-in is a real prefill knob.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-data/traces/prefill-gain}"
bash env/live/setup.sh >/dev/null
.venv-live/bin/python env/live/tiny_model.py >/dev/null
exec .venv-live/bin/python -m rackbook.cli record prefill-gain -o "$OUT" \
  -p prefix_tokens 2048 -p new_tokens 256 -p num_requests 240 -p output_len 4 -p seed 0 "$@"
