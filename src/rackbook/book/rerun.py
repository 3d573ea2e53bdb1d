"""Each chapter's rerun card: the cluster command whose trace can settle the "this run"
reading, its deployment, cost and files, all read from ``env/cluster/topology.yaml``, the
generated params files, the live scenario's plan and published vLLM rates on GB300 (batched
OUTPUT tok/s per GPU, not InferenceX's total with re-read prefix), never a claim's number."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from rackbook import paths
from rackbook.book.report import table
from rackbook.physics.units import plural
from rackbook.results.registry import ChapterTable

#: Minutes from submitting a deployment to a healthy endpoint (an assumption the card states).
START_MINUTES = 15.0

#: Characters a code line of the card may hold.
CODE_WIDTH = 76

#: Where the generated recipes live (``rackbook recipes -o env/cluster/generated``).
GENERATED = "env/cluster/generated"

#: What a card adds to the params file on the command line, and why (per result).
EXTRA_ARGS: Mapping[str, tuple[tuple[str, str], ...]] = ChapterTable("RERUN_ARGS")

#: What the params file alone cannot give a result's "this run" reading (one sentence each).
NEEDS: Mapping[str, str] = ChapterTable("RERUN_NEEDS")


def needs(result: str, topo: Any) -> str:
    """What the params file alone cannot give ``result``'s "this run" reading (read, not typed)."""
    from rackbook.cluster import notebook_params
    from rackbook.inputs import catalogs
    from rackbook.inputs.published import load_figures

    ref = topo.reference_worker()
    params = notebook_params.params_files(topo)
    if result == "rack-scaling" and ref:
        plan = record_parameters(topo)
        hit = load_figures().get(HIT_RATE_FIGURE)
        return (
            f"The trace holds config `1x` (the reference, {plan['reference_gpus']} GPUs) and "
            f"`rack` (counted as {plan['deployment_gpus']} GPUs, as the claim does, serving on "
            f"{topo.routed_gpus}) at {plan['input_len']:,} tokens in and {plan['output_len']:,} "
            f"out, {plan['prefix_len']:,} of them a cached shared prefix ({hit.value:g} %, "
            f"AgentX's published hit rate, <{hit.url}>). Untested: whether the write-up's node "
            "is a 4-GPU tray (the recipe's) or an 8-GPU HGX node."
        )
    if result == "prefill-gain":
        rejected = [r.url for r in load_figures().rejected if r.claim == "prefill-gain.gain"]
        return (
            f"`endpoint_b` is this recipe ({topo.vllm.image}:{topo.vllm.tag}); `endpoint_a`, "
            f"the baseline, a copy of it (same model, same {plural(topo.routed_gpus, 'GPU')}, "
            "same serve flags; only `vllm.tag` and `vllm.version` changed in the topology) on "
            "the last vLLM release before the three prefill changes. No stored source names "
            f"that release (read: {', '.join(f'<{u}>' for u in rejected)}), so the operator "
            f"picks it; both hold the {params['prefill-gain']['prefix_tokens']:,}-token prefix."
        )
    if result == "context-latency" and ref:
        model = catalogs.as_model(topo.model.catalog_id)
        p = params["context-latency"]
        return (
            f"The endpoint is the one-node reference ({ref}: DEP{topo.workers[ref].gpus}, one "
            f"copy of the weights over {p['weight_gpus']} GPUs, {plural(p['n_gpus'], 'GPU')} "
            "reading a sequence's KV), as the chapter's model assumes; the default "
            f"`--max-model-len`, {model.architecture.max_context_tokens:,} tokens, holds the "
            f"longest context ({max(p['context_lengths']):,}) plus {p['output_len']} out."
        )
    if result == "single-user":
        where = f"the one-node reference ({ref}, DEP{topo.workers[ref].gpus})" if ref else ""
        return (
            "The claim is one user on 4 B300 GPUs: the endpoint is "
            + (where or "a 4-GPU deployment (one node)")
            + ", not the rack's router. Untested: a tensor-parallel decode path instead of DEP."
        )
    return NEEDS.get(result, "")


