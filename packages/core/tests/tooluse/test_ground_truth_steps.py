"""Ground truth as replies: a call needing an earlier result waits for it; sources per argument."""

import pytest

from aworld_rl_core.tooluse.bfcl.loader import entry_from_raw
from aworld_rl_core.tooluse.calls import Call
from aworld_rl_core.tooluse.ground_truth_steps import (
    GroundTruthTurn,
    PlannedCall,
    ground_truth_steps,
    value_in_text,
)
from aworld_rl_core.tooluse.microworld.apis import DOCS


def _entry(question, ground_truth, category="multi_turn_base"):
    raw = {
        "id": "hand_0",
        "question": [[{"role": "user", "content": q}] for q in question],
        "ground_truth": ground_truth,
        "initial_config": {},
        "involved_classes": list(DOCS),
        "function": [d for docs in DOCS.values() for d in docs],
    }
    return entry_from_raw(raw, category=category)


def test_value_in_text_matches_whole_words_and_numbers():
    assert value_in_text(5, "Move 5 dollars.")
    assert not value_in_text(5, "Move 25 dollars.")
    assert not value_in_text(5, "Move 5.5 dollars.")
    assert value_in_text("plan.txt", "Show me plan.txt.")
    assert not value_in_text("plan", "Show me plan.txt.")
    assert not value_in_text("room", "bedroom")
    assert not value_in_text(True, "True")


def test_a_call_needing_a_result_gets_its_own_reply_positional_arguments_bound():
    entry = _entry(
        ["Move everything in checking to savings.", "Lock the front door and read todo.txt."],
        [
            ["get_balance('checking')", "transfer(source='checking', target='savings', amount=55)"],
            ["lock_door(door='front')", "read_file(name='todo.txt')"],
        ],
    )
    first, second = ground_truth_steps(entry)
    balance = Call("get_balance", {"account": "checking"})
    send = Call("transfer", {"source": "checking", "target": "savings", "amount": 55})
    assert first == GroundTruthTurn(
        "Move everything in checking to savings.",
        (
            (PlannedCall(balance, (("account", "user"),)),),
            (PlannedCall(send, (("source", "user"), ("target", "user"), ("amount", "result"))),),
        ),
    )
    # both values are in the request: one reply with both calls
    assert [[p.call.name for p in r] for r in second.replies] == [["lock_door", "read_file"]]
    assert not second.abstain and not any(p.needs_result for p in second.replies[0])


def test_an_earlier_turns_words_count_and_an_empty_turn_abstains():
    entry = _entry(
        ["How much is in travel?", "Send some of it to checking.", "Make it 70 dollars."],
        [
            ["get_balance(account='travel')"],
            [],
            ["transfer(source='travel', target='checking', amount=70)"],
        ],
        category="multi_turn_miss_param",
    )
    turns = ground_truth_steps(entry)
    assert [t.abstain for t in turns] == [False, True, False]
    assert turns[1] == GroundTruthTurn("Send some of it to checking.", ())
    (reply,) = turns[2].replies
    assert reply[0].sources == (("source", "user"), ("target", "user"), ("amount", "user"))


def test_needs_multi_turn_ground_truth():
    entry = _entry(["Lock the front door."], [["lock_door(door='front')"]])
    bad = entry_from_raw({**entry.raw, "ground_truth": [[], []]})
    with pytest.raises(ValueError, match="1 user turns but 2 ground-truth turns"):
        ground_truth_steps(bad)
