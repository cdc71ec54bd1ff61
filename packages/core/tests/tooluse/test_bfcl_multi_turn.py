"""MultiTurnEpisode and judge_multi_turn against BFCL ground truth and bfcl-eval's own checker."""

from __future__ import annotations

import re

import pytest
from bfcl_helpers import all_multi_turn, entries, reference

from aworld_rl_core.tooluse import Call
from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode, judge_multi_turn


def test_every_multi_turn_ground_truth_passes():
    failures = [e.id for e in all_multi_turn() if not judge_multi_turn(e, e.ground_truth).valid]
    assert len(all_multi_turn()) == 800
    assert failures == []


def test_execution_results_identical_to_bfcl_executor():
    ref = reference()
    for entry in all_multi_turn():
        with MultiTurnEpisode(entry, judge=False) as episode:
            ours = []
            for calls in entry.ground_truth:
                ours.append(episode.execute(calls))
                episode.end_turn()
        assert ours == ref.execute(entry, entry.ground_truth), entry.id


def test_first_base_entry_turn_by_turn():
    entry = entries("multi_turn_base")[0]
    episode = MultiTurnEpisode(entry)
    assert episode.num_turns == 4
    assert episode.user_messages()[0]["content"].startswith("Move 'final_report.pdf'")
    assert episode.execute(entry.ground_truth[0]) == [
        '{"current_working_directory": "document"}',
        "None",
        "{\"result\": \"'final_report.pdf' moved to 'temp/final_report.pdf'\"}",
    ]
    first = episode.end_turn()
    assert (first.turn, first.score, first.state_match, first.response_match) == (
        0,
        1.0,
        True,
        True,
    )
    # Turn 1 without the cd: the grep fails, so the ground-truth results are missing.
    assert episode.execute(["grep(file_name='final_report.pdf', pattern='budget analysis')"]) == [
        '{"error": "grep: final_report.pdf: No such file or directory"}'
    ]
    second = episode.end_turn()
    assert second.score == 0.0 and second.state_match is True and second.response_match is False
    assert second.error_type == "multi_turn:execution_response_mismatch"
    assert '{"current_working_directory": "temp"}' in second.missing_results
    # The ground truth's positional call `sort('final_report.pdf')` runs (BFCL's decoder drops it).
    episode.execute(["cd(folder='temp')", Call("sort", positional=("final_report.pdf",))])
    assert episode.end_turn().passed
    episode.close()
    with pytest.raises(RuntimeError, match="closed"):
        episode.execute(["pwd()"])


def test_missed_function_revealed_at_its_turn():
    entry = entries("multi_turn_miss_func")[0]
    assert {t: [d["name"] for d in docs] for t, docs in entry.missed_functions.items()} == {
        3: ["sort"]
    }
    episode = MultiTurnEpisode(entry)
    names = lambda turn: {t["function"]["name"] for t in episode.tools(turn)}  # noqa: E731
    assert "sort" not in names(0) and "sort" not in names(2)
    assert "sort" in names(3) and "sort" in names(4)
    assert len(names(3)) == len(names(0)) + 1
    message = episode.user_messages(3)
    assert len(message) == 1 and message[0]["role"] == "user"
    assert message[0]["content"].startswith("[{'name': 'sort'")
    assert message[0]["content"].endswith(
        "I have updated some more functions you can choose from. What about now?"
    )


def _empty_turn_entry():
    return next(e for e in entries("multi_turn_miss_param") if [] in e.ground_truth)


def test_empty_ground_truth_turn_requires_abstention():
    entry = _empty_turn_entry()
    empty = entry.ground_truth.index([])
    calls = [list(t) for t in entry.ground_truth]
    calls[empty] = list(entry.ground_truth[empty - 1][-1:] or ["pwd()"])
    strict = judge_multi_turn(entry, calls)
    assert not strict.valid and strict.error_type == "multi_turn:irrelevance_error:decoder_success"
    assert strict.turn_scores[empty] == 0.0
    lenient = judge_multi_turn(entry, calls, irrelevance_check=False)
    ref = reference()
    assert strict.valid == ref.multi_turn_valid(entry, calls)
    assert lenient.valid == ref.multi_turn_valid(entry, calls, irrelevance_check=False)


def test_turn_count_mismatch_is_force_terminated():
    entry = entries("multi_turn_base")[0]
    verdict = judge_multi_turn(entry, entry.ground_truth[:-1])
    assert (verdict.valid, verdict.error_type) == (False, "multi_turn:force_terminated")


def _drop_arguments(call: str) -> str:
    return re.sub(r"\(.*\)$", "()", call)


