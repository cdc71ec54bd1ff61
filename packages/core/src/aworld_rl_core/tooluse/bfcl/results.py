"""Result files in BFCL's layout, so that bfcl-eval's own scorer reads what our judges judged.

``bfcl evaluate --model NAME --test-category CATS --result-dir DIR --partial-eval`` reads
``DIR/<NAME with / as _>/<group>/BFCL_v4_<category>_result.json``: one JSON line per entry with
its ``id`` and ``result`` (single-turn: the answer text; multi-turn: per turn, per step, the text
BFCL's handler decodes). BFCL looks ``NAME`` up in its model registry and decodes with that
model's handler, so the name must be a registered prompting model whose handler decodes
``[f(a=1)]`` call lists as BFCL's default does (:func:`check_model` says which names qualify,
without importing the registry, which imports every vendor SDK).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import bfcl_root

DEFAULT_MODEL = "Qwen/Qwen3-8B"
"""A registered prompting model whose handler decodes BFCL's default ``[f(a=1)]`` lists."""

_DEFAULT_DECODING = "OSSHandler"  # the base handler whose decoders are BFCL's defaults


def category_of(entry_id: str) -> str:
    """BFCL's category of an entry id (``live_simple_3-2-0`` -> ``live_simple``)."""
    return entry_id.rsplit("_", 1)[0]


def group_of(category: str) -> str:
    """BFCL's result sub-folder of a category (``agentic/memory/<backend>`` for memory)."""
    if category.startswith("memory_"):
        backend = category.removeprefix("memory_").removesuffix("_prereq")
        return f"agentic/memory/{backend}"
    if category.startswith("web_search"):
        return "agentic"
    if category.startswith("multi_turn"):
        return "multi_turn"
    return "live" if category.startswith("live") else "non_live"


def result_path(result_dir: Path, model: str, category: str, prefix: str = "BFCL_v4") -> Path:
    """Where ``bfcl evaluate`` looks for a category's result file."""
    folder = Path(result_dir) / model.replace("/", "_") / group_of(category)
    return folder / f"{prefix}_{category}_result.json"


def _order(entry_id: str) -> tuple[str, int]:
    """BFCL's sort key: the category, then the number before any ``-`` in the index."""
    head, _, index = entry_id.rpartition("_")
    return head, int(index.split("-")[0]) if index.split("-")[0].isdigit() else -1


def write_results(
    result_dir: Path, model: str, rows: Iterable[Mapping[str, Any]]
) -> dict[str, Path]:
    """Write ``rows`` (dicts with ``id``, ``result`` and optionally BFCL's metadata fields
    ``input_token_count``, ``output_token_count``, ``latency``) as one result file per category,
    entries in BFCL's order; returns the path per category. Existing files are replaced."""
    from aworld_rl_core.tooluse.bfcl.loader import file_prefix

    check_model(model)
    prefix = file_prefix()
    by_category: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if "id" not in row or "result" not in row:
            raise ValueError(f"a BFCL result row needs 'id' and 'result'; got keys {sorted(row)}")
        by_category.setdefault(category_of(row["id"]), []).append(row)
    paths = {}
    for category, items in sorted(by_category.items()):
        path = result_path(result_dir, model, category, prefix)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for row in sorted(items, key=lambda r: _order(r["id"])):
                handle.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
        paths[category] = path
    return paths


def check_leaderboard_data() -> None:
    """ValueError unless the installed bfcl-eval is the pinned release, whose data (BFCL v4) the
    leaderboard scores."""
    from aworld_rl_core.tooluse.bfcl._install import BFCL_EVAL_VERSION, INSTALL_COMMAND, version

    installed = version()
    if installed != BFCL_EVAL_VERSION:
        raise ValueError(
            f"protocol=bfcl scores the leaderboard's data, bfcl-eval {BFCL_EVAL_VERSION}; "
            f"bfcl-eval {installed} is installed. Reinstall it ({INSTALL_COMMAND}) or use the "
            "paper's protocol for another release's data"
        )


# -- the registry, read statically -------------------------------------------------------------


@dataclass(frozen=True)
class RegisteredModel:
    """One entry of bfcl-eval's model registry."""

    name: str
    handler: str
    is_fc_model: bool
    underscore_to_dot: bool
    default_decoding: bool


def _module_file(module: str) -> Path:
    return bfcl_root().parent.joinpath(*module.split(".")).with_suffix(".py")


@cache
def _parsed(module: str) -> ast.Module:
    return ast.parse(_module_file(module).read_text(encoding="utf-8"))


