"""The Kubernetes recipe generated from a topology (:func:`kubernetes_manifest`)."""

from __future__ import annotations

from typing import Any

import yaml

from rackbook.cluster.commands import header, router_argv, serve_argv, shell_join
from rackbook.cluster.topology import HF_HOME, Topology, k8s_name, leader_service


def _container(name: str, topo: Topology, command: str) -> dict[str, Any]:
    args = {"command": ["/bin/bash", "-c"], "args": [f"exec {command}"]}
    return {"name": name, "image": topo.container.image, **args}


def _ready(topo: Topology, port: int) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/health", "port": port}, "periodSeconds": topo.health.interval_s}
    return {"ports": [{"name": "http", "containerPort": port}], "readinessProbe": probe}


def _service(name: str, ns: str, labels: dict, selector: dict, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": port, "targetPort": port}],
        },
    }


def _pod_spec(topo: Topology, worker: str, command: str, *, leader: bool) -> dict[str, Any]:
    assert topo.kubernetes is not None
    w = topo.workers[worker]
    gpus = topo.system.gpus_per_node
    env: list[dict[str, Any]] = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "VLLM_HOST_IP", "value": "$(POD_IP)"},
    ]
    if topo.kv_transfer is not None and w.role != "reference":
        port = str(topo.kv_transfer.side_channel_port)
        env += [
            {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "$(POD_IP)"},
            {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": port},
        ]
    env.append({"name": "HF_HOME", "value": HF_HOME})
    container = _container("vllm", topo, command)
    container["env"] = env
    if topo.gpu:
        n = {"nvidia.com/gpu": gpus}
        container["resources"] = {"requests": n, "limits": dict(n)}
    container["volumeMounts"] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "hf-cache", "mountPath": HF_HOME},
    ]
    if leader:
        ready = _ready(topo, w.port)
        tries = -(-topo.health.timeout_s // topo.health.interval_s)
        startup = {**ready["readinessProbe"], "failureThreshold": tries}
        container |= {"ports": ready["ports"], "startupProbe": startup, **ready}
    pvc = {"claimName": topo.kubernetes.hf_cache_pvc}
    return {
        "containers": [container],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            {"name": "hf-cache", "persistentVolumeClaim": pvc},
        ],
    }


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _worker_docs(topo: Topology, name: str, ns: str) -> list[dict[str, Any]]:
    lws = k8s_name(topo, name)
    labels = {"app.kubernetes.io/part-of": topo.name, "app.kubernetes.io/component": name}
    leader_cmd = shell_join(serve_argv(topo, name, 0, leader='"$POD_IP"'))
    leader_pod = {"metadata": {"labels": labels}}
    leader_pod["spec"] = _pod_spec(topo, name, leader_cmd, leader=True)
    template: dict[str, Any] = {"size": topo.nodes(name)}
    template["restartPolicy"] = "RecreateGroupOnPodRestart"
    if topo.nodes(name) > 1:
        rank = f'"$((LWS_WORKER_INDEX * {topo.system.gpus_per_node}))"'
        argv = serve_argv(topo, name, 1, leader='"$LWS_LEADER_ADDRESS"', start_rank=rank)
        template["leaderTemplate"] = leader_pod
        template["workerTemplate"] = {
            "metadata": {"labels": labels},
            "spec": _pod_spec(topo, name, shell_join(argv), leader=False),
        }
    else:
        template["workerTemplate"] = leader_pod
    spec = {"replicas": 1, "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": template}
    selector = {
        "leaderworkerset.sigs.k8s.io/name": lws,
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    port = topo.workers[name].port
    return [
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": lws, "namespace": ns, "labels": labels},
            "spec": spec,
        },
        _service(leader_service(topo, name), ns, labels, selector, port),
    ]


def kubernetes_manifest(topo: Topology) -> str:
    """YAML: per worker a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, one pod per node) and
    a Service on its leader; the router Deployment and Service."""
    if topo.kubernetes is None:
        raise ValueError(f"{topo.file}: no kubernetes section")
    ns = topo.kubernetes.namespace
    docs = [d for name in topo.workers for d in _worker_docs(topo, name, ns)]
    if topo.router is not None:
        assert topo.kubernetes.router_service is not None
        urls = {n: f"http://{leader_service(topo, n)}:{w.port}" for n, w in topo.workers.items()}
        labels = {"app.kubernetes.io/part-of": topo.name, "app.kubernetes.io/component": "router"}
        router = _container("router", topo, shell_join(router_argv(topo, urls)))
        router |= _ready(topo, topo.router.port)
        pod = {"metadata": {"labels": labels}, "spec": {"containers": [router]}}
        spec = {"replicas": 1, "selector": {"matchLabels": labels}, "template": pod}
        meta = {"name": f"{topo.name}-router", "namespace": ns, "labels": labels}
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})
        svc = topo.kubernetes.router_service
        docs.append(_service(svc, ns, labels, labels, topo.router.port))
    body = yaml.dump_all(
        docs, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False, width=1000
    )
    return header(topo) + body
