"""The cluster topology (``env/cluster/topology.yaml``) and every recipe generated from it.

One file says how DeepSeek-V4.1-Flash is served on a GB300 NVL72: which vLLM, which workers
(prefill DEP4, decode DEP64), how KV moves between them (NixlConnector), which router stands in
front, and what the live notebooks read. From it this module generates, deterministically:

- :func:`serve_commands`: the exact ``vllm serve`` line of every node rank of every worker;
- :func:`slurm_script`: an ``sbatch`` script (one node per tray, one ``srun`` per node rank, the
  leaders' addresses from ``scontrol show hostnames``, router start, health wait);
- :func:`kubernetes_manifest`: one LeaderWorkerSet per worker, a Service per worker leader, the
  router Deployment and its Service;
- :func:`notebook_parameters`: the live parameters of the notebooks (endpoint, GPU counts, model).

:func:`write_recipes` writes them all to ``env/cluster/generated/`` at once (``rackbook recipes``).

The same generator takes CPU nodes (``system.device: cpu``: no GPU requested anywhere), one
aggregated worker that clients reach directly (no router or KV connector), and ``slurm.record``
(the job records a trace once healthy, then ends): env/cluster/ci/topology-cpu.yaml, which
``make test-cluster`` submits to a one-node Slurm cluster (env/cluster/ci/slurm-test.sh).

Units: GPUs are counts, ports TCP ports, times seconds. Every flag used exists in the ``vllm
serve`` parser of vLLM 0.32.0 (checked by tests/test_topology.py against ``.venv-live``). This
module never imports vllm.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import Field

from rackbook import paths
from rackbook.core import fsio
from rackbook.errors import InputError
from rackbook.inputs import catalogs, loader
from rackbook.physics.units import plural

#: The topology file ``rackbook recipes`` reads by default (relative to the repository root).
DEFAULT_TOPOLOGY = "env/cluster/topology.yaml"
#: Where ``rackbook recipes`` writes by default.
DEFAULT_OUTPUT = "env/cluster/generated"
#: The oldest vLLM that serves DeepSeek-V4.1 (https://github.com/vllm-project/vllm/pull/56228).
MIN_VLLM_VERSION: tuple[int, int, int] = (0, 30, 0)

#: Where the containers see the Hugging Face cache (model weights); ``HF_HOME`` points there.
HF_HOME = "/hf-cache"

#: The files :func:`write_recipes` writes, in this order.
RECIPE_FILES: tuple[str, ...] = (
    "serve-commands.sh",
    "slurm.sbatch",
    "kubernetes.yaml",
    "notebook-parameters.json",
    *(f"params/{r}.yaml" for r in paths.RESULTS),
)

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
Port = Annotated[int, Field(ge=1, le=65535)]
Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")]
Text = Annotated[str, Field(min_length=1)]
Policy = Literal[
    "random",
    "round_robin",
    "cache_aware",
    "cache_aware_no_queue",
    "power_of_two",
    "consistent_hash",
]


_Strict = loader.Strict


class ModelRef(_Strict):
    """``hf_id``: what ``vllm serve`` loads (a Hugging Face id, or a folder relative to the
    directory the job starts in); ``catalog_id``: its data/models/ entry, or null for a model
    outside the catalog (a test model: no expert-count check, no model id in the params)."""

    hf_id: Annotated[str, Field(pattern=r"^[\w.-]+/[\w.-]+$")]
    catalog_id: Text | None


class SystemRef(_Strict):
    """``device: gpu`` (default): nodes of the catalog system ``catalog_id``, ``gpus_per_node``
    GPUs each. ``device: cpu``: nodes without GPUs (vLLM's CPU backend); ``catalog_id`` must be
    null and ``gpus_per_node`` counts the data-parallel engine ranks of a node; no GPU is
    requested from Slurm or Kubernetes."""

    device: Literal["gpu", "cpu"] = "gpu"
    catalog_id: Text | None
    gpus_per_node: PosInt


class Vllm(_Strict):
    image: Text
    tag: Text
    version: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+$")]


class Container(_Strict):
    image: Text


class KvTransfer(_Strict):
    connector: Text
    role: Literal["kv_both", "kv_producer", "kv_consumer"]
    side_channel_port: Port


class Eplb(_Strict):
    window_size: PosInt
    step_interval: PosInt
    log_balancedness: bool


class Worker(_Strict):
    """One vLLM deployment spanning ``gpus / gpus_per_node`` nodes, DEP (TP 1, DP = EP = gpus)."""

    role: Literal["prefill", "decode", "aggregated"]
    gpus: PosInt
    port: Port
    rpc_port: Port
    api_server_count: PosInt
    num_redundant_experts: NonNegInt = 0
    extra_args: list[Text] = []


class Router(_Strict):
    name: Literal["vllm-router"]
    package: Annotated[str, Field(pattern=r"^vllm-router==[\w.]+$")]
    port: Port
    prefill_policy: Policy
    decode_policy: Policy


class Health(_Strict):
    timeout_s: PosInt
    interval_s: PosInt


class Record(_Strict):
    """A trace the job records against its endpoint once healthy (``rackbook record``), after
    which it stops its servers and ends (exit 0). ``parameters``: the scenario's ``-p NAME
    VALUE`` pairs (lists as comma-separated text); the recorder reads the served model, its
    name and context limit from the endpoint's ``/v1/models``."""

    scenario: Literal[paths.RESULTS]  # type: ignore[valid-type]
    parameters: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")], str | int | float] = {}


class Slurm(_Strict):
    time: Annotated[str, Field(pattern=r"^(\d+-)?\d{1,2}:\d{2}:\d{2}$")]
    partition: Text | None
    account: Text | None
    container: bool
    record: Record | None = None  # null: serve until the time limit


class Kubernetes(_Strict):
    namespace: Name
    hf_cache_pvc: Name
    router_service: Name | None  # null exactly when there is no router


class Bench(_Strict):
    endpoint: Annotated[str, Field(pattern=r"^https?://[^/\s]+$")]
    num_gpus: PosInt
    gpus_per_node: PosInt


class Topology(_Strict):
    """The validated topology file. ``file`` is where it came from (as errors show it)."""

    schema_version: Literal[1]
    name: Name
    model: ModelRef
    system: SystemRef
    vllm: Vllm
    container: Container
    kv_transfer: KvTransfer | None = None  # disaggregated (prefill + decode) only
    eplb: Eplb | None = None  # null: no expert parallelism or EPLB flags
    workers: Annotated[dict[Name, Worker], Field(min_length=1)]
    router: Router | None = None  # disaggregated only; else clients talk to the leader
    health: Health
    slurm: Slurm
    kubernetes: Kubernetes
    bench: Bench
    file: str = Field(default="-", exclude=True)

    def nodes(self, worker: str) -> int:
        """Nodes (trays) the worker spans."""
        return self.workers[worker].gpus // self.system.gpus_per_node

    @property
    def total_gpus(self) -> int:
        """GPUs of all workers together."""
        return sum(w.gpus for w in self.workers.values())

    @property
    def total_nodes(self) -> int:
        """Nodes of all workers together (what the Slurm job allocates)."""
        return sum(self.nodes(w) for w in self.workers)

    def node_offset(self, worker: str) -> int:
        """Index of the worker's first node in the job's node list (workers in file order)."""
        offset = 0
        for name in self.workers:
            if name == worker:
                return offset
            offset += self.nodes(name)
        raise KeyError(worker)

    def role_workers(self, role: str) -> list[str]:
        return [n for n, w in self.workers.items() if w.role == role]

    @property
    def disaggregated(self) -> bool:
        """Prefill and decode workers behind a router (else one aggregated worker)."""
        return not self.role_workers("aggregated")

    @property
    def gpu(self) -> bool:
        """The nodes have GPUs (``system.device: gpu``)."""
        return self.system.device == "gpu"

    def endpoint_worker(self) -> str | None:
        """The worker clients talk to directly (the aggregated one); None behind a router."""
        return None if self.disaggregated else next(iter(self.workers))


# --------------------------------------------------------------------------------------------
# loading


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in text.split("."))
    return major, minor, patch


