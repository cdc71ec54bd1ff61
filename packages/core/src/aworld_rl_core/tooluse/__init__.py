"""Tool-use runtime: parse what a model wrote, dispatch calls safely, never evaluate model text.

The BFCL adapter lives in the subpackage ``aworld_rl_core.tooluse.bfcl`` (imported on demand).
"""

from aworld_rl_core.tooluse.calls import (
    Call,
    ParseLimits,
    ToolCallParseError,
    bind_positional,
    format_python_call,
    format_python_calls,
    parse_json_calls,
    parse_python_calls,
    signatures_from_tools,
)
from aworld_rl_core.tooluse.dispatch import (
    BFCL_DENIED_NAMES,
    CallLimits,
    Dispatcher,
    ToolResult,
    format_result,
    public_methods,
)
from aworld_rl_core.tooluse.errors import ResultError, is_error, result_error, text_error
from aworld_rl_core.tooluse.parsers import (
    ParsedResponse,
    get_parser,
    parse_hermes,
    parse_response,
    parse_think_json,
    parse_think_python,
    parse_think_tool_python,
    protocol_names,
)

__all__ = [
    "BFCL_DENIED_NAMES",
    "Call",
    "CallLimits",
    "Dispatcher",
    "ParseLimits",
    "ParsedResponse",
    "ResultError",
    "ToolCallParseError",
    "ToolResult",
    "bind_positional",
    "format_python_call",
    "format_python_calls",
    "format_result",
    "get_parser",
    "is_error",
    "parse_hermes",
    "parse_json_calls",
    "parse_python_calls",
    "parse_response",
    "parse_think_json",
    "parse_think_python",
    "parse_think_tool_python",
    "protocol_names",
    "public_methods",
    "result_error",
    "signatures_from_tools",
    "text_error",
]
