"""``LLMConfig``: the config block a recipe nests for each LLM it calls (agent, judge, user).

Where the model is served and how it is reached (``base_url``, keys, concurrency, timeouts,
retries, the cache directory, the local device) may change on ``--resume``; which model it is
and how it samples may not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import option


@dataclass(frozen=True, kw_only=True)
class LLMConfig:
    """Which LLM to call and how. ``provider=openai`` talks to any OpenAI-compatible server
    (vLLM, SGLang, a hosted API); ``provider=local`` generates with a local transformers model."""

    provider: Literal["openai", "local"] = option(
        "openai", help="openai: an OpenAI-compatible HTTP server; local: a transformers model"
    )
    model: str = option(
        "Qwen/Qwen3-8B",
        help="model name sent to the server, or the local model's path (provider=local)",
    )
    base_url: str = option(
        "http://127.0.0.1:8000/v1",
        help="server base URL including /v1 (vLLM/SGLang default port 8000/30000)",
        resumable=True,
    )
    api_key_env: str = option(
        "OPENAI_API_KEY",
        help="environment variable holding the API key (unset: no Authorization header)",
        resumable=True,
    )
    concurrency: int = option(32, help="max requests in flight", ge=1, resumable=True)
    timeout_s: float = option(
        600.0,
        help="seconds for one attempt, the whole reply included (long generations need minutes)",
        gt=0,
        resumable=True,
    )
    max_retries: int = option(
        5, help="retries on timeouts, dropped connections, 429 and 5xx", ge=0, resumable=True
    )
    backoff_base_s: float = option(
        1.0, help="first backoff cap; doubles per retry (full jitter)", ge=0, resumable=True
    )
    backoff_max_s: float = option(
        30.0, help="largest backoff between retries", ge=0, resumable=True
    )
    max_error_rate: float = option(
        0.01,
        help="share of calls that may fail (after retries) before the run fails with status "
        "failed; 0: any failed call fails the run",
        ge=0,
        le=1,
        resumable=True,
    )
    preflight: bool = option(
        True,
        help="before the first call, check that the server answers, serves this model, fits the "
        "longest first prompt plus max_tokens in its context and accepts the protocol's tools",
        resumable=True,
    )
    cache_dir: str | None = option(
        None, help="directory of the on-disk response cache (unset: no cache)", resumable=True
    )
    temperature: float = option(0.7, help="sampling temperature (0: greedy)", ge=0)
    top_p: float = option(1.0, help="nucleus sampling p", gt=0, le=1)
    max_tokens: int = option(4096, help="max new tokens per reply", ge=1)
    seed: int | None = option(None, help="sampling seed sent with each request (unset: none)")
    extra_body: dict[str, Any] = option(
        factory=dict,
        help="extra request fields, e.g. {chat_template_kwargs: {enable_thinking: false}} on vLLM",
    )
    device: str = option("cpu", help="provider=local: torch device", resumable=True)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = option(
        "auto", help="provider=local: parameter dtype"
    )
    max_batch_size: int = option(
        8, help="provider=local: max requests per generate() batch", ge=1, resumable=True
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
