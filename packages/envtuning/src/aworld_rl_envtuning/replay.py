"""Ground truth in the model-text protocol: what a perfect EnvTuning agent writes, turn by turn."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from aworld_rl_core.tooluse import bind_positional, parse_python_calls, signatures_from_tools

if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl import BfclEntry
    from aworld_rl_envtuning.env import EnvTuningEnv


def ground_truth_responses(
    entry: BfclEntry, *, think_tag: str = "think", call_per_step: bool = False
) -> list[list[str]]:
    """Per user turn: one ``<tool_call>`` response with the turn's ground-truth calls (JSON,
    positional arguments bound to their names) when it has any, then an ``<answer>``.
    ``call_per_step``: one response per call instead, so a call that needs an earlier call's
    result comes after that result is shown."""
    docs = list(entry.functions) + [d for ds in entry.missed_functions.values() for d in ds]
    signatures = signatures_from_tools(docs)
    turns = []
    for index, calls in enumerate(entry.ground_truth or []):
        responses = []
        if calls:
            parsed = [c for text in calls for c in parse_python_calls(text)]
            bound = [bind_positional(c, signatures.get(c.name, [])).to_dict() for c in parsed]
            for step in [[b] for b in bound] if call_per_step else [bound]:
                responses.append(
                    f"<{think_tag}>Turn {index}: call the tools.</{think_tag}>"
                    f"<tool_call>{json.dumps(step, ensure_ascii=False)}</tool_call>"
                )
        responses.append(f"<{think_tag}>Turn {index} is done.</{think_tag}><answer>Done.</answer>")
        turns.append(responses)
    return turns


def replay_ground_truth(env: EnvTuningEnv) -> dict:
    """Play the entry's ground truth through ``env``; final info plus the reward sum."""
    env.reset()
    total = 0.0
    for turn in ground_truth_responses(env.entry, think_tag=env.think_tag):
        for text in turn:
            step = env.step(text)
            total += step.reward
            if step.done:
                return {**step.info, "reward_sum": total}
    raise RuntimeError(f"{env.entry.id}: the ground-truth replay did not finish the episode")
