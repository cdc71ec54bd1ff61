"""Test doubles and scaffolds shared by the FunReason-MT tests."""


class OracleClient:
    """TEST DOUBLE: the demo oracle answered in-process, with the LLM client's chat shape."""

    def __init__(self, oracle=None):
        from aworld_rl_funreason_mt.demo import DemoOracle

        self.oracle = oracle or DemoOracle()
        self.model = "demo-oracle"
        self.calls = 0

    async def chat(self, messages, **_):
        from aworld_rl_core.llm import Completion

        self.calls += 1
        return Completion(text=self.oracle({"messages": messages}), model=self.model)


class ReverseOracle:
    """TEST DOUBLE: the demo oracle, except that its reasoning answers issue the trace's calls
    in reverse order (one plausible mistake a model makes; it never learns from a hint)."""

    def __new__(cls):
        from aworld_rl_funreason_mt.demo import DemoOracle

        class _Reverse(DemoOracle):
            def order(self, calls):
                return list(reversed(calls))

        return _Reverse()


class ScriptClient:
    """TEST DOUBLE: replies from a list, in order (then the last one again)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.seen = []

    async def chat(self, messages, **_):
        from aworld_rl_core.llm import Completion

        self.seen.append([dict(m) for m in messages])
        text = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return Completion(text=text, model="script")


async def run_steps(synth, draft, agents, *, attempts=3):
    """TEST SCAFFOLD: a record's stages in order with retries (core's pipeline does this)."""
    from aworld_rl_funreason_mt.synthesis import Retry

    log = []
    for _ in range(synth.config.rounds):
        synth.sample(draft)
        for name, step in (
            ("tool", lambda fb: synth.make_tool(draft, agents, fb)),
            ("query", lambda fb: synth.make_query(draft, agents, fb)),
        ):
            feedback = ""
            for attempt in range(attempts):
                try:
                    await step(feedback)
                    log.append((name, attempt + 1))
                    break
                except Retry as exc:
                    feedback = exc.feedback
            else:
                raise AssertionError(f"{name} never passed: {feedback}")
        synth.guard(draft)
        while True:
            try:
                await synth.reason(draft, agents, agents)
                log.append(("reason", draft.attempt))
                break
            except Retry:
                continue
    return synth.finish(draft), log


def play_in_rl_env(trajectory):
    """TEST SCAFFOLD: the kept conversation's assistant messages, in order, played in the
    package's RL environment (core's ``core.bfcl-multi-turn`` on the trajectory's RL row);
    returns the final step (its reward and info)."""
    from aworld_rl_core.tooluse.bfcl.environment import env_from_row
    from aworld_rl_funreason_mt.export import rl_rows

    env = env_from_row(rl_rows([trajectory])[0])
    env.reset()
    step = None
    try:
        for message in trajectory.messages():
            if message["role"] == "assistant":
                assert step is None or not step.done, "the episode ended before the conversation"
                step = env.step(message["content"])
    finally:
        env.close()
    return step
