"""invokit: the tool layer of LLM agents.

Define tools from typed functions or JSON Schema, register them, present them to any model
provider or MCP client, and run every call through one guarded path.
"""

from typing import TYPE_CHECKING, Any

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
    ArgumentsTooLarge,
    AuthRequired,
    InvalidArguments,
    InvalidToolDefinition,
    InvokitError,
    MalformedArguments,
    RetryWithFeedback,
    ToolError,
    ToolFailed,
)
from invokit.execution import (
    ApprovalRequired,
    AuthorizationRequired,
    CallCheck,
    Completed,
    Executor,
    ExternalCall,
    Failed,
    Interrupted,
    Limits,
    Outcome,
)
from invokit.permissions import Quota
from invokit.registry import Registry, ToolRegistry
from invokit.schema import ArgumentValidator, to_jsonable
from invokit.tools import DeclaredTool, FunctionTool, Progress, Tool, ToolContext, declare, tool

if TYPE_CHECKING:
    from invokit.permissions import Decision, PermissionChecker, Policy

__version__ = "0.1.0"

__all__ = [
    "AccessDenied",
    "ApprovalRequired",
    "ArgumentValidator",
    "ArgumentsTooLarge",
    "AuthRequired",
    "AuthorizationRequired",
    "CallCheck",
    "Completed",
    "ContentPart",
    "Decision",
    "DeclaredTool",
    "ErrorInfo",
    "Executor",
    "ExternalCall",
    "Failed",
    "FunctionTool",
    "ImagePart",
    "Interrupted",
    "InvalidArguments",
    "InvalidToolDefinition",
    "InvokitError",
    "JsonPart",
    "Limits",
    "MalformedArguments",
    "Outcome",
    "OutputLimit",
    "PermissionChecker",
    "Policy",
    "Progress",
    "Quota",
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


def __getattr__(name: str) -> Any:
    # The policy engine loads on first use: ``import invokit`` stays light.
    if name in ("Decision", "PermissionChecker", "Policy"):
        from invokit import permissions

        value = getattr(permissions, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'invokit' has no attribute {name!r}")
