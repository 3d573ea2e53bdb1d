"""Scenario plans: what each live scenario records (server phases, each with bench points), with
its parameters (``-p NAME VALUE``) and defaults (fit for the tiny CPU model, .cache/tiny-moe, on
2 cores; lengths in tokens). :mod:`rackbook.live.recorder` runs a plan. Standard library only:
the rerun cards (:mod:`rackbook.book.rerun`) read the plans without the live harness.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, ClassVar

from rackbook.errors import InputError
from rackbook.paths import TINY_MODEL


def _ints(name: str, text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in str(text).split(",") if x.strip())
    except ValueError:
        raise InputError(
            "-p", name, f"{text!r} is not a comma-separated list of integers"
        ) from None
    if not vals or min(vals) <= 0:
        raise InputError("-p", name, "needs at least one value, all > 0")
    return vals


@dataclass(frozen=True)
class PlanPoint:
    """One measured window: ``shards`` bench clients (one per replica) at once. ``input_len``:
    each prompt's random tokens, after ``prefix_len`` shared ones (``--random-prefix-len``) sent
    once before the window, so its requests find them in the prefix cache."""

    point_id: str
    config: str
    input_len: int
    output_len: int
    num_prompts: int  # per shard
    concurrency: int | None  # per shard
    seed: int
    prefix_len: int = 0
    shards: int = 1
    labels: tuple[tuple[str, str], ...] = ()  # importer labels (engine, context_tokens, ...)
    raw_name: str = ""  # file name under serve/ (shard k>0 gets .s<k> before .json)

    def raw_names(self) -> list[str]:
        base = self.raw_name or f"{self.point_id}.json"
        if self.shards == 1:
            return [base]
        stem = base.removesuffix(".json")
        return [f"{stem}.s{k}.json" for k in range(self.shards)]


@dataclass(frozen=True)
class Phase:
    """A server configuration: ``servers`` identical ``vllm serve`` processes and its points."""

    label: str
    serve_args: tuple[str, ...]
    servers: int
    points: tuple[PlanPoint, ...]


@dataclass(frozen=True)
class Scenario:
    """Parameters every scenario shares; subclasses add theirs and define :meth:`phases`."""

    seed: int = 0
    model: str = str(TINY_MODEL)
    served_model_name: str = "tiny-moe"
    dtype: str = "bfloat16"
    max_model_len: int = 256
    max_num_seqs: int = 256
    warmup: bool = True

    name: ClassVar[str] = ""
    #: parameters whose value is a comma-separated list of strings (not integers)
    STR_LISTS: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: free-text note for run.json
    NOTE: ClassVar[str] = ""

    @classmethod
    def from_params(cls, params: dict[str, str], check: bool = True) -> Scenario:
        """Defaults overridden by ``-p NAME VALUE`` pairs (strings; an unknown name is an error);
        ``check=False`` leaves :meth:`check` to the caller (:func:`fit_endpoint`)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kw: dict[str, Any] = {}
        for name, text in params.items():
            if name not in fields:
                raise InputError("-p", name, f"unknown parameter; known: {', '.join(fields)}")
            default, text = fields[name].default, str(text)
            if name in cls.STR_LISTS:
                vals = tuple(x.strip() for x in text.split(",") if x.strip())
                allowed = cls.STR_LISTS[name]
                if not vals or any(v not in allowed for v in vals):
                    raise InputError("-p", name, f"comma-separated subset of {','.join(allowed)}")
                kw[name] = vals
            elif isinstance(default, tuple):
                kw[name] = _ints(name, text)
            elif isinstance(default, bool):
                if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise InputError("-p", name, f"{text!r} is not a boolean")
                kw[name] = text.lower() in ("1", "true", "yes")
            elif isinstance(default, int):
                try:
                    kw[name] = int(text)
                except ValueError:
                    raise InputError("-p", name, f"{text!r} is not an integer") from None
                if kw[name] < (0 if name in ("seed", "redundant", "num_prompts") else 1):
                    raise InputError("-p", name, f"must be positive, got {kw[name]}")
            else:
                kw[name] = text
        sc = cls(**kw)
        if check:
            sc.check()
        return sc

    def check(self) -> None:
        """Raise :class:`InputError` naming the parameter when the combination is unusable."""

    def parameters(self) -> dict[str, Any]:
        """The scenario's parameters as JSON values (for run.json)."""
        return {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()
        }

    def serve_args(self) -> list[str]:
        """``vllm serve`` flags every server of the scenario gets (after the model)."""
        # fmt: off
        return [
            "--load-format", "dummy", "--dtype", self.dtype, "--max-model-len",
            str(self.max_model_len), "--max-num-seqs", str(self.max_num_seqs), "--enforce-eager",
            "--seed", str(self.seed), "--served-model-name", self.served_model_name,
        ]
        # fmt: on

    def phases(self) -> list[Phase]:
        raise NotImplementedError

    def _need_len(self, total: int, what: str) -> None:
        if total > self.max_model_len:
            raise InputError(
                "-p", "max_model_len", f"{self.max_model_len} cannot hold {what} ({total} tokens)"
            )


