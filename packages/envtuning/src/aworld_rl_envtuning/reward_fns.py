"""EnvTuning rewards in TRL's shape, ``fn(completions, *, entry_id, **columns) -> list[float]``.

Each completion (an episode's messages, its assistant texts, or one response string) is replayed
through a fresh :class:`EnvTuningEnv` of its row's entry, so the score is what the environment
would have given: usable wherever a backend scores finished rollouts (verl's reward adapter, TRL
reward functions) rather than summing the environment's step rewards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aworld_rl_envtuning.rewards import RewardSpec

Ids = Sequence[str] | None


def assistant_texts(completion: Any) -> list[str]:
    """The model responses of one completion (messages, texts, or a single string)."""
    if isinstance(completion, str):
        return [completion]
    texts = []
    for item in completion or []:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and item.get("role") == "assistant":
            texts.append(str(item.get("content") or ""))
    return texts


def replay_reward(completion: Any, entry_id: str, spec: RewardSpec, **env_options: Any) -> float:
    """The episode reward ``spec`` gives this completion on ``entry_id``."""
    from aworld_rl_envtuning.env import EnvTuningEnv, get_entry

    env = EnvTuningEnv(get_entry(entry_id), reward=spec, **env_options)
    env.reset()
    try:
        for text in assistant_texts(completion):
            if env.step(text).done:
                break
        return float(spec(env.stats))
    finally:
        env.close()


def _score(
    completions: Sequence[Any], entry_id: Ids, spec: RewardSpec, **options: Any
) -> list[float]:
    if entry_id is None or len(entry_id) != len(completions):
        raise ValueError(
            "EnvTuning rewards need an 'entry_id' column with one BFCL id per completion"
        )
    return [
        replay_reward(c, e, spec, **options) for c, e in zip(completions, entry_id, strict=True)
    ]


def progress(
    completions: Sequence[Any], entry_id: Sequence[str] | None = None, **_: Any
) -> list[float]:
    """Progress reward R_P over the expected turns."""
    return _score(completions, entry_id, RewardSpec(name="progress"))


def stage1_format(completions: Sequence[Any], entry_id: Ids = None, **_: Any) -> list[float]:
    """Stage-1 reward I_tool * (R_format + R_tool)."""
    return _score(completions, entry_id, RewardSpec(name="format"))


def binary(
    completions: Sequence[Any], entry_id: Sequence[str] | None = None, **_: Any
) -> list[float]:
    """1 when every turn of the entry passed."""
    return _score(completions, entry_id, RewardSpec(name="binary"))


def mixed(
    completions: Sequence[Any], entry_id: Sequence[str] | None = None, **_: Any
) -> list[float]:
    """Direct-GRPO baseline 0.9 R_P + 0.1 R_format."""
    return _score(completions, entry_id, RewardSpec(name="mixed"))
