"""Roofline arithmetic on catalog entries, no measurement, one module per idea (``kv``,
``weights``, ``context``, ``compute``, ``decode``, ``common``); callers read every name from
the package (``roofline.kv_bytes``)."""

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
