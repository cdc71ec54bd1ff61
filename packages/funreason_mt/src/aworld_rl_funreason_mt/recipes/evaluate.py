"""``funreason_mt.eval``: BFCL multi-turn accuracy of a model, and on held-out synthesized data.

The model is any core LLM client: an OpenAI-compatible server (vLLM, SGLang, any API:
``llm.provider=openai``, ``llm.base_url``) or a local transformers model (``llm.provider=local``,
``tiny:<arch>`` for core's tiny models). ``entries=bfcl`` (default) plays BFCL's multi-turn
categories, ``held_out`` the held-out split of a synthesize run (the same split the RL recipe
validates on), ``both`` both. ``categories=agentic`` plays BFCL v4's agentic collection instead
(``memory_kv``, ``memory_vector``, ``memory_rec_sum`` with bfcl-eval's memory backends after
their prerequisite conversations; ``web_search_base``, ``web_search_no_snippet`` with SerpAPI,
which needs ``SERPAPI_API_KEY``, or a recording); ``memory`` and ``web_search`` name those
parts, and any comma-separated mix of categories works. ``protocol=bfcl`` (default) is BFCL's
prompting protocol with one greedy reply per step; ``funreason_mt`` the format the data
teaches. Outputs: BFCL result files for BFCL's entries
(``bfcl/result/<model>/<group>/BFCL_v4_<cat>_result.json``, memory under
``agentic/memory/<backend>/`` with the memory snapshots, scored by ``bfcl evaluate
--partial-eval``; the command is in ``bfcl/scores.json`` and the report), ``outcomes.jsonl``
and ``scores.json``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option
from aworld_rl_core.llm import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tooluse.bfcl.leaderboard import MEMORY as MEMORY_CATEGORIES
from aworld_rl_core.tooluse.bfcl.leaderboard import WEB_SEARCH as WEB_SEARCH_CATEGORIES
from aworld_rl_core.tooluse.bfcl.loader import MULTI_TURN_CATEGORIES
from aworld_rl_core.tooluse.bfcl.results import DEFAULT_MODEL
from aworld_rl_funreason_mt.evaluation import PROTOCOLS
from aworld_rl_funreason_mt.recipes.common import TrajectoryData

AGENTIC_CATEGORIES = WEB_SEARCH_CATEGORIES + MEMORY_CATEGORIES


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """BFCL multi-turn evaluation (and held-out synthesized entries)."""

    protocol: Literal["bfcl", "funreason_mt"] = option(
        "bfcl",
        help="bfcl: BFCL's prompting protocol and verdicts (the leaderboard's); funreason_mt: the "
        "<think>/<tool_call>/<answer> format of the synthesized data",
    )
    entries: Literal["bfcl", "held_out", "both"] = option(
        "bfcl", help="bfcl: BFCL's multi-turn categories; held_out: the synthesized held-out split"
    )
    categories: tuple[str, ...] | str = option(
        MULTI_TURN_CATEGORIES,
        help="BFCL categories (entries=bfcl or both): multi-turn and v4 agentic ones, or a group: "
        "multi_turn, agentic, memory, web_search (comma-separated mixes too)",
    )
    web_search_replay: str = option(
        "", help="a recording of search responses for the web_search categories (no SerpAPI)"
    )
    limit: int | None = limit_option("first N entries per BFCL category")
    data: TrajectoryData = option(
        factory=TrajectoryData, help="synthesized data and its held-out split (entries=held_out)"
    )
    agent: Literal["llm", "ground_truth", "no_tools"] = option(
        "llm",
        help="llm: the model in `llm`; ground_truth: the entries' answers (a 100% check; memory: "
        "the reference behaviour); no_tools: a control that never calls a tool",
    )
    llm: LLMConfig = option(
        factory=lambda: LLMConfig(temperature=0.0, max_tokens=4096),
        help="the model under test (an OpenAI-compatible endpoint or provider=local)",
    )
    max_steps_per_turn: int = option(20, help="replies per user turn (BFCL: 20)", ge=1)
    result_model: str = option(
        DEFAULT_MODEL,
        help="model folder of the BFCL result files (a prompting model bfcl-eval has registered)",
    )
    concurrency: int = option(8, help="episodes in flight", ge=1)


def _check(cfg: EvalConfig) -> None:
    from aworld_rl_core.tooluse.bfcl.results import check_leaderboard_data, check_model

    check_model(cfg.result_model)
    if cfg.protocol == "bfcl" and cfg.entries != "held_out":
        check_leaderboard_data()
    if cfg.protocol == "bfcl" and cfg.agent == "llm" and cfg.llm.temperature != 0.0:
        raise ValueError(
            f"protocol=bfcl decodes greedily, as the leaderboard does; llm.temperature is "
            f"{cfg.llm.temperature}: set llm.temperature=0 (or protocol=funreason_mt to sample)"
        )
    chosen = categories(cfg.categories)
    if cfg.protocol != "bfcl" and any(c in AGENTIC_CATEGORIES for c in chosen):
        raise ValueError("the agentic categories are played in BFCL's protocol: set protocol=bfcl")
    if any(c in WEB_SEARCH_CATEGORIES for c in chosen) and cfg.entries != "held_out":
        from aworld_rl_core.tooluse.bfcl.agentic_backends import check_web_search

        check_web_search(cfg.web_search_replay or None)


GROUPS = {
    "multi_turn": MULTI_TURN_CATEGORIES,
    "agentic": AGENTIC_CATEGORIES,
    "memory": MEMORY_CATEGORIES,
    "web_search": WEB_SEARCH_CATEGORIES,
}


def categories(value: tuple[str, ...] | str) -> tuple[str, ...]:
    """The categories a ``categories`` value names (groups expanded, order kept, no repeats)."""
    names = value.split(",") if isinstance(value, str) else list(value)
    out: list[str] = []
    for name in (n.strip() for n in names if n.strip()):
        for category in GROUPS.get(name, (name,)):
            if category not in MULTI_TURN_CATEGORIES + AGENTIC_CATEGORIES:
                raise ValueError(
                    f"category {category!r} is neither a BFCL multi-turn nor a v4 agentic "
                    f"category; use {', '.join(MULTI_TURN_CATEGORIES + AGENTIC_CATEGORIES)} or "
                    f"a group ({', '.join(GROUPS)})"
                )
            if category not in out:
                out.append(category)
    if not out:
        raise ValueError("categories is empty; name at least one category or group")
    return tuple(out)


def held_out_entries(data: TrajectoryData) -> list[Any]:
    """The held-out split of the synthesized entries, as core BFCL entries."""
    from aworld_rl_core.tooluse.bfcl import entry_from_raw
    from aworld_rl_funreason_mt.data import read_entries
    from aworld_rl_funreason_mt.evaluation import split_entries

    _, held = split_entries(read_entries(data.path), data.held_out, seed=data.split_seed)
    if not held:
        raise ValueError(
            f"no held-out entries in {data.path} (data.held_out={data.held_out}); raise "
            "data.held_out or give more data"
        )
    return [entry_from_raw(dict(e)) for e in held]


def local_model(value: str) -> str:
    """A loadable model: a finished run's directory (``funreason_mt.sft``/``.rl``) stands for
    the model it wrote; ``tiny:<arch>`` for core's saved tiny model; anything else is kept."""
    from aworld_rl_core.models import is_tiny, model_dir
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.runs import run_output

    if is_tiny(value):
        return str(model_dir(ModelConfig(name_or_path=value)))
    found = run_output(value, "model") if value else None
    return str(found) if found is not None else value


