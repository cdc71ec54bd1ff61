import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from demo_plugin import CountConfig, Optim

from aworld_rl_core.config import (
    apply_overrides,
    describe,
    from_dict,
    load_config,
    option,
    to_dict,
    to_yaml,
)
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

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


@dataclass(frozen=True, kw_only=True)
class PaperJob:
    trainer: TrainerConfig = field(
        default_factory=lambda: TrainerConfig(batch_size=32, rl=RLConfig(group_size=16)),
        metadata={"help": "the paper's trainer"},
    )


def test_override_keeps_the_parents_nested_values():
    cfg = load_config(PaperJob, overrides=["trainer.seed=1"])
    assert (cfg.trainer.seed, cfg.trainer.batch_size, cfg.trainer.rl.group_size) == (1, 32, 16)
    cfg = load_config(PaperJob, overrides=["trainer.rl.kl_coef=0.5"])
    assert (cfg.trainer.rl.kl_coef, cfg.trainer.rl.group_size) == (0.5, 16)


def test_preset_values_survive_an_override_of_a_sibling(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("trainer:\n  rl:\n    max_turns: 3\n")
    cfg = load_config(PaperJob, preset=str(preset), overrides=["trainer.rl.top_p=0.5"])
    assert (cfg.trainer.rl.max_turns, cfg.trainer.rl.group_size, cfg.trainer.batch_size) == (
        3,
        16,
        32,
    )


@pytest.mark.parametrize("value", ["nan", ".nan", "inf", "-.inf", "1e999", "-1e999"])
def test_floats_must_be_finite(value):
    with pytest.raises(ConfigError, match=r"optim\.lr: expected a finite float"):
        load_config(CountConfig, overrides=[f"optim.lr={value}"])


def test_bounds_refuse_negative_counts_and_name_the_key():
    with pytest.raises(ConfigError, match=r"trainer\.batch_size: must be >= 1, got 0"):
        load_config(Job, overrides=["trainer.batch_size=0"])
    with pytest.raises(ConfigError, match=r"trainer\.rl\.max_turns: must be >= 1, got -3"):
        load_config(Job, overrides=["trainer.rl.max_turns=-3"])
    with pytest.raises(ConfigError, match=r"trainer\.rl\.top_p: must be > 0, <= 1, got 1\.5"):
        load_config(Job, overrides=["trainer.rl.top_p=1.5"])
    assert load_config(Job, overrides=["trainer.max_steps=-1"]).trainer.max_steps == -1


def test_bounds_apply_to_each_item_of_a_list():
    @dataclass(frozen=True, kw_only=True)
    class Weights:
        weights: tuple[float, ...] = option((), help="w", ge=0)

    assert from_dict(Weights, {"weights": [0, 2]}).weights == (0.0, 2.0)
    with pytest.raises(ConfigError, match=r"weights: must be >= 0, got -1"):
        from_dict(Weights, {"weights": [1, -1]})


def test_bad_files_and_values_are_one_line_config_errors(tmp_path):
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_config(CountConfig, config_file=latin)
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(CountConfig, config_file=tmp_path)
    twice = tmp_path / "twice.yaml"
    twice.write_text("steps: 1\noptim:\n  lr: 0.1\n  lr: 0.2\n")
    with pytest.raises(ConfigError, match="duplicate key 'lr'"):
        load_config(CountConfig, config_file=twice)
    for bad in ("steps=[1,", "name={a: ", "tags=[a, b"):
        with pytest.raises(ConfigError, match=rf"override '{re.escape(bad)}'.*not valid YAML") as e:
            load_config(CountConfig, overrides=[bad])
        assert "\n" not in str(e.value)


@dataclass(frozen=True, kw_only=True)
class Item:
    name: str = option("a", help="name")
    size: int = option(1, help="size", ge=1)


@dataclass(frozen=True, kw_only=True)
class Listy:
    items: tuple[Item, ...] = option(
        factory=lambda: (Item(name="a"), Item(name="b", size=2)), help="items"
    )


def test_an_index_override_changes_one_item_of_a_list_of_sections():
    cfg = load_config(Listy, overrides=["items.1.size=5"])
    assert cfg.items == (Item(name="a"), Item(name="b", size=5))
    data = {"items": [{"name": "x"}, {"name": "y", "size": 3}]}  # a preset's own list
    assert from_dict(Listy, apply_overrides(data, ["items.0.size=7"])).items == (
        Item(name="x", size=7),
        Item(name="y", size=3),
    )
    with pytest.raises(ConfigError, match=r"items\.2: the list has 2 items"):
        load_config(Listy, overrides=["items.2.size=5"])
    with pytest.raises(ConfigError, match=r"items\.0\.size: must be >= 1"):
        load_config(Listy, overrides=["items.0.size=0"])


def test_describe_lists_each_item_of_a_list_of_sections():
    docs = {d.key: d for d in describe(Listy)}
    assert docs["items"].default == "2 items, below"
    assert (docs["items.1.name"].default, docs["items.1.size"].default) == ("b", 2)
    assert docs["items.0.size"].bounds == ">= 1"


def test_a_config_without_some_keys_names_where_they_are_set():
    from aworld_rl_core.config import rebuild, without_keys

    moved = {
        "batch_size": "each stage sets it (stages.N.batch_size)",
        "rl.max_response_tokens": "each stage sets it (stages.N.max_response_tokens)",
    }
    Narrow = without_keys(TrainerConfig, moved, name="NarrowTrainer")
    keys = {d.key for d in describe(Narrow)}
    assert "batch_size" not in keys and "rl.max_response_tokens" not in keys
    assert {"learning_rate", "rl.group_size", "micro_batch_size"} <= keys
    narrow = from_dict(Narrow, {"learning_rate": 0.5, "rl": {"group_size": 4}})
    with pytest.raises(ConfigError, match=r"^batch_size is not set here: each stage sets it"):
        from_dict(Narrow, {"batch_size": 4})
    with pytest.raises(ConfigError, match=r"^rl\.max_response_tokens is not set here"):
        from_dict(Narrow, {"rl": {"max_response_tokens": 9}})
    full = rebuild(TrainerConfig, narrow, {"batch_size": 16, "rl.max_response_tokens": 999})
    assert isinstance(full, TrainerConfig) and full.batch_size == 16
    assert (full.learning_rate, full.rl.group_size, full.rl.max_response_tokens) == (0.5, 4, 999)
    assert full.rl.kl_estimator == RLConfig().kl_estimator
    with pytest.raises(ConfigError, match="batch_size: must be >= 1"):
        rebuild(TrainerConfig, narrow, {"batch_size": 0})


def test_a_preset_name_never_resolves_to_a_folder_or_file_in_the_cwd(tmp_path, monkeypatch):
    """``--preset tiny-cpu`` with a ``tiny-cpu`` folder (or extension-less file) in the working
    directory still means the recipe's preset; paths are paths only when they look like one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-cpu").mkdir()
    (tmp_path / "paper").write_text("steps: 999\n")
    assert load_config(CountConfig, preset="tiny-cpu", presets=PRESETS).name == "tiny"
    assert load_config(CountConfig, preset="paper", presets=PRESETS).steps != 999
    # a path that looks like one is a path: a folder is not a preset file
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(CountConfig, preset="./tiny-cpu", presets=PRESETS)
    assert load_config(CountConfig, preset="./paper", presets=PRESETS).steps == 999
    (tmp_path / "mine").write_text("steps: 5\n")
    with pytest.raises(ConfigError, match=r"give it as \./mine"):
        load_config(CountConfig, preset="mine", presets=PRESETS)


def test_limit_is_none_for_all_and_zero_says_what_to_write():
    """One "first N" knob: ``limit_option`` is null (all) by default, takes N >= 1, and 0 (which
    meant "all" in some packages before) is an error saying to write null."""
    from aworld_rl_core.config import RENAMED_TO_LIMIT, limit_option
    from aworld_rl_core.testing.contracts import vocabulary_problems

    @dataclass(frozen=True, kw_only=True)
    class Data:
        __moved_keys__ = {"entries_per_category": RENAMED_TO_LIMIT}
        limit: int | None = limit_option("first N questions")

    assert from_dict(Data, {}).limit is None
    assert from_dict(Data, {"limit": 3}).limit == 3
    assert from_dict(Data, {"limit": None}).limit is None
    with pytest.raises(ConfigError, match=r"limit: must be >= 1, got 0; null takes all .*=null"):
        from_dict(Data, {"limit": 0})
    with pytest.raises(ConfigError, match="entries_per_category is not set here: it is now 'lim"):
        from_dict(Data, {"entries_per_category": 2})
    assert vocabulary_problems(Data) == []

    @dataclass(frozen=True, kw_only=True)
    class Old:
        limit: int = field(default=0, metadata={"help": "first N (0 = all)"})
        entries_per_category: int = field(default=0, metadata={"help": "first N"})
        max_steps: int = field(default=8, metadata={"help": "replies per round"})

    assert vocabulary_problems(Old) == [
        "limit: a limit is config.limit_option (null = all)",
        "entries_per_category: the project's name is limit",
        "max_steps: an episode's reply cap is max_steps_per_turn",
    ]
