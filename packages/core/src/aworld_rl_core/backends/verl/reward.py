"""verl's ``compute_score`` over our reward registry (TRL-shaped reward functions).

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs)``
once per trajectory. We call each configured reward ``fn(prompts=[...], completions=[...],
**columns)`` with a batch of one, where ``columns`` are the task row's columns (as the ``trl``
backend passes them) and the completion is conversational (``[{"role": "assistant", ...}]``),
as the ``trl`` backend gives a single-turn episode. The score is the weighted sum; each
reward's value is logged.

Rewards come from ``reward_kwargs`` (``rewards=[names or paths]``, ``weights=[...]``; set with
``+reward.custom_reward_function.reward_kwargs.rewards=[...]``) or, per row, from the episode
spec the launcher writes into ``extra_info``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aworld_rl_core.backends.verl.specs import EpisodeSpec, Ref
from aworld_rl_core.errors import ConfigError

Completion = str | list[dict[str, Any]]


def score_completion(
    rewards: Sequence[Ref],
    weights: Sequence[float],
    *,
    prompt: Any,
    completion: Completion,
    columns: Mapping[str, Any],
    env_return: float = 0.0,
) -> tuple[float, dict[str, float]]:
    """Weighted sum of the rewards on one completion, and each reward's value by label.

    Called as the ``trl`` backend calls them: ``prompts``, ``completions``, ``env_return`` (the
    episode's summed environment reward) and the row's columns, each a batch of one.
    """
    total, parts = 0.0, {}
    for ref, weight in zip(rewards, weights, strict=True):
        fn = ref.load("rewards")
        values = fn(prompts=[prompt], completions=[completion], env_return=[env_return], **columns)
        if len(values) != 1:
            raise ValueError(f"reward {ref.label!r} returned {len(values)} values for 1 completion")
        value = 0.0 if values[0] is None else float(values[0])
        parts[f"reward/{ref.label}"] = value
        total += weight * value
    return total, parts


RESERVED = frozenset({"prompt", "prompts", "completions", "env_return"})


def task_columns(task: Mapping[str, Any], ground_truth: Any = None) -> dict[str, Any]:
    """The columns a reward function receives: every task column but the reserved names."""
    columns = {k: [v] for k, v in task.items() if k not in RESERVED}
    if ground_truth is not None and "ground_truth" not in columns:
        columns["ground_truth"] = [ground_truth]
    return columns


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, float]:
    """verl's reward entry point: ``{"score": weighted sum, "reward/<name>": value, ...}``."""
    spec = EpisodeSpec.from_extra_info(extra_info)
    names = reward_kwargs.get("rewards")
    if names:
        rewards = tuple(Ref.from_json(n) for n in names)
        weights = tuple(float(w) for w in reward_kwargs.get("weights") or (1.0,) * len(rewards))
    elif spec is not None and spec.rewards:
        rewards, weights = spec.rewards, spec.reward_weights()
    else:
        raise ConfigError(
            f"no reward for data source {data_source!r}: pass rewards in TrainJob.rewards, or set "
            "+reward.custom_reward_function.reward_kwargs.rewards=[<registered reward>]"
        )
    if len(weights) != len(rewards):
        raise ConfigError(f"{len(weights)} reward weights for {len(rewards)} rewards")
    task = spec.task if spec is not None else {}
    if reward_kwargs.get("completion_format", "conversational") == "text":
        completion: Completion = solution_str
    else:
        completion = [{"role": "assistant", "content": solution_str}]
    score, parts = score_completion(
        rewards,
        weights,
        prompt=task.get("prompt"),
        completion=completion,
        columns=task_columns(task, ground_truth),
    )
    return {"score": score, **parts}
