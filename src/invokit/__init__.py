"""invokit: the tool layer of LLM agents.

Define tools from typed functions or JSON Schema, register them, present them to any model
provider or MCP client, and run every call through one guarded path.
"""

from invokit._calls import (
    ContentPart,
    ErrorInfo,
    ImagePart,
    JsonPart,
    ResourceLink,
    TextPart,
    ToolCall,
    ToolResult,
)
from invokit._spec import OutputLimit, ToolAnnotations, ToolName, ToolSpec
from invokit.exceptions import (
    AccessDenied,
    AuthRequired,
    InvalidArguments,
    InvalidToolDefinition,
    InvokitError,
    MalformedArguments,
    RetryWithFeedback,
    ToolError,
    ToolFailed,
)
from invokit.registry import Registry, ToolRegistry
from invokit.schema import ArgumentValidator, to_jsonable
from invokit.tools import DeclaredTool, FunctionTool, Progress, Tool, ToolContext, declare, tool

__version__ = "0.1.0"

__all__ = [
    "AccessDenied",
    "ArgumentValidator",
    "AuthRequired",
    "ContentPart",
    "DeclaredTool",
    "ErrorInfo",
    "FunctionTool",
    "ImagePart",
    "InvalidArguments",
    "InvalidToolDefinition",
    "InvokitError",
    "JsonPart",
    "MalformedArguments",
    "OutputLimit",
    "Progress",
    "Registry",
    "ResourceLink",
    "RetryWithFeedback",
    "TextPart",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolFailed",
    "ToolName",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "declare",
    "to_jsonable",
    "tool",
]