# ----------------------------------------------------------------------------- decode-parity


@dataclass(frozen=True)
class DecodeParity(Scenario):
    """Decode parity: the same model, batch by batch, on two engines at equal batch per rank
    (``batch_sizes`` per decode rank; ``decode_ranks``: engine A's DEP size, 1 locally).

    * ``serve`` (the vLLM of the claim): one ``vllm serve`` for the sweep (or ``--endpoint``);
      per batch B, ``vllm bench serve`` at concurrency ``B * decode_ranks`` with
      ``prompts_per_batch`` times as many prompts, request rate inf, ignore-eos;
    * ``offline`` (the fixed-batch stand-in for DeepInfer): one ``vllm.LLM`` rank, exactly B
      prompts per ``generate``, ``prompts_per_batch`` rounds, whatever ``decode_ranks`` is.

    ``--max-num-seqs`` is per server (rank): it must hold the largest batch per rank.
    """

    batch_sizes: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    decode_ranks: int = 1
    input_len: int = 64
    output_len: int = 32
    prompts_per_batch: int = 8
    engines: tuple[str, ...] = ("serve", "offline")

    name: ClassVar[str] = "decode-parity"
    STR_LISTS: ClassVar[dict[str, tuple[str, ...]]] = {"engines": ("serve", "offline")}

    def check(self) -> None:
        if self.max_num_seqs < max(self.batch_sizes):
            raise InputError(
                "-p",
                "max_num_seqs",
                f"{self.max_num_seqs} < largest batch per rank {max(self.batch_sizes)}",
            )
        if self.input_len + self.output_len > self.max_model_len:
            raise InputError("-p", "max_model_len", "must hold input_len + output_len tokens")

    def point_id(self, engine: str, batch: int) -> str:
        return f"{engine}-b{batch}"

    def phases(self) -> list[Phase]:
        if "serve" not in self.engines:
            return []
        r = self.decode_ranks
        pts = tuple(
            PlanPoint(
                self.point_id("serve", b),
                self.served_model_name,
                self.input_len,
                self.output_len,
                self.prompts_per_batch * b * r,
                b * r,  # client concurrency: b requests on each decode rank
                self.seed,
                labels=(("engine", "vllm-serve"), ("batch_size", str(b)), ("decode_ranks", str(r))),
                raw_name=f"b{b}.json",
            )
            for b in self.batch_sizes
        )
        return [Phase("serve", tuple(self.serve_args()), 1, pts)]


# ----------------------------------------------------------------------------- context-latency


