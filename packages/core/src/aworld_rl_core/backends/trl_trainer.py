"""TRL glue for the ``trl`` backend: episode rollouts, reward adapters, metric forwarding.

This module imports torch, transformers and trl at import time; ``trl_grpo`` imports it only
inside ``train``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from aworld_rl_core.backends import validation as val
from aworld_rl_core.backends.checkpoints import AtomicCheckpoints
from aworld_rl_core.engine import ChatCodec, Episode, Limits, Rollout, run_batched
from aworld_rl_core.environment import Environment, Message, Step
from aworld_rl_core.models.generate import HfGenerator, generate_turns
from aworld_rl_core.segments import runs

ROW_INDEX = "row_index"
"""The only data column TRL sees besides a placeholder prompt; rows stay Python objects."""
EPISODE = "episode"
"""Rollout extra field: the ``Episode`` of each completion, handed to the reward adapters."""


class PromptOnlyEnv:
    """A one-turn 'environment' for rows without one: the row's ``prompt``, no reward."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        prompt = row.get("prompt")
        self.tools = row.get("tools") or None
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        if not prompt:
            raise ValueError(
                "an RL row without an environment needs a 'prompt' column (chat messages or "
                f"text); this row has keys {sorted(row)}"
            )
        self.prompt: list[Message] = list(prompt)

    def reset(self) -> list[Message]:
        return self.prompt

    def step(self, model_text: str) -> Step:
        return Step(observation=[], done=True)

    def close(self) -> None:
        pass


class EpisodeRollout:
    """TRL ``rollout_func`` (the trl driver of the episode engine): one episode per completion.

    The trainer binds the current batch's rows first (``EnvGRPOTrainer``). Every turn, all
    active episodes generate in one batched ``generate`` (stop strings through transformers'
    stopping criteria) and their environments are stepped together. Environment, chat-template
    and inline tokens get ``env_mask`` 0, so TRL leaves them out of the loss.
    """

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        env_factory: Callable[[Mapping[str, Any]], Environment] | None,
        codec: ChatCodec,
        limits: Limits,
        *,
        temperature: float,
        top_p: float,
        call_constraint: str = "none",
    ) -> None:
        self.rows = rows
        self.call_constraint = call_constraint
        self.env_factory = env_factory
        self.codec = codec
        self.limits = limits
        self.temperature = temperature
        self.top_p = top_p
        self.batch_rows: list[Mapping[str, Any]] = []

    def bind(self, inputs: Sequence[Mapping[str, Any]]) -> None:
        self.batch_rows = [self.rows[int(x[ROW_INDEX])] for x in inputs]

    def _env(self, row: Mapping[str, Any]) -> Environment:
        return self.env_factory(row) if self.env_factory else PromptOnlyEnv(row)

    def play(
        self,
        model: Any,
        tokenizer: Any,
        rows: Sequence[Mapping[str, Any]],
        *,
        temperature: float | None = None,
        limits: Limits | None = None,
    ) -> list[Episode]:
        """One episode per row with ``model`` (``temperature=0``: greedy; ``limits``: the
        rollout's by default)."""
        generator = HfGenerator(
            model,
            pad_id=tokenizer.pad_token_id,
            stop_ids=[self.codec.eos_id],
            temperature=self.temperature if temperature is None else temperature,
            top_p=self.top_p,
            tokenizer=tokenizer,
            call_constraint=self.call_constraint,
        )
        envs: list[Environment] = []
        try:
            envs.extend(self._env(row) for row in rows)
            tools = [row.get("tools") or None for row in rows]
            rollout = Rollout(envs, limits or self.limits, codec=self.codec, tools=tools)
            return run_batched(rollout, functools.partial(generate_turns, generator))
        finally:
            for env in envs:
                env.close()

    def __call__(self, prompts: Sequence[Any], trainer: GRPOTrainer) -> dict[str, Any]:
        rows = self.batch_rows
        if len(rows) != len(prompts):
            raise RuntimeError("EpisodeRollout was not bound to this batch's rows")
        model = trainer.accelerator.unwrap_model(trainer.model)
        episodes = self.play(model, trainer.processing_class, rows)
        _log_episode_metrics(trainer, episodes)
        if self.call_constraint != "none" and isinstance(trainer, EnvGRPOTrainer):
            vocab = int(model.get_output_embeddings().weight.shape[0])
            trainer.constraint = supports(episodes, trainer.processing_class, vocab)
        logprobs = [e.logprobs for e in episodes]
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": None if any(lp is None for lp in logprobs) else logprobs,
            "env_mask": [e.loss_mask for e in episodes],
            EPISODE: episodes,
        }


