"""``aworld-run``: list plugins, show configs, run recipes.

Imports nothing heavy: listing plugins and ``--help`` never import torch. Progress bars go to
stderr and the summary to stdout, so ``aworld-run ... | head`` shows the summary and ends
quietly when ``head`` closes the pipe.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core import registry
from aworld_rl_core.errors import AworldError

USAGE = """\
usage: aworld-run plugins [--check]
       aworld-run show-config RECIPE [--preset NAME | --config FILE] [key=value ...]
       aworld-run RECIPE [--preset NAME | --config FILE] [--output-dir DIR]
                         [--resume | --overwrite] [--quiet] [--debug] [key=value ...]
       aworld-run RECIPE --help

Run a recipe registered by an installed aworld-rl package; `aworld-run plugins` lists them.
"""


def _recipe_parser(recipe: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"aworld-run {recipe}", add_help=False)
    parser.add_argument("--preset", help="preset name (see --help) or YAML path")
    parser.add_argument("--config", help="YAML config file, applied after the preset")
    parser.add_argument("--output-dir", type=Path, help="run directory")
    parser.add_argument("--resume", action="store_true", help="continue the run in --output-dir")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the run already in --output-dir"
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="plan every training launch (processes, steps as the engine counts them, memory "
        "per GPU, packages, checkpoints), print it and write plan.json; train nothing",
    )
    parser.add_argument("--debug", action="store_true", help="full tracebacks on errors")
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:  # `aworld-run ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:
        print("aworld-run: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)
    except AworldError as exc:
        if debug:
            raise
        print(f"aworld-run: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        print(
            f"aworld-run: error: {type(exc).__name__}: {exc} "
            "(rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "plugins":
        if any(a != "--check" for a in rest):
            raise AworldError(f"plugins takes only --check, got {' '.join(rest)}")
        return _plugins(check="--check" in rest)
    _warn_broken_plugins()
    if command == "show-config":
        if not rest or rest[0].startswith("-"):
            raise AworldError("show-config needs a recipe name: aworld-run show-config RECIPE")
        return _run(rest[0], rest[1:], show_only=True)
    return _run(command, rest, show_only=False)


def _plugins(check: bool = False) -> int:
    """The installed plugins and what each registers; ``check``: also import every registered
    target (slow: it loads the heavy modules), so that a typo in a ``"module:attr"`` shows."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from aworld_rl_core.trainer_config import backend_sections

    reg = registry.current()
    sections = backend_sections()
    console = Console()
    table = Table(title="aworld-rl plugins")
    for column in ("plugin", "package", "version", "registers"):
        table.add_column(column)
    for info in reg.plugins:
        owned = [
            f"{kind}: {', '.join(sorted(n for n, e in entries.items() if e.plugin == info.name))}"
            for kind, entries in reg.entries.items()
            if any(e.plugin == info.name for e in entries.values())
        ]
        mine = [n for n, e in reg.entries["trainers"].items() if e.plugin == info.name]
        if any(n in sections.classes for n in mine):
            owned.append(
                "config sections: "
                + ", ".join(f"trainer.{n}" for n in mine if n in sections.classes)
            )
        owned += [
            f"[red]config section trainer.{n}: {escape(sections.unavailable[n])}[/red]"
            for n in mine
            if n in sections.unavailable
        ]
        owned += [
            f"[yellow]{kind[:-1]} {name}: blocked, also registered by "
            f"{', '.join(o for o in owners if o != info.name) or 'itself'}[/yellow]"
            for (kind, name), owners in reg.conflicts.items()
            if info.name in owners
        ]
        registers = "\n".join(owned) or "-"
        if info.error:
            registers = f"[red]failed: {escape(info.error)}[/red]"
        table.add_row(info.name, info.dist or "-", info.version or "-", registers)
    console.print(table)
    for kind, name in reg.conflicts:
        console.print(f"[yellow]{escape(reg.conflict_message(kind, name))}[/yellow]")
    broken = 0
    for info in reg.plugins if check else []:
        problems, skipped = registry.check_targets(reg, info.name)
        broken += len(problems)
        for line in problems:
            console.print(f"[red]{escape(info.name)}: {escape(line)}[/red]")
        for line in skipped:
            console.print(f"[yellow]{escape(info.name)}: not checked: {escape(line)}[/yellow]")
    if check and not broken:
        console.print("every registered target loads")
    return 1 if reg.failures or reg.conflicts or sections.unavailable or broken else 0


