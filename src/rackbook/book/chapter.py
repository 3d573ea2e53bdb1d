"""What a chapter needs from the book around its analysis: numbers glued into the prose
(myst-nb ``glue``, one call for all of them) and the headline table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, so that glue's format specs (``:,.0f``) apply."""
    return value.item() if isinstance(value, np.generic) else value


def glue_values(values: Mapping[str, Any]) -> None:
    """Glue every value under its name, without displaying it (the prose shows it)."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, _plain(value), display=False)
