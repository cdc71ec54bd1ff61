import pytest

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
