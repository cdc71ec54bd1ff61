"""The vision-language seam: image records, the processor-based collator, and hf-sft training of
core's tiny Qwen2.5-VL on CPU (a step, a falling loss, resume, a model factory, a model-level
loss, gradient masks and learning-rate groups)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

from vision_support import EMBED, TRAINED_ROWS  # noqa: E402

from aworld_rl_core.backends.base import TrainJob  # noqa: E402
from aworld_rl_core.backends.hf_sft import HfSftBackend, split_lr_groups  # noqa: E402
from aworld_rl_core.backends.vision import VisionCollator  # noqa: E402
from aworld_rl_core.losses import model_loss  # noqa: E402
from aworld_rl_core.models import tiny_vl_model  # noqa: E402
from aworld_rl_core.models.config import ModelConfig  # noqa: E402
from aworld_rl_core.records import RecordError  # noqa: E402
from aworld_rl_core.runs import Run  # noqa: E402
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig  # noqa: E402

IMAGE_PAD = 151655
ANSWER = "click(12, 30)"


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shots")
    paths = []
    for name, size, color in (("a", (300, 200), (200, 30, 30)), ("b", (120, 80), (30, 30, 200))):
        path = folder / f"{name}.png"
        Image.new("RGB", size, color).save(path)
        paths.append(path)
    return paths


def row(image, answer=ANSWER, target=(1, 2)):
    user = [{"type": "image", "image": image}, {"type": "text", "text": "Where is the box?"}]
    return {
        "id": "r",
        "messages": [
            {"role": "user", "content": user},
            {"role": "assistant", "content": answer},
        ],
        "target": list(target),
    }


def test_the_collator_labels_the_assistant_and_expands_each_image(shots):
    vl = tiny_vl_model()
    collator = VisionCollator(vl.processor, max_length=1024)
    batch = collator([row(str(shots[0])), row(str(shots[1]), "ok", (3, 4))])
    assert batch["image_grid_thw"].tolist() == [[1, 12, 18], [1, 6, 8]]
    assert batch["pixel_values"].shape[0] == 12 * 18 + 6 * 8
    assert (batch["input_ids"] == IMAGE_PAD).sum(-1).tolist() == [12 * 18 // 4, 6 * 8 // 4]
    labels = batch["labels"]
    texts = [vl.tokenizer.decode(r[r != -100]) for r in labels]
    assert texts == [ANSWER + "<|im_end|>", "ok<|im_end|>"]
    assert batch["attention_mask"].sum(-1).tolist() == [
        int((r != vl.tokenizer.pad_token_id).sum()) for r in batch["input_ids"]
    ]
    assert batch["target"] == [[1, 2], [3, 4]]  # passed through for a model-level loss
    # the same image as bytes, as a data URL and as a file URL gives the same pixels
    data = shots[0].read_bytes()
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    variants = [
        row(data),
        {**row(None), "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]},
            {"role": "assistant", "content": ANSWER},
        ]},
        {**row(None), "messages": [
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": f"file://{shots[0]}"}}
            ]},
            {"role": "assistant", "content": ANSWER},
        ]},
    ]  # fmt: skip
    first = collator([row(str(shots[0]))])["pixel_values"]
    for variant in variants:
        assert torch.equal(collator([variant])["pixel_values"], first)
    smaller = VisionCollator(vl.processor, max_pixels=112 * 112)([row(str(shots[0]))])
    assert smaller["image_grid_thw"].tolist() == [[1, 6, 8]]
    with pytest.raises(RecordError, match="only file:// and data: URLs"):
        remote = {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
        collator([{"messages": [{"role": "user", "content": [remote]}, row(None)["messages"][1]]}])
    with pytest.raises(RecordError, match="exceed trainer.sft.max_length=32"):
        VisionCollator(vl.processor, max_length=32)([row(str(shots[0]))])


def test_the_collator_gives_qwen2_5_vl_its_3d_positions(shots):
    """Qwen2.5-VL computes M-RoPE positions only when the batch carries ``mm_token_type_ids``;
    without them it silently uses 1-D positions (different logits)."""
    vl = tiny_vl_model()
    batch = VisionCollator(vl.processor)([row(str(shots[0])), row(str(shots[1]), "ok")])
    types = batch["mm_token_type_ids"]
    assert torch.equal(types, (batch["input_ids"] == IMAGE_PAD).long())
    assert types.sum(-1).tolist() == [12 * 18 // 4, 6 * 8 // 4]
    keys = ("input_ids", "attention_mask", "pixel_values", "image_grid_thw")
    inputs = {k: batch[k] for k in keys}
    positions, _ = vl.model.model.get_rope_index(
        batch["input_ids"],
        image_grid_thw=batch["image_grid_thw"],
        attention_mask=batch["attention_mask"],
        mm_token_type_ids=types,
    )
    image = batch["input_ids"][0] == IMAGE_PAD
    assert positions[1, 0, image].unique().numel() == 12 // 2  # rows of merged patches
    assert positions[2, 0, image].unique().numel() == 18 // 2  # columns
    real = batch["attention_mask"].bool()
    with torch.no_grad():
        given = vl.model(**inputs, mm_token_type_ids=types).logits[real]
        explicit = vl.model(**inputs, position_ids=positions).logits[real]
        vl.model.model.rope_deltas = None
        flat = vl.model(**inputs).logits[real]
    assert torch.allclose(given, explicit, atol=1e-6)
    assert not torch.allclose(given, flat, atol=1e-4)


def vision_job(run_dir, shots, *, steps, resume=False, **fields):
    trainer = TrainerConfig(
        backend="hf-sft",
        learning_rate=fields.pop("lr", 5e-3),
        max_steps=steps,
        batch_size=2,
        micro_batch_size=2,
        save_steps=2,
        seed=0,
        resume=resume,
        sft=SFTConfig(max_length=1024, lr_scheduler="constant", **fields.pop("sft", {})),
    )
    rows = [row(str(shots[0])), row(str(shots[1]), "ok", (3, 4))]
    return TrainJob(
        model=ModelConfig(name_or_path="tiny:qwen2_5_vl"),
        trainer=trainer,
        run=Run(run_dir, quiet=True, resume=resume),
        train_rows=rows,
        **fields,
    )


def logged(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_the_tiny_qwen2_5_vl_trains_its_loss_falls_and_it_resumes(tmp_path, shots, aworld_home):
    from safetensors.torch import load_file

    straight = HfSftBackend().train(vision_job(tmp_path / "a", shots, steps=4))
    losses = [r["loss"] for r in logged(tmp_path / "a") if "loss" in r]
    assert len(losses) == 4 and losses[-1] < losses[0]  # the two samples are memorised
    assert straight.metrics["global_step"] == 4.0
    assert (straight.outputs["model"] / "preprocessor_config.json").exists()
    HfSftBackend().train(vision_job(tmp_path / "b", shots, steps=2))
    resumed = HfSftBackend().train(vision_job(tmp_path / "b", shots, steps=4, resume=True))
    assert [p.name for p in resumed.checkpoints] == ["checkpoint-2", "checkpoint-4"]
    a = load_file(straight.checkpoints[-1] / "model.safetensors")
    b = load_file(resumed.checkpoints[-1] / "model.safetensors")
    for name in a:
        assert (a[name] - b[name]).abs().max().item() < 1e-6, name


def test_model_factory_model_level_loss_and_gradient_masks(tmp_path, shots, aworld_home):
    import vision_support

    before = dict(tiny_vl_model().model.named_parameters())[EMBED].detach().clone()
    job = vision_job(
        tmp_path,
        shots,
        steps=2,
        lr=1e-12,  # only the lr group's rate can move the embedding rows
        sft={"lr_groups": {"model.language_model.embed_tokens": 0.05}},
        model_factory="vision_support:tiny_vl_factory",
        model_setup="vision_support:train_rows_only",
        loss=model_loss(vision_support.compute_loss),
    )
    result = HfSftBackend().train(job)
    records = logged(tmp_path)
    assert [r["target_sum"] for r in records if "target_sum" in r] == [10.0, 10.0]
    from aworld_rl_core.models import load_vision_model

    trained, _ = load_vision_model(ModelConfig(name_or_path=str(result.checkpoints[-1])))
    after = dict(trained.named_parameters())[EMBED].detach()
    changed = (after - before).abs().sum(-1).nonzero().flatten().tolist()
    assert changed == list(TRAINED_ROWS)  # the gradient mask kept every other row
    assert (after - before)[list(TRAINED_ROWS)].abs().max() > 1e-3  # moved at the group's rate


def test_lr_groups_split_the_optimizer_by_parameter_name():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    optimizer = torch.optim.AdamW(
        [
            {"params": [model[0].weight, model[1].weight], "weight_decay": 0.1},
            {"params": [model[0].bias, model[1].bias], "weight_decay": 0.0},
        ],
        lr=1e-3,
    )
    split_lr_groups(optimizer, model, {"1.": 5e-2})
    groups = [(g["lr"], g["weight_decay"], len(g["params"])) for g in optimizer.param_groups]
    assert groups == [(1e-3, 0.1, 1), (5e-2, 0.1, 1), (1e-3, 0.0, 1), (5e-2, 0.0, 1)]