def _check_system(topo: Topology) -> int | None:
    """The system's checks; returns the GPUs of the catalog system (None on CPU nodes)."""
    f = topo.file
    if not topo.gpu:
        if topo.system.catalog_id is not None:
            raise InputError(
                f, "system.catalog_id", "must be null with device cpu (the catalog lists GPUs)"
            )
        return None
    if topo.system.catalog_id is None:
        raise InputError(f, "system.catalog_id", "null needs device cpu; GPU nodes need a system")
    try:
        system = catalogs.system(topo.system.catalog_id)
    except InputError as err:
        raise InputError(f, "system.catalog_id", err.problem) from None
    if system.gpus_per_tray is not None and topo.system.gpus_per_node != system.gpus_per_tray:
        raise InputError(
            f,
            "system.gpus_per_node",
            f"{topo.system.gpus_per_node} differs from {system.id}'s gpus_per_tray "
            f"{system.gpus_per_tray}",
        )
    return system.gpus


def _check_layout(topo: Topology) -> None:
    """Disaggregated (prefill + decode workers, a router, a KV connector) or one aggregated
    worker that clients talk to directly (no router, no KV connector)."""
    f = topo.file
    aggregated = topo.role_workers("aggregated")
    if aggregated:
        if len(topo.workers) > 1:
            raise InputError(
                f,
                "workers",
                f"an aggregated worker ({aggregated[0]}) must be the only worker; "
                f"got {', '.join(topo.workers)}",
            )
        for field in ("router", "kv_transfer"):
            if getattr(topo, field) is not None:
                raise InputError(
                    f, field, "must be null with one aggregated worker (no prefill/decode split)"
                )
        if topo.kubernetes.router_service is not None:
            raise InputError(f, "kubernetes.router_service", "must be null without a router")
        return
    for role in ("prefill", "decode"):
        if not topo.role_workers(role):
            raise InputError(f, "workers", f"no worker with role {role!r}")
    for field in ("router", "kv_transfer", "kubernetes.router_service"):
        obj: Any = topo
        for key in field.split("."):
            obj = getattr(obj, key)
        if obj is None:
            raise InputError(f, field, "needed by prefill/decode workers (disaggregated)")