@dataclass(frozen=True)
class Sweep:
    """What one command records (prompt tokens count a shared prefix in full; prefilled
    tokens once per shard) and its modelled time."""

    points: int
    requests: int
    prompt_tokens: int
    output_tokens: int
    decode_s: float  # modelled seconds of decoding (s)
    deployments: int  # deployments brought up for it
    gpus: int  # GPUs held while it runs
    prefill_tokens: int = 0  # prompt tokens the servers compute (not prefix-cache hits)
    prefill_s: float = 0.0  # modelled seconds of prefill (s), added to decoding (no overlap)

    @property
    def run_s(self) -> float:
        """Modelled seconds of measuring (s): prefill plus decode, an upper bound."""
        return self.decode_s + self.prefill_s

    @property
    def wall_min(self) -> float:
        """Modelled wall time (minutes): start-ups plus measuring."""
        return self.deployments * START_MINUTES + self.run_s / 60

    @property
    def gpu_hours(self) -> float:
        """GPU-hours the deployments hold for :attr:`wall_min`."""
        return self.gpus * self.wall_min / 60


def assumptions() -> tuple[float, float, str]:
    """(batched output tok/s per GPU, one user's tok/s, source URL): published vLLM
    DeepSeek-V4.1-Flash figures on GB300."""
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


@dataclass(frozen=True)
class PrefillRate:
    """A published one-request prefill rate (prompt tok/s per GPU) and where it was read."""

    tok_s_per_gpu: float
    cfg: str
    gpus: int
    tokens: int
    ttft_ms: float
    url: str
    date: str


def prefill_rate() -> PrefillRate:
    """The fastest per-GPU prefill of the longest prompt in vLLM's prefill-TTFT table
    (``K`` read as 1,000 tokens: the slower rate; one request's rate: an upper bound on time)."""
    from rackbook.results import published_rows

    cells = published_rows.load_prefill_table()

    def tokens(label: str) -> int:
        m = re.fullmatch(r"(\d+)K", label)
        if not m:
            raise ValueError(f"{published_rows.PREFILL_TABLE}: prompt label {label!r}")
        return int(m.group(1)) * 1000

    longest = max(tokens(c.prompt) for c in cells)
    rate = {c: longest / (c.graph_ms / 1000) / c.gpus for c in cells if tokens(c.prompt) == longest}
    best = max(rate, key=rate.__getitem__)
    src = published_rows.source_fields(published_rows.PREFILL_SOURCE)
    page, date = src["page"].split()[0], src["date"].split()[0]
    return PrefillRate(rate[best], best.cfg, best.gpus, longest, best.graph_ms, page, date)


def _wrap_json(flag: str, width: int) -> str:
    """``flag '{json}'`` with the JSON over several lines inside its quotes."""
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
    """A shell command over lines of at most ``width`` characters, broken before `` --flag``."""
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


def sweep(result: str, params: dict[str, Any], h: Hold) -> Sweep:
    """The live scenario's sweep for ``params`` and its modelled time (s) on what ``h`` holds:
    decode at the batched or one-stream rate, whichever is slower, plus prefill."""
    from rackbook.inputs import catalogs
    from rackbook.inputs.scenarios import SCENARIOS, fit_endpoint, scenario

    fields = {f.name for f in dataclasses.fields(SCENARIOS[result])}
    text = {k: _text(v) for k, v in params.items() if k in fields}
    model = catalogs.as_model(params.get("model_id", "deepseek-v4.1-flash"))
    sc = scenario(result, text, check=False)
    limit = model.architecture.max_context_tokens
    sc = fit_endpoint(sc, text, model=model.id, served_model_name=model.id, max_model_len=limit)
    batched, one, _ = assumptions()
    rate = prefill_rate().tok_s_per_gpu
    pts = [p for ph in sc.phases() for p in ph.points]
    n_req = prompt = out = computed = 0
    decode_s = prefill_s = 0.0
    for p in pts:
        g, pg = h.per_config.get(p.config, (h.serving, h.prefill or h.serving))
        n = p.num_prompts * p.shards
        pin, pout = n * (p.input_len + p.prefix_len), n * p.output_len
        new = n * p.input_len + p.shards * p.prefix_len  # the prefix once per shard (warm-up)
        n_req, prompt, out, computed = n_req + n, prompt + pin, out + pout, computed + new
        streams = (p.concurrency or n) * p.shards
        decode_s += max(pout / (batched * g), n * p.output_len / (streams * one))
        prefill_s += new / (rate * pg)
    return Sweep(len(pts), n_req, prompt, out, decode_s, h.deployments, h.gpus, computed, prefill_s)


@dataclass(frozen=True)
class Hold:
    """What a command holds: deployments, GPUs in all, serving and prefill GPUs of the one it
    measures, and ``per_config``: config -> (GPUs, prefill GPUs)."""

    gpus: int
    deployments: int
    serving: int
    prefill: int
    per_config: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)