def _warn_broken_plugins() -> None:
    reg = registry.current()
    broken = [p.name for p in reg.failures] + [name for _, name in reg.conflicts]
    if broken:
        print(
            f"aworld-run: warning: not available: {', '.join(broken)} (see `aworld-run plugins`)",
            file=sys.stderr,
        )


def _run(name: str, argv: list[str], *, show_only: bool) -> int:
    from aworld_rl_core.config import load_config, to_yaml

    entry = registry.get_recipe(name)
    args = _recipe_parser(name).parse_intermixed_args(argv)
    config_cls = entry.config_cls()
    if args.resume and not (args.help or show_only):
        return _resume(name, entry, config_cls, args)
    cfg = load_config(
        config_cls,
        preset=args.preset,
        config_file=args.config,
        presets=entry.presets,
        overrides=args.overrides,
    )
    if args.help:
        _print_recipe_help(entry, cfg, shown=args.preset or args.config)
        return 0
    if show_only:
        print(to_yaml(cfg), end="")
        return 0
    from aworld_rl_core.runs import default_run_dir

    output_dir = (args.output_dir or default_run_dir(name)).expanduser().absolute()
    return _execute(name, entry, cfg, args, output_dir)


def _resume(name: str, entry: Any, config_cls: type[Any], args: argparse.Namespace) -> int:
    """``--resume``: the saved config.yaml, with only what RESUME_MAY_CHANGE allows changed."""
    from aworld_rl_core.runs import resume_config

    if args.overwrite:
        raise AworldError(
            "--resume continues the run in --output-dir, --overwrite replaces it: pick one"
        )
    if args.output_dir is None:
        raise AworldError("--resume needs --output-dir pointing at the run to continue")
    output_dir = args.output_dir.expanduser().absolute()
    cfg = resume_config(
        output_dir,
        config_cls,
        preset=args.preset,
        config_file=args.config,
        presets=entry.presets,
        overrides=args.overrides,
    )
    return _execute(name, entry, cfg, args, output_dir)


def _execute(name: str, entry: Any, cfg: Any, args: argparse.Namespace, output_dir: Path) -> int:
    from aworld_rl_core.allocator import keep_freed_memory
    from aworld_rl_core.runs import execute

    keep_freed_memory()
    try:
        from aworld_rl_core.dry_run import PLAN_FILE, planning, write_plans

        command = _command(name, args, output_dir) + (["--dry-run"] if args.dry_run else [])
        collecting: contextlib.AbstractContextManager[list[Any]] = (
            planning() if args.dry_run else contextlib.nullcontext([])
        )
        try:
            with collecting as plans:
                result, run = execute(
                    name,
                    entry.run_fn(),
                    cfg,
                    output_dir=output_dir,
                    resume=args.resume,
                    overwrite=args.overwrite,
                    quiet=args.quiet,
                    command=command,
                )
        except ModuleNotFoundError as exc:  # a heavy library of an extra not installed
            hint = registry.missing_module_hint(entry.dist, exc.name or "")
            raise AworldError(f"recipe '{name}': {exc}. {hint}") from exc
        if args.dry_run:
            if not plans:
                raise AworldError(
                    f"--dry-run: recipe '{name}' launched no training backend, so there is no "
                    "launch plan (it trains nothing, or plans through its own dry-run option)"
                )
            result.outputs["plan"] = write_plans(plans, run.dir / PLAN_FILE)
            print(f"\n{len(plans)} launch plan(s) written to {result.outputs['plan']}")
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(
            f"aworld-run: interrupted ({signal.Signals(signum).name}); resume with: "
            f"aworld-run {name} --output-dir {shlex.quote(str(output_dir))} --resume",
            file=sys.stderr,
        )
        return 128 + signum
    _print_summary(name, run, result)
    for line in tiny_model_notes(cfg, None if args.resume else _named_keys(entry, args)):
        print(f"  {line}")
    return 0