CORE_METRICS = ("episode/turns", "episode/env_done", "episode/return", "episode/env_tokens")


def _log_episode_metrics(trainer: GRPOTrainer, episodes: Sequence[Episode]) -> None:
    count = len(episodes)
    trainer._log_metric("episode/turns", sum(e.turns for e in episodes) / count)
    trainer._log_metric(
        "episode/env_done", sum(e.done and not e.truncated for e in episodes) / count
    )
    trainer._log_metric("episode/return", sum(e.reward for e in episodes) / count)
    env_tokens = sum(len(e.loss_mask) - sum(e.loss_mask) for e in episodes)
    trainer._log_metric("episode/env_tokens", env_tokens / count)
    values: dict[str, list[float]] = {}  # the environments' own counters, mean per key
    for episode in episodes:
        for key, value in episode.scalar_info().items():
            values.setdefault(key, []).append(value)
    for key, got in values.items():
        name = f"episode/info/{key}" if f"episode/{key}" in CORE_METRICS else f"episode/{key}"
        trainer._log_metric(name, sum(got) / len(got))


SUPPORT = "constraint_support"
"""Batch key (``call_constraint`` on): per completion position, the row of the batch's support
table that holds the tokens the constraint allowed there (-1: every token)."""


def supports(episodes: Sequence[Episode], tokenizer: Any, vocab: int) -> tuple[Any, Any]:
    """The constrained policy's support at every completion position of ``episodes``:
    ``(index, table)``, ``index[b, t]`` the row of the boolean ``table`` (rows x ``vocab``)
    allowed before completion token ``t`` of episode ``b`` (-1: unconstrained; padded to the
    longest completion). The copy constraint is replayed on each model turn (a run of
    ``loss_mask`` 1 tokens) with the sources and tool list it had when the turn was generated
    (the messages before the turn's assistant message)."""
    import torch

    from aworld_rl_core.tooluse.constrain import CopyConstraint, message_sources, schemas

    width = max((len(e.completion_ids) for e in episodes), default=0)
    index = torch.full((len(episodes), max(width, 1)), -1, dtype=torch.long)
    rows: dict[tuple[int, ...], int] = {}
    for b, episode in enumerate(episodes):
        turns = runs(episode.loss_mask)  # the model turns of the completion
        starts = [
            i
            for i, m in enumerate(episode.messages)
            if i >= len(episode.prompt_messages) and m.get("role") == "assistant"
        ]
        for (begin, end), at in zip(turns, starts, strict=False):
            before = episode.messages[:at]
            rule = CopyConstraint(
                tokenizer, [message_sources(before)], 0, [schemas(before, episode.tools)]
            )
            ids = episode.completion_ids[begin:end]
            for offset, allowed in enumerate(rule.replay(0, ids, vocab)):
                if allowed is None:
                    continue
                # the sampled token is in the support by construction; a replay that disagrees
                # must not turn its log-probability into -inf
                key = tuple(sorted({*allowed, ids[offset]}))
                index[b, begin + offset] = rows.setdefault(key, len(rows))
    table = torch.zeros((max(len(rows), 1), vocab), dtype=torch.bool)
    for key, row in rows.items():
        table[row, list(key)] = True
    return index, table


class _ResumableRepeatSampler(RepeatSampler):
    """TRL's sampler, whose shuffle in epoch ``e`` no longer depends on how many epochs this
    process iterated: ``set_epoch(e)`` (the Trainer calls it before every epoch) reseeds the
    generator and replays the ``e`` shuffles before it, so a run resumed at an epoch boundary
    draws the uninterrupted run's prompt order (without it, the first epoch after a resume drew
    the first epoch's order)."""

    def set_epoch(self, epoch: int) -> None:
        if self.shuffle and self.seed is not None:
            self.generator.manual_seed(self.seed)
            for _ in range(epoch):
                torch.randperm(self.num_samples, generator=self.generator)


