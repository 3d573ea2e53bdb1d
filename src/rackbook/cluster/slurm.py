"""The Slurm recipe: ``env/cluster/slurm.sbatch.in`` filled in, where ``@@name`` is a value and
a line starting ``@@?flag`` is kept (without that prefix) when ``flag`` holds."""

from __future__ import annotations

import re
from string import Template

from rackbook import paths
from rackbook.cluster.commands import (
    Raw,
    header,
    leader_var,
    router_argv,
    serve_commands,
    shell_join,
    shell_var,
)
from rackbook.cluster.topology import HF_HOME, Topology
from rackbook.core.units import plural

TEMPLATE = paths.ROOT / "env" / "cluster" / "slurm.sbatch.in"
_FLAG = re.compile(r"@@\?(\w+) ?")


class _Sbatch(Template):
    delimiter = "@@"  # bash uses $ everywhere; @@ never


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


def _blocks(topo: Topology) -> dict[str, str]:
    nodes, waits, launches = [], [], []
    for name, w in topo.workers.items():
        var, lead = shell_var(name), leader_var(name)
        nodes.append(f'{var}_NODES=("${{NODES[@]:{topo.node_offset(name)}:{topo.nodes(name)}}}")')
        nodes += [f'{lead}="$(ip_of "${{{var}_NODES[0]}}")"', f"export {lead}"]
        launches.append(
            f"for r in $(seq 0 {topo.nodes(name) - 1}); do "
            f'launch {name} "$r" "${{{var}_NODES[$r]}}"; done'
        )
        waits.append(f'wait_healthy "http://${{{lead}}}:{w.port}"')
    cases = [
        f"    {name}/{rank}) exec {cmd} ;;"
        for name, cmds in serve_commands(topo).items()
        for rank, cmd in enumerate(cmds)
    ]
    blocks = {"worker_nodes": nodes, "cases": cases, "launches": launches, "health_waits": waits}
    return {k: "\n".join(v) for k, v in blocks.items()}


def _values(topo: Topology, where: str) -> dict[str, str]:
    assert topo.slurm is not None
    s, direct, ref = topo.slurm, topo.endpoint_worker(), topo.reference_worker()
    leader = {n: f"http://${{{leader_var(n)}}}:{w.port}" for n, w in topo.workers.items()}
    router = shell_join(router_argv(topo, leader)) if topo.router is not None else ""
    gpus = str(topo.system.gpus_per_node) if topo.gpu else ""
    return {
        "header": header(topo).rstrip("\n"),
        "submit": shell_join([f"{where}/slurm.sbatch"]),
        "name": topo.name,
        "nodes": str(topo.total_nodes),
        "nodes_text": plural(topo.total_nodes, "node"),
        "gpu": gpus,
        "gpus": gpus,
        "srun_gpus": f" --gpus-per-node={gpus}" if gpus else "",
        "time": s.time,
        "partition": s.partition or "",
        "account": s.account or "",
        "container": "yes" if s.container else "",
        "host": "" if s.container else "yes",
        "where": ", in the container" if s.container else "",
        "image": topo.container.image,
        "hf_home": HF_HOME,
        "kv": "yes" if topo.kv_transfer is not None else "",
        "no_kv": "" if topo.kv_transfer is not None else "yes",
        "side_channel_port": str(topo.kv_transfer.side_channel_port) if topo.kv_transfer else "",
        "timeout": str(topo.health.timeout_s),
        "interval": str(topo.health.interval_s),
        "direct": direct or "",
        "direct_url": leader[direct] if direct else "",
        "router": router,
        "first_var": shell_var(next(iter(topo.workers))),
        "router_port": str(topo.router.port) if topo.router is not None else "",
        "reference": ref or "",
        "reference_url": leader[ref] if ref else "",
        "record": shell_join(record_argv(topo)) if s.record is not None else "",
        "serve": "" if s.record is not None else "yes",
    }


def slurm_script(topo: Topology, where: str = "env/cluster/generated") -> str:
    """An ``sbatch`` script: one ``srun`` per node rank, router, health wait, optionally a
    recorded trace; ``where``: its folder, named in its submit line."""
    if topo.slurm is None:
        raise ValueError(f"{topo.file}: no slurm section")
    values = _values(topo, where) | _blocks(topo)
    lines: list[str] = []
    for line in TEMPLATE.read_text(encoding="utf-8").splitlines():
        if m := _FLAG.match(line):
            if not values[m.group(1)]:
                continue
            line = line[m.end() :]
        lines.append(line)
    return _Sbatch("\n".join(lines)).substitute(values) + "\n"
