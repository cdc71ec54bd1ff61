"""``LLMConfig``: the config block a recipe nests for each LLM it calls (agent, judge, user)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, kw_only=True)
class LLMConfig:
    """Which LLM to call and how. ``provider=openai`` talks to any OpenAI-compatible server
    (vLLM, SGLang, a hosted API); ``provider=local`` generates with a local transformers model."""

    provider: Literal["openai", "local"] = field(
        default="openai",
        metadata=_help("openai: an OpenAI-compatible HTTP server; local: a transformers model"),
    )
    model: str = field(
        default="Qwen/Qwen3-8B",
        metadata=_help("model name sent to the server, or the local model's path (provider=local)"),
    )
    base_url: str = field(
        default="http://127.0.0.1:8000/v1",
        metadata=_help("server base URL including /v1 (vLLM/SGLang default port 8000/30000)"),
    )
    api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata=_help("environment variable holding the API key (unset: no Authorization header)"),
    )
    concurrency: int = field(default=32, metadata=_help("max requests in flight"))
    timeout_s: float = field(
        default=600.0,
        metadata=_help("seconds without an answer before a retry (long generations need minutes)"),
    )
    max_retries: int = field(
        default=5, metadata=_help("retries on timeouts, dropped connections, 429 and 5xx")
    )
    backoff_base_s: float = field(
        default=1.0, metadata=_help("first backoff cap; doubles per retry (full jitter)")
    )
    backoff_max_s: float = field(default=30.0, metadata=_help("largest backoff between retries"))
    cache_dir: str | None = field(
        default=None,
        metadata=_help("directory of the on-disk response cache (unset: no cache)"),
    )
    temperature: float = field(default=0.7, metadata=_help("sampling temperature (0: greedy)"))
    top_p: float = field(default=1.0, metadata=_help("nucleus sampling p"))
    max_tokens: int = field(default=4096, metadata=_help("max new tokens per reply"))
    seed: int | None = field(
        default=None, metadata=_help("sampling seed sent with each request (unset: none)")
    )
    extra_body: dict[str, Any] = field(
        default_factory=dict,
        metadata=_help(
            "extra request fields, e.g. {chat_template_kwargs: {enable_thinking: false}} on vLLM"
        ),
    )
    device: str = field(default="cpu", metadata=_help("provider=local: torch device"))
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = field(
        default="auto", metadata=_help("provider=local: parameter dtype")
    )
    max_batch_size: int = field(
        default=8, metadata=_help("provider=local: max requests per generate() batch")
    )

    def sampling(self) -> dict[str, Any]:
        """The default sampling parameters every request carries."""
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            params["seed"] = self.seed
        return params
