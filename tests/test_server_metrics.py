"""Per-point counter increases of the ``server_metrics`` table
(:mod:`rackbook.core.server_metrics`): summed over labels and servers, a counter that went down
NaN, and the prefix-cache hit rate with the reason it is unknown."""

from __future__ import annotations

import math

import pandas as pd

from rackbook.core.server_metrics import counter_deltas, prefix_cache_hit_rate

HITS, QUERIES = "vllm:prefix_cache_hits", "vllm:prefix_cache_queries"
OLD_HITS, OLD_QUERIES = "vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries"


def _sm(rows):
    return pd.DataFrame(rows, columns=["point_id", "server", "phase", "metric", "labels", "value"])


def _counter(point, server, metric, before, after, labels=""):
    return [
        (point, server, "before", metric, labels, before),
        (point, server, "after", metric, labels, after),
    ]


def test_deltas_sum_labels_and_servers_of_one_point_only():
    sm = _sm(
        [
            *_counter("p", "a", HITS + "_total", 10.0, 40.0, 'engine="0"'),
            *_counter("p", "a", HITS + "_total", 20.0, 60.0, 'engine="1"'),
            *_counter("p", "b", HITS, 5.0, 5.0),  # no increase on server b: 0, not "went down"
            *_counter("p", "a", QUERIES, 100.0, 300.0),
            ("p", "b", "before", QUERIES, "", 7.0),  # server b's queries: before only, dropped
            *_counter("q", "a", HITS, 0.0, 1000.0),  # another point
        ]
    )
    assert counter_deltas(sm, "p") == {HITS: 70.0, QUERIES: 200.0}
    assert counter_deltas(sm, "q") == {HITS: 1000.0}
    assert counter_deltas(sm, "none") == {}


def test_a_counter_that_went_down_on_one_server_is_nan():
    sm = _sm([*_counter("p", "a", HITS, 10.0, 40.0), *_counter("p", "b", HITS, 50.0, 49.0)])
    assert math.isnan(counter_deltas(sm, "p")[HITS])


def test_deltas_need_both_phases():
    sm = _sm([("p", "a", "before", HITS, "", 1.0), ("p", "a", "before", QUERIES, "", 2.0)])
    assert counter_deltas(sm, "p") == {}
    sm = _sm([("p", "a", "after", HITS, "", 1.0)])
    assert counter_deltas(sm, "p") == {}


def test_hit_rate_from_the_first_pair_present():
    both = [*_counter("p", "a", HITS, 0.0, 30.0), *_counter("p", "a", QUERIES, 0.0, 120.0)]
    old = [*_counter("p", "a", OLD_HITS, 0.0, 1.0), *_counter("p", "a", OLD_QUERIES, 0.0, 1.0)]
    assert prefix_cache_hit_rate(_sm(both + old), "p") == (0.25, f"{HITS} / {QUERIES}")
    assert prefix_cache_hit_rate(_sm(old), "p") == (1.0, f"{OLD_HITS} / {OLD_QUERIES}")
    # hits without their queries: that pair is not used, the older one is
    only_hits = _sm([*_counter("p", "a", HITS, 0.0, 5.0), *old])
    assert prefix_cache_hit_rate(only_hits, "p") == (1.0, f"{OLD_HITS} / {OLD_QUERIES}")


def test_hit_rate_unknown_says_why():
    names = f"{HITS}, {OLD_HITS}"
    rate, why = prefix_cache_hit_rate(_sm([*_counter("p", "a", HITS, 0.0, 5.0)]), "p")
    assert math.isnan(rate) and why == f"no prefix-cache counters ({names}) in server_metrics"
    flat = _sm([*_counter("p", "a", HITS, 0.0, 0.0), *_counter("p", "a", QUERIES, 9.0, 9.0)])
    rate, why = prefix_cache_hit_rate(flat, "p")
    assert math.isnan(rate) and why == f"{QUERIES} did not increase during the point"
    for hits, queries in (((5.0, 4.0), (0.0, 10.0)), ((0.0, 4.0), (10.0, 0.0))):
        down = _sm([*_counter("p", "a", HITS, *hits), *_counter("p", "a", QUERIES, *queries)])
        rate, why = prefix_cache_hit_rate(down, "p")
        problem = "went down during the point (server restart?)"
        assert math.isnan(rate) and why == f"{HITS}/{QUERIES} {problem}"


def test_hit_rate_of_a_single_query():
    one = _sm([*_counter("p", "a", HITS, 3.0, 3.0), *_counter("p", "a", QUERIES, 8.0, 9.0)])
    assert prefix_cache_hit_rate(one, "p") == (0.0, f"{HITS} / {QUERIES}")
