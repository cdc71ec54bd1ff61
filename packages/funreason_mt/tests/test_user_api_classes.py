"""ToolSpace is open to a user's own API classes, registered through core's plugin hook: the graph,
the sampler and synthesis work on them as on BFCL's."""

import asyncio
import random

import pytest
from mt_doubles import OracleClient, run_steps


@pytest.fixture
def notes_registry():
    from user_api import NotesPlugin

    from aworld_rl_core.registry import build_registry, use_registry

    with use_registry(build_registry([("notes", NotesPlugin())])) as reg:
        yield reg


def test_a_registered_class_is_a_tool_space(notes_registry):
    from aworld_rl_funreason_mt.discovery import build_graph
    from aworld_rl_funreason_mt.sampler import DirectedSampler
    from aworld_rl_funreason_mt.space import Session, ToolSpace
    from aworld_rl_funreason_mt.synthesis import Drop, SynthesisConfig, Synthesizer
    from aworld_rl_funreason_mt.trajectory import check_conversation

    space = ToolSpace(["notes.NotesAPI", "MathAPI"])
    assert set(space.tools_of(["notes.NotesAPI"])) == {"notes_login", "write_note", "read_note"}
    assert len(space.scenarios["notes.NotesAPI"]) == 2  # the states it was registered with
    graph = build_graph(space)
    # probing finds the login; the docs' note_id output feeds read_note's input
    assert "notes_login" in set().union(*graph.prerequisites("write_note").values())
    assert "write_note" in set().union(*graph.prerequisites("read_note").values())
    sampler = DirectedSampler(graph, space)
    with Session(["notes.NotesAPI"], space.initial_config(["notes.NotesAPI"], {})) as session:
        trace = sampler.sample(
            session, "read_note", random.Random(0), allowed=space.tools_of(["notes.NotesAPI"])
        )
    assert trace.tools[:3] == ["notes_login", "write_note", "read_note"], trace.call_strings
    synth = Synthesizer(
        space, graph, SynthesisConfig(rounds=2, classes_per_trajectory=(1,)), seed=2
    )
    kept = []
    for k in range(4):
        draft = synth.draft(f"n{k}")
        try:
            kept.append(asyncio.run(run_steps(synth, draft, OracleClient()))[0])
        except Drop:
            pass
        finally:
            draft.close()
    assert kept and all(check_conversation(t) for t in kept)


def test_an_unknown_class_names_the_hook():
    from aworld_rl_funreason_mt.space import ToolSpace

    with pytest.raises(ValueError, match="register_tool_apis"):
        ToolSpace(["NoSuchAPI"])
