"""FunReason's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl

_R = "aworld_rl_funreason.recipes"


@hookimpl
def register_recipes(register):
    register(
        "funreason.refine",
        config=f"{_R}.refine:RefineConfig",
        run=f"{_R}.refine:run",
        presets="aworld_rl_funreason:configs/refine",
        help="FCDR: five-stage LLM-judged refinement of function-calling data (+ CoT writing).",
    )
    register(
        "funreason.sft",
        config=f"{_R}.sft:SftRecipeConfig",
        run=f"{_R}.sft:run",
        presets="aworld_rl_funreason:configs/sft",
        help="SFT on CoT function-calling data with the SRML loss (hf-sft or LLaMA-Factory).",
    )
    register(
        "funreason.self-refine",
        config=f"{_R}.self_refine:SelfRefineConfig",
        run=f"{_R}.self_refine:run",
        presets="aworld_rl_funreason:configs/self-refine",
        help="v1 self-refinement (FCDR-filtered) or v3 hard-data re-sampling (judge panel).",
    )
    register(
        "funreason.eval",
        config=f"{_R}.evaluate:EvalConfig",
        run=f"{_R}.evaluate:run",
        presets="aworld_rl_funreason:configs/eval",
        help="BFCL single-turn accuracy (think stripped, AST judge, BFCL aggregation).",
    )


@hookimpl
def register_losses(register):
    register(
        "funreason.srml",
        "aworld_rl_funreason.loss:SRMLLoss",
        kind="token",
        help="SRML: alpha * L_think + (1 - alpha) * L_result, per-sample part means; options "
        "alpha=0.7, learnable=false, parametrization=sigmoid, reduction=per_sample, "
        "alpha_lr=0.001 (a learnable alpha's own learning rate; null: the model's).",
    )


@hookimpl
def register_datasets(register):
    register(
        "funreason.samples",
        "aworld_rl_funreason.datasets:samples_dataset",
        help="xLAM / FunReason / refined samples (path=...) as records with the BFCL prompt.",
    )
    register(
        "funreason.bfcl",
        "aworld_rl_funreason.datasets:bfcl_dataset",
        help="a BFCL single-turn category (category=...) as records.",
    )


@hookimpl
def register_smoke_parts(register):
    register(
        "funreason.llamafactory-srml",
        "aworld_rl_funreason.smoke:llamafactory_srml",
        help="SRML through LLaMA-Factory, plain and ZeRO-3 on one GPU (skipped without "
        "llamafactory installed)",
    )
