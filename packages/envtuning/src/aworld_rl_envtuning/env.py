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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.environment import Message, Step
from aworld_rl_core.tooluse import (
    ParsedResponse,
    format_python_call,
    format_python_calls,
    get_parser,
)
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


class EnvTuningEnv:
    """One episode of one BFCL multi-turn entry (see the module docstring)."""

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
        if max_steps_per_turn < 1:
            raise ValueError(f"max_steps_per_turn must be >= 1, got {max_steps_per_turn}")
        self.entry = entry
        self.max_steps_per_turn = max_steps_per_turn
        self.reward_spec = reward or RewardSpec()
        self.error_dicts_fail = error_dicts_fail
        self.prompt_style = prompt_style
        self.tool_docs = tool_docs
        self.think_tag = think_tag
        self.abstain_credit = abstain_credit
        self.augmenter = Augmenter(hints, enabled=augmentation)
        self._parse = get_parser("think_json", think_tag=think_tag)
        self._episode: Any = None
        self._owners: dict[str, str] = {}
        self.stats = EpisodeStats(expected_turns=len(entry.ground_truth))
        self.calls_per_turn: list[list[list[str]]] = []
        self.result: list[list[str]] = []
        self.failures: list[dict[str, Any]] = []
        self.tool_calls = 0
        self.tool_errors = 0
        self._steps_in_turn = 0
        self._warn_next = False
        self._last_reward = 0.0
        self._done = False

    # -- protocol ------------------------------------------------------------------------------

    def reset(self) -> list[Message]:
        """Opening messages: the system prompt with the first turn's tools, the first user turn."""
        from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode

        self.close()
        self._episode = MultiTurnEpisode(self.entry)
        self._owners = method_owners(self._episode.instances)
        self.stats = EpisodeStats(expected_turns=self._episode.num_turns)
        self.calls_per_turn = [[]]
        self.result = [[]]
        self.failures = []
        self.tool_calls = self.tool_errors = self._steps_in_turn = 0
        self._warn_next = self._done = False
        self._last_reward = 0.0
        prompt = system_prompt(
            self._episode.function_docs(0),
            style=self.prompt_style,
            tool_docs=self.tool_docs,
            think_tag=self.think_tag,
        )
        return [{"role": "system", "content": prompt}, *self._episode.user_messages(0)]

    def step(self, model_text: str) -> Step:
        """Consume one model response; never raises on model text."""
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError(f"episode {self.entry.id} is over; start a new environment")
        parsed = self._parse(model_text)
        self._steps_in_turn += 1
        # what BFCL's scorer reads for this reply: its calls as a python call list, else the text
        calls = parsed.calls if parsed.ok else []
        self.result[-1].append(format_python_calls(calls) if calls else model_text)
        if not parsed.ok:
            self.stats.steps.append(StepKind.FORMAT_ERROR)
            return self._continue_or_advance([_user(_format_feedback(parsed, self.think_tag))])
        if parsed.calls:
            assert self.entry.ground_truth is not None  # a judged episode (MultiTurnEpisode)
            if not self.entry.ground_truth[self._episode.turn]:
                self.stats.steps.append(StepKind.BLOCKED_CALL)
                self.calls_per_turn[-1].append(parsed.call_strings())  # BFCL judges them too
                self._warn_next = True
                return self._end_turn(blocked=True)
            return self._continue_or_advance([_user(self._execute(parsed))])
        self.stats.steps.append(StepKind.ANSWER)
        return self._end_turn()

    def close(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    # -- internals -----------------------------------------------------------------------------

    def _execute(self, parsed: ParsedResponse) -> str:
        results: list[ToolResult] = self._episode.dispatch(parsed.calls)
        rendered, failed_any = [], False
        for result in results:
            failed = result.kind != "ok" and (
                self.error_dicts_fail or result.kind != "returned_error"
            )
            failed_any |= failed
            self.tool_errors += failed
            method = result.call.name if result.call else ""
            if result.is_error:
                self.failures.append(
                    {
                        "turn": self._episode.turn,
                        "class": self._owners.get(method),
                        "method": method,
                        "arguments": dict(result.call.arguments) if result.call else {},
                        "error": result.text,
                    }
                )
            rendered.append(
                self.augmenter.render(
                    self._owners.get(method), method, result.text, failed=result.is_error
                )
            )
        self.tool_calls += len(results)
        self.calls_per_turn[-1].append([format_python_call(c) for c in parsed.calls])
        self.stats.steps.append(StepKind.TOOL_ERROR if failed_any else StepKind.TOOL_OK)
        return (
            "Here are the function's execution results.\nExecution results: "
            + json.dumps(rendered, ensure_ascii=False)
            + "\n"
            + AFTER_EXECUTION.format(think=self.think_tag)
        )

    def _continue_or_advance(self, observation: list[Message]) -> Step:
        if self._steps_in_turn >= self.max_steps_per_turn:
            self.stats.forced_turn_ends += 1
            return self._end_turn(forced=True)
        return Step(observation=observation, reward=self._reward_increment(), info=self._info())

    def _end_turn(self, *, blocked: bool = False, forced: bool = False) -> Step:
        assert self.entry.ground_truth is not None
        abstain = not self.entry.ground_truth[self._episode.turn]
        # forced in an abstain turn: every reply broke the format (a call would have blocked)
        unclean = forced and abstain and self.abstain_credit == "clean"
        result = self._episode.end_turn()
        self.stats.turn_scores.append(0.0 if blocked or unclean else result.score)
        self._steps_in_turn = 0
        if self._episode.done:
            self._done = True
            if self.reward_spec.name == "accuracy":
                from aworld_rl_core.tooluse.bfcl import judge_multi_turn

                self.stats.valid = judge_multi_turn(self.entry, self.calls_per_turn).valid
            reward = self._reward_increment()
            return Step(observation=[], reward=reward, done=True, info=self.final_info())
        self.calls_per_turn.append([])
        self.result.append([])
        messages = [dict(m) for m in self._episode.user_messages()]
        if self._warn_next and messages:
            messages[0]["content"] = EMPTY_TURN_WARNING + str(messages[0].get("content", ""))
            self._warn_next = False
        info = self._info(turn_ended=True, forced=forced)
        return Step(observation=messages, reward=self._reward_increment(), info=info)

    def _reward_increment(self) -> float:
        total = self.reward_spec(self.stats)
        increment, self._last_reward = total - self._last_reward, total
        return float(increment)

    def _info(self, **extra: Any) -> dict[str, Any]:
        """Every step's info: where the episode is and its scores so far (an episode cut by a
        length limit ends on one of these)."""
        denominator = self.reward_spec.format_denominator
        return {
            "turn": self._episode.turn,
            "steps": len(self.stats.steps),
            "tool_calls": self.tool_calls,
            "format_errors": self.stats.format_errors,
            "progress": self.progress,
            "format_score": format_score(self.stats, denominator),
            "stage1_reward": stage1_reward(self.stats, denominator),
            **extra,
        }

    @property
    def progress(self) -> float:
        """Progress so far, over the expected turns."""
        return progress_reward(self.stats, "expected")

    def final_info(self) -> dict[str, Any]:
        """What the episode did so far (the ``info`` of the last step)."""
        stats = self.stats
        return {
            "entry_id": self.entry.id,
            "progress": self.progress,
            "progress_reached": progress_reward(stats, "reached"),
            "reward": self._last_reward,
            "turn_scores": list(stats.turn_scores),
            "format_errors": stats.format_errors,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "forced_turn_ends": stats.forced_turn_ends,
            "steps": len(stats.steps),
            "hints_used": list(self.augmenter.used),
            "calls_per_turn": [list(turn) for turn in self.calls_per_turn],
            "result": [list(turn) for turn in self.result],
            "failures": list(self.failures),
            "format_score": format_score(stats, self.reward_spec.format_denominator),
            "stage1_reward": stage1_reward(stats, self.reward_spec.format_denominator),
            **({} if stats.valid is None else {"accuracy": float(stats.valid)}),
        }


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
