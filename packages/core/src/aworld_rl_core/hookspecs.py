"""The hooks a paper package implements. Each receives a typed ``register`` callback.

Targets may be objects or lazy ``"module:attr"`` strings, so that a ``plugin.py`` imports
nothing heavy. Names are namespaced ``<package>.<name>``; a name registered twice is blocked
(an error naming both plugins when it is used), every other name keeps working.
"""

from __future__ import annotations

from typing import Any, Protocol

import pluggy

PROJECT = "aworld_rl"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Register(Protocol):
    """``register(name, target, help=...)``: a builder, factory, reward, backend or loss.

    ``target`` is the object or a lazy ``"module:attr"`` string; extra keywords are kept as the
    entry's metadata.
    """

    def __call__(self, name: str, target: Any, *, help: str = "", **meta: Any) -> None: ...


class RegisterTrainer(Protocol):
    """``register(name, target, config=..., help=...)``: a training backend and, optionally, the
    frozen config dataclass of its own settings (object or ``"module:Class"``)."""

    def __call__(
        self, name: str, target: Any, *, config: Any = None, help: str = "", **meta: Any
    ) -> None: ...


class RegisterRecipe(Protocol):
    """``register(name, config=..., run=..., presets=..., help=...)``: a runnable recipe."""

    def __call__(
        self, name: str, *, config: Any, run: Any, presets: str, help: str = "", **meta: Any
    ) -> None: ...


@hookspec
def register_datasets(register: Register) -> None:
    """Register dataset builders: ``register(name, builder, help=...)``.

    ``builder(**options) -> Iterable[Mapping]``: rows, each a core record (``messages``,
    ``tools``, ... as ``aworld_rl_core.records.ToolUseRecord`` or its dict) or an RL row (a
    ``prompt`` and the columns the environment and rewards read), JSON-serialisable;
    ``options`` are the recipe's JSON options. Checked by ``testing.contracts.DatasetContract``.
    """


@hookspec
def register_environments(register: Register) -> None:
    """Register environment factories: ``register(name, factory, help=...)``.

    ``factory(row, **options)`` returns a fresh ``aworld_rl_core.environment.Environment`` for
    one episode of a dataset row; ``options`` are the recipe's JSON options (``env.options``).
    """


@hookspec
def register_rewards(register: Register) -> None:
    """Register reward functions: ``register(name, fn, help=...)``.

    ``fn(completions, **columns) -> list[float]`` (TRL's shape): one float per completion, where
    each completion is the episode's messages after the prompt (assistant turns and
    observations; a single-turn row gives ``[{"role": "assistant", "content": text}]``) and
    ``columns`` are the rows' other columns as lists, plus ``prompts`` (the opening messages) and
    ``env_return`` (the summed step rewards). The same function runs under trl and verl (core's
    adapters). Checked by ``testing.contracts.RewardContract``.
    """


@hookspec
def register_losses(register: Register) -> None:
    """Register losses: ``register(name, target, kind="token" | "model", help=...)``.

    ``kind="token"``: ``fn(logits, labels, segments) -> scalar tensor``, ``logits[:, t]``
    predicting ``labels[:, t]`` (-100 = ignore), ``segments`` a name -> bool mask mapping
    (``think``, ``call``, ...). ``kind="model"``: ``compute_loss(model, batch) -> (loss,
    metrics)``. A class target is built with the recipe's options (``Cls(**options)``, e.g. an
    ``nn.Module`` with learnable weights); a function gets them as keyword arguments. Recipes
    select one with ``trainer.loss=<name>`` (+ ``trainer.loss_options``). A model-level loss
    that computes vocabulary logits only where it reads them registers ``full_logits=False``
    (launch plans then leave the full logits out of the memory estimate).
    """


@hookspec
def register_trainers(register: RegisterTrainer) -> None:
    """Register training backends: ``register(name, target, config=..., help=...)``.

    ``target`` is a class with ``name`` and ``train(job) -> RunResult``. ``config`` (optional)
    is the backend's own settings, a frozen ``kw_only`` dataclass whose fields all have
    defaults: every recipe's config holds it as the section ``trainer.<name>``, the backend's
    name verbatim (``trainer.verl.dry_run=true``; a backend named ``hf-sft`` would be
    ``trainer.hf-sft.*``; a name with a ``.`` cannot own a section). The backend reads it with
    ``aworld_rl_core.trainer_config.section(job.trainer, ItsConfig)``. Settings every backend
    means the same way (learning rate, steps, batch units, ``rl``, ``sft``, ``loss``) stay in
    ``TrainerConfig``; a section named like one of its fields is refused. Core registers
    ``trl``, ``hf-sft``, ``verl`` (section ``VerlConfig``) and ``llamafactory``
    (``LlamaFactoryConfig``).
    """


