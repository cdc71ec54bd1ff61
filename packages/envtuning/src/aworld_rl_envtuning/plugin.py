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
        help="A BFCL multi-turn entry (row: entry_id) in EnvTuning's protocol (augmentation=...).",
    )


@hookimpl
def register_episode_parts(register):
    env = "aworld_rl_envtuning.env"
    register(
        "envtuning.protocol",
        f"{env}:protocol_part",
        role="protocol",
        help="think_json replies; EnvTuning's opening and result message",
    )
    register(
        "envtuning.feedback",
        f"{env}:feedback_part",
        role="feedback",
        help="format reminder, hints on failed calls (hint_packs), abstain-turn warning",
    )
    register(
        "envtuning.reward",
        f"{env}:reward_part",
        role="reward",
        help="an EnvTuning RewardSpec (name, denominator, ...) paid as running increments",
    )


@hookimpl
def register_datasets(register):
    register(
        "envtuning.split",
        "aworld_rl_envtuning.data:split_records",
        help="EnvTuning's split of the 800 BFCL multi-turn entries as tool-use records.",
    )


@hookimpl
def register_rewards(register):
    mod = "aworld_rl_envtuning.reward_fns"
    register("envtuning.progress", f"{mod}:progress", help="progress R_P (expected turns)")
    register("envtuning.format", f"{mod}:stage1_format", help="stage 1: I_tool*(R_format+R_tool)")
    register("envtuning.binary", f"{mod}:binary", help="1 when every turn passed")
    register("envtuning.mixed", f"{mod}:mixed", help="direct GRPO: 0.9 R_P + 0.1 R_format")