def _check(topo: Topology) -> None:
    """Cross-field and catalog checks pydantic cannot do alone; InputError names the field."""
    f = topo.file
    known = catalogs.list_models()
    if topo.model.catalog_id is not None and topo.model.catalog_id not in known:
        raise InputError(
            f,
            "model.catalog_id",
            f"unknown model {topo.model.catalog_id!r}; known: {', '.join(known) or '(none)'}",
        )
    if _version(topo.vllm.version) < MIN_VLLM_VERSION:
        need = ".".join(map(str, MIN_VLLM_VERSION))
        raise InputError(
            f,
            "vllm.version",
            f"{topo.vllm.version} < {need}: DeepSeek-V4.1 needs vLLM >= {need} (PR #56228)",
        )
    if topo.vllm.tag != f"v{topo.vllm.version}":
        raise InputError(f, "vllm.tag", f"{topo.vllm.tag!r} is not 'v{topo.vllm.version}'")

    system_gpus = _check_system(topo)
    per_node = topo.system.gpus_per_node
    for name, w in topo.workers.items():
        if w.gpus % per_node:
            raise InputError(
                f,
                f"workers.{name}.gpus",
                f"{w.gpus} GPUs is not a whole number of {per_node}-GPU nodes",
            )
    if system_gpus is not None and topo.total_gpus > system_gpus:
        used = " + ".join(f"{n} {w.gpus}" for n, w in topo.workers.items())
        raise InputError(
            f,
            "workers",
            f"{used} = {topo.total_gpus} GPUs > the {system_gpus} GPUs of {topo.system.catalog_id}",
        )
    experts = (
        catalogs.load_model(topo.model.catalog_id).moe.num_routed_experts
        if topo.model.catalog_id is not None
        else None
    )
    for name, w in topo.workers.items():
        if topo.eplb is None and w.num_redundant_experts:
            raise InputError(
                f, f"workers.{name}.num_redundant_experts", "redundant experts need an eplb section"
            )
        if experts is not None and (experts + w.num_redundant_experts) % w.gpus:
            raise InputError(
                f,
                f"workers.{name}.num_redundant_experts",
                f"({experts} routed + {w.num_redundant_experts} redundant) experts do not "
                f"divide evenly over {w.gpus} expert-parallel ranks (vLLM's EPLB needs it)",
            )
    _check_layout(topo)

    if topo.bench.num_gpus != topo.total_gpus:
        raise InputError(
            f,
            "bench.num_gpus",
            f"{topo.bench.num_gpus} differs from the workers' {topo.total_gpus} GPUs",
        )
    if topo.bench.gpus_per_node != per_node:
        raise InputError(
            f, "bench.gpus_per_node", f"{topo.bench.gpus_per_node} differs from {per_node}"
        )
    url = urlsplit(topo.bench.endpoint)
    direct = topo.endpoint_worker()
    if direct is None:
        assert topo.router is not None  # _check_layout
        port, host, what = topo.router.port, topo.kubernetes.router_service, "router"
        where = "kubernetes.router_service"
    else:
        port, host = topo.workers[direct].port, _leader_service(topo, direct)
        what, where = f"{direct} leader", "its Kubernetes Service; no router"
    if url.port != port:
        raise InputError(f, "bench.endpoint", f"port {url.port} is not the {what}'s port {port}")
    if url.hostname != host:
        raise InputError(
            f,
            "bench.endpoint",
            f"host {url.hostname!r} is not the {what} service {host!r} ({where})",
        )


def load_topology(path: str | Path = DEFAULT_TOPOLOGY) -> Topology:
    """Load and validate a topology file; any problem raises InputError (file, field, problem)."""
    p = paths.resolve(path)
    topo = loader.load(Topology, p)
    topo.file = loader.display_path(p)
    _check(topo)
    return topo


