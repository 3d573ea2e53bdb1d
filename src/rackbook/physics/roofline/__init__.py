"""Roofline arithmetic: KV-cache bytes, weights, compute ceilings, bandwidth floors, the bytes a
decode step reads from its context, and speculative decoding's verify cost.

Plain arithmetic on catalog entries (:mod:`rackbook.inputs.catalogs`); no measurement. Units are
in the names: ``_bytes`` (bytes), ``_s`` (seconds), ``tokens_per_s`` (tokens/s), ``flops`` (FLOP
or FLOP/s as documented). Results where several numbers belong together are small frozen
dataclasses with a ``formula`` string showing the arithmetic, for the chapters to display.

These are ceilings and floors, not predictions: they ignore kernel efficiency, communication,
scheduling and (unless said) attention FLOP. Each says which assumption it uses.

- **Compute** is mixed precision: the routed experts run at the precision they are stored in
  (FP4 on Blackwell), everything else (attention, shared expert, head) at the dense weights'
  precision (FP8); a GPU without FP4 tensor cores (Hopper) runs FP4 weights at FP8.
- **Context reads** per decode step have two ends. With the model's sparse attention, a step
  scans every index key of each index source's cache (this grows with the context) and then
  reads only the top-k rows in each consuming layer (a fixed amount). If every consuming layer
  read every row (dense attention), the reads would grow with the stored bytes of every layer
  that reads them. The truth for a real kernel lies between the two.

One module per idea: :mod:`~rackbook.physics.roofline.kv` (KV-cache bytes, what fits,
``rackbook kv-bytes``), :mod:`~rackbook.physics.roofline.weights` (active and stored weights),
:mod:`~rackbook.physics.roofline.bandwidth` (the HBM floor),
:mod:`~rackbook.physics.roofline.context` (a token's context: reads and attention work),
:mod:`~rackbook.physics.roofline.compute` (the FLOP ceiling),
:mod:`~rackbook.physics.roofline.decode` (batch-1 and speculative decoding), and
:mod:`~rackbook.physics.roofline.common` (phases, bytes per parameter, argument checks). Every
public name is read from the package (``roofline.kv_bytes``): the names imported below are the
package's interface.
"""

from __future__ import annotations

from rackbook.physics.roofline.bandwidth import (
    Step,
    bandwidth_floor_step_s,
)
from rackbook.physics.roofline.common import (
    DENSE_BYTES_PER_PARAM,
    PHASES,
)
from rackbook.physics.roofline.compute import (
    Ceiling,
    compute_ceiling_tokens_per_s,
)
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
