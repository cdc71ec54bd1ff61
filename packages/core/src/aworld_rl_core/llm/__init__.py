"""LLM clients for agents, judges and data synthesis.

One async interface (:class:`LLMClient`: ``chat``, ``chat_many``), two implementations
(:class:`OpenAIClient` for vLLM / SGLang / hosted APIs, :class:`LocalHFClient` for a local
transformers model), an on-disk cache (:class:`CachedClient`), a blocking facade
(:class:`SyncClient`) and resumable batch jobs (:class:`JsonlSink`, :func:`run_jobs`).
Build clients from config with :func:`make_client`. httpx and torch are imported only when a
client first needs them.
"""

from aworld_rl_core.llm.base import BaseLLMClient, SyncClient, chat_many
from aworld_rl_core.llm.cache import ResponseCache, cache_key
from aworld_rl_core.llm.cached import CachedClient
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
)
from aworld_rl_core.llm.factory import make_client, make_sync_client
from aworld_rl_core.llm.guard import (
    GuardedClient,
    LLMErrorBudgetExceeded,
    LLMPreflightError,
    LLMRunError,
    account_llm_errors,
    llm_error_metrics,
)
from aworld_rl_core.llm.jobs import JobReport, run_jobs, run_jobs_sync
from aworld_rl_core.llm.jsonl_sink import JsonlSink
from aworld_rl_core.llm.local_client import LocalHFClient
from aworld_rl_core.llm.openai_client import OpenAIClient
from aworld_rl_core.llm.retry import RetryPolicy
from aworld_rl_core.llm.types import ChatRequest, Completion, LLMClient

__all__ = [
    "BaseLLMClient",
    "CachedClient",
    "ChatRequest",
    "Completion",
    "GuardedClient",
    "JobReport",
    "JsonlSink",
    "LLMClient",
    "LLMConfig",
    "LLMConnectionError",
    "LLMError",
    "LLMErrorBudgetExceeded",
    "LLMHTTPError",
    "LLMPreflightError",
    "LLMResponseError",
    "LLMRunError",
    "LLMTimeoutError",
    "LocalHFClient",
    "OpenAIClient",
    "ResponseCache",
    "RetryPolicy",
    "SyncClient",
    "account_llm_errors",
    "cache_key",
    "chat_many",
    "llm_error_metrics",
    "make_client",
    "make_sync_client",
    "run_jobs",
    "run_jobs_sync",
]
