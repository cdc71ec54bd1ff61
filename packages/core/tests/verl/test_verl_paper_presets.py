"""The installed recipes' GPU presets that launch verl, judged by verl itself: each preset's
``--dry-run`` (as a user runs it) writes its launch plans; every plan's ``main_ppo`` overrides,
composed as ``main_ppo`` composes them, pass verl's own ``validate_config`` (what ``main_ppo``
runs before Ray starts), and verl's own data-loader arithmetic over the plan's parquet rows
runs exactly the steps the plan states (one plan per stage of a multi-stage recipe). A
recipe whose README dry run adds overrides (the packaged sample data in place of the paper's
files) gets the same overrides for each of its verl presets.

The presets are found through the registry (every registered recipe's presets that train with
verl),
so core names no paper; the verl environment installs the paper packages (nox ``tests_verl``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl.trainer")

from verl_toys import verl_loader_steps

from aworld_rl_core import registry
from aworld_rl_core.config import list_presets, load_config, to_dict
from aworld_rl_core.testing.readme import dry_run_commands, run_as_written

MAIN = "verl.trainer.main_ppo"


def readme_overrides(recipe: str) -> list[str]:
    """The overrides the recipe's package README adds to its ``--dry-run`` line (e.g. the
    packaged sample data in place of the paper's files), [] when it shows none: the words of
    ``aworld-run <recipe> --preset paper --dry-run ...`` past the recipe, preset and flag."""
    import importlib.util

    package = registry.get_recipe(recipe).presets.partition(":")[0]
    spec = importlib.util.find_spec(package)
    origin = Path(spec.origin) if spec and spec.origin else None
    folders = origin.parents if origin else []
    readme = next((d / "README.md" for d in folders if (d / "README.md").is_file()), None)
    if readme is None:
        return []
    for words in dry_run_commands(readme):
        if words[1] == recipe:
            i = words.index("--preset")
            rest = words[2:i] + words[i + 2 :]
            return [w for w in rest if w != "--dry-run"]
    return []


def _targets_verl(tree: Any) -> bool:
    """Whether a recipe's composed config (as a dict) has ``backend: verl`` anywhere (its
    trainer, or one stage's)."""
    if isinstance(tree, dict):
        return any((k == "backend" and v == "verl") or _targets_verl(v) for k, v in tree.items())
    if isinstance(tree, list):
        return any(_targets_verl(v) for v in tree)
    return False


def verl_presets() -> list[tuple[str, str]]:
    """(recipe, preset) for every registered recipe's preset whose config, composed as
    ``aworld-run`` composes it (the recipe's defaults under the preset), trains with verl."""
    reg = registry.build_registry()
    found = []
    with registry.use_registry(reg):
        for name in registry.names("recipes"):
            entry = registry.get_recipe(name)
            for preset in list_presets(entry.presets):
                cfg = load_config(entry.config_cls(), preset=preset, presets=entry.presets)
                if _targets_verl(to_dict(cfg)):
                    found.append((name, preset))
    return found


PRESETS = verl_presets()


def test_verl_presets_are_found():
    """The selection is not empty where paper packages are installed (tests_verl installs
    them): a broken discovery must not pass as "nothing to check"."""
    assert PRESETS, "no installed recipe has a preset naming verl"


def main_ppo_overrides(plan: dict[str, Any]) -> list[str]:
    (process,) = plan["processes"]
    command = process["command"]
    assert MAIN in command, command
    return command[command.index(MAIN) + 1 :]


@pytest.fixture(scope="module")
def local_model(qwen3_tokenizer, tmp_path_factory):
    """A local model folder (a small Qwen2 config and Qwen3's tokenizer, no weights) standing
    in for the preset's hub model: verl's ``validate_config`` builds ``HFModelConfig``, which
    reads the config and tokenizer (tests run offline); batch, parallelism and token-budget
    checks do not depend on the model's size."""
    from transformers import Qwen2Config

    path = tmp_path_factory.mktemp("local-model")
    qwen3_tokenizer.save_pretrained(path)
    Qwen2Config(
        vocab_size=len(qwen3_tokenizer), hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        architectures=["Qwen2ForCausalLM"],
    ).save_pretrained(path)  # fmt: skip
    return str(path)


def with_local_model(overrides: list[str], local: str) -> list[str]:
    """``overrides`` with every value naming the launch's model (actor, critic, tokenizer)
    replaced by ``local``."""
    values = dict(o.lstrip("+").split("=", 1) for o in overrides)
    model = values["actor_rollout_ref.model.path"]
    out = []
    for o in overrides:
        key, _, value = o.partition("=")
        out.append(f"{key}={local}" if value == model else o)
    return out


def train_rows(plan: dict[str, Any]) -> int:
    import pyarrow.parquet as pq

    data_dir = Path(plan["processes"][0]["writes"][0])
    return pq.read_metadata(data_dir / "train.parquet").num_rows


@pytest.mark.parametrize(("recipe", "preset"), PRESETS, ids=[f"{r}:{p}" for r, p in PRESETS])
def test_verl_validates_the_plan_and_runs_its_steps(
    recipe, preset, aworld_home, verl_compose, local_model, monkeypatch, capsys
):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    with registry.use_registry(registry.build_registry()):
        extra = readme_overrides(recipe)
    words = ["aworld-run", recipe, "--preset", preset, "--dry-run", *extra]
    plans = run_as_written(words, aworld_home)
    capsys.readouterr()
    verl_plans = [p for p in plans if p["backend"] == "verl"]
    assert verl_plans, f"{recipe} --preset {preset} names verl but planned no verl launch"
    for i, plan in enumerate(verl_plans):
        cfg = verl_compose(with_local_model(main_ppo_overrides(plan), local_model))
        validate_config(
            config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg)
        )
        n_rows = train_rows(plan)
        per_epoch, total, ran = verl_loader_steps(cfg, n_rows, monkeypatch)
        steps = plan["steps"]
        where = f"{recipe} --preset {preset}, plan {i + 1} ({n_rows} prompts)"
        assert ran == steps["steps"], f"{where}: verl runs {ran} steps, the plan says {steps}"
        assert per_epoch == steps["steps_per_epoch"], where
        assert cfg.trainer.total_epochs == steps["epochs"], where
        assert total == int(steps["engine_settings"]["trainer.total_training_steps"]), where
