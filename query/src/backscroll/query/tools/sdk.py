"""Tool definitions and tool-call answers in the shapes of the LLM SDKs. Pure.

The return types are the SDKs' own ``TypedDict`` params (``openai``, ``anthropic``) for a type
checker that has them installed; at run time they are plain dicts, so neither SDK is needed to use
the tools. Incoming calls are accepted as dicts or as the SDKs' response objects (``model_dump``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

__all__ = [
    "McpToolResult",
    "anthropic_result",
    "anthropic_tool",
    "chat_result",
    "chat_tool",
    "mcp_result",
    "parse_anthropic_call",
    "parse_chat_call",
    "parse_responses_call",
    "responses_result",
    "responses_tool",
    "strict_schema",
]

if TYPE_CHECKING:
    from anthropic.types import ToolParam as AnthropicToolParam
    from anthropic.types import ToolResultBlockParam
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
    from openai.types.responses import FunctionToolParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

McpToolResult = dict[str, Any]


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI's strict variant of an object schema: every property required (optional ones become
    nullable, and null means "absent" to the tools), ``additionalProperties: false``."""
    strict = copy.deepcopy(dict(schema))
    properties: dict[str, Any] = strict.get("properties", {})
    required = set(strict.get("required", ()))
    for name, prop in properties.items():
        if name not in required:
            kind = prop.get("type")
            if isinstance(kind, str):
                prop["type"] = [kind, "null"]
    strict["required"] = list(properties)
    strict["additionalProperties"] = False
    return strict


# -- definitions ------------------------------------------------------------------------------------
def chat_tool(name: str, description: str, parameters: dict[str, Any]) -> ChatCompletionFunctionToolParam:
    """OpenAI Chat Completions ``tools[i]``."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def responses_tool(
    name: str, description: str, parameters: dict[str, Any], *, strict: bool
) -> FunctionToolParam:
    """OpenAI Responses ``tools[i]`` (``strict`` is required by that API's type)."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": strict_schema(parameters) if strict else parameters,
        "strict": strict,
    }


def anthropic_tool(name: str, description: str, parameters: dict[str, Any]) -> AnthropicToolParam:
    """Anthropic Messages ``tools[i]``."""
    return {"name": name, "description": description, "input_schema": parameters}


# -- answers ----------------------------------------------------------------------------------------
def chat_result(call_id: str, text: str) -> ChatCompletionToolMessageParam:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def responses_result(call_id: str, text: str) -> FunctionCallOutput:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def anthropic_result(tool_use_id: str, text: str, *, is_error: bool) -> ToolResultBlockParam:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": is_error}


def mcp_result(text: str, *, is_error: bool) -> McpToolResult:
    """An MCP ``tools/call`` result object."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


# -- incoming calls ---------------------------------------------------------------------------------
def _mapping(value: object) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump()
        except Exception:  # a foreign object's model_dump: not a call we can read
            return None
        return dumped if isinstance(dumped, Mapping) else None
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def parse_chat_call(tool_call: object) -> tuple[str, str, object, bool]:
    """``(id, name, arguments, well_formed)`` of a Chat Completions ``tool_calls[i]``."""
    call = _mapping(tool_call)
    if call is None:
        return "", "", None, False
    function = _mapping(call.get("function"))
    if function is None:
        return _text(call.get("id")), "", None, False
    return _text(call.get("id")), _text(function.get("name")), function.get("arguments"), True


def parse_responses_call(item: object) -> tuple[str, str, object, bool]:
    """``(call_id, name, arguments, well_formed)`` of a Responses ``function_call`` output item."""
    call = _mapping(item)
    if call is None:
        return "", "", None, False
    return _text(call.get("call_id")), _text(call.get("name")), call.get("arguments"), True


def parse_anthropic_call(block: object) -> tuple[str, str, object, bool]:
    """``(id, name, input, well_formed)`` of an Anthropic ``tool_use`` content block."""
    call = _mapping(block)
    if call is None:
        return "", "", None, False
    return _text(call.get("id")), _text(call.get("name")), call.get("input"), True
