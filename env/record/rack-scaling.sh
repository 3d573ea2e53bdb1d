#!/usr/bin/env bash
# Regenerate the live rack-scaling trace with real vLLM (CPU build) on the tiny MoE model.
#
#   bash env/record/rack-scaling.sh                        # -> data/traces/rack-scaling (+ .raw/)
#   OUT=/tmp/x bash env/record/rack-scaling.sh -p NAME VALUE  # extra recorder arguments pass through
#
# Two servers (replicas) on two ports; config 1x drives the first with one bench shard,
# config 2x drives both with one shard (process) each, at once, merged on one clock. Prompts of
# 512 tokens share a 384-token prefix (warmed per replica; each point has its own prompts and
# prefix), 64 output tokens, 768 requests per shard at concurrency 8: windows of at least 30 s
# per point on the pinned 2-core CPU stand-in.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-data/traces/rack-scaling}"
bash env/live/setup.sh >/dev/null
.venv-live/bin/python env/live/tiny_model.py >/dev/null
exec .venv-live/bin/python -m rackbook.cli record rack-scaling -o "$OUT" \
  -p replicas 1,2 -p input_len 512 -p prefix_len 384 -p output_len 64 -p num_prompts 768 -p concurrency 8 -p seed 0 "$@"
