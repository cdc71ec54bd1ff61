from aworld_rl_core.testing.contracts import DatasetContract, PluginContract, RewardContract


class TestCorePlugin(PluginContract):
    plugin = "core"
    expected = {
        "trainers": ["trl", "hf-sft", "verl", "llamafactory"],
        "recipes": ["core.bfcl-check", "core.grpo"],
        "environments": [
            "core.toy-lowercase",
            "core.toy-counter",
            "core.bfcl-multi-turn",
            "core.bfcl-turns",
        ],
        "rewards": ["core.toy-lowercase"],
        "datasets": ["core.toy-tasks"],
        "parsers": ["hermes", "think_json", "think_python", "think_tool_python"],
        "episode_parts": [
            "core.parser",
            "core.bfcl-prompting",
            "core.turns",
            "core.feedback",
            "core.reward",
            "core.prompting-record",
        ],
    }


class TestToyLowercaseReward(RewardContract):
    reward = "core.toy-lowercase"
    examples = [
        (
            [
                [{"role": "assistant", "content": "abcd"}],
                [{"role": "assistant", "content": "AB!?"}],
            ],
            {},
            [1.0, 0.0],
        )
    ]


class TestToyTasksDataset(DatasetContract):
    dataset = "core.toy-tasks"
    options = {"num_tasks": 5, "seed": 3}

    def check_rows(self, rows):
        assert len(rows) == 5 and all(set(row) == {"topic"} for row in rows)
