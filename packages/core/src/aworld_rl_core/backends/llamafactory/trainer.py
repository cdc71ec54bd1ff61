"""Inside the LLaMA-Factory environment: its SFT trainer with our loss hook, and an event log.

LLaMA-Factory has no hook for a custom token loss: ``run_sft`` builds
``llamafactory.train.sft.workflow.CustomSeq2SeqTrainer`` itself, looking the name up at call
time. :func:`install_trainer` replaces that name with a subclass whose ``compute_loss``
calls ``loss(logits, labels, segments)`` on the shifted logits and labels.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from aworld_rl_core.backends.batching import DropLastInTrainingOnly
from aworld_rl_core.backends.loss_hooks import TokenLossMixin
from aworld_rl_core.segments import DEFAULT_SEGMENTS, label_segments

LOSS_STATE_FILE = "token_loss.pt"


def token_loss_trainer(
    base: type, loss: Any, segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS
) -> type:
    """A subclass of LLaMA-Factory's ``base`` SFT trainer that trains on ``loss``.

    ``loss(logits, labels, segments)`` gets ``logits[:, :-1]`` and ``labels[:, 1:]`` (so
    ``logits[b, t]`` predicts ``labels[b, t]``; -100 = ignore) and the segment masks core's
    marker finds in the supervised text (``segments.label_segments``: by character offsets, so
    tags that merge with neighbouring characters are found). An ``nn.Module`` loss is handled as
    :class:`TokenLossMixin` says (device, optimizer, checkpoints, ``loss_alpha``).
    """
    kinds = dict(segments)

    class TokenLossTrainer(TokenLossMixin, base):
        loss_state_file = LOSS_STATE_FILE

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.use_token_loss(loss)

        def shift_and_segment(self, logits: Any, labels: Any, segment_inputs: Any) -> tuple:
            shifted = labels[:, 1:]
            masks = label_segments(self.processing_class, shifted, kinds)
            return logits[:, :-1, :], shifted, masks

    TokenLossTrainer.__name__ = TokenLossTrainer.__qualname__ = f"TokenLoss{base.__name__}"
    return TokenLossTrainer


def install_trainer(
    loss: Any = None, segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS
) -> type:
    """Make LLaMA-Factory's ``run_sft`` build its trainer with batching's rule (the partial last
    batch dropped in training only) and, given a ``loss``, a :func:`token_loss_trainer`."""
    import llamafactory.train.sft.workflow as sft_workflow

    base = sft_workflow.CustomSeq2SeqTrainer
    patched: type = type(base.__name__, (DropLastInTrainingOnly, base), {})
    if loss is not None:
        patched = token_loss_trainer(patched, loss, segments)
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
