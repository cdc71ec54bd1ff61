"""BFCL multi-turn evaluation of an agent through core's LLM clients, in one of two protocols.

``bfcl`` (the default) is the leaderboard's: core's :class:`BfclEnv` plays each entry as
bfcl-eval's prompting handlers do (BFCL's system prompt, python call lists, tool messages, calls
in abstain turns executed, the entry force-quit past 20 call replies in a turn) and the verdict
is BFCL's eval runner's (no irrelevance check). ``envtuning`` is the paper's: EnvTuning's prompts
and ``<think>`` / ``<tool_call>`` / ``<answer>`` format in :class:`EnvTuningEnv` (augmentation
off), a call in an abstain turn blocked and failing the entry, a turn moved on after
``max_steps_per_turn`` replies, and the stricter verdict. Accuracy per category is the share of
valid entries; the overall figure is the mean over categories, as BFCL reports it. Episodes run
in core's episode engine (``aworld_rl_core.engine.play``). Each outcome carries the BFCL result
row (``result`` per turn and reply, token counts, latencies) that
:func:`result_rows` hands to core's result-file writer.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.engine import play
from aworld_rl_core.llm.errors import LLMError
from aworld_rl_core.llm.wrappers import MeteredClient, ScriptClient

if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl import BfclEntry

Protocol = Literal["bfcl", "envtuning"]
PROTOCOLS: dict[str, str] = {
    "bfcl": "BFCL's prompting protocol (the leaderboard's: BFCL prompts, python call lists, "
    "calls in abstain turns executed, an entry fails past 20 call replies in a turn)",
    "envtuning": "EnvTuning's protocol (its prompts, <think>/<tool_call>/<answer>, calls in "
    "abstain turns blocked and failing, a turn moved on after its step cap)",
}


@dataclass
class EpisodeOutcome:
    """One evaluated entry; ``usage`` is (input tokens, output tokens, seconds) per reply."""

    entry_id: str
    category: str
    valid: bool
    progress: float
    error_type: str
    info: dict[str, Any] = field(repr=False)
    messages: list[dict[str, Any]] = field(repr=False, default_factory=list)
    usage: list[tuple[int, int, float]] = field(repr=False, default_factory=list)


class GroundTruthAgent:
    """An agent that writes each entry's ground truth in the protocol (a pipeline check: every
    entry must score 100%). ``for_entry`` gives the per-episode script."""

    def __init__(
        self, think_tag: str = "think", *, protocol: Protocol = "bfcl", call_per_step: bool = False
    ) -> None:
        self.think_tag = think_tag
        self.protocol = protocol
        self.call_per_step = call_per_step

    def for_entry(self, entry: BfclEntry) -> ScriptClient:
        if self.protocol == "bfcl":
            from aworld_rl_core.tooluse.bfcl import ground_truth_replies

            turns = ground_truth_replies(entry)
        else:
            from aworld_rl_envtuning.replay import ground_truth_responses

            turns = ground_truth_responses(
                entry, think_tag=self.think_tag, call_per_step=self.call_per_step
            )
        return ScriptClient([text for turn in turns for text in turn])


def make_env(entry: BfclEntry, protocol: Protocol, options: Mapping[str, Any]) -> Any:
    """The episode environment of ``protocol``: core's BfclEnv (``max_steps_per_turn`` is its
    force-quit limit) or EnvTuningEnv with ``options`` (augmentation always off)."""
    if protocol == "bfcl":
        from aworld_rl_core.tooluse.bfcl import BfclEnv

        return BfclEnv(entry, max_steps_per_turn=int(options.get("max_steps_per_turn", 20)))
    if protocol == "envtuning":
        from aworld_rl_envtuning.env import EnvTuningEnv

        return EnvTuningEnv(entry, **{**dict(options), "augmentation": False})
    raise ValueError(f"unknown protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")


def judge(entry: BfclEntry, info: Mapping[str, Any], protocol: Protocol) -> tuple[bool, str]:
    """The multi-turn verdict on the calls the episode made (core's judge): BFCL's eval runner
    under ``bfcl``, with the irrelevance check (no call in abstain turns) under ``envtuning``."""
    from aworld_rl_core.tooluse.bfcl import judge_multi_turn

    verdict = judge_multi_turn(
        entry, info["calls_per_turn"], irrelevance_check=protocol == "envtuning"
    )
    return verdict.valid, verdict.error_type


async def evaluate_async(
    client: Any,
    entries: Sequence[BfclEntry],
    *,
    protocol: Protocol = "bfcl",
    env_options: Mapping[str, Any] | None = None,
    sampling: Mapping[str, Any] | None = None,
    concurrency: int = 8,
    on_done: Any = None,
) -> list[EpisodeOutcome]:
    """Evaluate ``entries`` in ``protocol`` with up to ``concurrency`` episodes in flight."""
    options = {"max_steps_per_turn": 20, **dict(env_options or {})}
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(entry: BfclEntry) -> EpisodeOutcome:
        agent = MeteredClient(client.for_entry(entry) if hasattr(client, "for_entry") else client)
        env = make_env(entry, protocol, options)
        try:
            async with gate:
                episode = await play(agent, env, sampling=sampling)
            info, messages = episode.info, episode.messages
            valid, error_type = judge(entry, info, protocol)
        except LLMError as exc:  # the entry fails, as a model that gave no answer does in BFCL
            info, messages = env.final_info(), []
            valid, error_type = False, f"llm_error: {type(exc).__name__}: {exc}"[:300]
        outcome = EpisodeOutcome(
            entry.id,
            entry.category,
            valid,
            float(info["progress"]),
            error_type,
            info,
            messages,
            agent.usage,
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


def result_rows(outcomes: Sequence[EpisodeOutcome]) -> list[dict[str, Any]]:
    """BFCL result rows: ``id``, ``result`` (per turn, per reply, the text BFCL's scorer decodes)
    and BFCL's per-reply metadata fields, shaped like ``result``."""
    rows = []
    for o in outcomes:
        result = o.info.get("result", [])
        row: dict[str, Any] = {"id": o.entry_id, "result": result}
        usage = iter(o.usage)
        shaped = [[next(usage, (0, 0, 0.0)) for _ in turn] for turn in result]
        for index, key in enumerate(("input_token_count", "output_token_count", "latency")):
            row[key] = [[reply[index] for reply in turn] for turn in shaped]
        rows.append(row)
    return rows


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
