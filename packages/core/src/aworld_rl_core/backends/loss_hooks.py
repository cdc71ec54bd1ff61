"""A token loss ``loss(logits, labels, segments)`` trained inside a transformers ``Trainer``.

Shared by the ``hf-sft`` backend and the LLaMA-Factory trainer patch (which imports it inside
LLaMA-Factory's own environment). A loss that is a ``torch.nn.Module`` is moved to the training
device, its trainable parameters join the optimizer (without weight decay), and its state is
saved in each ``checkpoint-<step>`` folder and restored on resume. A loss with ``alpha()`` has
it logged as ``loss_alpha``. torch and transformers are imported only when a trainer runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any


def trainable_parameters(loss: Any) -> list[Any]:
    """The parameters of ``loss`` that require gradients (none unless it is an ``nn.Module``)."""
    import torch

    if isinstance(loss, torch.nn.Module):
        return [p for p in loss.parameters() if p.requires_grad]
    return []


def loss_alpha(loss: Any) -> float | None:
    """``loss.alpha()`` as a float, or None when the loss has no ``alpha()``."""
    alpha = getattr(loss, "alpha", None)
    if not callable(alpha):
        return None
    import torch

    return float(torch.as_tensor(alpha()).detach())


def save_loss_state(loss: Any, checkpoint: Path, state_file: str) -> None:
    """Write the state of an ``nn.Module`` loss that has one to ``checkpoint / state_file``."""
    import torch

    if isinstance(loss, torch.nn.Module) and loss.state_dict():
        checkpoint.mkdir(parents=True, exist_ok=True)
        torch.save(loss.state_dict(), checkpoint / state_file)


def load_loss_state(loss: Any, checkpoint: Path, state_file: str, device: Any = "cpu") -> None:
    """Restore the loss state saved by :func:`save_loss_state`, if that file exists."""
    import torch

    path = checkpoint / state_file
    if isinstance(loss, torch.nn.Module) and path.is_file():
        loss.load_state_dict(torch.load(path, map_location=device))


if TYPE_CHECKING:  # a mixin over transformers' Trainer: its attributes are the Trainer's
    _Trainer = Any
else:
    _Trainer = object


class TokenLossMixin(_Trainer):
    """Put before a transformers ``Trainer`` class to train on :attr:`token_loss`.

    Call :meth:`use_token_loss` once the trainer is built. Subclasses say how the labels are
    shifted and the segment masks made (:meth:`shift_and_segment`), and which extra batch
    inputs the masks need (:meth:`pop_segment_inputs`). Without a token loss the trainer's own
    loss is used.
    """

    token_loss: Any = None
    loss_state_file = "loss_state.pt"

    def use_token_loss(self, loss: Any) -> None:
        """Train on ``loss``: move it to the device and save its state with every checkpoint."""
        self.token_loss = loss
        if loss is None:
            return
        self.use_own_loss()
        import torch

        if isinstance(loss, torch.nn.Module):
            loss.to(self.args.device)
        self.add_callback(_loss_state_callback(loss, self.loss_state_file))

    def use_own_loss(self) -> None:
        """Our loss is a per-micro-batch mean: the Trainer divides it by the accumulation steps."""
        self.loss_is_scaled_for_ga = False  # transformers >= 5.19
        self.model_accepts_loss_kwargs = False  # older versions decide from these two
        self.compute_loss_func = None

    def pop_segment_inputs(self, inputs: dict[str, Any]) -> Any:
        """Remove and return the batch entries the segment masks need (none by default)."""
        return None

    def shift_and_segment(self, logits: Any, labels: Any, segment_inputs: Any) -> tuple:
        """``(logits, labels, segments)`` with ``logits[:, t]`` predicting ``labels[:, t]``."""
        raise NotImplementedError

    def create_optimizer(self, *args: Any, **kwargs: Any) -> Any:
        optimizer = super().create_optimizer(*args, **kwargs)
        params = trainable_parameters(self.token_loss)
        known = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if params and not any(id(p) in known for p in params):
            optimizer.add_param_group({"params": params, "weight_decay": 0.0})
        return optimizer

    def train(self, resume_from_checkpoint: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(resume_from_checkpoint, str):
            load_loss_state(
                self.token_loss,
                Path(resume_from_checkpoint),
                self.loss_state_file,
                self.args.device,
            )
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        inputs = dict(inputs)
        segment_inputs = self.pop_segment_inputs(inputs)
        if self.token_loss is None:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits, shifted, segments = self.shift_and_segment(outputs.logits, labels, segment_inputs)
        value = self.token_loss(logits, shifted, segments)
        return (value, outputs) if return_outputs else value

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        alpha = loss_alpha(self.token_loss) if "loss" in logs else None
        if alpha is not None:
            logs = {**logs, "loss_alpha": alpha}
        super().log(logs, *args, **kwargs)


def _loss_state_callback(loss: Any, state_file: str) -> Any:
    from transformers import TrainerCallback

    class LossStateCallback(TrainerCallback):
        """Save the loss's state into each checkpoint folder (main process only)."""

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.is_world_process_zero:
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                save_loss_state(loss, folder, state_file)

    return LossStateCallback()
