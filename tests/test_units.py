"""Numbers for people (:mod:`rackbook.core.units`): the one formatter of plurals,
percentages, ratios and large numbers every sentence uses."""

from __future__ import annotations

import numpy as np

from rackbook.core.units import eng, fmt, number, percent, plural, ratio_text, whole


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


def test_percentages_drop_a_trailing_zero_and_keep_the_space():
    assert percent(0.64) == "64 %" and percent(0.857) == "85.7 %"
    assert percent(0.835, 0) == "84 %" and percent(0.6, 2) == "60.00 %"
    assert percent(0.551, sign=True) == "+55.1 %" and percent(-0.048, sign=True) == "-4.8 %"


def test_ratios_have_three_figures_and_numbers_no_exponent():
    assert ratio_text(0.0929) == "0.093x" and ratio_text(0.0696) == "0.07x"
    assert ratio_text(9.144) == "9.14x" and ratio_text(1054.2) == "1,054x"
    assert ratio_text(0.0004) == "0.0004x" and ratio_text(1.0) == "1x"
    assert number(2.17367e6) == "2,173,670" and number(3.33e10) == "33,300,000,000"
    assert number(12.345) == "12.35" and number(3.3305663636e10, 3) == "33,300,000,000"
