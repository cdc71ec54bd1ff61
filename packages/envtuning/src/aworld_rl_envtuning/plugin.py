"""EnvTuning's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl

_R = "aworld_rl_envtuning.recipes"


@hookimpl
def register_recipes(register):
    register(
        "envtuning.curriculum",
        config=f"{_R}.curriculum:CurriculumConfig",
        run=f"{_R}.curriculum:run_curriculum",
        presets="aworld_rl_envtuning:configs/curriculum",
        help="EnvTuning's four-stage RL curriculum on BFCL multi-turn, then held-out evaluation.",
    )
    register(
        "envtuning.stage",
        config=f"{_R}.curriculum:StageRecipeConfig",
        run=f"{_R}.curriculum:run_single_stage",
        presets="aworld_rl_envtuning:configs/stage",
        help="One EnvTuning curriculum stage from a given checkpoint.",
    )
    register(
        "envtuning.eval",
        config=f"{_R}.evaluate:EvalConfig",
        run=f"{_R}.evaluate:run",
        presets="aworld_rl_envtuning:configs/eval",
        help="BFCL multi-turn accuracy of an agent in EnvTuning's protocol (any LLM client).",
    )
    register(
        "envtuning.augment",
        config=f"{_R}.augment:AugmentConfig",
        run=f"{_R}.augment:run",
        presets="aworld_rl_envtuning:configs/augment",
        help="Semi-automatic hints: mine failures, generate hints, judge them, write a hint pack.",
    )


@hookimpl
def register_environments(register):
    register(
        "envtuning.bfcl",
        "aworld_rl_envtuning.env:make_env",
        help="A BFCL multi-turn entry in EnvTuning's protocol (entry_id=..., augmentation=...).",
    )


@hookimpl
def register_datasets(register):
    register(
        "envtuning.split",
        "aworld_rl_envtuning.data:split_records",
        help="EnvTuning's split of the 800 BFCL multi-turn entries as tool-use records.",
    )