class EnvGRPOTrainer(AtomicCheckpoints, GRPOTrainer):
    """GRPOTrainer whose rollouts are our multi-turn episodes (TRL's ``rollout_func`` hook).

    TRL hands ``rollout_func`` only the prompts; this subclass tells the rollout which rows the
    batch holds before generation starts.

    With a call constraint (``trainer.rl.call_constraint``) the policy that samples is the
    model's distribution renormalised over the tokens the constraint allows; the log-probabilities
    GRPO trains (and the KL reference's) are that policy's, not the unconstrained model's, so a
    token the constraint forced carries no gradient and no KL (:func:`supports`).
    """

    def __init__(self, *, rollout: EpisodeRollout, **kwargs: Any) -> None:
        self.episode_rollout = rollout
        self.constraint: tuple[Any, Any] | None = None  # (index, table) of the current batch
        self._support: Any = None  # the index rows of the micro-batch being scored
        self._generating = False
        with warnings.catch_warnings():  # we use the experimental hook knowingly (TRL pinned)
            warnings.filterwarnings("ignore", "You are using 'rollout_func'", UserWarning)
            super().__init__(rollout_func=rollout, **kwargs)

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        sampler = super()._get_train_sampler(dataset)
        sampler.__class__ = _ResumableRepeatSampler  # TRL's arguments, plus set_epoch
        return sampler

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        self.episode_rollout.bind(inputs)
        self.constraint = None
        self._generating = True  # the whole batch is scored (reference, old policy)
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._generating = False
        if self.constraint is not None:
            index = self.constraint[0]
            width = output["completion_ids"].shape[1]
            if index.shape[1] < width:  # TRL padded further than the longest completion
                pad = index.new_full((index.shape[0], width - index.shape[1]), -1)
                index = torch.cat([index, pad], dim=1)
            output[SUPPORT] = index[:, :width]
        return output

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self._support = inputs.get(SUPPORT)
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._support = None

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: Any,
        attention_mask: Any,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **kwargs: Any,
    ) -> tuple[Any, Any, Any]:
        index = self._support
        if index is None and self._generating and self.constraint is not None:
            index = self.constraint[0]  # scoring the whole batch while it is generated
        if index is None or self.constraint is None or any(v is not None for v in kwargs.values()):
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **kwargs,
            )
        if index.shape[0] != input_ids.shape[0]:
            raise RuntimeError(
                f"constraint supports for {index.shape[0]} completions, scoring "
                f"{input_ids.shape[0]}: the batch was split without its {SUPPORT!r} rows"
            )
        return constrained_logps(
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            index,
            self.constraint[1],
            temperature=self.temperature,
            batch_size=batch_size or input_ids.size(0),
            compute_entropy=compute_entropy,
            autocast=self.accelerator.autocast,
        )


def constrained_logps(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    logits_to_keep: int,
    index: Any,
    table: Any,
    *,
    temperature: float = 1.0,
    batch_size: int,
    compute_entropy: bool = False,
    autocast: Callable[[], Any] = contextlib.nullcontext,
) -> tuple[Any, Any, None]:
    """Per-token log-probabilities (and entropies) of the completion tokens under the model's
    distribution restricted to each position's support (``index`` rows of ``table``; -1: every
    token), logits divided by ``temperature`` as when sampling."""
    import torch

    logps, entropies = [], []
    for start in range(0, input_ids.size(0), batch_size):
        end = min(start + batch_size, input_ids.size(0))
        with autocast():
            logits = model(
                input_ids=input_ids[start:end], attention_mask=attention_mask[start:end]
            ).logits
        logits = logits[:, -logits_to_keep - 1 : -1, :].float() / max(temperature, 1e-6)
        rows = index[start:end, :logits_to_keep].to(logits.device)
        if rows.shape[1] < logits_to_keep:  # positions past the longest completion: free
            rows = torch.nn.functional.pad(rows, (0, logits_to_keep - rows.shape[1]), value=-1)
        keep = table.to(logits.device)[rows.clamp(min=0)]
        keep[rows < 0] = True
        keep = keep[..., : logits.size(-1)]
        logits = logits.masked_fill(~keep, float("-inf"))
        logp = torch.log_softmax(logits, dim=-1)
        target = input_ids[start:end, -logits_to_keep:].unsqueeze(-1)
        logps.append(logp.gather(-1, target).squeeze(-1))
        if compute_entropy:
            entropies.append(-(logp.exp() * logp.masked_fill(~keep, 0.0)).sum(-1))
    return (
        torch.cat(logps, dim=0),
        torch.cat(entropies, dim=0) if compute_entropy else None,
        None,
    )


class EpisodeReward:
    """Adapts one of our reward functions to TRL's call: completions are the episode messages.

    The wrapped ``fn(completions, **columns)`` receives, per completion, the assistant and
    observation messages after the opening prompt, ``prompts`` = the opening messages, every
    column of the original row, and ``env_return`` (the episode's summed environment reward).
    """

    def __init__(self, fn: Callable[..., list[float]], rows: Sequence[Mapping[str, Any]]) -> None:
        self.fn = fn
        self.rows = rows
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *, prompts: Any, completions: Any, **kwargs: Any) -> list[float]:
        episodes: list[Episode] = kwargs.pop(EPISODE)
        rows = [self.rows[int(i)] for i in kwargs.pop(ROW_INDEX)]
        kwargs.pop("completion_ids", None)
        reserved = {"prompt", "prompts", "completions", "env_return", *kwargs}
        keys = {key for row in rows for key in row} - reserved
        columns = {key: [row.get(key) for row in rows] for key in keys}
        return self.fn(
            completions=[e.completion for e in episodes],
            prompts=[e.prompt_messages for e in episodes],
            env_return=[e.reward for e in episodes],
            **columns,
            **kwargs,
        )


