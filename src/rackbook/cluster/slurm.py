"""The Slurm recipe generated from a topology: an ``sbatch`` script (:func:`slurm_script`)."""

from __future__ import annotations

from rackbook.cluster.commands import (
    Raw,
    header,
    leader_var,
    router_argv,
    serve_commands,
    shell_join,
    shell_var,
)
from rackbook.cluster.topology import HF_HOME, Slurm, Topology
from rackbook.physics.units import plural


def record_argv(topo: Topology) -> list[str]:
    """Words of the job's ``rackbook record`` step: ``$ENDPOINT`` into ``$LOGS/trace``."""
    rec = topo.slurm.record if topo.slurm is not None else None
    if rec is None:
        raise ValueError(f"{topo.file}: no slurm.record")
    words = ["rackbook", "record", rec.scenario, "--endpoint", Raw('"$ENDPOINT"')]
    words += ["-o", Raw('"$LOGS/trace"')]
    for name, value in rec.parameters.items():
        words += ["-p", name, str(value)]
    return words


def _sbatch_lines(topo: Topology, slurm_: Slurm, where: str) -> list[str]:
    """The shebang, the generated-file header and the ``#SBATCH`` directives."""
    sb = [
        "#!/bin/bash",
        header(topo).rstrip("\n"),
        f"# Submit from the repository root: sbatch {shell_join([f'{where}/slurm.sbatch'])}",
        f"#SBATCH --job-name={topo.name}",
        f"#SBATCH --nodes={topo.total_nodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if topo.gpu:
        sb.append(f"#SBATCH --gpus-per-node={topo.system.gpus_per_node}")
    sb += [
        "#SBATCH --exclusive",
        f"#SBATCH --time={slurm_.time}",
        f"#SBATCH --output={topo.name}-%j.log",
    ]
    optional = (("partition", slurm_.partition), ("account", slurm_.account))
    sb += [f"#SBATCH --{flag}={value}" for flag, value in optional if value]
    return sb + ["set -euo pipefail", ""]


def _environment_lines(topo: Topology, slurm_: Slurm) -> list[str]:
    """HF cache, logs, container flags, nodes, and each worker's nodes and leader address."""
    if slurm_.container:
        sb = [
            "# HF_CACHE: the Hugging Face cache (model weights), mounted in the container.",
            'HF_CACHE="${HF_CACHE:-$HOME/.cache/huggingface}"',
            f"export HF_HOME={HF_HOME}  # where the container sees that cache",
        ]
        container = (
            f'--container-image="${{RACKBOOK_IMAGE:-{topo.container.image}}}" '
            f'--container-mounts="$HF_CACHE:{HF_HOME}" --no-container-mount-home'
        )
    else:
        sb = [
            "# HF_CACHE: the Hugging Face cache (model weights) as every node sees it.",
            'HF_CACHE="${HF_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}}"',
            'export HF_HOME="$HF_CACHE"',
        ]
        container = ""
    n = topo.total_nodes
    sb += [
        'LOGS="${LOGS:-$PWD/logs/$SLURM_JOB_ID}"',
        'mkdir -p "$LOGS"',
        f"CONTAINER=({container})",
        "",
        "# Nodes in allocation order; workers take them in topology order.",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'if (( ${{#NODES[@]}} != {n} )); then echo "error: need {plural(n, "node")}, got ${{#NODES[@]}}" >&2; exit 2; fi',  # noqa: E501
        "ip_of() { getent ahostsv4 \"$1\" | awk 'NR == 1 { print $1; exit }'; }",
    ]
    for name in topo.workers:
        var = shell_var(name)
        sb.append(f'{var}_NODES=("${{NODES[@]:{topo.node_offset(name)}:{topo.nodes(name)}}}")')
        sb.append(f'{leader_var(name)}="$(ip_of "${{{var}_NODES[0]}}")"')
        sb.append(f"export {leader_var(name)}")
    if topo.kv_transfer is not None:
        sb.append(f"export VLLM_NIXL_SIDE_CHANNEL_PORT={topo.kv_transfer.side_channel_port}")
    return sb


def _launch_lines(topo: Topology, slurm_: Slurm) -> list[str]:
    """``node_cmd`` (every node's exact command), ``launch`` and one ``srun`` per node rank."""
    where = ", in the container" if slurm_.container else ""
    host_ip = '"$ip" VLLM_NIXL_SIDE_CHANNEL_HOST="$ip"' if topo.kv_transfer is not None else '"$ip"'
    gpus = f" --gpus-per-node={topo.system.gpus_per_node}" if topo.gpu else ""
    sb = [
        "",
        f"# node_cmd WORKER NODE_RANK: the exact command of one node (run there{where}).",
        "node_cmd() {",
        "  local ip",
        "  ip=\"$(hostname -I | awk '{ print $1 }')\"",
        f"  export VLLM_HOST_IP={host_ip}",
        '  case "$1/$2" in',
    ]
    for name, cmds in serve_commands(topo).items():
        sb += [f"    {name}/{rank}) exec {cmd} ;;" for rank, cmd in enumerate(cmds)]
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
        sb.append(
            f'for r in $(seq 0 {topo.nodes(name) - 1}); do launch {name} "$r" "${{{shell_var(name)}_NODES[$r]}}"; done'  # noqa: E501
        )
    return sb


def _health_lines(topo: Topology) -> list[str]:
    """``wait_healthy`` and one wait per worker leader."""
    timeout = topo.health.timeout_s
    sb = [
        "",
        "# Wait until every leader answers /health; stop at once if any node's process died.",
        "wait_healthy() {  # URL",
        f"  local deadline=$((SECONDS + {timeout}))",
        '  until curl -sf -o /dev/null "$1/health"; do',
        '    for pid in "${PIDS[@]}"; do',
        '      kill -0 "$pid" 2>/dev/null || { echo "error: a node process exited; see $LOGS" >&2; exit 1; }',  # noqa: E501
        "    done",
        f'    (( SECONDS < deadline )) || {{ echo "error: $1 not healthy after {timeout} s" >&2; exit 1; }}',  # noqa: E501
        f"    sleep {topo.health.interval_s}",
        "  done",
        '  echo "healthy: $1"',
        "}",
    ]
    for name, w in topo.workers.items():
        sb.append(f'wait_healthy "http://${{{leader_var(name)}}}:{w.port}"')
    return sb


def _endpoint_lines(topo: Topology) -> list[str]:
    """``ENDPOINT``: the router (started on the first node) or the one worker's leader."""
    direct = topo.endpoint_worker()
    if direct is not None:
        return [
            "",
            f"# No router: clients talk to {direct}'s leader directly.",
            f'ENDPOINT="http://${{{leader_var(direct)}}}:{topo.workers[direct].port}"',
        ]
    assert topo.router is not None  # load_topology checked it
    urls = {n: f"http://${{{leader_var(n)}}}:{w.port}" for n, w in topo.workers.items()}
    router = shell_join(router_argv(topo, urls))
    return [
        "",
        "# The router runs on the first node, next to the first worker's leader.",
        f'ROUTER_NODE="${{{shell_var(next(iter(topo.workers)))}_NODES[0]}}"',
        'srun --overlap --nodes=1 --ntasks=1 --nodelist="$ROUTER_NODE" "${CONTAINER[@]}" \\',
        f'  {router} > "$LOGS/router.log" 2>&1 &',
        "PIDS+=($!)",
        f'ENDPOINT="http://$(ip_of "$ROUTER_NODE"):{topo.router.port}"',
        'wait_healthy "$ENDPOINT"',
    ]


def _gpu_lines(topo: Topology) -> list[str]:
    """With GPUs: one ``nvidia-smi`` line per GPU of every node, for run.json."""
    if not topo.gpu:
        return []
    return [
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


def _end_lines(topo: Topology, slurm_: Slurm) -> list[str]:
    """The endpoint announced, then a recorded trace (``slurm.record``) or serving on."""
    sb = [
        'echo "$ENDPOINT" > "$LOGS/endpoint"',
        'echo "endpoint: $ENDPOINT (also in $LOGS/endpoint)"',
        'echo "run a notebook against it: rackbook run RESULT --params-file"'
        ' "params/RESULT.yaml -p endpoint $ENDPOINT"',
        "",
    ]
    if slurm_.record is not None:
        return sb + [
            "# Record a trace against the endpoint (slurm.record), then stop the servers (trap).",
            "# The client runs here, on the first node: see the note on CPUs at the top.",
            shell_join(record_argv(topo)),
            'echo "trace: $LOGS/trace"',
            "exit 0",
        ]
    return sb + [
        "# Serve until the time limit or until any process exits.",
        "wait -n || true",
        'echo "error: a process exited; see $LOGS" >&2',
        "exit 1",
    ]


def slurm_script(topo: Topology, where: str = "env/cluster/generated") -> str:
    """An ``sbatch`` script: one ``srun`` per node rank, router, health wait, optionally a
    recorded trace; ``where``: its folder, named in its submit line."""
    if topo.slurm is None:
        raise ValueError(f"{topo.file}: no slurm section")
    slurm_ = topo.slurm
    sb = _sbatch_lines(topo, slurm_, where) + _environment_lines(topo, slurm_)
    sb += _launch_lines(topo, slurm_) + _health_lines(topo)
    sb += _endpoint_lines(topo) + _gpu_lines(topo) + _reference_lines(topo)
    sb += _end_lines(topo, slurm_)
    return "\n".join(sb) + "\n"
