"""bfcl-eval's own executor and checkers, loaded without its vendor SDKs, for cross-checks.

Only for verifying our adapter (tests, the ``core.bfcl-check`` recipe, benchmarks): BFCL's
executor runs call strings through ``eval`` and its decoder evaluates operators, so never feed it
untrusted model text. Importing its decoder creates ``result/``, ``score/`` and ``.file_locks/``
under ``BFCL_PROJECT_ROOT``; :class:`BfclReference` points that at a folder you choose.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import bfcl_root
from aworld_rl_core.tooluse.bfcl.loader import RELEVANCE_CATEGORIES, BfclEntry, language_of

_MODEL_CONFIG = "bfcl_eval.constants.model_config"


class _PromptingModel:
    """What BFCL's checker asks of a model config: prompting models keep dotted names."""

    underscore_to_dot = False


class _AnyModel(dict):
    def __missing__(self, key: str) -> _PromptingModel:
        return _PromptingModel()


def _import_without_registry(name: str) -> types.ModuleType:
    """Import a bfcl-eval module with a stand-in for its model registry (which imports every
    vendor SDK); the stand-in is removed again so a later real import is unaffected."""
    if name in sys.modules or _MODEL_CONFIG in sys.modules:
        return importlib.import_module(name)
    stub: Any = types.ModuleType(_MODEL_CONFIG)
    stub.MODEL_CONFIG_MAPPING = _AnyModel()
    sys.modules[_MODEL_CONFIG] = stub
    try:
        return importlib.import_module(name)
    finally:
        sys.modules.pop(_MODEL_CONFIG, None)


