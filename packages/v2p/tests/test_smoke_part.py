"""V2P's part of core's smoke script, run by the script on CPU (its own subprocess)."""

import json

from aworld_rl_core import smoke


def test_warmup_part_passes_on_cpu(tmp_path, aworld_home):
    out = tmp_path / "smoke"
    code = smoke.main(["--device", "cpu", "--out", str(out), "--parts", "v2p.warmup"])
    (row,) = json.loads((out / "smoke.json").read_text())
    assert code == 0 and row["status"] == "pass", row
    assert row["last_pointer_loss"] < row["first_pointer_loss"]
    assert row["new_rows_moved"] > 0 and row["device"] == "cpu" and row["dtype"] == "float32"
    assert all(0 <= v <= 1 for v in row["point"])
    assert "v2p.warmup" in smoke.default_parts()
