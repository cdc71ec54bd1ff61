"""EnvTuning's environment: one BFCL multi-turn entry played step by step in text.

Each step the model writes ``<think>`` and then either ``<tool_call>[{"name", "arguments"}]``
(executed; the observation lists the results, with hints on failures when augmentation is on)
or ``<answer>`` (ends the user turn and reveals the next one). A format error gets a corrective
observation without advancing; ``max_steps_per_turn`` force-advances a turn. In a turn whose
ground truth is empty (an *abstain* turn: a function or a parameter is missing, the model should
ask instead of acting) only a well-formed reply without calls earns the turn: a tool call
executes nothing, scores 0 and is warned about in the next user message, and a turn that never
got a well-formed reply scores 0 (``abstain_credit="no_call"``: any turn end without a call
scores 1, as BFCL's checker and our earlier reading do). Step rewards are the increments
of the chosen episode reward, so the rewards of any prefix of the episode (a truncated rollout)
add up to the reward of that prefix.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.environment import Message
from aworld_rl_core.tooluse import ParsedResponse
from aworld_rl_core.tooluse.bfcl.turns import (
    BfclTurnEnv,
    Feedback,
    ParserProtocol,
    Reply,
    TurnPolicy,
)
from aworld_rl_core.tooluse.bfcl.turns import Reward as RewardPart
from aworld_rl_envtuning.augmentation import Augmenter, HintPack, method_owners
from aworld_rl_envtuning.prompts import (
    AFTER_EXECUTION,
    EMPTY_TURN_WARNING,
    PromptStyle,
    ToolDocs,
    system_prompt,
)
from aworld_rl_envtuning.rewards import (
    EpisodeStats,
    RewardSpec,
    StepKind,
    format_score,
    progress_reward,
    stage1_reward,
)

if TYPE_CHECKING:
    from aworld_rl_core.tooluse import ToolResult
    from aworld_rl_core.tooluse.bfcl import BfclEntry

AbstainCredit = Literal["clean", "no_call"]
TRAIN_STEP_CAP = 5
EVAL_STEP_CAP = 20
"""BFCL's own limit of model steps per user turn."""


@dataclass(frozen=True)
class EnvTuningProtocol(ParserProtocol):
    """``think_json`` replies; the opening is EnvTuning's system prompt with the first turn's
    tools, then the first user turn; results come back as one user message (their JSON list
    and the instruction to go on)."""

    style: PromptStyle = "basic"
    tool_docs: ToolDocs = "json"
    think_tag: str = "think"

    def opening(self, env: BfclTurnEnv) -> list[Message]:
        episode = env.episode
        prompt = system_prompt(
            episode.function_docs(0),
            style=self.style,
            tool_docs=self.tool_docs,
            think_tag=self.think_tag,
        )
        return [{"role": "system", "content": prompt}, *episode.user_messages(0)]

    def render(self, env: BfclTurnEnv, calls: Sequence[str], texts: Sequence[str]) -> list[Message]:
        content = (
            "Here are the function's execution results.\nExecution results: "
            + json.dumps(list(texts), ensure_ascii=False)
            + "\n"
            + AFTER_EXECUTION.format(think=self.think_tag)
        )
        return [_user(content)]


class EnvTuningFeedback(Feedback):
    """EnvTuning's feedback: the format reminder, each result through the augmenter (hints on
    failures when augmentation is on), a failure record naming the API class, and the warning
    that opens the turn after calls in an abstain turn."""

    def __init__(self, augmenter: Augmenter, *, think_tag: str, error_dicts_fail: bool) -> None:
        self.augmenter = augmenter
        self.think_tag = think_tag
        self.error_dicts_fail = error_dicts_fail
        self._owners: tuple[object, dict[str, str]] = (None, {})

    def owner(self, env: BfclTurnEnv, method: str) -> str | None:
        """The API class of ``method`` in this episode (read once per episode)."""
        episode = env.episode
        if self._owners[0] is not episode:
            self._owners = (episode, method_owners(episode.instances))
        return self._owners[1].get(method)

    def format_error(self, env: BfclTurnEnv, reply: Reply) -> list[Message]:
        return [_user(_format_feedback(reply.parsed, self.think_tag))]

    def failed(self, result: ToolResult) -> bool:
        return result.kind != "ok" and (self.error_dicts_fail or result.kind != "returned_error")

    def result_text(self, env: BfclTurnEnv, result: ToolResult) -> str:
        method = result.call.name if result.call else ""
        owner = self.owner(env, method)
        return self.augmenter.render(owner, method, result.text, failed=result.is_error)

    def failure(self, env: BfclTurnEnv, result: ToolResult) -> dict[str, Any]:
        method = result.call.name if result.call else ""
        return {**super().failure(env, result), "class": self.owner(env, method)}

    def next_turn(self, env: BfclTurnEnv, messages: list[Message]) -> list[Message]:
        if messages:
            messages[0]["content"] = EMPTY_TURN_WARNING + str(messages[0].get("content", ""))
        return messages


