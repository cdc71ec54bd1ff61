"""Our parquet loads in verl's RLHFDataset with a real (Qwen3) tokenizer."""

from __future__ import annotations

import pytest

pytest.importorskip("verl.trainer")  # not tests/verl, which is on sys.path as a namespace

from verl_toys import counter_env, exact_answer

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.verl.launcher import write_data
from aworld_rl_core.backends.verl.specs import EpisodeSpec
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import TrainerConfig

ROWS = [
    {
        "prompt": [
            {"role": "system", "content": "You count."},
            {"role": "user", "content": f"Bring the counter to {t}."},
        ],
        "target": t,
        "ground_truth": {"value": t},
        "data_source": "toy/counter",
    }
    for t in (2, 5, 7)
]


def test_rlhf_dataset_reads_our_rows(tmp_path, qwen3_tokenizer):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    job = TrainJob(
        model=None,  # the data writer does not read the model
        trainer=TrainerConfig(backend="verl", batch_size=2),
        run=Run(tmp_path / "run", quiet=True),
        train_rows=ROWS,
        env=counter_env,
        rewards=[exact_answer],
    )
    train, val = write_data(job, tmp_path / "data")
    config = OmegaConf.create(
        {
            "max_prompt_length": 256,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "return_raw_chat": True,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    ds = RLHFDataset(str(train), qwen3_tokenizer, config)
    assert len(ds) == 3
    item = ds[1]
    assert item["raw_prompt"] == ROWS[1]["prompt"]
    assert item["data_source"] == "toy/counter" and item["agent_name"] == "aworld_env"
    assert item["reward_model"]["ground_truth"] == '{"value": 5}'
    assert item["index"] == 1
    spec = EpisodeSpec.from_extra_info(item["extra_info"])
    assert spec.task == ROWS[1] and spec.build_env().target == 5
    no_filter = OmegaConf.merge(
        config, {"filter_overlong_prompts": False}
    )  # (slow: once is enough)
    assert len(RLHFDataset(str(val), qwen3_tokenizer, no_filter)) == 2  # the first train batch


def test_records_a_package_exports_run_on_the_verl_backend(tmp_path, qwen3_tokenizer, toy_registry):
    """The one row writer: records exported with ``write_verl_parquet`` (as FunReason's
    export does) load in RLHFDataset, and core's reward adapter scores them from the episode
    spec each row carries (the rewards by registered name, the record's ground truth)."""
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from aworld_rl_core.backends.verl.reward import compute_score
    from aworld_rl_core.backends.verl.rows import write_verl_parquet
    from aworld_rl_core.records import ToolUseRecord

    records = [
        ToolUseRecord(
            id=f"r{i}",
            messages=[
                {"role": "user", "content": f"Say {word}."},
                {"role": "assistant", "content": word},
            ],
            ground_truth=word,
            data_source="toy/say",
        )
        for i, word in enumerate(["yes", "no"])
    ]
    path = write_verl_parquet(records, tmp_path / "exported.parquet", rewards=["toy.exact"])
    config = OmegaConf.create(
        {"max_prompt_length": 64, "return_raw_chat": True, "cache_dir": str(tmp_path / "c")}
    )
    ds = RLHFDataset(str(path), qwen3_tokenizer, config)
    item = ds[1]
    assert item["raw_prompt"] == [{"role": "user", "content": "Say no."}]
    assert item["agent_name"] == "single_turn_agent"  # rewards only: verl's own loop
    right = compute_score(item["data_source"], "no", "no", extra_info=item["extra_info"])
    wrong = compute_score(item["data_source"], "yes", "no", extra_info=item["extra_info"])
    assert (right["score"], wrong["score"]) == (1.0, 0.0)
