"""RAG-R1's part of core's smoke run (``python -m aworld_rl_core.smoke``): retrieval RL.

``rag_r1.train`` (trl GRPO, ``tiny-cpu`` settings) trains against the in-process flat index of
the synthetic world: the loss is finite and a checkpoint is saved. Against a local flat index
(the same builder, hashed encoder) one episode whose searches are written by hand runs through
core's engine: the search reaches the index and every ``<information>`` token is loss-masked.
With ``--model`` (an SFT checkpoint that searches) the training episodes must search too; the
tiny random model rarely writes a ``<search>`` tag, so on it the count is only reported.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

DOCS = [
    {"id": "d1", "title": "Harbour town", "text": "The harbour town has a red lighthouse."},
    {"id": "d2", "title": "Mountain village", "text": "The mountain village has a stone bridge."},
    {"id": "d3", "title": "River city", "text": "The river city has a glass market hall."},
]


class _SearchThenAnswer:
    """One search, then the answer (text written by hand, tokenised for real)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.turns = tokenizer, 0

    def __call__(self, turns: Any) -> list[Any]:
        from aworld_rl_core.engine import Output

        out = []
        for _ in turns:
            self.turns += 1
            text = (
                "<think>look it up</think><search> lighthouse </search>"
                if self.turns == 1
                else "<think>found</think><answer> Harbour town </answer>"
            )
            out.append(Output(ids=self.tokenizer.encode(text, add_special_tokens=False)))
        return out


SMOKE_SIZE = (
    # one small GRPO step: no warm start, world tokenizer or held-out points (the tiny-cpu
    # preset's learning run takes minutes; the model given is used as it is)
    "warm_start.steps=0",
    "warm_start.questions=0",
    "warm_start.world_tokenizer=false",
    "data.heldout=0",
    "data.validation=0",
    "data.limit=2",
    "trainer.max_steps=1",
    "trainer.batch_size=1",
    "trainer.micro_batch_size=2",
    "trainer.rl.group_size=2",
    "trainer.rl.max_turns=2",
    "trainer.rl.max_new_tokens=8",
    "env.max_search_turns=1",
    "world.synthetic.questions=8",
)


def _masked_information(out: Path) -> dict[str, Any]:
    from aworld_rl_core.engine import ChatCodec, Limits, Rollout, run_batched
    from aworld_rl_core.models import tiny_tokenizer
    from aworld_rl_core.resources import clear
    from aworld_rl_rag_r1.corpus import passages
    from aworld_rl_rag_r1.encoders import EncoderConfig, load_encoder
    from aworld_rl_rag_r1.env import SearchEnv, SearchEnvConfig
    from aworld_rl_rag_r1.index import IndexConfig, build_index
    from aworld_rl_rag_r1.retrieval import RetrieverConfig

    index = out / "flat-index"
    encoder = load_encoder(EncoderConfig(name_or_path="hash", hash_dim=32))
    build_index(passages(DOCS), index, IndexConfig(), encoder, log=lambda _: None)
    tokenizer = tiny_tokenizer()
    clear("rag_r1.search")
    cfg = SearchEnvConfig(
        retriever=RetrieverConfig(backend="local", index=str(index), cache=False),
        obs_tokenizer="tiny:qwen3",
    )
    row = {"question": "Which town has a lighthouse?", "golden_answers": ["Harbour town"]}
    rollout = Rollout(
        [SearchEnv(row, cfg)],
        Limits(max_turns=3, max_new_tokens=64, max_response_tokens=2048),
        codec=ChatCodec(tokenizer),
    )
    [episode] = run_batched(rollout, _SearchThenAnswer(tokenizer))
    env = rollout.envs[0]
    clear("rag_r1.search")
    searches, obs = env.counters.searches, env.counters.obs_tokens
    assert searches > 0, "the hand-written search never reached the index"
    masked = sum(1 for m in episode.loss_mask if m == 0)
    assert obs > 0 and masked == obs, f"{masked} loss-masked tokens, {obs} <information> tokens"
    content = json.dumps(episode.messages)
    assert "<information>" in content, "no <information> block in the episode"
    return {"index_searches": searches, "information_tokens_masked": masked}


def train(device: str, model: str | None, out: Path) -> dict[str, Any]:
    from aworld_rl_core import registry
    from aworld_rl_core.config import load_config
    from aworld_rl_core.runs import execute

    detail = _masked_information(out)
    entry = registry.get_recipe("rag_r1.train")
    overrides = [
        f"model.name_or_path={model or 'tiny:qwen3'}",
        f"model.dtype={'bfloat16' if device == 'cuda' else 'float32'}",
        f"env.retriever.device={'cuda' if device == 'cuda' else 'cpu'}",
        *SMOKE_SIZE,
    ]
    cfg = load_config(entry.config_cls(), preset="tiny-cpu", presets=entry.presets,
                      overrides=overrides)  # fmt: skip
    result, run = execute("rag_r1.train", entry.run_fn(), cfg, output_dir=out / "run", quiet=True)
    loss = result.metrics.get("train_loss", math.nan)
    assert math.isfinite(loss), f"train loss {loss} is not finite"
    assert result.checkpoints, "no checkpoint was saved"
    logged = [json.loads(x) for x in (run.dir / "metrics.jsonl").read_text().splitlines() if x]
    searches = max((v for m in logged for k, v in m.items() if k.endswith("searches")), default=0)
    if model:  # an SFT checkpoint searches; the tiny random model rarely does
        assert searches > 0, "the training episodes never searched"
    return {**detail, "train_loss": loss, "training_searches": searches}
