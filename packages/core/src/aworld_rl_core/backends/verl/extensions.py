"""Where paper packages register verl policy losses and advantage estimators.

Call these from a module your package declares under the ``verl.plugins`` entry-point group, so
that verl imports it in every process (the actor workers compute the loss, the trainer computes
advantages; registering in the driver alone is not enough)::

    # pyproject.toml: [project.entry-points."verl.plugins"]  mypkg = "mypkg.verl_plugin"
    from aworld_rl_core.backends.verl.extensions import register_policy_loss
    register_policy_loss("mypkg_weighted", weighted_policy_loss)

Select them with ``trainer.verl.policy_loss=mypkg_weighted`` /
``trainer.verl.adv_estimator=...``. Registering the same function twice is a no-op (a module can
be imported twice); a different function under a taken name is an error.

Signatures (verl 0.9.1, ``verl.trainer.ppo.core_algos``):
``loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
config=None, rollout_is_weights=None) -> (loss, metrics)`` and
``estimator(token_level_rewards, response_mask, config=None, index=None, **kw) ->
(advantages, returns)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _same(a: Any, b: Any) -> bool:
    return a is b or (
        getattr(a, "__module__", None) == getattr(b, "__module__", None)
        and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
    )


def _register(table: dict[str, Any], decorator: Callable[[str], Any], name: str, fn: Any) -> Any:
    current = table.get(name)
    if current is not None:
        if _same(current, fn):
            return current
        raise ValueError(
            f"verl already has '{name}' registered ({current.__module__}.{current.__qualname__}); "
            "choose another name, namespaced by your package"
        )
    return decorator(name)(fn)


def register_policy_loss(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``fn`` as verl policy loss ``name`` (``actor.policy_loss.loss_mode``)."""
    from verl.trainer.ppo import core_algos

    return _register(core_algos.POLICY_LOSS_REGISTRY, core_algos.register_policy_loss, name, fn)


def register_advantage_estimator(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``fn`` as verl advantage estimator ``name`` (``algorithm.adv_estimator``)."""
    from verl.trainer.ppo import core_algos

    return _register(core_algos.ADV_ESTIMATOR_REGISTRY, core_algos.register_adv_est, name, fn)