# --------------------------------------------------------------------------------------------
# commands


class _Raw(str):
    """A shell word written as is (it holds an expansion such as ``$POD_IP``)."""


def _join(words: list[str]) -> str:
    return " ".join(w if isinstance(w, _Raw) else shlex.quote(w) for w in words)


def _json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"))


def leader_var(worker: str) -> str:
    """Shell variable holding the worker leader's IP address in the generated scripts."""
    return re.sub(r"[^A-Z0-9]", "_", worker.upper()) + "_LEADER_IP"


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
    address = _Raw(leader if leader is not None else f"${leader_var(worker)}")
    words: list[str] = ["vllm", "serve", topo.model.hf_id]
    if node_rank == 0:
        words += ["--host", "0.0.0.0", "--port", str(w.port)]
        words += ["--api-server-count", str(w.api_server_count)]
    else:
        rank = start_rank if start_rank is not None else node_rank * per_node
        words += ["--headless", "--data-parallel-start-rank", _Raw(str(rank))]
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
    if topo.kv_transfer is not None:
        kv = topo.kv_transfer
        words += ["--kv-transfer-config", _json({"kv_connector": kv.connector, "kv_role": kv.role})]
    return [*words, *w.extra_args]


def serve_commands(topo: Topology) -> dict[str, list[str]]:
    """worker -> the ``vllm serve`` command line of each node rank (index = node rank).

    Leader addresses are the shell variables named by :func:`leader_var`.
    """
    return {
        name: [_join(serve_argv(topo, name, r)) for r in range(topo.nodes(name))]
        for name in topo.workers
    }


def router_argv(topo: Topology, urls: dict[str, str]) -> list[str]:
    """Words of the router command; ``urls`` maps worker -> its leader's API base URL."""
    if topo.router is None:
        raise ValueError(f"{topo.file}: no router (one aggregated worker)")
    words = ["vllm-router", "--vllm-pd-disaggregation"]
    words += ["--host", "0.0.0.0", "--port", str(topo.router.port)]
    for name in topo.role_workers("prefill"):
        words += ["--prefill", _Raw(urls[name])]
    for name in topo.role_workers("decode"):
        words += ["--decode", _Raw(urls[name])]
    words += ["--prefill-policy", topo.router.prefill_policy]
    words += ["--decode-policy", topo.router.decode_policy]
    return words


def notebook_parameters(topo: Topology) -> dict[str, Any]:
    """The live parameters the notebooks read (papermill ``-p NAME VALUE``).

    ``endpoint``: the router URL; ``num_gpus``: GPUs serving (all workers); ``gpus_per_node``:
    GPUs of one node (tray); ``model``: the served model (Hugging Face id); ``catalog_model``:
    its id in data/models/; ``prefill_gpus`` / ``decode_gpus``: GPUs per role.
    """
    out = {
        "endpoint": topo.bench.endpoint,
        "num_gpus": topo.bench.num_gpus,
        "gpus_per_node": topo.bench.gpus_per_node,
        "model": topo.model.hf_id,
        "catalog_model": topo.model.catalog_id,
        "prefill_gpus": sum(topo.workers[n].gpus for n in topo.role_workers("prefill")),
        "decode_gpus": sum(topo.workers[n].gpus for n in topo.role_workers("decode")),
    }
    if not topo.disaggregated:
        del out["prefill_gpus"], out["decode_gpus"]
    return out


#: Client concurrency per decode rank of the generated rack-scaling and EPLB runs: 64
#: sequences, inside the 8-256 batch range of the decode-parity claim (a choice, stated).
STREAMS_PER_RANK = 64


