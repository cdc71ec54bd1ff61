"""A learnable alpha under DDP: 2 gloo processes on CPU through ``hf-sft`` (torchrun)."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "support" / "ddp_alpha.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _train(directory: Path, *extra: str) -> dict[int, list[float]]:
    """Run the script on 2 ranks; each rank's alpha after every step."""
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
        str(SCRIPT), str(directory), *extra,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    alphas = {}
    for rank in (0, 1):
        lines = (directory / f"rank{rank}.jsonl").read_text().splitlines()
        alphas[rank] = [json.loads(x)["loss_alpha"] for x in lines if "loss_alpha" in x]
    return alphas


def _saved_alpha(checkpoint: Path) -> float:
    import torch

    state = torch.load(checkpoint / "loss_state.pt")
    return float(torch.sigmoid(state["alpha_module.raw"]))


def test_both_ranks_hold_the_same_alpha_and_the_saved_one_is_it(tmp_path):
    alphas = _train(tmp_path)
    assert len(alphas[0]) == len(alphas[1]) == 2
    assert alphas[0] == alphas[1]  # bit-identical after each step
    assert abs(alphas[0][-1] - 0.7) > 1e-3  # its own lr (0.05): at the model's 1e-4, < 1e-4
    assert math.isclose(_saved_alpha(tmp_path / "checkpoints/checkpoint-2"), alphas[0][-1])
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model" / "model.safetensors"), "pt") as fh:
        names = fh.keys()
    assert names and not [k for k in names if "aworld_token_loss" in k]  # model weights only


@pytest.mark.slow
def test_without_the_reduction_the_ranks_drift_apart(tmp_path):
    alphas = _train(tmp_path, "no-reduce")
    assert abs(alphas[0][-1] - alphas[1][-1]) > 1e-5  # each rank saw other samples
