"""The clients: ``vllm bench serve`` in-process (imported once, about 9 s; vLLM's parser and
``main`` per point: the JSON ``vllm bench serve FLAGS`` writes), its shard processes, and a
fixed-batch offline engine (``vllm.LLM`` here, :data:`OFFLINE_NOTE`) with the same JSON keys."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shlex
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rackbook.errors import InputError
from rackbook.live.envfile import api_key, redact

if TYPE_CHECKING:
    from rackbook.inputs.scenarios import PlanPoint

#: A point's ``vllm bench serve`` flags (--model: the client's tokenizer), split, then filled in.
FLAGS = (
    "--backend vllm --base-url {url} --model {model} --served-model-name {served} --dataset-name "
    "random --random-input-len {pt.input_len} --random-output-len {pt.output_len} "
    "--random-range-ratio 0 --num-prompts {pt.num_prompts} --request-rate inf --ignore-eos "
    "--temperature 0 --seed {pt.seed} --num-warmups 0 --percentile-metrics ttft,tpot,itl,e2el "
    "--metric-percentiles 50,90,99 --disable-tqdm --save-result --save-detailed --result-dir "
    "{dir} --result-filename {name} --ready-check-timeout-sec 0"
)


def bench_argv(
    pt: PlanPoint, url: str, model: str, served: str, result: Path, meta: Sequence[Any] = ()
) -> list[str]:
    """``vllm bench serve`` flags of ``pt`` at ``url`` (random prompts, at once) into ``result``."""
    extra = f" --random-prefix-len {pt.prefix_len}" if pt.prefix_len else ""
    extra += "" if pt.concurrency is None else f" --max-concurrency {pt.concurrency}"
    fill = {"url": url, "model": model, "served": served, "dir": result.parent, "name": result.name}
    a = [w.format(pt=pt, **fill) for w in (FLAGS + extra).split()]
    return a + (["--metadata", *(f"{k}={v}" for k, v in meta)] if meta else [])


REQUEST_TIMEOUT_ENV = "RACKBOOK_REQUEST_TIMEOUT_S"


def request_timeout_s(env: Mapping[str, str] | None = None) -> float:
    """Seconds without a byte after which a request fails (:data:`REQUEST_TIMEOUT_ENV`, 600)."""
    text = (os.environ if env is None else env).get(REQUEST_TIMEOUT_ENV, "").strip() or "600"
    value = -1.0
    with contextlib.suppress(ValueError):
        value = float(text)
    if not value > 0:
        raise InputError(REQUEST_TIMEOUT_ENV, text, "not a positive number of seconds")
    return value


def command_line(argv: Sequence[str]) -> str:
    """The shell command equivalent to running the point with ``argv`` (secrets redacted)."""
    return redact(shlex.join(["vllm", "bench", "serve", *argv]), api_key())


class BenchClient:
    """vLLM's benchmark client, imported once, run per point; its printout to ``log_path``."""

    def __init__(self, log_path: str | Path | None = None) -> None:
        self.log_path = Path(log_path) if log_path else None
        self._serve: Any = None
        self._parser: Any = None
        self.import_s = 0.0
        self._samples: dict[tuple[str, ...], Any] = {}

    def preload(self) -> float:
        """Import ``vllm.benchmarks.serve`` and build its parser; seconds taken."""
        if self._serve is None:
            t0 = time.monotonic()
            import vllm.benchmarks.serve as serve
            from vllm.utils.argparse_utils import FlexibleArgumentParser

            parser = FlexibleArgumentParser(prog="vllm bench serve")
            serve.add_cli_args(parser)
            self._serve, self._parser = serve, parser
            self.import_s = time.monotonic() - t0
        return self.import_s

    def _sample(self, argv: Sequence[str]) -> tuple[Any, Any]:
        """(the requests vLLM's ``main`` would draw for flags ``argv``, their tokenizer)."""
        args = self._parser.parse_args(list(argv))
        tok = load_tokenizer(args)
        with contextlib.redirect_stdout(io.StringIO()):
            return self._serve.get_samples(args, tok), tok

    def presample(self, argv: Sequence[str]) -> float:
        """Draw the point's prompts now (as vLLM would), for :meth:`run`; seconds taken."""
        self.preload()
        t0 = time.monotonic()
        if (key := tuple(argv)) not in self._samples:
            self._samples[key] = self._sample(argv)
        return time.monotonic() - t0

    def forget_samples(self) -> None:
        self._samples.clear()

    def run(self, argv: Sequence[str]) -> dict[str, Any]:
        """Run one point with flags ``argv`` (presampled prompts reused); vLLM's result dict."""
        self.preload()
        args = self._parser.parse_args(list(argv))
        buf, cached = io.StringIO(), self._samples.get(tuple(argv))
        draw = self._serve.get_samples
        if cached is not None:
            self._serve.get_samples = lambda *_a, **_k: list(cached[0])
        # vLLM allows a request 6 hours: a stalled stream fails after request_timeout_s()
        aiohttp: Any = getattr(self._serve, "aiohttp", None)
        timeout = getattr(aiohttp, "ClientTimeout", None)
        if timeout is not None:
            aiohttp.ClientTimeout = functools.partial(timeout, sock_read=request_timeout_s())
        try:
            with contextlib.redirect_stdout(buf):
                result = self._serve.main(args)
        finally:
            self._serve.get_samples = draw
            if timeout is not None:
                aiohttp.ClientTimeout = timeout
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(f"$ {command_line(argv)}\n{redact(buf.getvalue(), api_key())}")
        return result

    def prompt_token_ids(self, argv: Sequence[str]) -> list[list[int]]:
        """Token ids of the prompts the point with flags ``argv`` will send."""
        self.preload()
        reqs, tok = self._samples.get(tuple(argv)) or self._sample(argv)
        return [list(tok.encode(r.prompt)) for r in reqs]


