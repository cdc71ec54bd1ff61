import json
from pathlib import Path

import pytest
import torch
from PIL import Image

from aworld_rl_core import registry
from aworld_rl_core.backends.memory import GIB, KNOWN_SHAPES
from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.contracts import RecipeContract
from aworld_rl_v2p.data import GroundingSample
from aworld_rl_v2p.prompts import DIFF_MARKER, render
from aworld_rl_v2p.training import memory_per_gpu, to_record, warmup_trainable


def logged(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


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


def test_training_sees_the_tokens_and_pixels_evaluation_prompts_with(synthetic_dir):
    from aworld_rl_core.backends.vision import VisionCollator
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_v2p.data import read_aguvis
    from aworld_rl_v2p.inference import Grounder
    from aworld_rl_v2p.training import model_factory

    sample = read_aguvis(synthetic_dir / "data.json")[0]
    cfg = ModelConfig(name_or_path="tiny:qwen2_5_vl")
    model, processor = model_factory(cfg, max_pixels=50176)
    tok = processor.tokenizer
    text = tok.apply_chat_template(to_record(sample)["messages"], tokenize=False)
    assert text == render(sample.instruction) + DIFF_MARKER
    train = VisionCollator(processor)([to_record(sample)])
    grounder = Grounder(model, tok, processor.image_processor, max_pixels=50176)
    with Image.open(sample.image) as image:
        prompt = grounder.encode([image], [sample.instruction])
    n = prompt["input_ids"].shape[1]  # the prompt ends with the pointer tokens and ")"
    assert train["input_ids"][0, :n].tolist() == prompt["input_ids"][0].tolist()
    assert torch.equal(train["pixel_values"], prompt["pixel_values"])
    assert train["image_grid_thw"].tolist() == prompt["image_grid_thw"].tolist()
    supervised = tok.decode(train["labels"][0][train["labels"][0] != -100])
    assert supervised == "pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)" + (
        DIFF_MARKER
    )
    assert train["pointer_boxes"] == [[list(sample.box)]]


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
    override_values = {"data.sources": [{"path": "a.json", "images": "img", "weight": 0.5}]}
    run_tiny_cpu = False  # needs data: test_tiny_cpu_trains_through_hf_sft below

    def test_tiny_cpu_trains_through_hf_sft(self, tmp_path, aworld_home, synthetic_dir, tiny_run):
        from transformers import set_seed

        from aworld_rl_core.models import tiny_vl_model
        from aworld_rl_core.models.config import ModelConfig
        from aworld_rl_v2p.loading import load_v2p
        from aworld_rl_v2p.training import model_factory

        data = synthetic_dir / "data.json"
        overrides = [f"data.paths=[{data}]", "trainer.max_steps=2"]
        result, run_dir = tiny_run(self.recipe, tmp_path, overrides)
        assert result.metrics["global_step"] == 2.0 and result.metrics["samples"] == 20.0
        steps = [r for r in logged(run_dir) if "pointer_loss" in r]
        assert [r["step"] for r in steps] == [1, 2]
        for r in steps:  # warm-up: pointer loss only (lm_weight -1), KL + suppression
            assert "lm_loss" not in r and r["loss"] == pytest.approx(r["pointer_loss"], rel=1e-5)
            assert r["pointer_loss"] == pytest.approx(r["pointer_kl"] + r["out_of_box_mass"])
        trained, tokenizer, image_processor = load_v2p(str(result.outputs["model"]))
        assert image_processor.size.longest_edge == 50176  # the training resize travels along
        assert "<|recipient|>os" in tokenizer.chat_template
        start = []
        for _ in range(2):  # hf-sft seeds (trainer.seed=0) before the model factory runs
            set_seed(0)
            start.append(dict(model_factory(ModelConfig(name_or_path="tiny:qwen2_5_vl"))[0]
                              .named_parameters()))  # fmt: skip
        assert all(torch.equal(start[0][k], start[1][k]) for k in start[0])
        base = dict(tiny_vl_model().model.named_parameters())
        embed = "model.language_model.embed_tokens.weight"
        after = dict(trained.named_parameters())
        for name, value in after.items():
            if name.startswith("multi_patch_pointer_head.") or name == embed:
                continue
            assert torch.equal(value, base[name]), f"{name} changed in the warm-up"
        head = [n for n in after if n.startswith("multi_patch_pointer_head.")]
        assert all(not torch.equal(after[n], start[0][n]) for n in head if n.endswith("weight"))
        rows = (after[embed] - start[0][embed]).abs().sum(-1).nonzero().flatten().tolist()
        pad = trained.config.pointer_pad_token_id
        assert pad in rows and set(rows) <= set(trained.config.v2p_token_ids)

    def test_main_stage_adds_the_lm_loss_and_trains_everything(
        self, tmp_path, aworld_home, synthetic_dir, tiny_run
    ):
        data = synthetic_dir / "data.json"
        overrides = [
            f"data.paths=[{data}]",
            "stage=main",
            "trainer.loss_options.lm_weight=1",
            "trainer.max_steps=1",
            "trainer.batch_size=4",
            "trainer.micro_batch_size=2",
        ]
        result, run_dir = tiny_run(self.recipe, tmp_path, overrides)
        (step,) = [r for r in logged(run_dir) if "pointer_loss" in r]
        assert step["loss"] == pytest.approx(step["lm_loss"] + step["pointer_loss"], rel=1e-4)
        from aworld_rl_core.models import tiny_vl_model
        from aworld_rl_v2p.loading import load_v2p

        trained = dict(load_v2p(str(result.outputs["model"]))[0].named_parameters())
        name = "model.language_model.layers.0.mlp.up_proj.weight"
        assert not torch.equal(trained[name], dict(tiny_vl_model().model.named_parameters())[name])

    @pytest.mark.parametrize(
        ("override", "message"),
        [
            ("trainer.weight_decay=0.1", "AdamW's decay would move the frozen embedding rows"),
            ("trainer.loss_options.alpha=1", "unknown config key 'trainer.loss_options.alpha'"),
            ("loss.lm_weight=1", "loss is not set here: the pointer loss's options are trainer"),
            ("trainer.loss=funreason.srml", "v2p.train trains v2p.pointer"),
            ("trainer.backend=trl", "trains through hf-sft"),
        ],
    )
    def test_settings_that_would_train_wrongly_are_errors(
        self, tmp_path, aworld_home, override, message, tiny_run
    ):
        from aworld_rl_core.errors import ConfigError

        with pytest.raises(ConfigError, match=message):
            tiny_run(self.recipe, tmp_path, [override])

    def test_paper_dry_run_plans_the_32_gpu_torchrun_launch(self, tmp_path, aworld_home):
        """``--dry-run`` (core's, no V2P dry-run code): hf-sft's plan of the paper preset on the
        packaged sample is torchrun over 4 x 8 GPUs with ZeRO-3 and gradient checkpointing, and
        the memory it estimates is what that job trains with."""
        from aworld_rl_core import cli

        out = tmp_path / "run"
        code = cli.main(
            ["v2p.train", "--preset", "paper", "--dry-run", "--output-dir", str(out),
             "data.sources=[]", "data.paths=[aworld_rl_v2p:sample_data/data.json]"]
        )  # fmt: skip
        assert code == 0
        (plan,) = json.loads((out / "plan.json").read_text())["plans"]
        command = plan["processes"][0]["command"]
        assert command[1:5] == ["-m", "torch.distributed.run", "--nnodes=4", "--nproc_per_node=8"]
        steps = plan["steps"]
        # global batch 128 = micro 2 x 32 GPUs x 2 accumulation
        assert (steps["world_size"], steps["micro_batch"], steps["accumulation"]) == (32, 2, 2)
        engine = steps["engine_settings"]
        assert engine["zero_stage"] == 3 and engine["gradient_checkpointing"] is True
        assert json.loads(Path(engine["deepspeed"]).read_text())["zero_optimization"]["stage"] == 3
        # the pointer loss computes LM logits at supervised positions only: no logits term
        assert "logits" not in plan["memory_gib"] and plan["memory_gib"]["total"] < 80
        assert not (out / "model").exists()  # nothing trained

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


def test_warmup_has_no_lm_loss_by_default_and_main_has_it():
    from aworld_rl_core.config import load_config
    from aworld_rl_v2p.recipes.train import TrainConfig, stage_loss

    assert TrainConfig().stage == "warmup" and TrainConfig().trainer.loss_options == {}
    assert stage_loss(TrainConfig()).lm_weight == -1.0
    assert stage_loss(TrainConfig(stage="main")).lm_weight == 1.0
    from aworld_rl_core import registry

    entry = registry.get_recipe("v2p.train")
    paper = load_config(entry.config_cls(), preset="paper", presets=entry.presets)
    assert paper.trainer.save_steps == 500 and stage_loss(paper).lm_weight == 1.0
    assert len(paper.data.sources) == 6
    assert {s.images for s in paper.data.sources} == {
        f"data/images/{n}"
        for n in ("uground", "guienv", "guiact", "amex", "androidcontrol", "waveui")
    }
    warm = load_config(
        entry.config_cls(), preset="paper", presets=entry.presets, overrides=["stage=warmup"]
    )
    assert stage_loss(warm).lm_weight == 1.0  # the preset's explicit main-stage weight is kept


def test_sources_each_with_images_and_weight(tmp_path):
    import json

    from PIL import Image

    from aworld_rl_v2p.recipes.train import SourceConfig, TrainDataConfig, training_samples

    def source(name, n):
        folder = tmp_path / f"{name}-images"
        folder.mkdir()
        Image.new("RGB", (100, 50)).save(folder / "s.png")
        row = {
            "image": "s.png",
            "conversations": [
                {"from": "human", "value": "<image>click ok"},
                {
                    "from": "gpt",
                    "value": "pyautogui.click(x=0.3, y=0.4)",
                    "bbox_gt": [0.2, 0.3, 0.4, 0.5],
                },
            ],
        }
        bad = {**row, "image": "missing.png"}
        file = tmp_path / f"{name}.json"
        file.write_text(json.dumps([{**row, "id": f"{name}{i}"} for i in range(n)] + [bad]))
        return SourceConfig(path=str(file), images=str(folder), weight=1.0)

    a, b = source("a", 4), source("b", 10)
    data = TrainDataConfig(
        sources=(
            SourceConfig(path=a.path, images=a.images, weight=2.0),
            SourceConfig(path=b.path, images=b.images, weight=0.5),
        )
    )
    samples, skipped = training_samples(data)
    ids = [s.id for s in samples]
    assert sum(i.startswith("a") for i in ids) == 8 and sum(i.startswith("b") for i in ids) == 5
    assert all(s.image.parent.name == s.id[0] + "-images" for s in samples)
    assert skipped == {"image file missing": 2}
    assert [s.id for s in training_samples(data)[0]] == ids  # seeded


def test_paper_job_trains_with_zero3_and_gradient_checkpointing(tmp_path, aworld_home):
    """The paper preset's hf-sft job carries the ZeRO-3 and gradient checkpointing its plan's
    estimate assumes (before: deepspeed null, no checkpointing: plain DDP)."""
    from aworld_rl_core.backends.hf_sft_launch import deepspeed_file, hf_sft_section
    from aworld_rl_core.runs import Run
    from aworld_rl_v2p.recipes.train import training_job

    entry = registry.get_recipe("v2p.train")
    cfg = load_config(
        entry.config_cls(),
        preset="paper",
        presets=entry.presets,
        overrides=["data.sources=[]", "data.paths=[aworld_rl_v2p:sample_data/data.json]"],
    )
    job = training_job(cfg, Run(tmp_path / "run", quiet=True))
    assert job.trainer.sft.gradient_checkpointing is True
    hs = hf_sft_section(job.trainer)
    assert (hs.world_size, hs.zero_stage, hs.uses_torchrun()) == (32, 3, True)
    ds = json.loads(Path(deepspeed_file(job, write=True)).read_text())
    assert ds["zero_optimization"]["stage"] == 3 and ds["bf16"]["enabled"] == "auto"
    assert len(job.train_rows) == 8  # the packaged sample: 4 pages, 8 targets