@dataclass(frozen=True)
class ContextLatency(Scenario):
    """Decode latency vs context: per context length L one point of ``num_requests`` L-token
    prompts and ``output_len`` output tokens at ``concurrency``. Point k uses seed ``seed + k``
    (one seed's prompts share their start: longer contexts would hit the prefix cache)."""

    context_lengths: tuple[int, ...] = (128, 256, 512, 1024, 2048, 3584)
    output_len: int = 128
    concurrency: int = 1
    num_requests: int = 4
    max_model_len: int = 4096
    max_num_seqs: int = 8

    name: ClassVar[str] = "context-latency"

    def check(self) -> None:
        self._need_len(max(self.context_lengths) + self.output_len, "context + output_len")
        if self.concurrency > self.max_num_seqs:
            raise InputError("-p", "max_num_seqs", f"{self.max_num_seqs} < concurrency")

    def phases(self) -> list[Phase]:
        pts = tuple(
            PlanPoint(
                f"ctx-{n}",
                self.served_model_name,
                n,
                self.output_len,
                self.num_requests,
                self.concurrency,
                self.seed + k,
                labels=(("engine", "vllm-serve"), ("context_tokens", str(n))),
            )
            for k, n in enumerate(self.context_lengths)
        )
        return [Phase("serve", tuple(self.serve_args()), 1, pts)]


# ----------------------------------------------------------------------------- single-user


@dataclass(frozen=True)
class SingleUser(Scenario):
    """One stream: ``num_requests`` requests sent one at a time (concurrency 1), each with an
    ``input_len``-token prompt and ``output_len`` output tokens (ignore-eos)."""

    input_len: int = 128
    output_len: int = 512
    num_requests: int = 4
    max_model_len: int = 1024
    max_num_seqs: int = 8

    name: ClassVar[str] = "single-user"

    def check(self) -> None:
        self._need_len(self.input_len + self.output_len, "input_len + output_len")

    def phases(self) -> list[Phase]:
        pt = PlanPoint(
            "single-user",
            self.served_model_name,
            self.input_len,
            self.output_len,
            self.num_requests,
            1,
            self.seed,
            labels=(("engine", "vllm-serve"),),
        )
        return [Phase("serve", tuple(self.serve_args()), 1, (pt,))]


# ----------------------------------------------------------------------------- prefill-gain


@dataclass(frozen=True)
class PrefillGain(Scenario):
    """Prefill with a cached prefix on two server configurations, A and B: the shared prefix of
    ``prefix_tokens`` once (a warm-up), then ``num_requests`` requests one at a time, each the
    prefix plus ``new_tokens`` fresh tokens and ``output_len`` output; TTFT gives the new-token
    prefill rate. The claim's changes are GPU features; the CPU stand-in is the chunked-prefill
    budget ``--max-num-batched-tokens``, small in A, large in B (``serve_args_a``/``_b``).
    """

    prefix_tokens: int = 2048
    new_tokens: int = 256
    num_requests: int = 24
    output_len: int = 4
    serve_args_a: str = "--max-num-batched-tokens 64"
    serve_args_b: str = "--max-num-batched-tokens 2048"
    max_model_len: int = 4096
    max_num_seqs: int = 8

    name: ClassVar[str] = "prefill-gain"
    NOTE: ClassVar[str] = (
        "configs A and B differ only by serve_args_a / serve_args_b (default: the chunked-"
        "prefill token budget --max-num-batched-tokens 64 vs 2048); the claim's three changes "
        "are GPU features unavailable on CPU, so this shows the harness and vLLM's prefix "
        "cache, not the claimed gain."
    )

    def check(self) -> None:
        self._need_len(
            self.prefix_tokens + self.new_tokens + self.output_len,
            "prefix_tokens + new_tokens + output_len",
        )
        for name in ("serve_args_a", "serve_args_b"):
            bad = [a for a in shlex.split(getattr(self, name)) if a in ("--host", "--port")]
            if bad:
                raise InputError("-p", name, f"must not set {bad[0]} (the harness sets it)")

    def phases(self) -> list[Phase]:
        out = []
        for label, extra in (("A", self.serve_args_a), ("B", self.serve_args_b)):
            pt = PlanPoint(
                f"prefill-{label}",
                label,
                self.new_tokens,
                self.output_len,
                self.num_requests,
                1,
                self.seed,
                prefix_len=self.prefix_tokens,
                labels=(("engine", "vllm-serve"),),
            )
            args = (*self.serve_args(), "--enable-prefix-caching", *shlex.split(extra))
            out.append(Phase(label, args, 1, (pt,)))
        return out


