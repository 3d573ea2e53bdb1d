"""The Kubernetes recipe generated from a topology: one LeaderWorkerSet per worker, a Service
per worker leader, the router Deployment and its Service (:func:`kubernetes_manifest`).
"""

from __future__ import annotations

from typing import Any

import yaml

from rackbook.cluster.commands import header, router_argv, serve_argv, shell_join
from rackbook.cluster.topology import HF_HOME, Kubernetes, Topology, k8s_name, leader_service


def _section(topo: Topology) -> Kubernetes:
    """The topology's ``kubernetes`` section (the manifest is written only when it exists)."""
    if topo.kubernetes is None:
        raise ValueError(f"{topo.file}: no kubernetes section")
    return topo.kubernetes


def _pod_spec(topo: Topology, worker: str, command: str, *, leader: bool) -> dict[str, Any]:
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
                "persistentVolumeClaim": {"claimName": _section(topo).hf_cache_pvc},
            },
        ],
    }


class _NoAliasDumper(yaml.SafeDumper):
    """SafeDumper that writes repeated mappings out in full (no ``&id001`` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def kubernetes_manifest(topo: Topology) -> str:
    """YAML documents: per worker a LeaderWorkerSet and a Service on its leader; the router.

    Needs the LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1), which gives every pod
    ``LWS_LEADER_ADDRESS`` and ``LWS_WORKER_INDEX``; one pod per node (tray), 4 GPUs each.
    Needs the topology's ``kubernetes`` section.
    """
    if topo.kubernetes is None:
        raise ValueError(f"{topo.file}: no kubernetes section")
    ns = topo.kubernetes.namespace
    per_node = topo.system.gpus_per_node
    part = {"app.kubernetes.io/part-of": topo.name}
    docs: list[dict[str, Any]] = []
    urls: dict[str, str] = {}
    for name, w in topo.workers.items():
        lws = k8s_name(topo, name)
        labels = {**part, "app.kubernetes.io/component": name}
        leader_cmd = shell_join(serve_argv(topo, name, 0, leader='"$POD_IP"'))
        leader_pod = {"metadata": {"labels": labels}}
        leader_pod["spec"] = _pod_spec(topo, name, leader_cmd, leader=True)
        template: dict[str, Any] = {"size": topo.nodes(name)}
        template["restartPolicy"] = "RecreateGroupOnPodRestart"
        if topo.nodes(name) > 1:
            worker_cmd = shell_join(
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
        svc = leader_service(topo, name)
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
    return header(topo) + body


def _router_docs(topo: Topology, urls: dict[str, str]) -> list[dict[str, Any]]:
    """The router's Deployment and Service (``urls``: worker -> its leader Service's URL)."""
    assert topo.router is not None and _section(topo).router_service is not None
    ns = _section(topo).namespace
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
                                "args": [f"exec {shell_join(router_argv(topo, urls))}"],
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
                "name": _section(topo).router_service,
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
