"""The verl driver of the episode engine: a verl agent loop over our ``Environment`` protocol.

Per episode (one ``run`` call): the environment is rebuilt from the row's episode spec
(``extra_info["aworld"]``), then the engine (``aworld_rl_core.engine.Rollout``) runs it turn by
turn: the policy generates through verl's ``server_manager`` (async server generation; stop
strings through vLLM / SGLang ``stop`` with the stop string kept), the engine cuts and decodes
the turn, the environments of the worker's episodes whose turns arrive together are stepped in
one ``step_many`` call (``StepGatherer``, in a worker thread: episodes run concurrently), and
observations are appended with mask 0, as in every driver. The episode reward (sum of step
rewards plus any configured reward functions) is set on ``AgentLoopOutput.reward_score``, so
verl skips ``compute_score`` for these rows.

Imported by verl's plugin loader (see ``entry_point.py``); it imports verl at module level.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from aworld_rl_core.backends.verl.reward import score_completion, task_columns
from aworld_rl_core.backends.verl.specs import EpisodeSpec
from aworld_rl_core.engine import ChatCodec, Episode, Limits, Output, Rollout, gatherer_for

AGENT_LOOP_NAME = "aworld_env"


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
        self.codec = ChatCodec(self.tokenizer)
        # the stop string stays in the output: vLLM's and SGLang's names for it
        keep = {"sglang": "no_stop_trim"}.get(self.rollout_config.name)
        self.keep_stop = {keep or "include_stop_str_in_output": True}
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
            return await self._episode(env, spec, request_id, sampling_params)
        finally:
            self.episodes.pop(request_id, None)
            env.close()

    async def _call(self, fn: Any, *args: Any) -> Any:
        """Run environment code in a thread, so one slow episode does not stall the others."""
        return await self.loop.run_in_executor(None, fn, *args)

    async def _episode(
        self, env: Any, spec: EpisodeSpec, request_id: str, sampling_params: dict[str, Any]
    ) -> AgentLoopOutput:
        limits = Limits(
            max_turns=self.max_turns or None,
            max_new_tokens=spec.max_new_tokens,
            max_response_tokens=self.response_length,
        )
        tools = [spec.task.get("tools") or None]
        rollout = await self._call(lambda: Rollout([env], limits, codec=self.codec, tools=tools))
        gatherer = gatherer_for(self.loop, spec.step_window_s)
        while not rollout.finished:
            [turn] = rollout.pending()
            params = {**sampling_params, "max_tokens": turn.max_new_tokens}
            if turn.stop:
                params.update(stop=list(turn.stop), **self.keep_stop)
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=turn.prompt_ids, sampling_params=params
            )
            generated = Output(ids=list(output.token_ids), logprobs=output.log_probs or None)
            [(index, text)] = (await self._call(rollout.take, [generated])).items()
            step = await gatherer.step(env, text)  # with the other episodes of this worker
            await self._call(rollout.apply, {index: step})
        return self._output(spec, rollout.episodes[0], request_id)

    def _output(self, spec: EpisodeSpec, episode: Episode, request_id: str) -> AgentLoopOutput:
        env_return = episode.reward
        # reward_extra_info needs the same keys in every episode of a batch (verl stacks them);
        # the environment's info varies, so it travels separately as ``env_info``.
        extra = {
            "env/return": env_return,
            "env/done": float(episode.done and not episode.truncated),
        }
        score = env_return
        if spec.rewards:
            bonus, parts = score_completion(
                spec.rewards,
                spec.reward_weights(),
                prompt=episode.prompt_messages,
                completion=episode.completion,
                columns=task_columns(spec.task),
                env_return=env_return,
            )
            score += bonus
            extra.update(parts)
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=list(episode.prompt_ids or []),
            response_ids=episode.completion_ids[:n],
            response_mask=episode.loss_mask[:n],
            response_logprobs=episode.logprobs[:n] if episode.logprobs else None,
            reward_score=score,
            num_turns=len(episode.completion) + 1,
            metrics={},
            extra_fields={
                "turn_scores": list(episode.step_rewards),
                "request_id": request_id,
                "env_info": episode.scalar_info(),
                "reward_extra_info": {"score": score, **extra},
            },
        )
