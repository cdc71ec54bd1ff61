"""RAG-R1's part of core's smoke script, run by the script on CPU (its own subprocess)."""

import json

from aworld_rl_core import smoke


def test_train_part_passes_on_cpu(tmp_path, aworld_home):
    out = tmp_path / "smoke"
    code = smoke.main(["--device", "cpu", "--out", str(out), "--parts", "rag_r1.train"])
    (row,) = json.loads((out / "smoke.json").read_text())
    assert code == 0 and row["status"] == "pass", row
    assert row["index_searches"] == 1 and row["information_tokens_masked"] > 0
    assert row["dtype"] == "float32" and row["training_searches"] >= 0
    assert "rag_r1.train" in smoke.default_parts()
