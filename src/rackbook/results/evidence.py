"""Published evidence (placeholder until the published registry lands)."""

from __future__ import annotations

from typing import Any

from rackbook.results.headline import ClaimReading


def claim_reading(claim_id: str, value: float | None, registry: Any = None) -> ClaimReading:
    """The published reading of a claim."""
    return ClaimReading(claim_id, "published", "none published", "-", "no comparable measurement")
