import fcntl
import json
import os
import subprocess
import sys

import yaml

from aworld_rl_core import cli
from aworld_rl_core.testing.contracts import heavy_modules_after


def test_show_config_prints_resolved_config(demo_registry, capsys):
    assert cli.main(["show-config", "demo.count", "--preset", "tiny-cpu", "optim.lr=0.5"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown == {
        "steps": 4,
        "name": "tiny",
        "tags": [],
        "limit": None,
        "interrupt_at": -1,
        "sleep_at": -1,
        "noisy": False,
        "optim": {"lr": 0.5, "schedule": "cosine"},
    }


def test_recipe_help_lists_fields_presets_and_defaults(demo_registry, capsys):
    assert cli.main(["demo.count", "--help"]) == 0
    out = capsys.readouterr().out
    assert "presets: paper, tiny-cpu" in out
    assert "optim.lr (float, default 1e-06)" in out and "learning rate" in out


def test_run_writes_run_directory(demo_registry, tmp_path, capsys):
    out_dir = tmp_path / "run"
    code = cli.main(["demo.count", "--preset", "tiny-cpu", "--output-dir", str(out_dir), "--quiet"])
    assert code == 0
    assert yaml.safe_load((out_dir / "config.yaml").read_text())["steps"] == 4
    lines = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["total"] for r in lines] == [0, 1, 3, 6] and [r["step"] for r in lines] == [
        0,
        1,
        2,
        3,
    ]
    assert json.loads((out_dir / "status.json").read_text())["status"] == "completed"
    report = (out_dir / "report.md").read_text()
    assert "| total | 6 |" in report and "counted to 6" in report
    assert (out_dir / "plots" / "total.png").stat().st_size > 0
    assert str(out_dir) in capsys.readouterr().out


def test_errors_are_one_line_with_nonzero_exit(demo_registry, tmp_path, capsys):
    assert cli.main(["demo.count", "optim.lrr=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aworld-run: error: unknown config key 'optim.lrr'; did you mean")
    assert "Traceback" not in err
    assert cli.main(["demo.cunt"]) == 2
    assert "did you mean 'demo.count'" in capsys.readouterr().err
    assert cli.main(["demo.count", "--preset", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["demo.count", "--output-dir", str(blocker / "sub"), "--quiet"]) == 2
    assert "cannot create the run directory" in capsys.readouterr().err


def test_interrupt_leaves_consistent_run_dir(demo_registry, tmp_path, capsys):
    out_dir = tmp_path / "run"
    code = cli.main(["demo.count", "interrupt_at=2", "--output-dir", str(out_dir), "--quiet"])
    assert code == 130
    status = json.loads((out_dir / "status.json").read_text())
    assert status["status"] == "interrupted" and "--resume" in status["resume"]
    assert len((out_dir / "metrics.jsonl").read_text().splitlines()) == 2
    assert "interrupted" in (out_dir / "report.md").read_text()
    assert cli.main(["demo.count", "--output-dir", str(out_dir), "--resume", "--quiet"]) == 0


def test_plugins_and_help_do_not_import_torch():
    code = (
        "import io, contextlib\n"
        "from aworld_rl_core import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['plugins']); cli.main(['core.bfcl-check', '--help'])\n"
    )
    assert heavy_modules_after(code) == []


def test_console_script_lists_core():
    out = subprocess.run(
        [sys.executable, "-m", "aworld_rl_core.cli", "plugins"], capture_output=True, text=True
    )
    assert "aworld-rl-core" in out.stdout and "core.bfcl-check" in out.stdout


def test_library_noise_goes_to_the_run_log(demo_registry, tmp_path, capfd):
    out_dir = tmp_path / "run"
    assert cli.main(["demo.count", "noisy=true", "--output-dir", str(out_dir), "--quiet"]) == 0
    out, err = capfd.readouterr()
    assert err == ""  # no FutureWarning, no library log line, no loading bar
    assert out.startswith("\ndemo.count: completed\n")  # --quiet: only the summary
    assert "  pass_rate: 99.8%\n" in out  # 1051 of 1053, not 100%
    assert f"  warnings: 3 (in {out_dir / 'run.log'})" in out
    log = (out_dir / "run.log").read_text()
    for line in ("this API is deprecated (demo)", "a library logs a warning (demo)"):
        assert line in log
    assert "transformers logs a warning (demo)" in log


def test_bad_config_input_is_one_line(demo_registry, tmp_path, capsys):
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    twice = tmp_path / "twice.yaml"
    twice.write_text("steps: 1\nsteps: 2\n")
    for args in (
        ["--config", str(latin)],
        ["--config", str(tmp_path)],
        ["--config", str(twice)],
        ["steps=[1,"],
        ["optim.lr=nan"],
        ["steps=-1e999"],
    ):
        assert cli.main(["demo.count", *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("aworld-run: error: ") and err.count("\n") == 1, err


def test_a_closed_pipe_ends_quietly():
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: a small pipe, as `| head` sees it
    proc = subprocess.Popen(
        [sys.executable, "-m", "aworld_rl_core.cli", "core.grpo", "--help"],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        assert reader.readline().startswith("aworld-run core.grpo")
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (0, "")


def test_preset_name_with_a_same_named_folder_in_the_cwd(demo_registry, tmp_path, monkeypatch):
    """`--preset tiny-cpu` with a `tiny-cpu/` folder in the working directory is the preset."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-cpu").mkdir()
    out_dir = tmp_path / "run"
    code = cli.main(["demo.count", "--preset", "tiny-cpu", "--output-dir", str(out_dir), "--quiet"])
    assert code == 0
    assert yaml.safe_load((out_dir / "config.yaml").read_text())["steps"] == 4


def test_the_summary_says_when_a_tiny_model_is_the_default():
    """A preset that forgets its model trains a random tiny one: the summary says so."""
    from dataclasses import dataclass, field

    from aworld_rl_core.models.config import ModelConfig

    @dataclass(frozen=True)
    class Judge:
        model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="Qwen/Qwen3"))

    @dataclass(frozen=True)
    class Cfg:
        model: ModelConfig = field(default_factory=ModelConfig)
        judge: Judge = field(default_factory=Judge)

    assert cli.tiny_model_notes(Cfg(), set()) == [
        "model.name_or_path: tiny:qwen3 is the recipe's default, not named by the preset or an "
        "override: a random tiny model, so these metrics say nothing of a real model; set "
        "model.name_or_path=<HF id or path>"
    ]
    assert cli.tiny_model_notes(Cfg(), {"model.name_or_path"}) == [
        "model.name_or_path: tiny:qwen3 (a random tiny model built from a config, no weights)"
    ]
    assert cli.tiny_model_notes(Cfg(model=ModelConfig(name_or_path="org/real")), set()) == []


def test_named_keys_read_the_preset_and_the_overrides():
    import argparse

    from aworld_rl_core import registry

    entry = registry.get_recipe("core.grpo")
    args = argparse.Namespace(preset="tiny-cpu", config=None, overrides=["trainer.seed=3"])
    named = cli._named_keys(entry, args)
    assert {"model.name_or_path", "trainer.rl.group_size", "trainer.seed"} <= named
    assert "model.dtype" not in named


def test_a_missing_extra_names_the_install_command(demo_registry, tmp_path, capsys, monkeypatch):
    from aworld_rl_core import runs

    def no_trl(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'trl'", name="trl")

    monkeypatch.setattr(runs, "execute", no_trl)
    assert cli.main(["demo.count", "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aworld-run: error: recipe 'demo.count': No module named 'trl'. ")
    assert "pip install 'aworld-rl-core[trl]'" in err


def test_the_hint_names_the_package_extra_that_pulls_core_s(monkeypatch):
    import importlib.metadata as md

    from aworld_rl_core import registry

    requires = {
        "aworld-rl-core": ['trl<1.17,>=1.16; extra == "trl"', 'pytest; extra == "test"'],
        "aworld-rl-mypaper": ["aworld-rl-core<0.2,>=0.1", 'aworld-rl-core[trl]; extra == "train"'],
        "aworld-rl-bare": ["aworld-rl-core<0.2,>=0.1"],
    }
    monkeypatch.setattr(md, "requires", lambda dist: requires[dist])
    hint = registry.missing_module_hint
    assert (
        hint("aworld-rl-mypaper", "trl")
        == "Install it with: pip install 'aworld-rl-mypaper[train]'"
    )
    assert (
        hint("aworld-rl-bare", "trl.trainer")
        == "Install it with: pip install 'aworld-rl-core[trl]'"
    )
    assert hint("aworld-rl-core", "trl") == "Install it with: pip install 'aworld-rl-core[trl]'"
    assert "Install the package that provides 'nope'" in hint("aworld-rl-bare", "nope")
