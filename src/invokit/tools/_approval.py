"""Argument-dependent approval: ``@tool(needs_approval=<function>)``.

A function of a call's validated arguments (and, if it takes a second parameter, the
:class:`ToolContext`), sync or async, that returns ``True`` when a person must approve that
call. Its parameters are checked when the tool is defined, so a wrong one fails at import,
not at the first call.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from invokit.exceptions import InvalidToolDefinition
from invokit.tools._context import ToolContext

ApprovalCheck: TypeAlias = Callable[..., bool | Awaitable[bool]]
"""``(args) -> bool`` or ``(args, ctx) -> bool``, sync or async."""

BoundCheck: TypeAlias = Callable[[Mapping[str, Any], ToolContext], Awaitable[bool]]


def approval_check(fn: ApprovalCheck, *, tool: str | None = None) -> BoundCheck:
    """``fn`` as one async callable of ``(args, ctx)``; :class:`InvalidToolDefinition` when it
    cannot be called with the arguments alone or with the arguments and the context."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise InvalidToolDefinition(
            "needs_approval must be True, False, None or a function of the arguments "
            "(and optionally the ToolContext) whose signature can be read",
            fn,
            tool=tool,
        ) from None
    positional = 0
    required = 0
    variadic = False
    for param in signature.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional += 1
            required += param.default is param.empty
        elif param.kind is param.VAR_POSITIONAL:
            variadic = True
        elif param.kind is param.KEYWORD_ONLY and param.default is param.empty:
            raise InvalidToolDefinition(
                f"the needs_approval function must not require the keyword {param.name!r}; "
                "it is called with the arguments (and optionally the ToolContext)",
                fn,
                tool=tool,
            )
    if required > 2 or (positional == 0 and not variadic):
        raise InvalidToolDefinition(
            "the needs_approval function must take the validated arguments (a dict) and "
            f"optionally the ToolContext; it takes {required} required parameter(s)",
            fn,
            tool=tool,
        )
    with_context = variadic or positional >= 2

    async def check(args: Mapping[str, Any], ctx: ToolContext) -> bool:
        answer = fn(args, ctx) if with_context else fn(args)
        if inspect.isawaitable(answer):
            answer = await answer
        if type(answer) is not bool:
            raise TypeError(
                f"the needs_approval function returned {type(answer).__name__}, not True or False"
            )
        return answer

    return check
