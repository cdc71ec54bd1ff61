#!/usr/bin/env bash
# CPU evidence through the recipes: v2p.train (core's hf-sft backend, v2p.pointer, the warm-up
# stage: action head + new token rows) on browser-rendered pages lifts test top-1 of core's tiny
# random Qwen2.5-VL. Usage: packages/v2p/experiments/train_evidence.sh [OUT] (STEPS=200 default)
set -euo pipefail
OUT=${1:-runs/v2p-train-evidence}
STEPS=${STEPS:-200}
PIXELS=150528  # 448 x 336: training and evaluation resize alike
RES='resolutions=[448x336,392x280,336x448]'
aworld-run v2p.generate --quiet --output-dir "$OUT/train-data" pages=250 "$RES" seed=1000
aworld-run v2p.generate --quiet --output-dir "$OUT/test-data" pages=50 "$RES" seed=2000
evaluate() {  # $1 = model, $2 = run directory
  aworld-run v2p.eval --preset tiny-cpu --quiet --output-dir "$2" model="$1" \
    data.path="$OUT/test-data/data/data.json" protocol.max_pixels=$PIXELS 'max_pixels_sweep=[]'
}
evaluate tiny:qwen2_5_vl "$OUT/eval-untrained"
aworld-run v2p.train --preset tiny-cpu --quiet --output-dir "$OUT/train" \
  "data.paths=[$OUT/train-data/data/data.json]" data.max_pixels=$PIXELS trainer.max_steps="$STEPS"
evaluate "$OUT/train/model" "$OUT/eval-trained"
python - "$OUT" <<'PY'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
test = json.loads((out / "test-data" / "data" / "data.json").read_text())
boxes = [r["conversations"][1]["bbox_gt"] for r in test]
rows = {
    "chance_random_point": sum((x2 - x1) * (y2 - y1) for x1, y1, x2, y2 in boxes) / len(boxes),
    "chance_random_element": sum(1 / r["elements"] for r in test) / len(test),
}
for name in ("eval-untrained", "eval-trained"):
    summary = json.loads((out / name / "summary.json").read_text())["summary"]
    rows[name] = {k: v for k, v in summary.items() if isinstance(v, (int, float))}
log = [json.loads(line) for line in (out / "train" / "metrics.jsonl").read_text().splitlines()]
keys = ("step", "pointer_loss", "out_of_box_mass", "top1_patch_in_box")
rows["train_curve"] = [{k: r[k] for k in keys} for r in log if "pointer_loss" in r]
(out / "evidence.json").write_text(json.dumps(rows, indent=1))
print({k: v if isinstance(v, float) else "..." for k, v in rows.items()})
for name in ("eval-untrained", "eval-trained"):
    print(name, {k: round(v, 3) for k, v in rows[name].items()})

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

curve, window = rows["train_curve"], 25
fig, ax = plt.subplots(figsize=(6, 4))
for key, label in (("out_of_box_mass", "attention mass outside the box"),
                   ("top1_patch_in_box", "top patch in the box")):  # fmt: skip
    values = [r[key] for r in curve]
    smooth = [sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
              for i in range(len(values))]  # fmt: skip
    ax.plot([r["step"] for r in curve], smooth, label=f"{label} (training batches, mean of {window})")
ax.axhline(rows["eval-trained"]["hit_top1_micro"], color="green", linestyle="--",
           label="test top-1 after training")  # fmt: skip
ax.axhline(rows["eval-untrained"]["hit_top1_micro"], color="gray", linestyle="--",
           label="test top-1 untrained")  # fmt: skip
ax.axhline(rows["chance_random_element"], color="gray", linestyle=":",
           label="chance: a random element of the page")  # fmt: skip
ax.set_xlabel("v2p.train steps (hf-sft, warm-up stage, batch 8)")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(out / "train_evidence.png", dpi=110)
PY
