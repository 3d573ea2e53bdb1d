#!/usr/bin/env bash
# Fast end-to-end check of live mode: record all six scenarios with SMALL parameters on the tiny
# model into DIR (default _build/live-ci; make test uses .cache/test/live-ci), then execute each result's notebook on its trace.
# Under 10 minutes on 2 cores. Every server is on 127.0.0.1 and stopped at the end.
#
#   bash env/record/ci-suite.sh [DIR]
#
# `make test` runs it as one live test (tests/live/test_live_suite.py), on the test session's
# held server.
#
# Servers: starting vLLM takes 25-35 s on two cores (three processes import torch and vLLM one
# after another), and an idle one costs about 1 % of a core. So the suite holds ONE plain server
# (python -m rackbook.live.server --hold) and records the four scenarios that need only "a
# server" against it with --endpoint: decode-parity (engine A; engine B, the offline vllm.LLM,
# still runs here: the endpoint is on this host), context-latency, single-user (through the
# notebook's own live path, `rackbook run --source live -p endpoint URL`) and eplb-balance.
# rack-scaling (two replicas at once) and prefill-gain (two server configurations) start their
# own servers, so the recorder's start/stop path is checked here too; tests/live checks it under
# signals, a dead server and --resume.
#
# eplb-balance: vLLM on CPU refuses --enable-eplb, so the suite records load against the held
# plain server with --endpoint and its log
# (-p server_log: no EPLB step lines on CPU, the trace's eplb_log is empty) and stores the
# shipped SYNTHETIC expert loads (data/traces/eplb-balance/expert_load.parquet) as the dump,
# so that trace is marked synthetic with the generator and seed of its source.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DIR="$(mkdir -p "${1:-_build/live-ci}" && cd "${1:-_build/live-ci}" && pwd)"
PY=.venv-live/bin/python
REC=("$PY" -m rackbook.cli record --no-progress)
# The suite checks the harness end to end on sweeps of 2-8 requests per point on a shared
# machine (one flagged request is 12-50 % of a point, and the attached held server is not
# pinned): flagged points are kept, and each trace's run.json lists them in accepted_invalid.
# The validity checks themselves are tested in tests/test_validity.py and tests/live.
export RACKBOOK_ACCEPT_INVALID=1
HOLDER=""
cleanup() {
  if [[ -n "$HOLDER" ]] && kill -0 "$HOLDER" 2>/dev/null; then
    kill -INT "$HOLDER"; wait "$HOLDER" || true
  fi
}
trap cleanup EXIT
t0=$(date +%s)
lap() { echo "[ci] $1: $(( $(date +%s) - t0 )) s" >&2; }
# `make test` has just run the live setup (its stamp is newer than what it installs from): the
# 15-20 s of setup.sh's checks are skipped then; a standalone run creates or repairs the venv.
STAMP=.venv-live/.rackbook-live-installed
if ! [[ -f $STAMP && $STAMP -nt env/live/requirements-live.txt && $STAMP -nt env/live/setup.sh \
        && $STAMP -nt pyproject.toml ]]; then
  bash env/live/setup.sh >/dev/null
fi
"$PY" env/live/tiny_model.py >/dev/null
rm -rf "$DIR"/{decode-parity,rack-scaling,prefill-gain,eplb-balance,context-latency,single-user}{,.raw} "$DIR/executed"

# The held server, on the model's absolute path: its /v1/models names that folder, which the
# single-user notebook (run from notebooks/) loads its tokenizer from. max-model-len 1024 holds
# context-latency's longest context (768 + 32 tokens); max-num-seqs 8 decode-parity's largest
# batch. RACKBOOK_SUITE_ENDPOINT (with RACKBOOK_SUITE_SERVER_LOG, its log file) names such a
# server already held by the caller: tests/live/test_live_suite.py passes its test session's.
if [[ -n "${RACKBOOK_SUITE_ENDPOINT:-}" ]]; then
  URL=$RACKBOOK_SUITE_ENDPOINT
  SLOG=${RACKBOOK_SUITE_SERVER_LOG:?RACKBOOK_SUITE_SERVER_LOG: the log file of the server at RACKBOOK_SUITE_ENDPOINT}
else
  SLOG="$DIR/held-server.log"; STATUS="$DIR/held-server.json"; rm -f "$STATUS"
  "$PY" -m rackbook.live.server "$ROOT/.cache/tiny-moe" --hold 900 --status "$STATUS" \
    --log "$SLOG" -- --load-format dummy --dtype bfloat16 --max-model-len 1024 --max-num-seqs 8 \
    --enforce-eager --served-model-name tiny-moe 2>"$DIR/held-server.err" &
  HOLDER=$!
  for _ in $(seq 600); do [[ -s "$STATUS" ]] && break; kill -0 "$HOLDER" || exit 1; sleep 0.5; done
  URL=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['url'])" "$STATUS")
fi
lap held-server

"${REC[@]}" decode-parity -o "$DIR/decode-parity" --endpoint "$URL" -p batch_sizes 4,8 \
  -p input_len 32 -p output_len 16 -p prompts_per_batch 2
lap decode-parity
"${REC[@]}" context-latency -o "$DIR/context-latency" --endpoint "$URL" \
  -p context_lengths 64,256,768 -p output_len 32 -p num_requests 2
lap context-latency
# single-user through the notebook's own live path: `rackbook run --source live` records the
# trace with real vLLM (from the trace-mode venv) and executes the chapter on it.
.venv/bin/rackbook run single-user --source live -p endpoint "$URL" -p input_len 32 \
  -p output_len 64 -p num_requests 2 --out "$DIR/live-executed"
mkdir -p "$DIR/single-user" && cp -r "$DIR/live-executed/traces/single-user/." "$DIR/single-user/"
lap single-user
# eplb-balance: the held server's log is read for EPLB step lines.
"${REC[@]}" eplb-balance -o "$DIR/eplb-balance" --endpoint "$URL" -p server_log "$SLOG" \
  -p expert_load data/traces/eplb-balance/expert_load.parquet -p num_prompts 8 -p concurrency 4
cleanup; HOLDER=""
lap eplb-balance

"${REC[@]}" rack-scaling -o "$DIR/rack-scaling" -p replicas 1,2 -p input_len 192 -p prefix_len 128 \
  -p output_len 16 -p num_prompts 8 -p concurrency 4 -p max_model_len 256 -p max_num_seqs 8
lap rack-scaling
"${REC[@]}" prefill-gain -o "$DIR/prefill-gain" -p prefix_tokens 512 -p new_tokens 128 \
  -p num_requests 6 -p max_model_len 1024
lap prefill-gain

# The six chapters on their traces, two at a time (each is its own process and writes only its
# own files in executed/); a failure fails the suite.
printf '%s\n' decode-parity rack-scaling prefill-gain eplb-balance context-latency single-user |
  xargs -P 2 -I{} .venv/bin/rackbook run {} -p trace "$DIR/{}" --out "$DIR/executed"
lap notebooks
