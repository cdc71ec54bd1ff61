"""A tiny random Qwen3 with a 384-token BPE vocabulary, saved as a model directory.

Qwen3's 151k vocabulary makes the logits (and their softmax) the bulk of every GRPO step on
CPU; a small vocabulary keeps the backend tests to seconds. The tokenizer is trained offline
with ``tokenizers`` on a fixed corpus and carries core's training chat template.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from pretokenizers import byte_level_bpe
from tokenizers import processors

from aworld_rl_core.envs.toy import INSTRUCTION, TOPICS
from aworld_rl_core.models import chat_template

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
    from aworld_rl_core.models import tiny_causal_lm

    tok = byte_level_bpe(_corpus(), vocab_size=vocab_size, added=tuple(ADDED))
    tok.backend_tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.chat_template = chat_template()
    model = tiny_causal_lm(tok, arch="qwen3", seed=seed)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory
