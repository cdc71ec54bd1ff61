import json
import subprocess
import sys

import yaml

from aworld_rl_core import cli


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
        "import sys, io, contextlib\n"
        "from aworld_rl_core import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['plugins']); cli.main(['core.bfcl-check', '--help'])\n"
        "heavy = ('torch', 'transformers', 'trl', 'bfcl_eval')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr


def test_console_script_lists_core():
    out = subprocess.run(
        [sys.executable, "-m", "aworld_rl_core.cli", "plugins"], capture_output=True, text=True
    )
    assert "aworld-rl-core" in out.stdout and "core.bfcl-check" in out.stdout