class EnvTuningReward(RewardPart):
    """The chosen EnvTuning reward (:class:`RewardSpec`) paid as increments at every step, and
    the scores every step's info carries."""

    running = True

    def __init__(self, spec: RewardSpec) -> None:
        self.spec = spec
        self.needs_verdict = spec.name == "accuracy"

    def total(self, env: BfclTurnEnv) -> float:
        return self.spec(stats_of(env))

    def info(self, env: BfclTurnEnv, **extra: Any) -> dict[str, Any]:
        stats, state = stats_of(env), env.state
        denominator = self.spec.format_denominator
        return {
            "turn": env.episode.turn,
            "steps": len(stats.steps),
            "tool_calls": state.tool_calls,
            "format_errors": stats.format_errors,
            "progress": progress_reward(stats, "expected"),
            "format_score": format_score(stats, denominator),
            "stage1_reward": stage1_reward(stats, denominator),
            **extra,
        }

    def final_info(self, env: BfclTurnEnv) -> dict[str, Any]:
        stats, state = stats_of(env), env.state
        denominator = self.spec.format_denominator
        augmenter = env.feedback.augmenter  # type: ignore[attr-defined]
        return {
            "entry_id": env.entry.id,
            "progress": progress_reward(stats, "expected"),
            "progress_reached": progress_reward(stats, "reached"),
            "reward": env.paid,
            "turn_scores": list(stats.turn_scores),
            "format_errors": stats.format_errors,
            "tool_calls": state.tool_calls,
            "tool_errors": state.tool_errors,
            "forced_turn_ends": stats.forced_turn_ends,
            "steps": len(stats.steps),
            "hints_used": list(augmenter.used),
            "calls_per_turn": [list(turn) for turn in state.calls_per_turn],
            "result": [list(turn) for turn in state.result],
            "failures": list(state.failures),
            "format_score": format_score(stats, denominator),
            "stage1_reward": stage1_reward(stats, denominator),
            **({} if stats.valid is None else {"accuracy": float(stats.valid)}),
        }


def stats_of(env: BfclTurnEnv) -> EpisodeStats:
    """The episode's state as EnvTuning's reward inputs."""
    state = env.state
    episode = env.live_episode
    turns = episode.num_turns if episode is not None else len(env.entry.ground_truth or [])
    return EpisodeStats(
        expected_turns=turns,
        steps=[StepKind(kind) for kind in state.kinds],
        turn_scores=state.turn_scores,
        forced_turn_ends=state.forced_turn_ends,
        valid=state.valid,
    )


class EnvTuningEnv(BfclTurnEnv):
    """One episode of one BFCL multi-turn entry (see the module docstring): core's BFCL
    multi-turn environment with EnvTuning's protocol, feedback and rewards, a turn that ends at
    its ``max_steps_per_turn``-th reply, and calls in abstain turns blocked."""

    def __init__(
        self,
        entry: BfclEntry,
        *,
        augmentation: bool = True,
        max_steps_per_turn: int = TRAIN_STEP_CAP,
        hints: HintPack | None = None,
        reward: RewardSpec | None = None,
        error_dicts_fail: bool = True,
        prompt_style: PromptStyle = "basic",
        tool_docs: ToolDocs = "json",
        think_tag: str = "think",
        abstain_credit: AbstainCredit = "clean",
    ) -> None:
        if abstain_credit not in ("clean", "no_call"):
            raise ValueError(f"abstain_credit must be clean or no_call, not {abstain_credit!r}")
        if not entry.is_multi_turn or entry.ground_truth is None:
            raise ValueError(f"{entry.id}: EnvTuningEnv needs a multi-turn entry with ground truth")
        policy = TurnPolicy(
            max_steps_per_turn=max_steps_per_turn, abstain="block", abstain_credit=abstain_credit
        )
        self.reward_spec = reward or RewardSpec()
        self.augmenter = Augmenter(hints, enabled=augmentation)
        protocol = EnvTuningProtocol(
            "think_json", {"think_tag": think_tag}, prompt_style, tool_docs, think_tag
        )
        feedback = EnvTuningFeedback(
            self.augmenter, think_tag=think_tag, error_dicts_fail=error_dicts_fail
        )
        super().__init__(
            entry,
            protocol=protocol,
            policy=policy,
            feedback=feedback,
            reward=EnvTuningReward(self.reward_spec),
        )
        self.max_steps_per_turn = max_steps_per_turn
        self.error_dicts_fail = error_dicts_fail
        self.prompt_style = prompt_style
        self.tool_docs = tool_docs
        self.think_tag = think_tag
        self.abstain_credit = abstain_credit

    @property
    def stats(self) -> EpisodeStats:
        return stats_of(self)

    @property
    def result(self) -> list[list[str]]:
        return self.state.result

    @property
    def failures(self) -> list[dict[str, Any]]:
        return self.state.failures

    @property
    def tool_calls(self) -> int:
        return self.state.tool_calls

    @property
    def tool_errors(self) -> int:
        return self.state.tool_errors

    @property
    def progress(self) -> float:
        """Progress so far, over the expected turns."""
        return progress_reward(self.stats, "expected")

    def final_info(self) -> dict[str, Any]:
        """What the episode did so far (the ``info`` of the last step)."""
        return self.reward_part.final_info(self)


