"""A run directory belongs to one run: resume runs what it started, others are refused."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aworld_rl_core import cli
from aworld_rl_core.config import option, to_yaml
from aworld_rl_core.errors import AworldError
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.runs import RESUME_MAY_CHANGE, resume_config
from aworld_rl_core.trainer_config import TrainerConfig

SUPPORT = Path(__file__).parent / "support"


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def status(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


def test_resume_runs_the_saved_config(demo_registry, tmp_path, capsys):
    out = tmp_path / "run"
    start = ["demo.count", "--preset", "tiny-cpu", "optim.lr=0.5", "interrupt_at=2"]
    assert cli.main([*start, "--output-dir", str(out), "--quiet"]) == 130
    assert status(out)["resume"] == shlex.join(
        ["aworld-run", "demo.count", "--output-dir", str(out), "--resume"]
    )
    assert cli.main([*shlex.split(status(out)["resume"])[1:], "--quiet"]) == 0
    logged = metrics(out)
    # tiny-cpu's 4 steps, not 3; the demo keeps no checkpoint, so the resume counts from 0
    # again and its rows of steps 0 and 1 replace the interrupted run's (each step once)
    assert [r["step"] for r in logged] == [0, 1, 2, 3]
    assert {r["lr"] for r in logged} == {0.5}  # the override, not the preset's 0.001
    assert status(out)["status"] == "completed"


def test_resume_refuses_another_preset_or_override_showing_the_diff(
    demo_registry, tmp_path, capsys
):
    out = tmp_path / "run"
    assert cli.main(["demo.count", "--preset", "tiny-cpu", "--output-dir", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["demo.count", "--output-dir", str(out), "--resume", "--preset", "paper"]) == 2
    err = capsys.readouterr().err
    assert "asks for another config than the run" in err
    assert "  steps: 4 (run) -> 100 (this command)" in err
    assert "  optim.schedule: 'cosine' (run) -> 'constant' (this command)" in err
    assert cli.main(["demo.count", "--output-dir", str(out), "--resume", "optim.lr=0.1"]) == 2
    assert "  optim.lr: 0.001 (run) -> 0.1 (this command)" in capsys.readouterr().err
    same = ["demo.count", "--output-dir", str(out), "--resume", "--preset", "tiny-cpu", "--quiet"]
    assert cli.main(same) == 0  # restating the same config is fine


@dataclass(frozen=True, kw_only=True)
class Trained:
    trainer: TrainerConfig = field(default_factory=TrainerConfig, metadata={"help": "t"})
    rounds: int = option(2, help="a budget a resume may raise", resumable=True)
    mode: str = option("v1", help="not resumable")


def test_only_the_documented_keys_may_change_on_resume(tmp_path):
    (tmp_path / "config.yaml").write_text(to_yaml(Trained()))
    assert "trainer.max_steps" in RESUME_MAY_CHANGE
    more = resume_config(tmp_path, Trained, overrides=["trainer.max_steps=20"])
    assert more.trainer.max_steps == 20
    with pytest.raises(AworldError, match=r"trainer\.seed: 42 \(run\) -> 3 \(this command\)"):
        resume_config(tmp_path, Trained, overrides=["trainer.max_steps=20", "trainer.seed=3"])
    assert resume_config(tmp_path, Trained, overrides=["rounds=5"]).rounds == 5  # resumable=True
    with pytest.raises(AworldError, match=r"mode: 'v1' \(run\) -> 'v3'"):
        resume_config(tmp_path, Trained, overrides=["mode=v3"])


def test_status_gives_the_exact_command(demo_registry, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["demo.count", "--preset", "tiny-cpu", "--output-dir", str(out), "--quiet", "steps=2"]
    assert cli.main(argv) == 0
    assert status(out)["command"] == shlex.join(["aworld-run", *argv])
    assert cli.main([*shlex.split(status(out)["command"])[1:], "--overwrite"]) == 0


def test_an_existing_run_is_refused_unless_overwrite(demo_registry, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["demo.count", "--output-dir", str(out), "--quiet"]) == 0
    assert cli.main(["demo.count", "--output-dir", str(out), "--quiet", "steps=5"]) == 2
    err = capsys.readouterr().err
    assert "already holds a run (status: completed)" in err and "--overwrite" in err
    assert [r["step"] for r in metrics(out)] == [0, 1, 2]  # untouched
    again = ["demo.count", "--output-dir", str(out), "--quiet", "steps=5", "--overwrite"]
    assert cli.main(again) == 0
    assert [r["step"] for r in metrics(out)] == [0, 1, 2, 3, 4]
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    assert cli.main(["demo.count", "--output-dir", str(other), "--overwrite"]) == 2
    assert "not empty and holds no run" in capsys.readouterr().err
    assert (other / "mine.txt").read_text() == "keep"


def start_sleeper(out: Path) -> subprocess.Popen:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SUPPORT)!r})\n"
        "from demo_plugin import DemoPlugin\n"
        "from aworld_rl_core import cli, registry\n"
        "reg = registry.build_registry(extra=[('demo', DemoPlugin())])\n"
        "with registry.use_registry(reg):\n"
        f"    sys.exit(cli.main(['demo.count', 'sleep_at=1', '--output-dir', {str(out)!r}]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "sleeping").exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the run never reached its sleep"
        time.sleep(0.1)
    return proc


def test_lock_and_sigterm(demo_registry, tmp_path, capsys):
    out = tmp_path / "run"
    proc = start_sleeper(out)
    try:
        assert cli.main(["demo.count", "--output-dir", str(out), "--resume", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"is in use by aworld-run (pid {proc.pid})" in err
        os.kill(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "interrupted (SIGTERM); resume with: aworld-run demo.count" in stderr
    record = status(out)
    assert (record["status"], record["signal"]) == ("interrupted", "SIGTERM")
    assert "Status: **interrupted**" in (out / "report.md").read_text()
    assert cli.main(["demo.count", "--output-dir", str(out), "--resume", "sleep_at=-1"]) == 2
    assert "sleep_at: 1 (run) -> -1 (this command)" in capsys.readouterr().err  # lock is free


@dataclass(frozen=True, kw_only=True)
class Judged:
    llm: LLMConfig = option(factory=LLMConfig, help="agent")
    judges: tuple[LLMConfig, ...] = option(
        factory=lambda: (LLMConfig(model="a"), LLMConfig(model="b")), help="judges"
    )


def test_where_a_model_is_served_may_change_on_resume_which_model_may_not(tmp_path):
    (tmp_path / "config.yaml").write_text(to_yaml(Judged()))
    moved = resume_config(tmp_path, Judged, overrides=["llm.base_url=http://10.0.0.2:8000/v1"])
    assert moved.llm.base_url == "http://10.0.0.2:8000/v1"
    with pytest.raises(AworldError, match=r"llm\.temperature: 0\.7 \(run\) -> 0\.0"):
        resume_config(tmp_path, Judged, overrides=["llm.temperature=0"])
    (tmp_path / "new.yaml").write_text(
        to_yaml(Judged(judges=(LLMConfig(model="a"), LLMConfig(model="b", base_url="http://x/v1"))))
    )
    kept = resume_config(tmp_path, Judged, config_file=tmp_path / "new.yaml")
    assert kept.judges[1].base_url == "http://x/v1"
    (tmp_path / "other.yaml").write_text(to_yaml(Judged(judges=(LLMConfig(model="c"),) * 2)))
    with pytest.raises(AworldError, match=r"judges\[0\]\.model: 'a' \(run\) -> 'c'"):
        resume_config(tmp_path, Judged, config_file=tmp_path / "other.yaml")
