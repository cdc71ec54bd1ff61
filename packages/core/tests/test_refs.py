"""``refs``: registered names + JSON options, the one wiring of environments, rewards, losses."""

from __future__ import annotations

import functools

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.envs.toy import LowercaseEnv
from aworld_rl_core.errors import ConfigError, PluginError
from aworld_rl_core.refs import Ref, RefConfig, callable_of


def test_a_named_environment_with_options_builds_from_the_row():
    ref = Ref.named("core.toy-lowercase", {"turns": 3})
    env = ref.load("environments")({"topic": "rain"})
    assert isinstance(env, LowercaseEnv) and env.turns == 3 and env.topic == "rain"
    assert Ref.from_json(ref.to_json()) == ref
    assert ref.to_json() == {"target": "core.toy-lowercase", "args": [], "kwargs": {"turns": 3}}


def test_paths_partials_and_errors():
    partial = functools.partial(LowercaseEnv, turns=4)
    assert Ref.of(partial, "env") == Ref("aworld_rl_core.envs.toy:LowercaseEnv", (), {"turns": 4})
    assert callable_of(partial, "environments") is partial
    with pytest.raises(ConfigError, match="registered name or importable"):
        Ref.of(lambda row: None, "environment")
    with pytest.raises(ConfigError, match="cannot travel to another process"):
        Ref.named("core.toy-lowercase", {"when": object()})
    with pytest.raises(PluginError, match="pip install aworld-rl-not-installed"):
        Ref("not_installed.search").load("environments")
    with pytest.raises(ValueError, match="unknown registry kind"):
        Ref("x").load("widgets")


def test_ref_config_is_a_recipe_section():
    cfg = load_config(RefConfig, overrides=["name=core.toy-lowercase", "options.turns=3"])
    assert cfg.ref() == Ref.named("core.toy-lowercase", {"turns": 3})
    assert RefConfig().ref() is None
