"""Each chapter's rerun card: the cluster command that can settle its "this run" reading, its
deployment, cost and files, from the topology, the params files, the live scenario's plan and
published vLLM rates on GB300 (output tok/s per GPU), never a claim's number."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from rackbook import paths
from rackbook.book.report import render
from rackbook.cluster import recipes
from rackbook.cluster.topology import load_topology
from rackbook.core.units import plural
from rackbook.inputs import catalogs
from rackbook.inputs.claims import load_claims, load_figures
from rackbook.results.registry import ChapterTable

#: Minutes from submitting a deployment to a healthy endpoint (an assumption the card states).
START_MINUTES = 15.0
#: Characters a code line of the card may hold.
CODE_WIDTH = 76

#: What a card adds to the params file on the command line, and why (per result).
EXTRA_ARGS: Mapping[str, tuple[tuple[str, str], ...]] = ChapterTable("RERUN_ARGS")

#: What the params file alone cannot give a result's "this run" reading (one sentence each).
NEEDS: Mapping[str, str] = ChapterTable("RERUN_NEEDS")


@dataclass(frozen=True)
class Sweep:
    """What one command records (a shared prefix counted in full, prefilled once per shard)."""

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
    def wall_min(self) -> float:
        """Modelled wall time (minutes): start-ups plus prefill and decode (an upper bound)."""
        return self.deployments * START_MINUTES + (self.decode_s + self.prefill_s) / 60

    @property
    def gpu_hours(self) -> float:
        """GPU-hours the deployments hold for :attr:`wall_min`."""
        return self.gpus * self.wall_min / 60


def assumptions() -> tuple[float, float, str]:
    """(batched output tok/s per GPU, one user's tok/s, URL): published vLLM figures."""
    from rackbook.results import evidence

    def best(result: str, claim: str, unit: str) -> tuple[float, str]:
        t = evidence.published_points(result)
        vllm = t["engine"].astype(str).str.startswith("vLLM") & (t["unit"] == unit)
        t = t[(t["claim_id"] == claim) & t["model"].astype(str).str.contains("V4.1-Flash") & vllm]
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
    """The fastest per-GPU prefill of the longest prompt in vLLM's prefill-TTFT table (``K``
    read as 1,000 tokens: the slower rate)."""
    from rackbook.results import published_rows

    cells = published_rows.load_prefill_table()

    def tokens(label: str) -> int:
        if not (m := re.fullmatch(r"(\d+)K", label)):
            raise ValueError(f"{published_rows.PREFILL_TABLE}: prompt label {label!r}")
        return int(m.group(1)) * 1000

    longest = max(tokens(c.prompt) for c in cells)
    rate = {c: longest / (c.graph_ms / 1000) / c.gpus for c in cells if tokens(c.prompt) == longest}
    best = max(rate, key=rate.__getitem__)
    src = published_rows.source_fields(published_rows.PREFILL_SOURCE)
    page, date = src["page"].split()[0], src["date"].split()[0]
    return PrefillRate(rate[best], best.cfg, best.gpus, longest, best.graph_ms, page, date)


def _wrap_json(flag: str, width: int) -> str:
    if not (m := re.fullmatch(r"(\S+) '(\{.*\})'", flag)) or m.group(2) == "{}":
        return flag
    *items, last = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in json.loads(m.group(2)).items()]
    items = [f"{x}," for x in items] + [f"{last}}}'"]
    return _fill(f"{m.group(1)} '{{{items[0]}", items[1:], width, ("", "    ", 5))


def _fill(head: str, pieces: Iterable[str], width: int, how: tuple = (" \\", "  ", 3)) -> str:
    """``head`` then ``pieces`` over lines of at most ``width`` characters, each broken line
    ending ``how[0]`` (`` \\``), the next indented ``how[1]`` (a piece too long for a line: its
    JSON spread over lines); ``how[2]``: the room a break keeps."""
    lines, line = [], head
    end, indent, room = how
    for p in pieces:
        if len(line) + len(p) + room > width:
            lines.append(line + end)
            line = indent + (_wrap_json(p, width - 2) if len(p) + 2 > width else p)
        else:
            line += " " + p
    return "\n".join([*lines, line])


def wrap(cmd: str, width: int = 88) -> str:
    """A shell command over lines of at most ``width`` characters, broken before `` --flag``."""
    head, *flags = cmd.split(" --")
    return _fill(head, ("--" + f for f in flags), width)


def _text(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def sweep(result: str, params: dict[str, Any], h: Hold) -> Sweep:
    """The live scenario's sweep for ``params`` and its modelled time on what ``h`` holds."""
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
    """A command's deployments and GPUs; ``per_config``: config -> (GPUs, prefill GPUs);
    ``where`` it measures: ``both`` (rack and reference worker), ``reference``, ``node`` (one
    node of the claim's GPUs, no reference worker) or ``routed``."""

    gpus: int
    deployments: int
    serving: int
    prefill: int
    where: str = "routed"
    per_config: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)


def holding(result: str, topo: Any) -> Hold:
    """The deployments a result's command holds on ``topo``."""
    routed, ref = topo.routed_gpus, topo.reference_worker()
    prefill = sum(topo.workers[n].gpus for n in topo.role_workers("prefill")) or routed
    one = topo.workers[ref].gpus if ref else 0
    if result == "rack-scaling" and ref:
        per = {"1x": (one, one), "rack": (routed, prefill)}
        return Hold(routed + one, 2, routed, prefill, "both", per)
    if result in ("context-latency", "single-user") and ref:
        return Hold(one, 1, one, one, "reference")
    if result == "single-user":
        n = load_claims().get("single-user.throughput").scope.gpu_count or 4
        return Hold(n, 1, n, n, "node")
    deployments = 2 if result == "prefill-gain" else 1
    return Hold(routed * deployments, deployments, routed, prefill)