def params_files(topo: Topology) -> dict[str, dict[str, Any]]:
    """Per result, the live parameters of its notebook for this topology, under the names the
    notebook declares (``rackbook run RESULT --params-file params/RESULT.yaml``): the router
    as the endpoint, the catalog ids of the model, GPU and system, the GPUs per role, EPLB's
    ranks and redundant experts, the claims' context lengths and cached prefix, and
    decode-parity's batches per decode rank (powers of 2 over the claim's range) with the
    decode pool as its ``decode_ranks`` (claims registry). Live lengths are the claims' where
    the claim states them."""
    from rackbook.inputs.claims import load_claims

    reg = load_claims()
    decode = [topo.workers[n] for n in topo.role_workers("decode") or list(topo.workers)]
    prefill = topo.role_workers("prefill") or list(topo.workers)
    prefill_gpus = sum(topo.workers[n].gpus for n in prefill)
    ctx = reg.get("context-latency.delta").scope.context_tokens
    prefix = reg.get("prefill-gain.gain").scope.context_tokens
    # catalog ids only where the topology has them (a test model on CPU nodes has neither)
    ids: dict[str, Any] = {}
    if topo.model.catalog_id is not None:
        ids["model_id"] = topo.model.catalog_id
    if topo.system.catalog_id is not None:
        ids["gpu_id"] = catalogs.system(topo.system.catalog_id).gpu
    system_id = {"system_id": topo.system.catalog_id} if topo.system.catalog_id else {}
    # the single-user claim is on its own GPU (4 B300), not the rack's: its floor reads that one
    su_hw = reg.get("single-user.throughput").scope.hardware
    su_ids = {**ids, "gpu_id": catalogs.as_gpu(su_hw).id} if "gpu_id" in ids and su_hw else ids
    # the claim counts the rack's GPUs; CPU nodes have no rack: the deployment's engine ranks
    rack_gpus = (
        catalogs.system(topo.system.catalog_id).gpus
        if topo.system.catalog_id is not None
        else topo.total_gpus
    )
    url = topo.bench.endpoint
    lengths = sorted({ctx.low, 2 * ctx.low, 4 * ctx.low, ctx.high}) if ctx else [128_000]
    # requests in flight: STREAMS_PER_RANK sequences on every decode rank
    streams = STREAMS_PER_RANK * sum(w.gpus for w in decode)
    span = reg.get("decode-parity.gap").scope.batch_sizes  # per decode rank: powers of 2
    batches = (
        [2**k for k in range(int(span.low).bit_length() - 1, int(span.high).bit_length())]
        if span
        else [8, 16, 32, 64, 128, 256]
    )
    return {
        "decode-parity": {"source": "live", "endpoint": url,
                          "batch_sizes": batches,
                          "decode_ranks": sum(w.gpus for w in decode),
                          "input_len": 1024, "output_len": 1024, **ids},
        "rack-scaling": {"source": "live", "endpoints": [url], "replicas": [1],
                         "gpus_per_replica": rack_gpus, "concurrency": streams, **ids,
                         **system_id},
        "prefill-gain": {"source": "live", "endpoint_b": url,
                         "prefix_tokens": prefix.high if prefix else 128_000,
                         "new_tokens": 1024, **ids, "prefill_gpus": prefill_gpus},
        "eplb-balance": {"source": "live", "endpoint": url,
                         "ep_size": sum(w.gpus for w in decode),
                         "redundant": sum(w.num_redundant_experts for w in decode),
                         "concurrency": streams},
        "context-latency": {"source": "live", "endpoint": url, "context_lengths": lengths,
                            "output_len": 64, **ids},
        "single-user": {"source": "live", "endpoint": url, "num_requests": 32, **su_ids},
    }  # fmt: skip


def _decode_parity_note(values: dict[str, Any]) -> str:
    """What decode-parity's per-rank batch means for the client, and where engine B comes from."""
    ranks, b = values["decode_ranks"], values["batch_sizes"]
    return (
        f"# batch_sizes are per decode rank; decode_ranks is the decode pool (DEP{ranks}): the "
        f"client runs at concurrency\n# batch x decode_ranks = {min(b) * ranks:,} to "
        f"{max(b) * ranks:,} requests in flight, num_prompts scaled likewise.\n"
        "# Engine B (DeepInfer's offline benchmark) is imported separately: rackbook import "
        "offline-engine FILE -o DIR_B,\n# then -p trace DIR_A -p trace_b DIR_B -p engine_b "
        "deepinfer (book/rerun.md).\n"
    )


def _params_yaml(topo: Topology, result: str, values: dict[str, Any]) -> str:
    notes = {
        "prefill-gain": "# endpoint_a: a server WITHOUT the prefill changes (None starts one "
        "locally); endpoint_b: the deployment below.\n",
        "decode-parity": _decode_parity_note(values) if result == "decode-parity" else "",
        "rack-scaling": (
            f"# The deployment serves on {topo.total_gpus} of the rack's "
            f"{catalogs.system(topo.system.catalog_id).gpus} GPUs; the claim counts the rack's, "
            "so gpus_per_replica does too.\n"
            if topo.system.catalog_id is not None
            else f"# CPU nodes, no rack: gpus_per_replica counts the deployment's "
            f"{_units(topo, topo.total_gpus)}.\n"
        )
        + f"# concurrency: {STREAMS_PER_RANK} requests in flight per decode rank.\n",
        "eplb-balance": f"# concurrency: {STREAMS_PER_RANK} requests in flight per decode rank; "
        "pass the decode leader's log with -p server_log FILE.\n",
    }
    body = yaml.safe_dump(values, sort_keys=False, default_flow_style=None, width=1000)
    return (
        _header(topo)
        + f"# rackbook run {result} --params-file params/{result}.yaml  (-p NAME VALUE overrides)\n"
        + notes.get(result, "")
        + body
    )


