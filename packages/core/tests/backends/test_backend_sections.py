"""Backend-owned config sections: each backend registers its own ``trainer.<name>`` section."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pytest
import yaml

from aworld_rl_core import cli, registry
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.config import from_dict, load_config, option, to_dict, to_yaml, without_keys
from aworld_rl_core.errors import ConfigError, PluginError
from aworld_rl_core.hookspecs import hookimpl
from aworld_rl_core.recipes.grpo import GrpoRecipeConfig
from aworld_rl_core.runs import RunResult, config_diff
from aworld_rl_core.trainer_config import TrainerConfig, backend_sections, section, with_section


@dataclass(frozen=True, kw_only=True)
class EchoConfig:
    """A test-only backend's own settings."""

    greeting: str = option("hello", help="what the echo backend says")
    repeats: int = option(2, help="how often it says it", ge=1)


class EchoBackend:
    """Trains nothing: writes the section it receives into the run directory."""

    name = "echo-sft"

    def train(self, job):
        echo = section(job.trainer, EchoConfig)
        seen = {"greeting": echo.greeting, "repeats": echo.repeats}
        (job.run.dir / "seen.json").write_text(json.dumps(seen))
        return RunResult(metrics={"repeats": float(echo.repeats)})


class EchoPlugin:
    @hookimpl
    def register_trainers(self, register):
        register("echo-sft", EchoBackend, config=EchoConfig, help="test-only backend")


@pytest.fixture
def echo_registry():
    with registry.use_registry(registry.build_registry(extra=[("echo", EchoPlugin())])) as reg:
        yield reg


def test_trainer_config_keeps_no_backend_fields():
    names = {f.name for f in dataclasses.fields(TrainerConfig)}
    assert not names & {"verl", "llamafactory", "critic", "dry_run", "template"}
    from aworld_rl_core.backends.hf_sft_launch import HfSftConfig

    assert list(TrainerConfig().sections) == ["hf-sft", "verl", "llamafactory"]
    assert section(TrainerConfig(), VerlConfig) == VerlConfig()
    assert backend_sections().classes == {
        "hf-sft": HfSftConfig,
        "verl": VerlConfig,
        "llamafactory": LlamaFactoryConfig,
    }


def test_core_sections_keep_their_keys_types_and_bounds():
    cfg = load_config(TrainerConfig, overrides=["verl.critic.model_path=/m", "verl.nnodes=2"])
    verl = section(cfg, VerlConfig)
    assert (verl.critic.model_path, verl.nnodes) == ("/m", 2)
    assert section(cfg, LlamaFactoryConfig) == LlamaFactoryConfig()
    with pytest.raises(ConfigError, match=r"^verl\.nnodes: expected int, got 'two'"):
        load_config(TrainerConfig, overrides=["verl.nnodes=two"])
    with pytest.raises(ConfigError, match=r"verl\.critic\.learning_rate: must be > 0"):
        load_config(TrainerConfig, overrides=["verl.critic.learning_rate=0"])
    with pytest.raises(ConfigError, match=r"did you mean 'llamafactory\.template'"):
        load_config(TrainerConfig, overrides=["llamafactory.templat=qwen"])


def test_a_section_is_set_and_replaced_by_its_type():
    trainer = TrainerConfig(sections={"verl": VerlConfig(dry_run=True)})
    assert section(trainer, VerlConfig).dry_run  # the other sections get their defaults
    assert section(trainer, LlamaFactoryConfig) == LlamaFactoryConfig()
    lf = LlamaFactoryConfig(template="llama3")
    assert section(with_section(trainer, lf), LlamaFactoryConfig) == lf
    with pytest.raises(ConfigError, match=r"trainer\.verl must be a VerlConfig"):
        TrainerConfig(sections={"verl": lf})
    with pytest.raises(ConfigError, match=r"trainer\.nosuch: no such backend section"):
        TrainerConfig(sections={"nosuch": lf})
    with pytest.raises(ConfigError, match="no trainer section holds EchoConfig"):
        section(trainer, EchoConfig)


def test_a_narrowed_trainer_keeps_the_sections():
    Narrow = without_keys(TrainerConfig, {"batch_size": "set per stage"}, name="NarrowTrainer")
    narrow = from_dict(Narrow, {"verl": {"dry_run": True}})
    assert section(narrow, VerlConfig).dry_run
    assert section(with_section(narrow, VerlConfig()), VerlConfig) == VerlConfig()


