"""Scenario plans: what each live scenario records (server phases of bench points), with its
``-p NAME VALUE`` parameters and defaults (the tiny CPU model on 2 cores; lengths in tokens).
Standard library only: the rerun cards read the plans without the live harness."""

from __future__ import annotations

import dataclasses
import functools
import shlex
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from rackbook.errors import InputError
from rackbook.paths import TINY_MODEL


def _bad(name: str, problem: str) -> InputError:
    return InputError("-p", name, problem)


@dataclass(frozen=True)
class PlanPoint:
    """One measured window: ``shards`` bench clients (one per replica) at once; each prompt
    ``input_len`` random tokens after ``prefix_len`` shared ones (sent once before: cached)."""

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
        stem = base.removesuffix(".json")
        return [base] if self.shards == 1 else [f"{stem}.s{k}.json" for k in range(self.shards)]


@dataclass(frozen=True)
class Phase:
    """A server configuration: ``servers`` identical ``vllm serve`` processes, its points."""

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
    NOTE: ClassVar[str] = ""  # for run.json
    #: Token counts one sequence holds (a list: its largest); max_model_len holds their sum.
    HOLDS: ClassVar[tuple[str, ...]] = ("input_len", "output_len")
    #: Requests in flight on one server (a list: its largest); max_num_seqs holds each.
    IN_FLIGHT: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_params(cls, params: dict[str, str], check: bool = True) -> Scenario:
        """Defaults overridden by ``-p NAME VALUE`` text pairs (``check=False``: unchecked)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kw: dict[str, Any] = {}
        for name, text in params.items():
            if name not in fields:
                raise _bad(name, f"unknown parameter; known: {', '.join(fields)}")
            default, text = fields[name].default, str(text)
            if isinstance(default, tuple) and isinstance(default[0], str):  # a subset of these
                vals = tuple(x.strip() for x in text.split(",") if x.strip())
                if not vals or any(v not in default for v in vals):
                    raise _bad(name, f"comma-separated subset of {','.join(default)}")
                kw[name] = vals
            elif isinstance(default, tuple):
                try:
                    kw[name] = tuple(int(x) for x in text.split(",") if x.strip())
                except ValueError:
                    raise _bad(
                        name, f"{text!r} is not a comma-separated list of integers"
                    ) from None
                if not kw[name] or min(kw[name]) <= 0:
                    raise _bad(name, "needs at least one value, all > 0")
            elif isinstance(default, bool):
                if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise _bad(name, f"{text!r} is not a boolean")
                kw[name] = text.lower() in ("1", "true", "yes")
            elif isinstance(default, int):
                try:
                    kw[name] = int(text)
                except ValueError:
                    raise _bad(name, f"{text!r} is not an integer") from None
                if kw[name] < (0 if name in ("seed", "redundant", "num_prompts") else 1):
                    raise _bad(name, f"must be positive, got {kw[name]}")
            else:
                kw[name] = text
        sc = cls(**kw)
        if check:
            sc.check()
        return sc

    def _most(self, name: str) -> int:
        value = getattr(self, name)
        return max(value) if isinstance(value, tuple) else value

    def check(self) -> None:
        """InputError naming the parameter when the combination is unusable."""
        total = sum(self._most(f) for f in self.HOLDS)
        if total > self.max_model_len:
            what = " + ".join(self.HOLDS)
            raise _bad("max_model_len", f"{self.max_model_len} cannot hold {what} ({total} tokens)")
        for name in self.IN_FLIGHT:
            if self._most(name) > self.max_num_seqs:
                problem = f"{self.max_num_seqs} is below {name} ({self._most(name)})"
                raise _bad("max_num_seqs", problem)

    def parameters(self) -> dict[str, Any]:
        """The scenario's parameters as JSON values (for run.json)."""
        items = dataclasses.asdict(self).items()
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in items}

    def serve_args(self) -> list[str]:
        """``vllm serve`` flags every server of the scenario gets."""
        sizes = f"--max-model-len {self.max_model_len} --max-num-seqs {self.max_num_seqs}"
        args = ["--load-format", "dummy", "--dtype", self.dtype, *sizes.split(), "--enforce-eager"]
        return [*args, "--seed", str(self.seed), "--served-model-name", self.served_model_name]

    def phases(self) -> list[Phase]:
        raise NotImplementedError

    def _pt(self, *sizes: int, point_id: str, **kw: Any) -> PlanPoint:
        """A point of ``sizes`` (input_len, output_len, num_prompts, concurrency), config the
        served model and ``seed`` unless ``kw`` says, labelled engine vllm-serve and ``labels``."""
        config, seed = kw.pop("config", self.served_model_name), kw.pop("seed", self.seed)
        named = {"engine": "vllm-serve", **kw.pop("labels", {})}
        labels = tuple((k, str(v)) for k, v in named.items())
        i, o, n, c = sizes
        return PlanPoint(point_id, config, i, o, n, c, seed, labels=labels, **kw)

    def _serve(self, points: Iterable[PlanPoint], *extra: str) -> list[Phase]:
        """One phase of one server (the scenario's flags, then ``extra``) for ``points``."""
        return [Phase("serve", (*self.serve_args(), *extra), 1, tuple(points))]


