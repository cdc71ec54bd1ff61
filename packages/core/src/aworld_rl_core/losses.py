"""Losses by registered name: what ``trainer.loss`` and ``TrainJob.loss`` resolve to.

A *token* loss is ``fn(logits, labels, segments) -> scalar`` (``logits[:, t]`` predicts
``labels[:, t]``; ``segments`` maps ``think`` / ``call`` / custom names to bool masks); a *model*
loss is ``compute_loss(model, batch) -> (loss, metrics)``. Registered losses carry their kind
(``register_losses``); a class is built with the options (``Cls(**options)``), a function gets
them as keyword arguments. A package uses another's loss only by name, never by importing it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.errors import ConfigError
from aworld_rl_core.refs import Ref, lookup

LossKind = Literal["token", "model"]


@dataclass(frozen=True)
class Loss:
    """A resolved loss: the callable, its kind and a name for logs."""

    fn: Callable[..., Any]
    kind: LossKind = "token"
    name: str = ""
    full_logits: bool = True
    """Whether it needs the vocabulary logits at every position (a model-level loss registered
    with ``full_logits=False`` computes them only where it reads them): memory plans count
    the ``positions x vocabulary`` matrix only then."""


def model_loss(fn: Callable[..., Any], name: str = "") -> Loss:
    """Mark ``compute_loss(model, batch) -> (loss, metrics)`` as a model-level loss."""
    return Loss(fn, "model", name or getattr(fn, "__name__", ""))


def build(target: Any, options: Mapping[str, Any]) -> Callable[..., Any]:
    """A class built with the options; a function with them bound as keyword arguments."""
    if isinstance(target, type):
        return target(**options)
    return functools.partial(target, **options) if options else target


def resolve_loss(value: Any, options: Mapping[str, Any] | None = None) -> Loss | None:
    """``value`` (a :class:`Loss`, a registered name or ``module:attr`` path, a :class:`Ref`, a
    callable token loss, or None) as a :class:`Loss`."""
    if value is None or isinstance(value, Loss):
        return value
    if isinstance(value, (str, Ref)):
        ref = Ref.of(value, "loss")
        merged = {**ref.kwargs, **dict(options or {})}
        kind: LossKind = "token"
        full = True
        if ref.is_import_path:
            target = ref.resolve("losses")
        else:
            entry = lookup("losses", ref.target)
            target, kind = entry.load(), entry.meta["kind"]
            full = bool(entry.meta.get("full_logits", True))
        return Loss(build(target, merged), kind, ref.label, full_logits=full)
    if callable(value):
        return Loss(value, "token", getattr(value, "__name__", type(value).__name__))
    raise ConfigError(f"a loss is a registered name, a Ref or a callable; got {value!r}")


def job_loss(job: Any) -> Loss | None:
    """The job's loss: ``TrainJob.loss``, else ``trainer.loss`` with ``trainer.loss_options``."""
    if job.loss is not None:
        return resolve_loss(job.loss)
    trainer = job.trainer
    if getattr(trainer, "loss", None):
        return resolve_loss(trainer.loss, trainer.loss_options)
    if getattr(trainer, "loss_options", None):
        raise ConfigError("trainer.loss_options are set but trainer.loss is not: name the loss")
    return None


def token_loss(job: Any, backend: str) -> Callable[..., Any] | None:
    """The job's token loss for a backend that takes only token losses (None: its own CE)."""
    loss = job_loss(job)
    if loss is not None and loss.kind != "token":
        raise ConfigError(
            f"loss '{loss.name}' is a model-level loss (compute_loss(model, batch)); the {backend}"
            " backend takes token losses (fn(logits, labels, segments)): use trainer.backend=hf-sft"
        )
    return None if loss is None else loss.fn
