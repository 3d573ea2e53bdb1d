"""``rackbook recipes``: every recipe generated from a topology, written at once."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rackbook import paths
from rackbook.cluster.commands import serve_commands_sh, units, workers_text
from rackbook.cluster.kubernetes import kubernetes_manifest
from rackbook.cluster.notebook_params import notebook_parameters, params_files, params_yaml
from rackbook.cluster.slurm import slurm_script
from rackbook.cluster.topology import DEFAULT_TOPOLOGY, Topology, load_topology
from rackbook.core import fsio
from rackbook.core.units import plural
from rackbook.inputs import loader

#: Where ``rackbook recipes`` writes by default.
DEFAULT_OUTPUT = "env/cluster/generated"

#: The files :func:`write_recipes` writes, in this order.
RECIPE_FILES: tuple[str, ...] = (
    "serve-commands.sh",
    "slurm.sbatch",
    "kubernetes.yaml",
    "notebook-parameters.json",
    *(f"params/{r}.yaml" for r in paths.RESULTS),
)


def render_recipes(topo: Topology, where: str = DEFAULT_OUTPUT) -> dict[str, str]:
    """file name -> text of every generated file (``where``: the folder, as Slurm names it)."""
    texts = {
        "serve-commands.sh": serve_commands_sh(topo),
        "slurm.sbatch": slurm_script(topo, where) if topo.slurm is not None else None,
        "kubernetes.yaml": kubernetes_manifest(topo) if topo.kubernetes is not None else None,
        "notebook-parameters.json": json.dumps(notebook_parameters(topo), indent=2) + "\n",
        **{f"params/{r}.yaml": params_yaml(topo, r, v) for r, v in params_files(topo).items()},
    }
    assert tuple(texts) == RECIPE_FILES
    return {name: text for name, text in texts.items() if text is not None}


def write_recipes(topo: Topology, out_dir: str | Path = DEFAULT_OUTPUT) -> list[Path]:
    """Write every generated file to ``out_dir``, replaced atomically; a folder holding
    anything rackbook did not write is refused (:class:`InputError`, field ``output``)."""
    out = fsio.check_output_folder(paths.resolve(out_dir))
    fsio.check_replaceable(out, "recipes", "output")
    texts = render_recipes(topo, loader.display_path(out))
    with fsio.atomic_dir(out, kind="recipes") as tmp:
        tmp.chmod(0o755)
        for name, text in texts.items():
            (tmp / name).parent.mkdir(exist_ok=True)
            (tmp / name).write_text(text, encoding="utf-8")
        if "slurm.sbatch" in texts:
            (tmp / "slurm.sbatch").chmod(0o755)
        (tmp / "serve-commands.sh").chmod(0o644)
    return [out / name for name in texts]


def cli_recipes(args: argparse.Namespace) -> int:
    """``rackbook recipes [--topology FILE] [-o DIR]``: regenerate the cluster recipes."""
    topo_path = Path(args.topology).absolute() if args.topology else DEFAULT_TOPOLOGY
    out = Path(args.output).absolute() if args.output else DEFAULT_OUTPUT
    fsio.refuse_overlap({"-o": out}, {"--topology": topo_path})  # never replace the input
    topo = load_topology(topo_path)
    written = write_recipes(topo, out)
    for p in written:
        print(loader.display_path(p))
    of = (
        f"{topo.total_gpus} of {topo.system_gpus} GPUs"
        if topo.system_gpus is not None
        else units(topo, topo.total_gpus)
    )
    print(
        f"{topo.model.hf_id}: {workers_text(topo, roles=False)}; {of}, "
        f"{plural(topo.total_nodes, 'node')}; endpoint {topo.bench.endpoint}"
    )
    return 0
