"""Tools: the contract, typed-function tools, raw-schema tools and declarations."""

from invokit.tools._approval import ApprovalCheck
from invokit.tools._base import Tool
from invokit.tools._context import Progress, ToolContext
from invokit.tools._declared import DeclaredTool, declare
from invokit.tools._function import FunctionTool, tool

__all__ = [
    "ApprovalCheck",
    "DeclaredTool",
    "FunctionTool",
    "Progress",
    "Tool",
    "ToolContext",
    "declare",
    "tool",
]
