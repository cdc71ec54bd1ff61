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


_R = "aworld_rl_rag_r1.recipes"


@hookimpl
def register_recipes(register):
    register(
        "rag_r1.build-index",
        config=f"{_R}.build_index:BuildIndexConfig",
        run=f"{_R}.build_index:run",
        presets="aworld_rl_rag_r1:configs/build-index",
        help="Chunk a corpus into 100-word passages and build a FAISS or BM25 index (resumable).",
    )
    register(
        "rag_r1.serve",
        config=f"{_R}.serve:ServeConfig",
        run=f"{_R}.serve:run",
        presets="aworld_rl_rag_r1:configs/serve",
        help="Serve an index over HTTP (Search-R1's /retrieve), micro-batched; Ray Serve replicas.",
    )
    register(
        "rag_r1.train",
        config=f"{_R}.train:TrainConfig",
        run=f"{_R}.train:run",
        presets="aworld_rl_rag_r1:configs/train",
        help="RL of a multi-query search agent: verl PPO + GAE (paper), GRPO, or trl on CPU.",
    )
    register(
        "rag_r1.eval",
        config=f"{_R}.eval:EvalConfig",
        run=f"{_R}.eval:run",
        presets="aworld_rl_rag_r1:configs/eval",
        help="EM, F1, searches and latency per question of a search agent (any LLM client).",
    )
    register(
        "rag_r1.sft-data",
        config=f"{_R}.sft_data:SftDataConfig",
        run=f"{_R}.sft_data:run",
        presets="aworld_rl_rag_r1:configs/sft-data",
        help="An LLM plays the search loop: per-step SFT samples of correct answers + the RL pool.",
    )


@hookimpl
def register_environments(register):
    register(
        "rag_r1.search",
        "aworld_rl_rag_r1.env:make_env",
        help="RAG-R1's deep search: <search> (several queries) / <answer>, inline <information>.",
    )


@hookimpl
def register_datasets(register):
    register(
        "rag_r1.questions",
        "aworld_rl_rag_r1.qa:question_rows",
        help="RL / eval rows of a question file (path=..., format=auto|flashrag|hotpotqa|...).",
    )


@hookimpl
def register_smoke_parts(register):
    register(
        "rag_r1.train",
        "aworld_rl_rag_r1.smoke:train",
        help="RAG-R1 GRPO against the local flat index: finite loss, a checkpoint; a search "
        "reaches the index and every <information> token is loss-masked",
    )
