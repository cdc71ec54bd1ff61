import json
import subprocess
import sys

HEAVY = ["torch", "transformers", "selenium", "pyautogui", "PIL", "scipy", "numpy"]


def test_plugin_and_recipe_help_import_nothing_heavy():
    code = (
        "import json, sys\n"
        "from aworld_rl_core import registry\n"
        "from aworld_rl_core.config import describe\n"
        "import aworld_rl_v2p.plugin\n"
        "for name in ('v2p.generate', 'v2p.eval', 'v2p.click', 'v2p.train'):\n"
        "    describe(registry.get_recipe(name).config_cls())\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    cli = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from aworld_rl_core.cli import main\n"
            "try:\n    main(['v2p.eval', '--help'])\nexcept SystemExit:\n    pass\n"
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])",
        ],
        capture_output=True,
        text=True,
    )
    assert "max_pixels" in cli.stdout and "HEAVY []" in cli.stdout, (
        cli.stdout[-500:] + cli.stderr[-500:]
    )
