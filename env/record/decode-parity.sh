#!/usr/bin/env bash
# Regenerate the live decode-parity trace with real vLLM (CPU build) on the tiny MoE model.
#
#   bash env/record/decode-parity.sh                 # -> data/traces/live/decode-parity
#   OUT=/tmp/dp bash env/record/decode-parity.sh -p batch_sizes 8,16   # extra -p pass through
#
# Steps: live venv (env/live/setup.sh, idempotent), tiny model (env/live/tiny_model.py,
# idempotent), then one recording: `vllm serve` kept up for all batch sizes with
# `vllm bench serve --max-concurrency B` per point, then the offline fixed-batch engine
# (vllm.LLM) for the same batch sizes. Raw JSONs and logs land in "$OUT.raw/".
# About 3 minutes on 2 CPU cores; needs about 4 GB of free memory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-data/traces/decode-parity}"
bash env/live/setup.sh
.venv-live/bin/python env/live/tiny_model.py
exec .venv-live/bin/python -m rackbook.cli record decode-parity -o "$OUT" \
  -p batch_sizes 8,16,32,64,128,256 -p input_len 64 -p output_len 32 \
  -p prompts_per_batch 8 -p seed 0 "$@"
