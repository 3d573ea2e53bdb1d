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


def test_prefixes_switch_exactly_at_each_power_of_a_thousand():
    assert fmt(999.9, "B") == "999.9 B" and fmt(1e3, "B") == "1 kB"
    assert fmt(1e6, "B") == "1 MB" and fmt(1e12, "B") == "1 TB" and fmt(1e15, "B") == "1 PB"
    assert fmt(-2.5e9, "B") == "-2.5 GB"  # the prefix of the magnitude
    assert fmt(12345, "B") == "12.35 kB"  # 4 significant figures by default
    assert fmt(123456, "B", 2) == "1.2e+02 kB"


def test_engineering_notation_keeps_exponents_in_threes():
    assert eng(123456) == "123.5e3" and eng(12345678, 6) == "12.3457e6"
    assert eng(1000) == "1e3" and eng(999) == "999" and eng(1) == "1"
    assert eng(-0.0005) == "-500e-6"  # the magnitude's exponent, rounded down to a multiple of 3


def test_plural_of_fractions_and_irregular_nouns():
    assert plural(1234.5, "token") == "1,234.5 tokens"
    assert plural(1, "child", "children") == "1 child"


def test_ratios_of_negative_numbers_and_near_the_bands():
    assert ratio_text(-1054.2) == "-1,054x" and ratio_text(-0.0929) == "-0.093x"
    assert ratio_text(99.94) == "99.9x"  # below 100: three figures
    assert ratio_text(1.2345) == "1.23x" and ratio_text(0.5) == "0.5x"
    assert ratio_text(0.9999) == "1x"  # three decimals all zero: no point left


def test_numbers_below_zero_and_rounded_to_figures():
    assert number(-2173670) == "-2,173,670" and number(-12.345) == "-12.35"
    assert number(0.000123456) == "0.0001235" and number(987654, 1) == "1,000,000"
