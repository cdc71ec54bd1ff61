"""A scripted episode every driver must play identically (test doubles: environment and model).

``LookupEnv`` stops generation at ``</lookup>`` and answers inline (``<result>...</result>``
inside the same assistant turn); text with neither a lookup nor an answer gets a new user turn;
``<answer>...</answer>`` ends the episode. ``SCRIPT`` is what the model writes, turn by turn
(the first reply runs past its stop string, as a sampler does before it is cut).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aworld_rl_core.environment import Step

QUESTION = {"role": "user", "content": "What is the capital of France? Use <lookup>."}
HINT = {"role": "user", "content": "Write <lookup>query</lookup> or <answer>...</answer>."}
SCRIPT = [
    "<lookup>capital of France</lookup> and then more",
    "so it is Paris.",
    "<answer>Paris</answer> and so on",
]
FACTS = {"capital of France": "Paris"}


class LookupEnv:
    """The scripted episode's environment (see the module docstring)."""

    stop = ("</lookup>", "</answer>")
    played: list[list[str]] = []  # the model texts of every closed episode (drivers built inside)

    def __init__(self, row: Mapping[str, Any] | None = None, **options: Any) -> None:
        self.row = dict(row or {})
        self.texts: list[str] = []
        self.closed = False

    def reset(self) -> list[dict[str, Any]]:
        return [dict(QUESTION)]

    def step(self, model_text: str) -> Step:
        self.texts.append(model_text)
        lookup = re.search(r"<lookup>(.*?)</lookup>$", model_text)
        if lookup:
            found = FACTS.get(lookup.group(1).strip(), "nothing")
            return Step(inline=f"<result>{found}</result>", reward=0.1)
        answer = re.search(r"<answer>(.*?)</answer>", model_text)
        if answer:
            return Step(reward=float(answer.group(1) == "Paris"), done=True, info={"answered": 1})
        return Step([dict(HINT)], reward=-0.1)

    def close(self) -> None:
        if not self.closed:
            LookupEnv.played.append(list(self.texts))
        self.closed = True


EXPECTED_MESSAGES = [
    QUESTION,
    {"role": "assistant", "content": "<lookup>capital of France</lookup><result>Paris</result>"
     "so it is Paris."},
    HINT,
    {"role": "assistant", "content": "<answer>Paris</answer>"},
]  # fmt: skip
EXPECTED_TEXTS = ["<lookup>capital of France</lookup>", "so it is Paris.", "<answer>Paris</answer>"]
EXPECTED_REWARD = 0.1 - 0.1 + 1.0
EXPECTED_STEP_REWARDS = [0.1, -0.1, 1.0]


def scripted_ids(tokenizer: Any) -> list[list[int]]:
    """The model's sampled tokens per turn: the script, each closed by the end-of-turn token."""
    eos = tokenizer.eos_token_id
    return [[*tokenizer.encode(text, add_special_tokens=False), eos] for text in SCRIPT]


def expected_tokens(codec: Any) -> tuple[list[int], list[int]]:
    """The completion tokens and loss mask every token driver must produce, built by hand:
    turn 1 cut after ``</lookup>`` (mask 1), the inline result (0), turn 2 with its end-of-turn
    token (1), the hint as a new user turn (0), turn 3 through ``</answer>`` (1; no end-of-turn
    token, it stopped at the stop string)."""
    enc = codec.encode
    turn1 = enc("<lookup>capital of France</lookup>")
    assert enc(SCRIPT[0])[: len(turn1)] == turn1, "the stop string must end on a token boundary"
    inline = enc("<result>Paris</result>")
    turn2 = [*enc(SCRIPT[1]), codec.eos_id]
    hint = codec.observation_ids([HINT])
    turn3 = enc("<answer>Paris</answer>")
    parts = [(turn1, 1), (inline, 0), (turn2, 1), (hint, 0), (turn3, 1)]
    ids = [t for part, _ in parts for t in part]
    mask = [m for part, m in parts for _ in part]
    return ids, mask


def vllm_reply(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    """A chat-completion body as vLLM answers one with ``stop``: the text ends before the first
    stop string, which ``stop_reason`` names."""
    stops = [s for s in body.get("stop") or [] if s in text]
    finish, stop_reason = "stop", None
    if stops:
        stop_reason = min(stops, key=text.find)
        text = text[: text.find(stop_reason)]
    return {
        "id": "scripted",
        "object": "chat.completion",
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
                "stop_reason": stop_reason,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
