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


def test_the_gatherer_steps_concurrent_episodes_together():
    import asyncio

    from aworld_rl_core.engine import StepGatherer

    Batched.batches.clear()

    async def main():
        gatherer = StepGatherer(window_s=0.05)
        envs = [Batched(str(i)) for i in range(16)]
        steps = await asyncio.gather(*(gatherer.step(e, f"t{i}") for i, e in enumerate(envs)))
        later = await gatherer.step(Echo("late"), "x")
        return gatherer, steps, later

    gatherer, steps, later = asyncio.run(main())
    assert gatherer.batches == [16, 1] and len(Batched.batches) == 1
    assert [s.inline for s in steps] == [f"<{i}>t{i}" for i in range(16)]
    assert later.observation[0]["content"] == "late:x"

    class Boom(Batched):
        @classmethod
        def step_many(cls, envs, texts):
            raise RuntimeError("service down")

    async def failing():
        gatherer = StepGatherer(window_s=0.01)
        return await asyncio.gather(
            *(gatherer.step(Boom(str(i)), "t") for i in range(3)), return_exceptions=True
        )

    errors = asyncio.run(failing())
    assert [str(e) for e in errors] == ["service down"] * 3
