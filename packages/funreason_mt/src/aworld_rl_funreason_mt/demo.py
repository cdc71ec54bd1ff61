"""PIPELINE DEMO ONLY: a scripted oracle that answers the four agents from the trace.

It is not a model. It reads each request, recognises the agent by its system prompt, and
answers from the trace the tooling request shows (the executed calls are the answer). It lets
the whole pipeline run on a CPU with real, replayable output: the ``demo`` preset of
``funreason_mt.synthesize`` serves it from core's scripted OpenAI-compatible server. Data made
this way has oracle-written queries and reasoning; it demonstrates the pipeline, it is not
training data.

To exercise every branch of the pipeline it errs on purpose, deterministically per trace: a
quarter of its first queries name an intermediate tool (the check rejects them and the stage
regenerates), and a third of its first reasoning attempts skip a call (the match fails and the
critic's hint leads to a second attempt).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from aworld_rl_core.tooluse import ToolCallParseError, parse_python_calls
from aworld_rl_funreason_mt.critiquing import CRITIC_SYSTEM
from aworld_rl_funreason_mt.discovery import LLM_EDGE_SYSTEM
from aworld_rl_funreason_mt.querying import QUERYING_SYSTEM
from aworld_rl_funreason_mt.replies import json_after
from aworld_rl_funreason_mt.round_env import REVIEW_MARK, SYSTEM_TEMPLATE
from aworld_rl_funreason_mt.tooling import TOOLING_SYSTEM

_CALL_LINE = re.compile(r"^\d+\. (.+?)(?:   \[(.*)\])?$", re.MULTILINE)
_FLOW = re.compile(r"\b(\w+_flow_([0-9a-f]{8}))\b")
_REASONER_MARK = SYSTEM_TEMPLATE.split("\n", 1)[0]
_AUTH = re.compile(r"Please (?:log|look it) (?:in|up) again with (\w+),")
_CALL_IN_MESSAGE = re.compile(r"<tool_call>\[(.*)\]</tool_call>", re.S)


def _failed(content: str) -> bool:
    """A tool message whose (first) result is a constructed error."""
    return any(
        mark in content
        for mark in ("Error during execution", "the session expired", "(the record may be stale)")
    )


def _earlier_call(messages: list[Any], tool: str) -> str:
    """The last call of ``tool`` an earlier assistant message made (its text), or ""."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        found = _CALL_IN_MESSAGE.search(str(message.get("content", "")))
        if not found:
            continue
        try:
            calls = parse_python_calls(f"[{found.group(1)}]")
        except ToolCallParseError:
            continue
        for call in reversed(calls):
            if call.name == tool:
                return call.to_python()
    return ""


def _system(body: Mapping[str, Any]) -> str:
    messages = body.get("messages") or []
    return str(messages[0].get("content", "")) if messages else ""


