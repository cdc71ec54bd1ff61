from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from demo_plugin import CountConfig, Optim

from aworld_rl_core.backends.config import TrainerConfig
from aworld_rl_core.config import describe, from_dict, load_config, to_dict, to_yaml
from aworld_rl_core.errors import ConfigError

PRESETS = str(Path(__file__).parent / "support" / "demo_presets")


@dataclass(frozen=True, kw_only=True)
class Job:
    trainer: TrainerConfig = field(default_factory=TrainerConfig)


def test_preset_by_name_then_overrides_with_type_conversion():
    cfg = load_config(
        CountConfig,
        preset="tiny-cpu",
        presets=PRESETS,
        overrides=["optim.lr=1e-6", "steps=7", "tags=[a, b]", "limit=null"],
    )
    assert cfg == CountConfig(
        steps=7, name="tiny", tags=("a", "b"), limit=None, optim=Optim(lr=1e-6)
    )
    assert isinstance(cfg.optim.lr, float)


def test_preset_by_path_and_config_file_merge(tmp_path):
    extra = tmp_path / "extra.yaml"
    extra.write_text("optim:\n  schedule: constant\n")
    cfg = load_config(CountConfig, preset=f"{PRESETS}/paper.yaml", config_file=extra)
    assert (cfg.steps, cfg.optim.lr, cfg.optim.schedule) == (100, 1e-6, "constant")


def test_unknown_key_names_key_and_closest():
    with pytest.raises(
        ConfigError, match=r"unknown config key 'optim\.lrr'; did you mean 'optim\.lr'"
    ):
        load_config(CountConfig, overrides=["optim.lrr=3"])


def test_wrong_type_names_key_type_and_value():
    with pytest.raises(ConfigError, match=r"steps: expected int, got 'many'"):
        load_config(CountConfig, overrides=["steps=many"])
    with pytest.raises(ConfigError, match=r"optim\.schedule: expected one of 'cosine', 'constant'"):
        load_config(CountConfig, overrides=["optim.schedule=linear"])
    with pytest.raises(ConfigError, match=r"trainer\.rl\.group_size: expected int, got 1\.5"):
        from_dict(Job, {"trainer": {"rl": {"group_size": 1.5}}})


def test_bool_is_not_an_int_and_int_widens_to_float():
    with pytest.raises(ConfigError, match="expected int, got True"):
        load_config(CountConfig, overrides=["steps=true"])
    assert load_config(CountConfig, overrides=["optim.lr=1"]).optim.lr == 1.0


def test_unknown_preset_and_missing_or_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="unknown preset 'tiny'.*did you mean 'tiny-cpu'"):
        load_config(CountConfig, preset="tiny", presets=PRESETS)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(CountConfig, config_file=tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(CountConfig, config_file=bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(CountConfig, config_file=listy)
    with pytest.raises(ConfigError, match="is not key=value"):
        load_config(CountConfig, overrides=["steps"])


def test_yaml_round_trip_and_describe():
    cfg = CountConfig(tags=("x",), optim=Optim(lr=0.5))
    assert to_dict(cfg)["tags"] == ["x"]
    assert from_dict(CountConfig, yaml.safe_load(to_yaml(cfg))) == cfg
    docs = {d.key: d for d in describe(CountConfig)}
    assert docs["optim.lr"].type == "float" and docs["optim.lr"].default == 1e-6
    assert docs["limit"].type == "int | None" and docs["limit"].help == "optional cap"


def test_describe_shows_the_parents_nested_defaults():
    @dataclass(frozen=True, kw_only=True)
    class Paper:
        trainer: TrainerConfig = field(
            default_factory=lambda: TrainerConfig(learning_rate=4e-5), metadata={"help": "t"}
        )

    docs = {d.key: d.default for d in describe(Paper)}
    assert docs["trainer.learning_rate"] == 4e-5 and docs["trainer.rl.group_size"] == 8


def test_trainer_config_fields_all_documented():
    assert all(doc.help for doc in describe(TrainerConfig))
