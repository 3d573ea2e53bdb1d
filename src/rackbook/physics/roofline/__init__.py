"""Roofline arithmetic on catalog entries (:mod:`rackbook.inputs.catalogs`), no measurement,
one module per idea: KV-cache bytes (``kv``), weights (``weights``), a token's context reads
and attention FLOP (``context``), the FLOP ceiling (``compute``), batch-1 and speculative
decoding (``decode``), and what they share, the HBM floor among it (``common``). Callers read
every name from the package (``roofline.kv_bytes``).

Units are in the names (``_bytes``, ``_s``, ``tokens_per_s``, ``flops``); results are frozen
dataclasses with a ``formula`` showing the arithmetic. These are ceilings and floors, not
predictions: no kernel efficiency, communication or scheduling. Compute is mixed precision:
routed experts at their stored precision (FP4 on Blackwell; FP8 on Hopper, which has no FP4
tensor cores), the rest at the dense weights' (FP8). Context reads have two ends: sparse
attention scans every index key and reads the top-k rows; dense attention would read every
row of every consuming layer; a real kernel lies between.
"""

from __future__ import annotations

from rackbook.physics.roofline.common import (
    DENSE_BYTES_PER_PARAM,
    PHASES,
    Step,
    bandwidth_floor_step_s,
)
from rackbook.physics.roofline.compute import Ceiling, compute_ceiling_tokens_per_s
from rackbook.physics.roofline.context import (
    AttentionFlops,
    ContextGrowth,
    ContextReads,
    KvReads,
    attention_flops,
    context_growth,
    context_reads,
    decode_kv_reads,
    phase_layers,
)
from rackbook.physics.roofline.decode import (
    Batch1Decode,
    batch1_decode_ceiling_tokens_per_s,
    distinct_experts,
    fewest_experts,
)
from rackbook.physics.roofline.kv import (
    Fit,
    KvBytes,
    cli_kv_bytes,
    kv_bytes,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_row_values,
    kv_rows_per_token,
    sequences_fitting,
    window_bytes_per_sequence,
)
from rackbook.physics.roofline.weights import (
    Served,
    Storage,
    WeightSplit,
    draft_bytes,
    expert_bytes,
    moe_layers,
    served,
    storage,
    weight_split,
)
