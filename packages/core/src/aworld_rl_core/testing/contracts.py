"""Contract tests every package inherits (subclass, set the class attributes, done).

class TestPlugin(PluginContract):
    plugin = "funreason"
    expected = {"recipes": ["funreason.sft"], "rewards": ["funreason.ast"]}

Every contract names what it checks by its registered name and loads it through the registry,
the way ``aworld-run`` will: a typo in a registered target fails the contract. Each test's
docstring says what to do "If this fails".
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import subprocess
import sys
import types
import typing
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from aworld_rl_core import registry
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.config import (
    LIMIT_NOTE,
    ConfigError,
    apply_overrides,
    describe,
    from_dict,
    list_presets,
    load_config,
    member_types,
    preset_path,
    read_yaml,
    to_dict,
    to_yaml,
)
from aworld_rl_core.environment import Environment, Step, step_many, stop_strings
from aworld_rl_core.runs import Run, RunResult, execute

HEAVY_MODULES = ("torch", "transformers", "trl", "verl", "bfcl_eval", "faiss", "vllm")


def heavy_modules_after(code: str, heavy: Sequence[str] = HEAVY_MODULES) -> list[str]:
    """Which of ``heavy`` a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {list(heavy)!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))


class PluginContract:
    """The package's entry point loads, registers what it should, every registered target loads
    and the plugin module imports nothing heavy."""

    plugin: ClassVar[str]
    expected: ClassVar[Mapping[str, Sequence[str]]] = {}

    def build_registry(self) -> registry.Registry:
        """The registry the checks read: the installed plugins (a test may give its own)."""
        return registry.build_registry()

    def test_entry_point_loads(self) -> None:
        """If this fails: the entry point ``[project.entry-points.aworld_rl]`` is missing or its
        ``plugin.py`` raised (the message is the plugin's error, as `aworld-run plugins` shows
        it); reinstall the package (``pip install -e``) after changing its entry points."""
        reg = self.build_registry()
        info = {p.name: p for p in reg.plugins}
        assert self.plugin in info, f"no aworld_rl entry point named '{self.plugin}'"
        assert info[self.plugin].error is None, info[self.plugin].error

    def test_registers_expected_names(self) -> None:
        """If this fails: a name in ``expected`` is not registered (or was blocked by another
        plugin registering it too), or a name is outside ``<plugin>.<name>``; fix the
        ``register(...)`` call in plugin.py or ``expected``."""
        reg = self.build_registry()
        for kind, names in self.expected.items():
            mine = {n for n, e in reg.entries[kind].items() if e.plugin == self.plugin}
            assert set(names) <= mine, f"{kind}: missing {sorted(set(names) - mine)}"
            bare_ok = kind in ("trainers", "parsers")
            assert all(n.startswith(f"{self.plugin}.") for n in mine if not bare_ok)

    def test_every_registered_target_resolves(self) -> None:
        """If this fails: a ``"module:attr"`` target in plugin.py names a module or attribute
        that does not exist (a typo, a renamed function), or what it names has the wrong shape;
        the message names the entry and the error. Targets whose module needs a third-party
        library that is not installed here are skipped (an extra, e.g. verl), never a module of
        the package itself."""
        problems, skipped = registry.check_targets(self.build_registry(), self.plugin)
        for line in skipped:
            warnings.warn(f"not checked here: {line}", stacklevel=1)
        assert not problems, "\n".join(problems)

    def test_plugin_import_is_light(self) -> None:
        """If this fails: plugin.py (or aworld_rl_core.cli) imports a heavy library at import
        time; register lazy ``"module:attr"`` strings and import heavy libraries inside the
        functions that use them."""
        code = (
            "import importlib.metadata as md\n"
            "eps = md.entry_points(group='aworld_rl')\n"
            f"next(e for e in eps if e.name == {self.plugin!r}).load()\n"
            "import aworld_rl_core.cli\n"
        )
        assert heavy_modules_after(code) == []