def _command(name: str, args: argparse.Namespace, output_dir: Path) -> list[str]:
    """The arguments that start this run again (paths absolute)."""
    argv = [name]
    if args.preset:
        from aworld_rl_core.config import looks_like_path

        preset = Path(args.preset).expanduser()
        argv += [
            "--preset",
            str(preset.absolute()) if looks_like_path(args.preset) else args.preset,
        ]
    if args.config:
        argv += ["--config", str(Path(args.config).absolute())]
    argv += ["--output-dir", str(output_dir)]
    if args.quiet:
        argv.append("--quiet")
    return argv + list(args.overrides)


def _print_recipe_help(entry: registry.RecipeEntry, cfg: object, shown: str | None) -> None:
    from aworld_rl_core.config import describe, list_presets

    print(f"aworld-run {entry.name} [--preset NAME | --config FILE] [options] [key=value ...]\n")
    if entry.help:
        print(entry.help + "\n")
    presets = list_presets(entry.presets)
    print(f"presets: {', '.join(presets) or 'none'}\n")
    print("options: --output-dir DIR, --resume, --overwrite, --quiet, --debug, --dry-run\n")
    source = f"with {shown}" if shown else "the recipe's defaults"
    print(f"config keys (key=value; defaults: {source}):")
    for doc in describe(type(cfg), defaults=cfg):
        bounds = f", {doc.bounds}" if doc.bounds else ""
        resumable = ", may change on --resume" if doc.resumable else ""
        print(f"  {doc.key} ({doc.type}{bounds}{resumable}, default {doc.default!r})")
        if doc.help:
            print(f"      {doc.help}")


def tiny_model_notes(cfg: Any, named: set[str] | None) -> list[str]:
    """A line per ``tiny:`` model in ``cfg`` (any ``*.name_or_path``): it is random, and when the
    preset, config file or overrides did not name it (``named``: dotted keys they set), that it is
    the recipe's default, so a preset that forgot its model does not pass for a trained one
    (``named`` None: unknown, e.g. on --resume)."""
    notes = []
    for key, value in _name_or_paths(cfg, ""):
        if not value.startswith("tiny:"):
            continue
        if named is None or key in named:
            notes.append(f"{key}: {value} (a random tiny model built from a config, no weights)")
        else:
            notes.append(
                f"{key}: {value} is the recipe's default, not named by the preset or an "
                f"override: a random tiny model, so these metrics say nothing of a real model; "
                f"set {key}=<HF id or path>"
            )
    return notes


def _name_or_paths(obj: Any, prefix: str) -> list[tuple[str, str]]:
    import dataclasses

    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return []
    found = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name, None)
        key = f"{prefix}{f.name}"
        if f.name == "name_or_path" and isinstance(value, str):
            found.append((key, value))
        else:
            found += _name_or_paths(value, key + ".")
    return found


def _named_keys(entry: Any, args: argparse.Namespace) -> set[str]:
    """The dotted keys the preset, the config file and the overrides set."""
    from aworld_rl_core.config import preset_path, read_yaml

    named = {o.partition("=")[0].strip() for o in args.overrides if "=" in o}
    files = [Path(args.config)] if args.config else []
    if args.preset:
        files.append(preset_path(entry.presets, args.preset))
    for path in files:
        named |= set(_dotted(read_yaml(path), ""))
    return named


def _dotted(data: Any, prefix: str) -> list[str]:
    if not isinstance(data, dict):
        return [prefix.rstrip(".")] if prefix else []
    keys = []
    for k, v in data.items():
        keys += _dotted(v, f"{prefix}{k}.")
    return keys


def _print_summary(name: str, run: Any, result: Any) -> None:
    from aworld_rl_core.report import format_metric

    print(f"\n{name}: completed")
    print(f"  run directory: {run.dir}")
    for key, path in result.outputs.items():
        print(f"  {key}: {path}")
    keys = [k for k in result.headline if k in result.metrics] or list(result.metrics)[:12]
    keys += [k for k in ("llm_calls", "llm_errors") if k in result.metrics and k not in keys]
    for key in keys:
        print(f"  {key}: {format_metric(key, result.metrics[key])}")
    if run.warnings:
        print(f"  warnings: {run.warnings} (in {run.dir / 'run.log'})")


if __name__ == "__main__":
    sys.exit(main())
