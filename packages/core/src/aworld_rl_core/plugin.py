"""Core's own registrations: the training backends, core recipes, the tool-call parsers and
the toy game."""

from aworld_rl_core.hookspecs import hookimpl


@hookimpl
def register_datasets(register):
    register("core.toy-tasks", "aworld_rl_core.envs.toy:toy_tasks", help="toy topic rows")
    register(
        "core.microworld",
        "aworld_rl_core.tooluse.microworld.world:rows",
        help="micro-world entries of one split part (split_name=train|validation|held_out, "
        "seed) as core.bfcl-multi-turn rows",
    )


@hookimpl
def register_environments(register):
    register(
        "core.toy-lowercase",
        "aworld_rl_core.envs.toy:LowercaseEnv",
        help="toy multi-turn game: reply in lowercase words",
    )
    register(
        "core.toy-counter",
        "aworld_rl_core.envs.toy:CounterEnv",
        help="toy multi-turn game: bring a counter to the row's target with 'add N'",
    )
    register(
        "core.bfcl-multi-turn",
        "aworld_rl_core.tooluse.bfcl.environment:env_from_row",
        help="a BFCL multi-turn entry (row: bfcl_entry or entry_id; binary/progress reward)",
    )
    register(
        "core.bfcl-turns",
        "aworld_rl_core.tooluse.bfcl.environment:env_from_parts",
        help="a BFCL multi-turn entry in an environment built from registered episode parts "
        "(options protocol=, turns=, feedback=, reward=: a part's name or {name: ..., options})",
    )


@hookimpl
def register_rewards(register):
    register(
        "core.toy-lowercase",
        "aworld_rl_core.envs.toy:lowercase_reward",
        help="share of a-z/space characters in the assistant turns",
    )


@hookimpl
def register_trainers(register):
    register(
        "trl", "aworld_rl_core.backends.trl_grpo:TrlGrpoBackend", help="TRL GRPO (CPU / 1 GPU)"
    )
    register(
        "hf-sft",
        "aworld_rl_core.backends.hf_sft:HfSftBackend",
        config="aworld_rl_core.backends.hf_sft_launch:HfSftConfig",
        help="transformers SFT (torchrun and DeepSpeed ZeRO for several GPUs)",
    )
    register(
        "verl",
        "aworld_rl_core.backends.verl.backend:VerlBackend",
        config="aworld_rl_core.backends.verl.config:VerlConfig",
        help="verl on Ray (GPU)",
    )
    register(
        "llamafactory",
        "aworld_rl_core.backends.llamafactory.backend:LlamaFactoryBackend",
        config="aworld_rl_core.backends.llamafactory.config:LlamaFactoryConfig",
        help="SFT through LLaMA-Factory",
    )


@hookimpl
def register_tool_apis(register):
    for name, cls in (
        ("core.micro.home", "HomeController"),
        ("core.micro.bank", "BankLedger"),
        ("core.micro.files", "FileStore"),
    ):
        register(
            name,
            f"aworld_rl_core.tooluse.microworld.apis:{cls}",
            help=f"micro-world tool API {cls}",
        )


@hookimpl
def register_parsers(register):
    for name, help in (
        ("think_json", "<think> then one <tool_call> JSON call list or one <answer> (EnvTuning)"),
        ("think_python", "<think> then BFCL's python call list, or a plain reply (FunReason)"),
        ("think_tool_python", "<think> + <tool_call> python call list and/or <answer>"),
        ("hermes", "Qwen's <tool_call>{json}</tool_call> blocks, optional leading <think>"),
    ):
        register(name, f"aworld_rl_core.tooluse.parsers:parse_{name}", help=help)


@hookimpl
def register_episode_parts(register):
    env = "aworld_rl_core.tooluse.bfcl.environment"
    for name, target, role, help in (
        ("core.parser", f"{env}:parser_protocol", "protocol", "a registered parser "
         "(parser=think_tool_python), results as one tool message of {call: result}"),
        ("core.bfcl-prompting", "aworld_rl_core.tooluse.bfcl.prompting:prompting_protocol",
         "protocol", "BFCL's prompting protocol: its opening and decoder, a tool message a call"),
        ("core.turns", "aworld_rl_core.tooluse.bfcl.turns:turn_policy", "turns",
         "max_steps_per_turn, on_cap, broken_reply, abstain, abstain_credit"),
        ("core.feedback", "aworld_rl_core.tooluse.bfcl.turns:feedback", "feedback",
         "a short format reminder; results as they are"),
        ("core.reward", f"{env}:core_reward", "reward", "kind=binary (FunRL) or progress, at end"),
        ("core.prompting-record", "aworld_rl_core.tooluse.bfcl.prompting:prompting_record",
         "reward", "no reward; BFCL's result per turn in every step's info"),
    ):  # fmt: skip
        register(name, target, help=help, role=role)


@hookimpl
def register_recipes(register):
    register(
        "core.bfcl-check",
        config="aworld_rl_core.recipes.bfcl_check:BfclCheckConfig",
        run="aworld_rl_core.recipes.bfcl_check:run",
        presets="aworld_rl_core:configs/bfcl-check",
        help="Replay BFCL ground truth through the tool-use runtime and judges (no model).",
    )
    register(
        "core.grpo",
        config="aworld_rl_core.recipes.grpo:GrpoRecipeConfig",
        run="aworld_rl_core.recipes.grpo:run",
        presets="aworld_rl_core:configs/grpo",
        help="GRPO on a toy multi-turn environment: checks a backend end to end.",
    )
