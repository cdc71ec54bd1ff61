"""The client interface: requests, completions and the ``LLMClient`` protocol."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]


@dataclass(frozen=True)
class Completion:
    """One assistant reply.

    ``text`` is the message content ("" when the model only called tools); ``tool_calls`` holds
    OpenAI-style tool calls when the server parsed them; ``reasoning`` holds a separate reasoning
    channel when the server returns one (vLLM / SGLang ``reasoning_content``); ``stop_reason``
    is the stop string that ended ``text`` (vLLM's field; the text does not include it).
    ``token_ids`` and ``logprobs`` are the reply's sampled tokens and their log-probabilities,
    present when the request asked for them (``logprobs=True``; vLLM's ``return_token_ids=True``)
    and the server sent them (training backends check their ratios against these).
    """

    text: str
    model: str = ""
    finish_reason: str | None = None
    stop_reason: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    cached: bool = False

    def message(self) -> Message:
        """The reply as an OpenAI assistant message, ready to append to a conversation."""
        msg: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (``cached`` left out: it describes the call, not the reply)."""
        data = asdict(self)
        data.pop("cached")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool = False) -> Completion:
        """Inverse of :meth:`to_dict`."""
        return cls(
            text=data["text"],
            model=data.get("model", ""),
            finish_reason=data.get("finish_reason"),
            stop_reason=data.get("stop_reason"),
            tool_calls=data.get("tool_calls"),
            reasoning=data.get("reasoning"),
            usage=dict(data.get("usage") or {}),
            token_ids=data.get("token_ids"),
            logprobs=data.get("logprobs"),
            cached=cached,
        )


@dataclass(frozen=True)
class ChatRequest:
    """One chat call for :func:`chat_many`: messages, optional tool schemas, sampling overrides."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    sampling: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, value: Any) -> ChatRequest:
        """Accept a ChatRequest, a message list or a dict ``{messages, tools?, **sampling}``."""
        if isinstance(value, ChatRequest):
            return value
        if isinstance(value, list):
            return cls(messages=value)
        if isinstance(value, dict) and "messages" in value:
            rest = dict(value)
            messages = rest.pop("messages")
            tools = rest.pop("tools", None)
            return cls(messages=messages, tools=tools, sampling=rest)
        raise TypeError(
            "a chat request must be a ChatRequest, a list of messages or a dict with a "
            f"'messages' key; got {type(value).__name__}"
        )


@runtime_checkable
class LLMClient(Protocol):
    """What agents, judges and synthesis jobs call. Implementations are async and bound their
    own concurrency; ``sampling`` keys follow the OpenAI API (temperature, top_p, max_tokens,
    stop, seed)."""

    model: str

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion: ...

    def request_key(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> str: ...

    async def aclose(self) -> None: ...
