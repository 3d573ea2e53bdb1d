"""Recording against running endpoints: what they serve (``/v1/models``), the GPUs declared
behind them, and every generated cluster params file fitted to a DeepSeek-V4.1-Flash endpoint.

No server is started and no address contacted: ``served_model`` is replaced by the answer a
vLLM endpoint gives (``id``, ``root``, ``max_model_len``).
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml
from livehelp import accept_each

from rackbook import paths
from rackbook.core import provenance
from rackbook.errors import InputError
from rackbook.inputs.scenarios import SCENARIOS, scenario
from rackbook.live import record as endpoint
from rackbook.live.record import attach, ensure_tiny_model
from rackbook.results import verdicts

DSV41 = endpoint.ServedModel(
    "deepseek-ai/DeepSeek-V4.1-Flash", "deepseek-ai/DeepSeek-V4.1-Flash", 1_048_576
)


def _models(url: str, body: object) -> endpoint.ServedModel:
    return endpoint.parse_models(url, json.dumps(body))


def test_parse_models_reads_id_root_and_context_limit():
    m = _models(
        "http://h:8000", {"data": [{"id": "dsv41", "root": "/models/v41", "max_model_len": 131072}]}
    )
    assert (m.id, m.root, m.max_model_len) == ("dsv41", "/models/v41", 131072)
    # a root that is a path on the server (not here) is no tokenizer: the served name is used
    assert m.tokenizer() == "dsv41"
    assert DSV41.tokenizer() == "deepseek-ai/DeepSeek-V4.1-Flash"
    # no root, no limit: the id stands in for both, the limit stays unknown
    m2 = _models("http://h", {"data": [{"id": "org/model"}]})
    assert (m2.root, m2.max_model_len, m2.tokenizer()) == ("org/model", None, "org/model")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("not json", "not JSON"),
        ({"data": []}, "lists no model"),
        ({"object": "list"}, "lists no model"),
        ({"data": [{"root": "x"}]}, "data[0].id: missing"),
        ({"data": [{"id": "m", "max_model_len": -5}]}, "max_model_len: not a positive integer"),
        ({"data": [{"id": "m", "max_model_len": True}]}, "max_model_len: not a positive integer"),
    ],
)
def test_parse_models_bad_answers_are_one_line(body, says):
    text = body if isinstance(body, str) else json.dumps(body)
    with pytest.raises(InputError) as e:
        endpoint.parse_models("http://h:8000", text)
    assert says in str(e.value) and "http://h:8000/v1/models" in str(e.value)
    assert "\n" not in str(e.value)


def test_unreachable_endpoint_is_one_line_error():
    with pytest.raises(InputError, match=r"unreachable \(GET /v1/models"):
        endpoint.served_model("http://127.0.0.1:9", timeout_s=2)  # port 9: discard, closed


class _Silent:
    """A local TCP endpoint that never answers: it takes connections (or, with ``headers``,
    sends an HTTP status line and headers) and then says nothing until closed."""

    def __init__(self, headers: bool = False) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.headers, self.conns, self.done = headers, [], threading.Event()
        threading.Thread(
            target=accept_each, args=(self.sock, self.done, self._take), daemon=True
        ).start()

    def _take(self, conn: socket.socket) -> None:
        self.conns.append(conn)
        if self.headers:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")

    def close(self) -> None:
        self.done.set()
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("headers", [False, True], ids=["no-answer", "headers-then-nothing"])
def test_an_endpoint_that_never_answers_is_one_line_within_the_timeout(headers):
    silent = _Silent(headers)
    url = f"http://127.0.0.1:{silent.port}"
    try:
        t0 = time.monotonic()
        with pytest.raises(InputError) as e:
            endpoint.served_model(url, timeout_s=1)
        took = time.monotonic() - t0
        assert endpoint.server_version(url, timeout_s=1) is None  # optional: no answer, no version
    finally:
        silent.close()
    assert silent.conns, "the client never connected"
    assert "unreachable (GET /v1/models" in str(e.value) and "timed out" in str(e.value)
    assert (e.value.file, e.value.field) == ("--endpoint", url) and "\n" not in str(e.value)
    assert took < 5


def test_declared_gpus_text_and_nvidia_smi_file(tmp_path):
    assert endpoint.declared_gpus(None) == []
    gpus = endpoint.declared_gpus("68 x NVIDIA GB300")
    assert len(gpus) == 68 and gpus[0] == {"name": "NVIDIA GB300"}
    f = tmp_path / "gpus.csv"
    f.write_text("NVIDIA GB300, 284208 MiB, 580.82\n\nNVIDIA GB300, 284208 MiB, 580.82\n")
    got = endpoint.declared_gpus(str(f))
    assert got == [{"name": "NVIDIA GB300", "memory": "284208 MiB", "driver": "580.82"}] * 2
    for bad in ("GB300", "0 x GB300", "x x GB300", "4 x "):
        with pytest.raises(InputError, match="COUNT x NAME"):
            endpoint.declared_gpus(bad)
    f.write_text(" , 1 MiB, 1\n")
    with pytest.raises(InputError, match="line 1: no GPU name"):
        endpoint.declared_gpus(str(f))


def _attach(monkeypatch, name: str, params: dict[str, str], urls: list[str], gpus: str | None):
    monkeypatch.setattr(endpoint, "served_model", lambda url, key=None: DSV41)
    monkeypatch.setattr(endpoint, "server_version", lambda url, key=None: "0.32.0")
    if gpus is None:
        monkeypatch.delenv(endpoint.SERVER_GPUS_ENV, raising=False)
    else:
        monkeypatch.setenv(endpoint.SERVER_GPUS_ENV, gpus)
    sc = scenario(name, params, check=False)
    return attach(sc, urls, params)


def test_attach_takes_model_and_limit_from_the_endpoint(monkeypatch):
    sc, server = _attach(
        monkeypatch,
        "single-user",
        {"input_len": "4096", "output_len": "1024"},
        ["http://router:8000"],
        "68 x NVIDIA GB300",
    )
    assert sc.model == "deepseek-ai/DeepSeek-V4.1-Flash"
    assert sc.served_model_name == "deepseek-ai/DeepSeek-V4.1-Flash"
    assert sc.max_model_len == 1_048_576
    assert server["vllm_version"] == "0.32.0" and server["same_host"] is False
    run = {"kind": "recorded", "server": server, "parameters": sc.parameters(), "hardware": {}}
    # the declared GB300s and the served model make the trace able to test the claims
    assert verdicts.can_test(run)
    assert provenance.hardware_label(run) == "68 x NVIDIA GB300 (declared for the endpoint)"
    # ... undeclared, it cannot, and says why
    run["server"] = dict(server, gpus=[])
    assert not verdicts.can_test(run)
    assert "not declared" in provenance.hardware_label(run)


def test_attach_keeps_explicit_parameters_and_still_checks_lengths(monkeypatch):
    p = {"served_model_name": "mine", "max_model_len": "2048", "input_len": "4096"}
    with pytest.raises(InputError, match="max_model_len"):
        _attach(monkeypatch, "single-user", p, ["http://h:1"], None)
    sc, _ = _attach(monkeypatch, "single-user", dict(p, input_len="512"), ["http://h:1"], None)
    assert (sc.served_model_name, sc.max_model_len) == ("mine", 2048)


def test_attach_refuses_endpoints_serving_different_models(monkeypatch):
    answers = {"http://a": DSV41, "http://b": dataclasses.replace(DSV41, id="other")}
    monkeypatch.setattr(endpoint, "served_model", lambda url, key=None: answers[url])
    monkeypatch.setattr(endpoint, "server_version", lambda url, key=None: None)
    sc = scenario("prefill-gain", {}, check=False)
    with pytest.raises(InputError, match="serve different models"):
        attach(sc, ["http://a", "http://b"], {})


def test_loopback_endpoint_keeps_the_machines_inventory(monkeypatch):
    _, server = _attach(monkeypatch, "single-user", {}, ["http://127.0.0.1:8000"], None)
    assert server["same_host"] is True
    run = {"server": server, "hardware": {"gpus": [{"name": "NVIDIA H200"}], "cpu_cores": 2}}
    assert verdicts.gpu_names(run) == ["NVIDIA H200"]


GENERATED = paths.ROOT / "env" / "cluster" / "generated" / "params"
#: what a rerun card adds to a params file on the command line (-p NAME VALUE)
ADDED = {"prefill-gain": {"endpoint_a": "http://baseline:8000"}}


@pytest.mark.parametrize("result", sorted(SCENARIOS))
def test_every_generated_params_file_fits_a_real_endpoint(monkeypatch, result):
    """The params file (plus what the rerun card adds) gives the recorder a plan whose prompts
    fit the endpoint's context and whose server count matches the URLs given."""
    doc = yaml.safe_load((GENERATED / f"{result}.yaml").read_text(encoding="utf-8"))
    doc.update(ADDED.get(result, {}))
    if result == "rack-scaling":  # its card records with `rackbook record` on two deployments
        from rackbook.book import rerun
        from rackbook.cluster import recipes, topology

        topo = topology.load_topology(paths.ROOT / "env/cluster/topology.yaml")
        doc.update(rerun.record_parameters(topo))
        doc["endpoints"] = [recipes.reference_endpoint(topo), topo.bench.endpoint]
    fields = {f.name for f in dataclasses.fields(SCENARIOS[result])}
    text = {
        k: ",".join(map(str, v)) if isinstance(v, list) else str(v)
        for k, v in doc.items()
        if k in fields
    }
    urls = [doc[k] for k in ("endpoint", "endpoint_a", "endpoint_b") if doc.get(k)]
    urls += list(doc.get("endpoints") or [])
    assert urls, f"{result}: the params file names no endpoint"
    sc, _ = _attach(monkeypatch, result, text, urls, "68 x NVIDIA GB300")
    phases = sc.phases()
    assert sum(p.servers for p in phases) == len(urls)
    assert all(len(p.points) > 0 for p in phases)


