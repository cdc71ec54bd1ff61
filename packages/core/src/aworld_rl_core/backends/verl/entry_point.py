"""verl plugin (entry-point group ``verl.plugins``): loaded by every ``import verl``.

verl imports this module in the driver and in each Ray worker, so registrations made here exist
wherever verl looks them up. It registers our agent loop (``aworld_env``, driving aworld
``Environment``s) in verl's agent-loop registry. Our ``compute_score`` needs no registration (the
launcher points ``reward.custom_reward_function.path`` at ``pkg://`` of its module). Paper
packages register their policy losses and advantage estimators from their own ``verl.plugins``
module with ``aworld_rl_core.backends.verl.extensions``.

verl swallows errors raised while loading plugins (logged at DEBUG), so tests assert that the
registrations exist after ``import verl``.
"""

from aworld_rl_core.backends.verl import agent_loop as _agent_loop  # noqa: F401  (registers)
