"""Core's own registrations: the training backends and core recipes."""

from aworld_rl_core.hookspecs import hookimpl


@hookimpl
def register_trainers(register):
    register(
        "trl", "aworld_rl_core.backends.trl_grpo:TrlGrpoBackend", help="TRL GRPO (CPU / 1 GPU)"
    )
    register("hf-sft", "aworld_rl_core.backends.hf_sft:HfSftBackend", help="transformers SFT")
    register("verl", "aworld_rl_core.backends.verl.backend:VerlBackend", help="verl on Ray (GPU)")
    register(
        "llamafactory",
        "aworld_rl_core.backends.llamafactory.backend:LlamaFactoryBackend",
        help="SFT through LLaMA-Factory",
    )


@hookimpl
def register_recipes(register):
    register(
        "core.bfcl-check",
        config="aworld_rl_core.recipes.bfcl_check:BfclCheckConfig",
        run="aworld_rl_core.recipes.bfcl_check:run",
        presets="aworld_rl_core:configs/bfcl-check",
        help="Replay BFCL ground truth through the tool-use runtime and judges (no model).",
    )
    register(
        "core.grpo",
        config="aworld_rl_core.recipes.grpo:GrpoRecipeConfig",
        run="aworld_rl_core.recipes.grpo:run",
        presets="aworld_rl_core:configs/grpo",
        help="GRPO on a toy multi-turn environment: checks a backend end to end.",
    )
