import importlib.metadata as md
import os
import subprocess
import sys

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


def test_a_name_in_another_plugins_namespace_is_refused_and_the_first_party_kept():
    class Foreign:
        @hookimpl
        def register_recipes(self, register):
            register("foreign.other", config=object, run=print, presets="x:y")
            register("demo.count", config=object, run=print, presets="x:y")

    reg = registry.build_registry(extra=[("demo", DemoPlugin()), ("foreign", Foreign())])
    assert reg.conflicts == {}
    foreign = next(p for p in reg.plugins if p.name == "foreign")
    assert foreign.error == (
        "register_recipes raised PluginError: plugin 'foreign' registered recipe 'demo.count' "
        "outside its namespace: plugin 'foreign' registers names 'foreign.<name>' ('demo.*' "
        "belongs to plugin 'demo')"
    )
    assert reg.entries["recipes"]["demo.count"].plugin == "demo"  # the first party keeps it
    assert "foreign.other" not in reg.entries["recipes"]  # a refused plugin registers nothing


def test_an_undotted_name_is_only_for_backends():
    class Bare:
        @hookimpl
        def register_rewards(self, register):
            register("exact", len)

    reg = registry.build_registry(extra=[("bare", Bare())], entry_points=False)
    (bare,) = reg.failures
    assert "reward 'exact' outside its namespace: plugin 'bare' registers names 'bare.<name>'" in (
        bare.error
    )


def test_duplicate_backend_name_blocks_only_that_name():
    class Twin:
        @hookimpl
        def register_trainers(self, register):
            register("trl", print)

        @hookimpl
        def register_recipes(self, register):
            register("twin.other", config=object, run=print, presets="x:y")

    reg = registry.build_registry(extra=[("demo", DemoPlugin()), ("twin", Twin())])
    assert reg.conflicts == {("trainers", "trl"): ["core", "twin"]}
    assert not reg.failures
    with registry.use_registry(reg):
        with pytest.raises(
            PluginError,
            match="trainer 'trl' is registered by plugin 'core' and plugin 'twin', so it "
            "is blocked; uninstall one, or block one with AWORLD_RL_DISABLE_PLUGINS=twin",
        ):
            registry.get_trainer("trl")
        assert registry.get_recipe("twin.other").plugin == "twin"
        assert "demo.length" in registry.names("rewards")  # demo's other names still work
        assert "core.grpo" in registry.names("recipes")


class ExitsInHook:
    @hookimpl
    def register_rewards(self, register):
        raise SystemExit(3)


class InterruptsInHook:
    @hookimpl
    def register_recipes(self, register):
        raise KeyboardInterrupt


def _interrupting_import():
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("plugin", "error"),
    [
        (ExitsInHook(), "register_rewards raised SystemExit: 3"),
        (InterruptsInHook(), "register_recipes raised KeyboardInterrupt"),
    ],
)
def test_system_exit_and_keyboard_interrupt_from_a_hook_are_contained(plugin, error):
    reg = registry.build_registry(extra=[("demo", DemoPlugin()), ("bad", plugin)])
    assert [(p.name, p.error) for p in reg.failures] == [("bad", error)]
    assert {"demo.count", "core.grpo"} <= set(reg.entries["recipes"])


def test_a_real_ctrl_c_while_plugins_load_still_stops(monkeypatch):
    import signal

    class PressesCtrlC:
        @hookimpl
        def register_rewards(self, register):
            signal.raise_signal(signal.SIGINT)

    # a process started in the background (CI) inherits SIGINT ignored: give it Python's handler
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            registry.build_registry(extra=[("ctrl", PressesCtrlC())], entry_points=False)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


class Raises:
    @hookimpl
    def register_rewards(self, register):
        register("bad.fine", len)

    @hookimpl
    def register_recipes(self, register):
        raise RuntimeError("boom")


class Misspelt:
    @hookimpl
    def register_reward(self, register):  # no such hook: register_rewards
        register("misspelt.r", len)


class BadTarget:
    @hookimpl
    def register_rewards(self, register):
        register("bad.r", 42)


class SpecName:
    @hookimpl(specname="register_rewards")
    def rewards(self, register):
        register("spec.r", len, help="through pluggy's specname")


