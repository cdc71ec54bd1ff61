"""Hostile model outputs through MultiTurnEpisode and the BFCL judges: errors, nothing runs."""

from __future__ import annotations

import json

from bfcl_helpers import entries

from aworld_rl_core.testing.hostile import hostile_call_strings, hostile_cases
from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode, judge_multi_turn, judge_single_turn
from aworld_rl_core.tooluse.bfcl.apis import public_state


def _states(episode):
    return {
        name: json.dumps(public_state(i), sort_keys=True, default=str)
        for name, i in episode.instances.items()
    }


def test_hostile_calls_through_an_episode(tmp_path):
    sentinel = tmp_path / "pwned"
    entry = entries("multi_turn_base")[0]  # GorillaFileSystem + TwitterAPI
    episode = MultiTurnEpisode(entry)
    before = _states(episode)
    for name, text in hostile_call_strings(sentinel):
        results = episode.dispatch([text])
        assert len(results) == 1, name
        assert results[0].is_error, (name, results[0].text[:200])
        assert results[0].text.startswith("Error during execution: "), name
        assert results[0].kind not in ("ok", "returned_error"), name
    assert not sentinel.exists()
    assert _states(episode) == before  # no hostile call reached an API method
    turn = episode.end_turn()
    assert turn.made_calls and not turn.passed  # errors count as calls, the turn fails
    episode.close()


def test_hostile_outputs_through_the_judges(tmp_path):
    sentinel = tmp_path / "pwned"
    single = entries("simple_python")[0]
    irrelevance = entries("irrelevance")[0]
    multi = entries("multi_turn_base")[0]
    for case in hostile_cases(sentinel):
        assert not judge_single_turn(single, case.python).valid, case.name
        # Judged, never run: a dotted call such as os.system(...) merely counts as a call.
        assert judge_single_turn(irrelevance, case.python).turn_scores in ((0.0,), (1.0,))
        calls = [[case.python.strip("[]")]] + [[] for _ in multi.ground_truth[1:]]
        verdict = judge_multi_turn(multi, calls)
        assert not verdict.valid and verdict.turn_scores[0] == 0.0, case.name
    assert not sentinel.exists()
