"""SearchEnv in core's verl agent loop (``aworld_env``): the ``<information>`` block is masked 0
in ``response_mask`` and carries no log-probability; the server got the stop strings.

Runs where verl is installed (its pins differ from trl's: not in this package's test venv);
the LLM server is a test double answering the way vLLM does with ``stop``.
"""

import json

import pytest

pytest.importorskip("verl.trainer")

from aworld_rl_core.backends.verl.specs import SPEC_KEY, EpisodeSpec
from aworld_rl_core.refs import Ref
from aworld_rl_core.testing.verl_loop import agent_loop
from aworld_rl_rag_r1.observations import CLOSE, OPEN


class VllmDouble:
    """verl's server manager as a test double: search first, answer once passages came back."""

    def __init__(self, tokenizer, queries, answer):
        self.tokenizer, self.queries, self.answer, self.calls = tokenizer, queries, answer, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.calls.append(dict(sampling_params))
        seen = self.tokenizer.decode(prompt_ids)
        if CLOSE in seen:
            text = f"<think>found</think><answer> {self.answer} </answer>"
        else:
            text = f"<think>hops</think><search> {', '.join(self.queries)} </search>"
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


def test_information_is_masked_in_verl_agent_loop(hash_index, world, tiny_tokenizer):
    q = world[1][0]
    server = VllmDouble(tiny_tokenizer, q["decomposition"][:2], q["golden_answers"][0])
    loop = agent_loop(tiny_tokenizer, server, max_turns=6, response_length=4096)
    options = {"retriever": {"backend": "local", "index": str(hash_index)}}
    row = {"question": q["question"], "golden_answers": q["golden_answers"]}
    spec = EpisodeSpec(task=row, env=Ref("rag_r1.search", kwargs=options), max_new_tokens=64)
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}
    out = loop.loop.run_until_complete(
        loop.run(
            params,
            raw_prompt=[{"role": "user", "content": "x"}],
            extra_info={"index": 0, SPEC_KEY: spec.dumps()},
        )
    )
    ids, mask = list(out.response_ids), list(out.response_mask)
    masked = tiny_tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
    trained = tiny_tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 1])
    assert masked.startswith(OPEN) and masked.endswith(CLOSE)
    assert json.loads(masked[len(OPEN) : -len(CLOSE)])["query"] == q["decomposition"][:2]
    assert "<information>" not in trained and trained.startswith("<think>hops</think><search>")
    assert out.response_logprobs == [-0.5 if m else 0.0 for m in mask]
    assert out.reward_score == 1.0
    assert [c["stop"] for c in server.calls] == [["</search>", "</answer>"]] * 2
    assert out.extra_fields["env_info"]["searches"] == 1.0
