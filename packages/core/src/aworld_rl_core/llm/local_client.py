"""A client that generates with a local transformers model; concurrent calls are batched."""

from __future__ import annotations

import asyncio
from typing import Any

from aworld_rl_core.llm.base import BaseLLMClient
from aworld_rl_core.llm.cache import canonical_json
from aworld_rl_core.llm.types import Completion, Message

TEMPLATE_KEY = "chat_template_kwargs"
SAMPLING_KEYS = frozenset({"temperature", "top_p", "max_tokens", "stop", "seed", "n"})
CONTINUE_KEYS = ("continue_final_message", "add_generation_prompt")


class LocalHFClient(BaseLLMClient):
    """Chat with a local causal LM through its tokenizer's chat template.

    Calls that arrive while the model is busy are queued; each ``generate`` takes up to
    ``max_batch_size`` queued calls with the same sampling parameters (left padding), so
    concurrent agents share batches. ``generate`` runs in a worker thread, keeping the event
    loop responsive. Generation goes through the trl backend's ``HfGenerator`` (one HF
    generation path). Sampling follows the OpenAI names: ``temperature`` (0 = greedy),
    ``top_p``, ``max_tokens``, ``stop`` (strings: generation stops there; the text ends before
    the stop string, which ``Completion.stop_reason`` names, as vLLM does), ``seed``;
    ``chat_template_kwargs`` goes to the chat template (e.g. ``{"enable_thinking": False}``), as
    do vLLM's ``continue_final_message`` / ``add_generation_prompt``. Tool calls are left in
    ``text`` (parse them with ``aworld_rl_core.tooluse``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str | None = None,
        concurrency: int = 32,
        max_batch_size: int = 8,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            name or getattr(model, "name_or_path", "") or "local",
            concurrency=concurrency,
            defaults=defaults,
        )
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.hf_model = model
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.batch_sizes: list[int] = []
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        eos = set()
        for source in (getattr(model, "generation_config", None), tokenizer):
            ids = getattr(source, "eos_token_id", None)
            eos.update([ids] if isinstance(ids, int) else list(ids or []))
        self._eos = sorted(eos)

    @classmethod
    def from_pretrained(
        cls, path: str, *, device: str = "cpu", dtype: str = "auto", **kwargs: Any
    ) -> LocalHFClient:
        """Load a model and tokenizer from a local directory (or the HF cache); ``tiny:qwen3``
        and ``tiny:qwen2`` build core's tiny random model (offline)."""
        from aworld_rl_core.errors import ConfigError
        from aworld_rl_core.models import load_model_and_tokenizer
        from aworld_rl_core.models.config import ModelConfig

        try:
            config = ModelConfig(name_or_path=path, dtype=dtype)  # type: ignore[arg-type]
            model, tokenizer = load_model_and_tokenizer(config)
        except (OSError, ConfigError) as err:
            raise OSError(
                f"cannot load a local model from {path!r} ({err}); provider=local needs a model "
                "directory with config, weights and tokenizer files, or tiny:qwen3"
            ) from err
        model.to(device).eval()
        return cls(model, tokenizer, name=path, **kwargs)

    async def _chat(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> Completion:
        template_kwargs = dict(sampling.pop(TEMPLATE_KEY, None) or {})
        template_kwargs.setdefault("add_generation_prompt", True)
        for key in CONTINUE_KEYS:  # vLLM's names for continuing an open assistant message
            if key in sampling:
                template_kwargs[key] = bool(sampling.pop(key))
        prompt = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, tokenize=False, **template_kwargs
        )
        state = self._loop_state()
        queue: list[tuple[str, str, dict[str, Any], asyncio.Future[Completion]]] = state.setdefault(
            "queue", []
        )
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        queue.append((canonical_json(sampling), prompt, sampling, future))
        if state.get("drainer") is None:
            state["drainer"] = asyncio.ensure_future(self._drain(state))
        return await future

    async def _drain(self, state: dict[str, Any]) -> None:
        queue = state["queue"]
        try:
            await asyncio.sleep(0)  # let callers scheduled in the same tick join the batch
            while queue:
                group = queue[0][0]
                batch = [item for item in queue if item[0] == group][: self.max_batch_size]
                for item in batch:
                    queue.remove(item)
                live = [item for item in batch if not item[3].done()]
                if not live:
                    continue
                try:
                    results = await asyncio.to_thread(
                        self._generate, [item[1] for item in live], live[0][2]
                    )
                except Exception as err:
                    for item in live:
                        if not item[3].done():
                            item[3].set_exception(err)
                    continue
                for item, result in zip(live, results, strict=True):
                    if not item[3].done():
                        item[3].set_result(result)
        finally:
            state["drainer"] = None

    def _generate(self, prompts: list[str], sampling: dict[str, Any]) -> list[Completion]:
        """One batched ``generate`` over rendered prompts (runs in a worker thread)."""
        from aworld_rl_core.models.generate import HfGenerator

        unknown = set(sampling) - SAMPLING_KEYS
        if unknown:
            raise ValueError(f"LocalHFClient does not support sampling params {sorted(unknown)}")
        if sampling.get("n", 1) != 1:
            raise ValueError("LocalHFClient returns one completion per call: drop n or set n=1")
        self.batch_sizes.append(len(prompts))
        tok = self.tokenizer
        encoded = [tok.encode(p, add_special_tokens=False) for p in prompts]
        temperature = float(sampling.get("temperature", 1.0))
        max_new = int(sampling.get("max_tokens", 256))
        stops = sampling.get("stop") or []
        stops = [stops] if isinstance(stops, str) else [s for s in stops if s]
        generator = HfGenerator(
            self.hf_model,
            pad_id=tok.pad_token_id,
            stop_ids=self._eos,
            temperature=temperature,
            top_p=float(sampling.get("top_p", 1.0)),
            tokenizer=tok,
        )
        rows = generator(encoded, max_new, stop_strings=stops, seed=sampling.get("seed"))
        return [
            self._completion(ids, len(prompt), max_new, stops)
            for (ids, _), prompt in zip(rows, encoded, strict=True)
        ]

    def _completion(
        self, ids: list[int], n_prompt: int, max_new: int, stops: list[str]
    ) -> Completion:
        finish, stop_reason = "length", None
        if ids and ids[-1] in self._eos:
            finish = "stop"
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        cuts = sorted((text.find(s), s) for s in stops if s in text)
        if cuts:
            start, stop_reason = cuts[0]
            text, finish = text[:start], "stop"
            ids = ids[: self._tokens_through(ids, stop_reason)]
        if finish == "length" and len(ids) < max_new:
            finish = "stop"
        return Completion(
            text=text,
            model=self.model,
            finish_reason=finish,
            stop_reason=stop_reason,
            usage={
                "prompt_tokens": n_prompt,
                "completion_tokens": len(ids),
                "total_tokens": n_prompt + len(ids),
            },
        )

    def _tokens_through(self, ids: list[int], stop: str) -> int:
        """How many leading tokens it takes to produce ``stop`` (pads after it do not count)."""
        for n in range(1, len(ids) + 1):
            if stop in self.tokenizer.decode(ids[:n], skip_special_tokens=True):
                return n
        return len(ids)