# --------------------------------------------------------------------------------------------
# generated files


def _units(topo: Topology, n: int) -> str:
    """``n`` of what the topology's ``gpus`` count: GPUs, or engine ranks on CPU nodes."""
    return plural(n, "GPU" if topo.gpu else "CPU engine rank")


def _header(topo: Topology, comment: str = "#") -> str:
    where = topo.system.catalog_id or "CPU nodes"
    dp = "DEP" if topo.eplb is not None else "DP"
    return (
        f"{comment} GENERATED by `rackbook recipes` from {topo.file}: edit that file, not this.\n"
        f"{comment} {topo.model.hf_id} on {where} with "
        f"{topo.vllm.image}:{topo.vllm.tag}: "
        + ", ".join(
            f"{n}{'' if n == w.role else f' ({w.role})'} {dp}{w.gpus} on "
            + plural(topo.nodes(n), "node")
            for n, w in topo.workers.items()
        )
        + f"; {_units(topo, topo.total_gpus)}, {plural(topo.total_nodes, 'node')} of "
        f"{topo.system.gpus_per_node}.\n"
        f"{comment} Run the benchmark client (vllm bench serve, rackbook record --endpoint) on its "
        "own host or cores,\n"
        f"{comment} never on a serving node's busy CPUs: a starved client records token bursts, "
        "not the engine\n"
        f"{comment} (book/methodology.md, Measurement validity).\n"
    )


def serve_commands_sh(topo: Topology) -> str:
    """Every node's command, readable: what :func:`serve_commands` returns, with node headers."""
    lines = [_header(topo).rstrip("\n")]
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
        lines.append(_join(router_argv(topo, urls)))
    return "\n".join(lines) + "\n"


def record_argv(topo: Topology) -> list[str]:
    """Words of the job's ``rackbook record`` step (``slurm.record``), against ``$ENDPOINT``
    into ``$LOGS/trace`` (the model comes from the endpoint's ``/v1/models``)."""
    rec = topo.slurm.record
    if rec is None:
        raise ValueError(f"{topo.file}: no slurm.record")
    words = ["rackbook", "record", rec.scenario, "--endpoint", _Raw('"$ENDPOINT"')]
    words += ["-o", _Raw('"$LOGS/trace"')]
    for name, value in rec.parameters.items():
        words += ["-p", name, str(value)]
    return words


def slurm_script(topo: Topology) -> str:
    """An ``sbatch`` script: one node per tray, one ``srun`` per node rank, router, health wait;
    with ``slurm.record``, a recorded trace and a clean end (exit 0) once healthy."""
    per_node = topo.system.gpus_per_node
    n = topo.total_nodes
    container = (
        f'--container-image="${{RACKBOOK_IMAGE:-{topo.container.image}}}" '
        f'--container-mounts="$HF_CACHE:{HF_HOME}" --no-container-mount-home'
        if topo.slurm.container
        else ""
    )
    gpus = f" --gpus-per-node={per_node}" if topo.gpu else ""
    sb = [
        "#!/bin/bash",
        _header(topo).rstrip("\n"),
        "# Submit from the repository root: sbatch env/cluster/generated/slurm.sbatch",
        f"#SBATCH --job-name={topo.name}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if topo.gpu:
        sb.append(f"#SBATCH --gpus-per-node={per_node}")
    sb += [
        "#SBATCH --exclusive",
        f"#SBATCH --time={topo.slurm.time}",
        f"#SBATCH --output={topo.name}-%j.log",
    ]
    if topo.slurm.partition:
        sb.append(f"#SBATCH --partition={topo.slurm.partition}")
    if topo.slurm.account:
        sb.append(f"#SBATCH --account={topo.slurm.account}")
    sb += ["set -euo pipefail", ""]
    if topo.slurm.container:
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
        if topo.slurm.container
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
        router = _join(router_argv(topo, urls))
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
    sb += [
        'echo "$ENDPOINT" > "$LOGS/endpoint"',
        'echo "endpoint: $ENDPOINT (also in $LOGS/endpoint)"',
        'echo "run a notebook against it: rackbook run RESULT --params-file"'
        ' "params/RESULT.yaml -p endpoint $ENDPOINT"',
        "",
    ]
    if topo.slurm.record is not None:
        sb += [
            "# Record a trace against the endpoint (slurm.record), then stop the servers (trap).",
            "# The client runs here, on the first node: see the note on CPUs at the top.",
            _join(record_argv(topo)),
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


def _pod_spec(topo: Topology, worker: str, command: str, *, leader: bool) -> dict[str, Any]:
    w = topo.workers[worker]
    gpus = topo.system.gpus_per_node
    env: list[dict[str, Any]] = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "VLLM_HOST_IP", "value": "$(POD_IP)"},
    ]
    if topo.kv_transfer is not None:
        port = str(topo.kv_transfer.side_channel_port)
        env += [
            {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "$(POD_IP)"},
            {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": port},
        ]
    env.append({"name": "HF_HOME", "value": HF_HOME})
    container: dict[str, Any] = {
        "name": "vllm",
        "image": topo.container.image,
        "command": ["/bin/bash", "-c"],
        "args": [f"exec {command}"],
        "env": env,
    }
    if topo.gpu:
        container["resources"] = {
            "requests": {"nvidia.com/gpu": gpus},
            "limits": {"nvidia.com/gpu": gpus},
        }
    container["volumeMounts"] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "hf-cache", "mountPath": HF_HOME},
    ]
    if leader:
        container["ports"] = [{"name": "http", "containerPort": w.port}]
        container["startupProbe"] = {
            "httpGet": {"path": "/health", "port": w.port},
            "periodSeconds": topo.health.interval_s,
            "failureThreshold": -(-topo.health.timeout_s // topo.health.interval_s),
        }
        container["readinessProbe"] = {
            "httpGet": {"path": "/health", "port": w.port},
            "periodSeconds": topo.health.interval_s,
        }
    return {
        "containers": [container],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            {
                "name": "hf-cache",
                "persistentVolumeClaim": {"claimName": topo.kubernetes.hf_cache_pvc},
            },
        ],
    }