def _prefill_gpus(topo: Any) -> int:
    return sum(topo.workers[n].gpus for n in topo.role_workers("prefill")) or topo.routed_gpus


def holding(result: str, topo: Any) -> Hold:
    """The deployments a result's command holds on ``topo``."""
    from rackbook.inputs.claims import load_claims

    routed, prefill = topo.routed_gpus, _prefill_gpus(topo)
    ref = topo.reference_worker()
    one = topo.workers[ref].gpus if ref else None
    if result == "rack-scaling" and one:
        per = {"1x": (one, one), "rack": (routed, prefill)}
        return Hold(routed + one, 2, routed, prefill, per)
    if result in ("context-latency", "single-user") and one:
        return Hold(one, 1, one, one)
    if result == "single-user":
        n = load_claims().get("single-user.throughput").scope.gpu_count or 4
        return Hold(n, 1, n, n)
    deployments = 2 if result == "prefill-gain" else 1
    return Hold(routed * deployments, deployments, routed, prefill)


def record_parameters(topo: Any) -> dict[str, Any]:
    """rack-scaling's ``rackbook record -p`` plan (tokens, GPUs, streams); ``{}``
    without a reference worker."""
    from rackbook.cluster import notebook_params
    from rackbook.inputs.published import load_figures
    from rackbook.results.headline import defaults
    from rackbook.results.rack_scaling.chapter import Params

    ref = topo.reference_worker()
    if ref is None:
        return {}
    hit = load_figures().get(HIT_RATE_FIGURE)
    p = defaults(Params)
    per_rank = notebook_params.STREAMS_PER_RANK
    decode = sum(topo.workers[n].gpus for n in topo.role_workers("decode"))
    return {
        "input_len": p.workload_isl,
        "prefix_len": round(p.workload_isl * hit.value / 100),
        "output_len": p.workload_osl,
        "concurrency": per_rank * decode,
        "reference_gpus": topo.workers[ref].gpus,
        "deployment_gpus": topo.system_gpus,
        "reference_concurrency": per_rank * topo.workers[ref].gpus,
    }


#: The published figure the rack-scaling card's cached share comes from (data/published).
HIT_RATE_FIGURE = "vllm-agentx-post.prefix-cache-hit"


def cost_rows(topo: Any | None = None) -> list[tuple[str, Hold, Sweep]]:
    """(result, what it holds, its sweep) for every chapter's card, in book order."""
    from rackbook.cluster import notebook_params

    topo = topo or _topology()
    params = notebook_params.params_files(topo)
    out = []
    for r in paths.RESULTS:
        h = holding(r, topo)
        full = {**params[r], **dict(EXTRA_ARGS.get(r, ())), **_plan(r, topo)}
        out.append((r, h, sweep(r, full, h)))
    return out


def _plan(result: str, topo: Any) -> dict[str, Any]:
    """What a card's recording adds to its params file (rack-scaling's record plan)."""
    return record_parameters(topo) if result == "rack-scaling" else {}