def env_return(*, episode: Sequence[Episode], **_: Any) -> list[float]:
    """The environment's own episode reward (sum of step rewards), as a TRL reward function."""
    return [e.reward for e in episode]


class ValidationCallback(TrainerCallback):
    """In-run validation (``backends.validation``): every ``validation.every`` steps (and at
    the last one) ``validate(model)`` plays the validation rows greedily; the metrics go to the
    run as ``val/<name>`` and the history to ``validation.jsonl``; when the stop rule fires, the
    trainer saves that step's checkpoint and stops. The gradient norm of a validation step is
    logged before it is validated (the step's log is forced)."""

    def __init__(
        self,
        validation: val.InRunValidation,
        validate: Callable[[Any], dict[str, float]],
        run: Any,
    ) -> None:
        self.validation = validation
        self.rule = validation.stop_rule()
        self.validate = validate
        self.run = run
        self.path = run.dir / val.HISTORY_FILE
        self.history: val.History = []
        self.grad_norms: list[float] = []
        self.stopped_at: int | None = None
        self._due = False

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        # a resumed run forgets what happened after the checkpoint it resumes from
        self.history = val.read_history(self.path, up_to_step=state.global_step)
        val.write_history(self.path, self.history)
        # the gradient norms since the last validation are part of the checkpoint (its
        # trainer_state.json log_history): the next validation averages the same norms as an
        # uninterrupted run would (the plateau rule reads that mean)
        since = self.history[-1]["step"] if self.history else 0
        self.grad_norms = [
            float(e["grad_norm"])
            for e in state.log_history
            if isinstance(e.get("grad_norm"), (int, float)) and since < e.get("step", 0)
        ]
        stop = val.read_stop(self.run.dir)
        if stop is not None and stop["step"] > state.global_step:
            (self.run.dir / val.STOP_FILE).unlink()
        if self.validation.before_train and state.global_step == 0 and not self.history:
            self._run(state, control, model)

    def on_step_end(self, args, state, control, **kwargs):
        if self.validation.due(state.global_step, state.max_steps):
            self._due = control.should_log = True

    def on_log(self, args, state, control, logs=None, model=None, **kwargs):
        if logs and isinstance(logs.get("grad_norm"), (int, float)):
            self.grad_norms.append(float(logs["grad_norm"]))
        if self._due:
            self._due = False
            self._run(state, control, model)

    def _run(self, state: Any, control: Any, model: Any) -> None:
        metrics = self.validate(model)
        record = val.entry(state.global_step, metrics, self.grad_norms)
        self.grad_norms = []
        self.history.append(record)
        val.write_history(self.path, self.history)
        self.run.log({k: v for k, v in record.items() if k.startswith("val/")}, step=record["step"])
        if state.global_step > 0 and self.rule is not None and self.rule(self.history):
            self.stopped_at = state.global_step
            val.write_stop(self.run.dir, state.global_step, self.history)
            control.should_save = True
            control.should_training_stop = True


def validation_metrics(
    episodes: Sequence[Episode],
    row_index: Sequence[int],
    rewards: Sequence[Callable[..., list[float]]],
    weights: Sequence[float] | None,
) -> dict[str, float]:
    """``reward``: the mean weighted episode reward (the sum TRL trains on; ``rewards`` are
    called as TRL calls them, with ``episode`` and ``row_index``); and for every numeric key of
    the episodes' last ``info``, its mean over the episodes that have it."""
    if not episodes:
        return {}
    scores = [
        fn(prompts=None, completions=None, episode=episodes, row_index=row_index) for fn in rewards
    ]
    weights = list(weights) if weights is not None else [1.0] * len(scores)
    totals = [
        sum(w * s[i] for w, s in zip(weights, scores, strict=True)) for i in range(len(episodes))
    ]
    metrics = {"reward": sum(totals) / len(totals)}
    values: dict[str, list[float]] = {}
    for episode in episodes:
        for key, value in episode.info.items():
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and math.isfinite(value):
                values.setdefault(str(key), []).append(float(value))
    metrics.update({k: sum(v) / len(v) for k, v in values.items() if k != "reward"})
    return metrics