class _NoAliasDumper(yaml.SafeDumper):
    """SafeDumper that writes repeated mappings out in full (no ``&id001`` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _k8s_name(topo: Topology, worker: str) -> str:
    return f"{topo.name}-{worker}"


def _leader_service(topo: Topology, worker: str) -> str:
    """Name of the Kubernetes Service in front of ``worker``'s leader (its API server)."""
    return f"{_k8s_name(topo, worker)}-api"


def kubernetes_manifest(topo: Topology) -> str:
    """YAML documents: per worker a LeaderWorkerSet and a Service on its leader; the router.

    Needs the LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1), which gives every pod
    ``LWS_LEADER_ADDRESS`` and ``LWS_WORKER_INDEX``; one pod per node (tray), 4 GPUs each.
    """
    ns = topo.kubernetes.namespace
    per_node = topo.system.gpus_per_node
    part = {"app.kubernetes.io/part-of": topo.name}
    docs: list[dict[str, Any]] = []
    urls: dict[str, str] = {}
    for name, w in topo.workers.items():
        lws = _k8s_name(topo, name)
        labels = {**part, "app.kubernetes.io/component": name}
        leader_cmd = _join(serve_argv(topo, name, 0, leader='"$POD_IP"'))
        leader_pod = {"metadata": {"labels": labels}}
        leader_pod["spec"] = _pod_spec(topo, name, leader_cmd, leader=True)
        template: dict[str, Any] = {"size": topo.nodes(name)}
        template["restartPolicy"] = "RecreateGroupOnPodRestart"
        if topo.nodes(name) > 1:
            worker_cmd = _join(
                serve_argv(
                    topo,
                    name,
                    1,
                    leader='"$LWS_LEADER_ADDRESS"',
                    start_rank=f'"$((LWS_WORKER_INDEX * {per_node}))"',
                )
            )
            template["leaderTemplate"] = leader_pod
            template["workerTemplate"] = {
                "metadata": {"labels": labels},
                "spec": _pod_spec(topo, name, worker_cmd, leader=False),
            }
        else:
            template["workerTemplate"] = leader_pod
        docs.append(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": lws, "namespace": ns, "labels": labels},
                "spec": {
                    "replicas": 1,
                    "startupPolicy": "LeaderCreated",
                    "leaderWorkerTemplate": template,
                },
            }
        )
        svc = _leader_service(topo, name)
        urls[name] = f"http://{svc}:{w.port}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": svc, "namespace": ns, "labels": labels},
                "spec": {
                    "selector": {
                        "leaderworkerset.sigs.k8s.io/name": lws,
                        "leaderworkerset.sigs.k8s.io/worker-index": "0",
                    },
                    "ports": [{"name": "http", "port": w.port, "targetPort": w.port}],
                },
            }
        )
    if topo.router is not None:
        docs += _router_docs(topo, urls)
    body = yaml.dump_all(
        docs, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False, width=1000
    )
    return _header(topo) + body


