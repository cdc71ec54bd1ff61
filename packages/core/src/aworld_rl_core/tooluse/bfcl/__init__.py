"""BFCL adapter: load BFCL categories, run multi-turn episodes safely, judge as BFCL does, play
entries in BFCL's prompting protocol and write result files its own scorer reads.

Works over the installed ``bfcl-eval`` (pinned, installed without its vendor SDKs: run
``python -m aworld_rl_core.tooluse.bfcl.install``). Importing this package writes no file and
imports neither bfcl-eval's vendor SDKs nor its side-effecting config module; the names below are
loaded on first use, and raise an ImportError naming the install command when bfcl-eval is
missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aworld_rl_core.tooluse.bfcl._install import (
    BFCL_EVAL_VERSION,
    INSTALL_COMMAND,
    BfclNotInstalledError,
    bfcl_root,
    version,
)

_LAZY = {
    "BfclEntry": "loader",
    "load_category": "loader",
    "function_docs": "loader",
    "entry_from_raw": "loader",
    "canonical_category": "loader",
    "ALL_CATEGORIES": "loader",
    "SINGLE_TURN_CATEGORIES": "loader",
    "PYTHON_AST_CATEGORIES": "loader",
    "JAVA_JS_CATEGORIES": "loader",
    "language_of": "loader",
    "IRRELEVANCE_CATEGORIES": "loader",
    "RELEVANCE_CATEGORIES": "loader",
    "MULTI_TURN_CATEGORIES": "loader",
    "MultiTurnEpisode": "episode",
    "BfclEnv": "prompting",
    "ground_truth_replies": "prompting",
    "write_results": "results",
    "TurnResult": "episode",
    "Verdict": "verdict",
    "judge_multi_turn": "judges",
    "judge_single_turn": "judges",
    "decode_single_turn": "framing",
    "ground_truth_calls": "ground_truth",
    "ground_truth_text": "ground_truth",
    "system_prompt": "prompts",
    "with_system_prompt": "prompts",
    "missed_function_message": "prompts",
    "opening_messages": "prompts",
    "to_json_schema": "schemas",
    "to_openai_tools": "schemas",
}

__all__ = [
    "ALL_CATEGORIES",
    "BFCL_EVAL_VERSION",
    "INSTALL_COMMAND",
    "IRRELEVANCE_CATEGORIES",
    "JAVA_JS_CATEGORIES",
    "MULTI_TURN_CATEGORIES",
    "PYTHON_AST_CATEGORIES",
    "RELEVANCE_CATEGORIES",
    "SINGLE_TURN_CATEGORIES",
    "BfclEntry",
    "BfclEnv",
    "BfclNotInstalledError",
    "MultiTurnEpisode",
    "TurnResult",
    "Verdict",
    "bfcl_root",
    "canonical_category",
    "decode_single_turn",
    "entry_from_raw",
    "function_docs",
    "ground_truth_calls",
    "ground_truth_replies",
    "ground_truth_text",
    "judge_multi_turn",
    "judge_single_turn",
    "language_of",
    "load_category",
    "missed_function_message",
    "opening_messages",
    "system_prompt",
    "to_json_schema",
    "to_openai_tools",
    "version",
    "with_system_prompt",
    "write_results",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    bfcl_root()  # a clear ImportError with the install command when bfcl-eval is missing
    value = vars(importlib.import_module(f"{__name__}.{module}"))[name]
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode, TurnResult
    from aworld_rl_core.tooluse.bfcl.framing import decode_single_turn
    from aworld_rl_core.tooluse.bfcl.ground_truth import ground_truth_calls, ground_truth_text
    from aworld_rl_core.tooluse.bfcl.judges import judge_multi_turn, judge_single_turn
    from aworld_rl_core.tooluse.bfcl.loader import (
        ALL_CATEGORIES,
        JAVA_JS_CATEGORIES,
        MULTI_TURN_CATEGORIES,
        PYTHON_AST_CATEGORIES,
        RELEVANCE_CATEGORIES,
        SINGLE_TURN_CATEGORIES,
        BfclEntry,
        canonical_category,
        entry_from_raw,
        function_docs,
        language_of,
        load_category,
    )
    from aworld_rl_core.tooluse.bfcl.prompting import BfclEnv, ground_truth_replies
    from aworld_rl_core.tooluse.bfcl.prompts import (
        missed_function_message,
        opening_messages,
        system_prompt,
        with_system_prompt,
    )
    from aworld_rl_core.tooluse.bfcl.results import write_results
    from aworld_rl_core.tooluse.bfcl.schemas import to_json_schema, to_openai_tools
    from aworld_rl_core.tooluse.bfcl.verdict import Verdict