@dataclass(frozen=True)
class DecodeParity(Scenario):
    """Decode parity: the same model batch by batch (per decode rank) on two engines: ``serve``
    (one ``vllm serve``; per batch B, concurrency ``B * decode_ranks`` with ``prompts_per_batch``
    times as many prompts) and ``offline`` (one ``vllm.LLM`` rank, B prompts per ``generate``,
    ``prompts_per_batch`` rounds). ``max_num_seqs`` (per rank) holds the largest batch."""

    batch_sizes: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    decode_ranks: int = 1
    input_len: int = 64
    output_len: int = 32
    prompts_per_batch: int = 8
    engines: tuple[str, ...] = ("serve", "offline")

    name: ClassVar[str] = "decode-parity"
    IN_FLIGHT: ClassVar[tuple[str, ...]] = ("batch_sizes",)

    def point_id(self, engine: str, batch: int) -> str:
        return f"{engine}-b{batch}"

    def phases(self) -> list[Phase]:
        if "serve" not in self.engines:
            return []
        r, pt = self.decode_ranks, functools.partial(self._pt, self.input_len, self.output_len)
        return self._serve(
            pt(
                self.prompts_per_batch * b * r,
                b * r,  # client concurrency: b requests on each decode rank
                point_id=self.point_id("serve", b),
                labels={"batch_size": b, "decode_ranks": r},
                raw_name=f"b{b}.json",
            )
            for b in self.batch_sizes
        )


@dataclass(frozen=True)
class ContextLatency(Scenario):
    """Decode latency vs context: per length L a point of ``num_requests`` L-token prompts at
    ``concurrency``; point k's seed is ``seed + k`` (else prompts share a cached start)."""

    context_lengths: tuple[int, ...] = (128, 256, 512, 1024, 2048, 3584)
    output_len: int = 128
    concurrency: int = 1
    num_requests: int = 4
    max_model_len: int = 4096
    max_num_seqs: int = 8

    name: ClassVar[str] = "context-latency"
    HOLDS: ClassVar[tuple[str, ...]] = ("context_lengths", "output_len")
    IN_FLIGHT: ClassVar[tuple[str, ...]] = ("concurrency",)

    def phases(self) -> list[Phase]:
        sizes = (self.output_len, self.num_requests, self.concurrency)
        return self._serve(
            self._pt(
                n, *sizes, point_id=f"ctx-{n}", seed=self.seed + k, labels={"context_tokens": n}
            )
            for k, n in enumerate(self.context_lengths)
        )


@dataclass(frozen=True)
class SingleUser(Scenario):
    """One stream: ``num_requests`` requests one at a time (``input_len`` in, ``output_len``)."""

    input_len: int = 128
    output_len: int = 512
    num_requests: int = 4
    max_model_len: int = 1024
    max_num_seqs: int = 8

    name: ClassVar[str] = "single-user"

    def phases(self) -> list[Phase]:
        pt = self._pt(self.input_len, self.output_len, self.num_requests, 1, point_id=self.name)
        return self._serve((pt,))


@dataclass(frozen=True)
class PrefillGain(Scenario):
    """Prefill after a cached prefix on configurations A and B (``serve_args_a``/``_b``): the
    ``prefix_tokens`` prefix once, then ``num_requests`` requests one at a time of prefix plus
    ``new_tokens``; TTFT gives the new-token prefill rate."""

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

    HOLDS: ClassVar[tuple[str, ...]] = ("prefix_tokens", "new_tokens", "output_len")

    def check(self) -> None:
        super().check()
        for name in ("serve_args_a", "serve_args_b"):
            if bad := [a for a in shlex.split(getattr(self, name)) if a in ("--host", "--port")]:
                raise _bad(name, f"must not set {bad[0]} (the harness sets it)")

    def phases(self) -> list[Phase]:
        sizes = (self.new_tokens, self.output_len, self.num_requests, 1)
        pt = functools.partial(self._pt, *sizes, prefix_len=self.prefix_tokens)
        out = []
        for label, extra in (("A", self.serve_args_a), ("B", self.serve_args_b)):
            args = (*self.serve_args(), "--enable-prefix-caching", *shlex.split(extra))
            out.append(Phase(label, args, 1, (pt(point_id=f"prefill-{label}", config=label),)))
        return out


