"""BFCL and FunReason aggregation by hand, and reasoning stripping."""

from __future__ import annotations

import pytest

from aworld_rl_funreason.evaluation import (
    CategoryScore,
    aggregate,
    format_table,
    strip_reasoning,
)


def _scores(**kw):
    return {k: CategoryScore(k, c, t) for k, (c, t) in kw.items()}


def test_aggregate_matches_bfcl_formulas():
    s = _scores(
        simple_python=(300, 400),  # 0.75
        simple_java=(50, 100),  # 0.5
        simple_javascript=(25, 50),  # 0.5
        multiple=(180, 200),  # 0.9
        parallel=(160, 200),  # 0.8
        parallel_multiple=(140, 200),  # 0.7
        live_simple=(200, 258),
        live_multiple=(800, 1053),
        live_parallel=(8, 16),
        live_parallel_multiple=(12, 24),
    )
    agg = aggregate(s)
    simple = (0.75 + 0.5 + 0.5) / 3
    assert agg["simple"] == pytest.approx(simple)
    assert agg["non_live"] == pytest.approx((simple + 0.9 + 0.8 + 0.7) / 4)
    assert agg["live"] == pytest.approx(1020 / 1351)  # weighted by count
    assert agg["overall_funreason"] == pytest.approx((agg["non_live"] + agg["live"]) / 2)
    # BFCL's weights 10 / 10 over the two groups run (no irrelevance categories here)
    assert agg["overall_bfcl"] == pytest.approx((agg["non_live"] + agg["live"]) / 2)
    with_irrelevance = aggregate({**s, **_scores(irrelevance=(120, 240))})
    assert with_irrelevance["irrelevance"] == 0.5
    assert with_irrelevance["overall_bfcl"] == pytest.approx(
        (agg["non_live"] + agg["live"] + 0.5) / 3
    )
    assert with_irrelevance["overall_funreason"] == agg["overall_funreason"]


def test_missing_categories_skip_or_zero():
    s = _scores(simple_python=(4, 4), multiple=(1, 2))
    skip = aggregate(s)
    assert skip["simple"] == 1.0 and skip["non_live"] == pytest.approx(0.75)
    assert skip["live"] is None and skip["overall_funreason"] == pytest.approx(0.75)
    zero = aggregate(s, missing="zero")
    assert zero["simple"] == pytest.approx(1 / 3)
    assert zero["non_live"] == pytest.approx((1 / 3 + 0.5) / 4)
    assert zero["live"] == 0.0
    assert zero["overall_funreason"] == pytest.approx(zero["non_live"] / 2)
    # the leaderboard's overall: multi-turn (30) and agentic (40) count as 0
    assert zero["overall_bfcl"] == pytest.approx(10 * zero["non_live"] / 100)


def test_paper_overall_is_the_mean_of_non_live_and_live():
    # FunReason's headline: non-live 87.00, live 80.31 -> overall 83.655
    assert pytest.approx(83.655) == (87.00 + 80.31) / 2


def test_strip_reasoning():
    assert strip_reasoning("<think>\nuse f\n</think>\n\n[f(a=1)]") == "[f(a=1)]"
    assert strip_reasoning("[f(a=1)]") == "[f(a=1)]"
    assert strip_reasoning("<think>a</think>b</think> [g()]") == "[g()]"


def test_table_lists_categories_and_aggregates():
    s = _scores(simple_python=(1, 2))
    table = format_table(s, aggregate(s))
    assert "| simple_python | 1 | 2 | 50.00 |" in table
    assert "| BFCL live AST (weighted by count) | n/a |" in table
    assert "| FunReason overall ((non-live + live) / 2) | 50.00 |" in table


def test_score_records_averages_samples_per_entry():
    from aworld_rl_funreason.recipes.evaluate import score_records

    rows = [
        {"category": "multiple", "id": "multiple_0", "valid": True},
        {"category": "multiple", "id": "multiple_0", "valid": False},
        {"category": "multiple", "id": "multiple_0", "valid": True},
        {"category": "multiple", "id": "multiple_1", "valid": False},
    ]
    scores = score_records(rows, ("multiple", "parallel"))
    assert scores["multiple"].correct == pytest.approx(2 / 3)
    assert scores["multiple"].total == 2
    assert scores["multiple"].accuracy == pytest.approx(1 / 3)
    assert scores["parallel"].total == 0
