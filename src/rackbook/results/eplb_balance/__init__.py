"""Data for the eplb-balance result: the SYNTHETIC default trace, loads from traces, scoring.

No DeepSeek-V4.1-Flash routing statistics are public, so the default input is a documented
synthetic routing model (:func:`rackbook.physics.eplb.synthetic_loads`: Zipf-like expert popularity
per layer over a seeded permutation, multinomial draws). Its one free parameter, the skew, is
calibrated so that *static* placement at the chosen EP size has balancedness equal to the
claim's "before" figure (read from the claims registry). Everything EPLB then does to that load
is a prediction of the model, not a measurement.

Granularity. One trace *window* is the expert load of one decode forward pass (engine step):
``batch_per_rank x ep_size`` tokens, each routed to ``top_k`` experts, so every MoE layer
counts ``batch_per_rank x ep_size x top_k`` token-expert assignments. vLLM logs balancedness
per forward pass in the same way (``EplbState.step``, from ``expert_load_pass``), and fits EPLB
on the sum over a sliding window of steps (``window_size``, 1000 by default). Here EPLB is fitted
on the sum of the first ``fit_windows`` steps and scored on each later step, so the score is out
of sample.

Units: loads are token-expert assignments ("tokens", as vLLM counts them); balancedness and
throughput relative to uniform routing are dimensionless; fractions are dimensionless (0..1)
unless a name ends in ``_pct``.

Modules: ``synthetic`` (the default trace, its command line), ``measure``, ``readings``,
``chapter``.
"""

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