def _leaves(cls: type, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> type of every leaf field of a config class."""
    out: dict[str, Any] = {}
    for name, tp in member_types(cls).items():
        if dataclasses.is_dataclass(tp):
            out.update(_leaves(tp, f"{prefix}{name}."))  # type: ignore[arg-type]
        else:
            out[prefix + name] = tp
    return out


def _leaf_values(cfg: Any, keys: Sequence[str]) -> dict[str, Any]:
    data = to_dict(cfg)
    out = {}
    for key in keys:
        value = data
        for part in key.split("."):
            value = value[part]
        out[key] = value
    return out


def _other_values(tp: Any, value: Any) -> list[Any]:
    """Values of type ``tp`` (plain YAML data) that differ from ``value``; the first valid one
    is the override."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    out: list[Any] = []
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            out += [None] if arg is type(None) else _other_values(arg, value)
    elif origin is typing.Literal:
        out = list(args)
    elif tp is bool:
        out = [not value]
    elif tp is int:
        base = value if isinstance(value, int) and not isinstance(value, bool) else 0
        out = [base + 1, base + 2, base - 1]
    elif tp is float:
        number = float(value) if isinstance(value, (int, float)) else 0.0
        out = [number / 2 if number else 0.5, number + 0.5, number * 2 + 1, 2.0, 3.0]
    elif tp in (str, Path):
        out = [f"{value}-x" if isinstance(value, str) else "x"]
    elif origin is tuple and len(args) > 1 and Ellipsis not in args:  # fixed length
        out = [[_other_values(arg, None)[0] for arg in args]]
    elif origin in (list, tuple) or tp in (list, tuple):
        current = list(value) if isinstance(value, list) else []
        items = _other_values(args[0], None) if args and args[0] is not Ellipsis else ["x"]
        out = [current + items[:1], current[:-1]]
    elif origin is dict or tp is dict:
        sample = _other_values(args[1], None)[:1] if len(args) == 2 else []
        out = [{**(value or {}), "zz": sample[0] if sample else 1}]
    return [v for v in out if v != value]


def _yaml_value(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    return text.removesuffix("\n...\n").strip()


def override_problems(
    recipe: str, preset: str | None, values: Mapping[str, Any] | None = None
) -> list[str]:
    """Keys whose ``key=value`` override changes another key too, or cannot be overridden.

    For each leaf key of the recipe's config (on top of ``preset``), an override with another
    valid value (``values[key]`` when given) must change exactly that key: what
    ``show-config R [--preset P] k=v`` prints differs from ``show-config R [--preset P]`` in
    ``k`` alone.
    """
    entry = registry.get_recipe(recipe)
    cls = entry.config_cls()
    leaves = _leaves(cls)
    preset_data = read_yaml(preset_path(entry.presets, preset)) if preset else {}
    base = from_dict(cls, preset_data)
    before = _leaf_values(base, list(leaves))
    problems = []
    for key, tp in leaves.items():
        given = (values or {}).get(key, dataclasses.MISSING)
        candidates = [given] if given not in (dataclasses.MISSING, before[key]) else []
        tried = []
        for candidate in candidates + _other_values(tp, before[key]):
            override = f"{key}={_yaml_value(candidate)}"
            try:
                cfg = from_dict(cls, apply_overrides(preset_data, [override]))  # as load_config
            except ConfigError as exc:
                tried.append(f"{override}: {exc}")
                continue
            after = _leaf_values(cfg, list(leaves))
            changed = sorted(k for k in leaves if before[k] != after[k])
            if changed != [key]:
                problems.append(f"{override} changed {changed}")
            break
        else:
            problems.append(
                f"{key}: no override value was accepted ({'; '.join(tried) or 'none tried'}); "
                "give one in override_values"
            )
    return problems


OTHER_NAMES = {
    "entries_per_category": "limit",
    "loss": "trainer.loss_options (the loss's options) and trainer.loss (its name)",
}
"""Leaf keys with one project name elsewhere -> that name."""


def vocabulary_problems(cls: type, exceptions: Mapping[str, str] = {}) -> list[str]:
    """The keys of ``cls`` that break the project's one vocabulary (see
    :meth:`RecipeContract.test_one_vocabulary`)."""
    problems = []
    for doc in describe(cls):
        if doc.key in exceptions or doc.key.startswith("trainer."):
            continue
        parts = doc.key.split(".")
        other = [OTHER_NAMES[p] for p in parts if p in OTHER_NAMES]
        if other:
            problems.append(f"{doc.key}: the project's name is {other[0]}")
        if parts[-1] == "limit" and (doc.default is not None or doc.bound_note != LIMIT_NOTE):
            problems.append(f"{doc.key}: a limit is config.limit_option (null = all)")
        if parts[-1] == "max_steps":
            problems.append(f"{doc.key}: an episode's reply cap is max_steps_per_turn")
    return problems


class RecipeContract:
    """Every preset loads and validates; fields are documented; ``tiny-cpu`` runs end to end."""

    recipe: ClassVar[str]
    override_values: ClassVar[Mapping[str, Any]] = {}
    """A valid other value per key, for keys whose values a type alone cannot give."""
    run_tiny_cpu: ClassVar[bool] = True
    tiny_cpu_overrides: ClassVar[Sequence[str]] = ()
    vocabulary_exceptions: ClassVar[Mapping[str, str]] = {}
    """Dotted keys exempt from ``test_one_vocabulary`` -> why (e.g. a size whose 0 and -1
    mean something else than "first N")."""

    def entry(self) -> registry.RecipeEntry:
        return registry.get_recipe(self.recipe)

    def check_result(self, result: RunResult, run_dir: Path) -> None:
        """Override to assert on the tiny-cpu run's metrics and outputs."""

    def test_config_is_frozen_dataclass_with_help(self) -> None:
        """If this fails: the recipe's config must be a frozen ``kw_only`` dataclass whose every
        field has a help text (``option(default, help=...)``); the message lists the fields."""
        cls = self.entry().config_cls()
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        undocumented = [doc.key for doc in describe(cls) if not doc.help]
        assert not undocumented, f"fields without help: {undocumented}"

    def test_presets_load_and_round_trip(self, tmp_path: Path) -> None:
        """If this fails: a preset does not load (unknown key, wrong type: the error names
        it), the ``tiny-cpu`` preset is missing, or saving and reloading a config changes it (a
        field whose YAML form does not read back)."""
        entry = self.entry()
        presets = list_presets(entry.presets)
        assert "tiny-cpu" in presets, "every recipe ships a tiny-cpu preset"
        cls = entry.config_cls()
        for name in presets:
            cfg = load_config(cls, preset=name, presets=entry.presets)
            saved = tmp_path / f"{name}.yaml"
            saved.write_text(to_yaml(cfg), encoding="utf-8")
            again = load_config(cls, config_file=saved)
            assert to_dict(again) == to_dict(cfg)

    def test_one_vocabulary(self) -> None:
        """If this fails: a key uses a name the project has one other name for. "First N" is
        ``limit`` (``config.limit_option``: null = all, 0 refused), never
        ``entries_per_category`` or a ``limit`` whose 0 means all; an episode's reply cap is
        ``max_steps_per_turn``; loss options are ``trainer.loss_options``. Keep an old name
        working only as ``__moved_keys__`` (an error naming the new key); list a deliberate
        exception in ``vocabulary_exceptions``."""
        problems = vocabulary_problems(self.entry().config_cls(), self.vocabulary_exceptions)
        assert not problems, problems

    def test_override_changes_exactly_that_key(self) -> None:
        """If this fails: a ``key=value`` override changed another key too (a ``__post_init__``
        that derives fields) or cannot be applied; give a valid value in ``override_values`` for
        keys a type alone cannot produce."""
        presets = [None, *list_presets(self.entry().presets)]
        problems = {
            p or "(no preset)": override_problems(self.recipe, p, self.override_values)
            for p in presets
        }
        assert not any(problems.values()), {k: v for k, v in problems.items() if v}

    def test_tiny_cpu_runs(self, tmp_path: Path, aworld_home: Path) -> None:
        """If this fails: the recipe's ``tiny-cpu`` preset does not run to completion on CPU
        (the run's status, config.yaml and report.md are checked, then ``check_result``); run
        ``aworld-run RECIPE --preset tiny-cpu`` to see the error."""
        if not self.run_tiny_cpu:
            pytest.skip("this recipe's tiny-cpu run is tested elsewhere")
        entry = self.entry()
        cfg = load_config(
            entry.config_cls(),
            preset="tiny-cpu",
            presets=entry.presets,
            overrides=self.tiny_cpu_overrides,
        )
        result, run = execute(
            self.recipe, entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
        )
        status = json.loads((run.dir / "status.json").read_text())
        assert status["status"] == "completed"
        assert (run.dir / "config.yaml").exists() and (run.dir / "report.md").exists()
        self.check_result(result, run.dir)


class EnvironmentProtocolContract:
    """The Environment protocol, for an environment a package builds itself and never registers
    (a synthesis stage's); a registered one uses :class:`EnvironmentContract`. Override
    ``make_env()`` to build one episode's environment."""

    hostile_texts: ClassVar[Sequence[str]] = (
        "",
        "<think>unclosed",
        "__import__('os').system('echo pwned')",
        '<tool_call>[{"name": "_private", "arguments": {}}]</tool_call>',
        "\x00" * 64,
        "[" * 5000,
    )

    def make_env(self) -> Environment:
        raise NotImplementedError("return a fresh environment for one episode")

    def test_reset_returns_messages(self) -> None:
        """If this fails: ``reset()`` must return the opening chat messages (a non-empty list of
        ``{"role", "content"}`` dicts) and declared stop strings must be non-empty strings."""
        env = self.make_env()
        try:
            messages = env.reset()
            assert messages and all(isinstance(m, dict) and "role" in m for m in messages)
            stop_strings(env)  # declared stop strings are non-empty strings
        finally:
            env.close()

    def test_hostile_text_never_raises(self) -> None:
        """If this fails: ``step`` raised on model text, or returned a step that neither ends
        the episode nor says why; catch the bad text in ``step`` and return an error
        observation with a float reward (model text is never trusted, never evaluated)."""
        for text in self.hostile_texts:
            env = self.make_env()
            try:
                env.reset()
                [step] = step_many([env], [text])
                assert isinstance(step, Step)
                assert step.done or step.observation or step.inline, "a bad step must say why"
                assert isinstance(step.reward, float)
            finally:
                env.close()


class EnvironmentContract(EnvironmentProtocolContract):
    """A registered environment, built through the registry as every driver builds it:
    ``registry.get_environment(environment)(row, **options)``.

    Set ``environment`` (the registered name), ``row`` (one dataset row) and ``options`` (the
    recipe's ``env.options``; a fixture may set ``self.options``).
    """

    environment: ClassVar[str]
    row: ClassVar[Mapping[str, Any]] = {}
    options: Mapping[str, Any] = {}

    def make_env(self) -> Environment:
        factory = registry.get_environment(self.environment)
        return factory(json.loads(json.dumps(dict(self.row))), **dict(self.options))

    def test_built_through_the_registry(self) -> None:
        """If this fails: the contract must build the environment by its registered name (a
        typo in the registered target would otherwise pass); set ``environment``, ``row`` and
        ``options`` instead of overriding ``make_env`` (or use EnvironmentProtocolContract for an
        environment nobody registers)."""
        assert type(self).make_env is EnvironmentContract.make_env, "do not override make_env"
        assert getattr(self, "environment", None), "set environment = '<plugin>.<name>'"
        entry = registry.current().get("environments", self.environment)
        env = self.make_env()
        try:
            assert callable(entry.load())
            assert isinstance(env.reset(), list)
        finally:
            env.close()


def as_completion(value: Any) -> list[dict[str, Any]]:
    """A completion as every backend passes it: the episode's messages after the prompt (a
    string stands for one assistant message)."""
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    return list(value)


class RewardContract:
    """A reward function: the one signature, hand-computed values, no exception on garbage.

    ``fn(completions, **columns) -> list[float]`` where each completion is the episode's
    messages after the prompt (``Episode.completion``; examples may give a string for one
    assistant message) and ``columns`` are the rows' other columns as lists. The backends also
    pass ``prompts`` (the opening messages) and ``env_return`` (the summed step rewards), which
    a reward that does not use them must accept and ignore.
    """

    reward: ClassVar[str]
    # (completions, columns, expected rewards)
    examples: ClassVar[Sequence[tuple[list[Any], dict[str, list[Any]], list[float]]]] = ()

    def call(self, completions: list[Any], columns: Mapping[str, list[Any]]) -> list[float]:
        fn = registry.get_reward(self.reward)
        batch = [as_completion(c) for c in completions]
        prompts = [[{"role": "user", "content": "the prompt"}]] * len(batch)
        return fn(batch, prompts=prompts, env_return=[0.0] * len(batch), **columns)

    def test_signature(self) -> None:
        """If this fails: a reward is ``fn(completions, **columns)``: the first parameter is
        named ``completions`` and ``**kwargs`` takes the columns (``prompts``, ``env_return``
        too)."""
        params = inspect.signature(registry.get_reward(self.reward)).parameters
        first = next(iter(params.values()), None)
        assert first is not None and first.name == "completions", "fn(completions, **columns)"
        assert any(p.kind is p.VAR_KEYWORD for p in params.values()), "accept **columns"

    def test_examples(self) -> None:
        """If this fails: the reward gave other values than the hand-computed ``examples``
        (the assertion shows both); fix the reward or, if the example was wrong, the example."""
        assert self.examples, "give at least one hand-computed example"
        for completions, columns, expected in self.examples:
            got = self.call(completions, columns)
            assert got == pytest.approx(expected)

    def test_garbage_completions_score(self) -> None:
        """If this fails: the reward raised on, or gave a non-float for, malformed completions;
        score garbage (0.0 or a penalty), never raise."""
        completions, columns, _ = self.examples[0]
        garbage = ["\x00<think>", "}{"][: len(completions)] + [""] * max(0, len(completions) - 2)
        got = self.call(garbage, columns)
        assert len(got) == len(completions) and all(isinstance(x, float) for x in got)


class DatasetContract:
    """A dataset builder: ``builder(**options) -> iterable of rows`` (core record dicts or RL
    rows), JSON-serialisable (verl and LLaMA-Factory get them as files)."""

    dataset: ClassVar[str]
    options: ClassVar[Mapping[str, Any]] = {}

    def rows(self) -> list[Mapping[str, Any]]:
        return list(registry.get_dataset(self.dataset)(**self.options))

    def check_rows(self, rows: list[Mapping[str, Any]]) -> None:
        """Override to assert on the rows' values."""

    def test_rows_are_json_mappings(self) -> None:
        """If this fails: the dataset builder gave no rows, or a row that is not a mapping or
        not JSON-serialisable (verl and LLaMA-Factory get rows as files); then ``check_rows``."""
        rows = self.rows()
        assert rows, f"{self.dataset}(**{dict(self.options)}) gave no rows"
        for row in rows:
            data = row.to_dict() if hasattr(row, "to_dict") else row
            assert isinstance(data, Mapping), f"a row is a mapping, got {type(row).__name__}"
            json.dumps(data)
        self.check_rows(rows)


class BackendContract:
    """A registered backend has the registered ``name`` and trains: two steps of a toy job on
    the toy environment (checkpointing each), then a resume to step three from the last
    checkpoint. ``kind`` picks the toy job (``"rl"``: GRPO episodes of the lowercase game,
    ``"sft"``: lowercase replies to its prompts); override :meth:`toy_job` for other jobs, or set
    ``trains_on_cpu = False`` for a backend that cannot train here."""

    backend: ClassVar[str]
    kind: ClassVar[str] = "rl"
    trains_on_cpu: ClassVar[bool] = True

    def test_backend_shape(self) -> None:
        """If this fails: the registered backend class does not build with no arguments, or
        its ``name`` differs from its registered name, or it has no ``train(job)``."""
        cls = registry.get_trainer(self.backend)
        instance = cls()
        assert instance.name == self.backend
        assert callable(instance.train)

    def toy_job(self, run: Run, *, max_steps: int) -> TrainJob:
        """A tiny job for ``max_steps`` steps that saves a checkpoint every step."""
        from aworld_rl_core.envs.toy import LowercaseEnv, toy_tasks
        from aworld_rl_core.models.config import ModelConfig
        from aworld_rl_core.trainer_config import RLConfig, SFTConfig, TrainerConfig

        tasks = toy_tasks(num_tasks=4)
        trainer = TrainerConfig(
            backend=self.backend,
            learning_rate=1e-2,
            max_steps=max_steps,
            batch_size=1,
            micro_batch_size=2 if self.kind == "rl" else 1,
            save_steps=1,
            seed=0,
            rl=RLConfig(group_size=2, max_turns=1, max_new_tokens=4, max_response_tokens=16),
            sft=SFTConfig(max_length=64, lr_scheduler="constant"),
        )
        model = ModelConfig(name_or_path="tiny:qwen3")
        if self.kind == "rl":
            env = functools.partial(LowercaseEnv, turns=1)
            return TrainJob(model=model, trainer=trainer, run=run, train_rows=tasks, env=env)
        rows = [{"messages": [*LowercaseEnv(task).reset(), _LOWERCASE_REPLY]} for task in tasks]
        return TrainJob(model=model, trainer=trainer, run=run, train_rows=rows)

    def test_trains_two_steps_and_resumes(self, tmp_path: Path) -> None:
        """If this fails: the backend did not train two steps of the toy job with a checkpoint
        per step, or resuming did not continue from ``checkpoint-2`` to step 3 (logging step 3
        alone); set ``trains_on_cpu = False`` only for a backend that cannot run here."""
        if not self.trains_on_cpu:
            pytest.skip(f"the {self.backend} backend does not train on this machine")
        backend = registry.get_trainer(self.backend)()
        first = backend.train(self.toy_job(Run(tmp_path, quiet=True), max_steps=2))
        assert first.metrics["global_step"] == 2
        assert [p.name for p in first.checkpoints] == ["checkpoint-1", "checkpoint-2"]
        run = Run(tmp_path, quiet=True, resume=True)
        resumed = backend.train(self.toy_job(run, max_steps=3))
        assert resumed.metrics["global_step"] == 3
        assert [p.name for p in resumed.checkpoints][-1] == "checkpoint-3"
        logged = [json.loads(line) for line in run.dir.joinpath("metrics.jsonl").open()]
        assert [r["step"] for r in logged if "grad_norm" in r] == [1, 2, 3]  # step 3 only, anew
        state = json.loads((resumed.checkpoints[-1] / "trainer_state.json").read_text())
        assert [e["step"] for e in state["log_history"] if "grad_norm" in e] == [1, 2, 3]


_LOWERCASE_REPLY = {"role": "assistant", "content": "the quiet rain falls on the old town"}
