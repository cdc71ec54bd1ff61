"""What a person reads: fractions as percentages with honest rounding."""

from aworld_rl_core.report import format_metric, percent


def test_percentages_never_round_to_100_or_0():
    assert percent(1051 / 1053) == "99.8%"
    assert percent(1052 / 1053) == "99.9%"
    assert (percent(1.0), percent(0.0), percent(0.5)) == ("100.0%", "0.0%", "50.0%")
    assert percent(1 / 100_000) == "0.1%"
    assert format_metric("accuracy/average", 0.25) == "25.0%"
    assert format_metric("learning_rate", 0.25) == "0.25"
