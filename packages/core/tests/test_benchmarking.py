"""The benchmark helpers: alternating best-of-N runs, figures, ratios, the JSON report."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from aworld_rl_core.benchmarking import (
    Measured,
    best_of,
    compare,
    compare_rollouts,
    measure,
    report,
)


def test_best_of_alternates_sides_keeps_fastest_run_and_calls_after():
    # pre-timed runs (Measured) with fixed seconds, so no clock is asserted
    seconds = {"a": [3.0, 1.0, 2.0], "b": [5.0, 6.0, 4.0]}
    calls, seen = [], []

    def side(name):
        def run(repeat):
            calls.append((name, repeat))
            return Measured({"n": 10, "repeat": repeat}, seconds[name][repeat], 1.0 + repeat)

        return run

    best = best_of({"a": side("a"), "b": side("b")}, 3, after=lambda s, r: seen.append((s, r)))
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert best["a"] == Measured({"n": 10, "repeat": 1}, 1.0, 2.0)
    assert best["b"] == Measured({"n": 10, "repeat": 2}, 4.0, 3.0)
    assert [s for s, _ in seen] == ["a", "b"] * 3 and seen[0][1] == {"n": 10, "repeat": 0}


def test_best_of_times_a_plain_result_and_rejects_no_repeats():
    best = best_of({"only": lambda repeat: repeat * 7}, 2)
    assert best["only"].result == 7  # the kept run's own result
    assert best["only"].cpu_s >= 0.0 and best["only"].wall_s >= 0.0
    assert measure(lambda: "x").result == "x"
    with pytest.raises(ValueError, match="repeats"):
        best_of({"only": lambda repeat: None}, 0)


def test_compare_gives_figures_rates_and_ratios(tmp_path, capsys):
    best = {
        "fast": Measured({"episodes": 8, "tokens": 40}, 2.0, 4.0),
        "slow": Measured({"episodes": 8, "tokens": 40}, 8.0, 5.0),
    }
    figures = compare(best, "fast", baseline="slow", per_cpu_s=("episodes",))
    assert figures == {
        "fast": {
            "cpu_s": 2.0,
            "wall_s": 4.0,
            "episodes": 8,
            "tokens": 40,
            "episodes_per_cpu_s": 4.0,
        },
        "slow": {
            "cpu_s": 8.0,
            "wall_s": 5.0,
            "episodes": 8,
            "tokens": 40,
            "episodes_per_cpu_s": 1.0,
        },
        "ratio_cpu": 4.0,
        "ratio_wall": 1.25,
    }
    path = tmp_path / "figures.json"
    report(figures, path)
    assert json.loads(capsys.readouterr().out) == figures
    assert json.loads(path.read_text(encoding="utf-8")) == figures
    report({"x": 1}, None, echo=False)
    assert capsys.readouterr().out == ""


def test_compare_rollouts_plays_batched_against_one_at_a_time(tmp_path, capsys):
    pytest.importorskip("torch")
    played = []

    def play(repeat, batch_size):
        played.append((repeat, batch_size))
        cpu = 1.0 if batch_size is None else 3.0
        return Measured({"episodes": 6}, cpu + repeat, 2 * cpu)

    args = SimpleNamespace(
        model="tiny:qwen3", episodes=6, turns=2, max_new_tokens=4, repeats=2, json=None
    )
    result = compare_rollouts(play, args, per_cpu_s=("episodes",))
    assert played == [(0, None), (0, 1), (1, None), (1, 1)]
    assert result["batched"]["cpu_s"] == 1.0 and result["one_at_a_time"]["cpu_s"] == 3.0
    assert result["batched"]["episodes_per_cpu_s"] == 6.0
    assert result["ratio_cpu"] == 3.0 and result["ratio_wall"] == 3.0
    assert (result["model"], result["episodes"], result["turns"]) == ("tiny:qwen3", 6, 2)
    assert json.loads(capsys.readouterr().out) == result
