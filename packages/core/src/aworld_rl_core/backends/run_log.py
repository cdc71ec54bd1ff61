"""The one run-log callback of the transformers-based backends (trl, hf-sft).

It forwards the trainer's numeric logs to ``run.log`` (renamed where a backend says so), adds
``tokens_per_s`` when the trainer counts input tokens, drives the run's progress bar and keeps
the last value of every metric. On a resume from ``checkpoint-N`` (N = 0 when no checkpoint was
whole) it drops the rows logged past step N, which the resumed steps log again (each step once
in ``metrics.jsonl``). The
end-of-training summary (``train_runtime``...) is left to the backend, which reports it in its
result.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from transformers import TrainerCallback


class RunLogCallback(TrainerCallback):
    """See the module docstring; ``desc`` labels the progress bar."""

    def __init__(self, run: Any, *, desc: str, renames: Mapping[str, str] | None = None) -> None:
        self.run = run
        self.desc = desc
        self.renames = dict(renames or {})
        self.last: dict[str, float] = {}
        self._bar: Any = None
        self._clock: tuple[float, int] | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        resumed = state.global_step > 0 or getattr(self.run, "resume", False) is True
        if resumed and hasattr(self.run, "rewind"):
            # resumed from checkpoint-N: the steps logged after N (before the kill) run again;
            # a resumed run without a whole checkpoint (killed in its first save) runs from
            # step 0, so every step it logged before the kill is logged again
            self.run.rewind(state.global_step)
        self._clock = (time.perf_counter(), state.num_input_tokens_seen)
        remaining = max(state.max_steps - state.global_step, 0)
        self._bar = iter(self.run.progress(range(remaining), total=remaining, desc=self.desc))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            next(self._bar, None)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            for _ in self._bar:  # finish the bar (closes rich's live display)
                pass
            self._bar = None

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        logs = logs or {}
        if "train_runtime" in logs:  # the end-of-training summary: the backend reports it
            return
        metrics = {
            self.renames.get(key, key): float(value)
            for key, value in logs.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        now, tokens = time.perf_counter(), state.num_input_tokens_seen
        if self._clock is not None and now > self._clock[0] and tokens > self._clock[1]:
            metrics["tokens_per_s"] = (tokens - self._clock[1]) / (now - self._clock[0])
        self._clock = (now, tokens)
        self.last.update(metrics)
        if metrics:
            self.run.log(metrics, step=state.global_step)
