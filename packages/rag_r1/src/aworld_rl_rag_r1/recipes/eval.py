"""Recipe ``rag_r1.eval``: EM, F1, searches and latency per question of a search agent.

The agent is any core LLM client: an OpenAI-compatible server (vLLM, SGLang, a hosted API) or
a local transformers model. Questions come from local files in the benchmarks' formats (see
``aworld_rl_rag_r1.qa``), ``fanoutqa`` (the packaged dev set) or ``synthetic``. Each question
is played through ``SearchEnv`` by core's ``play_many`` (episodes in flight together, one
batched retrieval per turn), once per seed. Beside EM / F1 / latency it reports what was
retrieved: per episode, whether a gold answer occurs in a retrieved passage and the share of
the gold documents retrieved; per dataset with gold documents, the retriever alone (the
question as the query): recall@k and answer-in-top-k for ``recall_k``. Outputs:
``results.jsonl`` (one line per question and seed), a table per dataset in the report and an
EM/F1 plot.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option, to_dict
from aworld_rl_core.llm import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_rag_r1.env import SearchEnvConfig
from aworld_rl_rag_r1.qa import QAFormat
from aworld_rl_rag_r1.recipes.common import SYNTHETIC, WorldConfig, synthetic_world

Agent = Literal["llm", "scripted"]


def make_agent(agent: Agent, llm: LLMConfig, env: SearchEnvConfig) -> Any:
    """The client that plays: the LLM ``llm`` names, or the scripted searcher (test double)."""
    if agent == "scripted":
        from aworld_rl_rag_r1.scripted import ScriptedSearcher

        return ScriptedSearcher(env.mode, env.max_queries)
    if agent != "llm":
        raise ValueError(f"agent={agent!r}: use llm or scripted")
    from aworld_rl_core.llm import make_client

    return make_client(llm)


@dataclass(frozen=True, kw_only=True)
class EvalDataConfig:
    """Which questions."""

    files: tuple[str, ...] = option(
        (), help="question files (JSON/JSONL/CSV), 'fanoutqa' or 'synthetic'"
    )
    format: QAFormat = option("auto", help="file format (auto: by extension and keys)")
    limit: int | None = limit_option("first N questions per file")


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """Evaluate a deep-search agent (the paper: T=0.7, 1024 new tokens, 5 searches, top-3)."""

    llm: LLMConfig = option(
        factory=lambda: LLMConfig(
            base_url="http://127.0.0.1:8001/v1", temperature=0.7, max_tokens=1024, concurrency=32
        ),
        help="the agent (provider=local: a transformers model, tiny:qwen3 works offline); "
        "the LLM server on port 8001, the retrieval server keeps 8000",
    )
    env: SearchEnvConfig = option(
        factory=lambda: SearchEnvConfig(normalizer="eval"), help="the search environment"
    )
    data: EvalDataConfig = option(factory=EvalDataConfig, help="the questions")
    seeds: tuple[int, ...] = option((0,), help="sampling seeds; each question is played per seed")
    concurrency: int = option(64, help="episodes in flight together (one retrieval per turn)")
    world: WorldConfig = option(factory=WorldConfig, help="'synthetic' data / index: its size")
    agent: Agent = option(
        "llm",
        help="llm: the model of 'llm' plays; scripted: the synthetic world's scripted searcher "
        "(a test double that decomposes its questions; see aworld_rl_rag_r1.scripted)",
    )
    plots: bool = option(True, help="write an EM/F1 plot per dataset (needs matplotlib)")
    recall_k: tuple[int, ...] = option(
        (1, 3),
        help="k of the retriever-alone recall@k / answer-in-top-k (questions with gold_docs; "
        "empty: skip)",
    )


def load_questions(cfg: EvalDataConfig, world: WorldConfig) -> dict[str, list[Any]]:
    """Dataset name -> questions."""
    from aworld_rl_rag_r1.qa import load_fanoutqa, load_qa

    if not cfg.files:
        raise ValueError("data.files is empty: give question files, 'fanoutqa' or 'synthetic'")
    sets: dict[str, list[Any]] = {}
    for name in cfg.files:
        if name == "fanoutqa":
            items = load_fanoutqa(limit=cfg.limit)
        elif name == SYNTHETIC:
            items = load_qa(synthetic_world(world).questions, "synthetic", cfg.limit)
        else:
            items = load_qa(name, cfg.format, cfg.limit)
        key = Path(name).stem if name not in ("fanoutqa", SYNTHETIC) else name
        sets[key] = items
    return sets


def resolve_env(env: SearchEnvConfig, world: WorldConfig) -> SearchEnvConfig:
    """``retriever.index=synthetic`` -> the synthetic world's index."""
    if env.retriever.index != SYNTHETIC:
        return env
    index = str(synthetic_world(world).index)
    return replace(env, retriever=replace(env.retriever, index=index))


