"""eplb-balance: with no public routing statistics, the default trace is a seeded synthetic model
calibrated to the claim's "before"; one window is one decode step's expert load. Modules:
``synthetic``, ``measure``, ``chapter``."""

# ruff: noqa: F401 (the package re-exports the names notebooks, figures and the contract use)
from __future__ import annotations

from rackbook.results.eplb_balance.chapter import (
    FIGURES,
    RESULT,
    SWEEPS,
    Analysis,
    Params,
    analyse,
    outcome,
)

# This chapter's entries of the book's tables (rackbook.results.registry.ChapterTable).
DECISIVE: dict[str, tuple[str, ...]] = {
    "eplb-balance.before": ("metric", "model"),
    "eplb-balance.after": ("metric", "model"),
    "eplb-balance.recovered": ("metric", "model"),
}
READING_NOTES = {
    "eplb-balance.recovered": "no published share of the uniform-routing potential recovered"
}
RERUN_NEEDS = {
    "eplb-balance": "Balancedness is read from the servers' EPLB log lines (`log_balancedness` in "
    "the recipe's `--eplb-config`): `server_log` is the decode leader's log, which the Slurm "
    "script writes under `logs/JOBID/`."
}
#: The sbatch's decode leader log.
RERUN_ARGS = {"eplb-balance": (("server_log", "logs/JOBID/decode-0.log"),)}
