from aworld_rl_core.testing.contracts import PluginContract, RewardContract


class TestCorePlugin(PluginContract):
    plugin = "core"
    expected = {
        "trainers": ["trl", "hf-sft", "verl", "llamafactory"],
        "recipes": ["core.bfcl-check", "core.grpo"],
        "environments": ["core.toy-lowercase"],
        "rewards": ["core.toy-lowercase"],
        "datasets": ["core.toy-tasks"],
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
