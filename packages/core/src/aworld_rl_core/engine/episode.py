"""The episode engine: a turn-by-turn state machine over a batch of environments.

A driver asks :meth:`Rollout.pending` what to generate (one :class:`Turn` per active episode),
generates it however it can (batched HF ``generate``, verl's async server, an LLM client) and
hands the results to :meth:`Rollout.advance`, which cuts and decodes each model turn, steps all
environments together (``environment.step_many``) and applies their answers: turn caps, the
token budget, end and truncation, the loss mask. Every driver ends and decodes episodes here,
so they agree. Nothing here imports torch.

In token mode (a :class:`ChatCodec` is given) each episode also carries ``prompt_ids``,
``completion_ids``, ``loss_mask`` (1 = sampled by the model, 0 = environment, chat template or
inline observation) and ``logprobs`` (0.0 on masked tokens; None once a turn came without them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.engine.codec import ChatCodec, Ending, first_stop
from aworld_rl_core.environment import Message, Step, step_many, stop_strings


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Bounds of one episode; ``None`` = unbounded (``play`` then leaves the turn length to the
    client and stops only when the environment says done)."""

    max_turns: int | None = None
    max_new_tokens: int | None = None
    max_response_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_new_tokens", "max_response_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"episode limit {name} must be >= 1 (or None), got {value}")

    @classmethod
    def of(cls, rl: Any) -> Limits:
        """The limits an ``RLConfig`` (``trainer.rl``) sets."""
        return cls(
            max_turns=rl.max_turns,
            max_new_tokens=rl.max_new_tokens,
            max_response_tokens=rl.max_response_tokens,
        )


@dataclass
class Episode:
    """One episode: the conversation, what the environment said and, in token mode, tokens.

    ``messages`` holds the opening messages, the model turns and the observations (inline
    observations inside the assistant message they interrupt); ``reward`` is the sum of
    ``step_rewards``; ``info`` the last step's info; ``error`` why a driver gave up on the episode.
    """

    messages: list[Message]
    prompt_messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    stop: tuple[str, ...] = ()
    reward: float = 0.0
    step_rewards: list[float] = field(default_factory=list)
    turns: int = 0
    done: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    prompt_ids: list[int] | None = None
    completion_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    continuing: bool = False
    """The last assistant turn is open (an inline observation follows it): the model continues."""
    turn_closed: bool = False
    """Token mode: the last model turn ended with its end-of-turn token."""

    def scalar_info(self) -> dict[str, float]:
        """The finite numbers of the last step's ``info`` (the metrics drivers log)."""
        return {
            str(k): float(v)
            for k, v in self.info.items()
            if isinstance(v, bool | int | float) and math.isfinite(float(v))
        }

    @property
    def completion(self) -> list[Message]:
        """The messages after the opening prompt (what reward functions receive)."""
        return self.messages[len(self.prompt_messages) :]

    def _extend(self, ids: Sequence[int], logprobs: Sequence[float] | None, *, model: bool) -> None:
        self.completion_ids.extend(ids)
        self.loss_mask.extend([1 if model else 0] * len(ids))
        if logprobs is None and model:
            self.logprobs = None
        elif self.logprobs is not None:
            self.logprobs.extend(logprobs if model and logprobs is not None else [0.0] * len(ids))


@dataclass(frozen=True)
class Turn:
    """What to generate for one episode: its token prompt (token mode) or messages, the token
    cap of this turn (None = the client's own) and the stop strings."""

    index: int
    messages: list[Message]
    tools: list[dict[str, Any]] | None
    prompt_ids: list[int] | None
    max_new_tokens: int | None
    stop: tuple[str, ...]
    continuing: bool


@dataclass(frozen=True)
class Output:
    """A generated model turn: token ids (token drivers, may run past the end) or text (LLM
    clients, already stopped: ``finish`` is the client's finish reason)."""

    ids: Sequence[int] | None = None
    logprobs: Sequence[float] | None = None
    text: str | None = None
    finish: str | None = None


EnvFactory = Callable[[Mapping[str, Any]], Any]


