"""BFCL's leaderboard aggregates, computed by hand."""

from __future__ import annotations

import pytest

from aworld_rl_core.tooluse.bfcl.leaderboard import aggregate

COUNTS = {
    "simple_python": (300, 400),  # 0.75
    "simple_java": (50, 100),  # 0.5
    "simple_javascript": (25, 50),  # 0.5
    "multiple": (180, 200),  # 0.9
    "parallel": (160, 200),  # 0.8
    "parallel_multiple": (140, 200),  # 0.7
    "live_simple": (200, 258),
    "live_multiple": (800, 1053),
    "live_parallel": (8, 16),
    "live_parallel_multiple": (12, 24),
    "irrelevance": (192, 240),  # 0.8
    "live_irrelevance": (442, 884),  # 0.5
    "live_relevance": (12, 16),
}


def test_single_turn_groups_and_the_overall_over_the_groups_run():
    agg = aggregate(COUNTS)
    simple = (0.75 + 0.5 + 0.5) / 3
    non_live = (simple + 0.9 + 0.8 + 0.7) / 4
    live = 1020 / 1351  # weighted by count
    assert agg["simple"] == pytest.approx(simple)
    assert agg["non_live"] == pytest.approx(non_live)
    assert agg["live"] == pytest.approx(live)
    assert agg["irrelevance"] == pytest.approx(0.65) and agg["relevance"] == 0.75
    assert agg["multi_turn"] is None
    # BFCL's weights 10 / 10 / 10 over the three single-turn groups that were run
    assert agg["overall"] == pytest.approx((non_live + live + 0.65) / 3)


def test_the_leaderboards_reading_counts_what_was_not_run_as_zero():
    counts = {"simple_python": (4, 4), "multiple": (1, 2), "live_simple": (129, 258)}
    zero = aggregate(counts, missing="zero")
    assert zero["simple"] == pytest.approx(1 / 3)
    assert zero["non_live"] == pytest.approx((1 / 3 + 0.5) / 4)
    # missing live categories weigh their full size (1053 + 16 + 24) at 0, as in BFCL's table
    assert zero["live"] == pytest.approx(129 / 1351)
    assert zero["overall"] == pytest.approx((10 * zero["non_live"] + 10 * zero["live"]) / 100)
    skip = aggregate(counts)
    assert skip["simple"] == 1.0 and skip["non_live"] == pytest.approx(0.75)
    assert skip["live"] == 0.5 and skip["irrelevance"] is None
    assert skip["overall"] == pytest.approx((0.75 + 0.5) / 2)


def test_multi_turn_is_the_mean_of_its_four_categories():
    counts = {"multi_turn_base": (100, 200), "multi_turn_miss_func": (50, 200)}
    agg = aggregate(counts)
    assert agg["multi_turn"] == pytest.approx(0.375) and agg["overall"] == pytest.approx(0.375)
    assert aggregate({})["overall"] is None
