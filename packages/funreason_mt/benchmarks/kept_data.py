"""Is the kept data right? Kept conversations judged by bfcl-eval's own checker and played in the
RL environment, for the demo oracle and a reverse-order reasoner, with and without the
conversation gate.

The reverse-order reasoner is the demo oracle whose reasoning answers issue the trace's calls in
reverse order (one plausible mistake; a stand-in for a model, not a model). Each configuration
synthesizes ``--records`` two-round trajectories in-process; every kept conversation's calls go
through bfcl-eval's ``multi_turn_checker`` (core's ``BfclReference``) and are played, message by
message, in ``core.bfcl-multi-turn`` (the package's RL environment). ``gate off`` is the earlier
reading: the order-free call-set match, random calls after a uniformly drawn target.
Run: ``python packages/funreason_mt/benchmarks/kept_data.py [--records 20] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import parse_args
from aworld_rl_funreason_mt.demo import DemoOracle
from aworld_rl_funreason_mt.sampler import SamplerConfig
from aworld_rl_funreason_mt.synthesis import Drop, Retry, SynthesisConfig, Synthesizer


class ReverseOracle(DemoOracle):
    """The demo oracle issuing the trace's calls in reverse order (a stand-in reasoner)."""

    def order(self, calls: list[str]) -> list[str]:
        return list(reversed(calls))


class _Client:
    def __init__(self, oracle: DemoOracle) -> None:
        self.oracle = oracle

    async def chat(self, messages: Any, **_: Any) -> Any:
        from aworld_rl_core.llm import Completion

        return Completion(text=self.oracle({"messages": messages}), model="oracle")


async def _steps(synth: Synthesizer, draft: Any, client: Any) -> Any:
    for _ in range(synth.config.rounds):
        synth.sample(draft)
        for step in (synth.make_tool, synth.make_query):
            feedback = ""
            for _attempt in range(3):
                try:
                    await step(draft, client, feedback)
                    break
                except Retry as exc:
                    feedback = exc.feedback
            else:
                raise Drop("bad_reply")
        synth.guard(draft)
        while True:
            try:
                await synth.reason(draft, client, client)
                break
            except Retry:
                continue
    return synth.finish(draft)


def play(trajectory: Any) -> float:
    from aworld_rl_core.tooluse.bfcl.environment import env_from_row
    from aworld_rl_funreason_mt.export import rl_rows

    env = env_from_row(rl_rows([trajectory])[0])
    env.reset()
    reward = 0.0
    try:
        for message in trajectory.messages():
            if message["role"] == "assistant":
                step = env.step(message["content"])
                reward = step.reward if step.done else 0.0
    finally:
        env.close()
    return reward


def measure(space: Any, graph: Any, oracle: type, records: int, **config: Any) -> dict[str, Any]:
    from aworld_rl_core.tooluse.bfcl import entry_from_raw
    from aworld_rl_core.tooluse.bfcl.reference import BfclReference

    synth = Synthesizer(space, graph, SynthesisConfig(rounds=2, **config), seed=7)
    kept = []
    for k in range(records):
        draft = synth.draft(f"b{k}")
        try:
            kept.append(asyncio.run(_steps(synth, draft, _Client(oracle()))))
        except Drop:
            pass
        finally:
            draft.close()
    reference = BfclReference(tempfile.mkdtemp())
    passing = sum(
        reference.multi_turn_valid(entry_from_raw(t.bfcl_entry()), t.conversation_calls())
        for t in kept
    )
    return {
        "records": records,
        "kept": len(kept),
        "kept_passing_bfcl_checker": passing,
        "kept_scoring_1_in_rl_env": sum(play(t) == 1.0 for t in kept),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from aworld_rl_funreason_mt.discovery import build_graph
    from aworld_rl_funreason_mt.space import ToolSpace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20, help="trajectories per configuration")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parse_args(parser, argv, short={"records": 2})
    space = ToolSpace()
    graph = build_graph(space)
    loose = SamplerConfig(after_target="random", target_choice="uniform")
    configs = {
        "demo oracle, gate on": (DemoOracle, {}),
        "reverse reasoner, gate on": (ReverseOracle, {}),
        "reverse reasoner, gate on, loose sampler": (ReverseOracle, {"sampler": loose}),
        "reverse reasoner, gate off, loose sampler": (
            ReverseOracle,
            {"sampler": loose, "conversation_gate": False},
        ),
    }
    figures = {
        name: measure(space, graph, oracle, args.records, **cfg)
        for name, (oracle, cfg) in configs.items()
    }
    print("| configuration | records | kept | kept passing bfcl-eval's checker | reward 1 |")
    print("|---|---|---|---|---|")
    for name, f in figures.items():
        print(
            f"| {name} | {f['records']} | {f['kept']} | {f['kept_passing_bfcl_checker']} | "
            f"{f['kept_scoring_1_in_rl_env']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