def _corruptions(gt: list[list[str]]):
    """(kind, calls per turn) variants of a ground truth; each keeps the turn count."""
    turns = [list(t) for t in gt]
    nonempty = [i for i, t in enumerate(turns) if t]
    first, last = nonempty[0], nonempty[-1]
    out = []
    v = [list(t) for t in turns]
    v[first][0] = _drop_arguments(v[first][0])
    out.append(("drop_args", v))
    v = [list(t) for t in turns]
    v[last] = v[last][:-1]
    out.append(("missing_call", v))
    v = [list(t) for t in turns]
    v[first] = [*v[first], v[first][-1]]
    out.append(("repeated_call", v))
    v = [list(t) for t in turns]
    v[first] = v[first][::-1]
    out.append(("reversed_turn", v))
    v = [list(t) for t in turns]
    v[last][-1] = "pwd()"
    out.append(("wrong_function", v))
    v = [list(t) for t in turns]
    v[first], v[last] = v[last], v[first]
    out.append(("swapped_turns", v))
    return out


def test_corrupted_outputs_get_bfcl_verdicts():
    ref = reference()
    sample = all_multi_turn()[::5]  # deterministic 160-entry subset across the four categories
    disagreements, invalid = [], 0
    for entry in sample:
        for kind, calls in _corruptions(entry.ground_truth):
            ours = judge_multi_turn(entry, calls).valid
            invalid += not ours
            if ours != ref.multi_turn_valid(entry, calls):
                disagreements.append((entry.id, kind))
    assert disagreements == []
    assert invalid > len(sample) * 3  # the corruptions mostly fail, so the check has teeth


def test_parse_cache_shares_only_immutable_calls():
    from aworld_rl_core.tooluse.bfcl.episode import _parse_short_call, clear_parse_cache

    clear_parse_cache()
    first = _parse_short_call("cd(folder='document')")
    assert first == Call("cd", {"folder": "document"})
    assert _parse_short_call("cd(folder='document')") is first  # reused
    assert _parse_short_call("post_tweet(content='x', tags=['#a'])") is None  # a list: re-parsed
    assert _parse_short_call("cd(folder=__import__('os'))") is None  # errors go to the dispatcher
    assert _parse_short_call.cache_info().currsize == 3


def _mutated_call(rng, text):
    from dataclasses import replace

    from aworld_rl_core.tooluse import format_python_call, parse_python_calls

    call = parse_python_calls(text)[0]
    if call.arguments and rng.random() < 0.7:
        key = rng.choice(list(call.arguments))
        value = call.arguments[key]
        if isinstance(value, str):
            value += "x"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value += 1
        else:
            value = "zz"
        call = replace(call, arguments={**call.arguments, key: value})
    elif call.positional:
        call = replace(call, positional=())
    return format_python_call(call)


def _mutated_turns(rng, entry, same_classes):
    turns = [list(t) for t in entry.ground_truth]
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(turns))
        turn, op = turns[i], rng.choice(["value", "drop", "repeat", "insert", "swap", "clear"])
        if op == "value" and turn:
            j = rng.randrange(len(turn))
            turn[j] = _mutated_call(rng, turn[j])
        elif op == "drop" and turn:
            turn.pop(rng.randrange(len(turn)))
        elif op == "repeat" and turn:
            turn.insert(rng.randrange(len(turn) + 1), rng.choice(turn))
        elif op == "insert":
            turn.insert(rng.randrange(len(turn) + 1), rng.choice(same_classes))
        elif op == "swap" and len(turn) > 1:
            a, b = rng.sample(range(len(turn)), 2)
            turn[a], turn[b] = turn[b], turn[a]
        elif op == "clear":
            turns[i] = []
    return turns


def test_random_mutations_get_bfcl_verdicts():
    """A seeded fuzz over changed values, dropped/repeated/inserted/swapped calls, emptied turns
    (ground-truth-derived strings only: bfcl-eval's executor evaluates them)."""
    import random

    rng = random.Random(7)
    ref = reference()
    sample = all_multi_turn()
    calls_by_classes = {}
    for entry in sample:
        key = tuple(entry.involved_classes)
        calls_by_classes.setdefault(key, []).extend(c for t in entry.ground_truth for c in t)
    disagreements, valid = [], 0
    for _ in range(250):
        entry = rng.choice(sample)
        calls = _mutated_turns(rng, entry, calls_by_classes[tuple(entry.involved_classes)])
        for strict in (True, False):
            ours = judge_multi_turn(entry, calls, irrelevance_check=strict).valid
            valid += ours
            if ours != ref.multi_turn_valid(entry, calls, irrelevance_check=strict):
                disagreements.append((entry.id, strict, calls))
    assert disagreements == []
    assert 50 < valid < 450
