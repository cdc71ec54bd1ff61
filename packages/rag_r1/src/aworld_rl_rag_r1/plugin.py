"""RAG-R1's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl


@hookimpl
def register_rewards(register):
    mod = "aworld_rl_rag_r1.reward"
    register("rag_r1.em", f"{mod}:em_reward", help="1.0 when the last <answer> exactly matches")
    register("rag_r1.f1", f"{mod}:f1_reward", help="token F1 of the last <answer>")
    register(
        "rag_r1.em_format",
        f"{mod}:em_format_reward",
        help="EM with Search-R1's format score (0.2 valid / 0.1 invalid tag sequence)",
    )
