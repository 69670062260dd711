"""Model-facing tools over a pinned scope: search, cross-session search, exact reads and traces,
with definitions for OpenAI (Chat Completions and Responses), Anthropic and MCP."""

from backscroll.query.tools.base import DEFAULT_MAX_OUTPUT_CHARS, ModelTool
from backscroll.query.tools.errors import TOOL_ERROR_CODES, ToolError, ToolErrorCode
from backscroll.query.tools.reading import EventReadTool, EventTraceTool, SessionReads, SessionTraceTool
from backscroll.query.tools.search import TOOL_NAME, SessionQueryTool, SessionSearchTool, session_query_tool
from backscroll.query.tools.toolset import SYSTEM_PROMPT, Toolset, session_tools

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "SYSTEM_PROMPT",
    "TOOL_ERROR_CODES",
    "TOOL_NAME",
    "EventReadTool",
    "EventTraceTool",
    "ModelTool",
    "SessionQueryTool",
    "SessionReads",
    "SessionSearchTool",
    "SessionTraceTool",
    "ToolError",
    "ToolErrorCode",
    "Toolset",
    "session_query_tool",
    "session_tools",
]
