"""Recipe ``rag_r1.sft-data``: an LLM plays the search loop; correct trajectories become SFT
samples (one per step, the paper's four kinds), wrong ones the RL pool.

Outputs: ``sft.jsonl`` (core records, for hf-sft), ``sharegpt/`` (LLaMA-Factory data with its
``dataset_info.json``), ``rl_pool.jsonl`` (the questions the LLM got wrong, as RL rows) and
``trajectories.jsonl`` (every episode).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aworld_rl_core.config import option
from aworld_rl_core.llm import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_rag_r1.env import SearchEnvConfig
from aworld_rl_rag_r1.recipes.common import WorldConfig
from aworld_rl_rag_r1.recipes.eval import (
    Agent,
    EvalDataConfig,
    load_questions,
    make_agent,
    play_questions,
    resolve_env,
)


@dataclass(frozen=True, kw_only=True)
class SftDataConfig:
    """Build RAG-R1's SFT set and RL pool with an instruct model against the retriever."""

    llm: LLMConfig = option(
        factory=lambda: LLMConfig(
            model="Qwen/Qwen2.5-7B-Instruct", temperature=0.7, max_tokens=1024
        ),
        help="the model that plays the search loop",
    )
    env: SearchEnvConfig = option(factory=SearchEnvConfig, help="the search environment")
    data: EvalDataConfig = option(factory=EvalDataConfig, help="the questions")
    seeds: tuple[int, ...] = option((0,), help="one attempt per question and seed")
    concurrency: int = option(64, help="episodes in flight together")
    world: WorldConfig = option(factory=WorldConfig, help="'synthetic': its size")
    agent: Agent = option(
        "llm",
        help="llm: the model of 'llm' plays; scripted: the synthetic world's scripted searcher "
        "(a test double that decomposes its questions into sub-questions)",
    )


def run(cfg: SftDataConfig, run: Run) -> RunResult:
    from aworld_rl_core.llm import account_llm_errors
    from aworld_rl_core.records import write_jsonl
    from aworld_rl_core.records.sharegpt import write_sharegpt
    from aworld_rl_rag_r1.prompts import load_template, render
    from aworld_rl_rag_r1.reward import completion_text
    from aworld_rl_rag_r1.sft import sample_messages, step_samples

    env = resolve_env(cfg.env, cfg.world)
    client = make_agent(cfg.agent, cfg.llm, env)
    template = load_template(env.prompt_file)
    records: list[dict[str, Any]] = []
    pool: dict[str, Any] = {}
    kinds: Counter[str] = Counter()
    episodes = 0
    with (run.dir / "trajectories.jsonl").open("w", encoding="utf-8") as log:
        for name, items in load_questions(cfg.data, cfg.world).items():
            by_id = {item.id: item for item in items}
            for seed in run.progress(cfg.seeds, desc=f"{name}: seeds"):
                rows = asyncio.run(
                    play_questions(
                        client, items, env, concurrency=cfg.concurrency, seed=seed, llm=cfg.llm
                    )
                )
                for row in rows:
                    episodes += 1
                    log.write(json.dumps({"dataset": name, **row}, ensure_ascii=False) + "\n")
                    item = by_id[row["id"]]
                    if row["em"] < 1.0:
                        pool.setdefault(item.id, item)
                        continue
                    prompt = render(
                        item.question, env.mode, max_queries=env.max_queries, template=template
                    )
                    for k, sample in enumerate(step_samples(completion_text(row["completion"]))):
                        kinds[sample.kind] += 1
                        records.append(
                            {
                                "id": f"{item.id}-s{seed}-{k}",
                                "messages": sample_messages(prompt, sample),
                                "data_source": f"rag_r1/{name}",
                                "metadata": {"kind": sample.kind, "question_id": item.id},
                            }
                        )
    solved = {r["metadata"]["question_id"] for r in records}
    rl_rows = [item.row() for qid, item in pool.items() if qid not in solved]
    with (run.dir / "rl_pool.jsonl").open("w", encoding="utf-8") as handle:
        for row in rl_rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    outputs = {"rl_pool": run.dir / "rl_pool.jsonl", "trajectories": run.dir / "trajectories.jsonl"}
    if records:
        outputs["sft"] = write_jsonl(records, run.dir / "sft.jsonl")
        outputs["sharegpt"] = write_sharegpt(records, run.dir / "sharegpt", "rag_r1_sft")
    table = "\n".join(f"| {k} | {v} |" for k, v in sorted(kinds.items()))
    run.add_section(
        "SFT data",
        f"{episodes} episodes; {len(solved)} questions solved -> {len(records)} samples; "
        f"{len(rl_rows)} questions to the RL pool.\n\n| kind | samples |\n|---|---|\n{table}\n",
    )
    metrics = {
        "episodes": float(episodes),
        "solved": float(len(solved)),
        "sft_samples": float(len(records)),
        "rl_pool": float(len(rl_rows)),
        **{f"kind/{k}": float(v) for k, v in kinds.items()},
    }
    account_llm_errors(metrics, client, run=run)  # failed episodes are no RL pool: fail
    return RunResult(metrics=metrics, outputs=outputs)
