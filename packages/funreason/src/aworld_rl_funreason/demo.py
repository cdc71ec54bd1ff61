"""DEMO ONLY: a scripted sampler for ``funreason.self-refine`` on a CPU (``demo_sampler=true``).

It is not a model. Served by core's scripted OpenAI-compatible server, it answers each query
with that sample's own reasoning and reference call, and breaks the call of every second query
(the closing bracket dropped), so FCDR has answers to keep and answers to reject and the round
trains on what passed. Data it yields is the input data again: use it to try the loop, never to
train a model you mean to keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aworld_rl_funreason.data import FcSample, render_target

MODEL = "funreason-demo-sampler"


class DemoSampler:
    """The reply function for ``ScriptedLLMServer``: a query's reference, or a broken one."""

    def __init__(self, samples: Sequence[FcSample]) -> None:
        self.replies: dict[str, str] = {}
        for i, sample in enumerate(samples):
            answer = sample.answer if i % 2 == 0 else sample.answer.rstrip("]")
            self.replies[sample.query] = render_target(sample.reasoning, answer)

    def __call__(self, body: dict[str, Any]) -> str:
        query = body["messages"][-1]["content"]
        return self.replies.get(query, "I cannot answer that.")
