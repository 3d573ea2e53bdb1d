"""The notebooks' live parameters from a topology: ``notebook-parameters.json`` and
``params/<result>.yaml``."""

from __future__ import annotations

from typing import Any

import yaml

from rackbook.cluster.commands import header, units
from rackbook.cluster.topology import Topology, leader_service
from rackbook.inputs import catalogs

#: Where the rack-scaling card records its trace, which its params file reads.
RACK_TRACE = "_build/executed/traces/rack-scaling"


def reference_endpoint(topo: Topology) -> str | None:
    """The one-node reference worker's leader URL (its Service); None without one."""
    ref = topo.reference_worker()
    return None if ref is None else f"http://{leader_service(topo, ref)}:{topo.workers[ref].port}"


def notebook_parameters(topo: Topology) -> dict[str, Any]:
    """The live parameters the notebooks read: endpoint, GPU counts, model ids."""
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


#: Client concurrency per decode rank of rack-scaling and EPLB runs (a choice, within 8-256).
STREAMS_PER_RANK = 64


def params_files(topo: Topology) -> dict[str, dict[str, Any]]:
    """Per result, its notebook's live parameters for this topology (lengths and batches from
    the claims; a reference worker measured by context-latency and single-user)."""
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
    if topo.gpu_id is not None:
        ids["gpu_id"] = topo.gpu_id
    system_id = {"system_id": topo.system.catalog_id} if topo.system.catalog_id else {}
    # the single-user claim is on its own GPU (4 B300), not the rack's: its floor reads that one
    su_hw = reg.get("single-user.throughput").scope.hardware
    su_ids = {**ids, "gpu_id": catalogs.as_gpu(su_hw).id} if "gpu_id" in ids and su_hw else ids
    # the claim counts the rack's GPUs; CPU nodes have no rack: the deployment's engine ranks
    rack_gpus = topo.system_gpus if topo.system_gpus is not None else topo.total_gpus
    url = topo.bench.endpoint
    ref = reference_endpoint(topo)
    ref_gpus = topo.workers[topo.reference_worker() or ""].gpus if ref else None
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
        "decode-parity": {
            "source": "live",
            "endpoint": url,
            "batch_sizes": batches,
            "decode_ranks": sum(w.gpus for w in decode),
            "input_len": 1024,
            "output_len": 1024,
            **ids,
        },
        "rack-scaling": (
            {"source": "trace", "trace": RACK_TRACE, "reference_config": "1x", **ids, **system_id}
            if ref
            else {
                "source": "live",
                "endpoints": [url],
                "replicas": [1],
                "gpus_per_replica": rack_gpus,
                "concurrency": streams,
                **ids,
                **system_id,
            }
        ),
        "prefill-gain": {
            "source": "live",
            "endpoint_b": url,
            "prefix_tokens": prefix.high if prefix else 128_000,
            "new_tokens": 1024,
            **ids,
            "prefill_gpus": prefill_gpus,
        },
        "eplb-balance": {
            "source": "live",
            "endpoint": url,
            "ep_size": sum(w.gpus for w in decode),
            "redundant": sum(w.num_redundant_experts for w in decode),
            "concurrency": streams,
        },
        "context-latency": {
            "source": "live",
            "endpoint": ref or url,
            "context_lengths": lengths,
            "output_len": 64,
            **ids,
            **({"n_gpus": 1, "weight_gpus": ref_gpus} if ref_gpus else {}),
        },
        "single-user": {"source": "live", "endpoint": ref or url, "num_requests": 32, **su_ids},
    }


def _decode_parity_note(values: dict[str, Any]) -> str:
    ranks, b = values["decode_ranks"], values["batch_sizes"]
    return (
        f"# batch_sizes are per decode rank; decode_ranks is the decode pool (DEP{ranks}): the "
        f"client runs at concurrency\n# batch x decode_ranks = {min(b) * ranks:,} to "
        f"{max(b) * ranks:,} requests in flight, num_prompts scaled likewise.\n"
        "# Engine B (DeepInfer's offline benchmark) is imported separately: rackbook import "
        "offline-engine FILE -o DIR_B,\n# then -p trace DIR_A -p trace_b DIR_B -p engine_b "
        "deepinfer (book/rerun.md).\n"
    )


def _reference_note(topo: Topology) -> str:
    ref = topo.reference_worker()
    return (
        f"# endpoint: the one-node reference worker ({ref}, DEP{topo.workers[ref or ''].gpus} on "
        "one tray), outside the router.\n# On Slurm pass the address the job wrote: "
        "-p endpoint $(cat logs/JOBID/reference-endpoint)\n"
        if ref
        else ""
    )


def params_yaml(topo: Topology, result: str, values: dict[str, Any]) -> str:
    ref = topo.reference_worker()
    rack_note = (
        f"# Reads the trace the rerun card records with `rackbook record rack-scaling -o "
        f"{RACK_TRACE}`:\n# config 1x on the reference worker ({ref}), config rack behind the "
        f"router, counted as the rack's {topo.system_gpus} GPUs.\n"
        if ref and values.get("source") == "trace"
        else ""
    )
    notes = {
        "prefill-gain": "# endpoint_a: the baseline, a second deployment of this recipe from the "
        "image of the vLLM release\n# before the three prefill changes (the rerun card says "
        "which); pass it with -p endpoint_a URL.\n# endpoint_b: the deployment below.\n",
        "context-latency": _reference_note(topo)
        + (
            "# n_gpus, weight_gpus: the reference's layout, as the chapter's model reads it.\n"
            if "weight_gpus" in values
            else ""
        ),
        "single-user": _reference_note(topo),
        "decode-parity": _decode_parity_note(values) if result == "decode-parity" else "",
        "rack-scaling": rack_note
        or (
            f"# The deployment serves on {topo.total_gpus} of the rack's "
            f"{topo.system_gpus} GPUs; the claim counts the rack's, "
            "so gpus_per_replica does too.\n"
            if topo.system.catalog_id is not None
            else f"# The deployment serves on {topo.total_gpus} of the {topo.system_gpus} GPUs "
            f"of {topo.system_label}; gpus_per_replica counts them all.\n"
            if topo.gpu
            else f"# CPU nodes, no rack: gpus_per_replica counts the deployment's "
            f"{units(topo, topo.total_gpus)}.\n"
        )
        + f"# concurrency: {STREAMS_PER_RANK} requests in flight per decode rank.\n",
        "eplb-balance": f"# concurrency: {STREAMS_PER_RANK} requests in flight per decode rank; "
        "pass the decode leader's log with -p server_log FILE.\n",
    }
    body = yaml.safe_dump(values, sort_keys=False, default_flow_style=None, width=1000)
    return (
        header(topo)
        + f"# rackbook run {result} --params-file params/{result}.yaml  (-p NAME VALUE overrides)\n"
        + notes.get(result, "")
        + body
    )
