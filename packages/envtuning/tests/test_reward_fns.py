"""The registered TRL-shaped rewards replay completions through the environment."""

import json

import pytest

from aworld_rl_core import registry
from aworld_rl_core.testing.contracts import RewardContract

TURN0 = json.dumps(
    [
        {"name": "cd", "arguments": {"folder": "document"}},
        {"name": "mkdir", "arguments": {"dir_name": "temp"}},
        {"name": "mv", "arguments": {"source": "final_report.pdf", "destination": "temp"}},
    ]
)
CALL = f"<think>a</think><tool_call>{TURN0}</tool_call>"
ANSWER = "<think>b</think><answer>done</answer>"
# an episode (messages, as the trl backend hands them): turn 0 right, then cut off
EPISODE = [
    {"role": "assistant", "content": CALL},
    {"role": "user", "content": "Execution results: ..."},
    {"role": "assistant", "content": ANSWER},
    {"role": "user", "content": "next question"},
]
IDS = {"entry_id": ["multi_turn_base_0", "multi_turn_base_0", "multi_turn_base_0"]}


class TestProgress(RewardContract):
    reward = "envtuning.progress"
    # 1 of 4 expected turns; no turn ended; garbage
    examples = [([EPISODE, [CALL], "junk"], IDS, [0.25, 0.0, 0.0])]


class TestStage1(RewardContract):
    reward = "envtuning.format"
    # 2 responses, no format error, 1 clean tool step: 1 + 1; one clean tool step: 1 + 1; none
    examples = [([EPISODE, [CALL], "junk"], IDS, [2.0, 2.0, 0.0])]


class TestMixed(RewardContract):
    reward = "envtuning.mixed"
    examples = [([EPISODE, [CALL], "junk"], IDS, [0.9 * 0.25 + 0.1, 0.1, 0.0])]


class TestBinary(RewardContract):
    reward = "envtuning.binary"
    examples = [([EPISODE], {"entry_id": ["multi_turn_base_0"]}, [0.0])]


def test_missing_entry_ids_is_a_clear_error():
    with pytest.raises(ValueError, match="entry_id"):
        registry.get_reward("envtuning.progress")(["x"])
