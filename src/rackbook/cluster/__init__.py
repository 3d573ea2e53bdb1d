"""Cluster recipes: the topology file (``topology``) rendered into Slurm, Kubernetes and serve
commands."""
