"""Recipe ``envtuning.eval``: BFCL multi-turn accuracy of an agent, as the leaderboard scores it.

The agent is any core LLM client: a vLLM / SGLang server or any OpenAI-compatible endpoint
(``llm.provider=openai``, ``llm.base_url``; episodes run ``concurrency`` at a time) or, for tiny
models, a local transformers model (``llm.provider=local``). ``protocol=bfcl`` (default) plays
BFCL's prompting protocol, ``protocol=envtuning`` the paper's (``aworld_rl_envtuning.evaluate``).
Entries: the paper's 400-entry test set (every entry outside the training split), a part of the
split (seeded, or read from a curriculum run's ``split.json``) or all 800. Outputs: BFCL result
files (``bfcl/result/<model>/multi_turn/BFCL_v4_<cat>_result.json``, which
``bfcl evaluate --partial-eval`` scores; the command is in ``bfcl/scores.json`` and the report),
``outcomes.jsonl`` (one line per entry) and a report with the accuracy table and a plot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.config import RENAMED_TO_LIMIT, limit_option, option
from aworld_rl_core.llm import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tooluse.bfcl.results import DEFAULT_MODEL
from aworld_rl_envtuning.data import CATEGORIES, SplitConfig

if TYPE_CHECKING:
    from aworld_rl_envtuning.data import Split
    from aworld_rl_envtuning.evaluate import Protocol
    from aworld_rl_envtuning.recipes.common import EnvConfig, ValidationConfig

ENTRY_SETS = {
    "test": "the paper's test set: every entry outside the training split",
    "held_out": "the held-out part of the split (neither training nor validation)",
    "validation": "the validation part of the split",
    "train": "the training part of the split",
    "all": "every entry of the categories",
}


@dataclass(frozen=True, kw_only=True)
class EvalEnvConfig:
    """The episode settings (no augmentation: BFCL's own error messages)."""

    max_steps_per_turn: int = option(
        20,
        help="model replies per user turn: bfcl force-quits (fails) the entry past it, "
        "envtuning moves on to the next turn (BFCL: 20)",
    )
    prompt_style: Literal["basic", "resourceful"] = option(
        "resourceful", help="protocol=envtuning: system prompt of stages 1-2 or 3-4"
    )
    tool_docs: Literal["json", "compact"] = option(
        "json", help="protocol=envtuning: tool list as BFCL JSON docs or one line per function"
    )
    think_tag: str = option("think", help="protocol=envtuning: reasoning tag name")


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """BFCL multi-turn evaluation."""

    __moved_keys__ = {"entries_per_category": RENAMED_TO_LIMIT}

    protocol: Literal["bfcl", "envtuning"] = option(
        "bfcl",
        help="bfcl: the leaderboard's prompting protocol and verdicts; envtuning: the paper's "
        "format, blocked calls in abstain turns, turns moved on at the step cap",
    )
    agent: Literal["llm", "ground_truth"] = option(
        "llm", help="llm: the model in `llm`; ground_truth: BFCL's answers (a 100% check)"
    )
    llm: LLMConfig = option(
        factory=lambda: LLMConfig(temperature=0.0, max_tokens=4096),
        help="the agent (tiny:<arch> as a local model name builds core's tiny model)",
    )
    entries: Literal["test", "held_out", "validation", "train", "all"] = option(
        "test",
        help="test: the paper's 400 (outside the training split); a part of the split; all 800",
    )
    split_file: str | None = option(
        None, help="a curriculum run's split.json to take the split from (unset: `split`)"
    )
    categories: tuple[str, ...] = option(CATEGORIES, help="BFCL multi-turn categories")
    limit: int | None = limit_option("first N entries per category")
    split: SplitConfig = option(factory=SplitConfig, help="the seeded split (no split_file)")
    env: EvalEnvConfig = option(factory=EvalEnvConfig, help="episode settings")
    concurrency: int = option(16, help="episodes in flight")
    result_model: str = option(
        DEFAULT_MODEL,
        help="model name of the BFCL result files: a prompting model bfcl-eval has registered",
    )


def _split(cfg: EvalConfig) -> tuple[Split, str]:
    from aworld_rl_envtuning.data import bfcl_split, read_split

    if cfg.split_file:
        path = Path(cfg.split_file)
        if not path.is_file():
            raise FileNotFoundError(
                f"split_file {path} does not exist; give a curriculum run's split.json or leave "
                "it unset to build the seeded split"
            )
        return read_split(path), f"split from {path}"
    s = cfg.split
    return bfcl_split(s), (
        f"seeded split by {s.by} (seed {s.seed}; {s.train_per_category} training and "
        f"{s.validation_per_category} validation entries per category)"
    )


def _entry_ids(cfg: EvalConfig) -> tuple[list[str], str]:
    """The entry ids and a sentence saying which they are."""
    from aworld_rl_envtuning.recipes.common import check_categories

    categories = check_categories(cfg.categories)
    if cfg.entries == "all":
        from aworld_rl_core.tooluse.bfcl import load_category

        by_category = {c: [e.id for e in load_category(c)] for c in categories}
        origin = ""
    else:
        split, origin = _split(cfg)
        parts = ("validation", "held_out") if cfg.entries == "test" else (cfg.entries,)
        by_category = {c: [i for p in parts for i in split.of(p, [c])] for c in categories}
    n = cfg.limit
    ids = [i for c in categories for i in by_category[c][:n]]
    counts = ", ".join(f"{sum(i.startswith(c + '_') for i in ids)} {c}" for c in categories)
    text = f"{cfg.entries}: {ENTRY_SETS[cfg.entries]}, {len(ids)} entries ({counts})"
    if n is not None:
        text += f", the first {n} per category"
    return ids, text + (f"; {origin}" if origin else "")


def _check(cfg: EvalConfig) -> None:
    from aworld_rl_core.tooluse.bfcl.results import check_leaderboard_data, check_model

    check_model(cfg.result_model)
    if cfg.protocol == "bfcl":
        check_leaderboard_data()
    if cfg.protocol == "bfcl" and cfg.agent == "llm" and cfg.llm.temperature != 0.0:
        raise ValueError(
            f"protocol=bfcl decodes greedily, as the leaderboard does; llm.temperature is "
            f"{cfg.llm.temperature}: set llm.temperature=0 (or protocol=envtuning to sample)"
        )


def run_evaluation(
    llm: LLMConfig,
    entry_ids: list[str],
    env_options: dict[str, Any],
    *,
    protocol: Protocol,
    concurrency: int,
    out_dir: Path,
    run: Run,
    ground_truth: bool = False,
    result_model: str = DEFAULT_MODEL,
    entries: str = "",
) -> tuple[dict[str, float], dict[str, Path]]:
    """Evaluate, write result files and the report sections; (metrics, output files)."""
    from aworld_rl_core.llm import account_llm_errors, make_client
    from aworld_rl_core.tooluse.bfcl import version
    from aworld_rl_core.tooluse.bfcl.loader import file_prefix
    from aworld_rl_core.tooluse.bfcl.results import write_results, write_summary
    from aworld_rl_envtuning.env import get_entry
    from aworld_rl_envtuning.evaluate import (
        PROTOCOLS,
        accuracy_table,
        evaluate,
        plot_accuracy,
        result_rows,
        summarize,
    )
    from aworld_rl_envtuning.recipes.training import local_model_path

    if ground_truth:
        from aworld_rl_envtuning.evaluate import GroundTruthAgent

        client: Any = GroundTruthAgent(env_options.get("think_tag", "think"), protocol=protocol)
        agent = "BFCL's ground truth"
    else:
        if llm.provider == "local":
            llm = replace(llm, model=local_model_path(llm.model))
        client, agent = make_client(llm), f"{llm.model} ({llm.provider})"
    entries_ = [get_entry(i) for i in entry_ids]
    bar = iter(run.progress(range(len(entries_)), total=len(entries_), desc="BFCL episodes"))
    outcomes = evaluate(
        client,
        entries_,
        protocol=protocol,
        env_options=env_options,
        concurrency=concurrency,
        on_done=lambda _: next(bar, None),
    )
    for _ in bar:
        pass
    metrics = summarize(outcomes)
    out_dir.mkdir(parents=True, exist_ok=True)
    bfcl_dir = out_dir / "bfcl"
    files = write_results(bfcl_dir / "result", result_model, result_rows(outcomes))
    counts = {
        c: (
            sum(o.valid for o in outcomes if o.category == c),
            sum(o.category == c for o in outcomes),
        )
        for c in files
    }
    summary = write_summary(
        bfcl_dir, model=result_model, protocol=protocol, counts=counts, entries=entries
    )
    detail = out_dir / "outcomes.jsonl"
    with detail.open("w", encoding="utf-8") as handle:
        for o in outcomes:
            record = {
                "id": o.entry_id,
                "category": o.category,
                "valid": o.valid,
                "progress": o.progress,
                "error_type": o.error_type,
                "turn_scores": o.info["turn_scores"],
                "steps": o.info["steps"],
            }
            for key in ("force_quit", "format_errors", "tool_calls"):  # one protocol's each
                if key in o.info:
                    record[key] = o.info[key]
            handle.write(json.dumps(record) + "\n")
    outputs = {
        "outcomes": detail,
        "bfcl_scores": summary,
        **{f"bfcl_{c}_result": p for c, p in files.items()},
    }
    command = json.loads(summary.read_text(encoding="utf-8"))["command"]
    section = (
        f"Protocol: **{protocol}**, {PROTOCOLS[protocol]}. Agent: {agent}. "
        f"Entries: {entries or f'{len(entry_ids)} entries'}. Data: bfcl-eval {version()} "
        f"({file_prefix()} files).\n\n{accuracy_table(metrics)}\n"
        f"Official scorer (in a venv with bfcl-eval and its dependencies):\n\n"
        f"```\n{command}\n```\n"
    )
    plot = plot_accuracy(metrics, out_dir / "accuracy.png")
    if plot is not None:
        outputs["accuracy_plot"] = plot
        section += f"\n![accuracy]({plot.relative_to(run.dir).as_posix()})\n"
    run.add_section(f"BFCL multi-turn ({protocol} protocol)", section)
    account_llm_errors(metrics, client, run=run)  # too many failed calls: the run fails
    run.log({k: v for k, v in metrics.items() if k != "entries"})
    return metrics, outputs


def evaluate_held_out(
    model_path: str,
    split: Split,
    limit: int | None,
    validation: ValidationConfig,
    env: EnvConfig,
    *,
    style: str,
    out_dir: Path,
    run: Run,
) -> tuple[dict[str, float], dict[str, Path]]:
    """The curriculum's final evaluation of a local checkpoint on the first ``limit`` held-out
    entries of each category (null: all)."""
    ids = [i for c in CATEGORIES for i in split.of("held_out", [c])[:limit]]
    llm = LLMConfig(
        provider="local",
        model=model_path,
        temperature=validation.temperature,
        max_tokens=validation.max_tokens,
        max_batch_size=validation.max_batch_size,
        device=validation.device,
    )
    options = {
        "max_steps_per_turn": validation.max_steps_per_turn,
        "prompt_style": style,
        "tool_docs": env.tool_docs,
        "think_tag": env.think_tag,
    }
    return run_evaluation(
        llm,
        ids,
        options,
        protocol="envtuning",  # the format the curriculum trained (issue 15 revisits this)
        concurrency=validation.concurrency,
        out_dir=out_dir,
        run=run,
        entries=f"held_out: {len(ids)} entries of the curriculum's split",
    )


def run(cfg: EvalConfig, run: Run) -> RunResult:
    _check(cfg)
    ids, entries = _entry_ids(cfg)
    if not ids:
        raise ValueError("no entries to evaluate: check categories and limit")
    (run.dir / "entries.json").write_text(json.dumps(ids), encoding="utf-8")
    options = {
        "max_steps_per_turn": cfg.env.max_steps_per_turn,
        "prompt_style": cfg.env.prompt_style,
        "tool_docs": cfg.env.tool_docs,
        "think_tag": cfg.env.think_tag,
    }
    metrics, outputs = run_evaluation(
        cfg.llm,
        ids,
        options,
        protocol=cfg.protocol,
        concurrency=cfg.concurrency,
        out_dir=run.dir,
        run=run,
        ground_truth=cfg.agent == "ground_truth",
        result_model=cfg.result_model,
        entries=entries,
    )
    return RunResult(metrics=metrics, outputs=outputs)