@hookspec
def register_tool_apis(register: Register) -> None:
    """Register tool API classes for BFCL-shaped multi-turn environments:
    ``register(name, "mod:Class", help=..., stateless=False, docs="mod:DOCS",
    states="mod:STATES")``.

    ``cls()`` builds a fresh instance per episode (its public methods are its tools, through
    core's safe dispatcher); unless ``stateless``, its ``_load_scenario(state,
    long_context=False)``, when it defines one, loads the entry's ``initial_config[name]``.
    Public attributes are the state BFCL's state checker compares. ``docs`` (a list, or a
    ``"module:attr"`` naming one) are its tools' BFCL function docs; ``states`` (optional) are
    initial states a data generator may start from. An entry names the class by ``name`` in
    ``involved_classes`` (BFCL's own offline classes need no registration; their names always
    mean BFCL's). Core registers its micro-world's classes (``core.micro.*``).
    """


@hookspec
def register_parsers(register: Register) -> None:
    """Register tool-call parsers (response protocols): ``register(name, "mod:fn", help=...)``.

    ``fn(text, **options) -> aworld_rl_core.tooluse.ParsedResponse`` reads one model response:
    reasoning, calls, answer and format errors (it should never raise on model text; core's
    ``tooluse.get_parser`` turns an exception into a format error anyway). Keyword options
    (``think_tag="thinking"``) are bound by ``get_parser(name, **options)``, which refuses an
    option the function does not take. A name is a format: un-namespaced names (``hermes``) are
    allowed, as for trainers, and a name two plugins register is blocked. Core registers
    ``think_json``, ``think_python``, ``think_tool_python`` and ``hermes``.
    """


@hookspec
def register_episode_parts(register: Register) -> None:
    """Register parts of core's BFCL multi-turn environment (``tooluse.bfcl.turns``):
    ``register(name, "mod:factory", help=..., role="protocol" | "turns" | "feedback" |
    "reward")``.

    ``factory(entry, **options) -> part`` builds the part for one episode's BFCL entry: a
    ``turns.Protocol`` (reads replies, opens the episode, renders results), a ``TurnPolicy``
    (what ends a turn, ``max_steps_per_turn``, abstain turns), a ``Feedback`` (format errors,
    result texts and hints, next-turn warnings) or a ``Reward`` (the episode reward and each
    step's info). The registered environment ``core.bfcl-turns`` builds an environment from
    parts named in its options (``protocol={"name": ..., **options}``), so a package adds a
    protocol or a reward without touching core. Core registers ``core.parser``,
    ``core.bfcl-prompting``, ``core.turns``, ``core.feedback``, ``core.reward`` and
    ``core.prompting-record``.
    """


@hookspec
def register_recipes(register: RegisterRecipe) -> None:
    """Register runnable jobs for ``aworld-run``.

    ``register(name, config="mod:Cls", run="mod:fn", presets="pkg:configs/dir", help=...)``:
    a frozen config dataclass, YAML presets shipped as package data, and
    ``run(cfg, run) -> RunResult``.
    """


@hookspec
def register_smoke_parts(register: Register) -> None:
    """Register parts of the one-GPU smoke run (``python -m aworld_rl_core.smoke``):
    ``register(name, "mod:fn", help=...)``.

    ``fn(device, model, out) -> dict``: train a few steps of the package's own path on
    ``device`` (``"cuda"``: bf16; ``"cpu"``: the tiny models, fast enough for CI), ``model`` a
    local model path or None (the tiny random model), writing under the folder ``out``; return
    what it measured (JSON values), ``{"status": "skip", "why": ...}`` when it cannot run here
    (a library not installed), and raise ``AssertionError`` naming what it did not show. Each
    part runs in its own subprocess with a timeout; core never names a paper's part.
    """
