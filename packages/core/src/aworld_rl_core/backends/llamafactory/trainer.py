"""Inside the LLaMA-Factory environment: its SFT trainer with our loss hook, and an event log.

LLaMA-Factory has no hook for a custom token loss: ``run_sft`` builds
``llamafactory.train.sft.workflow.CustomSeq2SeqTrainer`` itself, looking the name up at call
time. :func:`install_token_loss` replaces that name with a subclass whose ``compute_loss``
calls ``loss(logits, labels, segments)`` on the shifted logits and labels.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from aworld_rl_core.backends.llamafactory.segments import IGNORE_INDEX, segment_masks
from aworld_rl_core.backends.loss_hooks import TokenLossMixin

LOSS_STATE_FILE = "token_loss.pt"
THINK_TAGS = ("<think>", "</think>")


def tag_ids(tokenizer: Any, tag: str) -> list[int]:
    """Token ids of ``tag`` without special tokens (one id when the tag is an added token)."""
    ids = list(tokenizer.encode(tag, add_special_tokens=False))
    if not ids:
        raise ValueError(f"the tokenizer encodes {tag!r} to no tokens")
    return ids


def token_loss_trainer(base: type, loss: Any) -> type:
    """A subclass of LLaMA-Factory's ``base`` SFT trainer that trains on ``loss``.

    ``loss(logits, labels, segments)`` gets ``logits[:, :-1]`` and ``labels[:, 1:]`` (so
    ``logits[b, t]`` predicts ``labels[b, t]``; -100 = ignore) and the segment masks found from
    the think tags. An ``nn.Module`` loss is handled as :class:`TokenLossMixin` says (device,
    optimizer, checkpoints, ``loss_alpha``).
    """

    class TokenLossTrainer(TokenLossMixin, base):
        loss_state_file = LOSS_STATE_FILE

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._think_ids = [tag_ids(self.processing_class, tag) for tag in THINK_TAGS]
            self.use_token_loss(loss)

        def shift_and_segment(self, logits: Any, labels: Any, segment_inputs: Any) -> tuple:
            shifted = labels[:, 1:]
            open_ids, close_ids = self._think_ids
            segments = segment_masks(shifted, open_ids, close_ids, ignore_index=IGNORE_INDEX)
            return logits[:, :-1, :], shifted, segments

    TokenLossTrainer.__name__ = TokenLossTrainer.__qualname__ = f"TokenLoss{base.__name__}"
    return TokenLossTrainer


def install_token_loss(loss: Any) -> type:
    """Make LLaMA-Factory's ``run_sft`` build a :func:`token_loss_trainer` around ``loss``."""
    import llamafactory.train.sft.workflow as sft_workflow

    patched = token_loss_trainer(sft_workflow.CustomSeq2SeqTrainer, loss)
    sft_workflow.CustomSeq2SeqTrainer = patched
    return patched


class EventsCallback(TrainerCallback):
    """Append training events (begin, log, save, end) as JSON lines for the parent process."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _write(self, state: Any, record: dict[str, Any]) -> None:
        if not state.is_world_process_zero:
            return
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        record = {"event": "begin", "step": state.global_step, "max_steps": state.max_steps}
        self._write(state, record)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        metrics = {
            k: float(v)
            for k, v in (logs or {}).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        }
        self._write(state, {"event": "log", "step": state.global_step, "metrics": metrics})

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        self._write(state, {"event": "save", "step": state.global_step, "path": str(folder)})

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._write(state, {"event": "end", "step": state.global_step})
