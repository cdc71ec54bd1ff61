"""EnvTuning's environment as a configuration of core's ``tooluse.bfcl.turns``: the same scripted
episodes (ground truth and erring stand-ins, with and without hints, every reward) give the same
openings, observations, rewards, ``done`` flags and infos as the step loop it replaced, recorded
from that loop (``data/env_replay.json``; re-record only on a deliberate change of behaviour:
``python packages/envtuning/tests/test_env_replay.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from aworld_rl_core.testing.episode_replay import mismatches, record

RECORDED = Path(__file__).parent / "data" / "env_replay.json"
ENTRIES = (
    "multi_turn_base_0",
    "multi_turn_miss_func_0",
    "multi_turn_miss_param_0",
    "micro_set_temp_0",
)
ANSWER = "<think>done</think><answer>Done.</answer>"
OPTIONS = {
    "default": {},
    "no-hints-cap2-no_call": {
        "augmentation": False,
        "max_steps_per_turn": 2,
        "abstain_credit": "no_call",
    },
    "accuracy": {"reward": {"name": "accuracy"}, "error_dicts_fail": False},
    "mixed-entries-resourceful": {
        "reward": {"name": "mixed", "denominator": "reached", "format_denominator": "entries"},
        "prompt_style": "resourceful",
        "tool_docs": "compact",
        "max_steps_per_turn": 2,
    },
}


def _json_calls(strings):
    from aworld_rl_core.tooluse.calls import parse_python_calls

    calls = [c for s in strings for c in parse_python_calls(s)]
    payload = json.dumps([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])
    return f"<think>act</think><tool_call>{payload}</tool_call>"


def scripts(entry):
    """gold; erring (broken format, an unknown tool, a wrong argument, calls in abstain turns,
    a skipped turn); every turn over the cap."""
    bad = '<think>x</think><tool_call>[{"name": "no_such_tool", "arguments": {}}]</tool_call>'
    gold, erring, capped = [], ["no tags at all", bad], []
    for i, turn in enumerate(entry.ground_truth):
        if turn:
            gold.append(_json_calls(turn))
            capped += [_json_calls(turn)] * 3
            erring.append(_json_calls(turn) if i % 2 == 0 else ANSWER)
        else:
            erring.append(_json_calls(entry.ground_truth[0][:1]))
            capped += ["<think>x</think>"] * 3
        gold.append(ANSWER)
        erring.append(ANSWER)
    return {"gold": gold, "erring": erring, "capped": capped}


def cases():
    from aworld_rl_envtuning.env import get_entry, make_env

    out = {}
    for entry_id in ENTRIES:
        entry = get_entry(entry_id)
        for name, replies in scripts(entry).items():
            for label, options in OPTIONS.items():
                row = {"entry_id": entry_id}
                out[f"{label}/{entry_id}/{name}"] = (
                    lambda r=row, o=options: make_env(r, **o),
                    replies,
                )
    return out


def cases_from_parts():
    """The default and no-hints cases on BFCL entries, the environment built by core's
    ``core.bfcl-turns`` from EnvTuning's registered parts by name (no class of its own)."""
    from aworld_rl_core.registry import get_environment
    from aworld_rl_envtuning.env import get_entry

    make = get_environment("core.bfcl-turns")
    parts = {
        "default": {"turns": {"name": "core.turns", "max_steps_per_turn": 5}},
        "no-hints-cap2-no_call": {
            "turns": {"name": "core.turns", "max_steps_per_turn": 2, "abstain_credit": "no_call"},
            "feedback": {"name": "envtuning.feedback", "augmentation": False},
        },
    }
    out = {}
    for entry_id in ENTRIES[:3]:
        for name, replies in scripts(get_entry(entry_id)).items():
            for label, chosen in parts.items():
                options = {
                    "protocol": "envtuning.protocol",
                    "feedback": "envtuning.feedback",
                    "reward": "envtuning.reward",
                    **chosen,
                }
                options["turns"] = {
                    "abstain": "block",
                    "abstain_credit": "clean",
                    **options["turns"],
                }
                out[f"{label}/{entry_id}/{name}"] = (
                    lambda o=options, r={"entry_id": entry_id}: make(r, **o),
                    replies,
                )
    return out


def test_registered_parts_make_the_same_environment():
    """If this fails: ``core.bfcl-turns`` with EnvTuning's registered parts no longer plays as
    ``envtuning.bfcl`` does."""
    problems = mismatches(cases_from_parts(), RECORDED)
    assert not problems, "\n".join(problems[:20])


def test_same_episodes_as_recorded():
    """If this fails: EnvTuning's environment changed behaviour (the message names the case,
    step and field); if that is deliberate, re-record (module docstring) and say why."""
    problems = mismatches(cases(), RECORDED)
    assert not problems, "\n".join(problems[:20])


if __name__ == "__main__":
    RECORDED.parent.mkdir(exist_ok=True)
    record(cases(), RECORDED)
    print(f"recorded {len(cases())} cases in {RECORDED}")
