"""``make_client``: an :class:`LLMConfig` to a ready client."""

from __future__ import annotations

from typing import Any

from aworld_rl_core.llm.config import LLMConfig


def make_client(cfg: LLMConfig) -> Any:
    """The async client ``cfg`` describes, wrapped in the on-disk cache when ``cache_dir`` is set
    and in a :class:`~aworld_rl_core.llm.guard.GuardedClient` (failed calls counted against
    ``max_error_rate``; the server checked before the first call when ``preflight``).

    ``provider=local`` loads ``cfg.model`` from a local path with transformers (imported here,
    lazily). Use :func:`make_sync_client` from synchronous code.
    """
    client: Any
    if cfg.provider == "openai":
        from aworld_rl_core.llm.openai_client import OpenAIClient
        from aworld_rl_core.llm.retry import RetryPolicy

        client = OpenAIClient(
            base_url=cfg.base_url,
            model=cfg.model,
            api_key_env=cfg.api_key_env or None,
            concurrency=cfg.concurrency,
            timeout_s=cfg.timeout_s,
            retry=RetryPolicy(
                max_retries=cfg.max_retries,
                base_delay_s=cfg.backoff_base_s,
                max_delay_s=cfg.backoff_max_s,
            ),
            defaults=cfg.sampling(),
            extra_body=cfg.extra_body,
        )
    elif cfg.provider == "local":
        from aworld_rl_core.llm.local_client import LocalHFClient

        client = LocalHFClient.from_pretrained(
            cfg.model,
            device=cfg.device,
            dtype=cfg.dtype,
            concurrency=cfg.concurrency,
            max_batch_size=cfg.max_batch_size,
            defaults=cfg.sampling(),
        )
    else:
        raise ValueError(f"unknown LLM provider {cfg.provider!r}: use 'openai' or 'local'")
    if cfg.cache_dir:
        from aworld_rl_core.llm.cache import ResponseCache
        from aworld_rl_core.llm.cached import CachedClient

        client = CachedClient(client, ResponseCache(cfg.cache_dir))
    from aworld_rl_core.llm.guard import GuardedClient

    name = cfg.base_url if cfg.provider == "openai" else "the local model"
    return GuardedClient(
        client, name=name, max_error_rate=cfg.max_error_rate, preflight=cfg.preflight
    )


def make_sync_client(cfg: LLMConfig) -> Any:
    """A blocking :class:`SyncClient` over :func:`make_client`."""
    from aworld_rl_core.llm.base import SyncClient

    return SyncClient(make_client(cfg))