# ----------------------------------------------------------------------------- rack-scaling


@dataclass(frozen=True)
class RackScaling(Scenario):
    """Scaling out: config ``"{R}x"`` runs R replicas (``vllm serve`` processes), each driven by
    its own bench client shard, all at once; the shards merge into one point on a common clock.
    Every shard sends ``num_prompts`` requests (0: four per stream) at ``concurrency``; the
    first ``prefix_len`` of each prompt's ``input_len`` tokens are shared (warmed on each
    replica first). Servers start once for the largest R. Point k uses seeds ``seed + 16 k``
    (+ shard), so no point finds an earlier point's prompts in a prefix cache.

    With ``reference_gpus`` > 0 (``replicas`` unused) the first endpoint is a one-node
    reference and the second the whole deployment, one phase each: point ``1x`` at
    ``reference_concurrency`` (0: ``concurrency``), then point ``rack`` at ``concurrency``,
    each labelled with its GPU count (``num_gpus``), so one trace gives the speedup.
    """

    replicas: tuple[int, ...] = (1, 2)
    input_len: int = 512
    prefix_len: int = 384
    output_len: int = 64
    num_prompts: int = 0  # per shard; 0: 4 x concurrency
    concurrency: int = 8
    max_model_len: int = 1024
    max_num_seqs: int = 16
    reference_gpus: int = 0  # GPUs of the one-node reference deployment; 0: replicas of one
    deployment_gpus: int = 0  # GPUs the whole deployment counts (with reference_gpus)
    reference_concurrency: int = 0  # requests in flight on the reference; 0: concurrency

    name: ClassVar[str] = "rack-scaling"

    def check(self) -> None:
        if (self.reference_gpus > 0) != (self.deployment_gpus > 0):
            raise InputError(
                "-p", "reference_gpus", "give reference_gpus and deployment_gpus together"
            )
        if self.reference_gpus and self.deployment_gpus <= self.reference_gpus:
            raise InputError(
                "-p",
                "deployment_gpus",
                f"{self.deployment_gpus} must exceed reference_gpus {self.reference_gpus}",
            )
        if self.prefix_len >= self.input_len:
            raise InputError("-p", "prefix_len", "must be smaller than input_len")
        self._need_len(self.input_len + self.output_len, "input_len + output_len")
        if max(self.concurrency, self.reference_concurrency) > self.max_num_seqs:
            raise InputError("-p", "max_num_seqs", f"{self.max_num_seqs} < concurrency")

    def _point(self, k: int, config: str, concurrency: int, gpus: int = 0) -> PlanPoint:
        """Point ``k`` of config ``config`` (its seeds: ``seed + 16 k``): on ``gpus`` GPUs, or
        (0) on ``R`` replicas of config ``"{R}x"``, one shard each."""
        gpu_label = (("num_gpus", str(gpus)),) if gpus else ()
        return PlanPoint(
            config,
            config,
            self.input_len - self.prefix_len,
            self.output_len,
            self.num_prompts or 4 * concurrency,
            concurrency,
            self.seed + 16 * k,
            prefix_len=self.prefix_len,
            shards=1 if gpus else int(config.removesuffix("x")),
            labels=(("engine", "vllm-serve"), *gpu_label),
        )

    def phases(self) -> list[Phase]:
        if self.reference_gpus:
            ref_c = self.reference_concurrency or self.concurrency
            ref = self._point(0, "1x", ref_c, self.reference_gpus)
            rack = self._point(1, "rack", self.concurrency, self.deployment_gpus)
            args = tuple(self.serve_args())
            return [Phase("reference", args, 1, (ref,)), Phase("deployment", args, 1, (rack,))]
        pts = tuple(
            self._point(k, f"{r}x", self.concurrency)
            for k, r in enumerate(sorted(set(self.replicas)))
        )
        return [Phase("replicas", tuple(self.serve_args()), max(self.replicas), pts)]


