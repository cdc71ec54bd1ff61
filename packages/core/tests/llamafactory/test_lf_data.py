"""Our sharegpt files and training arguments, read by LLaMA-Factory's own parser and loader."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

try:  # the distribution, not the name: tests/llamafactory is importable as "llamafactory" too
    importlib.metadata.version("llamafactory")
except importlib.metadata.PackageNotFoundError:
    pytest.skip("needs llamafactory==0.9.5 (its own environment)", allow_module_level=True)

from lf_samples import ANSWER_TURN, CALC_RECORD, CALL_TURN, make_job

from aworld_rl_core.backends.llamafactory import launch
from aworld_rl_core.backends.llamafactory.worker import device_args


@pytest.fixture(scope="module")
def lf_loader(lf_home, tmp_path_factory):
    """LLaMA-Factory's data pipeline (importable once the torchaudio stub is on sys.path)."""
    stub = launch.python_path_dir(tmp_path_factory.mktemp("pp"), stub_torchaudio=True)
    sys.path.insert(0, str(stub))
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.hparams import get_train_args
    from llamafactory.model import load_tokenizer

    from aworld_rl_core.models import tiny_model_dir

    model_dir = tiny_model_dir("qwen3", 0)

    def load(job, data_dir):
        args = launch.build_train_args(  # the data path only: one sample is enough
            job, data_dir, has_eval=False, resume_from=None, strict=False
        )
        args.update(device_args("float32", cuda=False, bf16_ok=False))
        args["model_name_or_path"] = str(model_dir)
        model_args, data_args, training_args, _, _ = get_train_args(args)
        tokenizer_module = load_tokenizer(model_args)
        template = get_template_and_fix_tokenizer(tokenizer_module["tokenizer"], data_args)
        module = get_dataset(
            template, model_args, data_args, training_args, stage="sft", **tokenizer_module
        )
        return module["train_dataset"], tokenizer_module["tokenizer"]

    yield load
    sys.path.remove(str(stub))


def _supervised_text(example, tokenizer):
    return tokenizer.decode([t for t in example["labels"] if t != -100])


def test_whole_conversation_supervises_every_assistant_turn(lf_loader, tmp_path):
    job = make_job(tmp_path / "run", rows=[CALC_RECORD])
    data_dir = tmp_path / "data"
    launch.write_dataset(job.train_rows, data_dir, launch.TRAIN_NAME, per_turn=False)
    dataset, tokenizer = lf_loader(job, data_dir)
    assert len(dataset) == 1
    text = tokenizer.decode(dataset[0]["input_ids"])
    assert "# Tools" in text and '"name": "add"' in text  # the tools block in the system turn
    assert "<tool_response>\n5\n</tool_response>" in text  # the observation as a user turn
    assert _supervised_text(dataset[0], tokenizer) == CALL_TURN + ANSWER_TURN


def test_per_turn_split_supervises_only_each_samples_last_turn(lf_loader, tmp_path):
    from dataclasses import replace

    job = make_job(tmp_path / "run", rows=[CALC_RECORD])
    job = replace(job, trainer=replace(job.trainer, sft=replace(job.trainer.sft, per_turn=True)))
    data_dir = tmp_path / "data"
    assert launch.write_dataset(job.train_rows, data_dir, launch.TRAIN_NAME, per_turn=True) == 2
    dataset, tokenizer = lf_loader(job, data_dir)
    assert [_supervised_text(ex, tokenizer) for ex in dataset] == [CALL_TURN, ANSWER_TURN]
    # the second sample still sees the first call as context
    assert CALL_TURN.rstrip("\n") in tokenizer.decode(dataset[1]["input_ids"])
