"""Phases I-III end to end with the demo oracle, the replay gate, and every way a record drops."""

import asyncio

import pytest
from mt_doubles import OracleClient, ScriptClient, run_steps

from aworld_rl_funreason_mt.synthesis import Drop, Retry, SynthesisConfig, Synthesizer
from aworld_rl_funreason_mt.trajectory import Trajectory, replay


def synthesize(space, graph, key, **config):
    synth = Synthesizer(space, graph, SynthesisConfig(**config), seed=1)
    draft = synth.draft(key)
    try:
        return asyncio.run(run_steps(synth, draft, OracleClient()))
    finally:
        draft.close()


def test_oracle_trajectories_replay_and_pass_bfcl_judges(space, graph):
    from aworld_rl_core.tooluse.bfcl import entry_from_raw, judge_multi_turn
    from aworld_rl_core.tooluse.bfcl.reference import BfclReference

    kept, drops = [], []
    for n in range(8):
        try:
            kept.append(synthesize(space, graph, f"r{n}", rounds=2))
        except Drop as exc:
            drops.append(exc.reason)
    assert len(kept) >= 4, drops
    reference = BfclReference(__import__("tempfile").mkdtemp())
    for trajectory, _ in kept:
        entry = trajectory.bfcl_entry()
        assert len(entry["question"]) == len(entry["ground_truth"]) == 2
        assert replay(entry)
        bfcl = entry_from_raw(entry)
        assert judge_multi_turn(bfcl, entry["ground_truth"]).valid
        # bfcl-eval's own executor gives the recorded results, and its checker passes
        assert reference.execute(bfcl, entry["ground_truth"]) == entry["ground_truth_results"]
        assert reference.multi_turn_valid(bfcl, entry["ground_truth"])
        # the kept conversation: the bare query (no synthesis hints), the agent's real results
        first = trajectory.rounds[0]
        assert first.messages[0] == {"role": "user", "content": first.query}
        assert "Hint" not in str(
            [m["content"] for m in trajectory.messages() if m["role"] == "user"]
        )
        assert Trajectory.from_dict(trajectory.to_dict()).bfcl_entry() == entry


def test_the_critic_loop_and_the_regenerated_query_are_exercised(space, graph):
    logs = []
    for n in range(12):
        try:
            logs += synthesize(space, graph, f"c{n}", rounds=1)[1]
        except Drop:
            continue
    assert ("reason", 2) in logs, logs  # the oracle's deliberate first-attempt mistake
    assert ("query", 2) in logs, logs  # its deliberate tool-naming query, rejected once


def test_same_seed_same_trajectory(space, graph):
    a, _ = synthesize(space, graph, "same", rounds=2)
    b, _ = synthesize(space, graph, "same", rounds=2)
    assert a.to_dict() == b.to_dict()


def test_replay_gate_catches_a_changed_result(space, graph):
    trajectory, _ = synthesize(space, graph, "r0", rounds=1)
    entry = trajectory.bfcl_entry()
    entry["ground_truth_results"][0][-1] = '{"tampered": true}'
    verdict = replay(entry)
    assert not verdict and "recorded" in verdict.reason


def test_k_max_attempts_then_drop(space, graph):
    synth = Synthesizer(space, graph, SynthesisConfig(rounds=1, k_max=2), seed=1)
    draft = synth.draft("k")
    oracle = OracleClient()
    try:
        synth.sample(draft)
        asyncio.run(synth.make_tool(draft, oracle))
        draft.query = "Please do it."
        wrong = ScriptClient(["<think>no idea</think><answer>Sorry.</answer>"])
        with pytest.raises(Retry) as first:
            asyncio.run(synth.reason(draft, wrong, oracle))
        assert first.value.reason == "mismatch" and draft.hints == [first.value.feedback]
        with pytest.raises(Drop, match="reasoning_failed"):
            asyncio.run(synth.reason(draft, wrong, oracle))
        # the second attempt saw the first hint in its prompt
        assert "Hint from a reviewer" in wrong.seen[-1][-1]["content"]
        assert "Hint from a reviewer" not in wrong.seen[0][-1]["content"]
    finally:
        draft.close()


