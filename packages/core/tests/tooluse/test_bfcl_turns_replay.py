"""Core's two BFCL multi-turn environments as configurations of ``tooluse.bfcl.turns``: the same
scripted episodes (ground truth and erring stand-ins) give the same openings, observations,
rewards, ``done`` flags and infos as the step loops they replaced, recorded from those loops
(``data/bfcl_turns_replay.json``; re-record only on a deliberate change of behaviour:
``python packages/core/tests/tooluse/test_bfcl_turns_replay.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

from aworld_rl_core.testing.episode_replay import mismatches, record

RECORDED = Path(__file__).parent / "data" / "bfcl_turns_replay.json"
ENTRIES = (
    "multi_turn_base_0",
    "multi_turn_base_1",
    "multi_turn_miss_func_0",
    "multi_turn_miss_param_0",
)
ANSWER = "<think>done</think><answer>Done.</answer>"


def _calls(strings):
    return f"<think>act</think><tool_call>[{', '.join(strings)}]</tool_call>"


def _entry(entry_id):
    from aworld_rl_core.tooluse.bfcl.environment import entry_by_id

    return entry_by_id(entry_id)


def core_scripts(entry):
    """think_tool_python replies: gold; erring (broken format, an unknown call, a call in an
    abstain turn, a wrong turn); every turn over the cap."""
    gold, erring, capped = [], ["no tags at all", _calls(["no_such_tool(x=1)"])], []
    for i, turn in enumerate(entry.ground_truth):
        if turn:
            gold.append(_calls(turn))
            capped += [_calls(turn)] * 3
            erring.append(_calls(turn) if i % 2 == 0 else ANSWER)
        else:
            erring.append(_calls(["ls()"]))
            capped += ["<think>x</think>"] * 3
        gold.append(ANSWER)
        erring.append(ANSWER)
    return {"gold": gold, "erring": erring, "capped": capped}


def prompting_scripts(entry):
    """BFCL prompting replies: gold; erring (prose, an unknown call, a non-literal argument);
    every turn over the cap (force quit)."""
    from aworld_rl_core.tooluse.bfcl.prompting import ground_truth_replies

    turns = ground_truth_replies(entry)
    gold = [r for t in turns for r in t]
    erring = ["[no_such_tool(x=1)]", "[cd(folder=London)]", "Let me think.", *gold]
    capped = [r for t in turns for r in ([t[0]] * 4 if len(t) > 1 else t)]
    return {"gold": gold, "erring": erring, "capped": capped}


def cases():
    from aworld_rl_core.tooluse.bfcl.environment import BfclMultiTurnEnv
    from aworld_rl_core.tooluse.bfcl.prompting import BfclEnv

    out = {}
    for entry_id in ENTRIES:
        entry = _entry(entry_id)
        for name, replies in core_scripts(entry).items():
            out[f"core/{entry_id}/{name}"] = (lambda e=entry: BfclMultiTurnEnv(e), replies)
            out[f"core-progress-cap2/{entry_id}/{name}"] = (
                lambda e=entry: BfclMultiTurnEnv(e, reward="progress", max_steps_per_turn=2),
                replies,
            )
        for name, replies in prompting_scripts(entry).items():
            out[f"prompting/{entry_id}/{name}"] = (lambda e=entry: BfclEnv(e), replies)
            out[f"prompting-cap2/{entry_id}/{name}"] = (
                lambda e=entry: BfclEnv(e, max_steps_per_turn=2),
                replies,
            )
    return out


def cases_from_parts():
    """core.bfcl-multi-turn's cases, the environment built by ``core.bfcl-turns`` from the
    registered parts by name (no class of its own)."""
    from aworld_rl_core.registry import get_environment

    make = get_environment("core.bfcl-turns")
    parts = {
        "turns": {"name": "core.turns", "max_steps_per_turn": 2},
        "reward": {"name": "core.reward", "kind": "progress"},
    }
    out = {}
    for entry_id in ENTRIES:
        row = {"entry_id": entry_id}
        for name, replies in core_scripts(_entry(entry_id)).items():
            out[f"core/{entry_id}/{name}"] = (lambda r=row: make(r), replies)
            out[f"core-progress-cap2/{entry_id}/{name}"] = (lambda r=row: make(r, **parts), replies)
    return out


def test_registered_parts_make_the_same_environment():
    """If this fails: ``core.bfcl-turns`` with core's registered parts (``core.parser``,
    ``core.turns``, ``core.feedback``, ``core.reward``) no longer plays as
    ``core.bfcl-multi-turn`` does."""
    problems = mismatches(cases_from_parts(), RECORDED)
    assert not problems, "\n".join(problems[:20])


def test_a_part_of_another_role_or_name_is_an_error():
    import pytest

    from aworld_rl_core.errors import PluginError
    from aworld_rl_core.registry import get_environment

    make = get_environment("core.bfcl-turns")
    with pytest.raises(ValueError, match="protocol='core.reward' is a registered reward part"):
        make({"entry_id": "multi_turn_base_0"}, protocol="core.reward")
    with pytest.raises((PluginError, KeyError), match="core.no-such"):
        make({"entry_id": "multi_turn_base_0"}, feedback="core.no-such")
    with pytest.raises(ValueError, match="max_steps_per_turn must be >= 1"):
        make(
            {"entry_id": "multi_turn_base_0"}, turns={"name": "core.turns", "max_steps_per_turn": 0}
        )


def test_same_episodes_as_recorded():
    """If this fails: an environment's behaviour changed (the message names the case, step and
    field); if the change is deliberate, re-record (module docstring) and say why."""
    problems = mismatches(cases(), RECORDED)
    assert not problems, "\n".join(problems[:20])


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    RECORDED.parent.mkdir(exist_ok=True)
    record(cases(), RECORDED)
    print(f"recorded {len(cases())} cases in {RECORDED}")
