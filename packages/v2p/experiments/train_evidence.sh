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
rows = {}
for name in ("eval-untrained", "eval-trained"):
    summary = json.loads((out / name / "summary.json").read_text())["summary"]
    rows[name] = {k: v for k, v in summary.items() if isinstance(v, (int, float))}
log = [json.loads(l) for l in (out / "train" / "metrics.jsonl").read_text().splitlines()]
steps = [r for r in log if "pointer_loss" in r]
rows["train_curve"] = [
    {k: r[k] for k in ("step", "pointer_loss", "out_of_box_mass", "top1_patch_in_box")}
    for r in steps
]
(out / "evidence.json").write_text(json.dumps(rows, indent=1))
for name in ("eval-untrained", "eval-trained"):
    print(name, {k: round(v, 3) for k, v in rows[name].items()})
PY