def _last_user(body: Mapping[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


class DemoOracle:
    """The reply function for :class:`~aworld_rl_core.llm.scripted_server.ScriptedLLMServer`.

    Thread-safe: it remembers each trace's calls (by a fingerprint it writes into the advanced
    tool's name) for the reasoning requests that follow.
    """

    def __init__(self) -> None:
        self._traces: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        system = _system(body)
        if system.startswith(_REASONER_MARK):
            return self.reason(body)
        if system == TOOLING_SYSTEM:
            return self.tool(_last_user(body))
        if system == QUERYING_SYSTEM:
            return self.query(_last_user(body))
        if system == CRITIC_SYSTEM:
            return self.critique(_last_user(body))
        if system == LLM_EDGE_SYSTEM:
            return json.dumps({"edges": []})
        return "I am the FunReason-MT pipeline demo oracle; I only answer its four agents."

    # -- tooling -----------------------------------------------------------------------------

    def tool(self, prompt: str) -> str:
        calls: list[str] = []
        inputs: dict[str, Any] = {}
        for match in _CALL_LINE.finditer(prompt.split("Executed calls:", 1)[-1]):
            call, origin = match.group(1).strip(), match.group(2) or ""
            calls.append(call)
            fed = {part.split(" from ")[0] for part in origin.split(", ") if part}
            for name, value in _arguments(call).items():
                if name not in fed and value not in inputs.values():
                    key = name if name not in inputs else f"{name}_{len(inputs)}"
                    inputs[key] = value
        fingerprint = hashlib.sha256("\n".join(calls).encode()).hexdigest()[:8]
        with self._lock:
            self._traces[fingerprint] = calls
        last = calls[-1].split("(", 1)[0] if calls else "task"
        properties = {k: {"type": _json_type(v)} for k, v in inputs.items()}
        description = _purpose(prompt, last)
        tool = {
            "name": f"{last}_flow_{fingerprint}",
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(inputs)},
            "arguments": inputs,
            "returns": f"the result of {last}",
        }
        return "```json\n" + json.dumps(tool) + "\n```"

    # -- querying ----------------------------------------------------------------------------

    def query(self, prompt: str) -> str:
        tool = json_after(prompt, "Tool:") or {}
        values = json_after(prompt, "Input values:") or {}
        name = str(tool.get("name", ""))
        fingerprint = name.rsplit("_", 1)[-1]
        with self._lock:
            calls = self._traces.get(fingerprint, [])
        first_try = "rejected" not in prompt
        if first_try and calls and len(calls) > 1 and int(fingerprint, 16) % 4 == 0:
            step = calls[0].split("(", 1)[0]
            return json.dumps({"query": f"Run {step}() first, then finish the job."})
        listed = ", ".join(_spoken(v) for v in values.values())
        purpose = str(tool.get("description", "")).rstrip(".")
        if first_try and purpose:
            text = f"I need this done: {purpose[0].lower() + purpose[1:]}."
        else:  # the description named a step: say only what is needed
            text = "Please take care of my request."
        if listed:
            text += f" Here are the details: {listed}."
        return json.dumps({"query": text.strip()})

    # -- reasoning ---------------------------------------------------------------------------

    def reason(self, body: Mapping[str, Any]) -> str:
        messages = list(body.get("messages") or [])
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        match = _FLOW.search(str(messages[last_user].get("content", "")))
        with self._lock:
            calls = list(self._traces.get(match.group(2), [])) if match else []
        if match is None or not calls:
            return (
                "<think>No plan for this request.</think><answer>I cannot help with that.</answer>"
            )
        calls = self.order(calls)
        hinted = REVIEW_MARK in str(messages[last_user].get("content", ""))
        if not hinted and len(calls) > 1 and int(match.group(2), 16) % 3 == 0:
            calls = calls[1:]  # the deliberate first-attempt mistake
        after = messages[last_user + 1 :]
        made = [m for m in after if m.get("role") == "assistant"]
        results = [m for m in after if m.get("role") == "tool"]
        last = str(results[-1].get("content", "")) if results else ""
        if results and _failed(last):
            retry = made[-1]["content"].split("<tool_call>", 1)[-1].split("</tool_call>", 1)[0]
            login = _AUTH.search(last)
            if login:  # the session expired: the earlier login call again, then the retry
                earlier = _earlier_call(messages, login.group(1))
                if earlier:
                    thought = "<think>I repeat the step the error names, then retry.</think>"
                    return f"{thought}<tool_call>[{earlier}, {retry.strip()[1:-1]}]</tool_call>"
            thought = "<think>The service failed; I retry the same call.</think>"
            return f"{thought}<tool_call>{retry}</tool_call>"
        done = sum(1 for m in made if "<tool_call>" in str(m.get("content", "")))
        done -= sum(1 for r in results if _failed(str(r.get("content", ""))))
        if done < len(calls):
            step = calls[done]
            return (
                f"<think>Step {done + 1} of {len(calls)}: {step.split('(', 1)[0]}.</think>"
                f"<tool_call>[{step}]</tool_call>"
            )
        final = str(results[-1].get("content", ""))[:300] if results else ""
        return (
            f"<think>All steps are done.</think><answer>Done. The last result was: {final}</answer>"
        )

    def order(self, calls: list[str]) -> list[str]:
        """The order the reasoning answers issue the trace's calls in (the trace's own)."""
        return calls

    # -- critiquing --------------------------------------------------------------------------

    def critique(self, prompt: str) -> str:
        made = re.findall(r"^- (\w+)\(", prompt.split("Calls that solve it:")[0], re.MULTILINE)
        wanted = re.findall(r"^- (\w+)\(", prompt.split("Calls that solve it:")[-1], re.MULTILINE)
        missing = [w for w in wanted if w not in made]
        step = missing[0] if missing else (wanted[0] if wanted else "first")
        return json.dumps({"hint": f"You skipped a step: the request needs the {step} tool first."})


def _arguments(call: str) -> dict[str, Any]:
    try:
        return parse_python_calls(call)[0].arguments
    except ToolCallParseError:  # a line the oracle cannot read gives no inputs
        return {}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def _spoken(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _purpose(prompt: str, tool: str) -> str:
    """The first sentence of the last tool's own description (after BFCL's class blurb)."""
    docs = json_after(prompt, "Tools used:", "[")
    for doc in docs if isinstance(docs, list) else []:
        if isinstance(doc, dict) and doc.get("name") == tool:
            text = str(doc.get("description", ""))
            text = text.split("Tool description:", 1)[-1]  # BFCL: class blurb, then the tool's
            sentence = text.strip().split(". ")[0].strip().rstrip(".")
            if sentence:
                return sentence + "."
    return f"complete the {tool.replace('_', ' ')} request."
