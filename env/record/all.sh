#!/usr/bin/env bash
# Re-record the shipped live traces data/traces/<result>/ (+ <result>.raw/) of the five live
# results with their default parameters (env/record/<result>.sh), one after the other, then
# compress the raw JSON artifacts and logs with gzip -9 (rackbook reads *.json.gz; record.json
# stays plain). eplb-balance is not recorded here: its default trace is synthetic
# (env/record/eplb-balance.sh), because vLLM on CPU refuses --enable-eplb.
#
#   bash env/record/all.sh                    # all five, about 10 minutes on 2 cores
#   bash env/record/all.sh single-user        # a subset
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
RESULTS=("$@")
[[ ${#RESULTS[@]} -gt 0 ]] || RESULTS=(decode-parity rack-scaling prefill-gain context-latency single-user)
for r in "${RESULTS[@]}"; do
  raw="data/traces/$r.raw"
  rm -rf "$raw"  # a fresh recording: no stale raw artifact may mix in
  start=$(date +%s)
  OUT="data/traces/$r" bash "env/record/$r.sh" --no-progress
  find "$raw" -type f \( -name '*.json' ! -name 'record.json' -o -name '*.log' \) -exec gzip -9f {} +
  echo "[all] $r: $(( $(date +%s) - start )) s; trace $(du -sh "data/traces/$r" | cut -f1), raw $(du -sh "$raw" | cut -f1)" >&2
done
