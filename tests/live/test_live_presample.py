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
    monkeypatch.setattr(
        c, "_sample", lambda argv: (get_samples(parser.parse_args(argv), None), None)
    )
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


def test_a_tokenizer_that_cannot_load_is_one_line_naming_p_model(monkeypatch):
    """Attached to an endpoint whose /v1/models root is a folder only the server has, the
    client falls back to the served name; if that cannot be loaded either (offline), the
    recorder says so in one line naming -p model instead of dying with vLLM's traceback."""
    import sys

    import pytest

    from rackbook.errors import InputError
    from rackbook.live.bench import load_tokenizer

    def get_tokenizer(name, **_kw):
        if name == "here":
            return "a tokenizer"
        raise OSError(f"We couldn't connect to 'https://huggingface.co' to load {name}.\nCheck")

    fake = types.SimpleNamespace(get_tokenizer=get_tokenizer)
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(tokenizers=fake))
    monkeypatch.setitem(sys.modules, "vllm.tokenizers", fake)
    args = types.SimpleNamespace(
        tokenizer=None, model="tiny-moe", tokenizer_mode="auto", trust_remote_code=False
    )
    with pytest.raises(InputError) as err:
        load_tokenizer(args)
    line = str(err.value)
    assert line.startswith("-p model: tiny-moe: cannot load its tokenizer (OSError: We couldn't")
    assert "\n" not in line and line.endswith(
        "give a folder on this machine or a Hub id with -p model"
    )
    args.tokenizer = "here"  # --tokenizer wins over --model, as in vllm bench serve
    assert load_tokenizer(args) == "a tokenizer"
