"""vLLM's own OpenAI server over a random tiny Qwen3, for the ``tests_vllm`` session (CPU).

:func:`write_servable_qwen3` saves ``tiny:qwen3:hidden=128,heads=2,positions=16384`` (head size
64, which vLLM's CPU attention supports; Qwen3's real tokenizer and core's training chat
template) to a directory. :class:`VllmServer` starts
``python -m vllm.entrypoints.openai.api_server --model DIR --enforce-eager`` on 127.0.0.1 with
hermes tool calling (and a reasoning parser when asked) in a process group of its own, tied to
this process (core's :mod:`~aworld_rl_core.children`), waits until a real chat completion comes
back, and stops it by its process group id, removing its cache directory.

A random model writes random text: tests force the shape they need with vLLM's
``structured_outputs`` (``{"regex": ...}`` in the request body, see :func:`forced`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from aworld_rl_core.children import reap_group_with_parent, release, tethered_popen_kwargs

SERVED_NAME = "tiny-qwen3"
STARTUP_TIMEOUT_S = 900.0


def write_servable_qwen3(directory: Path | str, seed: int = 0) -> Path:
    """A random tiny Qwen3 that vLLM serves on CPU, saved (weights, config, tokenizer with core's
    chat template) under ``directory``."""
    from aworld_rl_core.models.tiny import SERVABLE_QWEN3, TINY_PREFIX, tiny_model_dir

    source = tiny_model_dir(SERVABLE_QWEN3[len(TINY_PREFIX) :], seed=seed)
    target = Path(directory)
    shutil.copytree(source, target, dirs_exist_ok=True)
    return target


def forced(regex: str) -> dict[str, Any]:
    """The request fields that make vLLM's reply match ``regex`` (vLLM's structured outputs)."""
    return {"structured_outputs": {"regex": regex}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class VllmServer:
    """One vLLM OpenAI server process (module docstring). ``reasoning_parser`` (e.g. ``qwen3``)
    adds ``--reasoning-parser``; ``extra_args`` go to the server as they are."""

    def __init__(
        self,
        model_dir: Path | str,
        *,
        reasoning_parser: str | None = None,
        max_model_len: int = 4096,
        extra_args: list[str] | None = None,
        log_path: Path | str | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.reasoning_parser = reasoning_parser
        self.max_model_len = max_model_len
        self.extra_args = list(extra_args or [])
        self.port = free_port()
        self.cache_dir = Path(tempfile.mkdtemp(prefix="aworld-vllm-"))
        self.log_path = Path(log_path) if log_path else self.cache_dir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def model(self) -> str:
        return SERVED_NAME

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--enforce-eager",
            "--max-model-len",
            str(self.max_model_len),
            "--dtype",
            "float32",
            "--seed",
            "0",
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "hermes",
        ]
        if self.reasoning_parser:
            cmd += ["--reasoning-parser", self.reasoning_parser]
        return cmd + self.extra_args

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> VllmServer:
        """Start the server and wait until a chat completion comes back."""
        env = {
            **os.environ,
            "VLLM_TARGET_DEVICE": "cpu",
            "VLLM_CACHE_ROOT": str(self.cache_dir / "vllm"),
            "XDG_CACHE_HOME": str(self.cache_dir / "xdg"),
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        started = time.monotonic()
        log = self.log_path.open("wb")
        try:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                **tethered_popen_kwargs(),
            )
        finally:
            log.close()
        self._watchdog = reap_group_with_parent(self.process.pid)
        try:
            self._wait_ready(started + timeout_s)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        body = json.dumps(
            {
                "model": SERVED_NAME,
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 2,
            }
        ).encode()
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"vLLM exited with {self.process.returncode} before serving; its log "
                    f"({self.log_path}) ends:\n{self.log_tail()}"
                )
            request = urllib.request.Request(
                f"{self.base_url}/chat/completions",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    if response.status == 200 and json.loads(response.read())["choices"]:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, KeyError):
                pass
            time.sleep(1.0)
        raise TimeoutError(
            f"vLLM did not answer a chat completion in time; its log ends:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the server's process group (its id is the server's PID), SIGKILL after 20 s,
        then remove its cache directory."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)
            except ProcessLookupError:
                pass
        if self._watchdog is not None:
            release(self._watchdog)
            self._watchdog = None
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
