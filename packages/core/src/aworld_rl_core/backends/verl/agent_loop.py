"""A verl agent loop that drives our ``Environment`` protocol for multi-turn episodes.

Per episode (one ``run`` call): the environment is rebuilt from the row's episode spec
(``extra_info["aworld"]``), ``reset(task)`` gives the opening messages, then turns alternate:
the policy generates through verl's ``server_manager`` (mask 1), the decoded text goes to
``env.step`` (in a worker thread: episodes of one worker run concurrently), and the observation
messages are appended with mask 0. The episode ends when the
environment says done, at ``multi_turn.max_assistant_turns`` or when the response budget is spent.
The episode reward (sum of step rewards plus any configured reward functions) is set on
``AgentLoopOutput.reward_score``, so verl skips ``compute_score`` for these rows.

Imported by verl's plugin loader (see ``plugin.py``); it imports verl at module level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from aworld_rl_core.backends.verl.reward import score_completion, task_columns
from aworld_rl_core.backends.verl.specs import EpisodeSpec

AGENT_LOOP_NAME = "aworld_env"


def _scalar_info(info: dict[str, Any]) -> dict[str, float]:
    """The numeric entries of the last step's ``info``."""
    out = {}
    for key, value in info.items():
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            out[str(key)] = float(value)
    return out


@dataclass
class _Trajectory:
    """The growing token sequence of one episode and what the environment said."""

    messages: list[dict[str, Any]]
    token_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_rewards: list[float] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    done: bool = False


@register(AGENT_LOOP_NAME)
class EnvAgentLoop(AgentLoopBase):
    """Multi-turn rollouts against an aworld ``Environment`` (one instance per episode)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("tools", None)  # verl's tool list: our environments bring their own tools
        kwargs.pop("name", None)  # set when configured through agent_loop_config_path
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.multi_turn
        self.max_turns = multi_turn.max_assistant_turns
        self.response_length = self.rollout_config.response_length
        self.episodes: dict[str, Any] = {}

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        spec = EpisodeSpec.from_extra_info(kwargs.get("extra_info"))
        if spec is None or spec.env is None:
            raise ValueError(
                f"agent loop '{AGENT_LOOP_NAME}' got a row without an environment spec in "
                "extra_info['aworld']; write the parquet with aworld_rl_core's verl launcher"
            )
        request_id = uuid4().hex
        env = self.episodes[request_id] = await self._call(spec.build_env)
        try:
            return await self._episode(env, spec, request_id, sampling_params, kwargs)
        finally:
            self.episodes.pop(request_id, None)
            env.close()

    async def _call(self, fn: Any, *args: Any) -> Any:
        """Run environment code in a thread, so one slow episode does not stall the others."""
        return await self.loop.run_in_executor(None, fn, *args)

    async def _episode(
        self,
        env: Any,
        spec: EpisodeSpec,
        request_id: str,
        sampling_params: dict[str, Any],
        row: dict[str, Any],
    ) -> AgentLoopOutput:
        opening = [dict(m) for m in (await self._call(env.reset, spec.task) or row["raw_prompt"])]
        tools = spec.task.get("tools") or None
        t = _Trajectory(messages=list(opening))
        t.token_ids = await self.ct_build_initial_tokens(t.messages, tools=tools)
        while not t.done and len(t.mask) < self.response_length:
            budget = self.response_length - len(t.mask)
            params = {**sampling_params, "max_tokens": min(budget, spec.max_new_tokens or budget)}
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=t.token_ids, sampling_params=params
            )
            t.turns += 1
            merged, t.mask, logprobs = await self.ct_merge_assistant_token(
                t.token_ids,
                list(output.token_ids),
                t.mask,
                t.logprobs if (t.logprobs or output.log_probs) else None,
                assistant_logprobs=list(output.log_probs) if output.log_probs else None,
            )
            t.token_ids = merged.token_ids
            if logprobs is not None:
                t.logprobs = list(logprobs)
            text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            step = await self._call(env.step, text)
            t.turn_rewards.append(float(step.reward))
            t.info, t.done = dict(step.info or {}), bool(step.done)
            t.messages.append({"role": "assistant", "content": text})
            if t.done or (self.max_turns and t.turns >= self.max_turns) or not step.observation:
                break
            previous = list(t.messages)
            t.messages.extend(dict(m) for m in step.observation)
            merged, mask, logprobs = await self.ct_merge_context_msg(
                previous, t.messages, t.token_ids, t.mask, t.logprobs or None, tools=tools
            )
            if len(mask) >= self.response_length:
                break  # the observation does not fit: end before it
            t.token_ids, t.mask = merged.token_ids, mask
            if t.logprobs:
                t.logprobs = list(logprobs or [])
        return self._output(spec, opening, t, request_id)

    def _output(
        self, spec: EpisodeSpec, opening: list[dict[str, Any]], t: _Trajectory, request_id: str
    ) -> AgentLoopOutput:
        env_return = sum(t.turn_rewards)
        # reward_extra_info needs the same keys in every episode of a batch (verl stacks them);
        # the environment's info varies, so it travels separately as ``env_info``.
        extra = {"env/return": env_return, "env/done": float(t.done)}
        score = env_return
        if spec.rewards:
            bonus, parts = score_completion(
                spec.rewards,
                spec.reward_weights(),
                prompt=opening,
                completion=t.messages[len(opening) :],
                columns=task_columns(spec.task),
                env_return=env_return,
            )
            score += bonus
            extra.update(parts)
        n = self.response_length
        split = len(t.token_ids) - len(t.mask)
        return AgentLoopOutput(
            prompt_ids=t.token_ids[:split],
            response_ids=t.token_ids[split:][:n],
            response_mask=t.mask[:n],
            response_logprobs=t.logprobs[:n] if t.logprobs else None,
            reward_score=score,
            num_turns=len(t.messages) - len(opening) + 1,
            metrics={},
            extra_fields={
                "turn_scores": t.turn_rewards,
                "request_id": request_id,
                "env_info": _scalar_info(t.info),
                "reward_extra_info": {"score": score, **extra},
            },
        )
