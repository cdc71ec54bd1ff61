"""Token rendering of episodes with a chat template, and how a model turn is cut and decoded.

The token drivers (trl, verl) and a ``play`` that counts tokens share this codec, so they render
prompts, observations and inline text, and decode model turns, the same way. Nothing here
imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Message = dict[str, Any]
Ending = Literal["eos", "stop", "length"]
"""How a model turn ended: its end-of-turn token, a stop string, or the token budget."""


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


@dataclass(frozen=True)
class ModelTurn:
    """One model turn after cutting: its tokens, their log-probabilities, text and ending."""

    ids: list[int]
    logprobs: list[float] | None
    text: str
    ending: Ending


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """End offset of the earliest stop string in ``text`` (None when there is none)."""
    found = [(text.find(s), -len(s), s) for s in stops if s and s in text]
    if not found:
        return None
    start, _, stop = min(found)
    return start + len(stop)


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
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        """Token ids of plain text (no special tokens added)."""
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

    def cut(
        self,
        ids: Sequence[int],
        logprobs: Sequence[float] | None,
        budget: int | None,
        stops: Sequence[str] = (),
    ) -> ModelTurn:
        """The sampled turn up to its end: the end-of-turn token, the first stop string or the
        budget, whichever comes first (generators may return tokens past the end).

        A stop string may end inside a token (``"</search>\\n"``): the token stays (it was
        sampled) and the text ends with the stop string.
        """
        ids = list(ids if budget is None else ids[:budget])
        ending: Ending = "length"
        if self.eos_id in ids:
            ids, ending = ids[: ids.index(self.eos_id) + 1], "eos"
        stop_at = self._stop_prefix(ids, stops) if stops else None
        text = self.decode(ids)
        if stop_at is not None:
            ids, ending = ids[:stop_at], "stop"
            text = self.decode(ids)
            text = text[: first_stop(text, stops)]
        kept = None if logprobs is None else [float(x) for x in list(logprobs)[: len(ids)]]
        return ModelTurn(ids, kept, text, ending)

    def _stop_prefix(self, ids: list[int], stops: Sequence[str]) -> int | None:
        """Fewest leading tokens whose text holds a stop string (None when no prefix does)."""
        if first_stop(self.decode(ids), stops) is None:
            return None
        low, high = 1, len(ids)  # the full prefix holds one; find the shortest (monotone)
        while low < high:
            mid = (low + high) // 2
            if first_stop(self.tokenizer.decode(ids[:mid], skip_special_tokens=False), stops):
                high = mid
            else:
                low = mid + 1
        return low

    def text_turn(self, text: str, ending: Ending) -> list[int]:
        """Tokens of a model turn given as text (an LLM client's reply)."""
        return self.encode(text) + ([self.eos_id] if ending == "eos" else [])