class Rollout:
    """The state of a batch of episodes, advanced one model turn at a time (module docstring).

    ``tools`` gives each episode's tool specs (default: the environment's ``tools``).
    """

    def __init__(
        self,
        envs: Sequence[Any],
        limits: Limits | None = None,
        *,
        codec: ChatCodec | None = None,
        tools: Sequence[Sequence[Mapping[str, Any]] | None] | None = None,
    ) -> None:
        if tools is not None and len(tools) != len(envs):
            raise ValueError(f"got tools for {len(tools)} episodes, {len(envs)} environments")
        self.envs = list(envs)
        self.limits = limits or Limits()
        self.codec = codec
        self.episodes: list[Episode] = []
        for i, env in enumerate(self.envs):
            opening = [dict(m) for m in env.reset()]
            if not opening:
                raise ValueError(f"{type(env).__name__}.reset() returned no opening messages")
            episode_tools: Any = (tools[i] if tools is not None else None) or getattr(
                env, "tools", None
            )
            episode = Episode(
                messages=list(opening),
                prompt_messages=list(opening),
                tools=list(episode_tools) if episode_tools else None,
                stop=stop_strings(env),
            )
            if codec is not None:
                episode.prompt_ids = codec.prompt_ids(opening, episode.tools)
            self.episodes.append(episode)

    @property
    def finished(self) -> bool:
        return all(e.done for e in self.episodes)

    def pending(self) -> list[Turn]:
        """One turn request per active episode."""
        return [self._turn(i, e) for i, e in enumerate(self.episodes) if not e.done]

    def _cap(self, episode: Episode) -> int | None:
        """Tokens the episode's next model turn may take (None = the client decides)."""
        cap = self.limits.max_new_tokens
        if self.codec is not None and self.limits.max_response_tokens is not None:
            left = self.limits.max_response_tokens - len(episode.completion_ids)
            cap = left if cap is None else min(cap, left)
        return cap

    def _turn(self, index: int, episode: Episode) -> Turn:
        prompt = None
        if episode.prompt_ids is not None:
            prompt = episode.prompt_ids + episode.completion_ids
        return Turn(
            index=index,
            messages=[dict(m) for m in episode.messages],
            tools=episode.tools,
            prompt_ids=prompt,
            max_new_tokens=self._cap(episode),
            stop=episode.stop,
            continuing=episode.continuing,
        )

    def advance(self, outputs: Mapping[int, Output] | Sequence[Output]) -> None:
        """Record the model turns (by episode index, or in :meth:`pending` order), step their
        environments together and apply the steps."""
        texts = self.take(outputs)
        steps = step_many([self.envs[i] for i in texts], list(texts.values()))
        self.apply(dict(zip(texts, steps, strict=True)))

    def take(self, outputs: Mapping[int, Output] | Sequence[Output]) -> dict[int, str]:
        """Record the model turns; the text each environment must now be stepped with (a driver
        that gathers steps across rollouts calls this, ``step_many`` and :meth:`apply`)."""
        if not isinstance(outputs, Mapping):
            turns = self.pending()
            if len(outputs) != len(turns):
                raise RuntimeError(f"got {len(outputs)} outputs for {len(turns)} pending turns")
            outputs = {t.index: out for t, out in zip(turns, outputs, strict=True)}
        texts = {}
        for index, output in outputs.items():
            episode = self.episodes[index]
            if episode.done:
                raise RuntimeError(f"episode {index} is finished; it takes no more turns")
            texts[index] = self._record(episode, output)
        return texts

    def apply(self, steps: Mapping[int, Step]) -> None:
        """Apply the environments' answers to the turns :meth:`take` recorded."""
        for index, step in steps.items():
            self._apply(index, self.episodes[index], step)

    def end(self, index: int, error: str) -> None:
        """Give up on an episode (its generation failed); it keeps what it has."""
        episode = self.episodes[index]
        episode.done, episode.error = True, error

    def _record(self, episode: Episode, output: Output) -> str:
        """Add the model turn to the episode; its text (what the environment reads)."""
        if output.ids is not None:
            if self.codec is None:
                raise ValueError("token outputs need a Rollout with a codec")
            cut = self.codec.cut(output.ids, output.logprobs, self._cap(episode), episode.stop)
            text, ids, logprobs = cut.text, cut.ids, cut.logprobs
        else:
            text, ending = _text_turn(output, episode.stop)
            ids = self.codec.text_turn(text, ending) if self.codec is not None else []
            logprobs = None
        if self.codec is not None:
            episode._extend(ids, logprobs, model=True)
            episode.turn_closed = bool(ids) and ids[-1] == self.codec.eos_id
        episode.turns += 1
        if episode.continuing:
            last = episode.messages[-1]
            episode.messages[-1] = {**last, "content": str(last.get("content") or "") + text}
        else:
            episode.messages.append({"role": "assistant", "content": text})
        episode.continuing = False
        return text

    def _apply(self, index: int, episode: Episode, step: Step) -> None:
        episode.reward += float(step.reward)
        episode.step_rewards.append(float(step.reward))
        episode.info = dict(step.info or {})
        if step.done:
            episode.done = True
            return
        limits, codec = self.limits, self.codec
        over_budget = (
            codec is not None
            and limits.max_response_tokens is not None
            and len(episode.completion_ids) >= limits.max_response_tokens
        )
        if (limits.max_turns is not None and episode.turns >= limits.max_turns) or over_budget:
            episode.done = episode.truncated = True
            return
        if bool(step.observation) == (step.inline is not None):
            raise ValueError(
                f"{type(self.envs[index]).__name__}.step returned done=False with "
                + ("both an observation and inline text" if step.observation else "no observation")
                + ": an unfinished episode gives exactly one of them before the model's next turn"
            )
        if step.inline is not None:
            self._add(episode, codec.encode(step.inline) if codec else [])
            if not episode.done:
                last = episode.messages[-1]
                episode.messages[-1] = {**last, "content": str(last["content"]) + step.inline}
                episode.continuing = True
            return
        suffix: list[int] = []
        if codec is not None:
            suffix = codec.observation_ids(step.observation)
            if not episode.turn_closed:  # close the cut-off turn; the model did not sample it
                suffix = [codec.eos_id, *suffix]
        self._add(episode, suffix)
        if not episode.done:
            episode.messages.extend(dict(m) for m in step.observation)

    def _add(self, episode: Episode, ids: list[int]) -> None:
        """Append environment tokens, or end the episode when they do not fit the budget."""
        cap = self.limits.max_response_tokens
        if (
            self.codec is not None
            and cap is not None
            and len(episode.completion_ids) + len(ids) >= cap
        ):
            episode.done = episode.truncated = True
            return
        episode._extend(ids, (), model=False)

    def close(self) -> None:
        """Close every environment."""
        for env in self.envs:
            env.close()


