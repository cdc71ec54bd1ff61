"""FunReason's part of core's smoke script (LLaMA-Factory + SRML), run by the script on CPU."""

import importlib.metadata
import json

import pytest

from aworld_rl_core import smoke


def test_llamafactory_part_runs_or_says_why_not(tmp_path, aworld_home):
    out = tmp_path / "smoke"
    code = smoke.main(
        ["--device", "cpu", "--out", str(out), "--parts", "funreason.llamafactory-srml"]
    )
    (row,) = json.loads((out / "smoke.json").read_text())
    assert code == 0, row
    try:
        importlib.metadata.version("llamafactory")
    except importlib.metadata.PackageNotFoundError:  # this package's own session
        assert row["status"] == "skip" and "llamafactory is not installed" in row["why"]
    else:  # LLaMA-Factory's environment: the plain half trains, ZeRO-3 waits for a GPU
        assert row["status"] == "pass" and row["plain_loss"] > 0, row
        assert row["zero3"] == "skipped: DeepSpeed ZeRO-3 needs a GPU"
    assert "funreason.llamafactory-srml" in smoke.default_parts()


@pytest.mark.parametrize("device", ["cpu"])
def test_zero3_half_needs_a_gpu(device, tmp_path, monkeypatch):
    from aworld_rl_funreason import smoke as part

    monkeypatch.setattr(part, "_installed", lambda dist: True)
    calls = []

    def train(name, device, model, out, extra):
        calls.append((name, extra))
        return {f"{name}_loss": 1.0}

    monkeypatch.setattr(part, "_train", train)
    got = part.llamafactory_srml(device, None, tmp_path)
    assert got == {"plain_loss": 1.0, "zero3": "skipped: DeepSpeed ZeRO-3 needs a GPU"}
    monkeypatch.delenv("RANK", raising=False)
    got = part.llamafactory_srml("cuda", None, tmp_path)
    assert got == {"plain_loss": 1.0, "zero3_loss": 1.0}
    # core's ZeRO-3 config; the backend launches it through torchrun (no rank faked here)
    assert calls[-1] == ("zero3", ["trainer.llamafactory.zero_stage=3"])
    import os

    assert "RANK" not in os.environ