@pytest.mark.parametrize(
    "garbage",
    ["", "<think>", "\x00" * 40, "[" * 3000, "__import__('os').system('echo pwned')", "{}"],
)
def test_garbage_agents_give_retries_and_drops_never_crashes(space, graph, garbage):
    synth = Synthesizer(space, graph, SynthesisConfig(rounds=1, k_max=1), seed=1)
    draft = synth.draft("g")
    client = ScriptClient([garbage])
    try:
        synth.sample(draft)
        with pytest.raises(Retry):
            asyncio.run(synth.make_tool(draft, client))
        draft.tool = __import__("aworld_rl_funreason_mt.tooling", fromlist=["x"]).AdvancedTool(
            "t", "d", {"type": "object", "properties": {}}, {}
        )
        with pytest.raises(Retry):
            asyncio.run(synth.make_query(draft, client))
        draft.query = "Please do it."
        with pytest.raises(Drop, match="reasoning_failed"):
            asyncio.run(synth.reason(draft, client, client))
    finally:
        draft.close()


DETERMINISM_SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, {support!r})
from mt_doubles import OracleClient, run_steps
from aworld_rl_funreason_mt.discovery import build_graph
from aworld_rl_funreason_mt.space import ToolSpace
from aworld_rl_funreason_mt.synthesis import SynthesisConfig, Synthesizer
space = ToolSpace()
graph = build_graph(space)
synth = Synthesizer(space, graph, SynthesisConfig(rounds=2), seed=5)
draft = synth.draft("same")
trajectory, _ = asyncio.run(run_steps(synth, draft, OracleClient()))
print(json.dumps({{"graph": graph.to_dict(), "trajectory": trajectory.to_dict()}}, sort_keys=True))
"""


def test_graph_and_trajectory_do_not_depend_on_hash_seeds(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    support = str(Path(__file__).parent / "support")
    code = DETERMINISM_SCRIPT.format(support=support)
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]


def test_every_agent_call_is_seeded_by_its_record_not_by_what_ran_beside_it(
    space, graph, tmp_path, monkeypatch
):
    """Issue 29: after a kill and ``--resume``, 2 records of ``funreason_mt.synthesize`` (tiny-cpu,
    a sampling model) differed from the uninterrupted run: calls carried no seed, so a reply
    depended on the process's random state and on which records were in flight. Each call now
    has its record's seed: the same calls, with the same seeds, alone or four at a time."""
    from aworld_rl_funreason_mt.recipes import synthesize as recipe

    class Recording(OracleClient):
        def __init__(self):
            super().__init__()
            self.asked = []

        async def chat(self, messages, **sampling):
            self.asked.append((messages[-1]["content"], sampling.get("seed")))
            return await super().chat(messages, **sampling)

    def asked(concurrency):
        client = Recording()
        monkeypatch.setattr(
            recipe, "make_clients", lambda configs: (dict.fromkeys(configs, client), [])
        )
        cfg = recipe.SynthesizeConfig(records=4, concurrency=concurrency)
        synth = Synthesizer(space, graph, cfg.synthesis, seed=cfg.seed)
        items = [{"key": f"trajectory-{i:06d}"} for i in range(4)]
        configs = dict.fromkeys(recipe.ROLES)
        path = tmp_path / f"{concurrency}.jsonl"
        asyncio.run(recipe.run_pipeline(synth, cfg, configs, items, path))
        return sorted(client.asked)

    alone, together = asked(1), asked(4)
    assert alone and all(seed is not None for _, seed in alone)
    assert alone == together
    assert len({seed for _, seed in alone}) == len(alone)  # each call its own
