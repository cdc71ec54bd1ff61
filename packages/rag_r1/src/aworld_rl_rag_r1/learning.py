"""A tiny model learning to search: ``rag_r1.train``'s warm start and held-out points.

- :func:`scripted_trajectories`: the scripted searcher (a test double) plays training questions
  against the index; each correct episode becomes one SFT row, the prompt and the whole assistant
  text with the ``<information>`` blocks inline, as the RL rollout renders it. Trained with
  :func:`information_masked_ce` (cross-entropy on every supervised token outside
  ``<information>``), that row's loss is the sum of the paper's per-step samples (each step a
  target with the earlier steps and results as its context), ``rag_r1.sft-data``'s four kinds.
- :func:`world_model_dir`: a tiny ``tiny:<arch>:...,vocab=N`` model whose byte-level BPE is core's
  micro-world recipe (``train_bpe``) trained on this world's text (its passages, prompts and
  trajectories) with the search protocol's tags as single tokens.
- :func:`evaluate`: greedy episodes of a saved model on questions; EM, F1, searches per question,
  queries per search.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SEARCH_TAGS = ("<search>", "</search>", "<information>", "</information>")
INFORMATION = ("<information>", "</information>")
"""The segment the warm start's loss leaves out (the retrieved passages)."""


def scripted_trajectories(
    rows: Sequence[Mapping[str, Any]], env_options: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """(SFT rows of the correct episodes, counts) of the scripted searcher on ``rows``."""
    from aworld_rl_core.config import from_dict
    from aworld_rl_core.engine import Limits, play_many
    from aworld_rl_rag_r1.env import SearchEnv, SearchEnvConfig
    from aworld_rl_rag_r1.scripted import ScriptedSearcher

    cfg = from_dict(SearchEnvConfig, dict(env_options))
    agent = ScriptedSearcher(cfg.mode, cfg.max_queries)
    envs = [SearchEnv(row, cfg) for row in rows]
    limits = Limits(max_turns=cfg.max_search_turns + 1)
    episodes = asyncio.run(play_many(agent, envs, limits=limits, errors="end"))
    out = []
    searches = 0
    for row, env, episode in zip(rows, envs, episodes, strict=True):
        searches += env.counters.searches
        if float(episode.info.get("em", 0.0)) < 1.0:
            continue
        text = "".join(m["content"] for m in episode.completion if m["role"] == "assistant")
        out.append(
            {
                "messages": [*episode.prompt_messages, {"role": "assistant", "content": text}],
                "question": row["question"],
            }
        )
    counts = {
        "episodes": float(len(rows)),
        "correct": float(len(out)),
        "searches_per_question": searches / max(1, len(rows)),
    }
    return out, counts


def information_masked_ce(logits: Any, labels: Any, segments: Mapping[str, Any]) -> Any:
    """Token loss (hf-sft's ``fn(logits, labels, segments)``): mean cross-entropy over the
    supervised tokens outside the ``information`` segment (the retrieved passages)."""
    import torch.nn.functional as F

    supervised = labels != -100
    keep = supervised & ~segments["information"] if "information" in segments else supervised
    if not bool(keep.any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits[keep].float(), labels[keep])


def world_texts(corpus: Path, questions: Sequence[str], trajectories: Sequence[Any]) -> list[str]:
    """The text a world tokenizer is trained on: passages, prompts and trajectories, each in the
    chat template's turn markers."""
    import json

    from aworld_rl_rag_r1.prompts import render

    def turn(role: str, text: str) -> str:
        return f"<|im_start|>{role}\n{text}<|im_end|>\n"

    texts = []
    with Path(corpus).open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            texts.append(f"{doc['title']}   {doc['text']}")
    for q in questions:
        texts.append(turn("user", render(q, "mq")))
        texts.append(turn("user", render(q, "sq")))
    for row in trajectories:
        texts.append(turn("assistant", row["messages"][-1]["content"]))
    return texts


def world_model_dir(spec: str, texts: Sequence[str], target: Path, seed: int = 0) -> Path:
    """``tiny:<arch>:...,vocab=N`` saved to ``target`` with a BPE of N tokens trained on
    ``texts`` (core's micro-world recipe, the search tags as single tokens)."""
    from aworld_rl_core.models.loading import tiny_spec
    from aworld_rl_core.models.tiny import chat_template, parse_tiny, tiny_causal_lm
    from aworld_rl_core.tooluse.microworld.tokenizer import TAGS, fast_tokenizer, train_bpe

    arch, size = parse_tiny(tiny_spec(spec))
    if not size.vocab:
        raise ValueError(
            f"model.name_or_path={spec!r}: a world tokenizer needs a tiny model with vocab=N "
            "(e.g. tiny:qwen3:hidden=64,vocab=1024), or set world_tokenizer=false"
        )
    tags = (*TAGS, *SEARCH_TAGS)
    tokenizer = fast_tokenizer(train_bpe(tuple(texts), size.vocab, tags), tags)
    tokenizer.chat_template = chat_template()
    model = tiny_causal_lm(tokenizer, arch=arch, seed=seed, size=size)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def evaluate(
    model_path: str | Path,
    rows: Sequence[Mapping[str, Any]],
    env_options: Mapping[str, Any],
    limits: Any,
) -> dict[str, float]:
    """Greedy episodes of the saved model on ``rows`` (all together, one batched generate and
    one retrieval per turn): EM, F1, searches per question, queries per search, invalid actions
    per question and wall seconds per question."""
    from aworld_rl_core.backends.config import ModelConfig
    from aworld_rl_core.backends.trl_trainer import EpisodeRollout
    from aworld_rl_core.engine import ChatCodec
    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_rag_r1.env import make_env

    model, tokenizer = load_model_and_tokenizer(ModelConfig(name_or_path=str(model_path)))
    model.eval()
    rollout = EpisodeRollout(
        rows,
        functools.partial(make_env, **env_options),
        ChatCodec(tokenizer),
        limits,
        temperature=0.0,
        top_p=1.0,
    )
    began = time.perf_counter()
    episodes = rollout.play(model, tokenizer, rows, temperature=0.0)
    wall = time.perf_counter() - began
    n = max(1, len(episodes))
    searches = sum(int(e.info.get("searches", 0)) for e in episodes)
    queries = sum(int(e.info.get("queries", 0)) for e in episodes)
    return {
        "em": sum(float(e.info.get("em", 0.0)) for e in episodes) / n,
        "f1": sum(float(e.info.get("f1", 0.0)) for e in episodes) / n,
        "searches_per_question": searches / n,
        "queries_per_search": queries / max(1, searches),
        "answered": sum(e.info.get("answer") is not None for e in episodes) / n,
        "invalid_per_question": sum(int(e.info.get("invalid_actions", 0)) for e in episodes) / n,
        "seconds_per_question": wall / n,
    }
