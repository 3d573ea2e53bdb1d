#!/usr/bin/env bash
# Rebuild the shipped published traces (data/published/<trace>/) from the saved source slices in
# data/published/sources/ (each described, with its URL and commit, by a *-SOURCE.txt beside it).
# One command: `bash env/published/derive.sh [OUT_DIR]` (default data/published).
# Deterministic: re-running leaves the published_points tables unchanged (run.json gets a new
# trace id and creation time). Needs only the book env: `.venv/bin/rackbook` or PYTHON=...
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-data/published}"
SRC=data/published/sources
if [[ -n "${PYTHON:-}" ]]; then RB=("$PYTHON" -m rackbook.cli)
elif [[ -x .venv/bin/rackbook ]]; then RB=(.venv/bin/rackbook)
else RB=(python3 -m rackbook.cli); fi

# No InferenceX trace: the only stored copy of its API rows is the dashboard's Cypress UI test
# fixture (tests/fixtures/published/inferencex-benchmarks.json), which is not a publication.

"${RB[@]}" import mlperf "$SRC/mlperf-v6.1-summary.csv" -o "$OUT/mlperf-v6.1-dsr1" --force \
  --model deepseek-r1 \
  --source-url https://github.com/mlcommons/inference_results_v6.1/blob/7bf15fd8089655a71fb75c81a744d7ba5a632424/summary.csv

"${RB[@]}" import sglang-cookbook "$SRC/sglang-deepseek-v4-benchmarks.jsx" -o "$OUT/sglang-cookbook-v4" --force \
  --source-url https://github.com/sgl-project/sglang/blob/08587007c81585756076d965a3af856ac620f1b9/docs_new/src/snippets/configs/deepseek-ai/deepseek-v4-benchmarks.jsx