def load_tokenizer(args: Any) -> Any:
    """The tokenizer ``vllm bench serve`` loads for ``args``; :class:`InputError` if none."""
    from vllm.tokenizers import get_tokenizer

    name = args.tokenizer or args.model
    try:
        mode, trust = args.tokenizer_mode, args.trust_remote_code
        return get_tokenizer(name, tokenizer_mode=mode, trust_remote_code=trust)
    except (OSError, ValueError) as exc:
        said = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        fix = "give a folder on this machine or a Hub id with -p model"
        raise InputError("-p model", name, f"cannot load its tokenizer ({said}); {fix}") from None


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the recorder keeps of vLLM's result dict (seconds, requests, tokens/s, tokens)."""
    keep = ("duration", "completed", "failed", "output_throughput", "total_output_tokens")
    return {k: result.get(k) for k in keep}


def _shard_main(conn: Any, log_path: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the recorder handles Ctrl-C and stops us
    client = BenchClient(log_path)
    conn.send(("ready", client.preload()))
    while (argv := conn.recv()) is not None:
        try:
            conn.send(("ok", summary(client.run(argv))))
        except BaseException as exc:  # reported to the recorder, which decides
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ShardPool:
    """``n`` bench client processes (one per replica) on one clock (``time.perf_counter``)."""

    def __init__(self, n: int, log_dir: str | Path) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conns, self.procs = [], []
        for k in range(n):
            parent, child = ctx.Pipe()
            p = ctx.Process(
                target=_shard_main,
                args=(child, str(Path(log_dir) / f"bench.s{k}.log")),
                name=f"bench-shard-{k}",
                daemon=True,
            )
            p.start()
            self.conns.append(parent)
            self.procs.append(p)
        self.import_s: list[float] = []

    def wait_ready(self) -> list[float]:
        if not self.import_s:
            self.import_s = [float(c.recv()[1]) for c in self.conns]
        return self.import_s

    def run(self, argvs: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
        """Run ``argvs[k]`` on shard ``k`` (all at once); each shard's summary or error."""
        self.wait_ready()
        for c, a in zip(self.conns, argvs, strict=False):
            c.send(list(a))
        got = [c.recv() for c in self.conns[: len(argvs)]]
        return [val if status == "ok" else {"error": val} for status, val in got]

    def close(self) -> None:
        for c, p in zip(self.conns, self.procs, strict=True):
            with contextlib.suppress(OSError, BrokenPipeError):
                c.send(None)
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)


#: Token ids of random prompts: [LOW_ID, HIGH_ID), above the tiny model's special tokens.
LOW_ID, HIGH_ID = 2, 10_000

OFFLINE_NOTE = (
    "fixed-batch offline engine (vllm.LLM's engine), prompts_per_batch rounds per batch size: "
    "each round adds exactly B requests at once and steps the engine until all finish (the "
    "loop of LLM.generate); all requests of a round share its start time; token times are "
    "when step() returned them to the recording process; duration = sum of the rounds' "
    "wall times; prefill_walls_s = wall time of a separate max_tokens=1 generate per round"
)


def offline_args(sc: Any) -> dict[str, Any]:
    """``vllm.LLM``'s arguments (as the ``vllm serve`` flags) for decode-parity scenario ``sc``."""
    args = {k: getattr(sc, k) for k in ("model", "dtype", "max_model_len", "max_num_seqs")}
    args |= {"enforce_eager": True, "load_format": "dummy", "seed": sc.seed}
    return args | ({"served_model_name": sc.served_model_name} if sc.served_model_name else {})


def offline_command(args: Mapping[str, Any]) -> str:
    """The Python call that builds the engine of ``args``, for run.json."""
    text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f'VLLM_ENABLE_V1_MULTIPROCESSING=0 python -c "import vllm; vllm.LLM({text})"'


class OfflineEngine:
    """``vllm.LLM`` built once on ``args`` (:func:`offline_args`); :meth:`run_batch` times a B."""

    def __init__(self, args: dict[str, Any]) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        from vllm import LLM

        self.args = args
        t0 = time.monotonic()
        self.llm = LLM(**args)
        self.init_s = time.monotonic() - t0
        self._calls = 0

    def _timed_batch(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        """LLM.generate's loop, tokens timed when step() returns them (start: epoch s; seconds)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        engine = self.llm.llm_engine
        sp = SamplingParams(max_tokens=max_tokens, ignore_eos=True, temperature=0.0)
        self._calls += 1
        ids = [f"rb{self._calls}-{i}" for i in range(len(prompts))]
        arrivals: dict[str, list[float]] = {i: [] for i in ids}
        done: dict[str, float] = {}
        t_start = time.time()
        t0 = time.perf_counter()
        for rid, p in zip(ids, prompts, strict=True):
            engine.add_request(rid, TokensPrompt(prompt_token_ids=p), sp)
        while engine.has_unfinished_requests():
            outs = engine.step()
            now = time.perf_counter() - t0
            for o in outs:
                if (got := arrivals.get(o.request_id)) is not None:
                    got.extend([now] * (len(o.outputs[0].token_ids) - len(got)))
                    if o.finished:
                        done[o.request_id] = now
        total = time.perf_counter() - t0
        if missing := [i for i in ids if i not in done]:
            raise RuntimeError(f"offline engine: {len(missing)} requests did not finish")
        return {
            "start": t_start,
            "seconds": total,
            "prompt_lens": [len(p) for p in prompts],
            "output_lens": [len(arrivals[i]) for i in ids],
            "ttfts": [arrivals[i][0] if arrivals[i] else done[i] for i in ids],
            "latencies": [done[i] for i in ids],
            "itls": [[float(x) for x in np.diff(arrivals[i])] for i in ids],
        }

    def run_batch(
        self,
        batch: int,
        input_len: int,
        output_len: int,
        repeats: int = 1,
        seed: int = 0,
        warmup: bool = True,
    ) -> dict[str, Any]:
        """Raw result of ``repeats`` rounds (prefill call, decode call) of ``batch`` new prompts."""
        base, shape = seed * 1_000_000 + batch * 1000, (batch, input_len)  # token ids, seeded
        rngs = [np.random.default_rng(base + j) for j in range(2 * repeats + 1)]
        prompts = [rng.integers(LOW_ID, HIGH_ID, size=shape).tolist() for rng in rngs]
        warm_s = self._timed_batch(prompts[0], 2)["seconds"] if warmup else 0.0
        walls = [  # per round: (prefill call, decode call), in this order
            (self._timed_batch(prompts[2 * k + 1], 1)["seconds"], self._timed_batch(p, output_len))
            for k, p in enumerate(prompts[2::2])
        ]
        prefill_walls, rounds = [w for w, _ in walls], [r for _, r in walls]

        def joined(key: str) -> list[Any]:
            return [x for r in rounds for x in r[key]]

        in_lens, out_lens = joined("prompt_lens"), joined("output_lens")
        decode_walls = [r["seconds"] for r in rounds]
        n, duration = batch * repeats, float(sum(decode_walls))
        return {
            "format": "rackbook-offline-fixed-batch/3",
            "note": OFFLINE_NOTE,
            "backend": "vllm-offline",
            "engine_args": self.args,
            "batch_size": batch,
            "repeats": repeats,
            "input_len": input_len,
            "output_len": output_len,
            "seed": seed,
            "warmup_s": warm_s,
            "prefill_walls_s": prefill_walls,
            "decode_walls_s": decode_walls,
            "duration": duration,
            "completed": n,
            "failed": 0,
            "total_input_tokens": int(sum(in_lens)),
            "total_output_tokens": int(sum(out_lens)),
            "output_throughput": float(sum(out_lens)) / duration,
            "input_lens": in_lens,
            "output_lens": out_lens,
            "ttfts": joined("ttfts"),
            "latencies": joined("latencies"),
            "start_times": [r["start"] for r in rounds for _ in range(batch)],
            "itls": joined("itls"),
            "errors": [""] * n,
            "measured_s": float(sum(prefill_walls) + duration),
        }
