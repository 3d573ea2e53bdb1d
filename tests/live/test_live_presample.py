"""BenchClient.presample: a point's prompts drawn before its server is up are the ones its
``vllm bench serve`` run uses (no vLLM needed: vLLM's module is replaced by a stand-in)."""

from __future__ import annotations

import argparse
import types

from rackbook.live.bench import BenchClient


def _client(monkeypatch):
    drawn = []

    def get_samples(args, tok):  # vLLM's sampling, counted
        drawn.append(args.seed)
        return [f"prompt-{args.seed}-{i}" for i in range(2)]

    serve = types.SimpleNamespace(get_samples=get_samples)
    serve.main = lambda args: {"samples": serve.get_samples(args, None)}
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int)
    c = BenchClient()
    c._serve, c._parser, c.import_s = serve, parser, 0.0
    monkeypatch.setattr(c, "_sample", lambda argv: get_samples(parser.parse_args(argv), None))
    return c, serve, drawn, get_samples


def test_presampled_prompts_are_used_once_drawn(monkeypatch):
    c, serve, drawn, original = _client(monkeypatch)
    assert c.presample(["--seed", "3"]) >= 0 and drawn == [3]
    c.presample(["--seed", "3"])  # already drawn
    assert drawn == [3]
    out = c.run(["--seed", "3"])
    assert out["samples"] == ["prompt-3-0", "prompt-3-1"] and drawn == [3]  # not drawn again
    assert serve.get_samples is original  # vLLM's function is back after the run
    assert c.run(["--seed", "4"])["samples"] == ["prompt-4-0", "prompt-4-1"]  # not presampled
    assert drawn == [3, 4]
    c.forget_samples()
    c.run(["--seed", "3"])
    assert drawn == [3, 4, 3]
