"""Subprocess entry point, run with the LLaMA-Factory environment's python.

``python -m aworld_rl_core.backends.llamafactory.worker <spec.json>`` (or through torchrun).
The spec, written by the backend, names the training-arguments YAML, the pickled loss hook
(optional), the events file, the tiny model to materialise (optional) and the dtype.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any

import yaml


def device_args(dtype: str, cuda: bool, bf16_ok: bool) -> dict[str, Any]:
    """Precision and device arguments for ``ModelConfig.dtype`` on this machine."""
    if not cuda:
        if dtype in ("bfloat16", "float16"):
            raise ValueError(
                f"model.dtype={dtype} needs a GPU for mixed precision with LLaMA-Factory; "
                "use model.dtype=float32 (or auto) on CPU"
            )
        return {"use_cpu": True, "bf16": False, "fp16": False}
    if dtype == "float32":
        return {"bf16": False, "fp16": False}
    if dtype == "float16" or (dtype == "auto" and not bf16_ok):
        return {"bf16": False, "fp16": True}
    return {"bf16": True, "fp16": False}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m {__spec__.name} SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    train_args = yaml.safe_load(Path(spec["train_args"]).read_text(encoding="utf-8"))

    import torch

    if spec.get("tiny_arch"):
        from aworld_rl_core.models import tiny_model_dir

        train_args["model_name_or_path"] = str(tiny_model_dir(spec["tiny_arch"], spec["seed"]))
    cuda = torch.cuda.is_available()
    train_args.update(device_args(spec["dtype"], cuda, cuda and torch.cuda.is_bf16_supported()))
    train_args.update(spec.get("extra_args") or {})
    if spec.get("resolved_args"):
        resolved = yaml.safe_dump(train_args, sort_keys=False)
        Path(spec["resolved_args"]).write_text(resolved, encoding="utf-8")

    from aworld_rl_core.backends.llamafactory.trainer import EventsCallback, install_trainer
    from aworld_rl_core.segments import DEFAULT_SEGMENTS

    loss = None
    if spec.get("loss"):
        with open(spec["loss"], "rb") as fh:
            loss = pickle.load(fh)
    segments = {name: tuple(tags) for name, tags in (spec.get("segments") or {}).items()}
    install_trainer(loss, segments or DEFAULT_SEGMENTS)

    from llamafactory.train.tuner import run_exp

    run_exp(train_args, callbacks=[EventsCallback(spec["events"])])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