def _router_docs(topo: Topology, urls: dict[str, str]) -> list[dict[str, Any]]:
    """The router's Deployment and Service (``urls``: worker -> its leader Service's URL)."""
    assert topo.router is not None and topo.kubernetes.router_service is not None
    ns = topo.kubernetes.namespace
    part = {"app.kubernetes.io/part-of": topo.name}
    docs: list[dict[str, Any]] = []
    rlabels = {**part, "app.kubernetes.io/component": "router"}
    docs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"{topo.name}-router", "namespace": ns, "labels": rlabels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": rlabels},
                "template": {
                    "metadata": {"labels": rlabels},
                    "spec": {
                        "containers": [
                            {
                                "name": "router",
                                "image": topo.container.image,
                                "command": ["/bin/bash", "-c"],
                                "args": [f"exec {_join(router_argv(topo, urls))}"],
                                "ports": [{"name": "http", "containerPort": topo.router.port}],
                                "readinessProbe": {
                                    "httpGet": {"path": "/health", "port": topo.router.port},
                                    "periodSeconds": topo.health.interval_s,
                                },
                            }
                        ]
                    },
                },
            },
        }
    )
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": topo.kubernetes.router_service,
                "namespace": ns,
                "labels": rlabels,
            },
            "spec": {
                "selector": rlabels,
                "ports": [
                    {"name": "http", "port": topo.router.port, "targetPort": topo.router.port}
                ],
            },
        }
    )
    return docs


def render_recipes(topo: Topology) -> dict[str, str]:
    """file name -> text of every generated file (what :func:`write_recipes` writes)."""
    texts = {
        "serve-commands.sh": serve_commands_sh(topo),
        "slurm.sbatch": slurm_script(topo),
        "kubernetes.yaml": kubernetes_manifest(topo),
        "notebook-parameters.json": json.dumps(notebook_parameters(topo), indent=2) + "\n",
        **{f"params/{r}.yaml": _params_yaml(topo, r, v) for r, v in params_files(topo).items()},
    }
    assert tuple(texts) == RECIPE_FILES
    return texts


def is_unmarked_recipes(path: Path) -> bool:
    """True when the folder ``path`` holds only generated recipes (:data:`RECIPE_FILES` and
    the ``params`` folder), as ``rackbook recipes`` wrote them before output markers."""
    try:
        top = os.listdir(path)
        sub = os.listdir(path / "params") if "params" in top else []
    except OSError:
        return False
    return all(n in RECIPE_FILES or n == "params" for n in top) and all(
        f"params/{n}" in RECIPE_FILES for n in sub
    )


def write_recipes(topo: Topology, out_dir: str | Path = DEFAULT_OUTPUT) -> list[Path]:
    """Write every generated file to ``out_dir`` at once (the folder is replaced atomically).

    A file at ``out_dir``, or a folder holding anything but rackbook's recipes (marked, or
    :func:`is_unmarked_recipes`), is refused (:class:`InputError`, field ``output``): nothing
    of the user's is replaced.
    """
    out = fsio.check_output_folder(paths.resolve(out_dir))
    fsio.check_replaceable(out, "recipes", "output", is_unmarked_recipes)
    texts = render_recipes(topo)
    with fsio.atomic_dir(out, kind="recipes", legacy=is_unmarked_recipes) as tmp:
        tmp.chmod(0o755)
        for name, text in texts.items():
            (tmp / name).parent.mkdir(exist_ok=True)
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "slurm.sbatch").chmod(0o755)
        (tmp / "serve-commands.sh").chmod(0o644)
    return [out / name for name in texts]


def cli_recipes(args: argparse.Namespace) -> int:
    """``rackbook recipes [--topology FILE] [-o DIR]``: regenerate the cluster recipes (relative
    paths from the working directory; the defaults are the checkout's)."""
    topo_path = Path(args.topology).absolute() if args.topology else DEFAULT_TOPOLOGY
    out = Path(args.output).absolute() if args.output else DEFAULT_OUTPUT
    fsio.refuse_overlap({"-o": out}, {"--topology": topo_path})  # never replace the input
    topo = load_topology(topo_path)
    written = write_recipes(topo, out)
    for p in written:
        print(loader.display_path(p))
    dp = "DEP" if topo.eplb is not None else "DP"
    of = (
        f"{topo.total_gpus} of {catalogs.system(topo.system.catalog_id).gpus} GPUs"
        if topo.system.catalog_id is not None
        else _units(topo, topo.total_gpus)
    )
    print(
        f"{topo.model.hf_id}: "
        + ", ".join(
            f"{n} {dp}{w.gpus} on {plural(topo.nodes(n), 'node')}" for n, w in topo.workers.items()
        )
        + f"; {of}, {plural(topo.total_nodes, 'node')}; endpoint {topo.bench.endpoint}",
        file=sys.stdout,
    )
    return 0
