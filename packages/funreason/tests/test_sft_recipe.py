"""``funreason.sft``: records from samples, and the tiny-cpu preset trains with SRML on CPU."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_funreason.data import FcSample, export_samples, to_record
from aworld_rl_funreason.loss import SRMLLoss
from aworld_rl_funreason.recipes.sft import SftRecipeConfig, run
from aworld_rl_funreason.testing import WEATHER_TOOL

PRESETS = "aworld_rl_funreason:configs/sft"


@pytest.fixture(autouse=True)
def _env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path_factory.mktemp("bfcl")))
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path_factory.mktemp("home")))


SAMPLE = FcSample(
    id="s1",
    query="Weather in Paris?",
    tools=[WEATHER_TOOL],
    answer="[get_weather(city='Paris')]",
    reasoning="Call get_weather for Paris.",
)


def test_record_has_bfcl_prompt_and_target():
    rec = to_record(SAMPLE)
    system, user, assistant = rec.messages
    assert system["role"] == "system" and '"name": "get_weather"' in system["content"]
    assert user == {"role": "user", "content": "Weather in Paris?"}
    assert assistant["content"] == (
        "<think>\nCall get_weather for Paris.\n</think>\n\n[get_weather(city='Paris')]"
    )
    assert rec.tools == [] and rec.ground_truth == "[get_weather(city='Paris')]"
    chat = to_record(SAMPLE, prompt="chat_tools")
    assert [m["role"] for m in chat.messages] == ["user", "assistant"]
    assert chat.tools[0]["function"]["name"] == "get_weather"


def test_export_writes_records_sharegpt_and_verl(tmp_path):
    paths = export_samples([SAMPLE], tmp_path, name="fr")
    assert json.loads(paths["records"].read_text().splitlines()[0])["id"] == "s1"
    info = json.loads((tmp_path / "sharegpt/dataset_info.json").read_text())
    assert "fr" in info
    import pyarrow.parquet as pq

    assert pq.read_table(paths["verl"]).num_rows == 1


def test_trainer_loss_names_srml_through_the_registry():
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.losses import job_loss
    from aworld_rl_core.trainer_config import TrainerConfig

    options = {"alpha": 0.4, "learnable": True}
    trainer = TrainerConfig(backend="hf-sft", loss="funreason.srml", loss_options=options)
    job = TrainJob(model=None, trainer=trainer, run=None, train_rows=[])
    loss = job_loss(job)
    assert loss.kind == "token" and isinstance(loss.fn, SRMLLoss)
    assert loss.fn.alpha_value() == pytest.approx(0.4) and loss.fn.alpha_module is not None
    # the recipe leaves the loss to trainer.loss when that is set
    cfg = load_config(SftRecipeConfig, overrides=["trainer.loss=funreason.srml"])
    assert cfg.trainer.loss == "funreason.srml"


def test_recipes_select_srml_by_trainer_loss():
    from aworld_rl_funreason.recipes.self_refine import SelfRefineConfig

    for recipe in (SftRecipeConfig(), SelfRefineConfig()):
        assert recipe.trainer.loss == "funreason.srml"
        assert recipe.trainer.loss_options == {"alpha": 0.7}  # v1: fixed
    plain = load_config(SftRecipeConfig, overrides=["trainer.loss=null"])
    assert plain.trainer.loss is None  # the backend's own cross-entropy


def test_srml_as_a_backend_says_it_is_a_loss():
    from aworld_rl_core.errors import PluginError
    from aworld_rl_core.registry import get_trainer

    with pytest.raises(PluginError, match=r"'funreason.srml' is a registered loss.*trainer.loss"):
        get_trainer("funreason.srml")


def test_presets_load():
    paper = load_config(SftRecipeConfig, preset="paper", presets=PRESETS)
    assert paper.trainer.batch_size == 512 and paper.trainer.learning_rate == 4e-5
    assert paper.trainer.sft.warmup_ratio == 0.05
    assert paper.trainer.loss == "funreason.srml" and paper.trainer.loss_options["alpha"] == 0.7
    assert paper.model.name_or_path == "Qwen/Qwen2.5-Coder-7B-Instruct"


def test_tiny_cpu_preset_trains_with_learnable_alpha(tmp_path):
    cfg = load_config(SftRecipeConfig, preset="tiny-cpu", presets=PRESETS)
    result, _ = execute("funreason.sft", run, cfg, output_dir=tmp_path, quiet=True)
    assert result.metrics["sft_rows"] == 2.0
    assert result.metrics["global_step"] == 2.0
    assert result.metrics["loss_alpha"] != pytest.approx(0.7, abs=1e-7)  # alpha was trained
    assert 0.0 < result.metrics["loss_alpha"] < 1.0
    assert (result.outputs["model"] / "config.json").exists()
    from aworld_rl_core.runs import run_output

    assert run_output(tmp_path) == result.outputs["model"]  # the run stands for its model
    logged = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert any("loss_alpha" in m for m in logged)
    steps = [m for m in logged if "think_tokens" in m]  # the run log counts both parts
    assert len(steps) == 2 and all(m["think_tokens"] > 0 and m["call_tokens"] > 0 for m in steps)


def test_overlong_samples_are_dropped_and_counted(tmp_path):
    cfg = load_config(
        SftRecipeConfig,
        preset="tiny-cpu",
        presets=PRESETS,
        overrides=["trainer.sft.max_length=385", "data.limit=null", "trainer.max_steps=1"],
    )
    result, _ = execute("funreason.sft", run, cfg, output_dir=tmp_path, quiet=True)
    kept = result.metrics["sft_rows"]
    assert (result.metrics["dropped_overlong"], kept) == (3.0, 3.0)  # 383, 374, 374 tokens fit
    cut = load_config(
        SftRecipeConfig,
        preset="tiny-cpu",
        presets=PRESETS,
        overrides=["trainer.sft.max_length=385", "data.limit=null", "data.overlong=cut"],
    )
    from aworld_rl_funreason.data import read_samples
    from aworld_rl_funreason.paths import resolve_path
    from aworld_rl_funreason.recipes.sft import drop_overlong, sft_rows

    rows, _ = sft_rows(read_samples(resolve_path(cut.data.path)), cut.data)
    fit, dropped = drop_overlong(rows, cut.model, cut.trainer)
    assert dropped == result.metrics["dropped_overlong"] and len(fit) == kept
