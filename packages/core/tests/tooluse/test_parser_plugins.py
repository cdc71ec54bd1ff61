"""Parsers are plugins: a package adds a tool-call protocol through ``register_parsers``, without
touching core, and core's own protocols are registered the same way."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core import registry
from aworld_rl_core.errors import PluginError
from aworld_rl_core.hookspecs import hookimpl
from aworld_rl_core.tooluse import Call, ParsedResponse, get_parser, parse_response, protocol_names


def parse_lines(text: str, *, prefix: str = "CALL ") -> ParsedResponse:
    """A toy protocol: one call per line, ``CALL name {json arguments}``; other text is the
    answer."""
    calls, answer, errors = [], [], []
    for line in text.splitlines():
        if line.startswith(prefix):
            name, _, args = line[len(prefix) :].partition(" ")
            calls.append(Call(name, json.loads(args or "{}")))  # a JSON error is caught by core
        elif line.strip():
            answer.append(line)
    return ParsedResponse(None, calls, "\n".join(answer) or None, errors, text)


class LinesPlugin:
    """What a paper package's plugin.py holds (here an object; a package names a lazy target)."""

    @hookimpl
    def register_parsers(self, register):
        register("lines.call-lines", parse_lines, help="one CALL line per tool call")
        register("broken", lambda text: {"calls": []}, help="returns a dict, not a ParsedResponse")


@pytest.fixture
def lines_registry():
    with registry.use_registry(registry.build_registry(extra=[("lines", LinesPlugin())])) as reg:
        yield reg


def test_core_protocols_are_registered_like_any_plugin():
    reg = registry.current()
    core = {n for n, e in reg.entries["parsers"].items() if e.plugin == "core"}
    assert core == {"hermes", "think_json", "think_python", "think_tool_python"}
    assert reg.get("parsers", "hermes").target == "aworld_rl_core.tooluse.parsers:parse_hermes"


def test_a_package_adds_a_protocol_without_touching_core(lines_registry):
    assert "lines.call-lines" in protocol_names() and "hermes" in protocol_names()
    parsed = parse_response('CALL send {"to": "bo"}\nSent.', "lines.call-lines")
    assert parsed.ok and parsed.protocol == "lines.call-lines"
    assert parsed.calls == [Call("send", {"to": "bo"})] and parsed.answer == "Sent."
    assert get_parser("lines.call-lines", prefix=">> ")(">> ping {}").calls == [Call("ping", {})]
    with pytest.raises(ValueError, match="has no option 'tag'"):
        get_parser("lines.call-lines", tag="x")


def test_a_plugin_parser_never_raises_on_model_text(lines_registry):
    """Bad JSON raises inside the plugin's parser; core turns it into a format error."""
    parsed = parse_response("CALL send {not json", "lines.call-lines")
    assert not parsed.ok and parsed.calls == []
    assert parsed.errors[0].startswith("unparseable response (JSONDecodeError")
    assert parse_response(None, "lines.call-lines").errors == ["response is a NoneType, not str"]  # type: ignore[arg-type]


def test_a_parser_returning_the_wrong_type_is_the_plugins_bug(lines_registry):
    with pytest.raises(PluginError, match="parser 'broken' returned a dict"):
        parse_response("anything", "broken")


def test_unknown_and_conflicting_protocols_are_named(lines_registry):
    with pytest.raises(ValueError, match="unknown parser 'lines.call-line'; did you mean"):
        get_parser("lines.call-line")

    class Squatter:
        @hookimpl
        def register_parsers(self, register):
            register("hermes", parse_lines)

    with registry.use_registry(registry.build_registry(extra=[("squat", Squatter())])):
        with pytest.raises(ValueError, match="parser 'hermes' is registered by plugin 'core' and"):
            get_parser("hermes")
        assert "think_json" in protocol_names()  # every other name keeps working


def test_core_bfcl_environment_speaks_a_plugin_protocol(lines_registry):
    """The registered name is all an environment needs: core's BFCL environment plays a
    micro-world entry in the plugin's protocol."""
    from aworld_rl_core.tooluse import microworld as mw
    from aworld_rl_core.tooluse.bfcl.environment import env_from_row
    from aworld_rl_core.tooluse.calls import parse_python_calls

    row = next(r for r in mw.world.rows("held_out") if r["entry_id"].startswith("micro_pay_"))
    env = env_from_row(json.loads(json.dumps(row)), reward="progress", protocol="lines.call-lines")
    env.reset()
    (call,) = parse_python_calls(row["bfcl_entry"]["ground_truth"][0][0])
    step = env.step(f"CALL {call.name} {json.dumps(call.arguments)}")
    assert not step.done and "source" in step.observation[0]["content"]
    step = env.step("Done.")
    assert step.done and step.reward == 1.0
    env.close()