def record_parameters(topo: Any) -> dict[str, Any]:
    """rack-scaling's ``rackbook record -p`` plan; ``{}`` without a reference worker."""
    from rackbook.results.rack_scaling import Params

    if (ref := topo.reference_worker()) is None:
        return {}
    hit, per_rank = load_figures().get(HIT_RATE_FIGURE), recipes.STREAMS_PER_RANK
    decode = sum(topo.workers[n].gpus for n in topo.role_workers("decode"))
    return {
        "input_len": Params.workload_isl,
        "prefix_len": round(Params.workload_isl * hit.value / 100),
        "output_len": Params.workload_osl,
        "concurrency": per_rank * decode,
        "reference_gpus": topo.workers[ref].gpus,
        "deployment_gpus": topo.system_gpus,
        "reference_concurrency": per_rank * topo.workers[ref].gpus,
    }


#: The published figure the rack-scaling card's cached share comes from (data/published).
HIT_RATE_FIGURE = "vllm-agentx-post.prefix-cache-hit"


def cost_rows(topo: Any | None = None) -> list[tuple[str, Hold, Sweep]]:
    """(result, what it holds, its sweep) for every chapter's card, in book order."""
    topo = topo or load_topology()
    params = recipes.params_files(topo)
    out = []
    for r in paths.RESULTS:
        h = holding(r, topo)
        plan = record_parameters(topo) if r == "rack-scaling" else {}
        full = {**params[r], **dict(EXTRA_ARGS.get(r, ())), **plan}
        out.append((r, h, sweep(r, full, h)))
    return out


def _rates() -> dict[str, Any]:
    batched, one, source = assumptions()
    rate = prefill_rate()
    return {"start": START_MINUTES, "batched": batched, "one": one, "source": source, "rate": rate}


def cost_table() -> str:
    """The rerun page's cost table (MyST Markdown) from :func:`cost_rows`, with its total."""
    rows = cost_rows()
    total_min = sum(sw.wall_min for _, _, sw in rows)
    total_h = sum(sw.gpu_hours for _, _, sw in rows)
    return render("rerun-cost.md.j2", rows=rows, total_min=total_min, total_h=total_h, **_rates())


def gpus_text(topo: Any, routed: bool = False) -> str:
    """The recipe's GPU count with its workers' split (``routed``: behind the router only)."""
    workers = {n: w for n, w in topo.workers.items() if not (routed and w.role == "reference")}
    parts = " + ".join(f"{w.gpus} {name}" for name, w in workers.items())
    total = plural(sum(w.gpus for w in workers.values()), "GPU")
    return f"{total} ({parts})" if len(workers) > 1 else total


def deployment() -> str:
    """The cluster deployment every rerun card uses (MyST Markdown), with its leaders' commands."""
    from rackbook.physics import roofline

    topo: Any = load_topology()
    st = roofline.storage(catalogs.as_model(topo.model.catalog_id))
    return render(
        "rerun-deployment.md.j2",
        topo=topo,
        gpus=gpus_text(topo),
        rack=catalogs.load_hardware().systems[topo.system.catalog_id].name,
        weights_gb=st.routed_bytes / 1e9 + st.dense_bytes / 1e9,
        leaders={n: wrap(c[0], CODE_WIDTH) for n, c in recipes.serve_commands(topo).items()},
        generated=recipes.DEFAULT_OUTPUT,
    )


def card(result: str) -> str:
    """The rerun card of ``result`` as a MyST admonition (``book/_template/rerun-card.md.j2``)."""
    topo: Any = load_topology()
    _, h, sw = next(x for x in cost_rows(topo) if x[0] == result)
    params = recipes.params_files(topo)
    ref, kind = topo.reference_worker(), h.where
    behind = {
        "node": f'"{h.serving} x NVIDIA B300"',
        "reference": f'"{h.serving} x NVIDIA {catalogs.gpu(topo.gpu_id or "").label}"',
    }
    yaml_text = yaml.safe_dump(
        params[result], sort_keys=False, default_flow_style=False, width=CODE_WIDTH
    )
    figures = load_figures()
    return render(
        "rerun-card.md.j2",
        result=result,
        topo=topo,
        where=kind,
        ref=ref,
        n_ref=topo.workers[ref].gpus if ref else 0,
        model_id=topo.model.hf_id,
        gpus_text=gpus_text,
        h=h,
        sw=sw,
        scopes=sorted({c.scope.summary() for c in load_claims().for_result(result)}),
        gpus_behind=behind.get(kind, "logs/JOBID/gpus.csv"),
        generated=recipes.DEFAULT_OUTPUT,
        rack_trace=recipes.RACK_TRACE,
        plan=record_parameters(topo) if result == "rack-scaling" else {},
        extra=EXTRA_ARGS.get(result, ()),
        wrap=lambda cmd: wrap(cmd, CODE_WIDTH),
        wrap_flags=lambda f: _fill(" ", (f"-p {k} {v}" for k, v in f.items()), CODE_WIDTH),
        params_yaml=yaml_text,
        params=params[result],
        hit=figures.get(HIT_RATE_FIGURE),
        rejected=[r.url for r in figures.rejected if r.claim == "prefill-gain.gain"],
        max_context=catalogs.as_model(topo.model.catalog_id).architecture.max_context_tokens,
        chapter_needs=NEEDS.get(result, ""),
        **_rates(),
    )