def protocol_part(
    entry: BfclEntry,
    prompt_style: PromptStyle = "basic",
    tool_docs: ToolDocs = "json",
    think_tag: str = "think",
) -> EnvTuningProtocol:
    """``envtuning.protocol``: think_json replies, EnvTuning's opening and result message."""
    return EnvTuningProtocol(
        "think_json", {"think_tag": think_tag}, prompt_style, tool_docs, think_tag
    )


def feedback_part(
    entry: BfclEntry,
    augmentation: bool = True,
    hint_packs: tuple[str, ...] = (),
    think_tag: str = "think",
    error_dicts_fail: bool = True,
) -> EnvTuningFeedback:
    """``envtuning.feedback``: the format reminder, hints on failed calls (``hint_packs``: names
    or files, loaded once per process), the abstain-turn warning."""
    from aworld_rl_core.resources import shared

    sources = [str(s) for s in hint_packs]
    hints = (
        shared("envtuning.hints", {"sources": sources}, lambda: _hints(sources))
        if sources
        else None
    )
    augmenter = Augmenter(hints, enabled=augmentation)
    return EnvTuningFeedback(augmenter, think_tag=think_tag, error_dicts_fail=error_dicts_fail)


def reward_part(entry: BfclEntry, **spec: Any) -> EnvTuningReward:
    """``envtuning.reward``: a :class:`RewardSpec` (name, denominator, ...), paid as increments."""
    return EnvTuningReward(RewardSpec(**spec))


def _user(content: str) -> Message:
    return {"role": "user", "content": content}


def _format_feedback(parsed: ParsedResponse, think_tag: str) -> str:
    problems = "; ".join(parsed.errors[:3])
    return (
        f"Your response does not follow the required format ({problems}). Reply with "
        f"<{think_tag}>...</{think_tag}> followed by exactly one of "
        '<tool_call>[{"name": ..., "arguments": {...}}]</tool_call> or <answer>...</answer>, '
        "and no text outside the tags."
    )


@functools.lru_cache(maxsize=8)
def _entries_by_id(categories: tuple[str, ...]) -> dict[str, BfclEntry]:
    from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category

    cats = categories or MULTI_TURN_CATEGORIES
    return {e.id: e for cat in cats for e in load_category(cat)}


def get_entry(entry_id: str) -> BfclEntry:
    """The BFCL multi-turn entry with this id (e.g. ``multi_turn_base_0``), or core's
    micro-world entry (``micro_set_temp_0``)."""
    from aworld_rl_core.tooluse.microworld import bfcl_entry, is_micro_id

    if is_micro_id(entry_id):
        return bfcl_entry(entry_id)
    entries = _entries_by_id(())
    if entry_id not in entries:
        raise KeyError(f"no BFCL multi-turn entry {entry_id!r} (ids look like multi_turn_base_0)")
    return entries[entry_id]


def make_env(row: Mapping[str, Any], **options: Any) -> EnvTuningEnv:
    """The registered factory (``envtuning.bfcl``): the row's ``entry_id`` with JSON options, so
    verl workers can rebuild it (``reward`` is a :class:`RewardSpec` dict, ``hint_packs`` names
    or file paths; hint packs are loaded once per process). A row's ``env_options`` override
    the factory's (validation rows: no hints, BFCL's step limit, the accuracy reward)."""
    from aworld_rl_core.resources import shared

    options = dict(options)
    if isinstance(row, Mapping) and isinstance(row.get("env_options"), Mapping):
        options.update(row["env_options"])  # a row's own settings (validation rows)
    if isinstance(options.get("reward"), Mapping):
        options["reward"] = RewardSpec(**options["reward"])
    if "hint_packs" in options:
        sources = [str(s) for s in options.pop("hint_packs")]
        options["hints"] = shared("envtuning.hints", {"sources": sources}, lambda: _hints(sources))
    entry_id = row.get("entry_id") if isinstance(row, Mapping) else None
    if not entry_id:
        keys = sorted(row) if isinstance(row, Mapping) else type(row).__name__
        raise ValueError(f"an EnvTuning row needs an 'entry_id' column; got {keys}")
    return EnvTuningEnv(get_entry(str(entry_id)), **options)


def _hints(sources: list[str]) -> HintPack:
    from aworld_rl_envtuning.augmentation import load_hint_packs

    return load_hint_packs(sources)
