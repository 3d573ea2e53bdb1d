"""rackbook.cluster.topology: the one topology file and the recipes generated from it.

Expected numbers are worked out by hand from env/cluster/topology.yaml: prefill DEP4 on 1 node,
decode DEP64 on 64 / 4 = 16 nodes, 68 GPUs behind the router; the one-node reference DEP4 on the
18th node: 18 nodes and the rack's 72 GPUs in all.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from rackbook import paths
from rackbook.cluster import recipes, topology
from rackbook.errors import InputError

DEFAULT = paths.ROOT / "env" / "cluster" / "topology.yaml"
GENERATED = paths.ROOT / "env" / "cluster" / "generated"
CONTAINERFILE = paths.ROOT / "env" / "cluster" / "Containerfile"
HF_ID = "deepseek-ai/DeepSeek-V4.1-Flash"


@pytest.fixture(scope="module")
def topo() -> topology.Topology:
    return topology.load_topology(DEFAULT)


def _variant(tmp_path: Path, edit) -> Path:
    """A copy of the default topology with ``edit(data)`` applied."""
    data = yaml.safe_load(DEFAULT.read_text())
    edit(data)
    p = tmp_path / "topology.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def _opt(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


# ---------------------------------------------------------------------------------------------
# the default topology


def test_default_topology_numbers(topo):
    assert topo.file == "env/cluster/topology.yaml"
    assert topo.model.hf_id == HF_ID
    assert {n: (w.role, w.gpus, topo.nodes(n)) for n, w in topo.workers.items()} == {
        "prefill": ("prefill", 4, 1),
        "decode": ("decode", 64, 16),
        "reference": ("reference", 4, 1),
    }
    assert (topo.total_gpus, topo.total_nodes, topo.routed_gpus) == (72, 18, 68)
    assert topo.node_offset("prefill") == 0 and topo.node_offset("decode") == 1
    assert topo.node_offset("reference") == 17 and topo.reference_worker() == "reference"


def test_serve_commands_per_node_rank(topo):
    cmds = recipes.serve_commands(topo)
    assert [len(cmds["prefill"]), len(cmds["decode"])] == [1, 16]
    for name, dp in (("prefill", "4"), ("decode", "64")):
        for rank, cmd in enumerate(cmds[name]):
            words = shlex.split(cmd)
            assert words[:3] == ["vllm", "serve", HF_ID]
            assert _opt(words, "--data-parallel-size") == dp
            assert _opt(words, "--data-parallel-size-local") == "4"
            assert _opt(words, "--tensor-parallel-size") == "1"
            assert "--enable-expert-parallel" in words and "--enable-eplb" in words
            assert json.loads(_opt(words, "--kv-transfer-config")) == {
                "kv_connector": "NixlConnector",
                "kv_role": "kv_both",
            }
            eplb = json.loads(_opt(words, "--eplb-config"))
            assert eplb["window_size"] == 1000 and eplb["step_interval"] == 3000
            assert eplb["log_balancedness"] is True
            # (384 routed + R) experts spread evenly: R = 32 on 4 ranks, 64 on 64 ranks
            assert eplb["num_redundant_experts"] == {"prefill": 32, "decode": 64}[name]
            leader = f"${name.upper()}_LEADER_IP"
            assert _opt(words, "--data-parallel-address") == leader
            if rank == 0:
                assert "--headless" not in words
                assert _opt(words, "--port") == {"prefill": "8100", "decode": "8200"}[name]
            else:
                assert "--headless" in words and "--port" not in words
                assert _opt(words, "--data-parallel-start-rank") == str(4 * rank)
    # the last decode node holds DP ranks 60..63
    assert _opt(shlex.split(cmds["decode"][15]), "--data-parallel-start-rank") == "60"


def test_generation_is_deterministic(topo, tmp_path):
    again = topology.load_topology(DEFAULT)
    assert recipes.render_recipes(topo) == recipes.render_recipes(again)
    a = recipes.write_recipes(topo, tmp_path / "a")
    b = recipes.write_recipes(again, tmp_path / "b")
    assert [str(p.relative_to(tmp_path / "a")) for p in a] == list(recipes.RECIPE_FILES)
    for pa, pb in zip(a, b, strict=True):  # the Slurm script names its own folder
        assert pa.read_bytes().replace(b"/a/", b"/b/") == pb.read_bytes()


def test_committed_recipes_are_current(topo):
    """env/cluster/generated/ is exactly what `rackbook recipes` writes now (never stale)."""
    want = recipes.render_recipes(topo)
    have = sorted(
        str(p.relative_to(GENERATED))
        for p in GENERATED.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
    assert have == sorted(want), "run `rackbook recipes` and commit env/cluster/generated/"
    for name, text in want.items():
        assert (GENERATED / name).read_text(encoding="utf-8") == text, (
            f"env/cluster/generated/{name} is stale: run `rackbook recipes`"
        )


def test_reference_worker_is_outside_the_router_and_the_kv_connector(topo):
    """The one-node reference serves the whole model on its tray: no KV connector, no router
    entry, reached at its own leader."""
    (cmd,) = recipes.serve_commands(topo)["reference"]
    words = shlex.split(cmd)
    assert "--kv-transfer-config" not in words and _opt(words, "--data-parallel-size") == "4"
    assert "--kv-transfer-config" in shlex.split(recipes.serve_commands(topo)["prefill"][0])
    urls = {n: f"http://{n}:{w.port}" for n, w in topo.workers.items()}
    assert "http://reference:8300" not in recipes.router_argv(topo, urls)
    assert recipes.reference_endpoint(topo) == "http://dsv41-flash-reference-api:8300"


def test_slurm_script_requests_18_nodes_of_4(topo):
    s = recipes.slurm_script(topo)
    assert re.findall(r"^#SBATCH --nodes=(\d+)$", s, re.M) == ["18"]
    assert re.findall(r"^#SBATCH --gpus-per-node=(\d+)$", s, re.M) == ["4"]
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in s
    assert 'PREFILL_NODES=("${NODES[@]:0:1}")' in s
    assert 'DECODE_NODES=("${NODES[@]:1:16}")' in s
    assert 'REFERENCE_NODES=("${NODES[@]:17:1}")' in s
    # every serve command appears verbatim, once, in the script
    for cmds in recipes.serve_commands(topo).values():
        for cmd in cmds:
            assert s.count(f") exec {cmd} ;;") == 1
    assert "vllm-router --vllm-pd-disaggregation" in s
    assert 'wait_healthy "http://${DECODE_LEADER_IP}:8200"' in s
    subprocess.run(["bash", "-n"], input=s, text=True, check=True)


def _shim(folder: Path, name: str, body: str) -> None:
    p = folder / name
    p.write_text("#!/bin/bash\n" + body)
    p.chmod(0o755)


def test_slurm_script_runs_with_stand_ins(topo, tmp_path):
    """Run the sbatch script with stand-ins for srun, scontrol, getent, curl, vllm, vllm-router.

    Every node's stand-in `vllm` writes its argv to its log; the router stand-in exits at once,
    which ends the script (exit 1: "a process exited"). Checks node placement and argv.
    """
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _shim(bin_, "scontrol", 'for i in $(seq 0 17); do echo "gb$i"; done\n')
    _shim(bin_, "getent", 'echo "10.0.0.${2#gb} STREAM $2"\n')
    # curl: "healthy" once every node's stand-in vllm has written its argv (synchronisation only)
    _shim(
        bin_,
        "curl",
        'for _ in $(seq 600); do n=0; for f in "$LOGS"/*-*.log; do [[ -s $f ]] && n=$((n + 1)); '
        "done; (( n >= 18 )) && exit 0; sleep 0.05; done; exit 1\n",
    )
    _shim(bin_, "hostname", 'echo "10.9.9.9"\n')
    # srun: drop options (all --x or --x=y), keep the node name, exec the command
    _shim(
        bin_,
        "srun",
        'node=""\nwhile [[ $1 == --* ]]; do [[ $1 == --nodelist=* ]] && node=${1#--nodelist=}; '
        'shift; done\nexport NODE="$node"\nexec "$@"\n',
    )
    # vllm: its node, IP and argv in one write, then stay up until the script ends it
    _shim(
        bin_,
        "vllm",
        'out="node=$NODE ip=$VLLM_HOST_IP"; for a in "$@"; do out+=$\'\\n\'"$a"; done\n'
        'printf "%s\\n" "$out"\nexec sleep 30\n',
    )
    _shim(bin_, "vllm-router", 'printf "%s\\n" "$@"\nexit 0\n')
    _shim(bin_, "nvidia-smi", 'echo "NVIDIA GB300, 284208 MiB, 580.82"\n')
    script = tmp_path / "job.sbatch"
    script.write_text(recipes.slurm_script(topo))
    logs = tmp_path / "logs"
    env = {
        "PATH": f"{bin_}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "SLURM_JOB_NODELIST": "gb[0-17]",
        "SLURM_JOB_ID": "1",
        "LOGS": str(logs),
    }
    res = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 1, res.stderr
    assert "endpoint: http://10.0.0.0:8000" in res.stdout
    assert (logs / "endpoint").read_text().strip() == "http://10.0.0.0:8000"
    # the reference worker is reached directly, at its leader (node 17)
    assert (logs / "reference-endpoint").read_text().strip() == "http://10.0.0.17:8300"
    # the GPU inventory the client declares with RACKBOOK_SERVER_GPUS
    assert (logs / "gpus.csv").read_text() == "NVIDIA GB300, 284208 MiB, 580.82\n"
    for name, cmds in recipes.serve_commands(topo).items():
        offset = topo.node_offset(name)
        leader_ip = f"10.0.0.{offset}"
        for rank, cmd in enumerate(cmds):
            lines = (logs / f"{name}-{rank}.log").read_text().splitlines()
            assert lines[0] == f"node=gb{offset + rank} ip=10.9.9.9"
            want = shlex.split(cmd.replace(f"${recipes.leader_var(name)}", leader_ip))
            assert ["vllm", *lines[1:]] == want
    router = (logs / "router.log").read_text().splitlines()
    assert router[router.index("--prefill") + 1] == "http://10.0.0.0:8100"
    assert router[router.index("--decode") + 1] == "http://10.0.0.1:8200"


def test_kubernetes_manifest_structure_and_gpus(topo):
    docs = [d for d in yaml.safe_load_all(recipes.kubernetes_manifest(topo)) if d is not None]
    for d in docs:
        assert {"apiVersion", "kind", "metadata", "spec"} <= set(d)
        assert d["metadata"]["name"] and d["metadata"]["namespace"] == "rackbook"
    kinds = [d["kind"] for d in docs]
    assert kinds.count("LeaderWorkerSet") == 3 and kinds.count("Deployment") == 1
    total = 0
    cmds = recipes.serve_commands(topo)
    for d in docs:
        if d["kind"] != "LeaderWorkerSet":
            continue
        name = d["metadata"]["labels"]["app.kubernetes.io/component"]
        t = d["spec"]["leaderWorkerTemplate"]
        assert t["size"] == {"prefill": 1, "decode": 16, "reference": 1}[name]
        pods = [t["workerTemplate"]] + ([t["leaderTemplate"]] if "leaderTemplate" in t else [])
        for pod in pods:
            (c,) = pod["spec"]["containers"]
            assert c["resources"]["limits"] == {"nvidia.com/gpu": 4}
            assert c["resources"]["requests"] == {"nvidia.com/gpu": 4}
        total += t["size"] * 4
        # the pods run the same commands as serve_commands, leader address and rank substituted
        lead = t.get("leaderTemplate", t["workerTemplate"])["spec"]["containers"][0]["args"][0]
        var = f"${recipes.leader_var(name)}"
        assert lead == "exec " + cmds[name][0].replace(var, '"$POD_IP"')
        if "leaderTemplate" in t:
            work = t["workerTemplate"]["spec"]["containers"][0]["args"][0]
            for rank in range(1, t["size"]):
                got = work.replace('"$((LWS_WORKER_INDEX * 4))"', str(4 * rank))
                assert got == "exec " + cmds[name][rank].replace(var, '"$LWS_LEADER_ADDRESS"')
    assert total == 72
    router_svc = [
        d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "dsv41-router"
    ]
    assert router_svc[0]["spec"]["ports"][0]["port"] == 8000


def test_notebook_parameters_match_the_recipes(topo):
    nb = recipes.notebook_parameters(topo)
    assert nb == {
        "endpoint": "http://dsv41-router:8000",
        "num_gpus": 68,
        "gpus_per_node": 4,
        "model": HF_ID,
        "catalog_model": "deepseek-v4.1-flash",
        "prefill_gpus": 4,
        "decode_gpus": 64,
    }
    # no drift: the same numbers drive the Slurm job and the serve commands
    s = recipes.slurm_script(topo)
    nodes = int(re.search(r"^#SBATCH --nodes=(\d+)$", s, re.M).group(1))
    per_node = int(re.search(r"^#SBATCH --gpus-per-node=(\d+)$", s, re.M).group(1))
    assert nodes * per_node == nb["num_gpus"] + 4 and per_node == nb["gpus_per_node"]
    dp = [
        int(_opt(shlex.split(c[0]), "--data-parallel-size"))
        for name, c in recipes.serve_commands(topo).items()
        if name != "reference"  # one tray outside the router
    ]
    assert sum(dp) == nb["num_gpus"] == nb["prefill_gpus"] + nb["decode_gpus"]
    assert json.loads((GENERATED / "notebook-parameters.json").read_text()) == nb


def test_containerfile_matches_topology(topo):
    text = CONTAINERFILE.read_text()
    assert re.findall(r"^FROM (\S+)$", text, re.M) == [f"{topo.vllm.image}:{topo.vllm.tag}"]
    assert f'"{topo.router.package}"' in text


# ---------------------------------------------------------------------------------------------
# bad topologies


def _set(path: str, value: Any):
    def edit(data: dict) -> None:
        keys = path.split(".")
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (
            _set("workers.decode.gpus", 72),
            "workers",
            "prefill 4 + decode 72 + reference 4 = 80 GPUs > the 72 GPUs of gb300-nvl72",
        ),
        (_set("workers.decode.gpus", 62), "workers.decode.gpus", "not a whole number of 4-GPU"),
        (_set("workers.reference.gpus", 8), "workers.reference.gpus", "one node (4 GPUs), got 8"),
        (_set("model.catalog_id", "deepseek-v9"), "model.catalog_id", "unknown model"),
        (_set("system.catalog_id", "gb999"), "system.catalog_id", "unknown system"),
        (_set("workers.decode.colour", "red"), "workers.decode.colour", "unknown field"),
        (_set("bench.num_gpus", 72), "bench.num_gpus", "differs from the workers' 68"),
        (_set("bench.endpoint", "http://dsv41-router:9000"), "bench.endpoint", "port 9000"),
        (_set("vllm.version", "0.29.9"), "vllm.version", "needs vLLM >= 0.30.0"),
        (_set("vllm.tag", "latest"), "vllm.tag", "is not 'v0.32.0'"),
        (_set("system.gpus_per_node", 8), "system.gpus_per_node", "gpus_per_tray 4"),
        (
            _set("workers.decode.num_redundant_experts", 10),
            "workers.decode.num_redundant_experts",
            "(384 routed + 10 redundant)",
        ),
        (_set("workers.prefill.role", "decode"), "workers", "no worker with role 'prefill'"),
    ],
)
def test_bad_topology_names_file_and_field(tmp_path, edit, field, problem):
    p = _variant(tmp_path, edit)
    with pytest.raises(InputError) as exc:
        topology.load_topology(p)
    err = exc.value
    assert err.file == str(p)
    assert err.field == field
    assert problem in err.problem


def test_a_full_rack_is_allowed(tmp_path):
    # 4 + 68 = 72 GPUs = the whole rack; (384 + 24) / 68 = 6 experts per rank
    def edit(data: dict) -> None:
        del data["workers"]["reference"]
        data["workers"]["decode"]["gpus"] = 68
        data["workers"]["decode"]["num_redundant_experts"] = 24
        data["bench"]["num_gpus"] = 72

    t = topology.load_topology(_variant(tmp_path, edit))
    assert (t.total_gpus, t.total_nodes, t.nodes("decode")) == (72, 18, 17)
    assert "#SBATCH --nodes=18\n" in recipes.slurm_script(t)


def test_yaml_syntax_error_names_line(tmp_path):
    p = tmp_path / "topology.yaml"
    p.write_text("schema_version: 1\nworkers: [unclosed\n")
    with pytest.raises(InputError) as exc:
        topology.load_topology(p)
    assert exc.value.file == str(p)
    assert exc.value.field.startswith("line ")
    assert "YAML syntax error" in exc.value.problem


def test_cli_writes_recipes(run_cli, tmp_path):
    code, out, err = run_cli("recipes", "--topology", str(DEFAULT), "-o", str(tmp_path / "g"))
    assert code == 0, err
    got = sorted(str(p.relative_to(tmp_path / "g")) for p in (tmp_path / "g").rglob("*.*"))
    assert got == sorted([*recipes.RECIPE_FILES, ".rackbook-output"])  # recipes and the marker
    assert "72 of 72 GPUs, 18 nodes" in out


def test_cli_bad_topology_exit_2_one_line(run_cli, tmp_path):
    p = _variant(tmp_path, _set("workers.decode.gpus", 62))
    out_dir = tmp_path / "g"
    code, out, err = run_cli("recipes", "--topology", str(p), "-o", str(out_dir))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert f"{p}: workers.decode.gpus:" in err
    assert not out_dir.exists()  # nothing written


# ---------------------------------------------------------------------------------------------
# the commands against vLLM's own `vllm serve` parser (live venv; slow: ~15 s to import vLLM)

_PARSE = r"""
import json, shlex, sys
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser
root = FlexibleArgumentParser()
sub = root.add_subparsers(dest="cmd")
parser = ServeSubcommand().subparser_init(sub)
out = []
for line in json.load(sys.stdin):
    words = shlex.split(line)
    assert words[:2] == ["vllm", "serve"], words
    a = root.parse_args(words[1:])
    out.append({k: getattr(a, k) for k in (
        "model_tag", "headless", "port", "api_server_count", "data_parallel_size",
        "data_parallel_size_local", "data_parallel_start_rank", "data_parallel_address",
        "data_parallel_rpc_port", "enable_expert_parallel", "enable_eplb",
        "tensor_parallel_size")} | {
        "eplb": dict(a.eplb_config) if isinstance(a.eplb_config, dict) else vars(a.eplb_config),
        "kv": None if a.kv_transfer_config is None else {
            "connector": a.kv_transfer_config.kv_connector,
            "role": a.kv_transfer_config.kv_role},
    })