def _client(cfg: EvalConfig) -> tuple[Any, str]:
    from aworld_rl_core.llm import make_client
    from aworld_rl_funreason_mt.evaluation import GroundTruthAgent, NoToolsAgent

    if cfg.agent == "ground_truth":
        return GroundTruthAgent(cfg.protocol), "the entries' ground truth"
    if cfg.agent == "no_tools":
        return NoToolsAgent(), f"a control that never calls a tool ({NoToolsAgent.REPLY!r})"
    llm = cfg.llm
    if llm.provider == "local":
        llm = replace(llm, model=local_model(llm.model))
    return make_client(llm), f"{llm.model} ({llm.provider})"


def run(cfg: EvalConfig, run: Run) -> RunResult:
    """Play, judge, write BFCL result files, outcomes and the report."""
    from aworld_rl_core.llm import account_llm_errors
    from aworld_rl_core.tooluse.bfcl import load_category, version
    from aworld_rl_core.tooluse.bfcl.leaderboard import aggregate as bfcl_aggregate
    from aworld_rl_core.tooluse.bfcl.loader import file_prefix
    from aworld_rl_core.tooluse.bfcl.results import write_results, write_summary
    from aworld_rl_funreason_mt.evaluation import evaluate_async, result_rows, summarize

    _check(cfg)
    groups: dict[str, list[Any]] = {}
    if cfg.entries in ("bfcl", "both"):
        from aworld_rl_core.tooluse.bfcl.agentic import load_agentic

        model_dir = run.dir / "bfcl" / "result" / cfg.result_model.replace("/", "_")
        groups["bfcl"] = [
            e
            for c in categories(cfg.categories)
            for e in (
                load_agentic(
                    c,
                    limit=cfg.limit,
                    model_result_dir=model_dir,
                    web_search_replay=cfg.web_search_replay or None,
                )
                if c in AGENTIC_CATEGORIES
                else load_category(c, limit=cfg.limit)
            )
        ]
    if cfg.entries in ("held_out", "both"):
        groups["held_out"] = held_out_entries(cfg.data)
    client, agent = _client(cfg)
    metrics: dict[str, float] = {}
    outputs: dict[str, Any] = {}
    outcomes_file = run.dir / "outcomes.jsonl"
    with outcomes_file.open("w", encoding="utf-8") as handle:
        for group, entries in groups.items():
            played = [e for e in entries if not e.category.endswith("_prereq")]
            bar = iter(run.progress(range(len(played)), total=len(played), desc=group))
            outcomes = asyncio.run(
                evaluate_async(
                    client,
                    entries,
                    protocol=cfg.protocol,
                    max_steps_per_turn=cfg.max_steps_per_turn,
                    concurrency=cfg.concurrency,
                    on_done=lambda o, bar=bar: None if o.prereq else next(bar, None),
                )
            )
            judged = [o for o in outcomes if not o.prereq]
            for _ in bar:
                pass
            figures = summarize(judged, prefix=f"{group}/")
            metrics.update(figures)
            for o in judged:
                row = {"group": group, "id": o.entry_id, "category": o.category, "valid": o.valid}
                row |= {"progress": o.progress, "error_type": o.error_type}
                handle.write(json.dumps(row) + "\n")
            section = (
                f"Protocol: **{cfg.protocol}**, {PROTOCOLS[cfg.protocol]}. Agent: {agent}.\n\n"
            )
            section += _table(figures, group)
            if group == "bfcl" and cfg.protocol == "bfcl":
                bfcl_dir = run.dir / "bfcl"
                files = write_results(bfcl_dir / "result", cfg.result_model, result_rows(outcomes))
                counts = {
                    c: (
                        sum(o.valid for o in judged if o.category == c),
                        sum(o.category == c for o in judged),
                    )
                    for c in files
                    if not c.endswith("_prereq")
                }
                leaderboard = {
                    f"bfcl/{name}": value
                    for name, value in bfcl_aggregate(counts).items()
                    if value is not None
                    and name in ("multi_turn", "memory", "web_search", "agentic")
                }
                metrics.update(leaderboard)
                section += "".join(
                    f"\nBFCL {k.split('/')[1]} (leaderboard aggregate over the categories run): "
                    f"{100 * v:.2f}%\n"
                    for k, v in leaderboard.items()
                )
                n = cfg.limit
                summary = write_summary(
                    bfcl_dir,
                    model=cfg.result_model,
                    protocol=cfg.protocol,
                    counts=counts,
                    entries="all" if n is None else f"first {n} per category",
                )
                command = json.loads(summary.read_text(encoding="utf-8"))["command"]
                section += (
                    f"\nData: bfcl-eval {version()} ({file_prefix()} files). Official scorer (in a "
                    f"venv with bfcl-eval and its dependencies):\n\n```\n{command}\n```\n"
                )
                outputs["bfcl_scores"] = summary
                outputs.update({f"bfcl_{c}_result": p for c, p in files.items()})
            title = "BFCL" if group == "bfcl" else "Held-out synthesized entries"
            run.add_section(f"{title} ({cfg.protocol} protocol)", section)
    account_llm_errors(metrics, client, run=run)  # too many failed calls: the run fails
    scores = run.dir / "scores.json"
    scores.write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    run.log(metrics)
    return RunResult(
        metrics=metrics, outputs={"outcomes": outcomes_file, "scores": scores, **outputs}
    )


def _table(figures: dict[str, float], group: str) -> str:
    prefix = f"{group}/accuracy/"
    lines = ["| category | accuracy (%) | mean progress (%) |", "|---|---|---|"]
    for key in sorted(k for k in figures if k.startswith(prefix)):
        category = key[len(prefix) :]
        progress = figures.get(f"{group}/progress/{category}")
        shown = "" if progress is None else f"{100 * progress:.2f}"
        lines.append(f"| {category} | {100 * figures[key]:.2f} | {shown} |")
    return "\n".join(lines) + "\n"