def _text_turn(output: Output, stops: Sequence[str]) -> tuple[str, Ending]:
    """A client's reply as model text and how the turn ended."""
    text = output.text or ""
    end = first_stop(text, stops)
    if end is not None:
        return text[:end], "stop"
    return text, "length" if output.finish == "length" else "eos"


Generate = Callable[[Sequence[Turn]], Sequence[Output]]
"""A synchronous batch generator: one :class:`Output` per turn, in order."""


def run_batched(
    rollout: Rollout, generate: Generate, *, batch_size: int | None = None
) -> list[Episode]:
    """Drive ``rollout`` to the end with a synchronous generator (the trl driver's loop).

    ``batch_size`` caps how many episodes share one ``generate`` call (``None`` = all active
    episodes of a turn); the environments of a turn are stepped together either way.
    """
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 or None, got {batch_size}")
    while not rollout.finished:
        turns = rollout.pending()
        size = batch_size or len(turns)
        outputs: dict[int, Output] = {}
        for start in range(0, len(turns), size):
            chunk = turns[start : start + size]
            got = list(generate(chunk))
            if len(got) != len(chunk):
                raise RuntimeError(f"generate returned {len(got)} outputs for {len(chunk)} turns")
            outputs.update({t.index: out for t, out in zip(chunk, got, strict=True)})
        rollout.advance(outputs)
    return rollout.episodes
