"""The Slurm recipe generated from a topology: an ``sbatch`` script (one node per tray, one
``srun`` per node rank, the leaders' addresses from ``scontrol show hostnames``, router start,
health wait; with ``slurm.record``, the job records a trace once healthy, then ends).
"""

from __future__ import annotations

import re

from rackbook.cluster.commands import (
    Raw,
    header,
    leader_var,
    router_argv,
    serve_commands,
    shell_join,
)
from rackbook.cluster.topology import HF_HOME, Topology
from rackbook.physics.units import plural


def record_argv(topo: Topology) -> list[str]:
    """Words of the job's ``rackbook record`` step (``slurm.record``), against ``$ENDPOINT``
    into ``$LOGS/trace`` (the model comes from the endpoint's ``/v1/models``)."""
    rec = topo.slurm.record if topo.slurm is not None else None
    if rec is None:
        raise ValueError(f"{topo.file}: no slurm.record")
    words = ["rackbook", "record", rec.scenario, "--endpoint", Raw('"$ENDPOINT"')]
    words += ["-o", Raw('"$LOGS/trace"')]
    for name, value in rec.parameters.items():
        words += ["-p", name, str(value)]
    return words


def _reference_lines(topo: Topology) -> list[str]:
    """Where the job writes the one-node reference worker's URL (none without one)."""
    ref = topo.reference_worker()
    if ref is None:
        return []
    return [
        "",
        f"# The one-node reference ({ref}) is outside the router: clients reach its leader.",
        f'echo "http://${{{leader_var(ref)}}}:{topo.workers[ref].port}"'
        ' > "$LOGS/reference-endpoint"',
    ]


