"""Training pieces for core's hf-sft backend: records, model factory, trainable set, memory.

- ``to_record``: a grounding sample as a core vision record (system, user image + instruction,
  assistant ``pyautogui.click(<pointer>)``) with ``pointer_boxes`` for ``loss.compute_loss``;
- ``model_factory``: hf-sft's ``TrainJob.model_factory``: the V2P model and a processor whose
  tokenizer renders GUI-Actor's format (``prompts.CHAT_TEMPLATE``: training sees the tokens
  evaluation prompts with) and whose image processor has the training resize bounds;
- ``warmup_trainable``: hf-sft's ``TrainJob.model_setup``: stage 1 trains the action head and
  the new token rows only (the other embedding rows get a zero gradient through a row mask);
  stage 2 trains everything;
- ``memory_per_gpu``: a ZeRO-3 estimate of one GPU's memory for the dry run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_v2p.data import GroundingSample
from aworld_rl_v2p.prompts import CHAT_TEMPLATE, CLICK_ACTION, SYSTEM_PROMPT

Stage = Literal["warmup", "main"]


def to_record(sample: GroundingSample, *, system: str = SYSTEM_PROMPT) -> dict[str, Any]:
    """The sample as a core vision record; ``pointer_boxes`` holds its normalised xyxy box."""
    return {
        "messages": [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": str(sample.image)},
                    {"type": "text", "text": sample.instruction},
                ],
            },
            {"role": "assistant", "content": CLICK_ACTION},
        ],
        "pointer_boxes": [list(sample.box)],
        "id": sample.id,
    }


def model_factory(
    model_cfg: Any, *, max_pixels: int | None = None, min_pixels: int | None = None
) -> tuple[Any, Any]:
    """(V2P model, processor) for ``model_cfg`` (``loading.load_v2p``; a plain Qwen2.5-VL gets
    the pointer tokens and a fresh head). The processor is saved with the trained model, so
    its chat template and resize bounds travel with it."""
    from aworld_rl_core.models import ImageTextProcessor
    from aworld_rl_v2p.loading import load_v2p

    model, tokenizer, image_processor = load_v2p(model_cfg.name_or_path, dtype=model_cfg.dtype)
    tokenizer.chat_template = CHAT_TEMPLATE
    if max_pixels is not None or min_pixels is not None:
        size = dict(image_processor.to_dict()["size"])
        size.update({"longest_edge": max_pixels} if max_pixels is not None else {})
        size.update({"shortest_edge": min_pixels} if min_pixels is not None else {})
        image_processor = type(image_processor).from_dict(
            {**image_processor.to_dict(), "size": size}
        )
    return model, ImageTextProcessor(tokenizer, image_processor)


def warmup_trainable(model: Any, stage: Stage) -> dict[str, Any]:
    """Set ``requires_grad`` for ``stage``; return the gradient row masks ({param name: mask}).

    ``warmup``: the head and the input / output embedding matrices are trainable, and each
    embedding's gradient is multiplied by a (rows, 1) mask that is 1 only at V2P's token rows.
    ``main``: every parameter, no mask.
    """
    import torch

    from aworld_rl_v2p.modeling import new_token_rows

    if stage == "main":
        for p in model.parameters():
            p.requires_grad_(True)
        return {}
    if stage != "warmup":
        raise ValueError(f"unknown stage {stage!r}: use warmup or main")
    embeddings = {id(model.get_input_embeddings().weight), id(model.get_output_embeddings().weight)}
    masks: dict[str, Any] = {}
    rows = new_token_rows(model).to(torch.float32)[:, None]
    for name, p in model.named_parameters():
        trainable = name.startswith("multi_patch_pointer_head.") or id(p) in embeddings
        p.requires_grad_(trainable)
        if id(p) in embeddings:
            masks[name] = rows.to(p.device, p.dtype)
    return masks


@dataclass(frozen=True)
class ModelShape:
    params: float  # all parameters (LLM + ViT + head)
    hidden: int
    layers: int
    vocab: int
    tied: bool


KNOWN_SHAPES = {  # from the models' config.json files (no hub access at run time)
    "Qwen/Qwen2.5-VL-7B-Instruct": ModelShape(8.29e9, 3584, 28, 152064, False),
    "Qwen/Qwen2.5-VL-3B-Instruct": ModelShape(3.75e9, 2048, 36, 151936, True),
    "tiny:qwen2_5_vl": ModelShape(9.91e6, 64, 2, 151674, True),  # core's tiny model + tokens
}


def memory_per_gpu(
    shape: ModelShape,
    *,
    stage: Stage,
    gpus: int,
    micro_batch: int,
    seq_len: int,
    zero3: bool = True,
    gradient_checkpointing: bool = True,
) -> dict[str, float]:
    """GiB on one GPU: bf16 weights, bf16 grads and fp32 Adam (master + m + v) of what trains,
    sharded over ``gpus`` under ZeRO-3, plus activations (bf16).

    Activations: with gradient checkpointing one (micro_batch, seq, hidden) bf16 tensor per
    layer, plus one layer's working set (~34 x micro_batch x seq x hidden bytes, flash
    attention: no seq^2 term); without checkpointing that working set for every layer.
    """
    head = 8 * shape.hidden**2
    params = shape.params + head
    embeddings = shape.vocab * shape.hidden * (1 if shape.tied else 2)
    trainable = params if stage == "main" else head + embeddings
    shard = gpus if zero3 else 1
    gib = 1024**3
    tokens = micro_batch * seq_len
    layer_work = 34 * tokens * shape.hidden
    if gradient_checkpointing:
        activations = shape.layers * tokens * shape.hidden * 2 + layer_work
    else:
        activations = shape.layers * layer_work
    out = {
        "weights_gib": 2 * params / shard / gib,
        "grads_gib": 2 * trainable / shard / gib,
        "optimizer_gib": 12 * trainable / shard / gib,
        "activations_gib": activations / gib,
    }
    out["total_gib"] = sum(out.values())
    return out