class BfclReference:
    """bfcl-eval's verdicts and execution results for the same inputs our adapter judges."""

    def __init__(self, project_root: str | Path) -> None:
        bfcl_root()
        if "bfcl_eval.constants.eval_config" not in sys.modules:
            Path(project_root).mkdir(parents=True, exist_ok=True)
            os.environ.setdefault("BFCL_PROJECT_ROOT", str(project_root))
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
        from bfcl_eval.model_handler import utils as handler_utils
        from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

        try:
            from bfcl_eval.constants.enums import Language, ReturnFormat

            self._languages: dict[str, Any] = {
                "python": (Language.PYTHON, ReturnFormat.PYTHON),
                "java": (Language.JAVA, ReturnFormat.JAVA),
                "javascript": (Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT),
            }
        except ImportError:  # releases up to 2025.8.5 name languages by string
            self._languages = {
                "python": ("Python", "Python"),
                "java": ("Java", "Java"),
                "javascript": ("JavaScript", "JavaScript"),
            }
        self._ast = _import_without_registry("bfcl_eval.eval_checker.ast_eval.ast_checker")
        self._mt = multi_turn_checker
        self._utils = multi_turn_utils
        self._decode = handler_utils.default_decode_ast_prompting
        self._is_empty = is_empty_output
        self._is_call_format = is_function_calling_format_output

    # -- single turn ---------------------------------------------------------------------------

    def decode(self, output: str, language: str = "python") -> Any:
        """BFCL's prompting decoder (``default_decode_ast_prompting``); None when it raises."""
        try:
            return self._decode(output, self._languages[language][1])
        except Exception:  # BFCL counts any decoder failure as "no call"
            return None

    def single_turn_valid(self, entry: BfclEntry, output: str) -> bool:
        """BFCL's eval-runner verdict: decode, format check, then ast_checker (or relevance)."""
        language = self._languages[language_of(entry.category)][0]
        decoded = self.decode(output, language_of(entry.category))
        if entry.category in RELEVANCE_CATEGORIES:
            has_call = decoded is not None and not self._is_empty(decoded)
            return has_call if entry.category == "live_relevance" else not has_call
        if decoded is None or not self._is_call_format(decoded):
            return False
        result = self._ast.ast_checker(
            entry.functions, decoded, entry.ground_truth, language, entry.category, "ref"
        )
        return bool(result["valid"])

    # -- multi turn ----------------------------------------------------------------------------

    def _forget(self, model_name: str) -> None:
        """Drop the API instances BFCL's executor cached in its module globals."""
        cache = vars(self._utils)
        for key in [k for k in cache if k.startswith(model_name)]:
            del cache[key]

    def multi_turn_valid(
        self,
        entry: BfclEntry,
        calls_per_turn: Sequence[Sequence[str]],
        *,
        irrelevance_check: bool = True,
    ) -> bool:
        """``multi_turn_checker`` (and ``multi_turn_irrelevance_checker``) on one-step turns."""
        expected = entry.ground_truth or []
        if len(calls_per_turn) != len(expected) or len(entry.turns) != len(expected):
            return False  # the eval runner's force_terminated (a model answers per question turn)
        decoded = [[list(calls)] if calls else [] for calls in calls_per_turn]
        name = f"ref{uuid.uuid4().hex}"
        try:
            result = self._mt.multi_turn_checker(decoded, expected, entry.raw, entry.category, name)
        finally:
            self._forget(name)
        if not result["valid"]:
            return False
        if irrelevance_check:
            return bool(self._mt.multi_turn_irrelevance_checker(decoded, expected)["valid"])
        return True

    def execute(self, entry: BfclEntry, calls_per_turn: Sequence[Sequence[str]]) -> list[list[str]]:
        """Results of ``execute_multi_turn_func_call`` turn by turn on one set of instances."""
        name = f"ref{uuid.uuid4().hex}"
        raw: dict[str, Any] = entry.raw
        try:
            return [
                self._utils.execute_multi_turn_func_call(
                    list(calls),
                    raw.get("initial_config", {}),
                    raw["involved_classes"],
                    name,
                    entry.id,
                    long_context=entry.long_context,
                )[0]
                for calls in calls_per_turn
            ]
        finally:
            self._forget(name)

    # -- result files, as `bfcl evaluate` scores them -------------------------------------------

    def score_file(self, path: str | Path, category: str) -> tuple[int, int, set[str]]:
        """(correct, total, failed ids) of one of our result files under bfcl-eval's own eval
        runner (``evaluate_task``, the core of ``bfcl evaluate --partial-eval``), decoding as a
        registered prompting model's handler does. Needs pandas and python-dotenv (its runner's
        imports); the CLI itself needs every vendor SDK (see ``official``)."""
        import json

        from bfcl_eval.utils import load_file

        runner = _import_without_registry("bfcl_eval.eval_checker.eval_runner")
        rows = load_file(Path(path), sort_by_id=True)
        name = f"ref{uuid.uuid4().hex}"
        score_dir = Path(os.environ["BFCL_PROJECT_ROOT"]) / "score" / name
        try:
            runner.evaluate_task(
                category, None, score_dir, rows, name, _DefaultDecoder(), {}, allow_missing=True
            )
        finally:
            self._forget(name)
        score_file = next(score_dir.rglob(f"*_{category}_score.json"))
        header, *failures = [json.loads(line) for line in score_file.read_text().splitlines()]
        failed = {str(item["id"]) for item in failures}
        return int(header["correct_count"]), int(header["total_count"]), failed


class _DefaultDecoder:
    """The decoding side of a registered prompting handler (``OSSHandler``'s): BFCL's default
    prompting decoders."""

    def decode_ast(self, result: Any, language: Any, has_tool_call_tag: bool = False) -> Any:
        from bfcl_eval.model_handler.utils import default_decode_ast_prompting

        return default_decode_ast_prompting(result, language, has_tool_call_tag)

    def decode_execute(self, result: Any, has_tool_call_tag: bool = False) -> Any:
        from bfcl_eval.model_handler.utils import default_decode_execute_prompting

        return default_decode_execute_prompting(result, has_tool_call_tag)
