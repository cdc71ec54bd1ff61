"""The one-GPU smoke script, run on CPU with the tiny models (a test of the script itself)."""

from __future__ import annotations

import json

from aworld_rl_core import smoke


def test_cpu_smoke_runs_each_part_in_its_own_process(tmp_path, aworld_home, capsys):
    out = tmp_path / "smoke"
    code = smoke.main(
        ["--device", "cpu", "--out", str(out), "--timeout", "600",
         "--parts", "trl-grpo,hf-sft,recipe:no-such.recipe"]
    )  # fmt: skip
    rows = {r["part"]: r for r in json.loads((out / "smoke.json").read_text())}
    assert code == 0, rows
    grpo, sft, missing = rows["trl-grpo"], rows["hf-sft"], rows["recipe:no-such.recipe"]
    assert grpo["status"] == "pass" and grpo["env_tokens"] > 0
    assert grpo["checkpoint"].endswith("checkpoint-2")
    assert sft["status"] == "pass" and sft["think_tokens"] > 0
    assert sft["last_loss"] < sft["first_loss"]
    assert missing["status"] == "skip" and "not installed" in missing["why"]
    for row in (grpo, sft):
        assert row["dtype"] == "float32" and row["peak_mib"] > 0 and row["seconds"] > 0
    table = capsys.readouterr().out
    assert "| trl-grpo | pass |" in table and "| hf-sft | pass |" in table


def test_a_failing_part_fails_the_run(tmp_path):
    code = smoke.main(["--device", "cpu", "--out", str(tmp_path), "--parts", "bogus"])
    (row,) = json.loads((tmp_path / "smoke.json").read_text())
    assert code == 1 and row["status"] == "fail" and "unknown part 'bogus'" in row["why"]


def test_core_names_no_paper_and_runs_the_registered_parts():
    """The paper packages' parts come from the registry (``register_smoke_parts``)."""
    from pathlib import Path

    from aworld_rl_core import hookimpl, registry

    source = Path(smoke.__file__).read_text()
    for paper in ("funreason", "v2p", "rag_r1", "envtuning"):
        assert paper not in source, paper

    class Plugin:
        @hookimpl
        def register_smoke_parts(self, register):
            register("mine.part", "json:dumps", help="a test part")

    with registry.use_registry(registry.build_registry(extra=[("mine", Plugin())])):
        assert smoke.default_parts()[:2] == ["trl-grpo", "hf-sft"]
        assert "mine.part" in smoke.default_parts()
        assert registry.get_smoke_part("mine.part") is json.dumps
