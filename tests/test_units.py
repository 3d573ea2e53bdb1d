"""Numbers for people (:mod:`rackbook.physics.units`): the one plural helper every sentence uses."""

from __future__ import annotations

import numpy as np

from rackbook.physics.units import eng, fmt, plural, whole


def test_plural_counts_and_nouns():
    assert plural(1, "GPU") == "1 GPU"
    assert plural(0, "GPU") == "0 GPUs"
    assert plural(8192, "sequence") == "8,192 sequences"
    assert plural(2, "query", "queries") == "2 queries"
    assert plural(1.5, "token") == "1.5 tokens"
    assert plural(1.0, "token") == "1 token"


def test_plural_writes_numpy_integers_in_full():
    """A count read from a table is a numpy integer: written like a Python int, never in
    scientific notation (``:,g`` gave "1.23457e+06 sequences")."""
    assert plural(np.int64(1_234_567), "sequence") == "1,234,567 sequences"
    assert plural(np.int32(1), "GPU") == "1 GPU"


def test_prefixes_and_engineering_notation():
    assert fmt(1.5e16, "FLOP/s") == "15 PFLOP/s"
    assert fmt(890, "B") == "890 B"
    assert eng(16e9) == "16e9"
    assert eng(0) == "0"


def test_whole_numbers_become_ints():
    assert (whole(8.0), type(whole(8.0))) == (8, int)
    assert whole(2.5) == 2.5 and whole(np.float64(1e6)) == 1_000_000
    assert plural(whole(1_024_000.0), "token") == "1,024,000 tokens"
