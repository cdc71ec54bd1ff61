"""Test doubles for FunReason: a scripted FCDR judge (in-process or behind core's scripted
OpenAI-compatible server). TEST DOUBLES: they follow a script, they do not judge anything."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.llm.types import Completion
from aworld_rl_funreason.fcdr.prompts import STAGE_QUESTIONS

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "city name"},
            "days": {"type": "integer", "description": "forecast days", "default": 1},
        },
        "required": ["city"],
    },
}


def stage_of(messages: list[dict]) -> str:
    """Which FCDR stage (or 'teacher') a prompt belongs to."""
    text = messages[-1]["content"]
    for stage, question in STAGE_QUESTIONS.items():
        if question in text:
            return stage
    return "teacher"


def request_of(messages: list[dict]) -> str:
    text = messages[-1]["content"]
    return text.split("## User request\n", 1)[1].split("\n\n", 1)[0]


@dataclass
class ScriptedJudge:
    """TEST DOUBLE of an LLM client: replies by (stage, user request); default passes.
    ``after_teacher`` replies by stage once the teacher was asked (a re-check of new CoT);
    ``last_messages`` keeps the last prompt text per stage."""

    script: dict[tuple[str, str], str] = field(default_factory=dict)
    after_teacher: dict[str, str] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    last_messages: dict[str, str] = field(default_factory=dict)
    model: str = "scripted-judge"

    def reply_for(self, messages: list[dict]) -> str:
        stage, request = stage_of(messages), request_of(messages)
        self.last_messages[stage] = messages[-1]["content"]
        taught = any(s == "teacher" for s, _ in self.calls)
        self.calls.append((stage, request))
        if taught and stage in self.after_teacher:
            return self.after_teacher[stage]
        if (stage, request) in self.script:
            return self.script[(stage, request)]
        if stage == "teacher":
            return "<think>The user wants the weather, so call get_weather.</think>\n\n[...]"
        return "<think>looks fine</think><judge>True</judge>"

    async def chat(self, messages, *, tools=None, **sampling):
        return Completion(text=self.reply_for(messages), model=self.model)

    async def aclose(self):
        return None


def scripted_reply(script: dict[tuple[str, str], str] | None = None):
    """A reply function for ``ScriptedLLMServer`` that answers like :class:`ScriptedJudge`."""
    judge = ScriptedJudge(dict(script or {}))

    def reply(body: dict[str, Any]) -> str:
        return judge.reply_for(body["messages"])

    reply.judge = judge  # type: ignore[attr-defined]
    return reply
