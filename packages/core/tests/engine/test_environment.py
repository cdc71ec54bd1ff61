"""``environment.step_many``: one call per environment class, results in input order."""

from __future__ import annotations

import pytest

from aworld_rl_core.environment import Step, step_many, stop_strings


class Echo:
    def __init__(self, name):
        self.name = name

    def step(self, text):
        return Step([{"role": "user", "content": f"{self.name}:{text}"}])


class Batched(Echo):
    batches: list[list[str]] = []

    @classmethod
    def step_many(cls, envs, texts):
        cls.batches.append(list(texts))
        return [Step(inline=f"<{e.name}>{t}") for e, t in zip(envs, texts, strict=True)]


def test_step_many_groups_by_class_and_keeps_the_order():
    envs = [Echo("a"), Batched("b"), Echo("c"), Batched("d")]
    steps = step_many(envs, ["1", "2", "3", "4"])
    assert [s.observation[0]["content"] if s.observation else s.inline for s in steps] == [
        "a:1", "<b>2", "c:3", "<d>4",
    ]  # fmt: skip
    assert Batched.batches == [["2", "4"]]  # one call for the batched class


def test_bad_answers_and_stop_strings_are_clear_errors():
    class Short(Batched):
        @classmethod
        def step_many(cls, envs, texts):
            return []

    with pytest.raises(ValueError, match="returned 0 steps for 1 texts"):
        step_many([Short("x")], ["t"])
    with pytest.raises(ValueError, match="2 environments for 1 texts"):
        step_many([Echo("a"), Echo("b")], ["t"])

    class Bad:
        stop = ("</a>", "")

    with pytest.raises(TypeError, match="non-empty strings"):
        stop_strings(Bad())
    Bad.stop = "</a>"
    assert stop_strings(Bad()) == ("</a>",) and stop_strings(object()) == ()
