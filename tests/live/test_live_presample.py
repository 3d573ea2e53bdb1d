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


def test_run_gives_every_request_the_read_timeout(monkeypatch):
    """vLLM's session timeout (6 hours in all) gets sock_read = RACKBOOK_REQUEST_TIMEOUT_S, so a
    stalled stream fails instead of hanging; vLLM's own ClientTimeout is back after the run."""
    import pytest

    from rackbook.errors import InputError
    from rackbook.live.bench import request_timeout_s

    c, serve, _, _ = _client(monkeypatch)

    def client_timeout(**kw):
        return kw

    serve.aiohttp = types.SimpleNamespace(ClientTimeout=client_timeout)
    serve.main = lambda args: serve.aiohttp.ClientTimeout(total=6 * 60 * 60)
    monkeypatch.setenv("RACKBOOK_REQUEST_TIMEOUT_S", "2.5")
    assert c.run(["--seed", "1"]) == {"total": 21600, "sock_read": 2.5}
    assert serve.aiohttp.ClientTimeout is client_timeout
    monkeypatch.delenv("RACKBOOK_REQUEST_TIMEOUT_S")
    assert request_timeout_s() == 600.0
    for bad in ("0", "-1", "soon", "nan"):
        with pytest.raises(InputError, match="not a positive number of seconds"):
            request_timeout_s({"RACKBOOK_REQUEST_TIMEOUT_S": bad})
