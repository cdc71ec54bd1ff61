import json
from pathlib import Path

import pytest
import torch

from aworld_rl_core import registry
from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.contracts import RecipeContract
from aworld_rl_v2p.data import GroundingSample
from aworld_rl_v2p.training import KNOWN_SHAPES, memory_per_gpu, to_record, warmup_trainable

GIB = 1024**3


def test_record_has_image_part_action_and_box():
    s = GroundingSample("7", Path("/d/a.png"), "click OK", (0.1, 0.2, 0.3, 0.4), (100, 50))
    record = to_record(s)
    user, assistant = record["messages"][1], record["messages"][2]
    assert user["content"][0] == {"type": "image", "image": "/d/a.png"}
    assert user["content"][1] == {"type": "text", "text": "click OK"}
    assert (
        assistant["content"] == "pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)"
    )
    assert record["pointer_boxes"] == [[0.1, 0.2, 0.3, 0.4]]


def test_warmup_trains_head_and_new_rows_only(tiny_v2p):
    model, _tok, _ = tiny_v2p
    try:
        masks = warmup_trainable(model, "warmup")
        trainable = {n for n, p in model.named_parameters() if p.requires_grad}
        assert trainable == {"model.language_model.embed_tokens.weight"} | {
            n for n, _ in model.named_parameters() if n.startswith("multi_patch_pointer_head.")
        }
        (mask,) = masks.values()  # tied embeddings: one matrix
        rows = mask[:, 0].nonzero().flatten().tolist()
        assert rows == sorted(model.config.v2p_token_ids) and mask.shape[1] == 1
        embed = model.get_input_embeddings().weight
        grad = torch.ones_like(embed) * mask  # what the trainer's mask leaves of a gradient
        assert grad[rows].abs().sum() > 0 and grad.abs().sum() == len(rows) * embed.shape[1]
        assert warmup_trainable(model, "main") == {}
        assert all(p.requires_grad for p in model.parameters())
    finally:
        for p in model.parameters():
            p.requires_grad_(True)
    with pytest.raises(ValueError, match="unknown stage"):
        warmup_trainable(model, "sft")


def test_memory_estimate_by_hand():
    shape = KNOWN_SHAPES["Qwen/Qwen2.5-VL-7B-Instruct"]
    main = memory_per_gpu(shape, stage="main", gpus=32, micro_batch=2, seq_len=7600)
    params = 8.29e9 + 8 * 3584**2
    assert main["weights_gib"] == pytest.approx(2 * params / 32 / GIB)
    assert main["optimizer_gib"] == pytest.approx(12 * params / 32 / GIB)
    acts = (28 * 2 * 7600 * 3584 * 2 + 34 * 2 * 7600 * 3584) / GIB
    assert main["activations_gib"] == pytest.approx(acts)
    warm = memory_per_gpu(shape, stage="warmup", gpus=1, micro_batch=1, seq_len=7600)
    trainable = 8 * 3584**2 + 2 * 152064 * 3584  # head + input and output embeddings
    assert warm["grads_gib"] == pytest.approx(2 * trainable / GIB)
    assert main["total_gib"] < 80 and warm["total_gib"] > main["total_gib"]


class TestTrainRecipe(RecipeContract):
    recipe = "v2p.train"

    def check_result(self, result, run_dir):
        assert result.metrics["gpus"] == 1.0
        assert "v2p.train --config" in (run_dir / "launch.sh").read_text()
        assert json.loads((run_dir / "zero3.json").read_text())["zero_optimization"]["stage"] == 3

    def test_paper_dry_run_prints_the_32_gpu_launch(self, tmp_path, aworld_home, capsys):
        entry = registry.get_recipe(self.recipe)
        cfg = load_config(entry.config_cls(), preset="paper", presets=entry.presets)
        result, _run = execute(
            self.recipe, entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
        )
        out = capsys.readouterr().out
        assert "torchrun --nnodes=4 --nproc_per_node=8" in out
        assert "global batch 128 = micro 2 x 32 GPUs x 2 accumulation, lr 5e-06, cosine" in out
        assert result.metrics["accumulation"] == 2.0
        assert result.metrics["total_gib"] == pytest.approx(
            memory_per_gpu(
                KNOWN_SHAPES[cfg.model.name_or_path],
                stage="main",
                gpus=32,
                micro_batch=2,
                seq_len=7600,
            )["total_gib"]
        )

    def test_batch_that_does_not_split_is_an_error(self, tmp_path, aworld_home):
        entry = registry.get_recipe(self.recipe)
        cfg = load_config(
            entry.config_cls(),
            preset="paper",
            presets=entry.presets,
            overrides=["trainer.batch_size=100"],
        )
        with pytest.raises(ValueError, match="multiple of micro_batch_size x GPUs"):
            execute(self.recipe, entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True)
