"""Registrations only: lazy "module:attr" targets, nothing heavy imported here."""

from aworld_rl_core import hookimpl


@hookimpl
def register_rewards(register):
    register("mypaper.exact", "aworld_rl_mypaper.reward:exact_match", help="1.0 on an exact match")


@hookimpl
def register_recipes(register):
    register(
        "mypaper.score",
        config="aworld_rl_mypaper.recipe:ScoreConfig",
        run="aworld_rl_mypaper.recipe:run",
        presets="aworld_rl_mypaper:configs/score",
        help="Score fixed answers with the package's reward (replace with your method).",
    )