def test_a_third_backend_owns_its_section(echo_registry, tmp_path, capsys):
    overrides = ["trainer.echo-sft.repeats=5", "trainer.echo-sft.greeting=hi"]
    cfg = load_config(GrpoRecipeConfig, overrides=overrides)
    assert section(cfg.trainer, EchoConfig) == EchoConfig(greeting="hi", repeats=5)
    assert list(cfg.trainer.sections) == ["hf-sft", "verl", "llamafactory", "echo-sft"]

    with pytest.raises(ConfigError, match=r"trainer\.echo-sft\.repeats: expected int"):
        load_config(GrpoRecipeConfig, overrides=["trainer.echo-sft.repeats=many"])
    with pytest.raises(ConfigError, match=r"trainer\.echo-sft\.repeats: must be >= 1, got 0"):
        load_config(GrpoRecipeConfig, overrides=["trainer.echo-sft.repeats=0"])
    with pytest.raises(ConfigError, match=r"unknown config key 'trainer\.echo-sft\.nope'"):
        load_config(GrpoRecipeConfig, overrides=["trainer.echo-sft.nope=1"])
    sections = "trainer.hf-sft, trainer.verl, trainer.llamafactory, trainer.echo-sft"
    with pytest.raises(ConfigError, match=f"registered backend sections: {sections}$"):
        load_config(GrpoRecipeConfig, overrides=["trainer.nosuch.x=1"])

    saved = to_dict(cfg)
    assert saved["trainer"]["echo-sft"] == {"greeting": "hi", "repeats": 5}
    assert from_dict(GrpoRecipeConfig, yaml.safe_load(to_yaml(cfg))) == cfg
    changed = load_config(GrpoRecipeConfig, overrides=[*overrides, "trainer.echo-sft.repeats=6"])
    assert config_diff(cfg, changed) == [("trainer.echo-sft.repeats", 5, 6)]

    assert cli.main(["core.grpo", "--help"]) == 0
    assert "trainer.echo-sft.repeats (int, >= 1, default 2)" in capsys.readouterr().out
    assert cli.main(["plugins"]) == 0
    assert "trainer.echo-sft" in capsys.readouterr().out

    out = tmp_path / "run"
    args = ["core.grpo", "trainer.backend=echo-sft", *overrides, "--output-dir", str(out)]
    assert cli.main([*args, "--quiet"]) == 0
    assert json.loads((out / "seen.json").read_text()) == {"greeting": "hi", "repeats": 5}
    assert yaml.safe_load((out / "config.yaml").read_text())["trainer"]["echo-sft"]["repeats"] == 5
    capsys.readouterr()
    resume = ["core.grpo", "--output-dir", str(out), "--resume", "trainer.echo-sft.repeats=7"]
    assert cli.main(resume) != 0
    assert "trainer.echo-sft.repeats: 5 (run) -> 7 (this command)" in capsys.readouterr().err


class TwinA:
    @hookimpl
    def register_trainers(self, register):
        register("twin", EchoBackend, config=EchoConfig, help="one twin")


class TwinB:
    @hookimpl
    def register_trainers(self, register):
        register("twin", EchoBackend, config=VerlConfig, help="the other twin")


def test_two_backends_with_the_same_section_name_are_an_error():
    reg = registry.build_registry(extra=[("twin-a", TwinA()), ("twin-b", TwinB())])
    with registry.use_registry(reg):
        with pytest.raises(ConfigError, match=r"^twin: trainer 'twin' is registered by "):
            load_config(TrainerConfig, overrides=["twin.repeats=3"])
        with pytest.raises(PluginError, match="plugin 'twin-a' and plugin 'twin-b'"):
            registry.get_trainer("twin")
        assert (
            section(load_config(TrainerConfig, overrides=["verl.nnodes=3"]), VerlConfig).nnodes == 3
        )


class Misnamed:
    @hookimpl
    def register_trainers(self, register):
        register("rl", EchoBackend, config=EchoConfig)


class Dotted:
    @hookimpl
    def register_trainers(self, register):
        register("mypkg.echo", EchoBackend, config=EchoConfig)


def test_a_section_needs_a_name_of_its_own(capsys):
    reg = registry.build_registry(extra=[("misnamed", Misnamed()), ("dotted", Dotted())])
    with registry.use_registry(reg):
        assert "rl" not in backend_sections().classes
        assert "TrainerConfig field" in backend_sections().unavailable["rl"]
        assert load_config(TrainerConfig, overrides=["rl.group_size=3"]).rl.group_size == 3
        assert cli.main(["plugins"]) == 1
        assert "config section trainer.rl" in " ".join(capsys.readouterr().out.split())
    (dotted,) = [p for p in reg.plugins if p.name == "dotted"]
    assert dotted.error is not None and "a key holds no '.'" in dotted.error
