"""Each hook works end to end, is documented in docs/hooks.md and has a test here."""

import inspect
import re
import sys
from pathlib import Path

from aworld_rl_core import hookimpl, hookspecs, registry

DOCS = Path(__file__).parents[3] / "docs" / "hooks.md"
HOOKS = [name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction)]


class Everything:
    @hookimpl
    def register_datasets(self, register):
        register("t.rows", lambda **kw: [{"n": kw.get("n", 1)}])

    @hookimpl
    def register_environments(self, register):
        register("t.env", "aworld_rl_core.environment:Step")

    @hookimpl
    def register_rewards(self, register):
        register("t.len", lambda completions, **_: [float(len(c)) for c in completions])

    @hookimpl
    def register_losses(self, register):
        register("t.loss", "operator:add", kind="token")

    @hookimpl
    def register_trainers(self, register):
        register("t.trainer", "operator:add")

    @hookimpl
    def register_recipes(self, register):
        register("t.recipe", config="demo_plugin:CountConfig", run="demo_plugin:run", presets="")

    @hookimpl
    def register_parsers(self, register):
        register("t.upper", "aworld_rl_core.tooluse.parsers:parse_hermes", help="hermes again")

    @hookimpl
    def register_tool_apis(self, register):
        register(
            "t.Counter",
            "collections:Counter",
            stateless=True,
            docs=[{"name": "update", "parameters": {}}],
        )


def _registry():
    return registry.build_registry(extra=[("t", Everything())], entry_points=False)


def test_hook_register_datasets():
    with registry.use_registry(_registry()):
        assert list(registry.get_dataset("t.rows")(n=3)) == [{"n": 3}]


def test_hook_register_environments():
    from aworld_rl_core.environment import Step

    with registry.use_registry(_registry()):
        assert registry.get_environment("t.env") is Step


def test_hook_register_rewards():
    with registry.use_registry(_registry()):
        assert registry.get_reward("t.len")(["ab", ""]) == [2.0, 0.0]


def test_hook_register_losses():
    with registry.use_registry(_registry()):
        entry = registry.get_loss("t.loss")
        assert entry.load()(2, 3) == 5 and entry.meta["kind"] == "token"


def test_hook_register_trainers():
    with registry.use_registry(_registry()):
        assert registry.get_trainer("t.trainer")(2, 3) == 5


def test_hook_register_recipes():
    with registry.use_registry(_registry()):
        entry = registry.get_recipe("t.recipe")
        assert entry.config_cls() is sys.modules["demo_plugin"].CountConfig


def test_hook_register_tool_apis():
    from collections import Counter

    from aworld_rl_core.tooluse.bfcl.apis import api_class, build_instances, registered_docs

    with registry.use_registry(_registry()):
        entry = registry.get_tool_api("t.Counter")
        assert entry.load() is Counter and entry.meta["stateless"] is True
        instances = build_instances(["t.Counter"], {}, long_context=False)
        assert instances == {"t.Counter": Counter()}
        assert api_class("t.Counter") is Counter
        assert registered_docs("t.Counter") == [{"name": "update", "parameters": {}}]


def test_hook_register_parsers():
    from aworld_rl_core.tooluse import Call, parse_response

    with registry.use_registry(_registry()):  # without core's plugin: only t's protocol
        assert registry.names("parsers") == ["t.upper"]
        parsed = parse_response('<tool_call>{"name": "f", "arguments": {}}</tool_call>', "t.upper")
        assert parsed.calls == [Call("f", {})] and parsed.protocol == "t.upper"


def test_hook_register_episode_parts():
    """A package's protocol part plugs into core's BFCL multi-turn environment by name; a part
    registered without a valid role is blocked with a message naming the roles."""
    import pytest

    from aworld_rl_core.tooluse.bfcl.turns import ParserProtocol

    class Shout(ParserProtocol):
        def render(self, env, calls, texts):
            return [{"role": "user", "content": " | ".join(texts).upper()}]

    class Plugin:
        @hookimpl
        def register_episode_parts(self, register):
            register("mine.shout", lambda entry: Shout("think_tool_python"), role="protocol")

    class Odd:
        @hookimpl
        def register_episode_parts(self, register):
            register("odd.part", "json:dumps", role="scorer")

    reg = registry.build_registry(extra=[("mine", Plugin()), ("odd", Odd())])
    with registry.use_registry(reg):
        assert registry.get_episode_part("mine.shout").meta["role"] == "protocol"
        env = registry.get_environment("core.bfcl-turns")(
            {"entry_id": "multi_turn_base_0"}, protocol="mine.shout"
        )
        env.reset()
        step = env.step("<think>a</think><tool_call>[pwd()]</tool_call>")
        assert step.observation == [
            {"role": "user", "content": '{"CURRENT_WORKING_DIRECTORY": "/WORKSPACE"}'}
        ]
        with pytest.raises(Exception, match="odd.part"):
            registry.get_episode_part("odd.part")
    (odd,) = reg.failures
    assert odd.name == "odd" and "role='scorer'" in str(odd), odd


def test_hook_register_smoke_parts():
    import json

    from aworld_rl_core import smoke

    class Plugin:
        @hookimpl
        def register_smoke_parts(self, register):
            register("mine.part", "json:dumps", help="a test part")

    with registry.use_registry(registry.build_registry(extra=[("mine", Plugin())])):
        assert registry.get_smoke_part("mine.part") is json.dumps
        parts = smoke.default_parts()
        assert parts[:2] == ["trl-grpo", "hf-sft"] and "mine.part" in parts


def test_every_hook_is_documented_and_tested():
    documented = set(re.findall(r"^## (register_\w+)", DOCS.read_text(), flags=re.M))
    tested = {n.removeprefix("test_hook_") for n in globals() if n.startswith("test_hook_")}
    assert HOOKS, "no hookspecs found"
    assert set(HOOKS) <= documented, f"hooks without docs: {set(HOOKS) - documented}"
    assert set(HOOKS) <= tested, f"hooks without a test: {set(HOOKS) - tested}"


def test_the_walkthrough_shows_the_template_verbatim():
    """If this fails: docs/hooks.md's walkthrough drifted from packages/_template; paste the
    template's file into its block (the docs walk through exactly that package)."""
    text = DOCS.read_text()
    template = DOCS.parents[1] / "packages" / "_template"
    shown = re.findall(r"`packages/_template/([^`]+)`: [^\n]*\n\n```\w+\n(.*?)\n```", text, re.S)
    assert len(shown) >= 8
    for rel, block in shown:
        assert block == (template / rel).read_text().rstrip(), rel
