"""Each chapter's rerun card: what a cluster run needs, the command whose trace can turn the
"this run" reading into consistent or inconsistent, what it costs and the files it leaves.

Everything on a card is read, not typed: the deployment (vLLM version, image, exact serve
flags, GPUs) from ``env/cluster/topology.yaml`` through :mod:`rackbook.cluster.topology`; the
command's parameters from the params file ``rackbook recipes`` writes; the sweep (points,
requests, tokens) from the live scenario's plan (:mod:`rackbook.inputs.scenarios`, pure standard
library: planning needs no vLLM); the weights' size from the roofline's storage model; the
time from two published vLLM DeepSeek-V4.1-Flash figures on GB300 (batched OUTPUT tokens per
GPU, and one stream's speed), never a claim's own number. The batched rate counts output tokens
only: a total that counts re-read cached prefix (InferenceX's agentic 104,429 tok/s/GPU, about
115 times its output) would budget a sweep's time about 115 times too short.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from rackbook import paths
from rackbook.physics.units import plural

#: Minutes from submitting the deployment to a healthy endpoint (loading ~300 GB of weights on
#: 17 nodes), an assumption stated on the card.
START_MINUTES = 15.0

#: Characters a code line of the card may hold (the admonition's column is narrower than a
#: page's).
CODE_WIDTH = 76

#: Where the generated recipes live (``rackbook recipes -o env/cluster/generated``).
GENERATED = "env/cluster/generated"

#: What a card adds to the params file on the command line, and why (per result).
EXTRA_ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "prefill-gain": (("endpoint_a", "http://BASELINE:8000"),),
    "eplb-balance": (("server_log", "logs/JOBID/decode-0.log"),),  # the sbatch's decode leader log
}

#: What the params file alone cannot give a result's "this run" reading (one sentence each).
NEEDS: dict[str, str] = {
    "decode-parity": (
        "Engine B must be an offline engine at the same per-rank batches: DeepInfer's own "
        "benchmark output, imported with `rackbook import offline-engine` and given as "
        "`trace_b`; without it the reading stays untested and says so."
    ),
    "rack-scaling": (
        "The params file measures the claim's deployment, counted over the rack's GPUs; the "
        "speedup reading also needs the one-node reference (config `1x`) in the same trace, "
        "which this recipe does not deploy: that reading stays untested until it is recorded."
    ),
    "prefill-gain": (
        "`endpoint_a` is a second deployment of the same model and GPUs on a vLLM without the "
        "three prefill changes (the release before them); `endpoint_b` is this recipe's."
    ),
    "eplb-balance": (
        "Balancedness is read from the servers' EPLB log lines (`log_balancedness` in the "
        "recipe's `--eplb-config`): `server_log` is the decode leader's log, which the Slurm "
        "script writes under `logs/JOBID/`."
    ),
    "context-latency": (
        "The endpoint must accept the longest context: vLLM's `--max-model-len` at least the "
        "largest context length plus the output tokens."
    ),
    "single-user": (
        "The claim is one user on 4 B300 GPUs: point `endpoint` at a 4-GPU deployment (one "
        "node), not at the rack's router, or the reading compares different hardware."
    ),
}


@dataclass(frozen=True)
class Sweep:
    """What one command records: points, requests and tokens (prompt tokens include any
    shared prefix, counted in full: an upper bound on the work), and the modelled time."""

    points: int
    requests: int
    prompt_tokens: int
    output_tokens: int
    run_s: float  # modelled seconds of measuring (s)
    deployments: int  # deployments brought up for it
    gpus: int  # GPUs held while it runs

    @property
    def wall_min(self) -> float:
        """Modelled wall time (minutes): start-ups plus measuring."""
        return self.deployments * START_MINUTES + self.run_s / 60

    @property
    def gpu_hours(self) -> float:
        """GPU-hours the deployments hold for :attr:`wall_min`."""
        return self.gpus * self.wall_min / 60


def assumptions() -> tuple[float, float, str]:
    """(output tok/s per GPU batched, tok/s for one user, source URL): published vLLM
    DeepSeek-V4.1-Flash figures on GB300 from the published evidence, the batched one counting
    output tokens only (unit ``output tok/s/GPU``; its workload's prefill shared the GPUs, so
    the rate already pays for the prompts)."""
    from rackbook.results import evidence

    def best(result: str, claim: str, unit: str) -> tuple[float, str]:
        t = evidence.published_points(result)
        t = t[
            (t["claim_id"] == claim)
            & t["model"].astype(str).str.contains("V4.1-Flash")
            & t["engine"].astype(str).str.startswith("vLLM")
            & (t["unit"] == unit)
        ]
        if t.empty:
            raise ValueError(f"no published vLLM DeepSeek-V4.1-Flash figure in {unit}")
        row = t.loc[t["value"].astype(float).idxmax()]
        return float(row["value"]), str(row["url"])

    batched, url = best("rack-scaling", "rack-scaling.throughput", "output tok/s/GPU")
    one, _ = best("single-user", "single-user.throughput", "tok/s per user")
    return batched, one, url


def _wrap_json(flag: str, width: int) -> str:
    """``flag '{json}'`` with the JSON over several lines inside its quotes (a newline between
    JSON tokens is still JSON, and still one shell word)."""
    m = re.fullmatch(r"(\S+) '(\{.*\})'", flag)
    if not m:
        return flag
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in json.loads(m.group(2)).items()]
    lines, line = [], f"{m.group(1)} '{{"
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "}'")
        if len(line) + len(piece) + 5 > width and not line.endswith("{"):
            lines.append(line)
            line = "    " + piece
        else:
            line += ("" if line.endswith("{") else " ") + piece
    return "\n".join([*lines, line])


def wrap(cmd: str, width: int = 88) -> str:
    """A long shell command over lines of at most ``width`` characters: breaks go before
    `` --flag`` words, with backslash continuations, and inside long JSON arguments."""
    words = cmd.split(" --")
    lines, line = [], words[0]
    for w in words[1:]:
        if len(line) + len(w) + 5 > width:
            lines.append(line + " \\")
            line = "  --" + (_wrap_json(w, width - 4) if len(w) + 4 > width else w)
        else:
            line += " --" + w
    return "\n".join([*lines, line])


def _text(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def sweep(result: str, params: dict[str, Any], gpus: int, deployments: int = 1) -> Sweep:
    """The sweep the live scenario plans for ``params`` against endpoints serving the model
    of the topology (its catalog context limit), and its modelled time on ``gpus`` GPUs:
    per point, the longer of output tokens / (batched output tok/s per GPU x GPUs) and
    requests x output tokens / (concurrency x one user's tok/s) (seconds)."""
    from rackbook.inputs import catalogs
    from rackbook.inputs.scenarios import SCENARIOS, fit_endpoint, scenario

    fields = {f.name for f in dataclasses.fields(SCENARIOS[result])}
    text = {k: _text(v) for k, v in params.items() if k in fields}
    model = catalogs.as_model(params.get("model_id", "deepseek-v4.1-flash"))
    sc = fit_endpoint(
        scenario(result, text, check=False),
        text,
        model=model.id,
        served_model_name=model.id,
        max_model_len=model.architecture.max_context_tokens,
    )
    batched, one, _ = assumptions()
    pts = [p for ph in sc.phases() for p in ph.points]
    n_req = prompt = out = 0
    run_s = 0.0
    for p in pts:
        n = p.num_prompts * p.shards
        pin, pout = n * (p.input_len + p.prefix_len), n * p.output_len
        n_req, prompt, out = n_req + n, prompt + pin, out + pout
        streams = (p.concurrency or n) * p.shards
        run_s += max(pout / (batched * gpus), n * p.output_len / (streams * one))
    return Sweep(len(pts), n_req, prompt, out, run_s, deployments, gpus * deployments)


def deployment_gpus(result: str, topo: Any) -> tuple[int, int]:
    """(GPUs per deployment, deployments) a result's command holds."""
    from rackbook.inputs.claims import load_claims

    if result == "single-user":
        return load_claims().get("single-user.throughput").scope.gpu_count or 4, 1
    return topo.total_gpus, 2 if result == "prefill-gain" else 1


def _minutes(seconds: float) -> str:
    """A duration in whole minutes, ``under 1 min`` rather than ``0 min``."""
    return "under 1 min" if seconds < 30 else f"{seconds / 60:,.0f} min"


def gpus_text(topo: Any) -> str:
    """The recipe's GPU count with how its workers split it: ``68 GPUs (4 prefill + 64
    decode)``, so that the number never appears unexplained."""
    parts = " + ".join(f"{w.gpus} {name}" for name, w in topo.workers.items())
    total = plural(topo.total_gpus, "GPU")
    return f"{total} ({parts})" if len(topo.workers) > 1 else total


def _topology() -> Any:
    from rackbook.cluster import topology

    return topology.load_topology(paths.ROOT / "env/cluster/topology.yaml")


def deployment() -> str:
    """The cluster deployment every rerun card uses, once, for the rerun page: the recipe, the
    vLLM version and image, the weights and how they spread over the GPUs, and each worker's
    leader ``vllm serve`` command (MyST Markdown)."""
    from rackbook.cluster import commands
    from rackbook.inputs import catalogs
    from rackbook.physics import roofline

    topo = _topology()
    model = catalogs.as_model(topo.model.catalog_id)
    st = roofline.storage(model)
    weights_gb = st.routed_bytes / 1e9 + st.dense_bytes / 1e9
    leaders = "\n\n".join(
        f"# {name} leader\n{wrap(cmds[0], CODE_WIDTH)}"
        for name, cmds in commands.serve_commands(topo).items()
    )
    rows = [
        (
            "Recipe",
            f"{topo.model.hf_id} on {gpus_text(topo)} of one "
            f"{catalogs.load_hardware().systems[topo.system.catalog_id].name} "
            f"({plural(topo.total_nodes, 'node')} of "
            f"{topo.system.gpus_per_node}), "
            + ", ".join(f"{n} DEP{w.gpus}" for n, w in topo.workers.items()),
        ),
        ("vLLM", f"{topo.vllm.version} (image `{topo.vllm.image}:{topo.vllm.tag}`)"),
        (
            "Weights",
            f"{weights_gb:,.0f} GB in HBM (modelled: routed experts FP4, the rest FP8; the "
            f"Engram memory not counted), from the Hugging Face Hub as `{topo.model.hf_id}`; "
            "each expert-parallel worker holds one copy, spread over its GPUs",
        ),
    ]
    table = "| What | Every card's deployment |\n|---|---|\n" + "\n".join(
        f"| {k} | {v.replace('|', chr(92) + '|')} |" for k, v in rows
    )
    return (
        f"{table}\n\nThe deployment's leaders run (every node's line is in "
        f"`{GENERATED}/serve-commands.sh`; `sbatch {GENERATED}/slurm.sbatch` starts them "
        f"all):\n\n```bash\n{leaders}\n```\n"
    )


def card(result: str) -> str:
    """The rerun card of ``result`` as MyST Markdown (an admonition): what the claim needs, the
    sweep and its time budget, the command and its parameters; the deployment they run
    against (:func:`deployment`) is on the rerun page, linked."""
    from rackbook.cluster import notebook_params
    from rackbook.inputs.claims import load_claims

    topo = _topology()
    params = notebook_params.params_files(topo)[result]
    extra = EXTRA_ARGS.get(result, ())
    full = {**params, **dict(extra)}
    gpus, deployments = deployment_gpus(result, topo)
    sw = sweep(result, full, gpus, deployments)
    batched, one, url = assumptions()
    claims = [c for c in load_claims().claims if c.result == result]
    scopes = sorted({c.scope.summary() for c in claims})
    rows = [
        ("The claim", "; ".join(scopes)),
        (
            "Deployment",
            (
                f"{topo.model.hf_id} on one node of {plural(gpus, 'GPU')} (the claim is one "
                f"user on {gpus}; not the rack's {gpus_text(topo)}), vLLM {topo.vllm.version}: "
                if result == "single-user"
                else f"{topo.model.hf_id} on {gpus_text(topo)}, vLLM {topo.vllm.version}: "
            )
            + "flags, image and weights on {ref}`rerun-deployment`",
        ),
        (
            "Sweep",
            f"{plural(sw.points, 'point')}, {plural(sw.requests, 'request')}, "
            f"{sw.prompt_tokens:,} prompt + {sw.output_tokens:,} output tokens",
        ),
        (
            "Expected time",
            f"about {sw.wall_min:,.0f} min and {sw.gpu_hours:,.1f} GPU-hours "
            f"({plural(deployments, 'deployment')} of {plural(gpus, 'GPU')}, "
            f"{START_MINUTES:.0f} min to start one, {_minutes(sw.run_s)} measuring at "
            f"{batched:,.0f} output tok/s per GPU batched and {one:,.0f} tok/s for one stream, "
            f"vLLM's published DeepSeek-V4.1-Flash figures on GB300 counting output tokens, "
            f"<{url}>, not the claim's)",
        ),
        (
            'Flips "this run" when',
            "the trace is recorded against an endpoint serving DeepSeek-V4.1-Flash (its "
            "`/v1/models` says so) on B300/GB300 GPUs declared in `RACKBOOK_SERVER_GPUS`. "
            + NEEDS.get(result, ""),
        ),
        (
            "Files it leaves",
            f"`_build/executed/traces/{result}/` (the trace), "
            f"`_build/executed/traces/{result}.raw/` (raw client and server artifacts), "
            f"`_build/executed/{result}.ipynb` and `_build/executed/{result}.json` (headline)",
        ),
    ]
    folded = ('Flips "this run" when', "Files it leaves")
    table = "| What | For this chapter |\n|---|---|\n" + "\n".join(
        f"| {k} | {v.replace('|', chr(92) + '|')} |" for k, v in rows if k not in folded
    )
    more = "\n".join(f"- **{k}**: {v}" for k, v in rows if k in folded)
    # what the endpoint's operator declares: the claim's 4 B300 for one user, else the recipe's
    gpus_behind = f'"{gpus} x NVIDIA B300"' if result == "single-user" else "logs/JOBID/gpus.csv"
    flags = " ".join(f"-p {k} {v}" for k, v in extra)
    cmd = (
        (
            "# the GPUs behind the endpoint, which the client cannot see (the job\n"
            "# writes nvidia-smi's list of every node there):\n"
            if result != "single-user"
            else "# the GPUs behind the endpoint, which the client cannot see:\n"
        )
        + f"export RACKBOOK_SERVER_GPUS={gpus_behind}\n"
        + f"# after editing env/cluster/topology.yaml:\nrackbook recipes -o {GENERATED}\n"
        + wrap(f"rackbook run {result} --params-file {GENERATED}/params/{result}.yaml", CODE_WIDTH)
        + (f" \\\n  {flags}" if flags else "")
    )
    body = (
        f"{table}\n\n"
        "With the deployment running, from a host of its own (never a serving node's busy "
        "CPUs):\n\n"
        f"```bash\n{cmd}\n```\n\n"
        f"::::{{dropdown}} Its parameters (`{GENERATED}/params/{result}.yaml`)\n\n"
        "```yaml\n"
        + yaml.safe_dump(params, sort_keys=False, default_flow_style=False, width=CODE_WIDTH)
        + "```\n::::\n\n"
        f"::::{{dropdown}} What turns the reading, and the files the run leaves\n{more}\n::::"
    )
    return f":::::{{admonition}} Rerun card\n:class: seealso\n\n{body}\n:::::\n"
