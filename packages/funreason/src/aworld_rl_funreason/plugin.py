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


@hookimpl
def register_trainers(register):
    register(
        "funreason.srml",
        "aworld_rl_funreason.loss:srml_default",
        help="SRML loss hook: 0.7 * L_think + 0.3 * L_result, per-sample means (hf-sft).",
    )
