"""A dead model server fails funreason_mt.synthesize (status failed, with the reason) instead
of completing with nothing kept."""

from __future__ import annotations

import json
import socket

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.llm import LLMRunError
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute


def test_a_dead_server_fails_the_synthesis(tmp_path, aworld_home):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once closed
    entry = get_recipe("funreason_mt.synthesize")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=[
            "agents.llm.provider=openai",
            f"agents.llm.base_url=http://127.0.0.1:{port}/v1",
            "agents.llm.max_retries=0",
        ],
    )
    with pytest.raises(LLMRunError, match="cannot reach the model server"):
        execute(
            "funreason_mt.synthesize", entry.run_fn(), cfg, output_dir=tmp_path / "r", quiet=True
        )
    status = json.loads((tmp_path / "r" / "status.json").read_text())
    assert status["status"] == "failed" and "cannot reach the model server" in status["error"]
