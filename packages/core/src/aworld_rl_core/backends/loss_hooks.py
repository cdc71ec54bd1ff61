"""A token loss ``loss(logits, labels, segments)`` trained inside a transformers ``Trainer``.

Shared by the ``hf-sft`` backend and the LLaMA-Factory trainer patch (which imports it inside
LLaMA-Factory's own environment). A loss that is a ``torch.nn.Module`` is moved to the training
device; one with trainable parameters is registered on the model as :data:`LOSS_MODULE` (so
DeepSpeed partitions and reduces them like the model's, and the saved model weights leave them
out) and, outside DeepSpeed, their gradients are averaged over the ranks after each backward:
every rank holds the same values. They form their own
optimizer group without weight decay, at the loss's ``learning_rate`` when it has one (else the
model's). The loss's state is saved in each ``checkpoint-<step>`` folder and restored on resume.
A loss with ``alpha()`` has it logged as ``loss_alpha``, one with ``log_metrics() -> dict`` has
those logged with every training log. torch and transformers are imported only when a trainer
runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

LOSS_MODULE = "aworld_token_loss"
"""The name a loss with trainable parameters gets on the model (``model.aworld_token_loss``)."""


def trainable_parameters(loss: Any) -> list[Any]:
    """The parameters of ``loss`` that require gradients (none unless it is an ``nn.Module``)."""
    import torch

    if isinstance(loss, torch.nn.Module):
        return [p for p in loss.parameters() if p.requires_grad]
    return []


def attach_loss(model: Any, loss: Any) -> None:
    """Register ``loss`` on ``model`` when it has trainable parameters (once), so that the
    distributed wrapper reduces their gradients; its keys are left out of saved model weights."""
    if not trainable_parameters(loss) or getattr(model, LOSS_MODULE, None) is loss:
        return
    model.add_module(LOSS_MODULE, loss)
    keys = {f"{LOSS_MODULE}.{k}" for k in loss.state_dict()}
    ignored = getattr(model, "_keys_to_ignore_on_save", None) or ()
    model._keys_to_ignore_on_save = {*ignored, *keys}  # not in the saved model weights
    # DDP leaves them alone (they are used after the forward, where its unused-parameter search
    # cannot see them); reduce_loss_gradients averages their gradients over the ranks instead
    model._ddp_params_and_buffers_to_ignore = sorted(
        {*getattr(model, "_ddp_params_and_buffers_to_ignore", ()), *keys}
    )


def reduce_loss_gradients(loss: Any) -> None:
    """Average the gradients of the loss's trainable parameters over the ranks after each
    backward (once per parameter; a no-op outside ``torch.distributed``). Idempotent on values
    that a wrapper already averaged."""
    for param in trainable_parameters(loss):
        if not getattr(param, "_aworld_reduced", False):
            param.register_post_accumulate_grad_hook(_all_reduce_mean)
            param._aworld_reduced = True


def _all_reduce_mean(param: Any) -> None:
    import torch.distributed as dist

    if param.grad is None or not dist.is_available() or not dist.is_initialized():
        return
    world = dist.get_world_size()
    if world > 1:
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad.div_(world)


def loss_param_group(loss: Any) -> dict[str, Any] | None:
    """The optimizer group of the loss's trainable parameters: no weight decay, and the loss's
    ``learning_rate`` when it sets one (None when it has no trainable parameters)."""
    params = trainable_parameters(loss)
    if not params:
        return None
    group: dict[str, Any] = {"params": params, "weight_decay": 0.0}
    learning_rate = getattr(loss, "learning_rate", None)
    if learning_rate is not None:
        group["lr"] = float(learning_rate)
    return group


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
        group = loss_param_group(self.token_loss)
        if group is None:
            return optimizer
        ids = {id(p) for p in group["params"]}
        if any({id(p) for p in g["params"]} == ids for g in optimizer.param_groups):
            return optimizer  # a second call: the group is there
        for existing in optimizer.param_groups:  # the model's groups hold them once attached
            existing["params"] = [p for p in existing["params"] if id(p) not in ids]
        optimizer.add_param_group(group)
        return optimizer

    def train(self, resume_from_checkpoint: Any = None, *args: Any, **kwargs: Any) -> Any:
        attach_loss(self.model, self.token_loss)
        if not getattr(self, "is_deepspeed_enabled", False):  # DeepSpeed reduces them itself
            reduce_loss_gradients(self.token_loss)
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
        extra = getattr(self.token_loss, "log_metrics", None)
        if "loss" in logs and callable(extra):  # e.g. SRML's think / call token counts
            logs = {**logs, **extra()}
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
