"""A fixed-batch offline engine (``vllm.LLM`` in this process), the stand-in for DeepInfer's
fixed-batch runs (:data:`NOTE`); its raw JSON has ``vllm bench serve --save-detailed``'s keys."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: Token ids of random prompts: [LOW_ID, HIGH_ID), above the tiny model's special tokens.
LOW_ID, HIGH_ID = 2, 10_000

NOTE = (
    "fixed-batch offline engine (vllm.LLM's engine), prompts_per_batch rounds per batch size: "
    "each round adds exactly B requests at once and steps the engine until all finish (the "
    "loop of LLM.generate); all requests of a round share its start time; token times are "
    "when step() returned them to the recording process; duration = sum of the rounds' "
    "wall times; prefill_walls_s = wall time of a separate max_tokens=1 generate per round"
)


@dataclass(frozen=True)
class OfflineConfig:
    """Engine arguments of ``vllm.LLM`` (same meaning as the ``vllm serve`` flags)."""

    model: str
    dtype: str = "bfloat16"
    max_model_len: int = 256
    max_num_seqs: int = 256
    enforce_eager: bool = True
    load_format: str = "dummy"
    seed: int = 0
    served_model_name: str | None = None

    def llm_kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v or k != "served_model_name"}

    def equivalent_command(self) -> str:
        """The Python call that builds the engine, for run.json."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.llm_kwargs().items())
        return f'VLLM_ENABLE_V1_MULTIPROCESSING=0 python -c "import vllm; vllm.LLM({args})"'


def random_prompts(batch: int, input_len: int, seed: int) -> list[list[int]]:
    """``batch`` prompts of ``input_len`` token ids, uniform on [LOW_ID, HIGH_ID), seeded."""
    rng = np.random.default_rng(seed)
    return rng.integers(LOW_ID, HIGH_ID, size=(batch, input_len)).tolist()


class OfflineEngine:
    """``vllm.LLM`` built once; :meth:`run_batch` times one batch size."""

    def __init__(self, cfg: OfflineConfig) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        from vllm import LLM

        self.cfg = cfg
        t0 = time.monotonic()
        self.llm = LLM(**cfg.llm_kwargs())
        self.init_s = time.monotonic() - t0
        self._calls = 0

    def _timed_batch(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        """``LLM.generate``'s loop, each token timed when ``step()`` returns it: wall start
        (epoch s), total s, and per request lengths, first-token, finish and gap seconds."""
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
        """The raw result (seconds, tokens) of ``repeats`` rounds of (prefill call, decode
        call) on ``batch`` fresh seeded prompts each; ``duration``: the decode calls' sum."""
        base = seed * 1_000_000 + batch * 1000
        warm = random_prompts(batch, input_len, base)
        warm_s = self._timed_batch(warm, 2)["seconds"] if warmup else 0.0
        prompts = [random_prompts(batch, input_len, base + j) for j in range(1, 2 * repeats + 1)]
        prefill_walls, rounds = [], []
        for k in range(repeats):
            prefill_walls.append(self._timed_batch(prompts[2 * k], 1)["seconds"])
            rounds.append(self._timed_batch(prompts[2 * k + 1], output_len))

        def joined(key: str) -> list[Any]:
            return [x for r in rounds for x in r[key]]

        in_lens, out_lens = joined("prompt_lens"), joined("output_lens")
        decode_walls = [r["seconds"] for r in rounds]
        n = batch * repeats
        duration = float(sum(decode_walls))
        return {
            "format": "rackbook-offline-fixed-batch/3",
            "note": NOTE,
            "backend": "vllm-offline",
            "engine_args": self.cfg.llm_kwargs(),
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