def test_server_field_is_documented_in_the_trace_format():
    from rackbook.core import schema

    assert "server" in schema.RUN_FIELDS
    assert "RACKBOOK_SERVER_GPUS" in schema.RUN_FIELDS["server"][1]


def test_tiny_model_check_skips_hub_ids(tmp_path):
    ensure_tiny_model("deepseek-ai/DeepSeek-V4.1-Flash")  # a hub id: nothing to check
    with pytest.raises(InputError, match="config.json"):
        ensure_tiny_model(str(tmp_path))
    assert Path(tmp_path).is_dir()


def test_decode_parity_against_a_remote_endpoint_leaves_the_offline_engine_out(monkeypatch):
    """Engine B would load the model on the client: against a remote endpoint it comes from its
    own run (`rackbook import offline-engine`), unless -p engines asks for it."""
    sc, _ = _attach(monkeypatch, "decode-parity", {}, ["http://router:8000"], None)
    assert sc.engines == ("serve",)
    sc, _ = _attach(monkeypatch, "decode-parity", {}, ["http://127.0.0.1:8000"], None)
    assert sc.engines == ("serve", "offline")
    sc, _ = _attach(
        monkeypatch, "decode-parity", {"engines": "serve,offline"}, ["http://h:1"], None
    )
    assert sc.engines == ("serve", "offline")