# ----------------------------------------------------------------------------- eplb-balance


@dataclass(frozen=True)
class EplbBalance(Scenario):
    """Expert load balance from a server running EPLB (vLLM on CPU refuses ``--enable-eplb``:
    here it attaches to ``--endpoint URL`` whose log is ``server_log``): ``num_prompts``
    requests (0: four per stream) at ``concurrency``, then the log's ``EPLB step:`` lines into
    the ``eplb_log`` table; ``expert_load``, if given, a dump (JSON ``{"loads": [[...]]}`` or
    Parquet ``layer, expert, tokens[, window]``) into ``expert_load``. ``ep_size`` and
    ``redundant`` describe the served layout (kept in run.json).
    """

    ep_size: int = 64
    redundant: int = 64
    server_log: str = ""
    expert_load: str = ""
    serve_args_eplb: str = "--enable-expert-parallel --enable-eplb"
    input_len: int = 64
    output_len: int = 32
    num_prompts: int = 0  # 0: 4 x concurrency
    concurrency: int = 8

    name: ClassVar[str] = "eplb-balance"

    def check(self) -> None:
        self._need_len(self.input_len + self.output_len, "input_len + output_len")

    def phases(self) -> list[Phase]:
        pt = PlanPoint(
            "eplb-load",
            self.served_model_name,
            self.input_len,
            self.output_len,
            self.num_prompts or 4 * self.concurrency,
            self.concurrency,
            self.seed,
            labels=(("engine", "vllm-serve"),),
        )
        args = (*self.serve_args(), *shlex.split(self.serve_args_eplb))
        return [Phase("serve", args, 1, (pt,))]


def fit_endpoint(
    sc: Scenario,
    given: Collection[str],
    *,
    model: str,
    served_model_name: str,
    max_model_len: int | None,
    same_host: bool = False,
) -> Scenario:
    """``sc`` fitted to a running endpoint serving ``served_model_name`` (tokenizer ``model``,
    context limit ``max_model_len`` tokens or None), then checked; what the user gave
    (``given``) is kept. ``max_num_seqs`` (the endpoint's own) rises to the plan's largest
    concurrency. Against a remote endpoint decode-parity's offline engine is left out unless
    ``-p engines`` asks for it (it would load the model here)."""
    fill: dict[str, Any] = {}
    if "model" not in given:
        fill["model"] = model
    if "served_model_name" not in given:
        fill["served_model_name"] = served_model_name
    if "max_model_len" not in given and max_model_len:
        fill["max_model_len"] = max_model_len
    engines = getattr(sc, "engines", ())
    if "offline" in engines and "engines" not in given and not same_host:
        fill["engines"] = tuple(e for e in engines if e != "offline")
    sc = dataclasses.replace(sc, **fill)
    if "max_num_seqs" not in given:
        most = max(
            (p.concurrency or p.num_prompts for ph in sc.phases() for p in ph.points), default=1
        )
        sc = dataclasses.replace(sc, max_num_seqs=max(sc.max_num_seqs, most))
    sc.check()
    return sc


SCENARIOS: dict[str, type[Scenario]] = {
    c.name: c
    for c in (DecodeParity, RackScaling, PrefillGain, EplbBalance, ContextLatency, SingleUser)
}


def scenario(name: str, params: dict[str, str], check: bool = True) -> Scenario:
    """The scenario ``name`` with ``params`` applied (checked unless ``check=False``)."""
    if name not in SCENARIOS:
        raise InputError("-", "scenario", f"{name!r} is not one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name].from_params(params, check=check)
