import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "support"))

pytest.importorskip("bfcl_eval")


@pytest.fixture(scope="session")
def space():
    from aworld_rl_funreason_mt.space import ToolSpace

    return ToolSpace()


@pytest.fixture(scope="session")
def graph(space):
    """The environment-API graph of the eight BFCL classes (built once per test session)."""
    from aworld_rl_funreason_mt.discovery import build_graph

    return build_graph(space)


@pytest.fixture(scope="session")
def message_trace(graph, space):
    """add_contact -> message_login -> send_message in the default MessageAPI state (seed 0)."""
    import random

    from aworld_rl_funreason_mt.sampler import DirectedSampler
    from aworld_rl_funreason_mt.space import Session

    sampler = DirectedSampler(graph, space)
    with Session(["MessageAPI"], space.initial_config(["MessageAPI"], {})) as session:
        trace = sampler.sample(
            session, "send_message", random.Random(0), allowed=space.tools_of(["MessageAPI"])
        )
    assert trace.tools == ["add_contact", "message_login", "send_message"], trace.tools
    return trace


@pytest.fixture
def oracle_client():
    from mt_doubles import OracleClient

    return OracleClient()


@pytest.fixture(scope="session")
def demo_trajectories(space, graph):
    """Trajectories the demo oracle makes (two rounds each), for the export tests."""
    import asyncio

    from mt_doubles import OracleClient, run_steps

    from aworld_rl_funreason_mt.synthesis import Drop, SynthesisConfig, Synthesizer

    synth = Synthesizer(space, graph, SynthesisConfig(rounds=2, error_rate=0.5), seed=3)
    kept = []
    for n in range(10):
        draft = synth.draft(f"x{n}")
        try:
            kept.append(asyncio.run(run_steps(synth, draft, OracleClient()))[0])
        except Drop:
            continue
        finally:
            draft.close()
    assert len(kept) >= 3
    return kept
