"""Registrations only: lazy "module:attr" targets, nothing heavy imported here."""

from aworld_rl_core import hookimpl


@hookimpl
def register_datasets(register):
    register("mypaper.topics", "aworld_rl_mypaper.data:topics", help="toy topic rows")


@hookimpl
def register_environments(register):
    register("mypaper.describe", "aworld_rl_mypaper.env:DescribeEnv", help="one lowercase reply")


@hookimpl
def register_rewards(register):
    register("mypaper.lowercase", "aworld_rl_mypaper.reward:lowercase", help="lowercase share")


@hookimpl
def register_recipes(register):
    register(
        "mypaper.grpo",
        config="aworld_rl_mypaper.recipe:GrpoConfig",
        run="aworld_rl_mypaper.recipe:run",
        presets="aworld_rl_mypaper:configs/grpo",
        help="GRPO on the toy game (replace with your method).",
    )
