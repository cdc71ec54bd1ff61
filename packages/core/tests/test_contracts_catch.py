"""The contracts load what is registered: a deliberately broken registration fails them."""

from __future__ import annotations

import pytest

from aworld_rl_core import registry
from aworld_rl_core.hookspecs import hookimpl
from aworld_rl_core.testing.contracts import (
    EnvironmentContract,
    PluginContract,
)


class Ticker:
    """A package's plugin.py, with one typo in each kind of target."""

    @hookimpl
    def register_environments(self, register):
        register("ticker.say", "aworld_rl_core.envs.toy:LowercaseEnvTYPO")
        register("ticker.ok", "aworld_rl_core.envs.toy:LowercaseEnv")

    @hookimpl
    def register_rewards(self, register):
        register("ticker.len", "aworld_rl_core.envs.toyy:lowercase_reward")
        register("ticker.data", "aworld_rl_core.envs.toy:TOPICS")  # not callable

    @hookimpl
    def register_trainers(self, register):
        register("ticker-ppo", "aworld_rl_core.envs.toy:LowercaseEnv", config="json:loads")

    @hookimpl
    def register_recipes(self, register):
        register(
            "ticker.train",
            config="aworld_rl_core.recipes.grpo:GrpoRecipeConfig",
            run="aworld_rl_core.recipes.grpo:runn",
            presets="aworld_rl_core:configs/nothing-here",
        )

    @hookimpl
    def register_parsers(self, register):
        register("ticker.lines", "ticker_extra:parse")  # needs a library not installed here


@pytest.fixture(autouse=True)
def ticker_extra(tmp_path, monkeypatch):
    """A module of the package that imports a third-party library this machine lacks."""
    (tmp_path / "ticker_extra.py").write_text("import not_installed_lib\n\ndef parse(text): ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def _ticker_registry() -> registry.Registry:
    return registry.build_registry(extra=[("ticker", Ticker())], entry_points=False)


def test_every_broken_target_is_named():
    problems, skipped = registry.check_targets(_ticker_registry(), "ticker")
    text = "\n".join(problems)
    assert len(problems) == 6, text
    assert "environment 'ticker.say' target 'aworld_rl_core.envs.toy:LowercaseEnvTYPO'" in text
    assert "AttributeError" in text and "LowercaseEnvTYPO" in text
    assert "reward 'ticker.len' target 'aworld_rl_core.envs.toyy:lowercase_reward'" in text
    assert "reward 'ticker.data' 'aworld_rl_core.envs.toy:TOPICS' is a tuple, not callable" in text
    assert "trainer 'ticker-ppo' config 'json:loads' is not a dataclass" in text
    assert "recipe 'ticker.train' target 'aworld_rl_core.recipes.grpo:runn'" in text
    assert "recipe 'ticker.train': no YAML presets at 'aworld_rl_core:configs/nothing-here'" in text
    assert "ticker.ok" not in text
    assert len(skipped) == 1 and "parser 'ticker.lines'" in skipped[0]  # not installed here


class TickerPluginContract(PluginContract):  # not collected: no Test prefix
    plugin = "ticker"

    def build_registry(self):
        return _ticker_registry()


def test_the_plugin_contract_fails_on_a_typo():
    """What `aworld-run plugins` lists as healthy, the contract refuses."""
    reg = _ticker_registry()
    assert next(p for p in reg.plugins if p.name == "ticker").error is None
    with (
        pytest.warns(UserWarning, match="not checked here: parser 'ticker.lines'"),
        pytest.raises(AssertionError, match="LowercaseEnvTYPO"),
    ):
        TickerPluginContract().test_every_registered_target_resolves()


class TickerEnvContract(EnvironmentContract):
    environment = "ticker.say"
    row = {"topic": "rain"}


def test_the_environment_contract_builds_through_the_registry():
    with registry.use_registry(_ticker_registry()):
        with pytest.raises(AttributeError, match="LowercaseEnvTYPO"):
            TickerEnvContract().test_reset_returns_messages()

        class Fine(EnvironmentContract):
            environment = "ticker.ok"
            row = {"topic": "rain"}

        Fine().test_built_through_the_registry()
        Fine().test_hostile_text_never_raises()

        class Bypass(EnvironmentContract):
            environment = "ticker.say"

            def make_env(self):
                from aworld_rl_core.envs.toy import LowercaseEnv

                return LowercaseEnv({"topic": "rain"})

        with pytest.raises(AssertionError, match="do not override make_env"):
            Bypass().test_built_through_the_registry()


def test_aworld_run_plugins_check_names_the_typo(capsys):
    from aworld_rl_core import cli

    with registry.use_registry(_ticker_registry()):
        cli.main(["plugins"])  # 1: ticker-ppo's config section is no dataclass
        assert "LowercaseEnvTYPO" not in capsys.readouterr().out  # the listing imports no target
        assert cli.main(["plugins", "--check"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "ticker: environment 'ticker.say' target 'aworld_rl_core.envs.toy:LowercaseEnvTYPO'" in out
    )
    assert "not checked: parser 'ticker.lines'" in out
