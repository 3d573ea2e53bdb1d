"""The cluster topology (``env/cluster/topology.yaml``, or CPU nodes with one aggregated
worker): its schema, loaded and checked; every recipe derives from it. Units: GPUs counts,
ports TCP ports, times seconds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field

from rackbook import paths
from rackbook.core.units import plural
from rackbook.errors import InputError
from rackbook.inputs import catalogs, loader

DEFAULT_TOPOLOGY = "env/cluster/topology.yaml"
#: The oldest vLLM that serves DeepSeek-V4.1 (https://github.com/vllm-project/vllm/pull/56228).
MIN_VLLM_VERSION: tuple[int, int, int] = (0, 30, 0)

#: Where the containers see the Hugging Face cache (``HF_HOME``).
HF_HOME = "/hf-cache"

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
    """``hf_id``: what ``vllm serve`` loads; ``catalog_id``: its data/models/ entry or null."""

    hf_id: Annotated[str, Field(pattern=r"^[\w.-]+/[\w.-]+$")]
    catalog_id: Text | None


class SystemRef(_Strict):
    """GPU nodes of catalog system ``catalog_id``, or ``gpu`` x ``nodes`` outside the catalog;
    ``device: cpu``: no GPUs (``gpus_per_node`` counts a node's data-parallel ranks)."""

    device: Literal["gpu", "cpu"] = "gpu"
    catalog_id: Text | None = None
    gpu: Text | None = None
    nodes: PosInt | None = None
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
    """One vLLM deployment, DEP (TP 1, DP = EP = gpus). Role ``reference``: one node outside
    the router, reached directly (rack-scaling's one-node reference)."""

    role: Literal["prefill", "decode", "aggregated", "reference"]
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
    """A trace the job records once healthy, then ends (``parameters``: ``-p NAME VALUE``)."""

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
    """The validated topology file; ``file``: where it came from (as errors show it)."""

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
    slurm: Slurm | None = None  # null or absent: no Slurm script (a Kubernetes-only cluster)
    kubernetes: Kubernetes | None = None  # null or absent: no manifest (a Slurm-only cluster)
    bench: Bench
    file: str = Field(default="-", exclude=True)

    def nodes(self, worker: str) -> int:
        return self.workers[worker].gpus // self.system.gpus_per_node

    @property
    def total_gpus(self) -> int:
        return sum(w.gpus for w in self.workers.values())

    @property
    def total_nodes(self) -> int:
        return sum(self.nodes(w) for w in self.workers)

    def node_offset(self, worker: str) -> int:
        """Index of the worker's first node in the job's node list."""
        names = list(self.workers)
        return sum(self.nodes(n) for n in names[: names.index(worker)])

    def role_workers(self, role: str) -> list[str]:
        return [n for n, w in self.workers.items() if w.role == role]

    @property
    def disaggregated(self) -> bool:
        """Prefill and decode workers behind a router (else one aggregated worker)."""
        return not self.role_workers("aggregated")

    @property
    def gpu(self) -> bool:
        return self.system.device == "gpu"

    @property
    def gpu_id(self) -> str | None:
        """The catalog id of the nodes' GPU; None on CPU nodes."""
        s = self.system
        if not self.gpu:
            return None
        return catalogs.gpu(s.gpu).id if s.gpu else catalogs.system(s.catalog_id or "").gpu

    @property
    def system_gpus(self) -> int | None:
        """GPUs of the whole system; None on CPU nodes."""
        if not self.gpu:
            return None
        if self.system.catalog_id is not None:
            return catalogs.system(self.system.catalog_id).gpus
        return (self.system.nodes or 0) * self.system.gpus_per_node

    @property
    def system_label(self) -> str:
        """The catalog system's id, ``2 nodes of 8 B300``, or ``CPU nodes``."""
        if not self.gpu:
            return "CPU nodes"
        if self.system.catalog_id is not None:
            return self.system.catalog_id
        gpu = catalogs.gpu(self.gpu_id or "").label
        return f"{plural(self.system.nodes or 0, 'node')} of {self.system.gpus_per_node} {gpu}"

    def reference_worker(self) -> str | None:
        """The one-node reference worker clients reach directly; None without one."""
        return next(iter(self.role_workers("reference")), None)

    @property
    def routed_gpus(self) -> int:
        """GPUs behind the endpoint (:attr:`Bench.endpoint`): all workers but the reference."""
        return sum(w.gpus for w in self.workers.values() if w.role != "reference")

    def endpoint_worker(self) -> str | None:
        """The worker clients talk to directly (the aggregated one); None behind a router."""
        return None if self.disaggregated else next(iter(self.workers))


def _check_system(topo: Topology) -> int | None:
    """The system's checks; returns the GPUs of the catalog system (None on CPU nodes)."""
    f, sys_ = topo.file, topo.system
    if not topo.gpu:
        for field in ("catalog_id", "gpu", "nodes"):
            if getattr(sys_, field) is not None:
                why = "must be null with device cpu (the catalog lists GPUs)"
                raise InputError(f, f"system.{field}", why)
        return None
    if sys_.catalog_id is not None and (sys_.gpu is not None or sys_.nodes is not None):
        raise InputError(f, "system.catalog_id", "a catalog system, or gpu and nodes, not both")
    if sys_.catalog_id is None:
        if sys_.gpu is None or sys_.nodes is None:
            why = "GPU nodes need catalog_id (a system of data/hardware.yaml) or gpu (a GPU id"
            why += " of data/hardware.yaml) with nodes and gpus_per_node"
            raise InputError(f, "system", why)
        try:
            catalogs.gpu(sys_.gpu)
        except InputError as err:
            raise InputError(f, "system.gpu", f"{err.file}: {err.problem}") from None
        return topo.system_gpus
    try:
        system = catalogs.system(sys_.catalog_id)
    except InputError as err:
        why = f"{err.file}: {err.problem}; or describe the nodes without the catalog: "
        why += "system.gpu (a GPU id), system.nodes and system.gpus_per_node"
        raise InputError(f, "system.catalog_id", why) from None
    per_tray, per_node = system.gpus_per_tray, sys_.gpus_per_node
    if per_tray is not None and per_node != per_tray:
        why = f"{per_node} differs from {system.id}'s gpus_per_tray {per_tray}"
        raise InputError(f, "system.gpus_per_node", why)
    return system.gpus


def _check_layout(topo: Topology) -> None:
    """Disaggregated (prefill + decode, router, KV connector) or one aggregated worker."""
    f, aggregated = topo.file, topo.role_workers("aggregated")
    needed: dict[str, object] = {"router": topo.router, "kv_transfer": topo.kv_transfer}
    if topo.kubernetes is not None:
        needed["kubernetes.router_service"] = topo.kubernetes.router_service
    if aggregated and len(topo.workers) > 1:
        why = f"an aggregated worker ({aggregated[0]}) must be the only worker; got "
        raise InputError(f, "workers", why + ", ".join(topo.workers))
    for role in ("prefill", "decode") if not aggregated else ():
        if not topo.role_workers(role):
            raise InputError(f, "workers", f"no worker with role {role!r}")
    if len(refs := topo.role_workers("reference")) > 1:
        raise InputError(f, "workers", f"one reference worker at most; got {', '.join(refs)}")
    for field, value in needed.items():
        if aggregated and value is not None:
            raise InputError(f, field, "must be null with one aggregated worker (without a router)")
        if not aggregated and value is None:
            raise InputError(f, field, "needed by prefill/decode workers (disaggregated)")


def _check_workers(topo: Topology, system_gpus: int | None) -> None:
    """Worker sizes, the system's GPUs and the experts' split over each worker."""
    f, per_node, cat = topo.file, topo.system.gpus_per_node, topo.model.catalog_id
    for name, w in topo.workers.items():
        if w.gpus % per_node:
            why = f"{w.gpus} GPUs is not a whole number of {per_node}-GPU nodes"
            raise InputError(f, f"workers.{name}.gpus", why)
        if w.role == "reference" and w.gpus != per_node:
            why = f"a reference worker is one node ({per_node} GPUs), got {w.gpus}"
            raise InputError(f, f"workers.{name}.gpus", why)
    if system_gpus is not None and topo.total_gpus > system_gpus:
        used = " + ".join(f"{n} {w.gpus}" for n, w in topo.workers.items())
        why = f"{used} = {topo.total_gpus} GPUs > the {system_gpus} GPUs of {topo.system_label}"
        raise InputError(f, "workers", why)
    routed = None if cat is None else catalogs.load_model(cat).moe.num_routed_experts
    for name, w in topo.workers.items():
        field, redundant = f"workers.{name}.num_redundant_experts", w.num_redundant_experts
        if topo.eplb is None and redundant:
            raise InputError(f, field, "redundant experts need an eplb section")
        if routed is not None and (routed + redundant) % w.gpus:
            why = f"({routed} routed + {redundant} redundant) experts do not divide evenly"
            raise InputError(f, field, f"{why} over {w.gpus} expert-parallel ranks")


def _check_bench(topo: Topology) -> None:
    """The bench section against the workers and the endpoint they expose."""
    f, b = topo.file, topo.bench
    if b.num_gpus != topo.routed_gpus:
        behind = " behind the endpoint" if topo.reference_worker() else ""
        why = f"{b.num_gpus} differs from the workers' {topo.routed_gpus} GPUs{behind}"
        raise InputError(f, "bench.num_gpus", why)
    if b.gpus_per_node != topo.system.gpus_per_node:
        why = f"{b.gpus_per_node} differs from {topo.system.gpus_per_node}"
        raise InputError(f, "bench.gpus_per_node", why)
    url, direct = urlsplit(b.endpoint), topo.endpoint_worker()
    if direct is None:
        assert topo.router is not None  # _check_layout
        host = topo.kubernetes.router_service if topo.kubernetes is not None else None
        port, what = topo.router.port, "router"
    else:
        port, host = topo.workers[direct].port, leader_service(topo, direct)
        what = f"{direct} leader"
    if url.port != port:
        raise InputError(f, "bench.endpoint", f"port {url.port} is not the {what}'s port {port}")
    if topo.kubernetes is not None and url.hostname != host:
        why = f"host {url.hostname!r} is not the {what} service {host!r}"
        raise InputError(f, "bench.endpoint", why)


def _check(topo: Topology) -> None:
    """Cross-field and catalog checks pydantic cannot do alone; InputError names the field."""
    f, v, cat = topo.file, topo.vllm, topo.model.catalog_id
    if cat is not None and cat not in (known := catalogs.list_models()):
        why = f"unknown model {cat!r}; known: {', '.join(known) or '(none)'}"
        raise InputError(f, "model.catalog_id", why)
    need = ".".join(map(str, MIN_VLLM_VERSION))
    if tuple(int(x) for x in v.version.split(".")) < MIN_VLLM_VERSION:
        why = f"{v.version} < {need}: DeepSeek-V4.1 needs vLLM >= {need} (PR #56228)"
        raise InputError(f, "vllm.version", why)
    if v.tag != f"v{v.version}":
        raise InputError(f, "vllm.tag", f"{v.tag!r} is not 'v{v.version}'")
    _check_workers(topo, _check_system(topo))
    _check_layout(topo)
    _check_bench(topo)


def k8s_name(topo: Topology, worker: str) -> str:
    """Name of ``worker``'s Kubernetes objects (its LeaderWorkerSet)."""
    return f"{topo.name}-{worker}"


def leader_service(topo: Topology, worker: str) -> str:
    """Name of the Kubernetes Service in front of ``worker``'s leader (its API server)."""
    return f"{k8s_name(topo, worker)}-api"


def load_topology(path: str | Path = DEFAULT_TOPOLOGY) -> Topology:
    """Load and validate a topology file; any problem raises InputError (file, field, problem)."""
    p = paths.resolve(path)
    topo = loader.load(Topology, p)
    topo.file = loader.display_path(p)
    _check(topo)
    return topo