def slurm_script(topo: Topology, where: str = "env/cluster/generated") -> str:
    """An ``sbatch`` script: one node per tray, one ``srun`` per node rank, router, health wait;
    with ``slurm.record``, a recorded trace and a clean end (exit 0) once healthy. ``where``:
    the folder it is written to (relative to the repository root, or absolute), named in its
    submit line. Needs the topology's ``slurm`` section."""
    if topo.slurm is None:
        raise ValueError(f"{topo.file}: no slurm section")
    slurm_ = topo.slurm  # narrowed: the section exists
    per_node = topo.system.gpus_per_node
    n = topo.total_nodes
    container = (
        f'--container-image="${{RACKBOOK_IMAGE:-{topo.container.image}}}" '
        f'--container-mounts="$HF_CACHE:{HF_HOME}" --no-container-mount-home'
        if slurm_.container
        else ""
    )
    gpus = f" --gpus-per-node={per_node}" if topo.gpu else ""
    sb = [
        "#!/bin/bash",
        header(topo).rstrip("\n"),
        f"# Submit from the repository root: sbatch {shell_join([f'{where}/slurm.sbatch'])}",
        f"#SBATCH --job-name={topo.name}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if topo.gpu:
        sb.append(f"#SBATCH --gpus-per-node={per_node}")
    sb += [
        "#SBATCH --exclusive",
        f"#SBATCH --time={slurm_.time}",
        f"#SBATCH --output={topo.name}-%j.log",
    ]
    if slurm_.partition:
        sb.append(f"#SBATCH --partition={slurm_.partition}")
    if slurm_.account:
        sb.append(f"#SBATCH --account={slurm_.account}")
    sb += ["set -euo pipefail", ""]
    if slurm_.container:
        sb += [
            "# HF_CACHE: the Hugging Face cache (model weights), mounted in the container.",
            'HF_CACHE="${HF_CACHE:-$HOME/.cache/huggingface}"',
            f"export HF_HOME={HF_HOME}  # where the container sees that cache",
        ]
    else:
        sb += [
            "# HF_CACHE: the Hugging Face cache (model weights) as every node sees it.",
            'HF_CACHE="${HF_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}}"',
            'export HF_HOME="$HF_CACHE"',
        ]
    sb += [
        'LOGS="${LOGS:-$PWD/logs/$SLURM_JOB_ID}"',
        'mkdir -p "$LOGS"',
        f"CONTAINER=({container})" if container else "CONTAINER=()",
        "",
        "# Nodes in allocation order; workers take them in topology order.",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'if (( ${{#NODES[@]}} != {n} )); then echo "error: need {plural(n, "node")}, got ${{#NODES[@]}}" >&2; exit 2; fi',  # noqa: E501
        "ip_of() { getent ahostsv4 \"$1\" | awk 'NR == 1 { print $1; exit }'; }",
    ]
    for name in topo.workers:
        off = topo.node_offset(name)
        var = re.sub(r"[^A-Z0-9]", "_", name.upper())
        sb.append(f'{var}_NODES=("${{NODES[@]:{off}:{topo.nodes(name)}}}")')
        sb.append(f'{leader_var(name)}="$(ip_of "${{{var}_NODES[0]}}")"')
        sb.append(f"export {leader_var(name)}")
    if topo.kv_transfer is not None:
        sb.append(f"export VLLM_NIXL_SIDE_CHANNEL_PORT={topo.kv_transfer.side_channel_port}")
    sb += [
        "",
        "# node_cmd WORKER NODE_RANK: the exact command of one node (run there, in the container)."
        if slurm_.container
        else "# node_cmd WORKER NODE_RANK: the exact command of one node (run there).",
        "node_cmd() {",
        "  local ip",
        "  ip=\"$(hostname -I | awk '{ print $1 }')\"",
        '  export VLLM_HOST_IP="$ip" VLLM_NIXL_SIDE_CHANNEL_HOST="$ip"'
        if topo.kv_transfer is not None
        else '  export VLLM_HOST_IP="$ip"',
        '  case "$1/$2" in',
    ]
    for name, cmds in serve_commands(topo).items():
        for rank, cmd in enumerate(cmds):
            sb.append(f"    {name}/{rank}) exec {cmd} ;;")
    sb += [
        '    *) echo "error: no node $1/$2" >&2; return 2 ;;',
        "  esac",
        "}",
        "",
        "PIDS=()",
        'cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; }',
        "trap cleanup EXIT",
        "launch() {  # WORKER NODE_RANK HOST",
        f'  srun --nodes=1 --ntasks=1 --nodelist="$3"{gpus} "${{CONTAINER[@]}}" \\',
        '    bash -c "$(declare -f node_cmd); node_cmd $1 $2" > "$LOGS/$1-$2.log" 2>&1 &',
        "  PIDS+=($!)",
        "}",
    ]
    for name in topo.workers:
        var = re.sub(r"[^A-Z0-9]", "_", name.upper())
        sb.append(
            f'for r in $(seq 0 {topo.nodes(name) - 1}); do launch {name} "$r" "${{{var}_NODES[$r]}}"; done'  # noqa: E501
        )
    sb += [
        "",
        "# Wait until every leader answers /health; stop at once if any node's process died.",
        "wait_healthy() {  # URL",
        f"  local deadline=$((SECONDS + {topo.health.timeout_s}))",
        '  until curl -sf -o /dev/null "$1/health"; do',
        '    for pid in "${PIDS[@]}"; do',
        '      kill -0 "$pid" 2>/dev/null || { echo "error: a node process exited; see $LOGS" >&2; exit 1; }',  # noqa: E501
        "    done",
        f'    (( SECONDS < deadline )) || {{ echo "error: $1 not healthy after {topo.health.timeout_s} s" >&2; exit 1; }}',  # noqa: E501
        f"    sleep {topo.health.interval_s}",
        "  done",
        '  echo "healthy: $1"',
        "}",
    ]
    for name, w in topo.workers.items():
        sb.append(f'wait_healthy "http://${{{leader_var(name)}}}:{w.port}"')
    direct = topo.endpoint_worker()
    if direct is None:
        assert topo.router is not None  # load_topology checked it
        urls = {n: f"http://${{{leader_var(n)}}}:{w.port}" for n, w in topo.workers.items()}
        router = shell_join(router_argv(topo, urls))
        first = re.sub(r"[^A-Z0-9]", "_", next(iter(topo.workers)).upper())
        sb += [
            "",
            "# The router runs on the first node, next to the first worker's leader.",
            f'ROUTER_NODE="${{{first}_NODES[0]}}"',
            'srun --overlap --nodes=1 --ntasks=1 --nodelist="$ROUTER_NODE" "${CONTAINER[@]}" \\',
            f'  {router} > "$LOGS/router.log" 2>&1 &',
            "PIDS+=($!)",
            f'ENDPOINT="http://$(ip_of "$ROUTER_NODE"):{topo.router.port}"',
            'wait_healthy "$ENDPOINT"',
        ]
    else:
        sb += [
            "",
            f"# No router: clients talk to {direct}'s leader directly.",
            f'ENDPOINT="http://${{{leader_var(direct)}}}:{topo.workers[direct].port}"',
        ]
    if topo.gpu:
        sb += [
            "",
            "# The GPUs behind the endpoint, for run.json (a client on its own host cannot see",
            "# them): one nvidia-smi line per GPU of every node. Where the client runs:",
            "# export RACKBOOK_SERVER_GPUS=$LOGS/gpus.csv",
            f"srun --overlap --nodes={topo.total_nodes} --ntasks-per-node=1 nvidia-smi \\",
            "  --query-gpu=name,memory.total,driver_version --format=csv,noheader \\",
            '  > "$LOGS/gpus.csv" \\',
            '  || echo "warning: nvidia-smi failed: declare RACKBOOK_SERVER_GPUS yourself" >&2',
            'export RACKBOOK_SERVER_GPUS="$LOGS/gpus.csv"',
        ]
    sb += _reference_lines(topo)
    sb += [
        'echo "$ENDPOINT" > "$LOGS/endpoint"',
        'echo "endpoint: $ENDPOINT (also in $LOGS/endpoint)"',
        'echo "run a notebook against it: rackbook run RESULT --params-file"'
        ' "params/RESULT.yaml -p endpoint $ENDPOINT"',
        "",
    ]
    if slurm_.record is not None:
        sb += [
            "# Record a trace against the endpoint (slurm.record), then stop the servers (trap).",
            "# The client runs here, on the first node: see the note on CPUs at the top.",
            shell_join(record_argv(topo)),
            'echo "trace: $LOGS/trace"',
            "exit 0",
        ]
    else:
        sb += [
            "# Serve until the time limit or until any process exits.",
            "wait -n || true",
            'echo "error: a process exited; see $LOGS" >&2',
            "exit 1",
        ]
    return "\n".join(sb) + "\n"
