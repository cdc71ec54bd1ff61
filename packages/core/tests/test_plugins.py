import importlib.metadata as md

import pytest
from demo_plugin import DemoPlugin

from aworld_rl_core import hookimpl, registry
from aworld_rl_core.errors import PluginError


def test_core_registers_backends_and_recipes():
    reg = registry.build_registry()
    assert {"trl", "hf-sft", "verl", "llamafactory"} <= set(reg.entries["trainers"])
    assert "core.bfcl-check" in reg.entries["recipes"]
    assert reg.entries["recipes"]["core.bfcl-check"].plugin == "core"
    core = next(p for p in reg.plugins if p.name == "core")
    assert core.dist == "aworld-rl-core" and core.error is None


def test_duplicate_name_names_both_plugins():
    class Twin:
        @hookimpl
        def register_recipes(self, register):
            register("demo.count", config=object, run=print, presets="x:y")

    with pytest.raises(
        PluginError, match="'demo.count' is registered by both plugin '(demo|twin)'"
    ):
        registry.build_registry(extra=[("demo", DemoPlugin()), ("twin", Twin())])


def test_disable_plugins_env(monkeypatch):
    monkeypatch.setenv("AWORLD_RL_DISABLE_PLUGINS", "demo, core")
    reg = registry.build_registry(extra=[("demo", DemoPlugin())])
    assert "demo.count" not in reg.entries["recipes"]
    assert "trl" not in reg.entries["trainers"]


def test_unknown_name_suggests_closest(demo_registry):
    with pytest.raises(PluginError, match="unknown recipe 'demo.cout'; did you mean 'demo.count'"):
        registry.get_recipe("demo.cout")


def test_lazy_target_missing_module_is_reported(demo_registry):
    with pytest.raises(PluginError, match="needs the missing module 'tests_demo_reward'"):
        registry.get_reward("demo.length")


def test_accessors_resolve_lazy_targets(demo_registry):
    from demo_plugin import CountConfig

    entry = registry.get_recipe("demo.count")
    assert entry.config_cls() is CountConfig and entry.help == "count to steps"
    assert "demo.count" in registry.names("recipes")


def test_broken_entry_point_is_reported_not_hidden(monkeypatch):
    real = md.entry_points

    class BrokenEP:
        name = "broken"
        dist = None

        def load(self):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")

    def fake(**kw):
        return [*list(real(**kw)), BrokenEP()]

    monkeypatch.setattr(md, "entry_points", fake)
    reg = registry.build_registry()
    broken = next(p for p in reg.plugins if p.name == "broken")
    assert "ModuleNotFoundError" in broken.error and "torch" in broken.error
    assert reg.failures == [broken]


def test_resolve_plain_objects_and_dotted_attrs():
    assert registry.resolve(len) is len
    assert registry.resolve("os.path:join.__name__") == "join"
