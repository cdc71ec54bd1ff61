"""The episode engine and its drivers' shared parts.

- :class:`Rollout`: the turn-by-turn state machine of a batch of episodes (``episode``).
- :class:`ChatCodec`: rendering and decoding with a chat template (``codec``).
- :func:`play` / :func:`play_many`: an LLM client plays environments (``play``).
- :func:`run_batched`: the loop of a synchronous batched generator (the trl driver).
- :class:`StepGatherer`: one ``step_many`` for the turns of concurrent episodes (verl).

The verl driver is ``aworld_rl_core.backends.verl.agent_loop``. Nothing here imports torch.
"""

from aworld_rl_core.engine.codec import ChatCodec, ModelTurn
from aworld_rl_core.engine.episode import Episode, Limits, Output, Rollout, Turn, run_batched
from aworld_rl_core.engine.gather import StepGatherer, gatherer_for
from aworld_rl_core.engine.play import play, play_many

__all__ = [
    "ChatCodec",
    "Episode",
    "Limits",
    "ModelTurn",
    "Output",
    "Rollout",
    "StepGatherer",
    "Turn",
    "gatherer_for",
    "play",
    "play_many",
    "run_batched",
]
