"""The shape every model tool shares: definitions for each API, one safe ``run``, the adapters."""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Final

import backscroll.query.tools.sdk as sdk
from backscroll.query.errors import SessionQueryError
from backscroll.query.tools.args import parse_object
from backscroll.query.tools.errors import (
    ToolError,
    invalid_arguments,
    service_error,
    unexpected_error,
)

if TYPE_CHECKING:
    from anthropic.types import ToolParam as AnthropicToolParam
    from anthropic.types import ToolResultBlockParam
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
    from openai.types.responses import FunctionToolParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

__all__ = ["DEFAULT_MAX_OUTPUT_CHARS", "ModelTool", "bound_output"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: No answer is longer than this many characters (about 12,000 tokens); see :func:`bound_output`.
DEFAULT_MAX_OUTPUT_CHARS: Final = 48_000


def bound_output(text: str, max_chars: int) -> str:
    """``text`` cut at ``max_chars`` with a line that says so (a model never gets a 1 MiB answer)."""
    if len(text) <= max_chars:
        return text
    note = f"\n… (output cut at {max_chars} characters; ask for less, e.g. a narrower query or window)"
    return text[: max(0, max_chars - len(note))] + note


class ModelTool(ABC):
    """One model tool: a name, a description and a JSON Schema for the model, and :meth:`run`.

    ``run`` takes the arguments as any JSON value (text, bytes, a mapping or ``None``) and returns
    the text the model reads, or raises :class:`ToolError` — never anything else. The ``run_*_call``
    adapters answer one call in each API's shape and never raise. Tools are thread-safe.
    """

    #: A pure read of the agent's own history: safe beside other parallel calls, no permission gate.
    parallel_safe: ClassVar[bool] = True
    self_gated: ClassVar[bool] = True
    read_only: ClassVar[bool] = True

    def __init__(
        self, *, name: str, description: str, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            # The pattern every LLM API accepts for a function name.
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_CONFIG", "a tool name is 1 to 64 letters, digits, '_' or '-'"
            )
        if (
            isinstance(max_output_chars, bool)
            or not isinstance(max_output_chars, int)
            or max_output_chars < 256
        ):
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "max_output_chars must be at least 256")
        self.name = name
        self.description = description
        self.max_output_chars = max_output_chars

    # -- what a subclass provides -------------------------------------------------------------------
    @property
    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments (an object; no property widens the scope)."""

    @abstractmethod
    def _call(self, data: dict[str, Any]) -> str:
        """Answer one call from its parsed arguments; raises ToolError or SessionQueryError."""

    @property
    def configured(self) -> bool:
        """False when the tool has nothing to read (it then answers SESSION_QUERY_TOOL_NOT_CONFIGURED)."""
        return True

    @property
    def window_max(self) -> int | None:
        return None

    # -- running ------------------------------------------------------------------------------------
    def run(self, arguments: object = None) -> str:
        """Run one call and return the text the model reads; raises :class:`ToolError` only."""
        if not self.configured:
            raise ToolError(
                "SESSION_QUERY_TOOL_NOT_CONFIGURED",
                "session query is not configured for this run",
                tool=self.name,
            )
        data = parse_object(arguments)
        try:
            text = self._call(data)
        except ToolError as err:
            if err.tool is None and err.code != "SESSION_QUERY_TOOL_INVALID_ARGUMENTS":
                raise ToolError(err.code, err.message, tool=self.name) from None
            raise
        except SessionQueryError as err:
            raise service_error(err, tool=self.name, window_max=self.window_max) from None
        except Exception as err:  # a custom provider's bug must not crash the host's tool loop
            raise unexpected_error(err, tool=self.name) from None
        return bound_output(text, self.max_output_chars)

    async def arun(self, arguments: object = None) -> str:
        """:meth:`run` in a worker thread, so a search never blocks the event loop."""
        return await asyncio.to_thread(self.run, arguments)

    def answer(self, arguments: object = None) -> tuple[str, bool]:
        """``(text, is_error)``: :meth:`run` with the error text in place of the exception."""
        try:
            return self.run(arguments), False
        except ToolError as err:
            return str(err), True

    # -- definitions --------------------------------------------------------------------------------
    @property
    def strict_parameters(self) -> dict[str, Any]:
        """The strict schema variant (every property required, nullable when optional, no others)."""
        return sdk.strict_schema(self.parameters)

    def openai_tool(self) -> ChatCompletionFunctionToolParam:
        """OpenAI Chat Completions tool definition."""
        return sdk.chat_tool(self.name, self.description, self.parameters)

    def responses_tool(self, *, strict: bool = True) -> FunctionToolParam:
        """OpenAI Responses tool definition (strict schema by default)."""
        return sdk.responses_tool(self.name, self.description, self.parameters, strict=strict)

    def anthropic_tool(self) -> AnthropicToolParam:
        """Anthropic Messages tool definition."""
        return sdk.anthropic_tool(self.name, self.description, self.parameters)

    def mcp_tool(self) -> dict[str, Any]:
        """MCP ``tools/list`` entry (annotations: read-only, idempotent, closed world)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.parameters,
            "annotations": {
                "title": self.name.replace("_", " "),
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }

    # -- adapters (never raise) ---------------------------------------------------------------------
    def _answer_call(self, name: str, arguments: object, well_formed: bool) -> tuple[str, bool]:
        if not well_formed:
            return str(invalid_arguments("the tool call is not an object with arguments")), True
        if name and name != self.name:
            return str(ToolError("SESSION_QUERY_TOOL_UNKNOWN", f"no tool named {name[:64]!r}")), True
        return self.answer(arguments)

    def run_openai_call(self, tool_call: object) -> ChatCompletionToolMessageParam:
        """Answer a Chat Completions ``tool_calls[i]`` (dict or SDK object) with a ``role: tool``
        message; an error becomes ``error: …`` content."""
        call_id, name, arguments, ok = sdk.parse_chat_call(tool_call)
        text, failed = self._answer_call(name, arguments, ok)
        return sdk.chat_result(call_id, f"error: {text}" if failed else text)

    def run_responses_call(self, item: object) -> FunctionCallOutput:
        """Answer a Responses ``function_call`` item with a ``function_call_output`` item."""
        call_id, name, arguments, ok = sdk.parse_responses_call(item)
        text, failed = self._answer_call(name, arguments, ok)
        return sdk.responses_result(call_id, f"error: {text}" if failed else text)

    def run_anthropic_call(self, tool_use: object) -> ToolResultBlockParam:
        """Answer an Anthropic ``tool_use`` block with a ``tool_result`` block (``is_error`` set)."""
        call_id, name, arguments, ok = sdk.parse_anthropic_call(tool_use)
        text, failed = self._answer_call(name, arguments, ok)
        return sdk.anthropic_result(call_id, text, is_error=failed)

    def run_mcp_call(self, arguments: object) -> sdk.McpToolResult:
        """Answer an MCP ``tools/call`` with its result object (``isError`` set on failure)."""
        text, failed = self.answer(arguments)
        return sdk.mcp_result(text, is_error=failed)
