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

import dataclasses
from typing import Any, Literal

from aworld_rl_v2p.data import GroundingSample
from aworld_rl_v2p.prompts import CHAT_TEMPLATE, CLICK_ACTION, SYSTEM_PROMPT

Stage = Literal["warmup", "main"]


def to_record(sample: GroundingSample, *, system: str = SYSTEM_PROMPT) -> dict[str, Any]:
    """The sample as a core vision record; ``pointer_boxes`` holds its normalised xyxy box,
    one per click: a multi-turn conversation (``sample.history``) is one record, its first
    user turn with the image, every assistant turn a click."""
    turns = [*sample.history, (sample.instruction, sample.box)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for t, (instruction, _box) in enumerate(turns):
        content: list[dict[str, Any]] = [{"type": "text", "text": instruction}]
        if t == 0:
            content.insert(0, {"type": "image", "image": str(sample.image)})
        messages += [
            {"role": "user", "content": content},
            {"role": "assistant", "content": CLICK_ACTION},
        ]
    return {
        "messages": messages,
        "pointer_boxes": [list(box) for _, box in turns],
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

    model, tokenizer, image_processor = load_v2p(
        model_cfg.name_or_path, dtype=model_cfg.dtype, device="cpu"
    )
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

    model.config.pointer_head_trained = True  # saved with the trained model
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


def memory_per_gpu(
    shape: Any,
    *,
    stage: Stage,
    gpus: int,
    micro_batch: int,
    seq_len: int,
    zero3: bool = True,
    gradient_checkpointing: bool = True,
) -> dict[str, float]:
    """GiB on one GPU of ``stage`` (core's ``sft_memory_per_gpu``): the base model
    (``shape``: core's ``ModelShape``) plus the action head (~8 x hidden^2 parameters); in
    the warm-up only the head and the embedding matrices train (gradients and AdamW state for
    those). No full-sequence logits term: the pointer loss reads the head's patch logits and
    the LM loss (``loss._lm_loss``) computes vocabulary logits only at supervised positions."""
    from aworld_rl_core.backends.memory import sft_memory_per_gpu

    head = 8 * shape.hidden**2
    with_head = dataclasses.replace(shape, params=shape.params + head)
    trainable = None if stage == "main" else head + shape.embedding_params
    return sft_memory_per_gpu(
        with_head,
        gpus=gpus,
        micro_batch=micro_batch,
        seq_len=seq_len,
        trainable_params=trainable,
        zero3=zero3,
        gradient_checkpointing=gradient_checkpointing,
        logits=False,
    )
