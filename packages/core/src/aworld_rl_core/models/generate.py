"""Batched sampling with a transformers causal LM: the one HF generation path.

The trl backend's rollouts and ``LocalHFClient`` both generate through :class:`HfGenerator`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aworld_rl_core.engine import Output, Turn


class HfGenerator:
    """Samples continuations of token prompts (left-padded into one batch).

    Returns each row's new tokens, cut after the first stop token, and ``None`` for the
    log-probabilities (trainers recompute them; keeping every step's logits over a 150k vocabulary
    would cost gigabytes). ``temperature=0`` means greedy decoding. Stop strings end a row
    through transformers' ``StopStringCriteria`` (they need the ``tokenizer``).
    """

    def __init__(
        self,
        model: Any,
        *,
        pad_id: int,
        stop_ids: Sequence[int],
        temperature: float = 1.0,
        top_p: float = 1.0,
        tokenizer: Any = None,
        call_constraint: str = "none",
    ) -> None:
        from aworld_rl_core.tooluse.constrain import check_constraint

        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not stop_ids:
            raise ValueError("stop_ids must hold at least the end-of-turn token id")
        self.model = model
        self.pad_id = pad_id
        self.stop_ids = list(stop_ids)
        self.temperature = temperature
        self.top_p = top_p
        self.tokenizer = tokenizer
        self.call_constraint = check_constraint(call_constraint)
        if self.call_constraint != "none" and tokenizer is None:
            raise ValueError(
                f"call_constraint={call_constraint!r} needs HfGenerator(tokenizer=...)"
            )

    @property
    def needs_sources(self) -> bool:
        """Whether a call needs ``sources`` (the texts a constrained call may copy from)."""
        return self.call_constraint != "none"

    def __call__(
        self,
        prompts: Sequence[Sequence[int]],
        max_new_tokens: int,
        *,
        stop_strings: Sequence[str] = (),
        seed: int | None = None,
        sources: Sequence[Sequence[str]] | None = None,
        functions: Sequence[Any] | None = None,
    ) -> list[tuple[list[int], list[float] | None]]:
        """``sources[row]``: the texts row ``row``'s tool-call values may be copied from,
        ``functions[row]`` its tool list (``call_constraint="copy"``,
        :mod:`aworld_rl_core.tooluse.constrain`)."""
        import torch

        if not prompts:
            return []
        if stop_strings and self.tokenizer is None:
            raise ValueError("stop strings need HfGenerator(tokenizer=...)")
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention[row, width - len(prompt) :] = 1
        sampling = self.temperature > 0
        extra: dict[str, Any] = {}
        if stop_strings:
            extra = {"stop_strings": list(stop_strings), "tokenizer": self.tokenizer}
        if self.call_constraint == "copy":
            from transformers import LogitsProcessorList

            from aworld_rl_core.tooluse.constrain import CopyConstraint

            if sources is None or len(sources) != len(prompts):
                raise ValueError("call_constraint='copy' needs one list of sources per prompt")
            constraint = CopyConstraint(self.tokenizer, sources, width, functions)
            extra["logits_processor"] = LogitsProcessorList([constraint])
        if seed is not None:
            torch.manual_seed(int(seed))
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention.to(device),
                    max_new_tokens=max_new_tokens,
                    do_sample=sampling,
                    temperature=self.temperature if sampling else None,
                    top_p=self.top_p if sampling else None,
                    top_k=0 if sampling else None,
                    repetition_penalty=1.0,  # sample the policy itself, not a checkpoint's
                    min_p=None,  # generation_config defaults (Qwen ships top_k/penalties)
                    eos_token_id=self.stop_ids,
                    pad_token_id=self.pad_id,
                    # a model saved from training may say use_cache=false: without the KV cache
                    # every new token re-reads the whole sequence
                    use_cache=True,
                    **extra,
                )
        finally:
            self.model.train(was_training)
        return [(self._trim(row.tolist()), None) for row in out[:, width:].cpu()]

    def _trim(self, ids: list[int]) -> list[int]:
        """Cut after the first stop token (generate pads finished rows)."""
        for position, token in enumerate(ids):
            if token in self.stop_ids:
                return ids[: position + 1]
        return ids


def generate_turns(generator: Callable[..., Any], turns: Sequence[Turn]) -> list[Output]:
    """The trl driver's turns through ``generator`` (:class:`HfGenerator`'s call shape): one
    batched call per set of stop strings; the engine cuts each row to its own cap."""
    from aworld_rl_core.tooluse.constrain import message_sources, schemas

    groups: dict[tuple[str, ...], list[int]] = {}
    for i, turn in enumerate(turns):
        if turn.max_new_tokens is None or turn.prompt_ids is None:
            raise ValueError("the trl driver needs token prompts and limits.max_new_tokens")
        groups.setdefault(turn.stop, []).append(i)
    outputs: list[Output | None] = [None] * len(turns)
    for stops, indices in groups.items():
        cap = max(turns[i].max_new_tokens or 0 for i in indices)
        prompts = [turns[i].prompt_ids or [] for i in indices]
        if getattr(generator, "needs_sources", False):
            sources = [message_sources(turns[i].messages) for i in indices]
            functions = [schemas(turns[i].messages, turns[i].tools) for i in indices]
            rows = generator(prompts, cap, stop_strings=stops, sources=sources, functions=functions)
        else:
            rows = generator(prompts, cap, stop_strings=stops)
        for i, (ids, _) in zip(indices, rows, strict=True):
            outputs[i] = Output(ids=ids)
    return outputs  # type: ignore[return-value]
