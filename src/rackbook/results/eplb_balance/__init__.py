"""Data for the eplb-balance result: the SYNTHETIC default trace, loads from traces, scoring.

No DeepSeek-V4.1-Flash routing statistics are public: the default input is a seeded synthetic
routing model (:func:`rackbook.physics.eplb.synthetic_loads`, Zipf-like popularity per layer)
whose skew is calibrated so that static placement matches the claim's "before" balancedness;
what EPLB then does is the model's prediction, not a measurement. One trace window is one
decode step's expert load (``batch_per_rank x ep_size x top_k`` assignments per MoE layer, as
vLLM's ``EplbState.step`` counts); EPLB is fitted on the first ``fit_windows`` steps and scored
out of sample on the rest. Loads are token-expert assignments; balancedness and ratios are
dimensionless; fractions are 0..1 unless a name ends in ``_pct``. Modules: ``synthetic``,
``measure``, ``readings``, ``chapter``.
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
