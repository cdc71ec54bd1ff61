"""A small byte-level BPE trained in-process on the micro-world's text (``tokenizers``).

The corpus is every entry's requests, ground-truth calls (as the JSON ``{"name", "arguments"}``
objects and python call strings), initial states and tool docs, plus :data:`PROTOCOL_TEXT` (the
wording of tool-use instructions and observations), each wrapped in the chat template's turn
markers. With a few hundred to a few thousand tokens the output layer of a tiny model is small
and the world's words are single tokens, so prompts are a few hundred tokens long. Byte-level:
any text still encodes (unseen words as several tokens). Deterministic: the same vocabulary size
gives the same tokenizer.
"""

from __future__ import annotations

import functools
import json
from typing import Any

SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Control tokens (skipped when decoding with ``skip_special_tokens``)."""
TAGS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
)
"""Protocol tags: one token each, kept when decoding (the parsers read them)."""
MIN_VOCAB, MAX_VOCAB = 300, 8192
SPLIT_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)
"""Qwen2's pre-tokenizer split (one token per digit): the tiny ``qwen2``/``qwen3`` models'
saved tokenizers reload as Qwen2's tokenizer class, which applies this split, so training
with it makes the reloaded tokenizer encode exactly as the trained one."""

PROTOCOL_TEXT = (
    "You are an expert in composing functions. You are given a question from a user and a set of "
    "possible functions. Based on the question, you will need to make one or more function calls "
    "to achieve the purpose, over as many steps as needed.\n\n"
    "Here is a list of functions you can invoke:\n"
    "Reply in exactly one of two formats, with no text outside the tags:\n"
    "Format 1 (call functions):\n<think>your reasoning</think>\n"
    '<tool_call>[{"name": "function_name", "arguments": {"param": "value"}}]</tool_call>\n'
    "Format 2 (reply to the user, ending your work on the current request):\n"
    "<think>your reasoning</think>\n<answer>your reply</answer>\n\n"
    "Notes:\n- <tool_call> holds a JSON list; each call has the function's name and its arguments "
    "as a JSON object with the parameter names of the description.\n"
    "- You will see each call's execution result; keep calling functions until the request is "
    "fulfilled, then use Format 2.\n"
    "- Be resourceful: a value one of the listed functions can give you (an id, a code, the "
    "current state) is yours to look up; do not ask the user for it.\n"
    "- Prioritize clarity over assumptions: if the request needs a function that is not in the "
    "list, or a value that only the user can give and did not, make no call at all for it: ask "
    "the user in Format 2 right away.\n"
    "Here are the function's execution results.\nExecution results: \n"
    "If the request is fulfilled, outline your thought process in <think></think> and give a "
    "brief summary in <answer></answer>; otherwise keep calling functions.\n"
    "SYSTEM WARNING: you should not call any function in the previous turn, because the needed "
    "function description(s) or parameter(s) were missing; ask the user for them instead.\n"
    "Your response does not follow the required format. Reply with <think>...</think> followed "
    "by exactly one of <tool_call>...</tool_call> or <answer>...</answer>, and no text outside "
    "the tags.\nI cannot do that: please tell me what is missing. Done. The request is done.\n"
)


def corpus() -> list[str]:
    """The texts the tokenizer is trained on (see the module docstring)."""
    from aworld_rl_core.tooluse.calls import parse_python_calls
    from aworld_rl_core.tooluse.microworld.world import entries, world_text

    def turn(role: str, text: str) -> str:
        return f"<|im_start|>{role}\n{text}<|im_end|>\n"

    texts = [turn("system", PROTOCOL_TEXT)]
    for text in world_text():
        texts.append(turn("user", text))
    for entry in entries():
        for calls in entry.raw["ground_truth"]:
            parsed = [parse_python_calls(c)[0] for c in calls]
            objects = [{"name": c.name, "arguments": dict(c.arguments)} for c in parsed]
            reply = f"<think>\n</think>\n<tool_call>{json.dumps(objects)}</tool_call>"
            texts.append(turn("assistant", reply))
    return texts


@functools.cache
def corpus_digest() -> str:
    """8 hex digits of the corpus's SHA-256: saved tiny models name it, so a changed world
    never reuses a tokenizer trained on the old one."""
    import hashlib

    return hashlib.sha256("\x00".join(corpus()).encode("utf-8")).hexdigest()[:8]


@functools.lru_cache(maxsize=4)
def _trained(vocab_size: int) -> str:
    return train_bpe(tuple(corpus()), vocab_size, TAGS)


def train_bpe(texts: tuple[str, ...], vocab_size: int, tags: tuple[str, ...] = TAGS) -> str:
    """A byte-level BPE of at most ``vocab_size`` tokens trained on ``texts`` (JSON), with the
    control tokens and ``tags`` as single tokens: the micro-world's recipe on any world's text."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL) + list(tags),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return str(tokenizer.to_str())


def fast_tokenizer(trained: str, tags: tuple[str, ...] = TAGS) -> Any:
    """A ``PreTrainedTokenizerFast`` of a :func:`train_bpe` result, with ``<|im_end|>`` as end
    of turn and ``<|endoftext|>`` as padding; no chat template (``models.tiny.chat_template()``
    is core's: tooluse sits below models)."""
    from tokenizers import AddedToken, Tokenizer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(trained)
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    backend.add_tokens([AddedToken(t, special=False, normalized=False) for t in tags])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )
    return tokenizer


def world_tokenizer(vocab_size: int = 1024) -> Any:
    """A fresh ``PreTrainedTokenizerFast`` of at most ``vocab_size`` tokens (fewer when the
    corpus runs out of merges: 1024 gives 979) trained on the world's text,
    with ``<|im_end|>`` as end of turn and ``<|endoftext|>`` as padding; no chat template
    (``models.tiny_tokenizer(vocab)`` adds core's: tooluse sits below models)."""
    if not MIN_VOCAB <= vocab_size <= MAX_VOCAB:
        raise ValueError(
            f"world tokenizer vocab_size={vocab_size}: use {MIN_VOCAB} to {MAX_VOCAB} (256 byte "
            f"tokens and {len(SPECIAL) + len(TAGS)} protocol tokens come first)"
        )
    return fast_tokenizer(_trained(vocab_size))
