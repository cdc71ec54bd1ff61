"""Recipe ``envtuning.augment``: mine failing tool calls, then write a judged hint pack.

An agent (any core LLM client) plays training entries without augmentation; its failed calls
are grouped by (class, method, error pattern); recurring groups get hints from the generator
LLM, checked by the constitutional judge LLM (up to ``max_attempts`` tries each). Approved
hints are written as ``hints.yaml``, loadable by any stage (``env.hint_packs``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from aworld_rl_core.config import RENAMED_TO_LIMIT, limit_option, option
from aworld_rl_core.llm import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_envtuning.data import CATEGORIES, SplitConfig


@dataclass(frozen=True, kw_only=True)
class AugmentConfig:
    """The semi-automatic hint workflow (paper App. B)."""

    __moved_keys__ = {"entries_per_category": RENAMED_TO_LIMIT}

    agent: LLMConfig = option(
        factory=lambda: LLMConfig(temperature=0.7, max_tokens=4096),
        help="the agent whose failures are mined (tiny:<arch> works locally)",
    )
    generator: LLMConfig = option(
        factory=lambda: LLMConfig(temperature=0.7, max_tokens=2048),
        help="the augmentation-generator LLM",
    )
    judge: LLMConfig = option(
        factory=lambda: LLMConfig(temperature=0.0, max_tokens=2048),
        help="the constitutional-judge LLM",
    )
    entries: Literal["train", "validation", "held_out"] = option(
        "train", help="which part of the split to mine"
    )
    categories: tuple[str, ...] = option(CATEGORIES, help="categories to mine")
    limit: int | None = limit_option("first N entries per category")
    split: SplitConfig = option(factory=SplitConfig, help="the data split")
    entry_ids: tuple[str, ...] = option(
        (), help="explicit BFCL entry ids to mine (replaces the split's)"
    )
    max_steps_per_turn: int = option(5, help="agent steps per user turn")
    tool_docs: Literal["json", "compact"] = option(
        "json", help="tool list in the agent's system prompt"
    )
    min_count: int = option(2, help="a failure pattern needs this many occurrences")
    max_groups: int = option(50, help="most failure patterns to write hints for")
    max_attempts: int = option(3, help="generator tries per pattern")
    pack_name: str = option("mined", help="name of the written hint pack")
    concurrency: int = option(8, help="agent episodes in flight")


def mine_failures(cfg: AugmentConfig, run: Run) -> list[dict[str, Any]]:
    """Play the entries with the agent (augmentation off); every failed call with context."""
    from aworld_rl_core.llm import make_client
    from aworld_rl_envtuning.data import bfcl_split
    from aworld_rl_envtuning.env import get_entry
    from aworld_rl_envtuning.evaluate import evaluate
    from aworld_rl_envtuning.recipes.common import check_categories
    from aworld_rl_envtuning.recipes.training import local_model_path

    ids = list(cfg.entry_ids)
    if not ids:
        split = bfcl_split(cfg.split)
        categories = check_categories(cfg.categories)
        ids = [i for c in categories for i in split.of(cfg.entries, [c])[: cfg.limit]]
    agent = cfg.agent
    if agent.provider == "local":
        agent = replace(agent, model=local_model_path(agent.model))
    entries = [get_entry(i) for i in ids]
    options = {
        "augmentation": False,
        "max_steps_per_turn": cfg.max_steps_per_turn,
        "tool_docs": cfg.tool_docs,
    }
    bar = iter(run.progress(range(len(entries)), total=len(entries), desc="mining episodes"))
    outcomes = evaluate(
        make_client(agent),
        entries,
        protocol="envtuning",  # the hints are for EnvTuning's environment
        env_options=options,
        concurrency=cfg.concurrency,
        on_done=lambda _: next(bar, None),
    )
    for _ in bar:
        pass
    failures = []
    for entry, outcome in zip(entries, outcomes, strict=True):
        for failure in outcome.info["failures"]:
            turn = failure["turn"]
            question = " ".join(str(m.get("content", "")) for m in entry.turns[turn])
            failures.append(
                {
                    **failure,
                    "entry_id": entry.id,
                    "question": question,
                    "ground_truth": entry.ground_truth[turn] if entry.ground_truth else None,
                }
            )
    return failures


def run(cfg: AugmentConfig, run: Run) -> RunResult:
    from aworld_rl_core.llm import make_sync_client
    from aworld_rl_envtuning.hintgen import attempt_counts, build_pack, group_failures, make_hint

    if cfg.max_attempts < 1:
        raise ValueError("max_attempts must be >= 1")
    failures = mine_failures(cfg, run)
    with (run.dir / "failures.jsonl").open("w", encoding="utf-8") as handle:
        for failure in failures:
            handle.write(json.dumps(failure, ensure_ascii=False, default=str) + "\n")
    groups = group_failures(failures, min_count=cfg.min_count)[: cfg.max_groups]
    generator, judge = make_sync_client(cfg.generator), make_sync_client(cfg.judge)
    outcomes = []
    try:
        for index, group in enumerate(run.progress(groups, desc="hints")):
            outcomes.append(
                make_hint(
                    group,
                    lambda messages: generator.chat(messages).text,
                    lambda messages: judge.chat(messages).text,
                    [c for e in group.examples for c in e.get("ground_truth") or []],
                    max_attempts=cfg.max_attempts,
                    hint_id=f"{cfg.pack_name}-{index}-{group.method or 'any'}",
                )
            )
    finally:
        generator.close()
        judge.close()
    with (run.dir / "attempts.jsonl").open("w", encoding="utf-8") as handle:
        for o in outcomes:
            record = {
                "class": o.group.api_class,
                "method": o.group.method,
                "pattern": o.group.pattern,
                "count": o.group.count,
                "attempts": [
                    {"proposal": a.proposal, "verdict": a.verdict, "approved": a.approved}
                    for a in o.attempts
                ],
                "hint": o.hint.to_dict() if o.hint else None,
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    pack = build_pack(cfg.pack_name, outcomes)
    path = pack.write(run.dir / "hints.yaml")
    counts = attempt_counts(outcomes)
    rows = "\n".join(
        f"| {o.group.api_class} | {o.group.method} | {o.group.count} | {len(o.attempts)} | "
        f"{'yes' if o.hint else 'no'} |"
        for o in outcomes
    )
    run.add_section(
        "Hints",
        "| class | method | failures | attempts | approved |\n|---|---|---|---|---|\n"
        + rows
        + f"\n\nHint pack: `{path.name}` (use it with `env.hint_packs=[default,{path}]`).\n",
    )
    metrics = {
        "failures": float(len(failures)),
        "groups": float(counts["groups"]),
        "attempts": float(counts["attempts"]),
        "approved": float(counts["approved"]),
    }
    return RunResult(metrics=metrics, outputs={"hints": path})