@dataclass(frozen=True)
class RackScaling(Scenario):
    """Scaling out: config ``"{R}x"`` runs R replicas, each driven by its own bench shard, all at
    once (merged into one point); each shard sends ``num_prompts`` (0: four per stream) at
    ``concurrency``, the first ``prefix_len`` tokens shared. Point k's seeds: ``seed + 16 k``.
    With ``reference_gpus`` > 0 the first endpoint is a one-node reference (point ``1x``) and
    the second the whole deployment (point ``rack``), each labelled with its ``num_gpus``."""

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
    IN_FLIGHT: ClassVar[tuple[str, ...]] = ("concurrency", "reference_concurrency")

    def check(self) -> None:
        if (self.reference_gpus > 0) != (self.deployment_gpus > 0):
            raise _bad("reference_gpus", "give reference_gpus and deployment_gpus together")
        if self.reference_gpus and self.deployment_gpus <= self.reference_gpus:
            problem = f"{self.deployment_gpus} must exceed reference_gpus {self.reference_gpus}"
            raise _bad("deployment_gpus", problem)
        if self.prefix_len >= self.input_len:
            raise _bad("prefix_len", "must be smaller than input_len")
        super().check()

    def _point(self, k: int, config: str, concurrency: int, gpus: int = 0) -> PlanPoint:
        """Point ``k`` of ``config``: on ``gpus`` GPUs, or (0) on R replicas of ``"{R}x"``."""
        return self._pt(
            self.input_len - self.prefix_len,
            self.output_len,
            self.num_prompts or 4 * concurrency,
            concurrency,
            point_id=config,
            config=config,
            seed=self.seed + 16 * k,
            prefix_len=self.prefix_len,
            shards=1 if gpus else int(config.removesuffix("x")),
            labels={"num_gpus": gpus} if gpus else {},
        )

    def phases(self) -> list[Phase]:
        if self.reference_gpus:
            ref_c = self.reference_concurrency or self.concurrency
            ref = self._point(0, "1x", ref_c, self.reference_gpus)
            rack = self._point(1, "rack", self.concurrency, self.deployment_gpus)
            args = tuple(self.serve_args())
            return [Phase("reference", args, 1, (ref,)), Phase("deployment", args, 1, (rack,))]
        replicas = sorted(set(self.replicas))
        pts = tuple(self._point(k, f"{r}x", self.concurrency) for k, r in enumerate(replicas))
        return [Phase("replicas", tuple(self.serve_args()), max(self.replicas), pts)]


@dataclass(frozen=True)
class EplbBalance(Scenario):
    """Expert load balance from a server running EPLB (``--endpoint`` whose log is
    ``server_log``): ``num_prompts`` (0: four per stream) at ``concurrency``, then the log's
    ``EPLB step:`` lines; ``expert_load``, if given, a dump (JSON or Parquet) of the loads."""

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

    def phases(self) -> list[Phase]:
        n = self.num_prompts or 4 * self.concurrency
        pt = self._pt(self.input_len, self.output_len, n, self.concurrency, point_id="eplb-load")
        return self._serve((pt,), *shlex.split(self.serve_args_eplb))


def fit_endpoint(
    sc: Scenario,
    given: Collection[str],
    *,
    model: str,
    served_model_name: str,
    max_model_len: int | None,
    same_host: bool = False,
) -> Scenario:
    """``sc`` fitted to a running endpoint (its model, name, context limit in tokens), keeping
    what the user ``given``, then checked; ``max_num_seqs`` rises to the plan's concurrency.
    A remote endpoint drops decode-parity's offline engine unless ``-p engines`` asks."""
    found = {"model": model, "served_model_name": served_model_name, "max_model_len": max_model_len}
    fill: dict[str, Any] = {k: v for k, v in found.items() if k not in given and v}
    engines = getattr(sc, "engines", ())
    if "offline" in engines and "engines" not in given and not same_host:
        fill["engines"] = tuple(e for e in engines if e != "offline")
    sc = dataclasses.replace(sc, **fill)
    if "max_num_seqs" not in given:
        most = [p.concurrency or p.num_prompts for ph in sc.phases() for p in ph.points]
        sc = dataclasses.replace(sc, max_num_seqs=max([sc.max_num_seqs, *most]))
    sc.check()
    return sc


_PLANS = (DecodeParity, RackScaling, PrefillGain, EplbBalance, ContextLatency, SingleUser)
SCENARIOS: dict[str, type[Scenario]] = {c.name: c for c in _PLANS}


def scenario(name: str, params: dict[str, str], check: bool = True) -> Scenario:
    """The scenario ``name`` with ``params`` applied (checked unless ``check=False``)."""
    if name not in SCENARIOS:
        raise InputError("-", "scenario", f"{name!r} is not one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name].from_params(params, check=check)
