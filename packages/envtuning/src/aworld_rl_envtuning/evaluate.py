"""BFCL multi-turn evaluation of an agent in EnvTuning's protocol, through core's LLM clients.

Each entry is played as an :class:`EnvTuningEnv` episode by core's episode engine
(``aworld_rl_core.engine.play``; augmentation off, BFCL's 20 steps per turn by default); the
calls the model made per turn are then judged by core's BFCL multi-turn judge (BFCL's verdict).
Accuracy per category is the share of valid entries; the overall figure is the mean over
categories, as BFCL reports it.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_core.engine import play
from aworld_rl_core.llm.errors import LLMError
from aworld_rl_envtuning.env import EnvTuningEnv

if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl import BfclEntry


@dataclass
class EpisodeOutcome:
    """One evaluated entry."""

    entry_id: str
    category: str
    valid: bool
    progress: float
    error_type: str
    info: dict[str, Any] = field(repr=False)
    messages: list[dict[str, Any]] = field(repr=False, default_factory=list)


class GroundTruthAgent:
    """An agent that writes each entry's ground truth in the protocol (a pipeline check: every
    entry must score 100%). ``for_entry`` gives the per-episode script."""

    def __init__(self, think_tag: str = "think") -> None:
        self.think_tag = think_tag

    def for_entry(self, entry: BfclEntry) -> _Script:
        from aworld_rl_envtuning.replay import ground_truth_responses

        turns = ground_truth_responses(entry, think_tag=self.think_tag)
        return _Script([text for turn in turns for text in turn])


class _Script:
    def __init__(self, texts: list[str]) -> None:
        self.texts = iter(texts)

    async def chat(self, messages: Any, **_: Any) -> Any:
        from aworld_rl_core.llm import Completion

        return Completion(text=next(self.texts, ""), model="ground-truth")


def judge(entry: BfclEntry, info: Mapping[str, Any]) -> tuple[bool, str]:
    """BFCL's multi-turn verdict on the calls the episode made (core's judge)."""
    from aworld_rl_core.tooluse.bfcl import judge_multi_turn

    verdict = judge_multi_turn(entry, info["calls_per_turn"])
    return verdict.valid, verdict.error_type


async def evaluate_async(
    client: Any,
    entries: Sequence[BfclEntry],
    *,
    env_options: Mapping[str, Any] | None = None,
    sampling: Mapping[str, Any] | None = None,
    concurrency: int = 8,
    on_done: Any = None,
) -> list[EpisodeOutcome]:
    """Evaluate ``entries`` with up to ``concurrency`` episodes in flight."""
    options = {"augmentation": False, "max_steps_per_turn": 20, **dict(env_options or {})}
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(entry: BfclEntry) -> EpisodeOutcome:
        agent = client.for_entry(entry) if hasattr(client, "for_entry") else client
        env = EnvTuningEnv(entry, **options)
        try:
            async with gate:
                episode = await play(agent, env, sampling=sampling)
            info, messages = episode.info, episode.messages
            valid, error_type = judge(entry, info)
        except LLMError as exc:  # the entry fails, as a model that gave no answer does in BFCL
            info, messages = env.final_info(), []
            valid, error_type = False, f"llm_error: {type(exc).__name__}: {exc}"[:300]
        outcome = EpisodeOutcome(
            entry.id, entry.category, valid, float(info["progress"]), error_type, info, messages
        )
        if on_done is not None:
            on_done(outcome)
        return outcome

    return list(await asyncio.gather(*(one(e) for e in entries)))


def evaluate(client: Any, entries: Sequence[BfclEntry], **kwargs: Any) -> list[EpisodeOutcome]:
    """Blocking :func:`evaluate_async` (``client`` is an async core LLM client)."""
    return asyncio.run(evaluate_async(client, entries, **kwargs))


def summarize(outcomes: Sequence[EpisodeOutcome]) -> dict[str, float]:
    """``accuracy/<category>``, ``progress/<category>``, ``accuracy/average`` (mean over
    categories), ``progress/average`` and ``entries``."""
    by_category: dict[str, list[EpisodeOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_category[outcome.category].append(outcome)
    metrics: dict[str, float] = {"entries": float(len(outcomes))}
    for category, items in sorted(by_category.items()):
        metrics[f"accuracy/{category}"] = sum(o.valid for o in items) / len(items)
        metrics[f"progress/{category}"] = sum(o.progress for o in items) / len(items)
    if by_category:
        n = len(by_category)
        metrics["accuracy/average"] = sum(metrics[f"accuracy/{c}"] for c in by_category) / n
        metrics["progress/average"] = sum(metrics[f"progress/{c}"] for c in by_category) / n
    return metrics


def write_bfcl_results(
    outcomes: Sequence[EpisodeOutcome], directory: Path, model_label: str
) -> list[Path]:
    """BFCL-format result files: ``<dir>/<model>/multi_turn/<prefix>_<category>_result.json``,
    one ``{"id", "result"}`` line per entry, ``result`` = turn -> step -> call strings."""
    from aworld_rl_core.tooluse.bfcl.loader import file_prefix

    prefix = file_prefix()
    folder = Path(directory) / model_label.replace("/", "_") / "multi_turn"
    folder.mkdir(parents=True, exist_ok=True)
    by_category: dict[str, list[EpisodeOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_category[outcome.category].append(outcome)
    paths = []
    for category, items in sorted(by_category.items()):
        path = folder / f"{prefix}_{category}_result.json"
        with path.open("w", encoding="utf-8") as handle:
            for o in sorted(items, key=lambda o: int(o.entry_id.rsplit("_", 1)[-1])):
                record = {"id": o.entry_id, "result": o.info["calls_per_turn"]}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def accuracy_table(metrics: Mapping[str, float]) -> str:
    """A markdown table of accuracy and progress per category (percent)."""
    categories = sorted(
        k.split("/", 1)[1] for k in metrics if k.startswith("accuracy/") and k != "accuracy/average"
    )
    lines = ["| category | accuracy (%) | mean progress (%) |", "|---|---|---|"]
    for c in [*categories, "average"]:
        acc, prog = metrics.get(f"accuracy/{c}"), metrics.get(f"progress/{c}")
        if acc is not None:
            lines.append(f"| {c} | {100 * acc:.2f} | {100 * (prog or 0.0):.2f} |")
    return "\n".join(lines) + "\n"


def plot_accuracy(metrics: Mapping[str, float], path: Path) -> Path | None:
    """A bar chart of per-category accuracy (None when matplotlib is missing)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(k for k in metrics if k.startswith("accuracy/"))
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(
        [k.split("/", 1)[1].replace("multi_turn_", "") for k in keys],
        [100 * metrics[k] for k in keys],
    )
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title("BFCL multi-turn")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
