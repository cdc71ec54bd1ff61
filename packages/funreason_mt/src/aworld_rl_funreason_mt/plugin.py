"""FunReason-MT's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl

_R = "aworld_rl_funreason_mt.recipes"


@hookimpl
def register_recipes(register):
    register(
        "funreason_mt.graph",
        config=f"{_R}.graph:GraphRecipeConfig",
        run=f"{_R}.graph:run",
        presets="aworld_rl_funreason_mt:configs/graph",
        help="Build the environment-API graph of BFCL's API classes (JSON, image, coverage).",
    )
    register(
        "funreason_mt.rl",
        config=f"{_R}.rl:RlRecipeConfig",
        run=f"{_R}.rl:run",
        presets="aworld_rl_funreason_mt:configs/rl",
        help="GRPO on synthesized BFCL-shaped entries in core's BFCL environment (binary reward).",
    )
    register(
        "funreason_mt.synthesize",
        config=f"{_R}.synthesize:SynthesizeConfig",
        run=f"{_R}.synthesize:run",
        presets="aworld_rl_funreason_mt:configs/synthesize",
        help="Phases I-III: hard multi-turn trajectories with per-stage yields (resumable).",
    )
    register(
        "funreason_mt.eval",
        config=f"{_R}.evaluate:EvalConfig",
        run=f"{_R}.evaluate:run",
        presets="aworld_rl_funreason_mt:configs/eval",
        help="BFCL multi-turn accuracy of a model, and on held-out synthesized entries.",
    )
    register(
        "funreason_mt.sft",
        config=f"{_R}.sft:SftRecipeConfig",
        run=f"{_R}.sft:run",
        presets="aworld_rl_funreason_mt:configs/sft",
        help="SFT on synthesized trajectories, split per assistant turn (hf-sft or LLaMA-Factory).",
    )


@hookimpl
def register_datasets(register):
    register(
        "funreason_mt.trajectories",
        "aworld_rl_funreason_mt.data:trajectories_dataset",
        help="synthesized trajectories (path=trajectories.jsonl or a synthesize run) as records.",
    )