def cost_table() -> str:
    """The rerun page's cost table (MyST Markdown) from :func:`cost_rows`, with its total."""
    batched, one, source = assumptions()
    rate = prefill_rate()
    rows = [
        "| chapter | points | requests | prompt tokens prefilled | output tokens "
        "| GPUs held (deployments) | estimated wall | estimated GPU-hours |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total_h = total_min = 0.0
    for r, h, sw in cost_rows():
        total_h += sw.gpu_hours
        total_min += sw.wall_min
        rows.append(
            f"| {r} | {sw.points} | {sw.requests:,} | {sw.prefill_tokens:,} "
            f"| {sw.output_tokens:,} | {h.gpus} ({h.deployments}) | {sw.wall_min:,.0f} min "
            f"| {sw.gpu_hours:,.1f} |"
        )
    rows.append(f"| **all chapters** | | | | | | **{total_min:,.0f} min** | **{total_h:,.1f}** |")
    return (
        "Estimated per chapter from its params file and the live scenario's sweep: "
        f"{START_MINUTES:.0f} min to start each deployment, decode at {batched:,.0f} output "
        f"tok/s per GPU batched or {one:,.0f} tok/s for one stream (vLLM DeepSeek-V4.1-Flash on "
        f"GB300, <{source}>), prefill at {rate.tok_s_per_gpu:,.0f} prompt tok/s per GPU (one "
        f"{rate.tokens:,}-token request in {rate.ttft_ms:,.0f} ms on {rate.cfg}, GB200, "
        f"{rate.date}: <{rate.url}>); no claim's own figure. Prefill and decode are added and a "
        "cached prefix prefilled once: upper bounds; GPUs are held for the whole wall time.\n\n"
        + "\n".join(rows)
        + "\n"
    )


def _minutes(seconds: float) -> str:
    return "under 1 min" if seconds < 30 else f"{seconds / 60:,.0f} min"


def gpus_text(topo: Any, routed: bool = False) -> str:
    """The recipe's GPU count with its workers' split (``routed``: behind the router only)."""
    workers = {n: w for n, w in topo.workers.items() if not (routed and w.role == "reference")}
    parts = " + ".join(f"{w.gpus} {name}" for name, w in workers.items())
    total = plural(sum(w.gpus for w in workers.values()), "GPU")
    return f"{total} ({parts})" if len(workers) > 1 else total


def _topology() -> Any:
    from rackbook.cluster import topology

    return topology.load_topology(paths.ROOT / "env/cluster/topology.yaml")


def deployment() -> str:
    """The cluster deployment every rerun card uses (MyST Markdown), with its leaders' commands."""
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
    table = _two_columns("Every card's deployment", rows)
    return (
        f"{table}\n\nThe deployment's leaders run (every node's line is in "
        f"`{GENERATED}/serve-commands.sh`; `sbatch {GENERATED}/slurm.sbatch` starts them "
        f"all):\n\n```bash\n{leaders}\n```\n"
    )


def _deployment_text(result: str, topo: Any, h: Hold) -> str:
    """The Deployment row of a card: which of the recipe's deployments the command measures."""
    ref = topo.reference_worker()
    n_ref = topo.workers[ref].gpus if ref else 0
    one = f"the one-node reference worker `{ref}` ({plural(n_ref, 'GPU')} on one tray)"
    routed = f"{topo.model.hf_id} behind the router on {gpus_text(topo, routed=True)}"
    if result == "rack-scaling" and ref:
        what = f"{routed} as config `rack`, and {one} as config `1x`"
    elif result in ("context-latency", "single-user") and ref:
        what = f"{topo.model.hf_id} on {one}, not the rack's router"
    elif result == "single-user":
        what = (
            f"{topo.model.hf_id} on one node of {plural(h.serving, 'GPU')} (the claim is one "
            f"user on {h.serving}; not the rack's {gpus_text(topo)})"
        )
    else:
        what = routed
    return (
        f"{what}, vLLM {topo.vllm.version}: flags, image and weights on {{ref}}`rerun-deployment`"
    )


def _time_text(h: Hold, sw: Sweep) -> str:
    """The Expected time row: wall, GPU-hours and the published rates behind them."""
    batched, one, url = assumptions()
    rate = prefill_rate()
    return (
        f"about {sw.wall_min:,.0f} min and {sw.gpu_hours:,.1f} GPU-hours "
        f"({plural(h.deployments, 'deployment')}, {plural(h.gpus, 'GPU')} held, "
        f"{START_MINUTES:.0f} min to start {'each' if h.deployments > 1 else 'it'}; "
        f"{_minutes(sw.prefill_s)} prefilling "
        f"{sw.prefill_tokens:,} prompt tokens at {rate.tok_s_per_gpu:,.0f} tok/s per GPU, one "
        f"request on {rate.cfg}, <{rate.url}>; {_minutes(sw.decode_s)} decoding at "
        f"{batched:,.0f} output tok/s per GPU batched and {one:,.0f} tok/s for one stream, "
        f"<{url}>: vLLM's published DeepSeek-V4.1-Flash figures, not the claim's)"
    )


def _command(result: str, topo: Any, h: Hold) -> str:
    """The card's shell lines: declare the GPUs, generate the recipes, (record), run."""
    from rackbook.cluster import notebook_params
    from rackbook.inputs import catalogs

    ref = topo.reference_worker()
    on_ref = result in ("context-latency", "single-user") and ref
    gpus_behind = "logs/JOBID/gpus.csv"  # the job writes every node's nvidia-smi list there
    if result == "single-user" and not ref:
        gpus_behind = f'"{h.serving} x NVIDIA B300"'
    elif on_ref:
        gpus_behind = f'"{h.serving} x NVIDIA {catalogs.gpu(topo.gpu_id or "").label}"'
    lines = "# the GPUs behind the endpoint, which the client cannot see:\n"
    lines += f"export RACKBOOK_SERVER_GPUS={gpus_behind}\nrackbook recipes -o {GENERATED}\n"
    plan = _plan(result, topo)
    if plan:
        flags = " ".join(f"-p {k} {v}" for k, v in plan.items())
        lines += (
            "# config 1x on the reference, then config rack behind the router:\n"
            + wrap(
                f"rackbook record rack-scaling -o {notebook_params.RACK_TRACE} "
                "--endpoint $(cat logs/JOBID/reference-endpoint) "
                "--endpoint $(cat logs/JOBID/endpoint)",
                CODE_WIDTH,
            )
            + " \\\n"
            + _wrap_flags(flags, CODE_WIDTH)
            + "\n"
        )
    run = wrap(f"rackbook run {result} --params-file {GENERATED}/params/{result}.yaml", CODE_WIDTH)
    more = [f"-p {k} {v}" for k, v in EXTRA_ARGS.get(result, ())]
    if on_ref:
        more.append("-p endpoint $(cat logs/JOBID/reference-endpoint)")
    return lines + run + "".join(f" \\\n  {m}" for m in more)


def _wrap_flags(flags: str, width: int) -> str:
    """``-p NAME VALUE`` pairs over indented lines of at most ``width`` characters."""
    pairs = re.findall(r"-p \S+ \S+", flags)
    lines, line = [], " "
    for pair in pairs:
        if len(line) + len(pair) + 3 > width:
            lines.append(line + " \\")
            line = " "
        line += " " + pair
    return "\n".join([*lines, line])


def card(result: str) -> str:
    """The rerun card of ``result`` as a MyST admonition."""
    from rackbook.cluster import notebook_params
    from rackbook.inputs.claims import load_claims

    topo = _topology()
    row = next(x for x in cost_rows(topo) if x[0] == result)
    h, sw = row[1], row[2]
    params = notebook_params.params_files(topo)[result]
    claims = [c for c in load_claims().claims if c.result == result]
    scopes = sorted({c.scope.summary() for c in claims})
    rows = [
        ("The claim", "; ".join(scopes)),
        ("Deployment", _deployment_text(result, topo, h)),
        (
            "Sweep",
            f"{plural(sw.points, 'point')}, {plural(sw.requests, 'request')}, "
            f"{sw.prompt_tokens:,} prompt + {sw.output_tokens:,} output tokens",
        ),
        ("Expected time", _time_text(h, sw)),
        ('Flips "this run" when', _flips(result, topo)),
        (
            "Files it leaves",
            f"`_build/executed/traces/{result}/` (the trace), "
            f"`_build/executed/traces/{result}.raw/` (raw client and server artifacts), "
            f"`_build/executed/{result}.ipynb` and `_build/executed/{result}.json` (headline)",
        ),
    ]
    folded = ('Flips "this run" when', "Files it leaves")
    table = _two_columns("For this chapter", [r for r in rows if r[0] not in folded])
    more = "\n".join(f"- **{k}**: {v}" for k, v in rows if k in folded)
    body = (
        f"{table}\n\n"
        "With the deployment running, from a host of its own (never a serving node's busy "
        "CPUs):\n\n"
        f"```bash\n{_command(result, topo, h)}\n```\n\n"
        f"::::{{dropdown}} Its parameters (`{GENERATED}/params/{result}.yaml`)\n\n"
        "```yaml\n"
        + yaml.safe_dump(params, sort_keys=False, default_flow_style=False, width=CODE_WIDTH)
        + "```\n::::\n\n"
        f"::::{{dropdown}} What turns the reading, and the files the run leaves\n{more}\n::::"
    )
    return f":::::{{admonition}} Rerun card\n:class: seealso\n\n{body}\n:::::\n"


def _two_columns(title: str, rows: list[tuple[str, str]]) -> str:
    """A ``What | title`` Markdown table of ``rows``, ``|`` escaped in the values."""

    return "\n".join(table(f"What | {title}", ((k, v.replace("|", "\\|")) for k, v in rows)))


def _flips(result: str, topo: Any) -> str:
    """When the card's trace turns the "this run" reading, with what the card assumes."""
    base = (
        "the trace is recorded against an endpoint serving DeepSeek-V4.1-Flash (its "
        "`/v1/models` says so) on B300/GB300 GPUs declared in `RACKBOOK_SERVER_GPUS`. "
    )
    return base + needs(result, topo)