json.dump(out, sys.stdout, default=str)
"""


@pytest.mark.live
def test_commands_parse_with_vllm_serve(topo):
    py = Path(os.environ.get("RACKBOOK_LIVE_PYTHON", paths.ROOT / ".venv-live" / "bin" / "python"))
    if not py.is_file():
        pytest.skip(f"no live interpreter at {py} (bash env/live/setup.sh)")
    cmds = recipes.serve_commands(topo)
    lines = [c.replace(f"${recipes.leader_var(n)}", "10.0.0.1") for n in cmds for c in cmds[n][:2]]
    res = subprocess.run(
        [str(py), "-c", _PARSE],
        input=json.dumps(lines),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "VLLM_NO_USAGE_STATS": "1", "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    parsed = json.loads(res.stdout.strip().splitlines()[-1])
    prefill0, decode0, decode1, reference0 = parsed  # the reference: one node, one command
    assert prefill0["model_tag"] == HF_ID and prefill0["data_parallel_size"] == 4
    assert prefill0["port"] == 8100 and prefill0["api_server_count"] == 4
    assert decode0["data_parallel_size"] == 64 and decode0["data_parallel_size_local"] == 4
    assert decode0["headless"] is False and decode1["headless"] is True
    assert decode1["data_parallel_start_rank"] == 4
    assert decode1["data_parallel_address"] == "10.0.0.1"
    assert decode1["data_parallel_rpc_port"] == 13345
    # the one-node reference sits outside the router: the whole model on one tray, no KV
    # connector (nothing moves KV to or from it)
    assert reference0["data_parallel_size"] == 4 and reference0["headless"] is False
    assert reference0["kv"] is None
    for p in parsed:
        assert p["enable_expert_parallel"] and p["enable_eplb"]
        assert p["tensor_parallel_size"] == 1
        if p is not reference0:
            assert p["kv"] == {"connector": "NixlConnector", "role": "kv_both"}
        assert p["eplb"]["window_size"] == 1000 and p["eplb"]["log_balancedness"] is True
    assert decode0["eplb"]["num_redundant_experts"] == 64
    assert prefill0["eplb"]["num_redundant_experts"] == 32


def _k8s_resources(manifest: str) -> list[dict]:
    """Every resource of a manifest that a Kubernetes schema covers: the documents themselves,
    and each LeaderWorkerSet's pod templates wrapped as core PodTemplates (the LeaderWorkerSet
    CRD itself is not in the upstream schemas)."""
    out = []
    for d in yaml.safe_load_all(manifest):
        if d is None:
            continue
        if d["kind"] != "LeaderWorkerSet":
            out.append(d)
            continue
        t = d["spec"]["leaderWorkerTemplate"]
        for role in ("leaderTemplate", "workerTemplate"):
            if role in t:
                meta = {"name": f"{d['metadata']['name']}-{role.lower()}", "namespace": "rackbook"}
                out.append({"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta,
                            "template": t[role]})  # fmt: skip
    return out


def test_kubernetes_manifest_validates_against_the_schemas(topo):
    """Offline validation (kubernetes-validate's bundled schemas, strict: no unknown field) of
    every Deployment, Service and pod template the recipes generate."""
    kv = pytest.importorskip("kubernetes_validate")
    resources = _k8s_resources(recipes.kubernetes_manifest(topo))
    assert {r["kind"] for r in resources} >= {"Deployment", "Service", "PodTemplate"}
    for r in resources:
        kv.validate(r, kv.latest_version(), strict=True)


def test_kubernetes_validation_catches_a_bad_field(topo):
    kv = pytest.importorskip("kubernetes_validate")
    (bad,) = [r for r in _k8s_resources(recipes.kubernetes_manifest(topo))
              if r["kind"] == "Deployment"]  # fmt: skip
    bad["spec"]["replicas"] = "two"
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, kv.latest_version(), strict=True)


def test_params_files_use_only_declared_names(topo, tmp_path):
    """Every generated params file runs: its names are parameters its notebook declares, it
    asks for live mode, and the runner reads it (a YAML mapping)."""
    import papermill

    from rackbook import paths
    from rackbook.book.runner import read_params_file

    written = recipes.write_recipes(topo, tmp_path / "g")
    files = [p for p in written if p.parent.name == "params"]
    assert sorted(p.stem for p in files) == sorted(paths.RESULTS)
    for f in files:
        declared = papermill.inspect_notebook(str(paths.NOTEBOOKS / f"{f.stem}.ipynb"))
        values = read_params_file(f)
        # rack-scaling reads the trace its card records against two deployments
        assert values["source"] == ("trace" if f.stem == "rack-scaling" else "live")
        assert set(values) <= set(declared), (f.stem, set(values) - set(declared))
    eplb = read_params_file(tmp_path / "g" / "params" / "eplb-balance.yaml")
    assert (eplb["ep_size"], eplb["redundant"]) == (64, 64)  # decode DEP64, 64 redundant
    ctx = read_params_file(tmp_path / "g" / "params" / "context-latency.yaml")
    assert ctx["context_lengths"] == [128_000, 256_000, 512_000, 855_000]


# ---------------------------------------------------------------------------------------------
# a user's own cluster: recipes where -o says, optional sections, nodes outside the catalog


def test_the_slurm_script_names_the_folder_it_was_written_to(topo, tmp_path, run_cli):
    out = tmp_path / "my recipes"
    code, _, err = run_cli("recipes", "--topology", str(DEFAULT), "-o", str(out))
    assert code == 0, err
    text = (out / "slurm.sbatch").read_text()
    quoted = f"'{out}/slurm.sbatch'"
    assert f"# Submit from the repository root: sbatch {quoted}\n" in text
    assert "env/cluster/generated" not in text
    default = recipes.render_recipes(topo)["slurm.sbatch"]  # the checkout's folder
    assert "sbatch env/cluster/generated/slurm.sbatch" in default


def _drop(*sections: str):
    def edit(data: dict) -> None:
        for section in sections:
            del data[section]

    return edit


def test_a_slurm_only_cluster_needs_no_kubernetes_section(tmp_path):
    t = topology.load_topology(_variant(tmp_path, _drop("kubernetes")))
    assert t.kubernetes is None
    written = recipes.write_recipes(t, tmp_path / "g")
    names = {str(p.relative_to(tmp_path / "g")) for p in written}
    assert "slurm.sbatch" in names and "kubernetes.yaml" not in names
    assert not (tmp_path / "g" / "kubernetes.yaml").exists()
    k8s_only = topology.load_topology(_variant(tmp_path, _drop("slurm")))
    names = set(recipes.render_recipes(k8s_only))
    assert "kubernetes.yaml" in names and "slurm.sbatch" not in names


def _two_nodes(data: dict) -> None:
    """Two 8-GPU B300 nodes, one worker each: a cluster no catalog system describes."""
    data["system"] = {"gpu": "b300", "nodes": 2, "gpus_per_node": 8}
    data["workers"]["prefill"]["gpus"] = 8
    data["workers"]["decode"]["gpus"] = 8
    data["workers"]["decode"]["num_redundant_experts"] = 0
    del data["workers"]["reference"]
    data["bench"].update(num_gpus=16, gpus_per_node=8)


def test_a_two_node_cluster_is_described_without_editing_the_catalog(tmp_path, run_cli):
    t = topology.load_topology(_variant(tmp_path, _two_nodes))
    assert (t.total_gpus, t.total_nodes, t.system_gpus, t.gpu_id) == (16, 2, 16, "b300")
    assert t.system_label == "2 nodes of 8 B300"
    assert "#SBATCH --nodes=2\n" in recipes.slurm_script(t)
    assert "#SBATCH --gpus-per-node=8\n" in recipes.slurm_script(t)
    files = recipes.params_files(t)
    assert files["rack-scaling"]["gpus_per_replica"] == 16
    assert {files[r]["gpu_id"] for r in ("decode-parity", "rack-scaling")} == {"b300"}
    code, out, err = run_cli(
        "recipes", "--topology", str(tmp_path / "topology.yaml"), "-o", str(tmp_path / "g")
    )
    assert code == 0, err
    assert "16 of 16 GPUs, 2 nodes" in out

    def too_many(data: dict) -> None:
        _two_nodes(data)
        data["system"]["nodes"] = 1

    with pytest.raises(InputError) as exc:
        topology.load_topology(_variant(tmp_path, too_many))
    assert exc.value.field == "workers" and "16 GPUs > the 8 GPUs of 1 node of 8 B300" in str(
        exc.value
    )


@pytest.mark.parametrize(
    ("system", "field", "problem"),
    [
        ({"catalog_id": "gb999", "gpus_per_node": 4}, "system.catalog_id",
         "data/hardware.yaml: unknown system; known:"),
        ({"catalog_id": "gb999", "gpus_per_node": 4}, "system.catalog_id",
         "or describe the nodes without the catalog: system.gpu (a GPU id), system.nodes"),
        ({"gpu": "b999", "nodes": 2, "gpus_per_node": 8}, "system.gpu",
         "data/hardware.yaml: unknown GPU"),
        ({"gpu": "b300", "gpus_per_node": 8}, "system", "or gpu (a GPU id of data/hardware.yaml)"),
        ({"catalog_id": "gb300-nvl72", "gpu": "b300", "nodes": 2, "gpus_per_node": 4},
         "system.catalog_id", "not both"),
    ],
)  # fmt: skip
def test_an_unknown_system_names_the_catalog_file(tmp_path, system, field, problem):
    with pytest.raises(InputError) as exc:
        topology.load_topology(_variant(tmp_path, _set("system", system)))
    assert exc.value.field == field and problem in exc.value.problem, str(exc.value)