@pytest.mark.parametrize(
    ("plugin", "error"),
    [
        (Raises(), "register_recipes raised RuntimeError: boom"),
        (Misspelt(), "unknown hook 'register_reward'"),
        (BadTarget(), "registered reward 'bad.r' with a int target: give a callable"),
    ],
)
def test_a_failing_plugin_fails_alone(plugin, error):
    reg = registry.build_registry(extra=[("demo", DemoPlugin()), ("bad", plugin)])
    bad = next(p for p in reg.plugins if p.name == "bad")
    assert error in bad.error
    assert reg.failures == [bad]
    mine = [e for kind in reg.entries.values() for e in kind.values() if e.plugin == "bad"]
    assert mine == []  # a failed plugin registers nothing, not half of its names
    assert {"demo.count", "core.grpo"} <= set(reg.entries["recipes"])


def test_hooks_go_through_pluggy():
    reg = registry.build_registry(extra=[("spec", SpecName())], entry_points=False)
    assert reg.entries["rewards"]["spec.r"].help == "through pluggy's specname"


def test_unknown_name_mentions_plugins_that_failed():
    reg = registry.build_registry(extra=[("bad", Raises())])
    with registry.use_registry(reg), pytest.raises(PluginError, match="failed to load: bad"):
        registry.get_recipe("bad.recipe")


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


def _fake_dist(site, dist, version, entry_points, module, code):
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[aworld_rl]\n" + entry_points + "\n")
    (site / f"{module}.py").write_text(code)


HOOK = "from aworld_rl_core import hookimpl\n\n@hookimpl\ndef register_recipes(register):\n"


def test_installed_plugins_that_exit_or_interrupt_are_listed_and_the_cli_works(tmp_path):
    site = tmp_path / "site"
    _fake_dist(
        site,
        "exiting-plugin",
        "2.0",
        "exiting = exiting_plugin",
        "exiting_plugin",
        HOOK + "    raise SystemExit(3)\n",
    )
    _fake_dist(
        site,
        "interrupting-plugin",
        "1.5",
        "interrupting = interrupting_plugin",
        "interrupting_plugin",
        "raise KeyboardInterrupt\n",
    )
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "250"}

    def aworld_run(*args):
        return subprocess.run(
            [sys.executable, "-m", "aworld_rl_core.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    listed = aworld_run("plugins")
    assert listed.returncode == 1, listed.stderr  # 1: some plugin failed (main: 3, no output)
    lines = listed.stdout.splitlines()
    exiting = next(line for line in lines if "exiting-plugin" in line)
    assert "2.0" in exiting and "register_recipes raised SystemExit: 3" in exiting
    interrupting = next(line for line in lines if "interrupting-plugin" in line)
    assert "1.5" in interrupting and "KeyboardInterrupt" in interrupting
    assert "core.bfcl-check" in listed.stdout
    helped = aworld_run("core.grpo", "--help")
    assert helped.returncode == 0 and "trainer.rl.group_size" in helped.stdout


def test_installed_plugins_that_collide_or_raise_fail_alone(tmp_path):
    site = tmp_path / "site"
    _fake_dist(
        site, "evil-core", "9.0", "core = evil_core", "evil_core", HOOK + "    raise SystemExit\n"
    )
    _fake_dist(
        site,
        "raising-plugin",
        "1.0",
        "raising = raising_plugin",
        "raising_plugin",
        HOOK + "    raise ValueError('cannot register')\n",
    )
    env = {**os.environ, "PYTHONPATH": str(site)}

    def aworld_run(*args):
        return subprocess.run(
            [sys.executable, "-m", "aworld_rl_core.cli", *args],
            capture_output=True,
            text=True,
            env={**env, "COLUMNS": "250"},
            timeout=120,
        )

    listed = aworld_run("plugins")
    assert listed.returncode == 1, listed.stderr
    lines = listed.stdout.splitlines()
    evil = next(line for line in lines if "evil-core" in line)
    assert "9.0" in evil and "entry-point name 'core' is already taken by aworld-rl-core" in evil
    raising = next(line for line in lines if "raising-plugin" in line)
    assert "register_recipes raised ValueError: cannot register" in raising
    core = next(line for line in lines if "aworld-rl-core" in line)
    assert "failed" not in core and "core.bfcl-check" in listed.stdout
    helped = aworld_run("core.grpo", "--help")
    assert helped.returncode == 0 and "trainer.rl.group_size" in helped.stdout
    shown = aworld_run("show-config", "core.bfcl-check")
    assert shown.returncode == 0, shown.stderr


def test_an_extra_plugin_stands_in_for_the_installed_one_of_its_name():
    class FakeCore:
        @hookimpl
        def register_rewards(self, register):
            register("core.fake", len)

    reg = registry.build_registry(extra=[("core", FakeCore())])
    assert "core.fake" in reg.entries["rewards"] and "core.grpo" not in reg.entries["recipes"]
    assert [p.name for p in reg.plugins].count("core") == 1 and not reg.failures
