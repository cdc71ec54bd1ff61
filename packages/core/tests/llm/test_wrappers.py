"""The script and meter clients the evaluation recipes wrap around an agent."""

import asyncio

from aworld_rl_core.llm import Completion
from aworld_rl_core.llm.wrappers import MeteredClient, ScriptClient


def test_a_script_replies_in_order_then_with_empty_text():
    script = ScriptClient(["a", "b"])
    replies = [asyncio.run(script.chat([])).text for _ in range(3)]
    assert replies == ["a", "b", ""]


def test_the_meter_records_each_reply_tokens():
    class Counted:
        async def chat(self, messages, **sampling):
            return Completion(
                text="x", model="m", usage={"prompt_tokens": 7, "completion_tokens": 2}
            )

    meter = MeteredClient(Counted())
    assert asyncio.run(meter.chat([{"role": "user", "content": "hi"}])).text == "x"
    asyncio.run(MeteredClient(ScriptClient(["y"])).chat([]))  # no usage: zeros, no error
    ((prompt, completion, seconds),) = meter.usage
    assert (prompt, completion) == (7, 2) and seconds >= 0
