"""A tiny random Qwen3 with a 384-token BPE vocabulary, saved as a model directory.

Qwen3's 151k vocabulary makes the logits (and their softmax) the bulk of every GRPO step on
CPU; a small vocabulary keeps the backend tests to seconds. The tokenizer is trained offline
with ``tokenizers`` on a fixed corpus and carries core's training chat template.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from aworld_rl_core.envs.toy import INSTRUCTION, TOPICS
from aworld_rl_core.models import chat_template

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
ADDED += ["<tool_response>", "</tool_response>"]
_WORD_TEXT = """
the a sea forest winter city night bread rain small boat mountains library moon garden music
long road coffee river autumn market desert train birds say something about again score reply
with lowercase english words only no capitals digits or punctuation user assistant system
Hello World The Alpha Beta 1984 2024 42 7 ! ? , . ; : ( ) [ ] { } # $ %
CamelCase snake_case HTTP JSON ID OK Yes No
"""
WORDS = tuple(_WORD_TEXT.split())


def _corpus() -> list[str]:
    lines = [INSTRUCTION, *(f"Say something about {t}." for t in TOPICS)]
    for a, b, c in itertools.islice(itertools.permutations(WORDS, 3), 0, 20000, 7):
        lines.append(f"{a} {b} {c}")
    return lines


def small_vocab_model_dir(directory: Path, *, vocab_size: int = 384, seed: int = 0) -> Path:
    """Write the tokenizer and a random 2-layer Qwen3 (hidden 32) to ``directory``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import (
        GenerationConfig,
        PreTrainedTokenizerFast,
        Qwen3Config,
        Qwen3ForCausalLM,
    )

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL + ADDED,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(_corpus(), trainer)
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=ADDED,
    )
    tok.chat_template = chat_template()
    config = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
    )
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory
