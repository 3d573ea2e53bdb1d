"""The command lines generated from a topology (:mod:`rackbook.cluster.topology`): the exact
``vllm serve`` line of every node rank of every worker (:func:`serve_commands`), the router's,
the readable ``serve-commands.sh``, and the header every generated file starts with.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from rackbook.cluster.topology import Topology
from rackbook.physics.units import plural


class Raw(str):
    """A shell word written as is (it holds an expansion such as ``$POD_IP``)."""


def shell_join(words: list[str]) -> str:
    return " ".join(w if isinstance(w, Raw) else shlex.quote(w) for w in words)


def _json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"))


def shell_var(name: str) -> str:
    """The shell variable stem of worker ``name`` (upper case, ``_`` for anything else)."""
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def leader_var(worker: str) -> str:
    """Shell variable holding the worker leader's IP address in the generated scripts."""
    return shell_var(worker) + "_LEADER_IP"


def serve_argv(
    topo: Topology,
    worker: str,
    node_rank: int,
    *,
    leader: str | None = None,
    start_rank: str | int | None = None,
) -> list[str]:
    """Words of the ``vllm serve`` command of ``worker``'s node ``node_rank``.

    ``leader`` is the leader's address as a shell word (default ``$<WORKER>_LEADER_IP``);
    ``start_rank`` the first data-parallel rank of the node (default ``node_rank x
    gpus_per_node``; may be a shell expression). Node rank 0 serves the API; others are headless.
    """
    w = topo.workers[worker]
    per_node = topo.system.gpus_per_node
    if not 0 <= node_rank < topo.nodes(worker):
        raise ValueError(f"node rank {node_rank} outside 0..{topo.nodes(worker) - 1}")
    address = Raw(leader if leader is not None else f"${leader_var(worker)}")
    words: list[str] = ["vllm", "serve", topo.model.hf_id]
    if node_rank == 0:
        words += ["--host", "0.0.0.0", "--port", str(w.port)]
        words += ["--api-server-count", str(w.api_server_count)]
    else:
        rank = start_rank if start_rank is not None else node_rank * per_node
        words += ["--headless", "--data-parallel-start-rank", Raw(str(rank))]
    words += [
        "--tensor-parallel-size",
        "1",
        "--data-parallel-size",
        str(w.gpus),
        "--data-parallel-size-local",
        str(per_node),
        "--data-parallel-address",
        address,
        "--data-parallel-rpc-port",
        str(w.rpc_port),
    ]
    if topo.eplb is not None:
        words += [
            "--enable-expert-parallel",
            "--enable-eplb",
            "--eplb-config",
            _json(
                {
                    "window_size": topo.eplb.window_size,
                    "step_interval": topo.eplb.step_interval,
                    "num_redundant_experts": w.num_redundant_experts,
                    "log_balancedness": topo.eplb.log_balancedness,
                }
            ),
        ]
    if topo.kv_transfer is not None and w.role != "reference":
        kv = topo.kv_transfer
        words += ["--kv-transfer-config", _json({"kv_connector": kv.connector, "kv_role": kv.role})]
    return [*words, *w.extra_args]


def serve_commands(topo: Topology) -> dict[str, list[str]]:
    """worker -> the ``vllm serve`` command line of each node rank (index = node rank).

    Leader addresses are the shell variables named by :func:`leader_var`.
    """
    return {
        name: [shell_join(serve_argv(topo, name, r)) for r in range(topo.nodes(name))]
        for name in topo.workers
    }


def router_argv(topo: Topology, urls: dict[str, str]) -> list[str]:
    """Words of the router command; ``urls`` maps worker -> its leader's API base URL."""
    if topo.router is None:
        raise ValueError(f"{topo.file}: no router (one aggregated worker)")
    words = ["vllm-router", "--vllm-pd-disaggregation"]
    words += ["--host", "0.0.0.0", "--port", str(topo.router.port)]
    for name in topo.role_workers("prefill"):
        words += ["--prefill", Raw(urls[name])]
    for name in topo.role_workers("decode"):
        words += ["--decode", Raw(urls[name])]
    words += ["--prefill-policy", topo.router.prefill_policy]
    words += ["--decode-policy", topo.router.decode_policy]
    return words


def units(topo: Topology, n: int) -> str:
    """``n`` of what the topology's ``gpus`` count: GPUs, or engine ranks on CPU nodes."""
    return plural(n, "GPU" if topo.gpu else "CPU engine rank")


def workers_text(topo: Topology, roles: bool = True) -> str:
    """The workers in words: ``decode DEP64 on 16 nodes``, with each role that is not the
    worker's name when ``roles``."""
    dp = "DEP" if topo.eplb is not None else "DP"
    return ", ".join(
        f"{n}{'' if n == w.role or not roles else f' ({w.role})'} {dp}{w.gpus} on "
        + plural(topo.nodes(n), "node")
        for n, w in topo.workers.items()
    )


def header(topo: Topology, comment: str = "#") -> str:
    return (
        f"{comment} GENERATED by `rackbook recipes` from {topo.file}: edit that file, not this.\n"
        f"{comment} {topo.model.hf_id} on {topo.system_label} with "
        f"{topo.vllm.image}:{topo.vllm.tag}: {workers_text(topo)}"
        + f"; {units(topo, topo.total_gpus)}, {plural(topo.total_nodes, 'node')} of "
        f"{topo.system.gpus_per_node}.\n"
        f"{comment} Run the benchmark client (vllm bench serve, rackbook record --endpoint) on its "
        "own host or cores,\n"
        f"{comment} never on a serving node's busy CPUs: a starved client records token bursts, "
        "not the engine\n"
        f"{comment} (book/methodology.md, Measurement validity).\n"
    )


def serve_commands_sh(topo: Topology) -> str:
    """Every node's command, readable: what :func:`serve_commands` returns, with node headers."""
    lines = [header(topo).rstrip("\n")]
    lines.append("# Leader addresses are shell variables (set by slurm.sbatch, or by you):")
    for name in topo.workers:
        lines.append(f"#   ${leader_var(name)}: IP of {name}'s node rank 0")
    if topo.kv_transfer is not None:
        lines.append(
            "# Every node also needs VLLM_HOST_IP and VLLM_NIXL_SIDE_CHANNEL_HOST = its own IP."
        )
    else:
        lines.append("# Every node also needs VLLM_HOST_IP = its own IP.")
    for name, cmds in serve_commands(topo).items():
        w = topo.workers[name]
        for rank, cmd in enumerate(cmds):
            first = rank * topo.system.gpus_per_node
            last = first + topo.system.gpus_per_node - 1
            what = "leader, API server" if rank == 0 else "headless"
            role = "" if name == w.role else f" ({w.role})"
            lines += ["", f"# {name}{role} node rank {rank}: DP ranks {first}-{last}, {what}"]
            lines.append(cmd)
    urls = {n: f"http://${leader_var(n)}:{w.port}" for n, w in topo.workers.items()}
    if topo.router is not None:
        lines += ["", "# router (any host that reaches the leaders)"]
        lines.append(shell_join(router_argv(topo, urls)))
    return "\n".join(lines) + "\n"
