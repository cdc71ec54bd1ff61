"""Bounded config reading (issue 29, item 11): size caps, alias bombs, null sections."""

from __future__ import annotations

import pytest

from aworld_rl_core import cli, registry
from aworld_rl_core.config import MAX_CONFIG_VALUES, load_config
from aworld_rl_core.errors import ConfigError


def grpo(**kwargs):
    entry = registry.get_recipe("core.grpo")
    return load_config(entry.config_cls(), presets=entry.presets, **kwargs)


def test_dev_zero_as_config_fails_fast_naming_the_cap(capsys):
    with pytest.raises(ConfigError, match="'/dev/zero' is larger than 1,048,576 bytes"):
        grpo(config_file="/dev/zero")
    assert cli.main(["core.grpo", "--config", "/dev/zero"]) == 2
    assert "larger than 1,048,576 bytes" in capsys.readouterr().err


def test_an_alias_bomb_in_a_free_form_field_is_refused(tmp_path):
    # six levels of ten: 10**6 values once expanded (main built them all, then ran on)
    lines = ["trainer:", "  loss_options:", "    l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 7):
        uses = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"    l{level}: &l{level} [{uses}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=f"expands to over {MAX_CONFIG_VALUES:,} values"):
        grpo(config_file=bomb)


def test_a_self_referencing_alias_is_refused(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.write_text("trainer:\n  loss_options:\n    a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match="nests too deeply"):
        grpo(config_file=loop)


def test_aliases_within_the_caps_still_work(tmp_path):
    ok = tmp_path / "ok.yaml"
    ok.write_text("trainer:\n  loss_options:\n    a: &a [1, 2]\n    b: *a\n")
    assert grpo(config_file=ok).trainer.loss_options == {"a": [1, 2], "b": [1, 2]}


def test_a_huge_override_value_is_refused():
    with pytest.raises(ConfigError, match="over the 1,048,576 a config may hold"):
        grpo(overrides=["trainer.loss_options={a: '" + "x" * (1 << 20) + "'}"])


def test_a_null_section_is_an_error_naming_the_key_not_a_silent_reset():
    cfg = grpo(preset="tiny-cpu")
    assert (cfg.trainer.rl.group_size, cfg.trainer.rl.max_new_tokens) == (4, 8)
    with pytest.raises(ConfigError, match=r"trainer\.rl=null: a config section cannot be null"):
        grpo(preset="tiny-cpu", overrides=["trainer.rl=null"])
    with pytest.raises(ConfigError, match=r"trainer\.verl=null"):
        grpo(preset="tiny-cpu", overrides=["trainer.verl=null"])
    kept = grpo(preset="tiny-cpu", overrides=["trainer.rl.group_size=3"])
    assert (kept.trainer.rl.group_size, kept.trainer.rl.max_new_tokens) == (3, 8)