def _imports(tree: ast.Module) -> dict[str, str]:
    """Imported name -> module it comes from."""
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def _decodes_by_default(cls_name: str, module: str) -> bool:
    """Whether the handler class inherits BFCL's default prompting decoders unchanged."""
    if cls_name == _DEFAULT_DECODING:
        return True
    tree = _parsed(module)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    if node is None:
        return False
    defined = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    if defined & {"decode_ast", "decode_execute"}:
        return False
    imports = _imports(tree)
    for base in node.bases:
        if isinstance(base, ast.Name):
            base_module = imports.get(base.id, module)
            if _decodes_by_default(base.id, base_module):
                return True
    return False


def _flag(node: ast.expr | None) -> bool:
    return bool(node.value) if isinstance(node, ast.Constant) else False


@cache
def registry() -> dict[str, RegisteredModel]:
    """bfcl-eval's model registry, read from its source text (nothing imported or executed)."""
    module = "bfcl_eval.constants.model_config"
    tree = _parsed(module)
    imports = _imports(tree)
    models = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(value, ast.Call)):
                continue
            if not isinstance(key.value, str):
                continue
            fields = {k.arg: k.value for k in value.keywords}
            handler = fields.get("model_handler")
            if not isinstance(handler, ast.Name):
                continue
            fc, dots = (_flag(fields.get(k)) for k in ("is_fc_model", "underscore_to_dot"))
            source = imports.get(handler.id)
            default = not fc and source is not None and _decodes_by_default(handler.id, source)
            models[key.value] = RegisteredModel(key.value, handler.id, fc, dots, default)
    return models


def check_model(name: str) -> RegisteredModel:
    """The registry entry of ``name``; ValueError unless bfcl-eval can score our files under it
    (registered, prompting mode, BFCL's default decoders and function names, no ``_`` in the
    name)."""
    models = registry()
    if name not in models:
        close = sorted(n for n in models if name.split("/")[-1].lower() in n.lower())[:5]
        hint = f" (close: {', '.join(close)})" if close else ""
        raise ValueError(
            f"{name!r} is not in bfcl-eval's model registry{hint}; `bfcl evaluate` only scores "
            f"registered names. Use a prompting model such as {DEFAULT_MODEL!r}."
        )
    model = models[name]
    if not model.default_decoding or model.underscore_to_dot:
        kind = "a function-calling model" if model.is_fc_model else f"handled by {model.handler}"
        raise ValueError(
            f"{name!r} is {kind}, whose decoder does not read BFCL's [f(a=1)] call lists; "
            f"use a prompting model with the default decoder, such as {DEFAULT_MODEL!r}"
        )
    if "_" in name:
        raise ValueError(
            f"{name!r} holds '_', which bfcl evaluate reads back as '/' from the folder name"
        )
    return model


# -- the official scores -----------------------------------------------------------------------

SUMMARY_FILE = "scores.json"
"""Our per-category counts beside the result files, for the comparison with the official scorer."""


def write_summary(
    bfcl_dir: Path,
    *,
    model: str,
    protocol: str,
    counts: Mapping[str, tuple[int, int]],
    entries: str = "",
) -> Path:
    """``<bfcl_dir>/scores.json``: model, protocol, data version, our (correct, total) per
    category and the ``bfcl evaluate`` command that scores ``<bfcl_dir>/result``."""
    from aworld_rl_core.tooluse.bfcl._install import version
    from aworld_rl_core.tooluse.bfcl.loader import file_prefix

    bfcl_dir = Path(bfcl_dir).resolve()
    command = evaluate_command(model, counts, bfcl_dir / "result", bfcl_dir / "score")
    summary = {
        "model": model,
        "protocol": protocol,
        "entries": entries,
        "bfcl_eval_version": version(),
        "data": file_prefix(),
        "categories": {
            c: {"correct": k, "total": n, "accuracy": k / n if n else 0.0}
            for c, (k, n) in counts.items()
        },
        "command": f"BFCL_PROJECT_ROOT={bfcl_dir} " + " ".join(command),
    }
    path = bfcl_dir / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return path


def evaluate_command(
    model: str, categories: Iterable[str], result_dir: Path, score_dir: Path
) -> list[str]:
    """The ``bfcl evaluate`` command line that scores our result files."""
    return [
        "bfcl",
        "evaluate",
        "--model",
        model,
        "--test-category",
        ",".join(categories),
        "--result-dir",
        str(result_dir),
        "--score-dir",
        str(score_dir),
        "--partial-eval",
    ]


def read_scores(score_dir: Path, model: str) -> dict[str, tuple[int, int]]:
    """``{category: (correct, total)}`` from the score files ``bfcl evaluate`` wrote."""
    folder = Path(score_dir) / model.replace("/", "_")
    scores = {}
    for path in sorted(folder.rglob("BFCL_v*_score.json")):
        with path.open(encoding="utf-8") as handle:
            header = json.loads(handle.readline())
        category = path.name.split("_", 2)[2].removesuffix("_score.json")
        scores[category] = (int(header["correct_count"]), int(header["total_count"]))
    return scores