async def play_questions(
    client: Any,
    items: list[Any],
    env: SearchEnvConfig,
    *,
    concurrency: int,
    seed: int,
    llm: LLMConfig,
) -> list[dict[str, Any]]:
    """Play every question (``concurrency`` at a time); one result row per question."""
    from aworld_rl_core.engine import Limits, play_many
    from aworld_rl_rag_r1.env import SearchEnv

    limits = Limits(max_turns=env.max_search_turns + 1, max_new_tokens=llm.max_tokens)
    sampling = {**llm.sampling(), "seed": seed}
    rows = []
    for start in range(0, len(items), concurrency):
        chunk = items[start : start + concurrency]
        envs = [SearchEnv(item.row(), env) for item in chunk]
        began = time.perf_counter()
        episodes = await play_many(client, envs, sampling=sampling, limits=limits, errors="end")
        wall = time.perf_counter() - began
        for item, episode in zip(chunk, episodes, strict=True):
            info = episode.info
            rows.append(
                {
                    "id": item.id,
                    "question": item.question,
                    "golden_answers": item.golden_answers,
                    "seed": seed,
                    "answer": info.get("answer"),
                    "em": float(info.get("em", 0.0)),
                    "f1": float(info.get("f1", 0.0)),
                    "turns": episode.turns,
                    "searches": info.get("searches", 0),
                    "queries": info.get("queries", 0),
                    "invalid_actions": info.get("invalid_actions", 0),
                    "answer_in_retrieved": info.get("answer_in_retrieved", 0.0),
                    "gold_docs_retrieved": info.get("gold_docs_retrieved"),
                    "retrieval_s": info.get("retrieval_s", 0.0),
                    "step_s": info.get("step_s", 0.0),
                    "batch_s": wall,
                    "batch": start // concurrency,
                    "truncated": episode.truncated,
                    "error": episode.error,
                    "completion": episode.completion,
                }
            )
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Means over questions and seeds (EM / F1 std over seeds when there are several).

    ``seconds_per_question`` is the wall time of all batches over the questions played (the
    paper's time per sample); the questions of a batch run together.
    """
    from aworld_rl_rag_r1.metrics import rollout_metrics

    by_seed: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_seed.setdefault(row["seed"], []).append(row)
    walls = {(r["seed"], r["batch"]): r["batch_s"] for r in rows}
    out = rollout_metrics(rows)
    out["seconds_per_question"] = sum(walls.values()) / len(rows) if rows else 0.0
    out["retrieval_share_of_wall"] = (
        sum(r["retrieval_s"] for r in rows) / sum(walls.values()) if walls else 0.0
    )
    if len(by_seed) > 1:
        per_seed = [rollout_metrics(rs) for rs in by_seed.values()]
        out["em_std"] = statistics.stdev(m["em"] for m in per_seed)
        out["f1_std"] = statistics.stdev(m["f1"] for m in per_seed)
    out["errors"] = float(sum(r["error"] is not None for r in rows))
    return out


def _plot(table: dict[str, dict[str, float]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        return None
    names = list(table)
    fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(names)), 3))
    width = 0.38
    for k, metric in enumerate(("em", "f1")):
        ax.bar(
            [i + (k - 0.5) * width for i in range(len(names))],
            [table[n][metric] for n in names],
            width,
            label=metric.upper(),
        )
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.15)
    ax.legend(loc="upper center", ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def direct_recall(items: list[Any], env: SearchEnvConfig, ks: tuple[int, ...]) -> dict:
    """The retriever alone on the questions that have gold documents: recall@k and
    answer-in-top-k, the question as the query (one batched search)."""
    from aworld_rl_rag_r1.env import searcher
    from aworld_rl_rag_r1.metrics import retrieval_recall

    asked = [item for item in items if item.gold_docs]
    if not ks or not asked or env.retriever.backend in ("oracle", "empty", "random"):
        return {}
    retriever = searcher(env.retriever).retriever
    hits = retriever.search([item.question for item in asked], max(ks))
    return retrieval_recall(
        hits,
        [item.gold_docs for item in asked],
        [item.golden_answers for item in asked],
        ks,
    )


def run(cfg: EvalConfig, run: Run) -> RunResult:
    from aworld_rl_core.llm import account_llm_errors

    if cfg.concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    sets = load_questions(cfg.data, cfg.world)
    env = resolve_env(cfg.env, cfg.world)
    client = make_agent(cfg.agent, cfg.llm, env)
    out = run.dir / "results.jsonl"
    table: dict[str, dict[str, float]] = {}
    with out.open("w", encoding="utf-8") as handle:
        for name, items in sets.items():
            rows: list[dict[str, Any]] = []
            for seed in run.progress(cfg.seeds, desc=f"{name}: seeds"):
                rows += asyncio.run(
                    play_questions(
                        client, items, env, concurrency=cfg.concurrency, seed=seed, llm=cfg.llm
                    )
                )
            for row in rows:
                handle.write(json.dumps({"dataset": name, **row}, ensure_ascii=False) + "\n")
            table[name] = {**summarise(rows), **direct_recall(items, env, cfg.recall_k)}
            run.log({f"{name}/{k}": v for k, v in table[name].items()})
    recalls = [f"recall@{k}" for k in cfg.recall_k]
    header = [
        "dataset", "questions", "EM", "F1", "searches / q", "queries / search",
        "valid actions", "s / q", "retrieval share", "answer in retrieved", *recalls,
    ]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, m in table.items():
        cells = [
            name,
            str(len(sets[name])),
            f"{m['em']:.3f}",
            f"{m['f1']:.3f}",
            f"{m['searches_per_question']:.2f}",
            f"{m['queries_per_search']:.2f}",
            f"{m['valid_action_rate']:.2f}",
            f"{m['seconds_per_question']:.2f}",
            f"{m['retrieval_share']:.2f}",
            f"{m['answer_in_retrieved']:.2f}",
            *(f"{m[r]:.3f}" if r in m else "-" for r in recalls),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    outputs = {"results": out}
    if cfg.plots and (plot := _plot(table, run.dir / "em_f1.png")) is not None:
        outputs["plot"] = plot
        lines.append("\n![EM and F1](em_f1.png)")
    agent_name = (
        "the scripted searcher (a test double)"
        if cfg.agent == "scripted"
        else f"{cfg.llm.provider} {cfg.llm.model}"
    )
    run.add_section(
        "Results",
        "\n".join(lines) + f"\n\nSeeds: {list(cfg.seeds)}; agent: "
        f"{agent_name}; retriever: "
        f"{json.dumps(to_dict(env.retriever))}\n",
    )
    metrics: dict[str, float] = {}
    for name, m in table.items():
        metrics.update({f"{name}/{k}": v for k, v in m.items()})
    if len(table) > 1:
        metrics["average/em"] = sum(m["em"] for m in table.values()) / len(table)
    account_llm_errors(metrics, client, run=run)  # too many failed calls: the run fails
    return RunResult(metrics=metrics, outputs=outputs)
