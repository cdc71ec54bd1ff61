"""Multi-turn rollouts over the Environment protocol, at the token level.

An episode is the opening prompt (rendered with the chat template) followed by one flat
completion: model turns interleaved with environment observations. ``env_mask`` marks every
completion token: 1 for tokens the model sampled (trained on), 0 for tokens the environment or
the chat template added (masked out of the loss). Generation is injected (``Generate``), so the
same loop serves the TRL backend, benchmarks and scripted tests; nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aworld_rl_core.environment import Environment, Message

Generate = Callable[[Sequence[Sequence[int]], int], list[tuple[list[int], list[float] | None]]]
"""``generate(token_prompts, max_new_tokens) -> [(new_ids, logprobs or None), ...]``, one per
prompt; ``new_ids`` may run past an end-of-turn token (the loop cuts there)."""


class ChatTokenizer(Protocol):
    """The part of a Hugging Face tokenizer the codec uses."""

    eos_token_id: int | None

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = ...) -> str: ...


_DUMMY_TURN: list[Message] = [
    {"role": "user", "content": "dummy"},
    {"role": "assistant", "content": "dummy"},
]


class ChatCodec:
    """Renders opening prompts and observation suffixes as token ids with a chat template.

    Observation tokens are found by rendering a fixed dummy exchange with and without the
    observation messages and cutting the longer one after the dummy assistant's end-of-turn
    token. Cutting at the end-of-turn token (not at a prefix match) keeps it right for templates
    that re-render earlier assistant turns once a new user turn follows (Qwen3 drops old
    reasoning).
    """

    def __init__(self, tokenizer: ChatTokenizer, *, chat_template: str | None = None) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token_id: set the end-of-turn token")
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.eos_id: int = tokenizer.eos_token_id
        self._eos_in_dummy = self._render(_DUMMY_TURN, generation_prompt=False).count(self.eos_id)
        if self._eos_in_dummy == 0:
            raise ValueError(
                "the chat template does not close assistant turns with the eos token "
                f"(id {self.eos_id}); set tokenizer.eos_token to the end-of-turn token"
            )

    def _render(
        self,
        messages: Sequence[Message],
        *,
        generation_prompt: bool,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            list(messages),
            tools=list(tools) if tools else None,
            add_generation_prompt=generation_prompt,
            tokenize=False,
            chat_template=self.chat_template,
        )
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def prompt_ids(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> list[int]:
        """The opening messages plus the assistant generation prompt."""
        if not messages:
            raise ValueError("an episode needs at least one opening message; reset() gave none")
        return self._render(messages, generation_prompt=True, tools=tools)

    def observation_ids(self, messages: Sequence[Message]) -> list[int]:
        """Tokens after an assistant end-of-turn: the observation and the next generation prompt."""
        full = self._render([*_DUMMY_TURN, *messages], generation_prompt=True)
        seen = 0
        for position, token in enumerate(full):
            if token == self.eos_id:
                seen += 1
                if seen == self._eos_in_dummy:
                    return full[position + 1 :]
        raise ValueError("could not locate the end of the assistant turn in the rendered template")

    def decode(self, ids: Sequence[int]) -> str:
        """Model text of one turn: every token but a closing end-of-turn token.

        Special tokens stay (some tokenizers register ``<tool_call>`` or ``<think>`` as special,
        and parsers need them).
        """
        ids = list(ids)
        if ids and ids[-1] == self.eos_id:
            ids.pop()
        return self.tokenizer.decode(ids, skip_special_tokens=False)


@dataclass
class Episode:
    """One finished rollout: tokens, loss mask and what the environment said.

    ``logprobs`` (sampling log-probabilities, 0.0 on environment tokens) is ``None`` as soon as
    one turn came from a generator that does not report them.
    """

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    prompt_messages: list[Message] = field(default_factory=list)
    reward: float = 0.0
    turns: int = 0
    done: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    def _extend(self, ids: Sequence[int], logprobs: Sequence[float] | None, *, model: bool) -> None:
        self.completion_ids.extend(ids)
        self.env_mask.extend([1 if model else 0] * len(ids))
        if logprobs is None:
            self.logprobs = None
        elif self.logprobs is not None:
            self.logprobs.extend(logprobs if model else [0.0] * len(ids))


@dataclass(frozen=True, kw_only=True)
class RolloutLimits:
    """Bounds of one episode (the ``trainer.rl`` fields of the same names)."""

    max_turns: int = 8
    max_new_tokens: int = 256
    max_response_tokens: int = 2048

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_new_tokens", "max_response_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"rollout limit {name} must be >= 1, got {getattr(self, name)}")


def _cut_at_eos(ids: Sequence[int], logprobs: Sequence[float] | None, eos_id: int, budget: int):
    end = budget
    if eos_id in ids[:budget]:
        end = list(ids).index(eos_id) + 1
    return list(ids[:end]), None if logprobs is None else list(logprobs[:end])


def run_episodes(
    envs: Sequence[Environment],
    tasks: Sequence[Mapping[str, Any] | None],
    generate: Generate,
    codec: ChatCodec,
    limits: RolloutLimits,
    *,
    tools: Sequence[Sequence[Mapping[str, Any]] | None] | None = None,
    batch_size: int | None = None,
) -> list[Episode]:
    """Play one episode per environment, generating all active episodes' turns together.

    ``batch_size`` caps how many episodes share one ``generate`` call (``1`` = one episode at a
    time; ``None`` = all active episodes). The episode reward is the sum of step rewards.
    """
    if len(envs) != len(tasks):
        raise ValueError(f"got {len(envs)} environments for {len(tasks)} tasks")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 or None, got {batch_size}")
    tools = tools or [None] * len(envs)
    episodes = []
    for env, task, episode_tools in zip(envs, tasks, tools, strict=True):
        opening = env.reset(task)
        episode = Episode(prompt_ids=codec.prompt_ids(opening, episode_tools))
        episode.prompt_messages = list(opening)
        episodes.append(episode)

    for turn in range(limits.max_turns):
        last_turn = turn + 1 == limits.max_turns
        active = [i for i, episode in enumerate(episodes) if not episode.done]
        if not active:
            break
        step = batch_size or len(active)
        for start in range(0, len(active), step):
            chunk = active[start : start + step]
            budgets = [limits.max_response_tokens - len(episodes[i].completion_ids) for i in chunk]
            outputs = generate(
                [episodes[i].prompt_ids + episodes[i].completion_ids for i in chunk],
                min(limits.max_new_tokens, max(budgets)),
            )
            if len(outputs) != len(chunk):
                raise RuntimeError(f"generate returned {len(outputs)} outputs for {len(chunk)}")
            for i, budget, (ids, logprobs) in zip(chunk, budgets, outputs, strict=True):
                cut = _cut_at_eos(ids, logprobs, codec.eos_id, min(budget, limits.max_new_tokens))
                _play_turn(envs[i], episodes[i], *cut, codec, limits, last_turn=last_turn)
    return episodes


def _play_turn(
    env: Environment,
    episode: Episode,
    ids: list[int],
    logprobs: list[float] | None,
    codec: ChatCodec,
    limits: RolloutLimits,
    *,
    last_turn: bool,
) -> None:
    episode._extend(ids, logprobs, model=True)
    episode.turns += 1
    text = codec.decode(ids)
    episode.messages.append({"role": "assistant", "content": text})
    result = env.step(text)
    episode.reward += float(result.reward)
    episode.info = dict(result.info)
    if result.done:
        episode.done = True
        return
    if last_turn or len(episode.completion_ids) >= limits.max_response_tokens:
        episode.done = episode.truncated = True
        return
    if not result.observation:
        raise ValueError(
            f"{type(env).__name__}.step returned done=False with no observation: "
            "an unfinished episode must say something before the model's next turn"
        )
    suffix = codec.observation_ids(result.observation)
    if not ids or ids[-1] != codec.eos_id:
        suffix = [codec.eos_id, *suffix]  # close the cut-off turn; the model did not sample it
    if len(episode.completion_ids) + len(suffix) >= limits.max_response_tokens:
        episode.done = episode.truncated = True
        return
    episode._extend(suffix, (), model=False)
    episode.messages.extend(result.observation)
