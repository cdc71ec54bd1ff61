"""Losses by registered name: ``register_losses``, ``trainer.loss`` and the clear errors."""

from __future__ import annotations

import functools

import pytest

from aworld_rl_core import hookimpl, registry
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.errors import ConfigError, PluginError
from aworld_rl_core.losses import Loss, job_loss, model_loss, resolve_loss, token_loss
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.trainer_config import TrainerConfig


def weighted(logits, labels, segments, *, weight=1.0):
    return weight * logits


class Scaled:
    """A class loss: built with the options, then called per batch."""

    def __init__(self, scale=2.0):
        self.scale = scale

    def __call__(self, logits, labels, segments):
        return self.scale * logits


def pointer(model, batch):
    return model + batch, {"hit": 1.0}


class LossPlugin:
    @hookimpl
    def register_losses(self, register):
        register("demo.weighted", weighted, kind="token", help="a function")
        register("demo.scaled", Scaled, kind="token", help="a class")
        register("demo.pointer", pointer, kind="model", help="model-level")

    @hookimpl
    def register_rewards(self, register):
        register("demo.bad-kind-is-not-here", lambda completions, **_: [0.0])


class BadKind:
    @hookimpl
    def register_losses(self, register):
        register("bad.loss", weighted, kind="logits")


@pytest.fixture
def losses():
    reg = registry.build_registry(
        extra=[("demo", LossPlugin()), ("bad", BadKind())], entry_points=False
    )
    with registry.use_registry(reg):
        yield reg


def job(**trainer):
    return TrainJob(model=ModelConfig(), trainer=TrainerConfig(**trainer), run=None, train_rows=[])


def test_registered_losses_resolve_with_their_kind_and_options(losses):
    assert registry.get_loss("demo.pointer").meta["kind"] == "model"
    fn = resolve_loss("demo.weighted", {"weight": 3.0})
    assert fn.kind == "token" and fn.name == "demo.weighted"
    assert isinstance(fn.fn, functools.partial) and fn.fn(2.0, None, {}) == 6.0
    built = resolve_loss(Ref.named("demo.scaled", {"scale": 5.0}))
    assert isinstance(built.fn, Scaled) and built.fn(2.0, None, {}) == 10.0
    assert resolve_loss("demo.pointer").fn(1, 2) == (3, {"hit": 1.0})
    # an import path is a token loss; a callable passes through; model_loss marks the kind
    assert resolve_loss(f"{__name__}:Scaled").fn.scale == 2.0
    assert resolve_loss(weighted) == Loss(weighted, "token", "weighted")
    assert model_loss(pointer).kind == "model"


def test_trainer_loss_names_the_loss_unless_the_job_sets_one(losses):
    assert job_loss(job()) is None
    named = job_loss(job(loss="demo.scaled", loss_options={"scale": 4.0}))
    assert named.fn.scale == 4.0
    own = TrainJob(
        model=ModelConfig(), trainer=TrainerConfig(loss="demo.scaled"), run=None,
        train_rows=[], loss=weighted,
    )  # fmt: skip
    assert job_loss(own).fn is weighted
    with pytest.raises(ConfigError, match="loss_options are set but trainer.loss is not"):
        job_loss(job(loss_options={"scale": 4.0}))
    with pytest.raises(ConfigError, match="model-level loss.*llamafactory backend takes token"):
        token_loss(job(loss="demo.pointer"), "llamafactory")


def test_a_bad_kind_fails_its_plugin_alone_and_unknown_names_say_what_to_install(losses):
    bad = next(p for p in losses.plugins if p.name == "bad")
    assert "kind='logits'" in bad.error and "kind='token'" in bad.error
    assert "demo.weighted" in losses.entries["losses"]
    with pytest.raises(PluginError, match="pip install aworld-rl-funreason"):
        resolve_loss("funreason.srml")
    with pytest.raises(PluginError, match=r"did you mean 'demo\.scaled'") as err:
        resolve_loss("demo.scaledd")
    assert "pip install" not in str(err.value)  # the package is installed; the name is wrong
